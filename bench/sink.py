#!/usr/bin/env python3
"""The benchmarks' consumer that reads and discards.

    python3 bench/sink.py PORT ADDRESS

Registers ADDRESS on the bridge at 127.0.0.1:PORT, sends a ping, prints
REGISTERED once the pong came back (so the registration is in place), then
reads and discards until the bridge closes the connection.

It stands in for the application behind the consumer's node, so it must
cost far less than the nodes it helps to measure: it reads into one buffer
it reuses. A `recv(1 << 20)` loop allocates a 1 MiB object per read; on the
2-core machine that cost 5-6 us of CPU per ingress message, more than any
node, and halved ebnode's ingress rate (PERFORMANCE.md, "Round 7 of issue
25").
"""
import json
import socket
import struct
import sys


def frame(msg):
    b = json.dumps(msg, separators=(",", ":")).encode()
    return struct.pack(">I", len(b)) + b


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: sink.py PORT ADDRESS")
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(frame({"type": "register", "address": sys.argv[2]}) +
              frame({"type": "ping"}))
    buf = bytearray(1 << 20)
    seen = b""
    while b"pong" not in seen:
        n = s.recv_into(buf)
        if n == 0:
            sys.exit("sink.py: the bridge closed before the pong")
        seen = seen[-8:] + bytes(buf[:n])
    print("REGISTERED", flush=True)
    while s.recv_into(buf):
        pass


if __name__ == "__main__":
    main()
