#!/usr/bin/env python3
"""What a bridge client sees of its ingress requests through a follower
(issue 25: the follower's gateway takes a client's request straight from
the bridge where it can, without a bus request of its own; docs/INGRESS.md),
against three real ebnode processes and a real ZooKeeper.

Node a leads and routes; a client sends to follower b's bridge; node c (not
eligible) holds the only consumer of the route target, a bridge client.
Checks:

- headers: the client's own reach the consumer with the entry node stamped,
  the bridge's "timeout" header is consumed, not forwarded;
- the client's timeout: with the leader frozen (SIGSTOP, shorter than every
  link and session timeout) a request with headers.timeout 400 is answered
  with a TIMEOUT failure after 400 ms, not before and not seconds later; the
  leader's late answer after SIGCONT reaches nobody (no second frame), and
  the next request is acknowledged;
- a pipelined burst of 3 x 1000 requests on three connections, more than
  the gateway's window of 1024 forwards in flight, so that requests change
  from the direct way to the bus's way and back: every one acknowledged
  exactly once, and the consumer gets each connection's in the order they
  were sent;
- the bound: one connection pipelines 1100 requests while the leader is
  frozen; 1024 wait (the bridge's requests per connection, the gateway's
  window), the other 76 are refused at once, and the 1024 are
  acknowledged once each after SIGCONT.
"""
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

CLIENTS = 3
EACH = 1000  # within the bridge's 1024 requests in flight per connection
BURST = CLIENTS * EACH


def node_config(root, name, **extra):
    cfg = ebtest.cluster_config(
        root, name,
        bridge={"inbound": [{"address": "external.ingress"}],
                "outbound": [{"address": "orders"}]},
        ingress={"default_route": {"to": "orders"}})
    return ebtest.merge(cfg, extra)


class Requester(unittest.TestCase):
    def setUp(self):
        root = ebtest.unique_root()
        self.a = ebtest.EbNode(node_config(root, "a"), name="a")
        self.addCleanup(self.a.close)
        ebtest.wait_until(lambda: ebtest.admin_request(
            *self.a.admin, "GET", "/leader")[0] == 200, 20, "a leads")
        self.b = ebtest.EbNode(node_config(root, "b"), name="b")
        self.addCleanup(self.b.close)
        self.c = ebtest.EbNode(
            node_config(root, "c", node={"eligible": False}), name="c")
        self.addCleanup(self.c.close)
        self.consumer = ebtest.BridgeClient(*self.c.bridge)
        self.addCleanup(self.consumer.close)
        self.consumer.register("orders")
        self.client = ebtest.BridgeClient(*self.b.bridge)
        self.addCleanup(self.client.close)

        def probe():
            self.client.send("external.ingress", {"probe": 1},
                             reply_address="p")
            return self.client.recv_frame(timeout=5).get("type") == "message"
        ebtest.wait_until(probe, 30, "ingress routed end to end")
        while True:  # the probes' deliveries
            try:
                self.consumer.recv_frame(timeout=1)
            except TimeoutError:
                break

    def test_headers_timeout_and_burst(self):
        self.headers()
        self.timeout()
        self.burst()
        self.cap()

    def headers(self):
        self.client.send("external.ingress", {"h": 1},
                         headers={"k": "v", "timeout": 5000},
                         reply_address="h")
        f = self.client.recv_frame(timeout=10)
        self.assertEqual(f["type"], "message", f)
        self.assertEqual(f["body"]["status"], "ok", f)
        m = self.consumer.recv_frame(timeout=10)
        self.assertEqual(m["body"], {"h": 1}, m)
        self.assertEqual(m["headers"]["k"], "v", m)
        self.assertEqual(m["headers"]["ebnode.entry"], "b", m)
        self.assertNotIn("timeout", m["headers"])

    def timeout(self):
        self.a.send_signal(signal.SIGSTOP)
        self.addCleanup(self.a.send_signal, signal.SIGCONT)
        t0 = time.monotonic()
        self.client.send("external.ingress", {"t": 1},
                         headers={"timeout": 400}, reply_address="t")
        f = self.client.recv_frame(timeout=10)
        waited = time.monotonic() - t0
        self.a.send_signal(signal.SIGCONT)
        print("frozen leader: %s after %.0f ms" % (
            f.get("failureType"), waited * 1000))
        self.assertEqual(f["type"], "err", f)
        self.assertEqual(f["address"], "t", f)
        self.assertEqual(f["failureType"], "TIMEOUT", f)
        self.assertGreaterEqual(waited, 0.39)
        self.assertLess(waited, ebtest.scaled(2.5))
        # The leader routes it after SIGCONT (the consumer gets it); its
        # acknowledgement has nobody to go to.
        m = self.consumer.recv_frame(timeout=10)
        self.assertEqual(m["body"], {"t": 1}, m)
        self.client.send("external.ingress", {"t": 2}, reply_address="t2")
        f = self.client.recv_frame(timeout=10)
        self.assertEqual(f["address"], "t2", f)  # not a second "t"
        self.assertEqual(f["body"]["status"], "ok", f)
        m = self.consumer.recv_frame(timeout=10)
        self.assertEqual(m["body"], {"t": 2}, m)

    def burst(self):
        clients = [self.client]
        for _ in range(CLIENTS - 1):
            clients.append(ebtest.BridgeClient(*self.b.bridge))
            self.addCleanup(clients[-1].close)
        for k, cl in enumerate(clients):
            cl.send_raw(b"".join(ebtest.BridgeClient.encode({
                "type": "send", "address": "external.ingress",
                "replyAddress": "r%d" % i, "body": {"c": k, "i": i}})
                for i in range(EACH)))
        acked = [set() for _ in clients]
        got = [[] for _ in clients]
        deadline = time.monotonic() + ebtest.scaled(60)
        while sum(map(len, acked)) + sum(map(len, got)) < 2 * BURST and \
                time.monotonic() < deadline:
            for k, cl in enumerate(clients):
                for f in self.frames(cl, EACH - len(acked[k])):
                    self.assertEqual(f["type"], "message", f)
                    self.assertEqual(f["body"]["status"], "ok", f)
                    self.assertNotIn(f["address"], acked[k])
                    acked[k].add(f["address"])
            for m in self.frames(self.consumer, BURST):
                got[m["body"]["c"]].append(m["body"]["i"])
        print("burst: %d acknowledged, %d delivered" % (
            sum(map(len, acked)), sum(map(len, got))))
        for k in range(CLIENTS):
            self.assertEqual(len(acked[k]), EACH)
            self.assertEqual(got[k], list(range(EACH)))
        st, text = ebtest.admin_request(*self.b.admin, "GET", "/metrics")
        self.assertEqual(st, 200)
        print("b: " + ", ".join(
            line for line in text.splitlines()
            if line.startswith(("ebnode_ingress_received",
                                "ebnode_ingress_acked"))))

    def cap(self):
        """One connection pipelines 1100 requests while the leader is
        frozen: the first 1024 wait in b's gateway (its window is 1024),
        the bridge refuses the other 76 at once with its
        per-connection cap, and after SIGCONT the 1024 are acknowledged,
        once each."""
        cl = ebtest.BridgeClient(*self.b.bridge)
        self.addCleanup(cl.close)
        self.a.send_signal(signal.SIGSTOP)
        cl.send_raw(b"".join(ebtest.BridgeClient.encode({
            "type": "send", "address": "external.ingress",
            "replyAddress": "q%d" % i, "body": {"q": i}})
            for i in range(1100)))
        refused = set()
        while len(refused) < 76:
            f = cl.recv_frame(timeout=5)
            self.assertEqual(f["type"], "err", f)
            self.assertIn("too_many_requests: 1024 replies already awaited "
                          "on this connection", f["message"])
            refused.add(f["address"])
        self.a.send_signal(signal.SIGCONT)
        self.assertEqual(refused, {"q%d" % i for i in range(1024, 1100)})
        acked = set()
        while len(acked) < 1024:
            f = cl.recv_frame(timeout=10)
            self.assertEqual(f["type"], "message", f)
            self.assertNotIn(f["address"], acked)
            acked.add(f["address"])
        self.assertEqual(acked, {"q%d" % i for i in range(1024)})
        print("cap: 76 refused at once, 1024 acknowledged after SIGCONT")

    @staticmethod
    def frames(client, most):
        """Up to most frames that arrive within 10 ms of each other."""
        out = []
        while len(out) < most:
            try:
                out.append(client.recv_frame(timeout=0.01))
            except TimeoutError:
                break
        return out

if __name__ == "__main__":
    unittest.main(verbosity=2)
