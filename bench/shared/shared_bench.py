"""The ebnode side of bench/shared.sh (docs/PERFORMANCE.md "Shared data"):
3 ebnode processes on the ZooKeeper named by EB_ZK_CONNECT_FILE, one bridge
client per node (Python, tests/integration/ebtest.py), each running one
workload for SECONDS: lock/unlock cycles on one lock, increments of one
counter, and ids (one per request, and batches of 1000). Prints one JSON
object per workload.

  EBNODE_BIN=... EB_ZK_CONNECT_FILE=... python3 shared_bench.py SECONDS"""

import json
import os
import sys
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "integration"))
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "integration",
                                "shared"))
import ebtest  # noqa: E402
import shared_test as st  # noqa: E402


def measure(name, clients, seconds, op, per_op=1):
    done = [0] * len(clients)
    end = time.monotonic() + seconds

    def run(i):
        while time.monotonic() < end:
            op(clients[i])
            done[i] += per_op

    t0 = time.monotonic()
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(clients))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.monotonic() - t0
    print(json.dumps({"impl": "ebnode", "workload": name, "ops": sum(done),
                      "seconds": round(dt, 2),
                      "per_s": round(sum(done) / dt)}), flush=True)


def lock_cycle(c):
    r = c.request("ebnode.lock", {"op": "acquire", "name": "bench",
                                  "timeout_ms": 60000}, 90)
    c.request("ebnode.lock", {"op": "release", "name": "bench",
                              "token": r["token"]})


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    root = ebtest.unique_root()
    nodes = [ebtest.EbNode(st.node_config(root, i), name="b%d" % i)
             for i in range(3)]
    try:
        cs = [st.Client(n) for n in nodes]
        measure("lock-cycle", cs, seconds, lock_cycle)
        measure("increment", cs, seconds, lambda c: c.request(
            "ebnode.counter", {"op": "increment", "name": "bench"}))
        measure("id", cs, seconds, lambda c: c.request(
            "ebnode.id", {"count": 1}))
        measure("id-batch-1000", cs, seconds, lambda c: c.request(
            "ebnode.id", {"count": 1000}), per_op=1000)
        for c in cs:
            c.close()
    finally:
        for n in nodes:
            n.close()


if __name__ == "__main__":
    main()
