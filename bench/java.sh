#!/usr/bin/env bash
# ebnode against the Java engine it replaces and against plain Vert.x 4.5.15,
# and ingress against its physical reference, the relay chain (issue 25;
# docs/PERFORMANCE.md). On one private ZooKeeper (started by scripts/cluster):
#   ebnode   3 nodes (scripts/cluster); a bridge client on the route target
#            "orders" on the third node, reading and discarding;
#   java     3 engine.sh nodes: e1 started first (the leader, ELECTED), e2
#            the follower the client talks to, e3 with the in-JVM consumer
#            of "orders" (--consumer orders) that replies;
#   vertx    2 anchor.sh nodes: vA (bridge only, the client's node) and vB
#            (consumers "echo" in the JVM, and a bridge for the bridge-client
#            responder and the fire sink);
#   chain    ebbaseline --receipt (consumer's node) <- --next (leader) <-
#            --next (entry), and a sink reading and discarding: the hops of
#            ingress, framing and forwarding only.
# Then, interleaved per run (after one unrecorded warm-up round, 6 s per JVM
# row for the JIT), each row measured with ebbench for --duration seconds:
#   {chain,eb,java}-ingress-pipe  ingress through a follower, 64 in flight
#   {chain,eb,java}-ingress-rr    ingress through a follower, one at a time
#   eb-xnode-pipe, vx-xnode-pipe, vx-xnode-pipe-resp
#                  clustered request/reply, 64 in flight (vx: consumer in
#                  the JVM; -resp: a bridge-client responder like ebnode's)
#   eb-xnode-rr, vx-xnode-rr      clustered request/reply, one at a time
#   eb-fire, vx-fire              clustered fire-and-forget, counted by a
#                                 sink on the other node (delivered)
# and prints medians, ratios (ebnode/Java, ebnode/Vert.x, ebnode/chain) and
# the CPU per message of every node of each row (/proc ticks).
#
#   bench/java.sh [--runs N] [--duration SEC] [--build-dir DIR] [--no-build]
#                 [--out FILE.jsonl] [--vertx DIR]
# --vertx (or EB_VERTX45): the Vert.x fixtures, default ../shared/vertx45
# relative to the repository. Without the fixtures: one line, exit 0. The
# Java runtime and the fixtures' jars are installed from Debian when missing
# (scripts/deps.sh --java).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

runs=3
duration=3
build="$here/build/perf"
do_build=1
out=""
vertx="${EB_VERTX45:-$here/../shared/vertx45}"
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs="$2"; shift ;;
	--duration) duration="$2"; shift ;;
	--build-dir) build="$2"; shift ;;
	--no-build) do_build=0 ;;
	--out) out="$2"; shift ;;
	--vertx) vertx="$2"; shift ;;
	-h|--help) sed -n '2,34p' "$0"; exit 0 ;;
	*) echo "java.sh: unknown argument: $1" >&2; exit 2 ;;
	esac
	shift
done
if [ ! -x "$vertx/bin/engine.sh" ] || [ ! -x "$vertx/bin/anchor.sh" ]; then
	echo "java.sh: skipped: no Vert.x fixtures in $vertx (--vertx DIR)"
	exit 0
fi
# The Java runtime and the jars the fixtures load (Curator, ZooKeeper's
# client, Guava, SLF4J), from Debian when missing.
bash "$here/scripts/deps.sh" --java
if ! command -v java >/dev/null 2>&1; then
	echo "java.sh: skipped: no Java runtime (java not on PATH)"
	exit 0
fi
out="${out:-$build/bench-java.jsonl}"

if [ "$do_build" = 1 ]; then
	cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$build" -j2 --target ebbench ebbaseline ebnode ebctl >/dev/null
fi
ebbench="$build/bench/ebbench"
ebbaseline="$build/bench/ebbaseline"
ebctl="$build/ctl/ebctl"

tmp="$(mktemp -d)"
export EB_CLUSTER_BUILD="$build" EB_CLUSTER_STATE="$tmp/cluster"
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
trap 'exit 130' INT TERM

# wait_for FILE REGEX SECONDS PID: until FILE has a line matching REGEX;
# fails if PID exits or time runs out.
wait_for() {
	local i
	for i in $(seq $(($3 * 10))); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$4" 2>/dev/null || break
		sleep 0.1
	done
	echo "java.sh: timed out waiting for /$2/ in $1" >&2
	tail -5 "$1" >&2 || true
	return 1
}
free_ports() {
	python3 -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}
# A bridge client registered on ADDRESS that reads and discards
# (bench/sink.py); returns once its registration is in place (bounded).
discard_sink() {
	local f="$tmp/sink.$1"
	python3 "$here/bench/sink.py" "$1" "$2" >"$f" &
	pids+=($!)
	wait_for "$f" '^REGISTERED' 10 "$!"
}
# until a request to ADDRESS on the bridge at PORT is answered (bounded).
wait_answer() {
	local i
	for i in $(seq 300); do
		timeout 5 "$ebctl" --bridge "127.0.0.1:$1" request "$2" '{}' \
			>/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "java.sh: no answer from $2 on bridge $1" >&2
	return 1
}

# ---- ebnode: 3 nodes and their ZooKeeper -----------------------------------
up=0
for _ in 1 2 3; do
	base=$((10000 + (RANDOM % 700) * 10))
	export EB_BRIDGE_BASE=$base EB_ADMIN_BASE=$((base + 7000))
	export EB_CLUSTER_BASE=$((base + 14000))
	if bash "$here/scripts/cluster" up -n 3 >"$tmp/cluster.out" 2>&1; then
		up=1
		break
	fi
	bash "$here/scripts/cluster" down >/dev/null 2>&1 || true
done
[ "$up" = 1 ] || { cat "$tmp/cluster.out" >&2; exit 1; }
zk="$(cat "$EB_CLUSTER_STATE/zk/connect")"
leader="$("$ebctl" --admin "127.0.0.1:$((EB_ADMIN_BASE + 1))" leader --json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["node_id"])')"
li="${leader#node}"
fi_=1
[ "$li" = 1 ] && fi_=2
ci=$((6 - li - fi_))
eb_leader_pid="$(cat "$EB_CLUSTER_STATE/node$li.pid")"
eb_follower_pid="$(cat "$EB_CLUSTER_STATE/node$fi_.pid")"
eb_consumer_pid="$(cat "$EB_CLUSTER_STATE/node$ci.pid")"
eb_follower_port=$((EB_BRIDGE_BASE + fi_))
eb_consumer_port=$((EB_BRIDGE_BASE + ci))
discard_sink "$eb_consumer_port" orders
wait_answer "$eb_follower_port" external.ingress

# ---- the relay chain --------------------------------------------------------
chain_start() { # NAME ARGS...: starts ebbaseline, sets <NAME>_pid/_port
	local name="$1"
	shift
	"$ebbaseline" "$@" >"$tmp/$name.out" 2>&1 &
	pids+=($!)
	printf -v "${name}_pid" '%s' "$!"
	wait_for "$tmp/$name.out" '^READY' 10 "$!"
	printf -v "${name}_port" '%s' \
		"$(sed -nE 's/^READY bridge=[^ ]*:([0-9]+).*/\1/p' "$tmp/$name.out")"
}
chain_start ch_consumer --receipt
discard_sink "$ch_consumer_port" orders
chain_start ch_leader --next "127.0.0.1:$ch_consumer_port"
chain_start ch_entry --next "127.0.0.1:$ch_leader_port"

# ---- the Java engine and plain Vert.x ---------------------------------------
export VERTX_JAVA_OPTS="${VERTX_JAVA_OPTS:--Xmx256m}"
read -r e1b e1c e2b e2c e3b e3c vab vac vbb vbc <<<"$(free_ports 10)"
engine_start() { # NAME BRIDGE CLUSTER ARGS...
	local name="$1" b="$2" c="$3"
	shift 3
	"$vertx/bin/engine.sh" --zk "$zk" --engine-root /bench-engine \
		--engine-address "$name" --bridge-port "$b" --cluster-port "$c" \
		--session-ms 10000 "$@" >"$tmp/$name.log" 2>&1 &
	pids+=($!)
	printf -v "${name}_pid" '%s' "$!"
}
engine_start e1 "$e1b" "$e1c"
wait_for "$tmp/e1.log" 'ELECTED' 120 "$e1_pid"
engine_start e2 "$e2b" "$e2c"
engine_start e3 "$e3b" "$e3c" --consumer orders
"$vertx/bin/anchor.sh" --bridge --port "$vab" --cluster --zk "$zk" \
	--cluster-host 127.0.0.1 --cluster-port "$vac" >"$tmp/vA.log" 2>&1 &
pids+=($!)
vA_pid=$!
"$vertx/bin/anchor.sh" --port "$vbb" --cluster --zk "$zk" \
	--cluster-host 127.0.0.1 --cluster-port "$vbc" >"$tmp/vB.log" 2>&1 &
pids+=($!)
vB_pid=$!
wait_for "$tmp/e2.log" '^.*READY bridge' 120 "$e2_pid"
wait_for "$tmp/e3.log" '^.*READY bridge' 120 "$e3_pid"
wait_for "$tmp/vA.log" 'bridge listening' 120 "$vA_pid"
wait_for "$tmp/vB.log" 'bridge listening' 120 "$vB_pid"
if grep -q ELECTED "$tmp/e2.log" "$tmp/e3.log"; then
	echo "java.sh: e1 is not the engine leader" >&2
	exit 1
fi
wait_answer "$e2b" EXTERNAL_EVENT_INGRESS
wait_answer "$vab" echo

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz="$(getconf CLK_TCK)"
# run LABEL "ENTRY_PID LEADER_PID CONSUMER_PID" EBBENCH-ARGS...: one row
# appended to $out with the CPU each of the nodes used meanwhile
# ("-" for a role the row does not have).
run() {
	local label="$1" nodes="$2" t0=() t1=() p line
	shift 2
	for p in $nodes; do
		if [ "$p" = - ]; then t0+=(0); else t0+=("$(ticks "$p")"); fi
	done
	# Exit status 3 (some lost) still prints the row: the table shows it.
	line="$("$ebbench" --json --label "$label" "$@")" || true
	if [ -z "$line" ]; then
		echo "java.sh: $label failed" >&2
		return 0
	fi
	for p in $nodes; do
		if [ "$p" = - ]; then t1+=(0); else t1+=("$(ticks "$p")"); fi
	done
	[ -z "$recording" ] && return 0
	python3 -c 'import json,sys
r = json.loads(sys.argv[1]); hz = float(sys.argv[2]); t = sys.argv[3:]
n = [int(x) for x in t[:3]]; m = [int(x) for x in t[3:]]
r["node_cpu_s"] = {k: (m[i] - n[i]) / hz
                   for i, k in enumerate(("entry", "leader", "consumer"))}
print(json.dumps(r))' "$line" "$hz" "${t0[@]}" "${t1[@]}" >>"$out"
}

chain="$ch_entry_pid $ch_leader_pid $ch_consumer_pid"
ebn="$eb_follower_pid $eb_leader_pid $eb_consumer_pid"
jav="$e2_pid $e1_pid $e3_pid"
vx="$vA_pid - $vB_pid"
round() { # SECONDS [JVM-SECONDS]: the Java and Vert.x rows may run longer
	local d=(--duration "$1") dj=(--duration "${2:-$1}")
	local p64=(-m pipe --depth 64)
	run chain-ingress-pipe "$chain" "${p64[@]}" --port "$ch_entry_port" "${d[@]}" -a external.ingress
	run eb-ingress-pipe "$ebn" "${p64[@]}" --port "$eb_follower_port" "${d[@]}" -a external.ingress
	run java-ingress-pipe "$jav" "${p64[@]}" --port "$e2b" "${dj[@]}" -a EXTERNAL_EVENT_INGRESS
	run chain-ingress-rr "$chain" -m rr --port "$ch_entry_port" "${d[@]}" -a external.ingress
	run eb-ingress-rr "$ebn" -m rr --port "$eb_follower_port" "${d[@]}" -a external.ingress
	run java-ingress-rr "$jav" -m rr --port "$e2b" "${dj[@]}" -a EXTERNAL_EVENT_INGRESS
	run eb-xnode-pipe "$ebn" "${p64[@]}" --responder --sink-port "$eb_consumer_port" \
		--port "$eb_follower_port" "${d[@]}" -a bench.xnode
	run vx-xnode-pipe "$vx" "${p64[@]}" --port "$vab" "${dj[@]}" -a echo
	run vx-xnode-pipe-resp "$vx" "${p64[@]}" --responder --sink-port "$vbb" \
		--port "$vab" "${dj[@]}" -a bench.xnode
	run eb-xnode-rr "$ebn" -m rr --responder --sink-port "$eb_consumer_port" \
		--port "$eb_follower_port" "${d[@]}" -a bench.xnode
	run vx-xnode-rr "$vx" -m rr --port "$vab" "${dj[@]}" -a echo
	run eb-fire "$ebn" -m fire --port "$eb_follower_port" --sink-port "$eb_consumer_port" \
		"${d[@]}" -a bench.fire
	run vx-fire "$vx" -m fire --port "$vab" --sink-port "$vbb" "${dj[@]}" -a bench.fire
}

echo "java.sh: ebnode leader node$li, follower node$fi_, consumer node$ci;" \
	"java e1 leader, e2 follower, e3 consumer; $runs runs x ${duration}s" >&2
: >"$out"
recording=""
round 1 6 # the JIT: a first measured run was 5x slower after 2 s
recording=1
for r in $(seq "$runs"); do
	round "$duration"
	echo "java.sh: run $r/$runs done" >&2
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(label, f):
    v = [f(r) for r in rows if r["label"] == label]
    return statistics.median(v) if v else float("nan")
def rate(l): return med(l, lambda r: r["rate_per_s"])
def p50(l): return med(l, lambda r: r["latency_us"]["p50"])
def cpu(l, node):
    return med(l, lambda r: r["node_cpu_s"][node] * 1e6 / max(r["ops"], 1))
labels = []
for r in rows:
    if r["label"] not in labels:
        labels.append(r["label"])
print("\nmedians of %d runs (100-byte bodies); node CPU in us per message"
      " (entry = the client's node: follower / e2 / vA / chain entry)" %
      len([r for r in rows if r["label"] == "eb-ingress-pipe"]))
hdr = "%-20s %10s %9s %9s %8s %8s %8s %6s %6s" % ("row", "msg/s", "p50 us",
      "p99 us", "entry", "leader", "consumer", "errors", "lost")
print(hdr); print("-" * len(hdr))
for s in labels:
    rs = [r for r in rows if r["label"] == s]
    print("%-20s %10.0f %9.1f %9.1f %8.2f %8s %8.2f %6d %6d" % (s, rate(s), p50(s),
          med(s, lambda r: r["latency_us"]["p99"]), cpu(s, "entry"),
          "-" if s.startswith("vx") else "%.2f" % cpu(s, "leader"),
          cpu(s, "consumer"), max(r["errors"] for r in rs),
          max(r["lost"] for r in rs)))
def ratio(a, b):
    return rate(a) / rate(b) if rate(b) > 0 else float("nan")
print("\nratios (medians, same run):")
print("  ingress, 64 in flight:   ebnode/Java engine x%.2f   ebnode/chain x%.2f"
      "   (issue 25 goals: >= 10, >= 0.5)" %
      (ratio("eb-ingress-pipe", "java-ingress-pipe"),
       ratio("eb-ingress-pipe", "chain-ingress-pipe")))
print("  ingress, one at a time:  ebnode/Java engine x%.2f   p50 ebnode/chain"
      " x%.2f (goal <= 1.5)" % (ratio("eb-ingress-rr", "java-ingress-rr"),
      p50("eb-ingress-rr") / p50("chain-ingress-rr")))
print("  request/reply, 64:       ebnode/Vert.x x%.2f (consumer in the JVM),"
      " x%.2f (bridge-client responder)" %
      (ratio("eb-xnode-pipe", "vx-xnode-pipe"),
       ratio("eb-xnode-pipe", "vx-xnode-pipe-resp")))
print("  request/reply, one:      ebnode/Vert.x x%.2f   p50 %.0f vs %.0f us" %
      (ratio("eb-xnode-rr", "vx-xnode-rr"), p50("eb-xnode-rr"),
       p50("vx-xnode-rr")))
print("  fire, delivered:         ebnode/Vert.x x%.2f" %
      ratio("eb-fire", "vx-fire"))
print("  CPU per ingress message (64 in flight), follower/leader/consumer:"
      " ebnode %.2f/%.2f/%.2f us, Java %.2f/%.2f/%.2f us, chain %.2f/%.2f/%.2f us"
      % tuple(cpu(l, n) for l in ("eb-ingress-pipe", "java-ingress-pipe",
              "chain-ingress-pipe") for n in ("entry", "leader", "consumer")))
PY
