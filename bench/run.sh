#!/usr/bin/env bash
# Single-node benchmark, end to end (docs/PERFORMANCE.md): builds ebbench,
# ebbaseline and ebnode, starts the baseline and a standalone ebnode (bridge
# permits everything), measures idle RSS, then runs every mode against both,
# interleaved (baseline, ebnode, baseline, ...) so that both see the same
# machine noise, and prints medians and ebnode/baseline ratios against the
# targets of issue 6.
#
#   bench/run.sh [--runs N] [--duration SEC] [--body BYTES] [--modes "rr fire"]
#                [--connections N] [--build-dir DIR] [--no-build]
#                [--out FILE.jsonl] [--no-memory]
#
# After the modes, the memory phase (skip with --no-memory): a 2-million-frame
# fire flood (window 2M) against both servers, then against ebnode only a
# consumer that never reads; peak RSS, RSS 3 s after the clients closed, and
# what was delivered.
#
# Every ebbench result is also written as one JSON line to --out (default
# <build-dir>/bench-results.jsonl). Exit status 0 unless something failed to
# run; missed targets are reported, not turned into a failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

runs=5
duration=3
body=100
conns=1
modes="rr pipe fire egress"
build="$here/build/perf"
do_build=1
memory=1
out=""
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs="$2"; shift ;;
	--duration) duration="$2"; shift ;;
	--body) body="$2"; shift ;;
	--connections) conns="$2"; shift ;;
	--modes) modes="$2"; shift ;;
	--build-dir) build="$2"; shift ;;
	--no-build) do_build=0 ;;
	--no-memory) memory=0 ;;
	--out) out="$2"; shift ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
	esac
	shift
done
out="${out:-$build/bench-results.jsonl}"

if [ "$do_build" = 1 ]; then
	cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$build" -j2 --target ebbench ebbaseline ebnode >/dev/null
fi
ebbench="$build/bench/ebbench"
baseline="$build/bench/ebbaseline"
ebnode="$build/node/ebnode"

tmp="$(mktemp -d)"
pids=()
cleanup() {
	local p
	for p in "${pids[@]+"${pids[@]}"}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]+"${pids[@]}"}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# Waits (at most 10 s) for a READY line in a file and prints it.
ready_line() {
	local i
	for i in $(seq 100); do
		if grep -m1 '^READY' "$1" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "run.sh: no READY line in $1" >&2
	return 1
}

"$baseline" --port 0 >"$tmp/baseline.out" &
pids+=($!)
base_pid=$!
base_port="$(ready_line "$tmp/baseline.out" | sed -E 's/.*bridge=[^ ]*:([0-9]+).*/\1/')"

cat >"$tmp/ebnode.json" <<'EOF'
{
  "log": {"level": "notice"},
  "bridge": {"listen": "127.0.0.1", "port": 0, "inbound": [{}], "outbound": [{}]},
  "admin": {"listen": "127.0.0.1", "port": 0},
  "cluster": {"listen": "127.0.0.1", "port": 0}
}
EOF
"$ebnode" -c "$tmp/ebnode.json" >"$tmp/ebnode.out" 2>"$tmp/ebnode.err" &
pids+=($!)
node_pid=$!
node_port="$(ready_line "$tmp/ebnode.out" | sed -E 's/.*bridge=[^ ]*:([0-9]+).*/\1/')"
sleep 1 # let the node settle before reading its idle RSS
node_idle_kb="$(awk '/^VmRSS:/ {print $2}' "/proc/$node_pid/status")"
base_idle_kb="$(awk '/^VmRSS:/ {print $2}' "/proc/$base_pid/status")"

: >"$out"
echo "run.sh: baseline pid $base_pid port $base_port; ebnode pid $node_pid port $node_port;" \
	"$runs runs x ${duration}s, body ${body}B, $conns connection(s), modes: $modes" >&2
for r in $(seq "$runs"); do
	for m in $modes; do
		case "$m" in
		rr|pipe) resp=(--responder) ;;
		*) resp=() ;;
		esac
		"$ebbench" --json --mode "$m" --port "$base_port" --server-pid "$base_pid" \
			--duration "$duration" --body "$body" --connections "$conns" \
			--label baseline >>"$out"
		"$ebbench" --json --mode "$m" --port "$node_port" --server-pid "$node_pid" \
			--duration "$duration" --body "$body" --connections "$conns" \
			--label ebnode "${resp[@]+"${resp[@]}"}" >>"$out"
		if [ "${#resp[@]}" -gt 0 ]; then
			# The same hops as ebnode: through ebbench's responder.
			"$ebbench" --json --mode "$m" --port "$base_port" --server-pid "$base_pid" \
				--duration "$duration" --body "$body" --connections "$conns" \
				--label baseline-relay --responder >>"$out"
		fi
	done
	echo "run.sh: run $r/$runs done" >&2
done
node_end_kb="$(awk '/^VmRSS:/ {print $2}' "/proc/$node_pid/status")"
node_hwm_kb="$(awk '/^VmHWM:/ {print $2}' "/proc/$node_pid/status")"

if [ "$memory" = 1 ]; then
	echo "run.sh: memory phase (2M-frame flood, then a non-reading consumer)" >&2
	flood=(--json --mode fire --count 2000000 --depth 2000000 --duration 60
		--drain 10 --settle 3 --body "$body")
	# Exit status 3 (frames lost) is a result here, not a failure.
	"$ebbench" "${flood[@]}" --port "$base_port" --server-pid "$base_pid" \
		--label mem-flood-baseline >>"$out" || [ $? = 3 ]
	"$ebbench" "${flood[@]}" --port "$node_port" --server-pid "$node_pid" \
		--label mem-flood-ebnode >>"$out" || [ $? = 3 ]
	"$ebbench" --json --mode fire --count 2000000 --depth 2000000 --duration 20 \
		--drain 3 --settle 3 --body "$body" --sink-noread --port "$node_port" \
		--server-pid "$node_pid" --label mem-noread-ebnode >>"$out" || [ $? = 3 ]
fi

python3 - "$out" "$node_idle_kb" "$base_idle_kb" "$node_end_kb" "$node_hwm_kb" <<'PY'
import json, statistics, sys
path, node_idle, base_idle, node_end, node_hwm = sys.argv[1], *map(int, sys.argv[2:])
rows = [json.loads(l) for l in open(path) if l.strip()]
def med(server, mode, f):
    v = [f(r) for r in rows if r["label"] == server and r["mode"] == mode]
    return statistics.median(v) if v else float("nan")
modes = [m for m in ("rr", "pipe", "fire", "egress") if any(r["mode"] == m for r in rows)]
print("\nload average at the end: %s" % open("/proc/loadavg").read().split()[:3])
print("\nmedians of %d runs per cell (frames: %d-byte JSON bodies, %d connection(s))" %
      (len([r for r in rows if r["label"] == "baseline"]) // max(len(modes), 1),
       rows[0]["body_bytes"] if rows else 0, rows[0]["connections"] if rows else 0))
hdr = "%-7s %-14s %12s %9s %9s %9s %10s %10s %6s" % ("mode", "server", "ops/s", "p50 us",
      "p99 us", "p99.9 us", "srv us/op", "cli us/op", "lost")
print(hdr); print("-" * len(hdr))
for m in modes:
    for s in ("baseline", "baseline-relay", "ebnode"):
        if not any(r["label"] == s and r["mode"] == m for r in rows):
            continue
        print("%-7s %-14s %12.0f %9.1f %9.1f %9.1f %10.3f %10.3f %6d" % (
            m, s, med(s, m, lambda r: r["rate_per_s"]),
            med(s, m, lambda r: r["latency_us"]["p50"]),
            med(s, m, lambda r: r["latency_us"]["p99"]),
            med(s, m, lambda r: r["latency_us"]["p999"]),
            med(s, m, lambda r: r["server"]["cpu_us_per_op"]),
            med(s, m, lambda r: r.get("client_cpu_us_per_op", float("nan"))),
            max([r["lost"] for r in rows if r["label"] == s and r["mode"] == m] or [0])))
print("\nebnode / baseline (same run):")
def ratio(m, f, base="baseline"):
    b = med(base, m, f)
    return med("ebnode", m, f) / b if b else float("nan")
for m in modes:
    for base in ("baseline", "baseline-relay"):
        if not any(r["label"] == base and r["mode"] == m for r in rows):
            continue
        print("  %-7s vs %-14s rate x%.3f   p50 x%.2f   p99 x%.2f   cpu/op x%.1f" % (
            m, base, ratio(m, lambda r: r["rate_per_s"], base),
            ratio(m, lambda r: r["latency_us"]["p50"], base),
            ratio(m, lambda r: r["latency_us"]["p99"], base),
            ratio(m, lambda r: r["server"]["cpu_us_per_op"], base)))
print("\ntargets (issue 6):")
def verdict(ok):
    return "met" if ok else "MISSED"
if "fire" in modes:
    fr = ratio("fire", lambda r: r["rate_per_s"])
    cpu = med("ebnode", "fire", lambda r: r["server"]["cpu_us_per_op"])
    print("  fire rate >= 50%% of baseline:      %5.1f%%   %s" % (fr * 100, verdict(fr >= 0.5)))
    print("  fire server CPU <= 1 us/frame:     %6.2f us %s" % (cpu, verdict(cpu <= 1.0)))
if "rr" in modes:
    rr = ratio("rr", lambda r: r["latency_us"]["p50"])
    print("  rr p50 RTT <= 1.5x baseline echo:  x%.2f    %s" % (rr, verdict(rr <= 1.5)))
    rr2 = ratio("rr", lambda r: r["latency_us"]["p50"], "baseline-relay")
    print("  (same hops: vs baseline relay      x%.2f    %s)" % (rr2, verdict(rr2 <= 1.5)))
print("  idle RSS <= 8 MB:                  %.1f MB  %s (baseline %.1f MB)" % (
    node_idle / 1024, verdict(node_idle <= 8192), base_idle / 1024))
print("  ebnode RSS after the runs: %.1f MB, peak %.1f MB" % (node_end / 1024, node_hwm / 1024))
mem = [r for r in rows if r["label"].startswith("mem-")]
if mem:
    print("\nmemory (one run each; target: ebnode <= 64 MB and back down):")
    print("  %-20s %10s %10s %9s %11s %12s" % ("scenario", "sent", "delivered",
          "lost", "peak RSS MB", "settled MB"))
    for r in mem:
        srv = r.get("server", {})
        print("  %-20s %10d %10d %9d %11.1f %12.1f" % (
            r["label"][4:], r["sent"], r["ops"], r["lost"],
            srv.get("hwm_kb", 0) / 1024, srv.get("rss_kb_settled", 0) / 1024))
PY
svg="${out%.jsonl}.svg"
if python3 "$here/bench/plot.py" "$out" "$svg" \
	--title "ebnode vs baseline: latency percentiles (${body}-byte bodies, medians of $runs runs)"; then
	echo "latency percentile plot: $svg"
fi
