#!/usr/bin/env bash
# Enforces the module dependency DAG (docs/DESIGN.md, docs/STYLE.md B2) in
# every folder of C sources: a folder may include only its own files, the
# public headers and the folders it depends on; OpenSSL only in tls/;
# ZooKeeper only in zk/ (and the tests of zk). A folder with C sources and
# no rule below fails too, so a new folder gets its edges written down.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

modules="common http admin tls stream link zk member election cluster shared eventbus vertx bridge web ingress conf node"

allowed() { # folder -> allowed repo-rooted include prefixes; 1: no rule
	case "$1" in
	common)   echo "common" ;;
	http)     echo "http stream tls common" ;;
	admin)    echo "admin http common" ;;
	tls)      echo "tls common" ;;
	stream)   echo "stream tls common" ;;
	link)     echo "link stream tls admin common" ;;
	zk)       echo "zk common" ;;
	member)   echo "member zk common" ;;
	election) echo "election member zk common" ;;
	cluster)  echo "cluster election member zk admin common" ;;
	shared)   echo "shared cluster zk admin common" ;;
	eventbus) echo "eventbus link admin common" ;;
	vertx)    echo "vertx stream tls zk member eventbus admin common" ;;
	bridge)   echo "bridge stream tls eventbus admin common" ;;
	ingress)  echo "ingress eventbus admin common" ;;
	web)      echo "web bridge stream tls eventbus admin http common" ;;
	conf)     echo "conf admin common" ;;
	node)     echo "node conf web bridge ingress eventbus cluster shared vertx link admin http common" ;;
	# Programs and libraries outside the node.
	ctl)      echo "ctl conf cluster zk tls admin http common" ;; # ebctl
	bench)    echo "bench tls bridge common" ;;
	examples|lib|include) echo "" ;; # the public headers only
	# Tests: a module's unit tests may use what the module may use, and
	# the harness; hmap_test crafts colliding keys with bench/fnv_craft.h.
	tests/harness)        echo "tests election member zk bridge common" ;;
	tests/unit/harness)   echo "tests" ;;
	tests/unit/common)    echo "tests common bench" ;;
	tests/unit/*)         local r
	                      r="$(allowed "${1#tests/unit/}")" || return 1
	                      echo "tests $r" ;;
	tests/integration/zk) echo "tests zk common" ;;
	tests/fuzz)           echo "tests $(allowed node)" ;;
	*) return 1 ;;
	esac
}

# The folders checked: every module, then the others (tests/unit/<m> one
# by one).
roots="$modules ctl bench examples lib include tests/harness tests/integration/zk tests/fuzz"
for d in tests/unit/*/; do
	roots="$roots ${d%/}"
done

bad=0
for m in $roots; do
	[ -d "$m" ] || continue
	if ! ok="$(allowed "$m")"; then
		echo "check-includes: no rule for $m/ (tools/check-includes.sh)" >&2
		bad=1
		continue
	fi
	while IFS= read -r line; do
		file="${line%%:*}"
		inc="$(sed -E 's/.*#include "([^"/]+)\/.*/\1/' <<<"$line")"
		case " $ok " in
		*" $inc "*) ;;
		*) echo "check-includes: $file includes \"$inc/...\" ($m may use: $ok)" >&2; bad=1 ;;
		esac
	done < <(grep -HnE '^#include "[^"]+/' -r "$m" --include='*.c' --include='*.h' || true)
	case "$m" in
	zk|tests/unit/zk|tests/integration/zk) ;;
	*) if grep -rlE '#include <zookeeper/' "$m" >/dev/null 2>&1; then
		echo "check-includes: ZooKeeper headers outside zk/: $(grep -rlE '#include <zookeeper/' "$m")" >&2
		bad=1
	   fi ;;
	esac
	case "$m" in
	tls) ;;
	*) if grep -rlE '#include <openssl/' "$m" >/dev/null 2>&1; then
		echo "check-includes: OpenSSL headers in $m/" >&2; bad=1
	   fi ;;
	esac
done

# Every C source of the repository lies in one of the folders above.
sources() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files '*.c' '*.h'
	else # a source tarball
		find . \( -path ./build -o -name node_modules \) -prune -o \
		    \( -name '*.c' -o -name '*.h' \) -type f -print | sed 's|^\./||'
	fi
}
while IFS= read -r f; do
	covered=0
	for m in $roots; do
		case "$f" in "$m"/*) covered=1; break ;; esac
	done
	if [ "$covered" = 0 ]; then
		echo "check-includes: $f is in no checked folder (add a rule)" >&2
		bad=1
	fi
done < <(sources)

[ "$bad" = 0 ] && echo "check-includes: module edges ok ($(wc -w <<<"$roots") folders)"
exit "$bad"
