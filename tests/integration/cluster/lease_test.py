"""The leader lease against a real ZooKeeper (docs/CLUSTER.md "The lease"):
it is planned from the negotiated session timeout and the configured tick,
it is renewed by writes (check-only multis the quorum must commit: the zxid
advances about once per heartbeat), and a negotiated timeout that leaves no
safe lease stops the node with exit code 1 after one ERR line naming the
values. The follower-partition scenario itself runs in the
network-namespace suite."""

import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cl  # noqa: E402
from cl import ebtest  # noqa: E402


def zxid(hostport):
    """The server's last zxid, from the "srvr" four-letter word."""
    host, port = hostport.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"srvr")
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    for line in out.decode().splitlines():
        if line.startswith("Zxid:"):
            return int(line.split(":", 1)[1].strip(), 16)
    raise RuntimeError("no Zxid in srvr answer: %r" % out)


class Lease(unittest.TestCase):
    def test_planned_and_renewed_by_writes(self):
        zk = ebtest.zk_connect_string()
        root = ebtest.unique_root()
        n = ebtest.EbNode(cl.config(root, 0, session_ms=2000,
                                    zookeeper={"tick_ms": 500}),
                          name="n00")
        try:
            # The fixture's tickTime is 500 and it grants 2000 ms:
            # 2000 - 250 - 500 - 100.
            n.wait_log("INFO election: lease: session_ms=2000 tick_ms=500 "
                       "heartbeat_ms=500 margin_ms=100 lease_ms=1150")
            n.wait_log("NOTICE election: elected:")
            z0 = zxid(zk)
            t0 = time.monotonic()
            time.sleep(ebtest.scaled(2.0))  # a span to count writes in
            z1 = zxid(zk)
            took = time.monotonic() - t0
            # One renewal per 500 ms; the shared fixture may add others.
            self.assertGreaterEqual(z1 - z0, int(took / 0.5) - 1,
                                    (z0, z1, took))
            self.assertNotIn("revoked:", n.log_text())
        finally:
            n.close()

    def test_unsafe_negotiated_timeout_stops(self):
        # Configured 600 s passes the load check (lease 100 s <= 370 s);
        # the fixture's maxSessionTimeout is 60 s, and with 60 s the
        # bound is 60000 - 15000 - 50000 - 3000 < 0.
        cfg = cl.config(ebtest.unique_root(), 0, session_ms=600000,
                        election={"heartbeat_ms": 50000,
                                  "lease_ms": 100000})
        r = ebtest.run_ebnode([], config=cfg, timeout=60)
        self.assertEqual(r.code, 1, r)
        self.assertIn("ERR election: lease-unsafe: key=election.lease_ms "
                      "session_ms=60000 tick_ms=30000(assumed) "
                      "heartbeat_ms=50000 margin_ms=3000 bound_ms=-8000 "
                      "lease_ms=100000", r.stderr)
        self.assertIn("start-failed: step=cluster err=EB_ECONF", r.stderr)
        self.assertNotIn("elected:", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
