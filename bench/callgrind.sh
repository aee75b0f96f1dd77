#!/usr/bin/env bash
# Instructions per ingress message on every node (issue 25), counted by
# valgrind's callgrind: deterministic where the 2-core machine's timings are
# not, so two builds compare exactly. For each BUILD_DIR: a private
# ZooKeeper and three nodes (scripts/cluster's configs), node1 started
# first under callgrind so that it leads, node2 (the follower the client
# talks to) and node3 (holding the consumer of "orders", a bridge client
# that reads and discards) under callgrind too; then COUNT requests, 64 in
# flight, through node2's bridge to external.ingress (ebbench pipe), and
# the totals of the three processes divided by COUNT (start-up and the
# shutdown included: a few percent at 20 000).
#
#   bench/callgrind.sh [--count N] [--svg OUT.svg] [--keep DIR]
#                      [--label L]... BUILD_DIR...
# Prints one line per build and node; --svg draws them as grouped bars;
# --keep copies the callgrind outputs to DIR/<label>.<node>.cg (for
# callgrind_annotate). Needs valgrind; each build takes about a minute at
# 20 000.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
count=20000
svg=""
keep=""
labels=()
builds=()
while [ $# -gt 0 ]; do
	case "$1" in
	--count) count="$2"; shift ;;
	--svg) svg="$2"; shift ;;
	--keep) keep="$2"; shift ;;
	--label) labels+=("$2"); shift ;;
	-h | --help) sed -n '2,19p' "$0"; exit 0 ;;
	*) builds+=("$1") ;;
	esac
	shift
done
[ "${#builds[@]}" -gt 0 ] || { echo "callgrind.sh: no build directory" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "callgrind.sh: skipped: no valgrind"; exit 0; }

tmp="$(mktemp -d)"
cleanup() {
	local p
	for p in $(cat "$tmp"/*/state/node*.pid 2>/dev/null || true); do
		kill "$p" 2>/dev/null || true
	done
	[ -n "${sink:-}" ] && kill "$sink" 2>/dev/null || true
	bash "$here/scripts/cluster" down >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

wait_line() { # file pattern: up to 60 s
	local i
	for i in $(seq 600); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "callgrind.sh: no '$2' in $1" >&2
	return 1
}

results="$tmp/results.txt"
: >"$results"
bi=0
for b in "${builds[@]}"; do
	label="${labels[$bi]:-$b}"
	out="$tmp/$bi"
	mkdir -p "$out"
	export EB_CLUSTER_BUILD="$b" EB_CLUSTER_STATE="$out/state"
	up=0
	for _ in 1 2 3; do # random port bases, retried if taken
		base=$((10000 + (RANDOM % 700) * 10))
		export EB_BRIDGE_BASE=$base EB_ADMIN_BASE=$((base + 7000))
		export EB_CLUSTER_BASE=$((base + 14000))
		if bash "$here/scripts/cluster" up -n 3 >"$out/up.log" 2>&1; then
			up=1
			break
		fi
		bash "$here/scripts/cluster" down >/dev/null 2>&1 || true
	done
	[ "$up" = 1 ] || { cat "$out/up.log" >&2; exit 1; }
	st="$out/state"
	# Restarted under callgrind, node1 first (the oldest member leads);
	# the old sessions end before the new members register.
	for i in 1 2 3; do
		kill "$(cat "$st/node$i.pid")"
	done
	for i in 1 2 3; do
		while kill -0 "$(cat "$st/node$i.pid")" 2>/dev/null; do sleep 0.1; done
	done
	sleep 5 # session_timeout_ms 4000: the old members' znodes are gone
	vg=(valgrind --tool=callgrind "--callgrind-out-file=$out/cg.%p")
	for i in 1 2 3; do
		"${vg[@]}" "$b/node/ebnode" -c "$st/node$i.json" \
			>"$st/node$i.out" 2>"$st/node$i.log" </dev/null &
		echo $! >"$st/node$i.pid"
		wait_line "$st/node$i.out" '^READY'
		if [ "$i" = 1 ]; then
			for _ in $(seq 100); do
				"$b/ctl/ebctl" --admin "127.0.0.1:$((EB_ADMIN_BASE + 1))" leader \
					--json 2>/dev/null | grep -q '"node_id": *"node1"' && break
				sleep 0.2
			done
		fi
	done
	python3 "$here/bench/sink.py" "$((EB_BRIDGE_BASE + 3))" orders >/dev/null &
	sink=$!
	for _ in $(seq 100); do
		"$b/ctl/ebctl" --bridge "127.0.0.1:$((EB_BRIDGE_BASE + 2))" request \
			external.ingress '{}' >/dev/null 2>&1 && break
		sleep 0.2
	done
	"$b/bench/ebbench" --json -m pipe --depth 64 --port "$((EB_BRIDGE_BASE + 2))" \
		--count "$count" --warmup 0 -a external.ingress >"$out/bench.json"
	kill "$sink"
	wait "$sink" 2>/dev/null || true
	sink=""
	pids=()
	for i in 1 2 3; do
		pids+=("$(cat "$st/node$i.pid")")
		kill "${pids[$((i - 1))]}"
	done
	wait 2>/dev/null || true
	# (down removes the state directory: the pids were read before)
	bash "$here/scripts/cluster" down >/dev/null 2>&1 || true
	for i in 1 2 3; do
		pid="${pids[$((i - 1))]}"
		ir="$(callgrind_annotate "$out/cg.$pid" 2>/dev/null |
			awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
		role=leader
		[ "$i" = 2 ] && role=follower
		[ "$i" = 3 ] && role=consumer
		printf '%s\t%s\t%s\t%s\n' "$label" "$role" "$ir" "$count" >>"$results"
		if [ -n "$keep" ]; then
			mkdir -p "$keep"
			cp "$out/cg.$pid" "$keep/$(printf '%s' "$label" | tr -c 'A-Za-z0-9_.-' _).$role.cg"
		fi
	done
	bi=$((bi + 1))
done

python3 - "$results" "$svg" <<'PY'
import sys
from xml.sax.saxutils import escape
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print("%-28s %-9s %14s %12s" % ("build", "node", "instructions", "per message"))
data = {}
for label, role, ir, n in rows:
    per = int(ir) / int(n)
    data.setdefault(label, {})[role] = per
    print("%-28s %-9s %14s %12.0f" % (label, role, ir, per))
if sys.argv[2]:
    roles = ["follower", "leader", "consumer"]
    labels = list(data)
    top = max(v for d in data.values() for v in d.values()) * 1.15
    W, H, ML, MB, MT = 560, 300, 70, 60, 40
    colors = ["#999999", "#1f77b4", "#2ca02c", "#d62728"]
    gw = (W - ML - 20) / len(roles)
    bw = gw / (len(labels) + 1)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="12">' % (W, H),
         '<text x="%d" y="20" font-size="14">instructions per ingress '
         'message (callgrind, 64 in flight)</text>' % ML]
    for t in range(5):
        v = top * t / 4
        y = H - MB - (H - MB - MT) * t / 4
        o.append('<line x1="%d" x2="%d" y1="%.0f" y2="%.0f" stroke="#ddd"/>'
                 % (ML, W - 20, y, y))
        o.append('<text x="%d" y="%.0f" text-anchor="end">%d</text>'
                 % (ML - 6, y + 4, v))
    for gi, role in enumerate(roles):
        x0 = ML + gi * gw
        o.append('<text x="%.0f" y="%d" text-anchor="middle">%s</text>'
                 % (x0 + gw / 2, H - MB + 18, role))
        for li, label in enumerate(labels):
            v = data[label].get(role, 0)
            h = (H - MB - MT) * v / top
            x = x0 + bw / 2 + li * bw
            o.append('<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" '
                     'fill="%s"/>' % (x, H - MB - h, bw * 0.9, h,
                                      colors[li % len(colors)]))
            o.append('<text x="%.0f" y="%.0f" text-anchor="middle" '
                     'font-size="10">%d</text>' % (x + bw * 0.45,
                                                   H - MB - h - 3, v))
    for li, label in enumerate(labels):
        o.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                 % (ML + li * 200, H - 22, colors[li % len(colors)]))
        o.append('<text x="%d" y="%d">%s</text>'
                 % (ML + li * 200 + 14, H - 13, escape(label)))
    o.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(o) + "\n")
    print("callgrind.sh: plot in %s" % sys.argv[2])
PY
