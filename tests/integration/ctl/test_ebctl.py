"""ebctl against stub servers (stubs.py): every command, its output in both
formats, and every error exit (connection refused, timeout, err frames,
HTTP errors, usage). Environment: EBCTL_BIN (required), EB_CERTS_DIR (the
certs fixture; TLS tests are skipped without it)."""

import json
import os
import ssl
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stubs  # noqa: E402

MULT = float(os.environ.get("EB_TEST_TIMEOUT_MULTIPLIER", "1") or "1")
EBCTL = os.environ.get("EBCTL_BIN", "ebctl")
CERTS = os.environ.get("EB_CERTS_DIR", "")


def ebctl(*args, stdin=None, timeout=10, env=None):
    e = dict(os.environ)
    for k in ("EBCTL_BRIDGE", "EBCTL_ADMIN", "EBCTL_TOKEN"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run([EBCTL] + list(args), input=stdin,
                       capture_output=True, text=True,
                       timeout=timeout * MULT, env=e)
    return p.returncode, p.stdout, p.stderr


class BridgeCommands(unittest.TestCase):
    def setUp(self):
        self.bridge = stubs.StubBridge()
        self.b = ["--bridge", self.bridge.endpoint]

    def tearDown(self):
        self.bridge.close()

    def frames_of(self, ftype):
        return [f for f in self.bridge.frames if f.get("type") == ftype]

    def test_send_delivers_body_and_headers(self):
        rc, out, err = ebctl("send", "orders", '{"id":7}', "-H", "k=v",
                             *self.b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "")
        sends = self.frames_of("send")
        self.assertEqual(len(sends), 1)
        self.assertEqual(sends[0]["address"], "orders")
        self.assertEqual(sends[0]["body"], {"id": 7})
        self.assertEqual(sends[0]["headers"], {"k": "v"})
        self.assertNotIn("replyAddress", sends[0])
        # the ping after the send proves it was processed
        self.assertEqual(self.bridge.frames[-1], {"type": "ping"})

    def test_send_json_output(self):
        rc, out, err = ebctl("--json", "send", "orders", "42", *self.b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"ok": True, "type": "send"})
        self.assertEqual(self.frames_of("send")[0]["body"], 42)

    def test_publish_and_body_from_stdin(self):
        rc, out, err = ebctl("publish", "news", "-", *self.b,
                             stdin='["a", "b"]')
        self.assertEqual(rc, 0, err)
        pubs = self.frames_of("publish")
        self.assertEqual(pubs[0]["body"], ["a", "b"])
        self.assertEqual(pubs[0]["address"], "news")

    def test_send_without_body_sends_null(self):
        rc, _, err = ebctl("send", "x", *self.b)
        self.assertEqual(rc, 0, err)
        self.assertIsNone(self.frames_of("send")[0]["body"])

    def test_send_denied_exits_1(self):
        rc, out, err = ebctl("send", "denied.x", "{}", *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("access_denied", err)
        rc, out, err = ebctl("publish", "denied.x", "{}", *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("access_denied", err)

    def test_connection_refused_exits_1(self):
        port = stubs.closed_port()
        for cmd in (["send", "a"], ["publish", "a"], ["request", "a"],
                    ["listen", "a"]):
            rc, out, err = ebctl(*cmd, "--bridge", "127.0.0.1:%d" % port)
            self.assertEqual(rc, 1, cmd)
            self.assertIn("Connection refused", err)
            self.assertIn("ebctl: %s:" % cmd[0], err)

    def test_request_prints_reply_body(self):
        rc, out, err = ebctl("request", "echo", '{"a":[1,2]}', *self.b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"a": [1, 2]})
        req = self.frames_of("send")[0]
        self.assertTrue(req["replyAddress"].startswith("ebctl."))
        self.assertEqual(req["headers"]["timeout"], 5000)

    def test_request_string_body_printed_raw(self):
        rc, out, err = ebctl("request", "echo", '"hello"', *self.b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "hello\n")

    def test_request_json_output(self):
        rc, out, err = ebctl("request", "echo", '{"v":1}', "-H", "x=y",
                             "--json", *self.b)
        self.assertEqual(rc, 0, err)
        reply = json.loads(out)
        self.assertEqual(reply["body"], {"v": 1})
        self.assertEqual(reply["headers"], {"x": "y"})
        self.assertTrue(reply["address"].startswith("ebctl."))

    def test_request_no_handlers_exits_1(self):
        rc, out, err = ebctl("request", "nobody", "{}", *self.b)
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn("NO_HANDLERS (-1): No handlers for address nobody", err)

    def test_request_recipient_failure_exits_1(self):
        rc, out, err = ebctl("request", "fail", "{}", *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("RECIPIENT_FAILURE (42): boom", err)

    def test_request_timeout_exits_1(self):
        t0 = time.monotonic()
        rc, out, err = ebctl("request", "slow", "{}", "--timeout", "300ms",
                             *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("TIMEOUT", err)
        self.assertLess(time.monotonic() - t0, 5 * MULT)
        self.assertEqual(self.frames_of("send")[0]["headers"]["timeout"], 300)

    def test_request_denied_exits_1(self):
        rc, out, err = ebctl("request", "denied.y", "{}", *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("access_denied", err)

    def test_listen_prints_messages_until_count(self):
        p = subprocess.Popen([EBCTL, "listen", "ticks", "--count", "2",
                              "--json"] + self.b, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(self.bridge.wait_registered("ticks", 10 * MULT))
            self.assertEqual(self.bridge.deliver("ticks", {"n": 1},
                                                 {"h": "1"}), 1)
            self.assertEqual(self.bridge.deliver("ticks", {"n": 2}), 1)
            out, err = p.communicate(timeout=10 * MULT)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        lines = [json.loads(x) for x in out.splitlines()]
        self.assertEqual([m["body"] for m in lines], [{"n": 1}, {"n": 2}])
        self.assertEqual(lines[0]["headers"], {"h": "1"})

    def test_listen_table_output(self):
        p = subprocess.Popen([EBCTL, "listen", "ticks", "-n", "1"] + self.b,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            self.assertTrue(self.bridge.wait_registered("ticks", 10 * MULT))
            self.bridge.deliver("ticks", {"n": 1}, {"k": "v"})
            out, err = p.communicate(timeout=10 * MULT)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out, 'ticks  k=v  {"n":1}  (publish)\n')

    def test_listen_count_timeout_exits_1(self):
        rc, out, err = ebctl("listen", "quiet", "--count", "1", "--timeout",
                             "300ms", *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("timed out after 0 of 1 messages", err)

    def test_listen_duration_without_count_exits_0(self):
        rc, out, err = ebctl("listen", "quiet", "--timeout", "300ms", *self.b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "")
        self.assertEqual(self.frames_of("register")[0]["address"], "quiet")

    def test_listen_pings_while_idle(self):
        # 5 s of silence: listen sends a keepalive ping like the Vert.x
        # clients (one ping confirms the registration, one keeps alive).
        rc, out, err = ebctl("listen", "quiet", "--timeout", "5500ms",
                             *self.b, timeout=20)
        self.assertEqual(rc, 0, err)
        self.assertGreaterEqual(len(self.frames_of("ping")), 2)

    def test_listen_denied_exits_1(self):
        rc, out, err = ebctl("listen", "denied.z", *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("access_denied", err)

    def test_env_default_endpoint(self):
        rc, out, err = ebctl("request", "echo", "1",
                             env={"EBCTL_BRIDGE": self.bridge.endpoint})
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "1\n")


class SilentServer(unittest.TestCase):
    """A listener that accepts and never answers: every wait must end."""

    def test_pong_timeout_exits_1(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        try:
            ep = "127.0.0.1:%d" % s.getsockname()[1]
            t0 = time.monotonic()
            rc, out, err = ebctl("send", "a", "--timeout", "300ms",
                                 "--bridge", ep)
            self.assertEqual(rc, 1)
            self.assertIn("no answer from the bridge", err)
            rc, out, err = ebctl("nodes", "--timeout", "300ms",
                                 "--admin", ep)
            self.assertEqual(rc, 1)
            self.assertIn("timed out", err)
            self.assertLess(time.monotonic() - t0, 8 * MULT)
        finally:
            s.close()


@unittest.skipUnless(CERTS and os.path.exists(os.path.join(CERTS, "ca.pem")),
                     "no test PKI (EB_CERTS_DIR)")
class BridgeTLS(unittest.TestCase):
    def setUp(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(CERTS, "server.pem"),
                            os.path.join(CERTS, "server.key"))
        ctx.load_verify_locations(os.path.join(CERTS, "ca.pem"))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        self.bridge = stubs.StubBridge(tls_context=ctx)
        self.b = ["--bridge", self.bridge.endpoint]

    def tearDown(self):
        self.bridge.close()

    def test_tls_request_with_ca(self):
        rc, out, err = ebctl("request", "echo", '{"tls":true}', "--ca",
                             os.path.join(CERTS, "ca.pem"), *self.b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"tls": True})

    def test_tls_client_certificate(self):
        rc, out, err = ebctl("send", "a", "1", "--ca",
                             os.path.join(CERTS, "ca.pem"), "--cert",
                             os.path.join(CERTS, "client.pem"), "--key",
                             os.path.join(CERTS, "client.key"), *self.b)
        self.assertEqual(rc, 0, err)

    def test_tls_wrong_ca_exits_1(self):
        rc, out, err = ebctl("send", "a", "1", "--ca",
                             os.path.join(CERTS, "wrongca.pem"), *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("certificate verification failed", err)

    def test_tls_insecure_skips_verification(self):
        rc, out, err = ebctl("request", "echo", "2", "--insecure", *self.b)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "2")

    def test_tls_wrong_name_exits_1(self):
        rc, out, err = ebctl("send", "a", "1", "--ca",
                             os.path.join(CERTS, "ca.pem"), "--servername",
                             "other.example", *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("verification failed", err)


class AdminCommands(unittest.TestCase):
    def setUp(self):
        self.admin = stubs.StubAdmin()
        self.a = ["--admin", self.admin.endpoint]

    def tearDown(self):
        self.admin.close()

    def test_nodes_table(self):
        rc, out, err = ebctl("nodes", *self.a)
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0], "leader: n1")
        head = lines[1].split()
        self.assertEqual(head, ["NODE", "ADDRESS", "HOST", "CLUSTER",
                                "BRIDGE", "ADMIN", "SEQ", "EPOCH", "JOINED",
                                "LEADER", "SELF", "ZONE"])
        row1 = lines[2].split()
        self.assertEqual(row1[0], "n1")
        self.assertEqual(row1[8], "2025-11-21T13:00:00Z")
        self.assertEqual(row1[9:], ["yes", "yes", "a"])
        row2 = lines[3].split()
        self.assertEqual(row2[-3:], ["no", "no", "-"])
        self.assertEqual(self.admin.requests[0][:2], ("GET", "/nodes"))

    def test_nodes_json(self):
        rc, out, err = ebctl("nodes", "--json", *self.a)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), stubs.NODES)

    def test_nodes_empty(self):
        self.admin.nodes = {"nodes": []}
        rc, out, err = ebctl("nodes", *self.a)
        self.assertEqual(rc, 0, err)
        self.assertIn("(no nodes)", out)

    def test_leader(self):
        rc, out, err = ebctl("leader", *self.a)
        self.assertEqual(rc, 0, err)
        self.assertIn("node_id:  n1", out)
        self.assertIn("epoch:    3", out)
        rc, out, err = ebctl("leader", "--json", *self.a)
        self.assertEqual(json.loads(out)["address"], "node-1")

    def test_health_ok_and_unhealthy(self):
        rc, out, err = ebctl("health", *self.a)
        self.assertEqual(rc, 0, err)
        self.assertIn("status: ok", out)
        self.admin.health_status = 503
        self.admin.health = {"status": "unhealthy", "reason": "zk-lost"}
        rc, out, err = ebctl("health", "--json", *self.a)
        self.assertEqual(rc, 1)
        self.assertEqual(json.loads(out)["reason"], "zk-lost")

    def test_release_posts(self):
        rc, out, err = ebctl("release", *self.a)
        self.assertEqual(rc, 0, err)
        self.assertIn("released: yes", out)
        self.assertEqual(self.admin.requests[0][:2],
                         ("POST", "/leader/release"))

    def test_token(self):
        self.admin.token = "s3cret"
        rc, out, err = ebctl("nodes", *self.a)
        self.assertEqual(rc, 1)
        self.assertIn("HTTP 401 (check --token): unauthorized", err)
        rc, out, err = ebctl("nodes", "--token", "s3cret", *self.a)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.admin.requests[-1][2], "Bearer s3cret")
        rc, out, err = ebctl("leader", *self.a,
                             env={"EBCTL_TOKEN": "s3cret"})
        self.assertEqual(rc, 0, err)

    def test_not_http_exits_1(self):
        self.admin.raw = b"garbage\r\n\r\n"
        rc, out, err = ebctl("nodes", *self.a)
        self.assertEqual(rc, 1)
        self.assertIn("malformed HTTP response", err)

    def test_admin_refused_exits_1(self):
        rc, out, err = ebctl("health", "--admin",
                             "127.0.0.1:%d" % stubs.closed_port())
        self.assertEqual(rc, 1)
        self.assertIn("Connection refused", err)


class Usage(unittest.TestCase):
    def test_usage_errors_exit_2(self):
        cases = [
            ([], "no command given"),
            (["frobnicate"], "unknown command 'frobnicate'"),
            (["send"], "wrong number of arguments"),
            (["send", "a", "{bad"], "body is not valid JSON"),
            (["send", "a", "-H", "novalue"], "header must be KEY=VALUE"),
            (["--bridge", "nohost", "send", "a"], "expected HOST:PORT"),
            (["--timeout", "soon", "nodes"], "--timeout"),
            (["--count", "2", "send", "a"], "--count is only for listen"),
            (["--cert", "c.pem", "send", "a"], "--cert and --key"),
            (["--bogus", "nodes"], "unknown option '--bogus'"),
            (["nodes", "extra"], "wrong number of arguments"),
        ]
        for args, msg in cases:
            rc, out, err = ebctl(*args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn(msg, err, args)

    def test_help_and_version(self):
        rc, out, err = ebctl("--help")
        self.assertEqual(rc, 0)
        self.assertIn("Usage: ebctl", out)
        rc, out, err = ebctl("--version")
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("ebctl "))


if __name__ == "__main__":
    unittest.main()
