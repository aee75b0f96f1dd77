#!/usr/bin/env bash
# Checks that the documents the tree cites are in the tree (issue 24):
#
#  1. every NAME.md mentioned by a tracked text file (NAME in capitals,
#     e.g. DESIGN.md, docs/CLUSTER.md, /usr/share/doc/ebnode/EMBEDDING.md)
#     exists at the top level or under docs/, or is in ALLOW below;
#  2. nothing points outside the repository at the design notes: no
#     "../shared" and no "/work/shared";
#  3. every correctness rule cited ("rule 6", "rules 4, 5, 6",
#     "rules 1, 2, 7 and 8", "Rule 3/4") is numbered in docs/DESIGN.md
#     (its "### Rule N:" headings);
#  4. section labels resolve: "STYLE[.md] B<n>[.<m>]" needs a "### B<n>."
#     heading in docs/STYLE.md (and item <m> in it), "STYLE.md, Appendix" an
#     "## Appendix" heading; on a line that names BRIDGE-PROTOCOL.md,
#     "section N" / "§N[.M]" needs a "## N." / "### N.M" heading in
#     docs/BRIDGE-PROTOCOL.md; 'DESIGN[.md] "Title"' needs a heading of
#     docs/DESIGN.md that contains Title (case-insensitive).
#
# Prints one line per problem (file:line: what) and exits 1 if there is
# any, else prints "check-refs: ok" and exits 0. Needs git, grep, sed, awk.
# Usage: tools/check-refs.sh   (from anywhere inside the repository)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Names that may be cited without being in the repository.
ALLOW=" README.md CHANGELOG.md "
self="tools/check-refs.sh"
bad=0
problem() { # file:line, message
	echo "check-refs: $1: $2" >&2
	bad=1
}

# Tracked text files (grep -I skips binary ones), without this script.
mapfile -t files < <(git ls-files | grep -vxF "$self" |
	while IFS= read -r f; do
		[ -f "$f" ] && grep -Iq . "$f" 2>/dev/null && printf '%s\n' "$f"
	done)
[ "${#files[@]}" -gt 0 ] || { echo "check-refs: no tracked files" >&2; exit 2; }

# grep over the tracked files: "file:line:match" per match.
matches() { # ERE
	grep -HnoE "$1" "${files[@]}" 2>/dev/null || true
}

# ---- 1. cited documents exist ----
while IFS= read -r hit; do
	loc="${hit%:*}"
	ref="${hit##*:}"
	name="${ref##*/}"
	case "$ALLOW" in *" $name "*) continue ;; esac
	if [ ! -f "$name" ] && [ ! -f "docs/$name" ]; then
		problem "$loc" "cites $ref, which is neither ./$name nor docs/$name"
	fi
done < <(matches '([A-Za-z0-9_.-]*/)*[A-Z][A-Z0-9_-]*\.md')

# ---- 2. nothing outside the repository ----
# Except the Vert.x 4.5.15 test fixtures (issue 25): a run-time default path
# of the benchmarks, never a document; the files there must not be copied in.
while IFS= read -r hit; do
	case "$hit" in *:../shared/vertx45) continue ;; esac
	problem "${hit%:*}" "cites ${hit##*:} (outside the repository; use docs/)"
done < <(matches '\.\./shared(/vertx45)?|/work/shared')

# ---- 3. rule numbers ----
design="docs/DESIGN.md"
if [ ! -f "$design" ]; then
	problem "$design" "missing (the correctness rules are numbered there)"
	rules=""
else
	rules=" $(sed -nE 's/^### Rule ([0-9]+):.*/\1/p' "$design" | tr '\n' ' ')"
	[ "$rules" != " " ] || problem "$design" "no '### Rule N:' headings"
fi
while IFS= read -r hit; do
	loc="${hit%:*}"
	text="${hit##*:}"
	for n in $(grep -oE '[0-9]+' <<<"$text"); do
		case "$rules" in
		*" $n "*) ;;
		*) problem "$loc" "cites rule $n; $design numbers:${rules% }" ;;
		esac
	done
done < <(matches '[Rr]ules? [0-9]+(( *(,|/|and|, and) *)[0-9]+)*')

# ---- 4. section labels ----
style="docs/STYLE.md"
bp="docs/BRIDGE-PROTOCOL.md"
# STYLE B<n>[.<m>]: heading "### B<n>." and, for .<m>, an item "<m>." in it.
while IFS= read -r hit; do
	loc="${hit%:*}"
	label="$(grep -oE 'B[0-9]+(\.[0-9]+)?' <<<"${hit##*:}" | head -n1)"
	sec="${label%%.*}"
	if ! grep -qE "^### ${sec}\. " "$style" 2>/dev/null; then
		problem "$loc" "cites STYLE $label; no '### $sec.' in $style"
		continue
	fi
	if [ "$label" != "$sec" ]; then
		item="${label#*.}"
		if ! awk -v s="### ${sec}. " -v i="$item" '
			index($0, s) == 1 { in_s = 1; next }
			in_s && /^##/ { exit }
			in_s && $0 ~ "^" i "\\. " { found = 1 }
			END { exit !found }' "$style"; then
			problem "$loc" "cites STYLE $label; $style $sec has no item $item"
		fi
	fi
done < <(matches 'STYLE(\.md)?,? B[0-9]+(\.[0-9]+)?')
while IFS= read -r hit; do
	grep -qE '^## Appendix' "$style" 2>/dev/null ||
		problem "${hit%:*}" "cites the STYLE Appendix; none in $style"
done < <(matches 'STYLE(\.md)?,? Appendix')

# BRIDGE-PROTOCOL sections, on lines that name the document.
while IFS= read -r line; do
	loc="${line%%:*}:$(cut -d: -f2 <<<"$line")"
	text="$(cut -d: -f3- <<<"$line")"
	for s in $(grep -oE '(section|§) ?[0-9]+(\.[0-9]+)?' <<<"$text" |
		grep -oE '[0-9]+(\.[0-9]+)?'); do
		case "$s" in
		*.*) pat="^### ${s//./\\.} " ;;
		*) pat="^## ${s}\. " ;;
		esac
		grep -qE "$pat" "$bp" 2>/dev/null ||
			problem "$loc" "cites BRIDGE-PROTOCOL.md section $s; no such heading in $bp"
	done
done < <(grep -HnE 'BRIDGE-PROTOCOL\.md' "${files[@]}" 2>/dev/null | grep -vE "^$bp:" || true)

# DESIGN "Title": a heading of DESIGN.md containing Title.
while IFS= read -r hit; do
	loc="${hit%:*}"
	title="$(sed -E 's/.*"([^"]+)"$/\1/' <<<"${hit##*:}")"
	grep -iE '^#+ ' "$design" 2>/dev/null | grep -qiF -- "$title" ||
		problem "$loc" "cites DESIGN \"$title\"; no such heading in $design"
done < <(matches 'DESIGN(\.md)? "[^"]+"')

[ "$bad" = 0 ] && echo "check-refs: ok (${#files[@]} files)"
exit "$bad"
