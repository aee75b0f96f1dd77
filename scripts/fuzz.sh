#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address; every
# library instrumented with fuzzer-no-link) in build/fuzz and runs each for a
# bounded time (default 60 s) on a copy of its seed corpus.
#
#   scripts/fuzz.sh              every target, 60 s each
#   scripts/fuzz.sh -t 10        10 s each
#   scripts/fuzz.sh frame_fuzz   one target
# Exit status: non-zero if a target found a crash (artifacts in build/fuzz/out).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
secs=60
targets=()
while [ $# -gt 0 ]; do
	case "$1" in
	-t) secs="$2"; shift ;;
	*) targets+=("$1") ;;
	esac
	shift
done
[ "${#targets[@]}" -gt 0 ] || targets=(frame_fuzz handle_fuzz conf_fuzz field_fuzz web_fuzz web_sock_fuzz http_fuzz jsonscan_fuzz vertx_fuzz)

build="$here/build/fuzz"
cmake -S "$here" -B "$build" -DCMAKE_C_COMPILER=clang -DEB_FUZZ=ON \
    -DEB_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
cmake --build "$build" -j2 --target "${targets[@]}"

status=0
for t in "${targets[@]}"; do
	name="${t%_fuzz}"
	corpus="$build/corpus/$name"
	out="$build/out/$name"
	mkdir -p "$corpus" "$out"
	if [ -d "$here/tests/fuzz/corpus/$name" ]; then
		cp -n "$here/tests/fuzz/corpus/$name"/* "$corpus"/ 2>/dev/null || true
	fi
	echo "== $t: ${secs}s"
	if ! "$build/tests/fuzz/$t" -max_total_time="$secs" -max_len=4096 \
	    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix="$out/" "$corpus" 2>"$out/log.txt"; then
		echo "== $t: FAILED (see $out/log.txt)"
		tail -40 "$out/log.txt"
		status=1
		continue
	fi
	grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$out/log.txt" || tail -3 "$out/log.txt"
	echo "== $t: ok (corpus $(ls "$corpus" | wc -l) files)"
done
exit "$status"
