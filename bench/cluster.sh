#!/usr/bin/env bash
# Ingress request/reply through a 3-node cluster (docs/PERFORMANCE.md):
# starts ebbaseline and, with scripts/cluster, a private ZooKeeper and three
# ebnode processes on random loopback ports; a consumer (ebctl listen) on the
# default route's address "orders"; then, interleaved per run:
#   baseline  ebbench rr against the baseline echo (the single-node reference)
#   leader    ebbench rr to external.ingress on the leader's bridge
#             (client -> leader: routed, acknowledged)
#   follower  ebbench rr to external.ingress on a follower's bridge
#             (client -> follower -> leader -> follower -> client)
# and prints medians and the ratios to the baseline (issue 6 target: through
# a follower <= 3x the baseline round trip).
#
#   bench/cluster.sh [--runs N] [--duration SEC] [--build-dir DIR] [--no-build]
#                    [--out FILE.jsonl]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

runs=5
duration=3
build="$here/build/perf"
do_build=1
out=""
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs="$2"; shift ;;
	--duration) duration="$2"; shift ;;
	--build-dir) build="$2"; shift ;;
	--no-build) do_build=0 ;;
	--out) out="$2"; shift ;;
	-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "cluster.sh: unknown argument: $1" >&2; exit 2 ;;
	esac
	shift
done
out="${out:-$build/bench-cluster.jsonl}"

if [ "$do_build" = 1 ]; then
	cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$build" -j2 --target ebbench ebbaseline ebnode ebctl >/dev/null
fi
ebbench="$build/bench/ebbench"
ebctl="$build/ctl/ebctl"

tmp="$(mktemp -d)"
export EB_CLUSTER_BUILD="$build" EB_CLUSTER_STATE="$tmp/cluster"
# scripts/cluster uses fixed port bases: pick random ones below the
# ephemeral range (this machine is shared), retried if taken.
pick_ports() {
	local base=$((10000 + (RANDOM % 700) * 10))
	export EB_BRIDGE_BASE=$base EB_ADMIN_BASE=$((base + 7000))
	export EB_CLUSTER_BASE=$((base + 14000))
}
pids=()
cleanup() {
	local p
	for p in "${pids[@]+"${pids[@]}"}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]+"${pids[@]}"}"; do
		wait "$p" 2>/dev/null || true
	done
	bash "$here/scripts/cluster" down >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

"$build/bench/ebbaseline" --port 0 >"$tmp/baseline.out" &
pids+=($!)
base_pid=$!
for _ in $(seq 100); do
	grep -q '^READY' "$tmp/baseline.out" 2>/dev/null && break
	sleep 0.1
done
base_port="$(sed -E 's/.*bridge=[^ ]*:([0-9]+).*/\1/' "$tmp/baseline.out")"

up=0
for _ in 1 2 3; do
	pick_ports
	if bash "$here/scripts/cluster" up -n 3 >"$tmp/cluster.out" 2>&1; then
		up=1
		break
	fi
	bash "$here/scripts/cluster" down >/dev/null 2>&1 || true
done
[ "$up" = 1 ] || { cat "$tmp/cluster.out" >&2; exit 1; }
leader="$("$ebctl" --admin "127.0.0.1:$((EB_ADMIN_BASE + 1))" leader --json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["node_id"])')"
li="${leader#node}"
fi_=1
[ "$li" = 1 ] && fi_=2
ci=$((6 - li - fi_)) # the third node holds the consumer
leader_port=$((EB_BRIDGE_BASE + li))
follower_port=$((EB_BRIDGE_BASE + fi_))
leader_pid="$(cat "$EB_CLUSTER_STATE/node$li.pid")"
follower_pid="$(cat "$EB_CLUSTER_STATE/node$fi_.pid")"
"$ebctl" --bridge "127.0.0.1:$((EB_BRIDGE_BASE + ci))" listen orders --json >/dev/null &
pids+=($!)
# The consumer is there when a request no longer fails with NO_HANDLERS.
for _ in $(seq 100); do
	"$ebctl" --bridge "127.0.0.1:$follower_port" request external.ingress '{}' \
		>/dev/null 2>&1 && break
	sleep 0.1
done

echo "cluster.sh: leader node$li (bridge $leader_port), client on follower node$fi_" \
	"(bridge $follower_port), consumer on node$ci; $runs runs x ${duration}s" >&2
: >"$out"
for r in $(seq "$runs"); do
	"$ebbench" --json -m rr --port "$base_port" --server-pid "$base_pid" \
		--duration "$duration" --label baseline >>"$out"
	"$ebbench" --json -m rr --port "$leader_port" --server-pid "$leader_pid" \
		--duration "$duration" -a external.ingress --label leader >>"$out"
	"$ebbench" --json -m rr --port "$follower_port" --server-pid "$follower_pid" \
		--duration "$duration" -a external.ingress --label follower >>"$out"
	echo "cluster.sh: run $r/$runs done" >&2
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(label, f):
    v = [f(r) for r in rows if r["label"] == label]
    return statistics.median(v) if v else float("nan")
print("\nrr, 1 connection, 100-byte bodies, medians of %d runs" %
      len([r for r in rows if r["label"] == "baseline"]))
hdr = "%-10s %10s %9s %9s %11s %7s %7s" % ("path", "ops/s", "p50 us", "p99 us",
      "srv us/op", "errors", "lost")
print(hdr); print("-" * len(hdr))
for s in ("baseline", "leader", "follower"):
    print("%-10s %10.0f %9.1f %9.1f %11.2f %7d %7d" % (s,
          med(s, lambda r: r["rate_per_s"]), med(s, lambda r: r["latency_us"]["p50"]),
          med(s, lambda r: r["latency_us"]["p99"]),
          med(s, lambda r: r["server"]["cpu_us_per_op"]),
          max(r["errors"] for r in rows if r["label"] == s),
          max(r["lost"] for r in rows if r["label"] == s)))
b = med("baseline", lambda r: r["latency_us"]["p50"])
lr = med("leader", lambda r: r["latency_us"]["p50"]) / b
fr = med("follower", lambda r: r["latency_us"]["p50"]) / b
print("\np50 round trip vs the baseline echo:")
print("  ingress at the leader     x%.2f  (single-node target <= 1.5x: %s)" %
      (lr, "met" if lr <= 1.5 else "MISSED"))
print("  ingress at a follower     x%.2f  (target <= 3x: %s)" %
      (fr, "met" if fr <= 3 else "MISSED"))
PY
svg="${out%.jsonl}.svg"
if python3 "$here/bench/plot.py" "$out" "$svg" \
	--title "ingress rr through a 3-node cluster: latency percentiles"; then
	echo "latency percentile plot: $svg"
fi
