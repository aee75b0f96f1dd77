#!/usr/bin/env bash
# The test command (README): installs what is missing, then builds and runs
# the whole suite twice -- gcc with -Werror, and clang with ASan+UBSan (also
# -Werror) -- after the clang-format, include-edge and document-reference
# checks. Between the
# two suites, clang-tidy checks every C source with the gcc build's
# compile_commands.json (tools/check-tidy.sh; not in --quick), and the
# Debian packages are built, installed, checked and purged once
# (tools/check-package.sh, as root; not in --quick). Then the
# ThreadSanitizer subset (scripts/tsan.sh) and every fuzzer for 30 s
# (scripts/fuzz.sh); neither in --quick.
#
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --quick    one gcc build, no sanitizers (for development)
#   extra arguments after -- go to ctest, e.g. scripts/test.sh --quick -- -L unit
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

quick=0
ctest_args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--) shift; ctest_args=("$@"); break ;;
	*) echo "test.sh: unknown argument: $1" >&2; exit 2 ;;
	esac
	shift
done

bash scripts/deps.sh --test
jobs="$(nproc)"
# deps.sh installed the npm client: the interop test must not skip.
export EB_REQUIRE_INTEROP=1
# ... and chromium with the browser tests' npm packages (tests/browser).
export EB_REQUIRE_BROWSER=1

bash tools/check-format.sh
bash tools/check-includes.sh
bash tools/check-refs.sh
bash tools/module-graph.sh --check

run_suite() { # name, cc, extra cmake args...
	local name="$1" cc="$2"
	shift 2
	local dir="build/$name"
	echo "== $name: configure ($cc $*)"
	cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" "$@" >/dev/null
	echo "== $name: build"
	cmake --build "$dir" -j "$jobs"
	echo "== $name: test"
	(cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 300 "${ctest_args[@]+"${ctest_args[@]}"}")
}

if [ "$quick" = 1 ]; then
	run_suite dev gcc -DEB_WERROR=ON
	exit 0
fi
# Prefix /usr: the tree also builds the Debian packages (check-package).
run_suite gcc-werror gcc -DEB_WERROR=ON -DCMAKE_INSTALL_PREFIX=/usr
echo "== packages (tools/check-package.sh build/gcc-werror)"
bash tools/check-package.sh build/gcc-werror
echo "== clang-tidy (compile_commands.json of build/gcc-werror)"
bash tools/check-tidy.sh build/gcc-werror
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
EB_TEST_TIMEOUT_MULTIPLIER=3 \
	run_suite clang-asan clang -DEB_WERROR=ON -DEB_SANITIZE=address,undefined
# ThreadSanitizer job (issue 11): clang -fsanitize=thread build, the tests
# that run zookeeper_close() on the libuv threadpool (scripts/tsan.sh).
bash scripts/tsan.sh

# Fuzzers (issue 11): every libFuzzer target for a bounded time
# (EB_FUZZ_SECONDS, default 30 s each; scripts/fuzz.sh).
bash scripts/fuzz.sh -t "${EB_FUZZ_SECONDS:-30}"

echo "== all suites passed"
