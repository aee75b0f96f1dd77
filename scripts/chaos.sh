#!/usr/bin/env bash
# The long chaos run (docs/CHAOS.md): leader-routed ingress under load while
# leaders are SIGKILLed, SIGTERMed, SIGSTOPped, cut from ZooKeeper and
# ensemble servers die, with every check of tests/chaos/chaos.py after each
# round and at the end.
#
#   scripts/chaos.sh [rounds] [chaos.py options...]     (default 50 rounds)
#
# Builds ebnode and ebproxy in $EB_BUILD_DIR (default build/chaos), starts
# its own 3-server ZooKeeper ensemble in <build>/chaos-zk3 (stopped on exit),
# and writes the summary as JSON to $EB_CHAOS_JSON (default
# <build>/chaos-long.json); the node log lines around unusually slow rounds
# go to $EB_CHAOS_ANOMALY_DIR (default <build>/chaos-anomalies). Exit code 0
# only if every check passed.
# Environment passed on: EB_CHAOS_RATE, EB_CHAOS_RSS_MB,
# EB_TEST_TIMEOUT_MULTIPLIER, EB_TEST_KEEP_TMP.
set -euo pipefail

rounds=${1:-50}
[ $# -gt 0 ] && shift
case "$rounds" in '' | *[!0-9]*) echo "usage: $0 [rounds] [chaos.py options]" >&2; exit 2 ;; esac

src=$(cd "$(dirname "$0")/.." && pwd)
build=${EB_BUILD_DIR:-$src/build/chaos}
fixture=$src/tests/fixtures/zk_fixture.sh

if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$src" -B "$build" -DEB_WERROR=ON >/dev/null
fi
cmake --build "$build" -j2 --target ebnode ebproxy >/dev/null

zkdir=$build/chaos-zk3
cleanup() { "$fixture" stop "$zkdir" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
"$fixture" start "$zkdir" ensemble

export EBNODE_BIN=$build/node/ebnode
export EB_PROXY_BIN=$build/tests/fixtures/ebproxy
export EB_ZK_FIXTURE_SCRIPT=$fixture
export EB_ZK_FIXTURE_DIR=$zkdir
export EB_ZK_CONNECT_FILE=$zkdir/connect
json=${EB_CHAOS_JSON:-$build/chaos-long.json}
export EB_CHAOS_ANOMALY_DIR=${EB_CHAOS_ANOMALY_DIR:-$build/chaos-anomalies}
python3 "$src/tests/chaos/chaos.py" --rounds "$rounds" --json "$json" "$@"
