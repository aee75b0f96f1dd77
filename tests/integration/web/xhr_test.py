#!/usr/bin/env python3
"""The SockJS xhr transports of the browser bridge (web/xhr.c) against a
real ebnode, with http.client (stdlib only):

- xhr_streaming: the 2 KiB 'h' prelude, "o", a[...] frames for messages
  sent with xhr_send (204), heartbeats "h"; the answer ends after 128 KiB
  and the client goes on with the same session (nothing lost, no second
  "o"); a second receiving request on a session gets
  c[2010,"Another connection still open"].
- xhr (polling): one frame per answer.
- xhr_send: unknown session 404, empty body and broken JSON 500, a body
  over the SockJS message bound 413; the bridge's rules (access_denied).
- bounds: a session without a receiving request closes after the 5 s
  disconnect delay (the same id then opens a new session); sessions count
  against bridge.max_connections (at the limit a new session evicts the
  one without a receiving request the longest); a session whose client
  does not read is closed by bridge.write_queue_max_bytes.
"""
import http.client
import json
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "bridge"))

import bt  # noqa: E402
import ebtest  # noqa: E402


def web_node(name, bridge=None, web=None):
    port = ebtest.free_port()
    b = {"inbound": [{"addressRegex": "web\\..+"}],
         "outbound": [{"addressRegex": "web\\..+"}]}
    b.update(bridge or {})
    w = {"enabled": True, "listen": "127.0.0.1", "port": port}
    w.update(web or {})
    n = bt.start_node(name, bridge=b, web=w)
    n.web_port = port
    return n


class Stream:
    """One receiving request (xhr_streaming or xhr), read line by line."""

    def __init__(self, port, sid, kind="xhr_streaming"):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.c.request("POST", "/eventbus/000/%s/%s" % (sid, kind), body=b"",
                       headers={"Origin": "http://page.example"})
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.headers = self.r

    def line(self):
        d = self.r.readline()
        if not d:
            raise EOFError("answer ended")
        return d.decode()

    def frame(self):
        """(kind, messages) of the next frame but heartbeats."""
        while True:
            t = self.line().rstrip("\n")
            if t == "h":
                continue
            if t.startswith("a"):
                return "a", [json.loads(m) for m in json.loads(t[1:])]
            return t[0], (json.loads(t[1:]) if len(t) > 1 else None)

    def close(self):
        self.c.close()


def xhr_send(port, sid, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    if not isinstance(body, (bytes, str)):
        body = json.dumps([json.dumps(m) for m in body])
    c.request("POST", "/eventbus/000/%s/xhr_send" % sid, body=body,
              headers={"Content-Type": "text/plain;charset=UTF-8"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


class Xhr(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = web_node("webxhr", web={"heartbeat_ms": 300},
                            bridge={"max_frame_bytes": 65536,
                                    "max_connections": 12,
                                    "write_queue_bytes": 262144})
        cls.port = cls.node.web_port

    @classmethod
    def tearDownClass(cls):
        code = cls.node.stop()
        if code != 0:
            raise AssertionError("ebnode exited with %r" % code)

    def metric(self, name):
        st, text = ebtest.admin_request(*self.node.admin, "GET", "/metrics")
        self.assertEqual(st, 200)
        for ln in text.splitlines():
            if ln.startswith(name + " "):
                return float(ln.split()[1])
        return None

    def test_streaming_session(self):
        s = Stream(self.port, "st1")
        self.assertEqual(s.status, 200)
        self.assertEqual(s.headers.getheader("access-control-allow-origin"),
                         "http://page.example")
        self.assertEqual(s.line(), "h" * 2048 + "\n")
        self.assertEqual(s.line(), "o\n")
        st, _ = xhr_send(self.port, "st1", [
            {"type": "register", "address": "web.st1"},
            {"type": "ping"},
            {"type": "publish", "address": "web.st1", "body": {"k": "é"}}])
        self.assertEqual(st, 204)
        kind, msgs = s.frame()
        self.assertEqual(kind, "a")
        self.assertEqual(msgs[0]["body"], {"k": "é"})
        # the bridge's rules: access_denied worded as the SockJS bridge
        self.assertEqual(xhr_send(self.port, "st1", [
            {"type": "send", "address": "secret"}])[0], 204)
        kind, msgs = s.frame()
        self.assertEqual((msgs[0]["type"], msgs[0]["body"]),
                         ("err", "access_denied"))
        # a second receiving request on the session
        s2 = Stream(self.port, "st1")
        self.assertEqual(s2.line(), "h" * 2048 + "\n")
        self.assertEqual(s2.frame(),
                         ("c", [2010, "Another connection still open"]))
        with self.assertRaises(EOFError):
            s2.line()
        s2.close()
        # heartbeats after 300 ms of silence
        t0 = time.monotonic()
        self.assertEqual(s.line(), "h\n")
        self.assertLess(time.monotonic() - t0, ebtest.scaled(3))
        self.assertGreaterEqual(self.metric("ebnode_web_xhr_sessions"), 1)
        s.close()

    def test_response_limit_and_reconnect(self):
        s = Stream(self.port, "lim1")
        self.assertEqual(s.line(), "h" * 2048 + "\n")
        self.assertEqual(s.line(), "o\n")
        self.assertEqual(xhr_send(self.port, "lim1", [
            {"type": "register", "address": "web.lim"}])[0], 204)
        body = "x" * 1000
        n = 300  # ~300 KiB: the answer ends after 128 KiB
        got = 0
        ended = False
        for i in range(n):
            self.assertEqual(xhr_send(self.port, "lim1", [
                {"type": "publish", "address": "web.lim",
                 "body": [i, body]}])[0], 204)
            if ended:
                continue
            try:
                kind, msgs = s.frame()
            except EOFError:
                ended = True
                continue
            for m in msgs:
                self.assertEqual(m["body"][0], got)
                got += 1
        self.assertTrue(ended, "the answer ends after 128 KiB")
        s.close()
        # the same session continues: no "o", nothing lost
        while got < n:
            s = Stream(self.port, "lim1")
            self.assertEqual(s.line(), "h" * 2048 + "\n")
            try:
                while got < n:
                    kind, msgs = s.frame()
                    self.assertEqual(kind, "a")
                    for m in msgs:
                        self.assertEqual(m["body"][0], got)
                        got += 1
            except EOFError:
                pass
            s.close()
        self.assertEqual(got, n)

    def test_polling(self):
        p = Stream(self.port, "poll1", kind="xhr")
        self.assertEqual(p.r.read(), b"o\n")
        p.close()
        self.assertEqual(xhr_send(self.port, "poll1", [
            {"type": "register", "address": "web.poll"},
            {"type": "publish", "address": "web.poll", "body": 5}])[0], 204)
        p = Stream(self.port, "poll1", kind="xhr")
        kind, msgs = p.frame()
        self.assertEqual((kind, msgs[0]["body"]), ("a", 5))
        p.close()

    def test_send_errors(self):
        self.assertEqual(xhr_send(self.port, "nosuch", [{"type": "ping"}])[0],
                         404)
        s = Stream(self.port, "err1")
        self.assertEqual(s.line(), "h" * 2048 + "\n")
        self.assertEqual(s.line(), "o\n")
        self.assertEqual(xhr_send(self.port, "err1", b"")[0], 500)
        self.assertEqual(xhr_send(self.port, "err1", b"[not json")[0], 500)
        self.assertEqual(xhr_send(self.port, "err1", b"[1]")[0], 500)
        big = json.dumps([json.dumps({"type": "ping", "x": "y" * 140000})])
        self.assertEqual(xhr_send(self.port, "err1", big)[0], 413)
        # still usable
        self.assertEqual(xhr_send(self.port, "err1", [
            {"type": "register", "address": "web.err"},
            {"type": "publish", "address": "web.err", "body": 1}])[0], 204)
        self.assertEqual(s.frame()[1][0]["body"], 1)
        s.close()

    def test_disconnect_delay(self):
        p = Stream(self.port, "dd1", kind="xhr")
        self.assertEqual(p.r.read(), b"o\n")
        p.close()
        t0 = time.monotonic()

        def gone():
            return xhr_send(self.port, "dd1", [{"type": "ping"}])[0] == 404
        ebtest.wait_until(gone, ebtest.scaled(10), "session closed")
        self.assertGreater(time.monotonic() - t0, 4.0)
        # the same id opens a new session
        p = Stream(self.port, "dd1", kind="xhr")
        self.assertEqual(p.r.read(), b"o\n")
        p.close()

    def test_slow_client_closed(self):
        # a session without a receiver queues at most write_queue_max_bytes
        s = Stream(self.port, "slow1")
        self.assertEqual(s.line(), "h" * 2048 + "\n")
        self.assertEqual(s.line(), "o\n")
        self.assertEqual(xhr_send(self.port, "slow1", [
            {"type": "register", "address": "web.slow"}])[0], 204)
        s.close()
        closed = False
        for i in range(400):
            st, _ = xhr_send(self.port, "slow1", [
                {"type": "publish", "address": "web.slow",
                 "body": "z" * 2000}])
            if st == 404:
                closed = True
                break
        self.assertTrue(closed, "the session was closed as a slow consumer")


class Limit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = web_node("webxhrmax", bridge={"max_connections": 12})
        cls.port = cls.node.web_port

    @classmethod
    def tearDownClass(cls):
        code = cls.node.stop()
        if code != 0:
            raise AssertionError("ebnode exited with %r" % code)

    def test_session_limit(self):
        codes = []
        for i in range(14):
            p = Stream(self.port, "max%d" % i, kind="xhr")
            codes.append(p.status)
            p.r.read()
            p.close()
        # the polling request's own socket is a bridge connection too
        # while it is open (and a closed one until the node sees the EOF):
        # fewer than 12 sessions; at the limit a new session takes the
        # place of the one without a receiving request the longest, so
        # no new client is locked out (issue 22)
        self.assertEqual(codes, [200] * 14)
        st, text = ebtest.admin_request(*self.node.admin, "GET", "/metrics")
        self.assertEqual(st, 200)
        vals = {ln.split()[0]: float(ln.split()[1])
                for ln in text.splitlines()
                if ln.startswith("ebnode_web_xhr_")}
        self.assertLessEqual(vals["ebnode_web_xhr_sessions"], 11)
        self.assertGreaterEqual(vals["ebnode_web_xhr_evicted_total"], 3)
        # the oldest went first: its id opens a new session ("o")
        p = Stream(self.port, "max0", kind="xhr")
        self.assertEqual(p.status, 200)
        self.assertEqual(p.line(), "o\n")
        p.close()

if __name__ == "__main__":
    unittest.main(verbosity=2)
