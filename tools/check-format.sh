#!/usr/bin/env bash
# Fails when any tracked C source or header is not clang-format clean.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fmt="$(command -v clang-format-14 || command -v clang-format)"
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
[ "${#files[@]}" -gt 0 ] || exit 0
bad=0
for f in "${files[@]}"; do
	if ! "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "check-format: not clang-format clean: $f (run: $fmt -i $f)" >&2
		bad=1
	fi
done
[ "$bad" = 0 ] && echo "check-format: ${#files[@]} files clean"
exit "$bad"
