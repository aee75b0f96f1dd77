#!/usr/bin/env bash
# Fails when clang-tidy 14 reports any finding on a project C source.
#
#   tools/check-tidy.sh BUILD_DIR [DIR...]
#
# BUILD_DIR must hold the compile_commands.json that CMake writes
# (CMAKE_EXPORT_COMPILE_COMMANDS is on in the top-level CMakeLists.txt), so
# configure it first. The files checked are the .c files that `git ls-files`
# lists under DIR... (default: the product modules, the tools and the
# tests); headers are checked through them (.clang-tidy's
# HeaderFilterRegex; tests/.clang-tidy adapts the naming rule). A tracked
# file that this build does not compile (the libFuzzer targets of a gcc
# build) is skipped with a note on stderr, not silently: clang-tidy without
# its compile flags would only report noise.
# The files run in parallel, one clang-tidy per core (xargs -P). The
# checks and WarningsAsErrors come from .clang-tidy: any finding fails.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: tools/check-tidy.sh BUILD_DIR [DIR...]" >&2
	exit 2
fi
if [ ! -d "$1" ]; then
	echo "check-tidy: no build directory $1 (configure it with cmake first)" >&2
	exit 2
fi
build="$(cd "$1" && pwd)"
shift
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd -P)"
dirs=("$@")
if [ "${#dirs[@]}" -eq 0 ]; then
	dirs=(common admin tls link conf cluster election eventbus bridge ingress node ctl lib
		web zk member shared bench examples tests)
fi
db="$build/compile_commands.json"
if [ ! -f "$db" ]; then
	echo "check-tidy: $db not found (configure $build with cmake first)" >&2
	exit 2
fi
tidy="$(command -v clang-tidy-14 || command -v clang-tidy || true)"
if [ -z "$tidy" ]; then
	echo "check-tidy: clang-tidy (14) not installed (scripts/deps.sh installs it)" >&2
	exit 2
fi

mapfile -t tracked < <(git ls-files -- "${dirs[@]/%//*.c}")
compiled="$(sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$db")"
files=()
for f in "${tracked[@]}"; do
	[ -f "$f" ] || continue
	if grep -Fxq "$root/$f" <<<"$compiled"; then
		files+=("$f")
	else
		echo "check-tidy: skipped (not in $db): $f" >&2
	fi
done
if [ "${#files[@]}" -eq 0 ]; then
	echo "check-tidy: no files to check" >&2
	exit 2
fi

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
start="$(date +%s)"
# One clang-tidy per file; a file whose run fails makes xargs exit 123.
# --quiet drops the "N warnings generated" chatter; findings (and their
# notes) still print. WarningsAsErrors in .clang-tidy makes any finding fail.
rc=0
printf '%s\0' "${files[@]}" |
	xargs -0 -n 1 -P "$(nproc)" "$tidy" -p "$build" --quiet >"$out" 2>&1 || rc=$?
took=$(($(date +%s) - start))
if [ "$rc" -ne 0 ] || grep -Eq '(warning|error): ' "$out"; then
	# Findings with their notes, without clang's "N warnings generated."
	grep -Ev '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' "$out" >&2 || true
	n="$(grep -Ec ':[0-9]+:[0-9]+: (warning|error): ' "$out" || true)"
	echo "check-tidy: FAILED: $n finding(s) in ${#files[@]} files (${took}s)" >&2
	exit 1
fi
echo "check-tidy: ${#files[@]} files clean (${took}s)"
