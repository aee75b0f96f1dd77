#!/usr/bin/env python3
"""An acknowledgement means delivered (issue 10, item 2), against three real
ebnode processes and a real ZooKeeper.

Node a leads and routes; node c (not eligible) holds the only consumer of
the route target, a bridge client. A client pushes ingress requests into
a's bridge at about 300/s while c is paused with SIGSTOP for 4 s (past the
3 s link timeout, within its 5 s ZooKeeper session) and then for 6 s (past
the session too), then resumed with SIGCONT. Checks:

- every request is answered: an acknowledgement or a failure with a clear
  reason (502 no handlers, 508 delivery not confirmed);
- no acknowledged message is missing at the consumer (matched by body):
  the leader acknowledges only after c confirmed the hand-over;
- the pauses are visible (failures while c is stopped) and the flow recovers
  after each SIGCONT (acknowledgements again).

Before delivery receipts the leader acknowledged when it handed the message
to the node link, and this test saw hundreds of acknowledged messages that
never arrived.
"""
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

RATE = 300  # requests per second
SESSION_MS = 5000


def node_config(root, name, **extra):
    cfg = ebtest.cluster_config(
        root, name, zookeeper={"session_timeout_ms": SESSION_MS},
        bridge={"inbound": [{"address": "external.ingress"}],
                "outbound": [{"address": "orders"}]},
        ingress={"default_route": {"to": "orders"}})
    return ebtest.merge(cfg, extra)


def delivered_ids(consumer):
    """The "i" of every body the consumer received."""
    return {m["body"]["i"] for m in list(consumer.msgs)
            if isinstance(m.get("body"), dict) and "i" in m["body"]}


class Pump:
    """Sends requests at RATE through one bridge connection and records
    every answer (single thread: send what is due, then read)."""

    def __init__(self, client):
        self.client = client
        self.sent = 0
        self.t0 = time.monotonic()
        self.answers = {}  # i -> (time, frame)

    def run_for(self, seconds, sending=True):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if sending:
                due = int((time.monotonic() - self.t0) * RATE)
                while self.sent < due:
                    self.client.send("external.ingress", {"i": self.sent},
                                     reply_address="r%d" % self.sent)
                    self.sent += 1
            try:
                f = self.client.recv_frame(timeout=0.005)
            except TimeoutError:
                continue
            addr = f.get("address", "")
            assert addr.startswith("r"), f
            i = int(addr[1:])
            assert i not in self.answers, "two answers for request %d" % i
            self.answers[i] = (time.monotonic(), f)

    def drain(self, bound):
        """Stops sending and reads answers until every request has one."""
        end = time.monotonic() + bound
        while len(self.answers) < self.sent and time.monotonic() < end:
            self.run_for(0.2, sending=False)

    def acked(self, since=0.0, until=float("inf")):
        return {i for i, (t, f) in self.answers.items()
                if f["type"] == "message" and since <= t < until}

    def failed(self, since=0.0, until=float("inf")):
        return {i: f for i, (t, f) in self.answers.items()
                if f["type"] != "message" and since <= t < until}


class Delivery(unittest.TestCase):
    def test_target_paused_4s_and_6s(self):
        root = ebtest.unique_root()
        a = ebtest.EbNode(node_config(root, "a"), name="a")
        self.addCleanup(a.close)
        ebtest.wait_until(lambda: ebtest.admin_request(
            *a.admin, "GET", "/leader")[0] == 200, 20, "a leads")
        b = ebtest.EbNode(node_config(root, "b"), name="b")
        self.addCleanup(b.close)
        c = ebtest.EbNode(node_config(root, "c", node={"eligible": False}),
                          name="c")
        self.addCleanup(c.close)
        # SIGCONT whatever happens, or c.close() would hang on a stopped
        # process (cleanups run last-in first-out: before c.close).
        self.addCleanup(lambda: c.running() and
                        c.send_signal(signal.SIGCONT))
        consumer = ebtest.RecordingConsumer(c, "orders")
        self.addCleanup(consumer.close)
        client = ebtest.BridgeClient(*a.bridge)
        self.addCleanup(client.close)

        def probe():
            client.send("external.ingress", {"probe": True},
                        reply_address="probe")
            return client.recv_frame(timeout=5).get("type") == "message"
        ebtest.wait_until(probe, 20, "ingress routed end to end")

        pump = Pump(client)
        phases = []
        pump.run_for(1.5)
        for pause in (4.0, 6.0):
            t_stop = time.monotonic()
            c.send_signal(signal.SIGSTOP)
            pump.run_for(pause)
            t_cont = time.monotonic()
            c.send_signal(signal.SIGCONT)
            # The link and the consumer's interest come back; past the
            # session c registers again first.
            pump.run_for(ebtest.scaled(4.0))
            phases.append((pause, t_stop, t_cont, time.monotonic()))
        pump.drain(ebtest.scaled(20))

        acked = pump.acked()
        failed = pump.failed()
        print("delivery: sent=%d answered=%d acked=%d failed=%d" % (
            pump.sent, len(pump.answers), len(acked), len(failed)))
        reasons = {}
        for f in failed.values():
            key = (f.get("failureCode"),
                   re.sub(r"\d+", "N", f.get("message", "")))
            reasons[key] = reasons.get(key, 0) + 1
        for (code, text), n in sorted(reasons.items(),
                                      key=lambda kv: -kv[1])[:8]:
            print("  %5d x %s %s" % (n, code, text))
        for pause, t_stop, t_cont, t_end in phases:
            print("  pause %.0fs: acked during %d, failed during %d, acked "
                  "after SIGCONT %d" % (
                      pause, len(pump.acked(t_stop, t_cont)),
                      len(pump.failed(t_stop, t_cont)),
                      len(pump.acked(t_cont, t_end))))

        # Every request answered.
        self.assertEqual(len(pump.answers), pump.sent,
                         "unanswered: %s" % sorted(
                             set(range(pump.sent)) - set(pump.answers))[:10])
        # Every failure says why.
        for i, f in failed.items():
            self.assertEqual(f["type"], "err", f)
            self.assertIn(f.get("failureCode"), (502, 508), f)
            msg = f.get("message", "")
            self.assertTrue(msg.startswith("No handlers for address orders")
                            or "not confirmed" in msg, f)
        # No acknowledgement without delivery. The consumer reads in a
        # thread: give it a bounded moment to catch up.
        deadline = time.monotonic() + ebtest.scaled(10)
        while (time.monotonic() < deadline
               and not acked <= delivered_ids(consumer)):
            time.sleep(0.05)
        lost = sorted(acked - delivered_ids(consumer))
        print("delivery: acknowledged but not delivered: %d" % len(lost))
        self.assertEqual(lost, [], "acknowledged but not delivered "
                         "(first 10): %s" % lost[:10])
        # The faults were real, and the flow recovered after each.
        for pause, t_stop, t_cont, t_end in phases:
            self.assertGreater(len(pump.failed(t_stop, t_end)), 0,
                               "pause %.0fs had no effect" % pause)
            self.assertGreater(len(pump.acked(t_cont, t_end)), 0,
                               "no ack after the %.0fs pause" % pause)


if __name__ == "__main__":
    unittest.main(verbosity=2)
