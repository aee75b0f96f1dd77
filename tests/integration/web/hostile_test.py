#!/usr/bin/env python3
"""Hostile clients against the web front (issue 22), real sockets and a
real ebnode on default bounds unless stated:

- WebSocket ping flood, raw and SockJS paths: a client sends pings with
  125-byte payloads and never reads; the pongs count against
  bridge.write_queue_bytes like any output, so the flooder is closed as a
  slow consumer and the node's peak RSS stays under 64 MB.
- 150 unfinished ~1 MiB fragmented messages (a text frame with FIN=0):
  counted in bridge.input_budget_bytes (32 MiB), the biggest holders
  closed beyond it; peak RSS under 96 MB, the budget back to ~0 when they
  leave.
- 100 unfinished 2 MiB xhr_send bodies, each after one xhr poll on its
  socket: the same budget; peak RSS under 96 MB.
- deadlines from the first byte (bridge.frame_timeout_ms 1000 here): a
  request head trickled after an xhr poll, a fragmented message trickled
  one continuation frame at a time.
- an xhr session flood does not lock a new xhr client out.

After each attack a fresh bridge client is answered within 1 s. Figures
are printed to stderr as "web-hostile: ...".
"""
import os
import re
import socket
import struct
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "bridge"))

import bt  # noqa: E402
import ebtest  # noqa: E402
from robustness_test import raise_nofile  # noqa: E402
from web_test import WS, web_node  # noqa: E402

MiB = 1024 * 1024
MB = 1000 * 1000


def report(msg):
    sys.stderr.write("web-hostile: %s\n" % msg)
    sys.stderr.flush()


def asan():
    return "asan" in os.environ.get("EBNODE_BIN", "") or \
        os.environ.get("EB_SANITIZE", "") != ""


def metric(node, name, labels=""):
    status, text = ebtest.admin_request(*node.admin, "GET", "/metrics")
    assert status == 200, status
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)),
                  text, re.M)
    return float(m.group(1)) if m is not None else 0.0


def closed(node, reason):
    return metric(node, "ebnode_bridge_connections_closed_total",
                  '{reason="%s"}' % reason)


def masked(opcode, payload, fin=True):
    """A client frame with an all-zero mask (the payload goes as is)."""
    n = len(payload)
    b0 = (0x80 if fin else 0) | opcode
    if n < 126:
        hdr = struct.pack("!BB", b0, 0x80 | n)
    elif n < 65536:
        hdr = struct.pack("!BBH", b0, 0x80 | 126, n)
    else:
        hdr = struct.pack("!BBQ", b0, 0x80 | 127, n)
    return hdr + b"\0\0\0\0" + payload


def peer_closed(s, timeout):
    """True when the peer closes s (EOF or reset) within timeout; what it
    sent before is read and dropped."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        s.settimeout(left)
        try:
            if s.recv(65536) == b"":
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False


def fresh_client_answered(tc, node):
    """A new bridge client is answered (ping -> pong) within 1 s."""
    t0 = time.monotonic()
    c = bt.connect(node)
    try:
        c.ping()
        c.expect_exact(tc, {"type": "pong"}, timeout=1)
    finally:
        c.close()
    took = time.monotonic() - t0
    tc.assertLess(took, 1.0)
    return took


def assert_rss(tc, kb, bound):
    if asan():
        report("ASan build: peak RSS bound not asserted (shadow memory)")
    else:
        tc.assertLessEqual(kb * 1024, bound)


def xhr_poll(s, sid):
    """One xhr poll on socket s (keep-alive); returns its answer text
    (chunked, or with a Content-Length: a 503)."""
    s.sendall(("POST /eventbus/000/%s/xhr HTTP/1.1\r\nHost: x\r\n"
               "Content-Length: 0\r\n\r\n" % sid).encode())
    data = b""
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            m = re.search(rb"(?i)content-length: *(\d+)", head)
            if m is not None and len(rest) >= int(m.group(1)):
                break
            if m is None and rest.endswith(b"0\r\n\r\n"):
                break
        d = s.recv(65536)
        if not d:
            raise EOFError("closed during the poll")
        data += d
    return data.decode("latin-1")


def tcp_queues(port):
    """(bytes the node has not read from its sockets on port, bytes the
    clients have not had taken) from /proc/net/tcp (IPv4)."""
    rx = tx = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            v = line.split()
            lport = int(v[1].split(":")[1], 16)
            rport = int(v[2].split(":")[1], 16)
            t, r = (int(x, 16) for x in v[4].split(":"))
            if lport == port and v[3] == "01":  # ESTABLISHED
                rx += r
            elif rport == port and v[3] == "01":
                tx += t
    return rx, tx


def wait_node_read_all(port):
    """Waits (bounded) until the node has read everything the clients on
    port sent: nothing in its sockets' receive queues, nothing unsent."""
    ebtest.wait_until(lambda: tcp_queues(port) == (0, 0),
                      timeout=ebtest.scaled(20), what="the node read all")


class PingFlood(unittest.TestCase):
    """One node per path, so that each peak RSS is that attack's alone."""

    PINGS = 1000000  # 131 MB of pings at most (issue 22: 3 M -> 374 MB)

    def flood(self, path):
        node = web_node("pingflood", bridge={"inbound": [{}]})
        try:
            pid = node.pid
            before = bt.vmhwm_kb(pid)
            ws = WS(node.web_port, path)
            self.assertEqual(ws.status, 101)
            ws.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            chunk = masked(0x9, b"p" * 125) * 500
            sent = 0
            was_closed = False
            t0 = time.monotonic()
            ws.s.settimeout(ebtest.scaled(10))
            while sent < self.PINGS:
                try:
                    ws.s.sendall(chunk)
                except (ConnectionResetError, BrokenPipeError):
                    was_closed = True
                    break
                except socket.timeout:
                    break
                sent += 500
            took = time.monotonic() - t0
            if not was_closed:
                was_closed = peer_closed(ws.s, ebtest.scaled(5))
            after = bt.vmhwm_kb(pid)
            slow = closed(node, "slow_consumer")
            report("ping flood %s: %d pings (%.1f MB) sent in %.2f s, "
                   "closed=%s slow_consumer=%d, VmHWM before=%d KiB "
                   "after=%d KiB" % (path, sent, sent * 131 / MB, took,
                                     was_closed, slow, before, after))
            ws.close()
            assert_rss(self, after, 64 * MB)
            self.assertTrue(was_closed, "the flooder was never closed")
            self.assertGreaterEqual(slow, 1)
            report("fresh bridge client answered in %.3f s"
                   % fresh_client_answered(self, node))
        finally:
            node.stop()

    def test_raw_websocket(self):
        self.flood("/eventbus/websocket")

    def test_sockjs_websocket(self):
        self.flood("/eventbus/000/flood/websocket")


class UnfinishedMessages(unittest.TestCase):
    """Default budget (32 MiB), max_frame_bytes (1 MiB); a node per test,
    so that each peak RSS is that attack's alone."""

    def setUp(self):
        raise_nofile(4096)
        self.node = web_node("unfinished", bridge={"inbound": [{}]})

    def tearDown(self):
        self.node.stop()

    def test_150_unfinished_fragmented_messages(self):
        node = self.node
        pid = node.pid
        before = bt.vmhwm_kb(pid)
        frame = masked(0x1, b"a" * (MiB - 4096), fin=False)
        held = []
        lock = threading.Lock()

        def park():
            try:
                ws = WS(node.web_port, "/eventbus/websocket")
                ws.s.settimeout(ebtest.scaled(30))
                ws.s.sendall(frame)
            except (OSError, EOFError):
                return  # closed over the budget while sending
            with lock:
                held.append(ws)

        threads = [threading.Thread(target=park) for _ in range(150)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(ebtest.scaled(60))
        wait_node_read_all(node.web_port)
        took = time.monotonic() - t0
        try:
            after = bt.vmhwm_kb(pid)
            report("150 x ~1 MiB unfinished fragmented messages in %.2f s: "
                   "VmHWM before=%d KiB after=%d KiB, input_bytes=%d, "
                   "closed over budget=%d" % (
                       took, before, after,
                       metric(node, "ebnode_bridge_input_bytes"),
                       closed(node, "memory")))
            assert_rss(self, after, 96 * MB)
            self.assertGreater(closed(node, "memory"), 0)
            self.assertLessEqual(
                metric(node, "ebnode_bridge_input_bytes"), 32 * MiB)
        finally:
            for ws in held:
                ws.close()
        # Released when they leave: nothing counted any more.
        ebtest.wait_until(
            lambda: metric(node, "ebnode_bridge_input_bytes") < MiB,
            timeout=ebtest.scaled(10), what="input budget released")
        report("after they left: input_bytes=%d VmRSS=%d KiB; fresh client "
               "answered in %.3f s" % (
                   metric(node, "ebnode_bridge_input_bytes"),
                   bt.vmrss_kb(pid), fresh_client_answered(self, node)))

    def test_100_unfinished_xhr_send_bodies(self):
        node = self.node
        pid = node.pid
        before = bt.vmhwm_kb(pid)
        body = b"x" * (2 * MiB - 1024)
        held = []
        lock = threading.Lock()

        def park(i):
            try:
                s = socket.create_connection(("127.0.0.1", node.web_port),
                                             timeout=ebtest.scaled(30))
                self.assertIn("o\n", xhr_poll(s, "body%d" % i))
                s.sendall(("POST /eventbus/000/body%d/xhr_send HTTP/1.1\r\n"
                           "Host: x\r\nContent-Length: %d\r\n\r\n"
                           % (i, 2 * MiB)).encode() + body)
            except (OSError, EOFError):
                return  # closed over the budget while sending
            with lock:
                held.append(s)

        threads = [threading.Thread(target=park, args=(i,))
                   for i in range(100)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(ebtest.scaled(60))
        wait_node_read_all(node.web_port)
        took = time.monotonic() - t0
        try:
            after = bt.vmhwm_kb(pid)
            report("100 x 2 MiB unfinished xhr_send bodies in %.2f s: "
                   "VmHWM before=%d KiB after=%d KiB, input_bytes=%d"
                   % (took, before, after,
                      metric(node, "ebnode_bridge_input_bytes")))
            assert_rss(self, after, 96 * MB)
            self.assertLessEqual(
                metric(node, "ebnode_bridge_input_bytes"), 32 * MiB)
        finally:
            for s in held:
                s.close()
        ebtest.wait_until(
            lambda: metric(node, "ebnode_bridge_input_bytes") < MiB,
            timeout=ebtest.scaled(10), what="input budget released")
        report("fresh client answered in %.3f s"
               % fresh_client_answered(self, node))


class Deadlines(unittest.TestCase):
    """bridge.frame_timeout_ms 1000: from the first byte, not per byte."""

    @classmethod
    def setUpClass(cls):
        cls.node = web_node("webdeadlines", bridge={
            "inbound": [{}], "frame_timeout_ms": 1000})

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def trickle(self, s, data, every=0.2):
        """Sends data a byte at a time; seconds until the peer closed, or
        None when all of it went."""
        t0 = time.monotonic()
        for b in data:
            try:
                s.sendall(bytes([b]))
            except (ConnectionResetError, BrokenPipeError):
                return time.monotonic() - t0
            if peer_closed(s, every):
                return time.monotonic() - t0
        return None

    def test_slow_head_after_xhr_poll(self):
        s = socket.create_connection(("127.0.0.1", self.node.web_port),
                                     timeout=5)
        self.assertIn("o\n", xhr_poll(s, "slowhead"))
        head = b"POST /eventbus/000/slowhead/xhr HTTP/1.1\r\nX-A: " + \
            b"a" * 40
        took = self.trickle(s, head)
        s.close()
        report("request head trickled after an xhr poll: closed after %s s"
               % ("never" if took is None else "%.2f" % took))
        self.assertIsNotNone(took, "a trickled request head was never cut")
        self.assertLess(took, ebtest.scaled(3))
        fresh_client_answered(self, self.node)

    def test_slow_fragmented_message(self):
        ws = WS(self.node.web_port, "/eventbus/websocket")
        ws.s.sendall(masked(0x1, b"{", fin=False))
        t0 = time.monotonic()
        gone = None
        for _ in range(20):  # one continuation frame every 200 ms
            try:
                ws.s.sendall(masked(0x0, b" ", fin=False))
            except (ConnectionResetError, BrokenPipeError):
                gone = time.monotonic() - t0
                break
            if peer_closed(ws.s, 0.2):
                gone = time.monotonic() - t0
                break
        ws.close()
        report("fragmented message trickled: closed after %s s"
               % ("never" if gone is None else "%.2f" % gone))
        self.assertIsNotNone(gone, "a trickled message was never cut")
        self.assertLess(gone, ebtest.scaled(3))
        fresh_client_answered(self, self.node)


class XhrFlood(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = web_node("xhrflood", bridge={"max_connections": 64})

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def test_session_flood_does_not_lock_out(self):
        s = socket.create_connection(("127.0.0.1", self.node.web_port),
                                     timeout=5)
        for i in range(200):  # one socket, a new session id each time
            xhr_poll(s, "flood%d" % i)
        s.close()
        t0 = time.monotonic()
        c = socket.create_connection(("127.0.0.1", self.node.web_port),
                                     timeout=5)
        answer = xhr_poll(c, "newcomer")
        took = time.monotonic() - t0
        c.close()
        report("200 xhr sessions flooded (max_connections 64): a new xhr "
               "client got %r in %.3f s, evicted=%d" % (
                   answer.split("\r\n")[0], took,
                   metric(self.node, "ebnode_web_xhr_evicted_total")))
        self.assertIn("200 OK", answer)
        self.assertIn("o\n", answer)
        self.assertLess(took, 1.0)
        fresh_client_answered(self, self.node)


if __name__ == "__main__":
    unittest.main(verbosity=2)
