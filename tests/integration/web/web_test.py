#!/usr/bin/env python3
"""The browser bridge (web/) at the protocol level, stdlib only: a raw
WebSocket and the SockJS websocket transport against a real ebnode, with
the bridge's rules applying to them as to TCP clients.

- SockJS: greeting, info (CORS echoes the Origin), "o" on open, a[...]
  frames, client arrays of several messages, heartbeats ("h"), a broken
  SockJS message or invalid UTF-8 closes with 1007, the bridge's pong is not forwarded,
  err frames carry "body" as Vert.x's SockJS bridge words them.
- raw WebSocket: one event-bus message per text frame; a WebSocket ping is
  answered; a close handshake ends the connection.
- the bridge's rules: permitted lists (access_denied), token
  authentication (bridge.auth), max_frame_bytes (an oversized message is
  refused: close 1009), bridge.max_connections (shared with TCP clients),
  a request head over web.max_header_bytes gets 431, unknown paths 404.
- TLS: with bridge.tls the web port speaks wss/https.
"""
import base64
import json
import os
import socket
import ssl
import struct
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "bridge"))

import bt  # noqa: E402
import ebtest  # noqa: E402


class WS:
    """A minimal masked WebSocket client over a (TLS) socket."""

    def __init__(self, port, path, tls=None, origin=None):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if tls is not None:
            s = tls.wrap_socket(s, server_hostname="localhost")
        self.s = s
        self.buf = b""
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n" % (path, key))
        if origin:
            req += "Origin: %s\r\n" % origin
        s.sendall((req + "\r\n").encode())
        head = self._until(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])
        self.head = head.decode("latin-1")

    def _until(self, sep):
        while sep not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("closed")
            self.buf += d
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, payload, opcode=1):
        if isinstance(payload, str):
            payload = payload.encode()
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            hdr = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            hdr = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.s.sendall(hdr + mask + body)

    def recv(self):
        """(opcode, payload) of the next frame (the server never masks)."""
        b0, b1 = self._need(2)
        n = b1 & 0x7f
        if n == 126:
            n = struct.unpack("!H", self._need(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._need(8))[0]
        assert not b1 & 0x80, "server frames are not masked"
        return b0 & 0x0f, self._need(n)

    def text(self):
        while True:
            op, p = self.recv()
            if op == 1:
                return p.decode()
            if op == 8:
                raise EOFError("close %r" % p)

    def sockjs(self):
        """The next SockJS frame: ('o'|'h'|'c', None) or ('a', [dicts])."""
        t = self.text()
        if t[0] == "a":
            return "a", [json.loads(m) for m in json.loads(t[1:])]
        return t[0], None

    def close(self):
        self.s.close()


def http_get(port, path, headers="", tls=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if tls is not None:
        s = tls.wrap_socket(s, server_hostname="localhost")
    s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" %
               (path, headers)).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        if not d:
            break
        data += d
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hdrs = {k.lower(): v.strip() for k, _, v in
            (l.partition(":") for l in lines[1:])}
    n = int(hdrs.get("content-length", "0"))
    while len(body) < n:
        d = s.recv(65536)
        if not d:
            break
        body += d
    s.close()
    return int(lines[0].split(" ")[1]), hdrs, body


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


class SockJS(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = web_node("web", web={"heartbeat_ms": 300},
                            bridge={"max_frame_bytes": 4096,
                                    "max_connections": 6})

    @classmethod
    def tearDownClass(cls):
        code = cls.node.stop()
        if code != 0:
            raise AssertionError("ebnode exited with %r" % code)

    def test_greeting_and_info(self):
        st, _, body = http_get(self.node.web_port, "/eventbus")
        self.assertEqual((st, body), (200, b"Welcome to SockJS!\n"))
        st, h, body = http_get(self.node.web_port, "/eventbus/info?t=1",
                               "Origin: http://page.example\r\n")
        self.assertEqual(st, 200)
        self.assertEqual(h["access-control-allow-origin"],
                         "http://page.example")
        self.assertEqual(h["access-control-allow-credentials"], "true")
        info = json.loads(body)
        self.assertIs(info["websocket"], True)
        self.assertIs(info["cookie_needed"], False)
        self.assertEqual(http_get(self.node.web_port, "/other")[0], 404)
        self.assertEqual(
            http_get(self.node.web_port, "/eventbus/1/2/xhr_streaming")[0],
            404)
        # a plain GET of a websocket path is refused as SockJS does
        self.assertEqual(
            http_get(self.node.web_port, "/eventbus/1/2/websocket")[0], 400)

    def test_head_has_no_body(self):
        """A HEAD answer carries the length but no body, so the answer to
        a request pipelined after it on the same connection is read
        right."""
        s = socket.create_connection(("127.0.0.1", self.node.web_port),
                                     timeout=5)
        s.sendall(b"HEAD /eventbus/info HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /eventbus HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while not data.endswith(b"Welcome to SockJS!\n"):
            d = s.recv(65536)
            self.assertTrue(d, "closed early: %r" % data)
            data += d
        s.close()
        head, _, rest = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
        self.assertIn(b"Content-Length: ", head)
        self.assertTrue(rest.startswith(b"HTTP/1.1 200 OK\r\n"), rest)

    def test_header_bound(self):
        st, _, _ = http_get(self.node.web_port, "/eventbus/info",
                            "X-Big: %s\r\n" % ("x" * 9000))
        self.assertEqual(st, 431)

    def test_sockjs_session(self):
        ws = WS(self.node.web_port, "/eventbus/000/sess1/websocket")
        self.assertEqual(ws.status, 101)
        self.assertEqual(ws.sockjs(), ("o", None))
        reg = {"type": "register", "address": "web.a"}
        ping = {"type": "ping"}
        snd = {"type": "send", "address": "web.a", "body": {"k": "é\n\""}}
        # several messages in one SockJS frame, ping in the middle
        ws.send(json.dumps([json.dumps(reg), json.dumps(ping),
                            json.dumps(snd)]))
        kind, msgs = ws.sockjs()
        while kind == "h":
            kind, msgs = ws.sockjs()
        self.assertEqual(kind, "a")
        # no pong: the Vert.x SockJS bridge sends none
        self.assertEqual(msgs[0]["body"], {"k": "é\n\""})
        self.assertEqual(msgs[0]["address"], "web.a")
        # access_denied as the SockJS bridge words it (body)
        ws.send(json.dumps([json.dumps({"type": "send",
                                        "address": "secret"})]))
        kind, msgs = ws.sockjs()
        while kind == "h":
            kind, msgs = ws.sockjs()
        self.assertEqual(msgs[0]["type"], "err")
        self.assertEqual(msgs[0]["body"], "access_denied")
        # heartbeats after 300 ms of silence
        t0 = time.monotonic()
        self.assertEqual(ws.sockjs(), ("h", None))
        self.assertLess(time.monotonic() - t0, ebtest.scaled(3))
        st, text = ebtest.admin_request(*self.node.admin, "GET", "/metrics")
        self.assertEqual(st, 200)
        self.assertIn('ebnode_web_sessions_total{transport="sockjs"}', text)
        self.assertRegex(text, r"(?m)^ebnode_web_heartbeats_total [1-9]")
        ws.close()

    def test_broken_sockjs_message_closes(self):
        ws = WS(self.node.web_port, "/eventbus/000/sess2/websocket")
        self.assertEqual(ws.sockjs(), ("o", None))
        ws.send("[not json")
        op, p = ws.recv()
        while op != 8:
            op, p = ws.recv()
        self.assertEqual(struct.unpack("!H", p[:2])[0], 1007)
        ws.close()

    def test_raw_websocket(self):
        ws = WS(self.node.web_port, "/eventbus/websocket")
        self.assertEqual(ws.status, 101)
        ws.send(json.dumps({"type": "register", "address": "web.raw"}))
        ws.send(json.dumps({"type": "publish", "address": "web.raw",
                            "body": 7}))
        self.assertEqual(json.loads(ws.text())["body"], 7)
        ws.send(b"hi", opcode=9)  # ping
        op, p = ws.recv()
        self.assertEqual((op, p), (10, b"hi"))
        ws.send(struct.pack("!H", 1000), opcode=8)
        op, _ = ws.recv()
        self.assertEqual(op, 8)
        ws.close()

    def test_invalid_utf8_refused(self):
        # wslay validates text messages: close 1007
        ws = WS(self.node.web_port, "/eventbus/websocket")
        ws.send(b'{"type":"ping","x":"\xff\xfe"}')
        op, p = ws.recv()
        while op != 8:
            op, p = ws.recv()
        self.assertEqual(struct.unpack("!H", p[:2])[0], 1007)
        ws.close()

    def test_oversized_message_refused(self):
        ws = WS(self.node.web_port, "/eventbus/websocket")
        ws.send(json.dumps({"type": "send", "address": "web.x",
                            "body": "x" * 5000}))
        op, p = ws.recv()
        while op != 8:
            op, p = ws.recv()
        self.assertEqual(struct.unpack("!H", p[:2])[0], 1009)
        ws.close()

    def test_connections_shared_with_tcp(self):
        # max_connections 6 counts TCP and web clients together; the
        # bridge refuses beyond (a web client that never spoke is evicted
        # for a new one first, so every one here has spoken)
        def idle():
            st, b = ebtest.admin_request(*self.node.admin, "GET", "/bridge")
            return st == 200 and b["stats"]["connections_open"] == 0
        ebtest.wait_until(idle, 10, "earlier connections closed")
        held = []
        try:
            for i in range(6):
                ws = WS(self.node.web_port, "/eventbus/websocket")
                ws.send(json.dumps({"type": "register",
                                    "address": "web.c%d" % i}))
                ws.send(json.dumps({"type": "publish",
                                    "address": "web.c%d" % i, "body": i}))
                self.assertEqual(json.loads(ws.text())["body"], i)
                held.append(ws)
            c = bt.connect(self.node)
            with self.assertRaises((EOFError, OSError, ConnectionError,
                                    TimeoutError)):
                c.ping()
                c.recv_until(lambda f: f.get("type") == "pong", 2)
            c.close()
        finally:
            for ws in held:
                ws.close()


class Auth(unittest.TestCase):
    def test_token(self):
        n = web_node("webauth", bridge={"auth": {"token": "t0k"}})
        try:
            ws = WS(n.web_port, "/eventbus/websocket")
            ws.send(json.dumps({"type": "register", "address": "web.t"}))
            err = json.loads(ws.text())
            self.assertEqual((err["type"], err["body"]),
                             ("err", "access_denied"))
            ws.send(json.dumps({"type": "register", "address": "web.t",
                                "headers": {"token": "t0k"}}))
            ws.send(json.dumps({"type": "publish", "address": "web.t",
                                "headers": {"token": "t0k"}, "body": 1}))
            self.assertEqual(json.loads(ws.text())["body"], 1)
            ws.close()
        finally:
            self.assertEqual(n.stop(), 0)


@unittest.skipUnless(bt.CERTS, "EB_CERTS_DIR not set")
class TLS(unittest.TestCase):
    def test_wss(self):
        n = web_node("webtls", bridge=bt.tls_bridge(
            inbound=[{"addressRegex": "web\\..+"}],
            outbound=[{"addressRegex": "web\\..+"}]))
        try:
            ctx = bt.client_tls()
            st, _, body = http_get(n.web_port, "/eventbus/info", tls=ctx)
            self.assertEqual(st, 200)
            self.assertIs(json.loads(body)["websocket"], True)
            ws = WS(n.web_port, "/eventbus/1/s/websocket", tls=ctx)
            self.assertEqual(ws.sockjs(), ("o", None))
            ws.send(json.dumps([json.dumps({"type": "register",
                                            "address": "web.s"}),
                                json.dumps({"type": "publish",
                                            "address": "web.s",
                                            "body": "over tls"})]))
            kind, msgs = ws.sockjs()
            self.assertEqual((kind, msgs[0]["body"]), ("a", "over tls"))
            ws.close()
        finally:
            self.assertEqual(n.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
