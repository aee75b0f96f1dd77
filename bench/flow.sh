#!/usr/bin/env bash
# Flow control end to end (issue 17 goal), the 30 s version of
# it.ingress.flow (tests/integration/ingress/flood.py): a private ZooKeeper
# (tests/fixtures/zk_fixture.sh), three ebnode processes (a leads, b is the
# entry follower, c holds the consumer), 4 client processes flooding
# fire-and-forget ingress at b's bridge for SEC seconds at a consumer on c
# that reads RATE messages/s. Prints what was sent and received, the rate
# at which the entry node takes frames against the consumer's over the last
# 40 % of the flood, the highest RSS of every node and every drop counter;
# exits non-zero when a message was dropped, a link was cut, RSS passed
# 64 MB or the entry node was not throttled.
#
#   bench/flow.sh [--seconds SEC] [--clients N] [--rate MSG_PER_S]
#                 [--build-dir DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=30
clients=4
rate=10000
build="$here/build/dev"
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) seconds="$2"; shift 2 ;;
	--clients) clients="$2"; shift 2 ;;
	--rate) rate="$2"; shift 2 ;;
	--build-dir) build="$2"; shift 2 ;;
	*) echo "usage: $0 [--seconds SEC] [--clients N] [--rate R] [--build-dir DIR]" >&2; exit 2 ;;
	esac
done
zkdir="$(mktemp -d /tmp/ebflow-zk.XXXXXX)"
cleanup() {
	"$here/tests/fixtures/zk_fixture.sh" stop "$zkdir" >/dev/null 2>&1 || true
	rm -rf "$zkdir"
}
trap cleanup EXIT
"$here/tests/fixtures/zk_fixture.sh" start "$zkdir" >/dev/null
EB_ZK_CONNECT_FILE="$zkdir/connect" EBNODE_BIN="$build/node/ebnode" \
	EB_FLOW_SECONDS="$seconds" EB_FLOW_CLIENTS="$clients" \
	EB_FLOW_RATE="$rate" \
	EB_FLOW_DIRECT="${EB_FLOW_DIRECT:-0}" \
	python3 "$here/tests/integration/ingress/flood.py" -v \
	Flow.test_flood_slow_consumer Flow.test_direct_sends_across_link
