"""Ad-hoc bridge throughput numbers (not a ctest; Python-client-bound):

    EBNODE_BIN=build/<dir>/node/ebnode python3 tests/integration/bridge/bench_bridge.py [N]

1. N publishes pipelined through one socket to its own consumer;
2. 2 000 sequential request/replies between two bridge sockets.
"""

import sys
import time

import bt
from bt import BridgeClient


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    node = bt.start_node("bench", bridge={
        "inbound": [{}], "outbound": [{}], "write_queue_bytes": 64 << 20})
    try:
        c = bt.connect(node)
        c.register("b")
        c.sync()
        data = b"".join(BridgeClient.encode(
            {"type": "publish", "address": "b",
             "body": {"i": i, "pad": "x" * 64}}) for i in range(n))
        t0 = time.monotonic()
        c.send_raw(data)
        for _ in range(n):
            c.recv_frame_bytes(30)
        dt = time.monotonic() - t0
        print("pipelined publish -> own consumer: %d frames in %.3f s "
              "= %.0f frames/s" % (n, dt, n / dt))
        peer = bt.connect(node)
        peer.register("echo")
        peer.sync()
        m = 2000
        t0 = time.monotonic()
        for i in range(m):
            c.send("echo", {"i": i}, reply_address="r")
            q = peer.recv_frame()
            peer.send(q["replyAddress"], q["body"])
            c.recv_frame()
        dt = time.monotonic() - t0
        print("sequential request/reply via two sockets: %d in %.3f s = "
              "%.0f/s, mean %.3f ms" % (m, dt, m / dt, dt / m * 1000))
    finally:
        node.stop()


if __name__ == "__main__":
    main()
