#!/usr/bin/env bash
# Builds the Debian packages (CPack DEB) from a build tree, installs them on
# this machine, and checks the installed result; purges them again on every
# exit path. Needs root (dpkg -i). scripts/test.sh runs it once, after the gcc
# suite, on build/gcc-werror (not in the sanitizer suite).
#
#   tools/check-package.sh [BUILD_DIR]     default: build/package
#
# Checks: the packages build; lintian (listed; an error fails); dpkg -i;
# `ebnode --check` accepts /etc/ebnode/default.json; systemd-analyze verify
# on ebnode@.service (when present); the installed ebnode, run as the ebnode
# user with the installed config, starts, answers /health (installed ebctl),
# logs with log.sink=journald to a stand-in journal socket with the fields
# EB_MODULE/EB_EVENT/EB_NODE, and stops on SIGTERM with exit 0; the installed bash completion completes
# an ebctl command; examples/embed.c compiled with only
# `pkg-config --cflags --libs ebnode` runs against the installed libebnode;
# `man ebnode` renders; purge leaves no package file behind.
#
# Parallel runs (two ctest/CI runs on one machine) take turns on a lock: the
# packages are machine-global. A machine where ebnode is already installed
# (not by this script) is refused rather than clobbered.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build/package}"
cd "$here"
start=$SECONDS
step() { echo "== check-package: $* ($((SECONDS - start)) s)"; }
fail() { echo "check-package: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "needs root (dpkg -i)"
pkgs=(ebnode libebnode-dev libebnode0)
tmo=$((30 * ${EB_TEST_TIMEOUT_MULTIPLIER:-1}))

exec 9>/run/lock/ebnode-check-package.lock
flock -w 900 9 || fail "another check-package run holds the lock"

for p in "${pkgs[@]}"; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed"; then
		fail "$p is already installed here; not touching it"
	fi
done

tmp="$(mktemp -d /tmp/ebnode-pkg.XXXXXX)"
node_pid=""
journal_pid=""
cleanup() {
	local rc=$?
	if [ -n "$journal_pid" ]; then
		kill "$journal_pid" 2>/dev/null || true
	fi
	exec 7<&- 2>/dev/null || true
	if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then
		kill -KILL "$node_pid" 2>/dev/null || true
	fi
	exec 8<&- 2>/dev/null || true
	dpkg --purge "${pkgs[@]}" >/dev/null 2>&1 || true
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

step "build packages in $build"
cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$build" -j "$(nproc)" --target ebnode ebctl ebnode_shared man deb_changelog >/dev/null
# cpack's install step wants every target of the tree built.
cmake --build "$build" -j "$(nproc)" >/dev/null
(cd "$build" && cpack -G DEB -B "$tmp/debs" >/dev/null)
debs=("$tmp"/debs/*.deb)
[ "${#debs[@]}" -eq 3 ] || fail "expected 3 packages, got: ${debs[*]}"
for d in "${debs[@]}"; do
	echo "$(basename "$d"): $(dpkg-deb -f "$d" Depends)"
done

if command -v lintian >/dev/null 2>&1; then
	step "lintian"
	lintian --allow-root "${debs[@]}" >"$tmp/lintian.txt" 2>&1 || true
	sed 's/^/  /' "$tmp/lintian.txt"
	if grep -q '^E:' "$tmp/lintian.txt"; then
		fail "lintian errors (above)"
	fi
else
	echo "check-package: lintian not installed: not run"
fi

step "dpkg -i"
dpkg -i "${debs[@]}" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
getent passwd ebnode >/dev/null || fail "no ebnode system user"
[ -f /etc/ebnode/default.json ] || fail "no /etc/ebnode/default.json"
grep -qx /etc/ebnode/default.json /var/lib/dpkg/info/ebnode.conffiles ||
	fail "default.json is not a conffile"

step "ebnode --check on the installed config, as the ebnode user"
as_ebnode=(setpriv --reuid=ebnode --regid=ebnode --init-groups --)
out="$("${as_ebnode[@]}" /usr/bin/ebnode --check -c /etc/ebnode/default.json)"
[ "$out" = "config ok" ] || fail "ebnode --check: $out"

if command -v systemd-analyze >/dev/null 2>&1; then
	step "systemd-analyze verify ebnode@default.service"
	# A template is verified as an instance; the unit's paths must exist.
	systemd-analyze verify /lib/systemd/system/ebnode@default.service 2>"$tmp/verify.txt" ||
		{ cat "$tmp/verify.txt"; fail "systemd-analyze verify"; }
	if grep -i "ebnode@" "$tmp/verify.txt"; then
		fail "systemd-analyze verify warned about the unit"
	fi
fi

step "start the installed node, /health, journal fields, stop"
# A stand-in for journald: a datagram socket that the node (user ebnode)
# may write to; it prints the node's "starting" entry, fields joined by |.
chmod 0711 "$tmp"
mkdir -m 0755 "$tmp/journal"
exec 7< <(exec python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
print("bound", flush=True)
s.settimeout(float(sys.argv[2]))
while True:
    d = s.recv(65536).decode(errors="replace")
    if "\nEB_EVENT=starting\n" in "\n" + d:
        print(d.replace("\n", "|"), flush=True)
        break
' "$tmp/journal/socket" "$tmo")
journal_pid=$!
read -r -t "$tmo" -u 7 line && [ "$line" = bound ] || fail "journal stand-in did not start"
# Ports 0: parallel test runs must not collide on 7000/7100; the READY line
# says what was bound. Standalone (the default config has no ZooKeeper).
exec 8< <(exec "${as_ebnode[@]}" /usr/bin/ebnode -c /etc/ebnode/default.json \
	--set bridge.port=0 --set admin.port=0 --set log.sink=journald \
	--set log.journal_socket="$tmp/journal/socket" 2>"$tmp/node.err")
node_pid=$!
ready=""
if ! read -r -t "$tmo" -u 8 ready; then
	cat "$tmp/node.err" >&2
	fail "no READY line within ${tmo}s"
fi
case "$ready" in READY*) ;; *) fail "unexpected first line: $ready" ;; esac
admin="$(sed -E 's/.*admin=([^ ]+).*/\1/' <<<"$ready")"
/usr/bin/ebctl --admin "$admin" --timeout 5s health || fail "ebctl health on $admin"
code="$(/usr/bin/ebctl --admin "$admin" --json --timeout 5s health)"
grep -q '"status"' <<<"$code" || fail "health answer: $code"
read -r -t "$tmo" -u 7 entry || fail "no journal entry for event starting"
for f in "MESSAGE=INFO node: starting: " PRIORITY=6 SYSLOG_IDENTIFIER=ebnode \
	EB_MODULE=node EB_EVENT=starting EB_NODE=default; do
	grep -qF "|$f" <<<"|$entry" || fail "journal entry lacks $f: $entry"
done
if grep -q "starting:" "$tmp/node.err"; then
	fail "log.sink=journald, yet the starting line went to stderr"
fi
kill -TERM "$node_pid"
# The node exits on SIGTERM; its stdout closes, so read returns at EOF.
while read -r -t "$tmo" -u 8 _; do :; done
wait "$node_pid" && rc=0 || rc=$?
node_pid=""
[ "$rc" -eq 0 ] || { cat "$tmp/node.err" >&2; fail "ebnode exited $rc after SIGTERM"; }

step "examples/embed.c with pkg-config only"
# shellcheck disable=SC2046 # pkg-config output is a list of words
cc -o "$tmp/embed" examples/embed.c $(pkg-config --cflags --libs ebnode)
# ldd's output is read whole first: with pipefail, grep -q leaving at the
# first match could fail the pipeline with ldd's SIGPIPE.
linked="$(ldd "$tmp/embed")"
grep -Eq "libebnode.so.0 => /(usr/)?lib/[^ ]*libebnode.so.0" <<<"$linked" ||
	fail "embed is not linked to the installed libebnode: $linked"
"$tmp/embed" >"$tmp/embed.out" 2>&1 || { cat "$tmp/embed.out"; fail "embed exited $?"; }

step "bash completion of the installed ebctl"
got="$(bash -c 'source /usr/share/bash-completion/bash_completion
	source /usr/share/bash-completion/completions/ebctl
	COMP_WORDS=(ebctl --admin 127.0.0.1:7100 he); COMP_CWORD=3
	COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
	_ebctl; echo "${COMPREPLY[*]}"')"
[ "$got" = health ] || fail "completion of 'ebctl --admin H:P he': '$got'"

step "man pages"
for m in "8 ebnode" "1 ebctl" "5 ebnode.conf"; do
	set -- $m
	MANWIDTH=80 man "$1" "$2" >"$tmp/man.txt" 2>"$tmp/man.err" || fail "man $1 $2"
	grep -q "^NAME" "$tmp/man.txt" || fail "man $1 $2: no NAME section"
done
MANWIDTH=80 man 8 ebnode >"$tmp/man8.txt" || fail "man 8 ebnode"
grep -q "READY" "$tmp/man8.txt" || fail "man ebnode: no READY"

step "purge"
dpkg --purge "${pkgs[@]}" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg --purge"; }
for f in /usr/bin/ebnode /usr/bin/ebctl /etc/ebnode /lib/systemd/system/ebnode@.service \
	/usr/include/ebnode /usr/share/doc/ebnode /usr/lib/x86_64-linux-gnu/pkgconfig/ebnode.pc; do
	[ ! -e "$f" ] || fail "left after purge: $f"
done
for p in "${pkgs[@]}"; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed\|config-files"; then
		fail "$p still known to dpkg after purge"
	fi
done
step "ok"
