#!/usr/bin/env python3
"""Safe retries for ingress (issue 23, item 3), against three real ebnode
processes and a real ZooKeeper.

Node a leads, b follows (both eligible), c (not eligible) holds the only
consumer of the route target, a bridge client that records every message.
Two clients on b's bridge send ingress requests under load (RATE each per
second) and retry EVERY failure and every answer that does not come within
TIMEOUT_S, until the message is acknowledged ("ok" or "duplicate"):

- the keyed client puts the idempotency key "ebnode.msgid" = "k<i>" on
  every attempt of message i;
- the unkeyed client does the same without a key (the "before": what a
  client that retries gets without keys).

Faults, one fresh cluster each: c paused (SIGSTOP) for PAUSE_S then SIGCONT;
the leader SIGTERMed; POST /leader/release on the leader; the leader
SIGKILLed. Per scenario and client it prints: messages sent, attempts,
acknowledged, answered "duplicate", delivered twice or more at the consumer,
lost (acknowledged, never delivered). The keyed client must see 0 delivered
twice and 0 lost, every message acknowledged in the end, and every
"duplicate" answer naming an original stamp that the consumer received.
"""
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

RATE = 150          # new messages per second, per client
TIMEOUT_S = 1.0     # an attempt without an answer this long is retried
BACKOFF_S = 0.2     # a failed attempt is retried this much later
PAUSE_S = float(os.environ.get("EB_SAFE_RETRY_PAUSE_S", "5"))
SESSION_MS = 3000


def node_config(root, name, **extra):
    cfg = ebtest.cluster_config(
        root, name, zookeeper={"session_timeout_ms": SESSION_MS},
        bridge={"inbound": [{"address": "external.ingress"}],
                "outbound": [{"address": "orders"}]},
        ingress={"default_route": {"to": "orders"}})
    return ebtest.merge(cfg, extra)


class Client:
    """One bridge connection that sends messages at RATE and retries each
    until it is acknowledged (single thread: send what is due, then read).
    Message i of this client has the body {tag: i}; with keyed, every
    attempt carries ebnode.msgid "k<i>"."""

    def __init__(self, bridge, tag, keyed):
        self.c = ebtest.BridgeClient(*bridge)
        self.tag = tag
        self.keyed = keyed
        self.sent = 0          # messages started
        self.attempts = 0
        self.open = {}         # i -> (attempt, deadline) awaiting an answer
        self.retry_at = {}     # i -> when to retry (after a failure)
        self.done = {}         # i -> the acknowledgement's body
        self.failures = {}     # failure code -> count
        self.t0 = None

    def _attempt(self, i):
        n = self.attempts
        self.attempts += 1
        headers = {"ebnode.msgid": "k%d" % i} if self.keyed else None
        self.c.send("external.ingress", {self.tag: i}, headers=headers,
                    reply_address="%s.%d.%d" % (self.tag, i, n))
        self.open[i] = (n, time.monotonic() + TIMEOUT_S)

    def step(self, sending):
        now = time.monotonic()
        if sending:
            if self.t0 is None:
                self.t0 = now
            due = int((now - self.t0) * RATE)
            while self.sent < due:
                self._attempt(self.sent)
                self.sent += 1
        for i, t in list(self.retry_at.items()):
            if t <= now:
                del self.retry_at[i]
                self._attempt(i)
        for i, (n, deadline) in list(self.open.items()):
            if deadline <= now:  # no answer in time: retry
                self.failures["timeout"] = self.failures.get("timeout", 0) + 1
                self._attempt(i)
        try:
            f = self.c.recv_frame(timeout=0.002)
        except TimeoutError:
            return
        _, i, n = f["address"].split(".")
        i, n = int(i), int(n)
        if i in self.done or self.open.get(i, (None,))[0] != n:
            return  # a late answer to an attempt already retried
        del self.open[i]
        if f["type"] == "message":
            self.done[i] = f["body"]
        else:
            code = f.get("failureCode")
            self.failures[code] = self.failures.get(code, 0) + 1
            self.retry_at[i] = time.monotonic() + BACKOFF_S

    def finished(self):
        return len(self.done) == self.sent

    def close(self):
        self.c.close()


def run_clients(clients, seconds, sending=True):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for cl in clients:
            cl.step(sending)


class SafeRetry(unittest.TestCase):
    results = []

    @classmethod
    def tearDownClass(cls):
        print("\nsafe retries (sent / attempts / acked / answered "
              "duplicate / delivered twice or more / lost):")
        for line in cls.results:
            print("  " + line)

    def scenario(self, name, fault, leader_change=True):
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
        self.addCleanup(lambda: c.running() and
                        c.send_signal(signal.SIGCONT))
        consumer = ebtest.RecordingConsumer(c, "orders")
        self.addCleanup(consumer.close)
        probe = ebtest.BridgeClient(*b.bridge)
        self.addCleanup(probe.close)

        def routed():
            probe.send("external.ingress", {"probe": True},
                       reply_address="probe")
            return probe.recv_frame(timeout=5).get("type") == "message"
        ebtest.wait_until(routed, 20, "ingress routed end to end")

        keyed = Client(b.bridge, "k", True)
        self.addCleanup(keyed.close)
        plain = Client(b.bridge, "u", False)
        self.addCleanup(plain.close)
        clients = [keyed, plain]
        run_clients(clients, 1.0)
        fault(a, b, c, lambda s: run_clients(clients, s))
        run_clients(clients, 3.0)
        # No new messages; retries go on until every one is acknowledged.
        deadline = time.monotonic() + ebtest.scaled(30)
        while (not all(cl.finished() for cl in clients)
               and time.monotonic() < deadline):
            run_clients(clients, 0.2, sending=False)

        def counts(tag):
            seen = {}
            stamps = set()
            for m in list(consumer.msgs):
                body = m.get("body")
                if isinstance(body, dict) and tag in body:
                    seen[body[tag]] = seen.get(body[tag], 0) + 1
                    stamps.add((int(m["headers"]["ebnode.epoch"]),
                                int(m["headers"]["ebnode.seq"])))
            return seen, stamps

        # The consumer reads in a thread: a bounded moment to catch up.
        ebtest.wait_until(lambda: all(
            set(cl.done) <= set(counts(cl.tag)[0]) for cl in clients),
            ebtest.scaled(10), "acknowledged messages at the consumer")
        out = {}
        for cl in clients:
            seen, stamps = counts(cl.tag)
            dup_answers = [d for d in cl.done.values()
                           if d.get("status") == "duplicate"]
            twice = sorted(i for i, n in seen.items() if n > 1)
            lost = sorted(set(cl.done) - set(seen))
            out[cl.tag] = (seen, stamps, dup_answers, twice, lost)
            self.results.append(
                "%-8s %-7s sent %5d  attempts %5d  acked %5d  duplicate "
                "%4d  twice %4d  lost %d  failures %s" % (
                    name, "keyed" if cl.keyed else "no key", cl.sent,
                    cl.attempts, len(cl.done), len(dup_answers), len(twice),
                    len(lost), dict(sorted(cl.failures.items(),
                                           key=lambda kv: str(kv[0])))))
            print(self.results[-1])
        seen, stamps, dup_answers, twice, lost = out["k"]
        self.assertTrue(keyed.finished(), "keyed messages never "
                        "acknowledged: %d" % (keyed.sent - len(keyed.done)))
        self.assertEqual(twice, [], "keyed messages delivered twice "
                         "(first 10): %s" % twice[:10])
        self.assertEqual(lost, [], "keyed messages acknowledged, not "
                         "delivered (first 10): %s" % lost[:10])
        self.assertEqual(set(seen), set(range(keyed.sent)))
        # A duplicate answer names a delivery that happened.
        for d in dup_answers:
            self.assertIn((d["original_epoch"], d["original_seq"]), stamps,
                          d)
        # The fault was real: the client had to retry, or the leader
        # changed under the load (the entry node's gateway retries a
        # forward to a dead leader itself, once, through the new one).
        if leader_change:
            self.assertGreaterEqual(
                len({d["epoch"] for d in keyed.done.values()}), 2,
                "the leader change is not visible in the acks")
        else:
            self.assertGreater(keyed.attempts, keyed.sent, "nothing retried")
            # The consumer's node counted what it did not deliver again
            # and remembers one key per keyed message.
            st, text = ebtest.admin_request(*c.admin, "GET", "/metrics")
            self.assertEqual(st, 200)
            metric = {}
            for line in text.splitlines():
                if line.startswith("ebnode_ingress_dedup") or \
                        line.startswith("ebnode_ingress_duplicates"):
                    k, v = line.split()
                    metric[k] = int(float(v))
            print("c metrics:", metric)
            self.assertGreaterEqual(
                metric["ebnode_ingress_duplicates_total"], len(dup_answers))
            self.assertGreater(metric["ebnode_ingress_duplicates_total"], 0)
            self.assertEqual(metric["ebnode_ingress_dedup_keys"], keyed.sent)
            self.assertEqual(metric["ebnode_ingress_dedup_evicted_total"], 0)
        self.assertEqual(len(out["u"][4]), 0, "unkeyed messages lost")

    def test_consumer_node_paused(self):
        def fault(a, b, c, run):
            c.send_signal(signal.SIGSTOP)
            run(PAUSE_S)
            c.send_signal(signal.SIGCONT)
        self.scenario("paused", fault, leader_change=False)

    def test_leader_sigterm(self):
        def fault(a, b, c, run):
            a.send_signal(signal.SIGTERM)
            run(3.0)
        self.scenario("sigterm", fault)

    def test_leader_release(self):
        def fault(a, b, c, run):
            st, body = ebtest.admin_request(*a.admin, "POST",
                                            "/leader/release")
            self.assertIn(st, (200, 202, 204), body)
            run(3.0)
        self.scenario("release", fault)

    def test_leader_sigkill(self):
        def fault(a, b, c, run):
            a.send_signal(signal.SIGKILL)
            run(4.0)
        self.scenario("sigkill", fault)


if __name__ == "__main__":
    unittest.main(verbosity=2)
