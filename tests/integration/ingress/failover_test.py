#!/usr/bin/env python3
"""Leader-routed ingress across leader failure (issue 7), against real
ebnode processes and a real ZooKeeper.

- failover: a client on a follower's bridge pipelines N ingress requests
  (default 20000, EB_INGRESS_N) while the leader is SIGKILLed (then, in a
  second test, SIGTERMed) mid-stream. Every request must get an
  acknowledgement or a failure frame, >= 99% (SIGKILL) / 100% (SIGTERM) must
  be acknowledged, epochs in acknowledgements never decrease, and the routed
  messages reach the target consumer with no gap in sequence within an
  epoch; every acknowledged (epoch, seq) was delivered.
- hold: the client's node may not lead; the eligible nodes are stopped and
  the cluster is left without a leader for 2 s. Requests sent meanwhile are
  held and delivered in order once a new leader appears; what exceeds the
  hold bound is failed at once (code 507).
"""
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

N = int(os.environ.get("EB_INGRESS_N", "20000"))
WINDOW = 200
SESSION_MS = 2000


def node_config(root, name, **extra):
    cfg = ebtest.cluster_config(root, name, zookeeper={
        "session_timeout_ms": SESSION_MS},
        bridge={"inbound": [{"address": "external.ingress"}],
                "outbound": [{"address": "orders"}]},
        ingress={"default_route": {"to": "orders"}})
    return ebtest.merge(cfg, extra)


def ingress_ready(node, consumers=1):
    """True once a send through node is routed (the leader is reachable and
    the target's interest has propagated)."""
    st, body = ebtest.admin_request(*node.admin, "GET", "/leader")
    return st == 200


class Failover(unittest.TestCase):
    def three_nodes(self):
        """a leads, the client is on b, the consumer of "orders" on c;
        returns (a, c, consumer, client) once ingress is routed end to
        end."""
        root = ebtest.unique_root()
        a = ebtest.EbNode(node_config(root, "a"), name="a")
        self.addCleanup(a.close)
        ebtest.wait_until(lambda: ingress_ready(a), 20, "a leads")
        b = ebtest.EbNode(node_config(root, "b"), name="b")
        self.addCleanup(b.close)
        c = ebtest.EbNode(node_config(root, "c"), name="c")
        self.addCleanup(c.close)
        st, leader = ebtest.admin_request(*b.admin, "GET", "/leader")
        self.assertEqual(st, 200)
        self.assertEqual(leader["node_id"], "a")
        consumer = ebtest.RecordingConsumer(c, "orders")
        self.addCleanup(consumer.close)
        client = ebtest.BridgeClient(*b.bridge)
        self.addCleanup(client.close)
        # Interest of the consumer must have reached the leader: probe.
        def probe():
            client.send("external.ingress", {"probe": True},
                        reply_address="probe")
            f = client.recv_frame(timeout=5)
            return f.get("type") == "message"
        ebtest.wait_until(probe, 20, "ingress routed end to end")
        return a, c, consumer, client

    def run_failover(self, sig):
        a, _, consumer, client = self.three_nodes()
        answers = {}
        ack_epochs = []
        sent = 0
        killed_at = None
        deadline = time.monotonic() + ebtest.scaled(120)
        while len(answers) < N:
            self.assertLess(time.monotonic(), deadline,
                            "answers: %d of %d" % (len(answers), N))
            while sent < N and sent - len(answers) < WINDOW:
                client.send("external.ingress", {"i": sent},
                            reply_address="r%d" % sent)
                sent += 1
            f = client.recv_frame(timeout=ebtest.scaled(30))
            addr = f.get("address", "")
            self.assertTrue(addr.startswith("r"), f)
            i = int(addr[1:])
            self.assertNotIn(i, answers, "two answers for one request")
            answers[i] = f
            if f["type"] == "message":
                ack_epochs.append(f["body"]["epoch"])
            if killed_at is None and len(answers) >= N // 4:
                killed_at = time.monotonic()
                a.send_signal(sig)
        took = time.monotonic() - killed_at
        acked = [i for i, f in answers.items() if f["type"] == "message"]
        failed = {i: f for i, f in answers.items() if f["type"] != "message"}
        print("failover(%s): requests=%d acked=%d failed=%d "
              "epochs=%s answered %.2fs after the signal" % (
                  signal.Signals(sig).name, N, len(acked), len(failed),
                  sorted(set(ack_epochs)), took))
        for f in list(failed.values())[:5]:
            print("  failure:", f)
        self.assertEqual(len(answers), N)
        if sig == signal.SIGTERM:
            self.assertEqual(len(acked), N)
        else:
            self.assertGreaterEqual(len(acked), N * 99 // 100)
        for x, y in zip(ack_epochs, ack_epochs[1:]):
            self.assertLessEqual(x, y, "ack epochs decreased")
        self.assertGreaterEqual(len(set(ack_epochs)), 2,
                                "the leader change is visible in the acks")
        # Every acknowledged message reached the consumer; per epoch the
        # routed sequence numbers have no gap.
        def delivered_all():
            got = {(int(m["headers"]["ebnode.epoch"]),
                    int(m["headers"]["ebnode.seq"]))
                   for m in consumer.msgs}
            want = {(f["body"]["epoch"], f["body"]["seq"])
                    for f in answers.values() if f["type"] == "message"}
            return want <= got
        ebtest.wait_until(delivered_all, 20, "acknowledged messages delivered")
        # Probes are routed too (they take sequence numbers): look at the
        # whole stream of the epochs, from the consumer's first message.
        by_epoch = {}
        for m in consumer.msgs:
            e = int(m["headers"]["ebnode.epoch"])
            by_epoch.setdefault(e, []).append(int(m["headers"]["ebnode.seq"]))
        for e, seqs in by_epoch.items():
            s = sorted(seqs)
            self.assertEqual(s, list(range(s[0], s[0] + len(s))),
                             "gap or duplicate in epoch %d" % e)
            self.assertEqual(seqs, s, "out of order in epoch %d" % e)

    def test_sigkill_leader(self):
        self.run_failover(signal.SIGKILL)

    def test_sigterm_leader(self):
        self.run_failover(signal.SIGTERM)

    def test_sigterm_leader_waits_for_receipts(self):
        """A stopping leader stays a member (and linked) until the
        receipts of what it routed are in: with the consumer's node paused,
        the requests the leader routed before its SIGTERM are acknowledged
        once that node resumes, not failed as "link lost" when the peers
        see the leader leave (once in CI, 34 of 20000 failed so)."""
        n = 50
        a, c, consumer, client = self.three_nodes()
        base = len(consumer.msgs)
        c.send_signal(signal.SIGSTOP)
        try:
            for i in range(n):
                client.send("external.ingress", {"w": i},
                            reply_address="w%d" % i)
            ebtest.wait_until(lambda: ebtest.metric(
                a, "ebnode_bus_pending_receipts") >= n, 10,
                              "a routed the requests to the paused c")
            a.send_signal(signal.SIGTERM)
            # Either a waits for the receipts (it logs so) or it leaves
            # without them (and exits): the answers tell which.
            ebtest.wait_until(
                lambda: a.proc.poll() is not None or
                "leave-drain: pending=" in a.log_text(), 10,
                "a drains or exits")
        finally:
            c.send_signal(signal.SIGCONT)
        answers = [client.recv_frame(timeout=ebtest.scaled(20))
                   for _ in range(n)]
        self.assertEqual(sorted(f["address"] for f in answers),
                         sorted("w%d" % i for i in range(n)))
        self.assertTrue(all(f["type"] == "message" for f in answers),
                        [f for f in answers if f["type"] != "message"][:3])
        self.assertIn("leave-drain: pending=%d " % n, a.log_text())
        a.wait_log("leave-drained: after_ms=", timeout=10)
        self.assertEqual(a.wait_exit(timeout=30), 0)
        got = sorted(m["body"]["w"] for m in consumer.msgs[base:]
                     if "w" in m["body"])
        self.assertEqual(got, list(range(n)))
        print("drain: %d routed before SIGTERM, all acknowledged after "
              "the consumer's node resumed" % n)


class Hold(unittest.TestCase):
    def test_held_in_order_then_bound(self):
        root = ebtest.unique_root()
        e1 = ebtest.EbNode(node_config(root, "e1"), name="e1")
        self.addCleanup(e1.close)
        ebtest.wait_until(lambda: ingress_ready(e1), 20, "e1 leads")
        e2 = ebtest.EbNode(node_config(root, "e2"), name="e2")
        self.addCleanup(e2.close)
        edge = ebtest.EbNode(node_config(root, "edge",
                                         node={"eligible": False},
                                         ingress={"hold_max": 100,
                                                  "hold_ms": 20000}),
                             name="edge")
        self.addCleanup(edge.close)
        consumer = ebtest.RecordingConsumer(edge, "orders")
        self.addCleanup(consumer.close)
        client = ebtest.BridgeClient(*edge.bridge)
        self.addCleanup(client.close)

        def probe():
            client.send("external.ingress", {"probe": True},
                        reply_address="probe")
            return client.recv_frame(timeout=5).get("type") == "message"
        ebtest.wait_until(probe, 20, "ingress routed end to end")
        base = len(consumer.msgs)
        self.assertEqual(e1.stop(), 0)
        self.assertEqual(e2.stop(), 0)
        ebtest.wait_until(lambda: ebtest.admin_request(
            *edge.admin, "GET", "/leader")[0] != 200, 10, "no leader")
        # 150 requests while no leader exists: 100 held, 50 over the bound.
        for i in range(150):
            client.send("external.ingress", {"i": i}, reply_address="h%d" % i)
        over = [client.recv_frame(timeout=5) for _ in range(50)]
        for i, f in enumerate(over):
            self.assertEqual(f["type"], "err", f)
            self.assertEqual(f["address"], "h%d" % (100 + i))
            self.assertEqual(f["failureType"], "RECIPIENT_FAILURE")
            self.assertEqual(f["failureCode"], 507)
        # The scenario: two seconds without a leader (nothing to await).
        client.expect_no_frame(timeout=2.0)
        e3 = ebtest.EbNode(node_config(root, "e3"), name="e3")
        self.addCleanup(e3.close)
        acks = [client.recv_frame(timeout=ebtest.scaled(20))
                for _ in range(100)]
        self.assertEqual([f["address"] for f in acks],
                         ["h%d" % i for i in range(100)])
        self.assertTrue(all(f["type"] == "message" for f in acks), acks[:3])
        self.assertEqual([f["body"]["seq"] for f in acks],
                         list(range(acks[0]["body"]["seq"],
                                    acks[0]["body"]["seq"] + 100)))
        ebtest.wait_until(lambda: sum(1 for m in consumer.msgs[base:]
                                      if "i" in m["body"]) >= 100, 10,
                          "held messages delivered")
        got = [m["body"]["i"] for m in consumer.msgs[base:]
               if "i" in m["body"]]
        self.assertEqual(got, list(range(100)))
        print("hold: 100 held and delivered in order, 50 failed with 507")


if __name__ == "__main__":
    unittest.main(verbosity=2)
