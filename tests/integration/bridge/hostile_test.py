"""Hostile clients against a real ebnode on default bounds (issue 11):
slowloris on the bridge and on the admin endpoint, clients that park
partial frames, and clients that open consumers or requests without end.
Numbers (latency, peak RSS) are printed to stderr as "hostile: ..."."""

import os
import re
import socket
import struct
import sys
import threading
import time
import unittest

import bt
import ebtest
from robustness_test import raise_nofile

MiB = 1024 * 1024


def report(msg):
    sys.stderr.write("hostile: %s\n" % msg)
    sys.stderr.flush()


def metric(node, name, labels=""):
    """The value of one /metrics sample (labels: the exact {...} text)."""
    host, port = node.admin
    status, text = ebtest.admin_request(host, port, "GET", "/metrics")
    assert status == 200, status
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)),
                  text, re.M)
    assert m is not None, "no sample %s%s" % (name, labels)
    return float(m.group(1))


def closed_by_peer(s, timeout):
    """True when the peer closes s (EOF or reset) within timeout."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def asan():
    return "asan" in os.environ.get("EBNODE_BIN", "") or \
        os.environ.get("EB_SANITIZE", "") != ""


class Slowloris(unittest.TestCase):
    """Default bridge bounds: max_connections 1024, first frame 10 s."""

    @classmethod
    def setUpClass(cls):
        raise_nofile(8192)
        cls.node = bt.start_node("slowloris", bridge={
            "inbound": [{}], "outbound": [{}]})

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_new_client_served_while_1023_slowloris_held(self):
        host, port = self.node.bridge
        held = []
        try:
            for _ in range(1024):  # the limit itself: every slot taken
                s = socket.create_connection((host, port), timeout=10)
                s.sendall(b"\x00\x00")  # half a length header
                held.append(s)
            ebtest.wait_until(
                lambda: metric(self.node, "ebnode_bridge_connections")
                >= 1024, timeout=20, what="1024 connections accepted")
            t0 = time.monotonic()
            c = bt.connect(self.node)
            c.ping()
            c.expect_exact(self, {"type": "pong"}, timeout=1)
            served = time.monotonic() - t0
            c.close()
            report("1024 slowloris held (limit 1024): new client served "
                   "in %.3f s" % served)
            self.assertLess(served, 1.0)
            self.assertGreaterEqual(
                metric(self.node, "ebnode_bridge_connections_evicted_total"),
                1)
            # The held ones are closed by the first-frame deadline (10 s
            # by default, swept every 1 s), not held forever.
            t0 = time.monotonic()
            deadline = t0 + ebtest.scaled(15)
            for s in held[-50:]:
                self.assertTrue(closed_by_peer(
                    s, max(0.1, deadline - time.monotonic())))
            report("slowloris connections closed by the first-frame "
                   "deadline after %.1f s more" % (time.monotonic() - t0))
        finally:
            for s in held:
                s.close()


class Deadlines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node("deadlines", bridge={
            "inbound": [{}], "outbound": [{}], "frame_timeout_ms": 1000,
            "first_frame_timeout_ms": 1000})

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_started_frame_must_complete(self):
        c = bt.connect(self.node)
        c.ping()
        c.expect_exact(self, {"type": "pong"})
        # One byte every 200 ms: each byte would restart an idle timer,
        # but the frame deadline runs from the frame's first byte.
        t0 = time.monotonic()
        closed = False
        for b in struct.pack(">I", 100) + b"{" * 20:
            try:
                c.send_raw(bytes([b]))
            except OSError:
                closed = True
                break
            if closed_by_peer(c.sock, 0.2):
                closed = True
                break
        self.assertTrue(closed, "a trickled frame was never cut")
        took = time.monotonic() - t0
        report("trickled frame closed after %.2f s (frame_timeout_ms "
               "1000)" % took)
        self.assertLess(took, ebtest.scaled(3))

    def test_silent_connection_closed(self):
        s = socket.create_connection(self.node.bridge)
        t0 = time.monotonic()
        self.assertTrue(closed_by_peer(s, ebtest.scaled(4)))
        self.assertGreater(time.monotonic() - t0, 0.9)
        s.close()


class TlsHandshakeDeadline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not bt.CERTS:
            raise unittest.SkipTest("EB_CERTS_DIR not set")
        cls.node = bt.start_node("tlsdeadline", bridge=ebtest.merge(
            bt.tls_bridge(inbound=[{}], outbound=[{}],
                          first_frame_timeout_ms=0),
            {"tls": {"handshake_timeout_ms": 1000}}))

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_silent_tls_handshake_closed(self):
        # A TCP connection that never starts its TLS handshake.
        s = socket.create_connection(self.node.bridge)
        t0 = time.monotonic()
        self.assertTrue(closed_by_peer(s, ebtest.scaled(4)))
        took = time.monotonic() - t0
        s.close()
        report("silent TLS handshake closed after %.2f s "
               "(handshake_timeout_ms 1000)" % took)
        self.assertGreater(took, 0.9)


class MemoryBudget(unittest.TestCase):
    """Default budget (32 MiB) and default max_frame_bytes (1 MiB)."""

    @classmethod
    def setUpClass(cls):
        raise_nofile(4096)
        cls.node = bt.start_node("budget", bridge={
            "inbound": [{}], "outbound": [{}]})

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_200_parked_1mib_frames(self):
        pid = self.node.pid
        before = bt.vmhwm_kb(pid)
        chunk = b"x" * (MiB - 1)
        held = []
        lock = threading.Lock()

        def park():
            try:
                s = socket.create_connection(self.node.bridge, timeout=20)
                s.sendall(struct.pack(">I", MiB) + chunk)
            except OSError:
                return  # closed over the budget while sending
            with lock:
                held.append(s)

        threads = [threading.Thread(target=park) for _ in range(200)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(ebtest.scaled(60))
        try:
            ebtest.wait_until(
                lambda: metric(self.node,
                               "ebnode_bridge_connections_closed_total",
                               '{reason="memory"}') > 0,
                timeout=20, what="closes over the input budget")
            after = bt.vmhwm_kb(pid)
            closed = metric(self.node,
                            "ebnode_bridge_connections_closed_total",
                            '{reason="memory"}')
            buffered = metric(self.node, "ebnode_bridge_input_bytes")
            report("200 x 1 MiB partial frames: VmHWM before=%d KiB "
                   "after=%d KiB, closed over budget=%d, input now=%d"
                   % (before, after, closed, buffered))
            self.assertLessEqual(buffered, 32 * MiB)
            if asan():
                report("ASan build: peak RSS bound (64 MB) not asserted "
                       "(shadow memory and redzones)")
            else:
                self.assertLessEqual(after * 1024, 64 * 1000 * 1000)
            c = bt.connect(self.node)
            c.ping()
            c.expect_exact(self, {"type": "pong"})
            c.close()
        finally:
            for s in held:
                s.close()


class Caps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node("caps", bridge={
            "inbound": [{}], "outbound": [{}], "max_consumers_per_conn": 5,
            "max_requests_per_conn": 10, "max_requests": 15,
            "max_request_timeout_ms": 500})

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_consumer_cap(self):
        c = bt.connect(self.node)
        for i in range(5):
            c.register("a%d" % i)
        c.sync()
        c.register("a5")
        c.expect_exact(self, {"type": "err",
                              "message": "too_many_consumers"})
        c.register("a0")  # idempotent: no new consumer, no err
        c.sync()
        c.close()

    def test_node_wide_request_cap(self):
        sink = bt.connect(self.node)
        sink.register("sink2")
        sink.sync()
        a, b = bt.connect(self.node), bt.connect(self.node)
        for i in range(10):
            a.send("sink2", {}, reply_address="a%d" % i,
                   headers={"timeout": 500})
        a.sync()
        for i in range(6):
            b.send("sink2", {}, reply_address="b%d" % i,
                   headers={"timeout": 500})
        f = b.recv_frame(2)
        self.assertEqual((f["type"], f["address"]), ("err", "b5"))
        self.assertIn("node's bridge", f["message"])
        # All 15 time out (500 ms): the slots are free again.
        for c, n in ((a, 10), (b, 5)):
            for _ in range(n):
                self.assertEqual(c.recv_frame(ebtest.scaled(3))
                                 .get("failureType"), "TIMEOUT")
        self.assertEqual(metric(self.node,
                                "ebnode_bridge_requests_in_flight"), 0)
        for c in (sink, a, b):
            c.close()

    def test_request_cap_and_timeout_clamp(self):
        sink, c = bt.connect(self.node), bt.connect(self.node)
        sink.register("sink")  # receives, never answers
        sink.sync()
        for i in range(10):
            c.send("sink", {"i": i}, reply_address="r%d" % i,
                   headers={"timeout": 9200000000000000000})
        c.send("sink", {"i": 10}, reply_address="r10")
        f = c.recv_frame(2)
        self.assertEqual(f["type"], "err")
        self.assertEqual(f["address"], "r10")
        self.assertIn("too_many_requests", f["message"])
        # The huge client timeout was clamped to 500 ms.
        t0 = time.monotonic()
        got = set()
        while len(got) < 10:
            f = c.recv_frame(ebtest.scaled(3))
            self.assertEqual(f.get("failureType"), "TIMEOUT", f)
            got.add(f["address"])
        report("timeout 9.2e18 ms clamped: 10 TIMEOUT failures within "
               "%.2f s" % (time.monotonic() - t0))
        # Slots are free again.
        c.send("sink", {}, reply_address="again")
        self.assertEqual(sink.recv_until(
            lambda f: f.get("body") == {}, 3)["address"], "sink")
        sink.close()
        c.close()


class Unanswered(unittest.TestCase):
    """200 000 requests to a consumer that never answers, default caps."""

    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node("unanswered", bridge={
            "inbound": [{}], "outbound": [{}]})

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_200000_unanswered_requests_bounded(self):
        N = 200000
        sink, c = bt.connect(self.node), bt.connect(self.node)
        sink.register("sink")
        sink.sync()
        pid = self.node.pid
        before = bt.vmhwm_kb(pid)
        failures = [0]
        cv = threading.Condition()

        def reader():
            try:
                while failures[0] < N - 1024:
                    f = c.recv_frame(ebtest.scaled(30))
                    if f.get("type") == "err" and \
                            "too_many_requests" in f.get("message", ""):
                        with cv:
                            failures[0] += 1
                            cv.notify_all()
            finally:
                with cv:
                    failures.append("done")
                    cv.notify_all()

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        frame = c.encode({"type": "send", "address": "sink",
                          "replyAddress": "r", "body": 1})
        batch = frame * 1000
        sent = 0
        for _ in range(N // 1000):
            c.send_raw(batch)
            sent += 1000
            # Read the failures as they come (a client that does not
            # read would be closed as a slow consumer, by design).
            with cv:
                self.assertTrue(cv.wait_for(
                    lambda: len(failures) > 1 or
                    failures[0] >= sent - 1024 - 4000,
                    ebtest.scaled(30)))
        with cv:
            self.assertTrue(cv.wait_for(lambda: len(failures) > 1,
                                        ebtest.scaled(60)))
        after = bt.vmhwm_kb(pid)
        report("200000 unanswered requests (cap 1024): %d refused with "
               "too_many_requests, VmHWM before=%d KiB after=%d KiB"
               % (failures[0], before, after))
        self.assertEqual(failures[0], N - 1024)
        if not asan():
            self.assertLess(after - before, 32 * 1024)
        sink.close()
        c.close()


class BusCap(unittest.TestCase):
    """200 000 requests to a consumer that never answers, the bridge's own
    caps off: the bus's node-wide cap (bus.max_pending_requests 20 000)
    refuses the rest with its documented failure, counted in /metrics."""

    CAP = 20000

    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node("buscap", bridge={
            "inbound": [{}], "outbound": [{}],
            "max_requests_per_conn": 0, "max_requests": 0},
            bus={"max_pending_requests": cls.CAP})

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_200000_unanswered_requests_bus_cap(self):
        N = 200000
        text = ("too_many_requests: %d requests already pending on this "
                "node" % self.CAP)
        sink, c = bt.connect(self.node), bt.connect(self.node)
        sink.register("sink")
        sink.sync()
        pid = self.node.pid
        before = bt.vmhwm_kb(pid)
        failures = [0]
        other = []
        cv = threading.Condition()

        def reader():
            try:
                while failures[0] < N - self.CAP:
                    f = c.recv_frame(ebtest.scaled(30))
                    with cv:
                        if f.get("type") == "err" and \
                                f.get("failureType") == "ERROR" and \
                                f.get("message") == text:
                            failures[0] += 1
                        else:
                            other.append(f)
                        cv.notify_all()
            finally:
                with cv:
                    failures.append("done")
                    cv.notify_all()

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        frame = c.encode({"type": "send", "address": "sink",
                          "replyAddress": "r", "body": 1})
        batch = frame * 1000
        sent = 0
        t0 = time.monotonic()
        for _ in range(N // 1000):
            c.send_raw(batch)
            sent += 1000
            # Read the failures as they come (a client that does not
            # read would be closed as a slow consumer, by design).
            with cv:
                self.assertTrue(cv.wait_for(
                    lambda: len(failures) > 1 or
                    failures[0] >= sent - self.CAP - 4000,
                    ebtest.scaled(30)))
        with cv:
            self.assertTrue(cv.wait_for(lambda: len(failures) > 1,
                                        ebtest.scaled(60)))
        took = time.monotonic() - t0
        after = bt.vmhwm_kb(pid)
        refused = metric(self.node, "ebnode_bus_requests_refused_total")
        pending = metric(self.node, "ebnode_bus_pending_requests")
        report("200000 unanswered requests (bus cap %d, bridge caps off): "
               "%d refused with the bus failure in %.1f s, metrics "
               "refused=%d pending=%d, VmHWM before=%d KiB after=%d KiB"
               % (self.CAP, failures[0], took, refused, pending, before,
                  after))
        self.assertEqual(other, [])
        self.assertEqual(failures[0], N - self.CAP)
        self.assertEqual(refused, N - self.CAP)
        self.assertEqual(pending, self.CAP)
        if not asan():
            self.assertLess(after - before, 32 * 1024)
        sink.close()
        c.close()


class SlowAdmin(unittest.TestCase):
    """64 admin connections sending one byte every 3 s (default deadline
    10 s, default 64 slots)."""

    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node("slowadmin")

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_health_answers_while_64_slow_admin_conns(self):
        host, port = self.node.admin
        req = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X: " + b"y" * 100
        slow = [socket.create_connection((host, port)) for _ in range(64)]
        stop = threading.Event()

        def trickle():
            i = 0
            while not stop.is_set() and i < len(req):
                for s in slow:
                    try:
                        s.send(req[i:i + 1])
                    except OSError:
                        pass
                i += 1
                stop.wait(3)

        th = threading.Thread(target=trickle, daemon=True)
        th.start()
        try:
            time.sleep(0.5)  # the 64 are accepted and trickling
            t0 = time.monotonic()
            status, body = ebtest.admin_request(host, port, "GET",
                                                "/health", timeout=2)
            took = time.monotonic() - t0
            report("/health with 64 slow admin connections held: HTTP %d "
                   "in %.3f s" % (status, took))
            self.assertIn(status, (200, 503))
            self.assertIsInstance(body, dict)
            self.assertIn("status", body)
            self.assertLess(took, 1.0)
            # The slow ones are cut by the request deadline (10 s from
            # their start), although each sent a byte every 3 s.
            t0 = time.monotonic()
            alive = slow[1:]  # slow[0] may have been evicted already
            for s in alive:
                self.assertTrue(closed_by_peer(
                    s, max(0.1, t0 + ebtest.scaled(14) -
                           time.monotonic())))
            report("slow admin connections closed %.1f s later"
                   % (time.monotonic() - t0))
        finally:
            stop.set()
            for s in slow:
                s.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
