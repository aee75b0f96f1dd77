#!/usr/bin/env bash
# Enforces the module dependency DAG (docs/DESIGN.md, docs/STYLE.md B2): a module may
# include only its own files, the public headers and the modules it depends
# on; OpenSSL only in tls/; ZooKeeper only in zk/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

allowed() { # module -> allowed repo-rooted include prefixes
	case "$1" in
	common)   echo "common" ;;
	admin)    echo "admin common" ;;
	tls)      echo "tls common" ;;
	stream)   echo "stream tls common" ;;
	link)     echo "link stream tls admin common" ;;
	zk)       echo "zk common" ;;
	election) echo "election zk common" ;;
	cluster)  echo "cluster election zk admin common" ;;
	shared)   echo "shared cluster zk admin common" ;;
	eventbus) echo "eventbus link admin common" ;;
	bridge)   echo "bridge stream tls eventbus admin common" ;;
	ingress)  echo "ingress eventbus admin common" ;;
	web)      echo "web bridge stream tls eventbus admin common" ;;
	conf)     echo "conf admin common" ;;
	node)     echo "node conf web bridge ingress eventbus cluster shared link admin common" ;;
	*)        echo "" ;;
	esac
}

bad=0
for m in common admin tls stream link zk election cluster shared eventbus bridge web ingress conf node; do
	[ -d "$m" ] || continue
	ok="$(allowed "$m")"
	while IFS= read -r line; do
		file="${line%%:*}"
		inc="$(sed -E 's/.*#include "([^"/]+)\/.*/\1/' <<<"$line")"
		case " $ok " in
		*" $inc "*) ;;
		*) echo "check-includes: $file includes \"$inc/...\" ($m may use: $ok)" >&2; bad=1 ;;
		esac
	done < <(grep -HnE '^#include "[^"]+/' -r "$m" --include='*.c' --include='*.h' || true)
	if [ "$m" != zk ] && grep -rlE '#include <zookeeper/' "$m" >/dev/null 2>&1; then
		echo "check-includes: ZooKeeper headers outside zk/: $(grep -rlE '#include <zookeeper/' "$m")" >&2
		bad=1
	fi
	case "$m" in
	tls) ;;
	*) if grep -rlE '#include <openssl/' "$m" >/dev/null 2>&1; then
		echo "check-includes: OpenSSL headers in $m/" >&2; bad=1
	   fi ;;
	esac
done
[ "$bad" = 0 ] && echo "check-includes: module edges ok"
exit "$bad"
