"""BRIDGE-PROTOCOL.md section 12 (where ebnode does better than Vert.x),
permissions, token authentication, idle timeout and the connection limit,
each asserting the exact frames against a real ebnode."""

import socket
import time
import unittest

import bt
from bt import frame_bytes

ERR_DENIED = {"type": "err", "message": "access_denied"}

INBOUND = [{"address": "echo"}, {"address": "in"},
           {"addressRegex": "re\\.[a-z]+"}]
OUTBOUND = [{"address": "echo"}, {"address": "out"},
            {"addressRegex": "re\\.[a-z]+"}]


def closed_now(client):
    """True if the peer has closed client's socket (non-blocking check)."""
    client.sock.setblocking(False)
    try:
        data = client.sock.recv(65536)
        return data == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        client.sock.setblocking(True)


class NodeCase(unittest.TestCase):
    bridge = {"inbound": INBOUND, "outbound": OUTBOUND}
    node = None

    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node(cls.__name__, bridge=cls.bridge)

    @classmethod
    def tearDownClass(cls):
        if cls.node is not None:
            code = cls.node.stop()
            cls.node = None
            if code != 0:
                raise AssertionError("ebnode exited with %r" % code)

    def setUp(self):
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()

    def connect(self):
        c = bt.connect(self.node)
        self.clients.append(c)
        return c


class Quirks(NodeCase):
    def test_unknown_or_missing_type_answered_and_socket_kept(self):
        c = self.connect()
        for f in ({"type": "message", "address": "echo"},
                  {"address": "echo"}, {"type": 5, "address": "echo"},
                  {"type": "rec", "address": "echo"},
                  {"type": None}):
            c.send_frame(f)
            c.expect_exact(self, {"type": "err", "message": "unknown_type"})
        c.ping()
        c.expect_exact(self, {"type": "pong"})

    def test_malformed_and_non_object_json_answered(self):
        # Each one is answered with an err frame that says what is wrong
        # (issue 23: none is dropped silently); the socket keeps working.
        c = self.connect()
        cases = ((b"not json", "invalid_json: not a JSON object"),
                 (b"[1,2]", "invalid_json: not a JSON object"),
                 (b'"str"', "invalid_json: not a JSON object"),
                 (b"42", "invalid_json: not a JSON object"),
                 (b"null", "invalid_json: not a JSON object"),
                 (b"", "invalid_json: empty frame"),
                 (b"{", "invalid_json: unexpected end of text at byte 1"),
                 (b'{"type":"ping"',
                  "invalid_json: unexpected end of text at byte 14"),
                 (b"\xff\xfe", "invalid_json: not a JSON object"),
                 (b"{}}", "invalid_json: bytes after the object at byte 2"),
                 (b'{"type":"send","address":"a\\u0000"}',
                  "invalid_frame: address holds U+0000"))
        for raw, why in cases:
            c.send_frame(raw)
            c.expect_exact(self, {"type": "err", "message": why})
        c.ping()
        c.expect_exact(self, {"type": "pong"})

    def test_per_frame_logging_is_bounded(self):
        c = self.connect()
        for _ in range(200):
            c.send_frame(b"junk")
        for _ in range(200):
            c.expect_exact(self, {"type": "err", "message":
                                  "invalid_json: not a JSON object"})
        c.ping()
        c.expect_exact(self, {"type": "pong"})
        port = c.sock.getsockname()[1]
        peer = "peer=127.0.0.1:%d" % port
        self.node.wait_log("log-suppressed: %s" % peer)
        lines = [l for l in self.node.log_lines()
                 if "malformed-frame: %s " % peer in l]
        self.assertLessEqual(len(lines), 16)
        self.assertGreater(len(lines), 0)

    def test_duplicate_register_is_idempotent(self):
        c = self.connect()
        c.register("echo")
        c.register("echo")
        c.publish("echo", {"n": 1})
        c.expect_exact(self, {"type": "message", "address": "echo",
                              "headers": {}, "body": {"n": 1},
                              "send": False})
        self.assertEqual(c.sync(), [])  # delivered once, not twice
        c.unregister("echo")
        c.unregister("echo")  # one consumer: the second is unknown
        c.expect_exact(self, {"type": "err", "message": "unknown_address"})

    def test_header_values_stringified_options_consumed(self):
        peer, c = self.connect(), self.connect()
        peer.register("echo")
        peer.sync()
        c.send("echo", {"x": 1}, headers={
            "b": True, "f": False, "n": 5, "s": "x", "d": 1.5,
            "timeout": 1000, "localOnly": False, "codecName": "c"})
        peer.expect_exact(self, {
            "type": "message", "address": "echo",
            "headers": {"b": "true", "f": "false", "n": "5", "s": "x",
                        "d": "1.5"},
            "body": {"x": 1}, "send": True})

    def test_null_headers_and_body(self):
        peer, c = self.connect(), self.connect()
        peer.register("echo")
        peer.sync()
        c.send_frame({"type": "send", "address": "echo", "headers": None,
                      "body": None})
        peer.expect_exact(self, {"type": "message", "address": "echo",
                                 "headers": {}, "send": True})

    def test_missing_address(self):
        c = self.connect()
        for t in ("send", "publish", "register", "unregister"):
            c.send_frame({"type": t})
            c.expect_exact(self, {"type": "err",
                                  "message": "missing_address"})
            c.send_frame({"type": t, "address": 5})
            c.expect_exact(self, {"type": "err",
                                  "message": "missing_address"})
            c.send_frame({"type": t, "address": ""})
            c.expect_exact(self, {"type": "err",
                                  "message": "missing_address"})
        c.expect_no_frame(0.2)

    def test_access_denied_exact(self):
        c = self.connect()
        c.send("nope", {"a": 1})
        c.expect_exact(self, ERR_DENIED)
        c.publish("nope", {"a": 1})
        c.expect_exact(self, ERR_DENIED)
        c.register("nope")
        c.expect_exact(self, ERR_DENIED)
        c.unregister("nope")
        c.expect_exact(self, ERR_DENIED)
        # A denied request: address-less err, the reply handler never fires.
        c.send("nope", {"a": 1}, reply_address="#r")
        c.expect_exact(self, ERR_DENIED)
        # Inbound and outbound lists are separate.
        c.register("in")
        c.expect_exact(self, ERR_DENIED)
        c.send("out", {})
        c.expect_exact(self, ERR_DENIED)
        self.assertEqual(c.sync(), [])

    def test_client_address_is_escaped_on_one_log_line(self):
        # Issue 10 item 5: a newline in a client-chosen address must not
        # forge a log line (every leadership check parses the logs).
        forged = "x\nNOTICE election: elected: epoch=999999 node=forged"
        c = self.connect()
        c.send(forged, {"a": 1})
        c.expect_exact(self, ERR_DENIED)
        self.assertEqual(c.sync(), [])
        want = ('address="x\\nNOTICE election: elected: epoch=999999 '
                'node=forged"')
        line = self.node.wait_log(want, timeout=bt.scaled(5))
        self.assertIn("INFO bridge: access-denied: ", line)
        self.assertRegex(line, r"^\d+\.\d+ INFO bridge: access-denied: ")
        for ln in self.node.log_lines():
            self.assertNotRegex(
                ln, r"^(\d+\.\d+ )?NOTICE election: elected: epoch=999999")
            self.assertNotIn("\n", ln)

    def test_regex_matches_whole_address(self):
        peer, c = self.connect(), self.connect()
        peer.register("re.abc")
        peer.sync()
        c.send("re.abc", {"ok": True})
        m = peer.recv_frame()
        self.assertEqual(m["address"], "re.abc")
        for bad in ("re.abc1", "xre.abc", "re.", "re.abc.d"):
            c.send(bad, {})
            c.expect_exact(self, ERR_DENIED)
            c.register(bad)
            c.expect_exact(self, ERR_DENIED)

    def test_reply_is_one_shot(self):
        peer, c = self.connect(), self.connect()
        c.register("echo")
        c.sync()
        peer.send("echo", {"q": 1}, reply_address="srv")
        m = c.recv_frame()
        ra = m["replyAddress"]
        c.send(ra, {"a": 1})
        peer.expect_exact(self, {"type": "message", "address": "srv",
                                 "headers": {}, "body": {"a": 1},
                                 "send": True})
        c.send(ra, {"a": 2})  # not a pending reply any more
        c.expect_exact(self, ERR_DENIED)

    def test_reply_with_reply(self):
        peer, c = self.connect(), self.connect()
        c.register("echo")
        c.sync()
        peer.send("echo", {"q": 1}, reply_address="srv")
        ra = c.recv_frame()["replyAddress"]
        c.send(ra, {"a": 1}, reply_address="#again")
        m = peer.recv_frame()
        self.assertEqual(m["address"], "srv")
        self.assertIn("replyAddress", m)
        peer.send(m["replyAddress"], {"b": 2})
        c.expect_exact(self, {"type": "message", "address": "#again",
                              "headers": {}, "body": {"b": 2},
                              "send": True})

    def test_consumers_removed_on_close(self):
        a = self.connect()
        a.register("echo")
        a.sync()
        a.close()
        c = self.connect()
        # Bounded wait: the bridge sees the FIN on its next loop turn.
        deadline = 50
        while deadline > 0:
            c.send("echo", {}, reply_address="#r")
            f = c.recv_frame()
            if f.get("failureType") == "NO_HANDLERS":
                break
            deadline -= 1
        self.assertEqual(f["failureType"], "NO_HANDLERS")


class SecureDefault(NodeCase):
    bridge = {}

    def test_loopback_and_deny_all_but_ingress(self):
        self.assertEqual(self.node.bridge[0], "127.0.0.1")
        c = self.connect()
        c.send("anything", {})
        c.expect_exact(self, ERR_DENIED)
        c.register("anything")
        c.expect_exact(self, ERR_DENIED)
        c.register("external.ingress")  # outbound: nothing
        c.expect_exact(self, ERR_DENIED)
        c.ping()
        c.expect_exact(self, {"type": "pong"})


class Limits(NodeCase):
    bridge = {"inbound": [{}], "outbound": [{}], "idle_timeout_ms": 400,
              "max_connections": 3}

    def test_idle_timeout_closes_quiet_sockets_only(self):
        quiet, busy = self.connect(), self.connect()
        t0 = time.monotonic()
        deadline = t0 + bt.scaled(5)
        closed_at = None
        while time.monotonic() < deadline:
            busy.ping()  # traffic every 100 ms keeps this one open
            busy.expect_exact(self, {"type": "pong"})
            if closed_now(quiet):
                closed_at = time.monotonic() - t0
                break
            time.sleep(0.1)  # pacing, not synchronisation
        self.assertIsNotNone(closed_at, "quiet socket not closed")
        self.assertGreaterEqual(closed_at, 0.35)  # not before the timeout
        busy.ping()
        busy.expect_exact(self, {"type": "pong"})

    def test_connection_limit(self):
        cs = [self.connect() for _ in range(3)]
        for c in cs:
            c.ping()
            c.expect_exact(self, {"type": "pong"})
        extra = self.connect()
        self.assertTrue(extra.wait_closed(2))
        cs[0].close()
        # A slot is free again once the bridge saw the close.
        for _ in range(50):
            again = self.connect()
            try:
                again.ping()
                again.recv_frame(1)
                break
            except (ConnectionError, OSError, TimeoutError):
                continue
        else:
            self.fail("no slot after a close")
        self.assertTrue(any("conn-refused" in l for l in
                            self.node.log_lines()))


class Ipv6(NodeCase):
    bridge = {"listen": "::1", "inbound": [{}], "outbound": [{}]}

    @classmethod
    def setUpClass(cls):
        try:
            socket.socket(socket.AF_INET6).bind(("::1", 0))
        except OSError:
            raise unittest.SkipTest("no IPv6 loopback")
        super().setUpClass()

    def test_ipv6_listener(self):
        self.assertEqual(self.node.bridge[0], "::1")
        c = self.connect()
        c.register("v6")
        c.publish("v6", {"ok": 1})
        c.expect_exact(self, {"type": "message", "address": "v6",
                              "headers": {}, "body": {"ok": 1},
                              "send": False})


class ReplyTtl(NodeCase):
    bridge = {"inbound": [{"address": "q"}], "outbound": [{"address": "q"}],
              "reply_ttl_ms": 200}

    def test_pending_reply_expires(self):
        peer, c = self.connect(), self.connect()
        c.register("q")
        c.sync()
        peer.send("q", {"n": 1}, headers={"timeout": 30000},
                  reply_address="srv")
        ra = c.recv_frame()["replyAddress"]
        time.sleep(0.3)  # let the TTL pass (time itself, not an event)
        # Expired: the reply address is an ordinary, non-permitted address.
        c.send(ra, {"late": True})
        c.expect_exact(self, ERR_DENIED)
        peer.expect_no_frame(0.3)

    def test_reply_within_ttl_passes(self):
        peer, c = self.connect(), self.connect()
        c.register("q")
        c.sync()
        peer.send("q", {"n": 1}, reply_address="srv")
        ra = c.recv_frame()["replyAddress"]
        c.send(ra, {"ok": True})
        peer.expect_exact(self, {"type": "message", "address": "srv",
                                 "headers": {}, "body": {"ok": True},
                                 "send": True})


class StopWithTraffic(unittest.TestCase):
    def test_sigterm_with_open_sockets_and_requests_in_flight(self):
        node = bt.start_node("stoptraffic", bridge={
            "inbound": [{}], "outbound": [{}]})
        try:
            peer, c = bt.connect(node), bt.connect(node)
            peer.register("slow")
            peer.sync()
            # In flight both ways: a client request nobody answers and a
            # server request the client holds in its replies map.
            c.send("slow", {"n": 1}, reply_address="#never")
            m = peer.recv_frame()
            self.assertIn("replyAddress", m)
            c.register("back")
            c.sync()
            peer.send("back", {}, reply_address="#srv")
            c.recv_frame()
        finally:
            code = node.stop()
        # Clean exit (a sanitizer build would fail on leaks or misuse).
        self.assertEqual(code, 0)
        self.assertTrue(peer.wait_closed(2))
        self.assertTrue(c.wait_closed(2))
        peer.close()
        c.close()


class AuthEvery(NodeCase):
    bridge = {"inbound": [{}], "outbound": [{}],
              "auth": {"token": "s3cret-Every", "mode": "every"}}

    def test_token_on_every_frame(self):
        peer, c = self.connect(), self.connect()
        peer.register("a", headers={"token": "s3cret-Every"})
        peer.sync()  # ping needs no token
        c.send("a", {"n": 1})
        c.expect_exact(self, ERR_DENIED)
        c.send("a", {"n": 2}, headers={"token": "wrong"})
        c.expect_exact(self, ERR_DENIED)
        c.send("a", {"n": 3}, headers={"token": "s3cret-Every", "k": "v"})
        peer.expect_exact(self, {"type": "message", "address": "a",
                                 "headers": {"k": "v"}, "body": {"n": 3},
                                 "send": True})
        c.send("a", {"n": 4})  # every frame
        c.expect_exact(self, ERR_DENIED)
        self.assertEqual(c.sync(), [])
        self.assertFalse(any("s3cret" in l for l in self.node.log_lines()))


class AuthFirst(NodeCase):
    bridge = {"inbound": [{}], "outbound": [{}],
              "auth": {"token": "s3cret-First", "mode": "first"}}

    def test_first_frame_authenticates_the_socket(self):
        c = self.connect()
        c.ping()  # pings before authentication are answered
        c.expect_exact(self, {"type": "pong"})
        c.register("a", headers={"token": "s3cret-First"})
        c.publish("a", {"n": 1})  # no token needed any more
        c.expect_exact(self, {"type": "message", "address": "a",
                              "headers": {}, "body": {"n": 1},
                              "send": False})

    def test_unauthenticated_first_frame_closes(self):
        c = self.connect()
        c.register("a")
        c.expect_exact(self, ERR_DENIED)
        self.assertTrue(c.wait_closed(2))
        self.assertFalse(any("s3cret" in l for l in self.node.log_lines()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
