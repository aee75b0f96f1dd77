#!/usr/bin/env bash
# ThreadSanitizer suite (issue 11): zookeeper_close() runs on the libuv
# threadpool (cluster/zk.c), the only code off the loop thread. Builds
# everything with clang -fsanitize=thread in build/clang-tsan and runs the
# tests that close live ZooKeeper sessions, in the C tests and in ebnode
# processes that the Python tests spawn (they inherit TSAN_OPTIONS):
# it.zk.{ops,session,restart}, unit.zk.zk_test, it.cluster.{election,
# zk_restart,chroot}, it.node.lifecycle (SIGTERM in every start phase),
# unit.node.lifecycle_test, it.bus.cluster, it.ingress.failover.
# Every report goes to a file under build/clang-tsan/tsan-logs (log_path), so
# a race in a spawned ebnode fails this script even when its test does not
# look at the exit status.
#
#   scripts/tsan.sh             build and run the subset
#   scripts/tsan.sh -- -R x     other ctest arguments instead of the subset
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

dir=build/clang-tsan
args=(-R '^(it\.zk\.(ops|session|restart)|unit\.cluster\.zk_test|it\.cluster\.(election|zk_restart|chroot)|it\.node\.lifecycle|unit\.node\.lifecycle_test|it\.bus\.cluster|it\.ingress\.failover)$')
if [ "${1:-}" = "--" ]; then
	shift
	args=("$@")
fi

echo "== clang-tsan: configure (clang -DEB_WERROR=ON -DEB_SANITIZE=thread)"
cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DEB_WERROR=ON \
    -DEB_SANITIZE=thread >/dev/null
echo "== clang-tsan: build"
cmake --build "$dir" -j "$(nproc)"
logs="$here/$dir/tsan-logs"
rm -rf "$logs"
mkdir -p "$logs"
echo "== clang-tsan: test"
status=0
(cd "$dir" &&
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$logs/tsan" \
    EB_TEST_TIMEOUT_MULTIPLIER=3 \
    ctest --output-on-failure -j "$(nproc)" --timeout 300 "${args[@]}") ||
    status=1
if compgen -G "$logs/tsan.*" >/dev/null; then
	echo "== clang-tsan: ThreadSanitizer reports:"
	cat "$logs"/tsan.*
	status=1
fi
[ "$status" = 0 ] && echo "== clang-tsan: no data races reported"
exit "$status"
