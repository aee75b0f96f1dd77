"""Cases from the Vert.x bridge *client* test suites (BRIDGE-PROTOCOL.md
section 13, "Client-suite checklists"), replayed with raw frames against a
real ebnode: Java client (null body, publish to 3 consumers, exactly one
header each way, NO_HANDLERS text after unsubscribe, reply failure text),
Python client (header read back, bad address access_denied with the suite's
permit regex in POSIX spelling, reply via a generated replyAddress), Go
client (no more ticks after unregister, send with replyAddress and reply)."""

import time
import unittest
import uuid

import bt

# The Python suite permits "[\w-_ ]*" (Java); POSIX spelling, see
# docs/BRIDGE.md. The other suites use ".*".
PERMIT = [{"addressRegex": "[[:alnum:]_ .-]*"}]


class ClientSuites(unittest.TestCase):
    node = None

    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node("suites", bridge={"inbound": PERMIT,
                                                   "outbound": PERMIT})

    @classmethod
    def tearDownClass(cls):
        code = cls.node.stop()
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

    # -- Java client (TcpBusTest) -----------------------------------------

    def test_java_send_null_body(self):
        srv, c = self.connect(), self.connect()
        srv.register("server_addr")
        srv.sync()
        c.send("server_addr", None)
        srv.expect_exact(self, {"type": "message", "address": "server_addr",
                                "headers": {}, "send": True})

    def test_java_publish_to_three_consumers(self):
        subs = [self.connect() for _ in range(3)]
        for s in subs:
            s.register("news")
            s.sync()
        self.connect().publish("news", {"n": 1})
        for s in subs:
            s.expect_exact(self, {"type": "message", "address": "news",
                                  "headers": {}, "body": {"n": 1},
                                  "send": False})

    def test_java_send_and_receive_exactly_one_header(self):
        srv, c = self.connect(), self.connect()
        srv.register("server_addr")
        srv.sync()
        c.send("server_addr", {"q": 1}, headers={"foo": "bar"},
               reply_address="r1")
        m = srv.recv_frame()
        self.assertEqual(m["headers"], {"foo": "bar"})
        srv.send(m["replyAddress"], {"a": 1}, headers={"baz": "qux"})
        f = c.recv_frame()
        self.assertEqual(f["headers"], {"baz": "qux"})

    def test_java_unsubscribe_then_no_handlers(self):
        srv, c = self.connect(), self.connect()
        c.register("client_addr")
        c.sync()
        c.unregister("client_addr")
        c.sync()
        srv.send("client_addr", {}, reply_address="r")
        srv.expect_exact(self, {
            "type": "err", "address": "r", "sourceAddress": "client_addr",
            "failureCode": -1, "failureType": "NO_HANDLERS",
            "message": "No handlers for address client_addr"})

    def test_java_reply_failure_text(self):
        srv, c = self.connect(), self.connect()
        srv.register("server_addr")
        srv.sync()
        c.send("server_addr", {}, reply_address="r")
        m = srv.recv_frame()
        srv.send_frame({"type": "send", "address": m["replyAddress"],
                        "failureCode": 42, "message": "the_message"})
        f = c.recv_frame()
        self.assertEqual((f["failureType"], f["failureCode"], f["message"]),
                         ("RECIPIENT_FAILURE", 42, "the_message"))

    # -- Python client (systemtesting) --------------------------------------

    def test_python_header_read_back(self):
        c = self.connect()
        c.register("echo-back", headers={"first": True})
        c.publish("echo-back", {"x": 1}, headers={"first": True,
                                                  "name": "n1"})
        f = c.recv_frame()
        self.assertEqual(f["headers"], {"first": "true", "name": "n1"})

    def test_python_bad_address_access_denied(self):
        c = self.connect()
        c.send("#-Bad_Address$", {})
        c.expect_exact(self, {"type": "err", "message": "access_denied"})

    def test_python_reply_via_generated_reply_address(self):
        srv, c = self.connect(), self.connect()
        srv.register("echo")
        srv.sync()
        token = str(uuid.uuid4())
        c.send("echo", {"hi": 1}, reply_address=token)
        m = srv.recv_frame()
        srv.send(m["replyAddress"], m["body"])
        f = c.recv_frame()
        self.assertEqual((f["address"], f["body"]), (token, {"hi": 1}))

    # -- Go client (integration-test) ---------------------------------------

    def test_go_no_ticks_after_unregister(self):
        clock, c = self.connect(), self.connect()
        c.register("sample.clock.ticks")
        c.sync()
        clock.publish("sample.clock.ticks", {"tick": 1})
        self.assertEqual(c.recv_frame()["body"], {"tick": 1})
        c.unregister("sample.clock.ticks")
        c.sync()
        for n in range(2, 5):
            clock.publish("sample.clock.ticks", {"tick": n})
        clock.sync()
        c.expect_no_frame(0.3)

    def test_go_send_with_reply_address(self):
        echo, c = self.connect(), self.connect()
        echo.register("sample.echo")
        echo.sync()
        c.send("sample.echo", {"v": "go"},
               reply_address="sample.echo.goclient")
        m = echo.recv_frame()
        echo.send(m["replyAddress"], m["body"])
        f = c.recv_frame()
        self.assertEqual(f["address"], "sample.echo.goclient")
        self.assertEqual(f["body"], {"v": "go"})

    def test_ping_keeps_connection_alive(self):
        # Java client: pings keep the socket open (no server ping timeout).
        c = self.connect()
        t_end = time.monotonic() + 1.0
        while time.monotonic() < t_end:
            c.ping()
            c.expect_exact(self, {"type": "pong"})
            time.sleep(0.1)  # pacing


if __name__ == "__main__":
    unittest.main(verbosity=2)
