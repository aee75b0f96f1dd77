#!/usr/bin/env bash
# Smoke test of the relay chain (ebbaseline --receipt / --next, issue 25):
# starts the consumer's node, a sink on it, the leader and the entry, sends
# 2000 pipelined requests through the entry with ebbench and fails unless
# all were answered (receipts back through every hop), none in error or
# lost, and the sink received every one of them.
#   bench/chain_smoke.sh BUILD_DIR
set -euo pipefail
build="$1"
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
wait_for() { # FILE REGEX PID, bounded (10 s)
	local i
	for i in $(seq 100); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || break
		sleep 0.1
	done
	echo "chain_smoke: no /$2/ in $1" >&2
	cat "$1" >&2 || true
	exit 1
}
start() { # NAME ARGS...
	local name="$1"
	shift
	"$build/bench/ebbaseline" "$@" >"$tmp/$name.out" 2>&1 &
	pids+=($!)
	wait_for "$tmp/$name.out" '^READY' "$!"
	sed -nE 's/^READY bridge=[^ ]*:([0-9]+).*/\1/p' "$tmp/$name.out" >"$tmp/$name.port"
}
start consumer --receipt
# The sink counts what it receives; REGISTERED once the pong after its
# registration came back; COUNT n once it has 2000 (or on SIGTERM).
python3 -c 'import signal, socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def frame(b):
    return struct.pack(">I", len(b)) + b
s.sendall(frame(b"{\"type\":\"register\",\"address\":\"orders\"}") +
          frame(b"{\"type\":\"ping\"}"))
buf = b""
n = 0
def done(*_):
    print("COUNT", n, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
ready = False
while True:
    d = s.recv(1 << 20)
    if not d:
        done()
    buf += d
    while len(buf) >= 4:
        k = struct.unpack(">I", buf[:4])[0]
        if len(buf) < 4 + k:
            break
        f, buf = buf[4:4 + k], buf[4 + k:]
        if f == b"{\"type\":\"pong\"}":
            print("REGISTERED", flush=True)
        else:
            n += 1
            if n >= 2000:
                done()' "$(cat "$tmp/consumer.port")" >"$tmp/sink.out" &
sink=$!
pids+=($sink)
wait_for "$tmp/sink.out" '^REGISTERED' "$sink"
start leader --next "127.0.0.1:$(cat "$tmp/consumer.port")"
start entry --next "127.0.0.1:$(cat "$tmp/leader.port")"
"$build/bench/ebbench" --json -m pipe --depth 64 -n 2000 -d 10 --warmup 0 \
	--port "$(cat "$tmp/entry.port")" -a external.ingress >"$tmp/run.json"
wait_for "$tmp/sink.out" '^COUNT' "$sink"
python3 - "$tmp/run.json" "$tmp/sink.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
count = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("COUNT")]
print("chain_smoke: ops %d errors %d lost %d delivered %s" %
      (r["ops"], r["errors"], r["lost"], count))
ok = r["ops"] >= 2000 and r["errors"] == 0 and r["lost"] == 0 and \
     count and count[0] >= r["ops"]
sys.exit(0 if ok else 1)
PY
