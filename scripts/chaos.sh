#!/usr/bin/env bash
# The long chaos run (docs/CHAOS.md), two parts:
#  1. the chaos suite (tests/chaos/chaos.py): leader-routed ingress under
#     load while leaders are SIGKILLed, SIGTERMed, SIGSTOPped, cut from
#     ZooKeeper and ensemble servers die, every check after each round;
#  2. real network partitions (tests/partition/partition.py, needs root):
#     ZooKeeper servers and nodes in network namespaces, links cut, cut one
#     way, delayed and lossy, the target's node paused; by default 5 trials
#     of every scenario (a at syncLimit 4, 5 and 10, b, c, d in and out, e,
#     f 4 s and 6 s).
#
#   scripts/chaos.sh [options] [rounds] [chaos.py options...]
#     rounds                     chaos-suite rounds (default 50)
#     --partition-trials N       trials per partition scenario (default 5)
#     --partition-scenarios L    e.g. a:4,a:5,a:10,f:6 (default: the long
#                                list, partition.py --help)
#     --no-partition             only the chaos suite
#     --partition-only           only the partitions
#     -h, --help                 this text
#
# Builds ebnode, ebproxy and ebctl (partition scenarios c:X) in
# $EB_BUILD_DIR (default build/chaos), starts
# its own 3-server ZooKeeper ensemble in <build>/chaos-zk3 for the chaos
# suite (stopped on exit), and writes the summaries as JSON to
# $EB_CHAOS_JSON (default <build>/chaos-long.json) and
# $EB_PARTITION_JSON (default <build>/partition-long.json); the node log
# lines around unusually slow chaos rounds go to $EB_CHAOS_ANOMALY_DIR
# (default <build>/chaos-anomalies). Both parts always run; the exit code
# is 0 only if every check of both passed (a skipped partition part, not
# root, counts as passed and says so).
# Environment passed on: EB_CHAOS_RATE, EB_CHAOS_RSS_MB, EB_PARTITION_RATE,
# EB_TEST_TIMEOUT_MULTIPLIER, EB_TEST_KEEP_TMP.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

ptrials=5
pscen=""
do_chaos=1
do_part=1
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) usage; exit 0 ;;
	--partition-trials) ptrials=${2:?}; shift 2 ;;
	--partition-scenarios) pscen=${2:?}; shift 2 ;;
	--no-partition) do_part=0; shift ;;
	--partition-only) do_chaos=0; shift ;;
	*) break ;;
	esac
done
rounds=${1:-50}
[ $# -gt 0 ] && shift
case "$rounds" in '' | *[!0-9]*) usage >&2; exit 2 ;; esac
case "$ptrials" in '' | *[!0-9]*) usage >&2; exit 2 ;; esac

src=$(cd "$(dirname "$0")/.." && pwd)
build=${EB_BUILD_DIR:-$src/build/chaos}
fixture=$src/tests/fixtures/zk_fixture.sh

if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$src" -B "$build" -DEB_WERROR=ON >/dev/null
fi
cmake --build "$build" -j2 --target ebnode ebproxy ebctl >/dev/null

zkdir=$build/chaos-zk3
cleanup() { "$fixture" stop "$zkdir" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

export EBNODE_BIN=$build/node/ebnode
rc=0
if [ "$do_chaos" = 1 ]; then
	"$fixture" start "$zkdir" ensemble
	export EB_PROXY_BIN=$build/tests/fixtures/ebproxy
	export EB_ZK_FIXTURE_SCRIPT=$fixture
	export EB_ZK_FIXTURE_DIR=$zkdir
	export EB_ZK_CONNECT_FILE=$zkdir/connect
	json=${EB_CHAOS_JSON:-$build/chaos-long.json}
	export EB_CHAOS_ANOMALY_DIR=${EB_CHAOS_ANOMALY_DIR:-$build/chaos-anomalies}
	python3 "$src/tests/chaos/chaos.py" --rounds "$rounds" --json "$json" "$@" || rc=1
	cleanup
fi
if [ "$do_part" = 1 ]; then
	pjson=${EB_PARTITION_JSON:-$build/partition-long.json}
	pargs=(--trials "$ptrials" --json "$pjson")
	if [ -n "$pscen" ]; then pargs+=(--scenarios "$pscen"); else pargs+=(--long); fi
	prc=0
	python3 "$src/tests/partition/partition.py" "${pargs[@]}" || prc=$?
	case "$prc" in
	0) ;;
	77) echo "chaos.sh: partition scenarios SKIPPED (see the message above)" >&2 ;;
	*) rc=1 ;;
	esac
fi
exit "$rc"
