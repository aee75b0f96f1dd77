#!/usr/bin/env bash
# Ingress through a 3-node cluster (docs/PERFORMANCE.md):
# starts ebbaseline and, with scripts/cluster, a private ZooKeeper and three
# ebnode processes on random loopback ports; a consumer (ebctl listen) on the
# default route's address "orders"; then, interleaved per run:
#   baseline  ebbench rr against the baseline echo (the single-node reference)
#   leader    ebbench rr to external.ingress on the leader's bridge
#             (client -> leader: routed, acknowledged)
#   follower  ebbench rr to external.ingress on a follower's bridge
#             (client -> follower -> leader -> follower -> client)
#   cross-node  plain request/reply, responder on the consumer's node
#   {leader,follower}-pipe-c{1,4}  64 requests in flight per connection
#   {leader,follower}-fire-c{1,4}  fire-and-forget ingress, counted by a
#             consumer of the route target on the third node (ebctl listen
#             stopped meanwhile, so that it is the only one)
# and prints medians, the ratios to the raw echo of the same run, the CPU
# each node spent per message (/proc ticks), and the issue 17 goals.
#
# The rr/pipe consumer of "orders" is a bridge client that reads and
# discards (stopped for fire, whose counting sink must be alone).
#
#   bench/cluster.sh [--runs N] [--duration SEC] [--build-dir DIR] [--no-build]
#                    [--out FILE.jsonl] [--profile DIR]
# --profile: after the runs, one more follower-pipe-c1 run under
# `perf record -g` on the leader and the follower (user space); the top of
# `perf report --no-children` goes to DIR/{leader,follower}.txt.
# EB_PERF_CALLGRAPH=dwarf: whole call stacks through libc and jansson
# (which have no frame pointers; the default is fp).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

runs=5
duration=3
build="$here/build/perf"
do_build=1
out=""
profile=""
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs="$2"; shift ;;
	--duration) duration="$2"; shift ;;
	--build-dir) build="$2"; shift ;;
	--no-build) do_build=0 ;;
	--out) out="$2"; shift ;;
	--profile) profile="$2"; shift ;;
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
consumer_port=$((EB_BRIDGE_BASE + ci))
consumer_pid="$(cat "$EB_CLUSTER_STATE/node$ci.pid")"
listen_pid=""
listen_start() {
	# A consumer that reads and discards, bench/sink.py (ebctl listen, which
	# prints each message, falls behind at 100k+/s and the bridge closes it
	# as slow).
	python3 "$here/bench/sink.py" "$consumer_port" orders >/dev/null &
	listen_pid=$!
	pids+=($!)
	# The consumer is there when a request no longer fails (NO_HANDLERS).
	for _ in $(seq 100); do
		"$ebctl" --bridge "127.0.0.1:$follower_port" request external.ingress '{}' \
			>/dev/null 2>&1 && break
		sleep 0.1
	done
}
listen_stop() {
	kill "$listen_pid" 2>/dev/null || true
	wait "$listen_pid" 2>/dev/null || true
	sleep 0.5 # its interest leaves the other nodes (fire's sink is alone)
}
ticks() { # utime+stime of a process, clock ticks
	awk '{print $14 + $15}' "/proc/$1/stat"
}
hz="$(getconf CLK_TCK)"
# One ebbench run appended to $out with the CPU every node used meanwhile.
run() {
	local label="$1"
	shift
	local t0l t0f t0c line
	t0l="$(ticks "$leader_pid")"; t0f="$(ticks "$follower_pid")"; t0c="$(ticks "$consumer_pid")"
	line="$("$ebbench" --json --label "$label" "$@")" || { echo "cluster.sh: $label failed" >&2; return 0; }
	python3 -c 'import json,sys
r = json.loads(sys.argv[1]); hz = float(sys.argv[2])
t = [int(x) for x in sys.argv[3:]]
r["node_cpu_s"] = {"leader": (t[3]-t[0])/hz, "follower": (t[4]-t[1])/hz, "consumer": (t[5]-t[2])/hz}
print(json.dumps(r))' "$line" "$hz" "$t0l" "$t0f" "$t0c" \
		"$(ticks "$leader_pid")" "$(ticks "$follower_pid")" "$(ticks "$consumer_pid")" >>"$out"
}
listen_start

echo "cluster.sh: leader node$li (bridge $leader_port), client on follower node$fi_" \
	"(bridge $follower_port), consumer on node$ci; $runs runs x ${duration}s" >&2
: >"$out"
d=(--duration "$duration")
for r in $(seq "$runs"); do
	run baseline -m rr --port "$base_port" --server-pid "$base_pid" "${d[@]}"
	run baseline-pipe -m pipe --depth 64 --port "$base_port" --server-pid "$base_pid" "${d[@]}"
	run leader -m rr --port "$leader_port" --server-pid "$leader_pid" "${d[@]}" -a external.ingress
	run follower -m rr --port "$follower_port" --server-pid "$follower_pid" "${d[@]}" -a external.ingress
	# A plain request/reply across two nodes (no ingress): the responder
	# is a bridge client on the consumer's node.
	run cross-node -m rr --responder --sink-port "$consumer_port" -a bench.xnode \
		--port "$follower_port" --server-pid "$follower_pid" "${d[@]}"
	for c in 1 4; do
		run "leader-pipe-c$c" -m pipe --depth 64 -c "$c" --port "$leader_port" \
			--server-pid "$leader_pid" "${d[@]}" -a external.ingress
		run "follower-pipe-c$c" -m pipe --depth 64 -c "$c" --port "$follower_port" \
			--server-pid "$follower_pid" "${d[@]}" -a external.ingress
	done
	# Fire-and-forget ingress, counted by a consumer of the route target
	# on the third node (delivered, not only sent): alone on "orders".
	listen_stop
	for c in 1 4; do
		run "leader-fire-c$c" -m fire -c "$c" --port "$leader_port" \
			--sink-port "$consumer_port" --sink-address orders \
			--server-pid "$leader_pid" "${d[@]}" -a external.ingress
		run "follower-fire-c$c" -m fire -c "$c" --port "$follower_port" \
			--sink-port "$consumer_port" --sink-address orders \
			--server-pid "$follower_pid" "${d[@]}" -a external.ingress
	done
	listen_start
	echo "cluster.sh: run $r/$runs done" >&2
done

if [ -n "$profile" ]; then
	mkdir -p "$profile"
	prof_pids=()
	for n in leader follower; do
		p="$leader_pid"
		[ "$n" = follower ] && p="$follower_pid"
		perf record --call-graph "${EB_PERF_CALLGRAPH:-fp}" \
			-o "$profile/$n.data" -p "$p" -- sleep "$duration" \
			>/dev/null 2>&1 &
		prof_pids+=($!)
	done
	"$ebbench" --json --label profile -m pipe --depth 64 --port "$follower_port" \
		--duration "$duration" --warmup 0 -a external.ingress >"$profile/run.json"
	wait "${prof_pids[@]}" || true
	for n in leader follower; do
		perf report -i "$profile/$n.data" --no-children --stdio \
			--sort dso,symbol 2>/dev/null | grep -E '^ +[0-9.]+%' |
			head -40 >"$profile/$n.txt" || true
	done
	echo "cluster.sh: profiles in $profile" >&2
fi

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(label, f):
    v = [f(r) for r in rows if r["label"] == label]
    return statistics.median(v) if v else float("nan")
def cpu_per_op(node):
    return lambda r: r["node_cpu_s"][node] * 1e6 / max(r["ops"], 1)
print("\nmedians of %d runs (100-byte bodies); node CPU in us per message" %
      len([r for r in rows if r["label"] == "baseline"]))
hdr = "%-18s %10s %7s %9s %9s %8s %8s %8s %6s %6s" % ("mode", "ops/s", "xraw",
      "p50 us", "p99 us", "leader", "follower", "consumer", "errors", "lost")
print(hdr); print("-" * len(hdr))
raw_rr = med("baseline", lambda r: r["rate_per_s"])
raw_pipe = med("baseline-pipe", lambda r: r["rate_per_s"])
labels = []
for r in rows:
    if r["label"] not in labels:
        labels.append(r["label"])
for s in labels:
    ref = raw_pipe if ("pipe" in s or "fire" in s) else raw_rr
    print("%-18s %10.0f %7.2f %9.1f %9.1f %8.2f %8.2f %8.2f %6d %6d" % (s,
          med(s, lambda r: r["rate_per_s"]), med(s, lambda r: r["rate_per_s"]) / ref,
          med(s, lambda r: r["latency_us"]["p50"]),
          med(s, lambda r: r["latency_us"]["p99"]),
          med(s, cpu_per_op("leader")), med(s, cpu_per_op("follower")),
          med(s, cpu_per_op("consumer")),
          max(r["errors"] for r in rows if r["label"] == s),
          max(r["lost"] for r in rows if r["label"] == s)))
b = med("baseline", lambda r: r["latency_us"]["p50"])
fr = med("follower", lambda r: r["latency_us"]["p50"]) / b
fp = max(med("follower-pipe-c1", lambda r: r["rate_per_s"]),
         med("follower-pipe-c4", lambda r: r["rate_per_s"])) / raw_pipe
ff = max(med("follower-fire-c1", lambda r: r["rate_per_s"]),
         med("follower-fire-c4", lambda r: r["rate_per_s"]))
cf = med("follower-pipe-c1", cpu_per_op("follower"))
cl = med("follower-pipe-c1", cpu_per_op("leader"))
print("\nissue 17 goals (xraw: pipe and fire against the raw echo pipelined,"
      " rr against its rr):")
print("  follower, 64 in flight    x%.2f of raw pipelined  (>= 0.5: %s)" %
      (fp, "met" if fp >= 0.5 else "MISSED"))
print("  CPU per ingress message   follower %.2f us, leader %.2f us "
      "(follower-pipe-c1; <= 3: %s)" %
      (cf, cl, "met" if max(cf, cl) <= 3 else "MISSED"))
print("  fire through a follower   %.0f msg/s delivered  (>= 300k: %s)" %
      (ff, "met" if ff >= 300e3 else "MISSED"))
print("  one at a time, follower   p50 x%.2f  (<= 3x: %s)" %
      (fr, "met" if fr <= 3 else "MISSED"))
PY
svg="${out%.jsonl}.svg"
if python3 "$here/bench/plot.py" "$out" "$svg" \
	--title "ingress rr through a 3-node cluster: latency percentiles"; then
	echo "latency percentile plot: $svg"
fi
