"""Cost of the admin observability routes (not a ctest; numbers for
docs/ADMIN.md). Starts a standalone ebnode, registers N addresses from one
bridge client, then times 200 sequential GETs per route on one keep-alive
connection (client time included).

    EBNODE_BIN=build/<x>/node/ebnode \
        python3 tests/integration/admin/scrape_bench.py 10000 [full]

"full" asks /subscriptions for every address (limit=100000).
"""

import http.client
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import ebtest  # noqa: E402


def main():
    naddr = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    full = len(sys.argv) > 2 and sys.argv[2] == "full"
    cfg = ebtest.standalone_config(
        log={"level": "warn"},
        bridge={"outbound": [{"addressRegex": "a\\..*"}]})
    with ebtest.EbNode(cfg, name="scrape-bench") as node:
        client = ebtest.BridgeClient(*node.bridge)
        for i in range(naddr):
            client.register("a.%06d" % i)
        ebtest.wait_until(
            lambda: ebtest.admin_request(*node.admin, "GET",
                                         "/subscriptions?limit=0")[1]
            ["totals"]["addresses"] >= naddr, 60, "registrations")
        conn = http.client.HTTPConnection(*node.admin)
        for path in ("/metrics", "/subscriptions", "/bridge"):
            url = path
            if path == "/subscriptions" and full:
                url += "?limit=100000"
            n = 200
            size = 0
            t = time.perf_counter()
            for _ in range(n):
                conn.request("GET", url)
                r = conn.getresponse()
                size = len(r.read())
                if r.status != 200:
                    raise SystemExit("%s: HTTP %d" % (url, r.status))
            dt = (time.perf_counter() - t) / n
            print("%-22s addresses=%-6d %8.3f ms/request  body %d bytes"
                  % (url, naddr, dt * 1e3, size))
        conn.close()
        client.close()


if __name__ == "__main__":
    main()
