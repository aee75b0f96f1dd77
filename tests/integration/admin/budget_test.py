#!/usr/bin/env python3
"""The admin server charges what clients make it hold to the node-wide
input budget (bridge.input_budget_bytes, issue 22), over real sockets:

- unfinished request bodies count in ebnode_bridge_input_bytes while they
  are held, and go back to 0 when their connections close;
- a body that does not fit in the budget is refused with 503
  input_budget (the connection closed), while GET /health, which holds
  nothing, is still answered;
- the bridge's own clients and the admin share the one budget: a bridge
  client's parked partial frame leaves less room for admin bodies.
"""
import os
import socket
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import ebtest  # noqa: E402

BUDGET = 200000
BODY = 60000  # under the admin's 64 KiB body bound


def input_bytes(node):
    return ebtest.metric(node, "ebnode_bridge_input_bytes")


def unfinished_post(node, sent):
    """A POST whose body is announced at BODY bytes of which sent go."""
    s = socket.create_connection(node.admin, timeout=5)
    s.sendall(("POST /leader/release HTTP/1.1\r\nHost: x\r\n"
               "X-Ebnode-Admin: 1\r\nContent-Length: %d\r\n\r\n"
               % BODY).encode() + b"x" * sent)
    return s


def answer(s, timeout=5):
    """The status of the answer on s, or None when none came."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            d = s.recv(4096)
            if not d:
                break
            data += d
    except socket.timeout:
        return None
    return int(data.split(b" ", 2)[1]) if data else None


class AdminBudget(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.node = ebtest.EbNode(ebtest.standalone_config(
            bridge={"input_budget_bytes": BUDGET,
                    "inbound": [{}], "outbound": [{}]},
            admin={"request_timeout_ms": 20000}), name="budget")

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_bodies_charged_refused_and_released(self):
        n = self.node
        held = []
        try:
            # three bodies of 55 000 bytes: 165 000 of the 200 000
            for _ in range(3):
                held.append(unfinished_post(n, 55000))
            ebtest.wait_until(lambda: input_bytes(n) >= 165000, timeout=5,
                              what="the three bodies counted")
            # a fourth does not fit: 503 input_budget, closed
            s = unfinished_post(n, 55000)
            self.assertEqual(answer(s), 503)
            s.close()
            # /health holds nothing and is answered
            st, _ = ebtest.admin_request(*n.admin, "GET", "/health")
            self.assertEqual(st, 200)
            self.assertLessEqual(input_bytes(n), BUDGET)
        finally:
            for s in held:
                s.close()
        ebtest.wait_until(lambda: input_bytes(n) == 0, timeout=5,
                          what="input bytes back to 0")

    def test_shared_with_bridge_clients(self):
        n = self.node
        host, port = n.bridge
        b = socket.create_connection((host, port), timeout=5)
        a = None
        try:
            # a bridge client parks 180 000 bytes of a 190 000-byte frame
            b.sendall((190000).to_bytes(4, "big") + b"{" * 180000)
            ebtest.wait_until(lambda: input_bytes(n) >= 180000, timeout=5,
                              what="the parked frame counted")
            # 50 000 more admin bytes no longer fit
            a = unfinished_post(n, 50000)
            self.assertEqual(answer(a), 503)
        finally:
            b.close()
            if a is not None:
                a.close()
        ebtest.wait_until(lambda: input_bytes(n) == 0, timeout=5,
                          what="input bytes back to 0")


if __name__ == "__main__":
    unittest.main()
