#!/usr/bin/env bash
# Shared data throughput, ebnode next to Apache Curator in one run
# (docs/PERFORMANCE.md "Shared data"): a private ZooKeeper
# (tests/fixtures/zk_fixture.sh), then
#   ebnode   3 nodes, one Python bridge client per node
#            (bench/shared/shared_bench.py): lock/unlock cycles on one lock,
#            counter increments, ids (single and batches of 1000);
#   curator  3 CuratorFramework clients (3 sessions) in one JVM
#            (bench/shared/CuratorBench.java): InterProcessMutex
#            acquire/release cycles, DistributedAtomicLong increments.
# Needs javac and libcurator-recipes-java (Debian; installed here when
# missing).
#
#   bench/shared.sh [--seconds S] [--build-dir DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=10
build="$here/build/dev"
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) seconds="$2"; shift ;;
	--build-dir) build="$2"; shift ;;
	*) echo "usage: bench/shared.sh [--seconds S] [--build-dir DIR]" >&2; exit 2 ;;
	esac
	shift
done
if [ ! -f /usr/share/java/curator-recipes.jar ]; then
	apt-get install -y --no-install-recommends libcurator-recipes-java default-jdk-headless
fi
tmp="$(mktemp -d)"
zk="$tmp/zk"
cleanup() {
	bash "$here/tests/fixtures/zk_fixture.sh" stop "$zk" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
bash "$here/tests/fixtures/zk_fixture.sh" start "$zk" standalone >/dev/null
j=/usr/share/java
cp="$j/curator-recipes.jar:$j/curator-framework.jar:$j/curator-client.jar"
cp="$cp:$j/zookeeper.jar:$j/zookeeper-jute.jar:$j/guava.jar"
cp="$cp:$j/slf4j-api.jar:$j/slf4j-nop.jar"
javac -d "$tmp" -cp "$cp" "$here/bench/shared/CuratorBench.java"
echo "# seconds per workload: $seconds; ZooKeeper: standalone, $(cat "$zk/connect")"
EBNODE_BIN="$build/node/ebnode" EB_ZK_CONNECT_FILE="$zk/connect" \
	python3 "$here/bench/shared/shared_bench.py" "$seconds"
java -cp "$cp:$tmp" CuratorBench "$(cat "$zk/connect")" 3 "$seconds"
