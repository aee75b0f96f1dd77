"""ebctl against a real standalone ebnode: the bridge commands through
ebnode's bridge (with a Python client as the other party), the err-frame
exits (NO_HANDLERS, access_denied, RECIPIENT_FAILURE, TIMEOUT), and the
admin commands when the node runs its admin endpoint (skipped while the
node reports admin=- in its READY line). Environment: EBCTL_BIN,
EBNODE_BIN."""

import json
import os
import ssl
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import ebtest  # noqa: E402

EBCTL = os.environ.get("EBCTL_BIN", "ebctl")


def ebctl(*args, timeout=15):
    env = dict(os.environ)
    for k in ("EBCTL_BRIDGE", "EBCTL_ADMIN", "EBCTL_TOKEN"):
        env.pop(k, None)
    p = subprocess.run([EBCTL] + [str(a) for a in args],
                       capture_output=True, text=True,
                       timeout=ebtest.scaled(timeout), env=env)
    return p.returncode, p.stdout, p.stderr


class Responder(threading.Thread):
    """A bridge client that registers an address and answers requests:
    body {"fail": n} -> fails with code n, {"ignore": true} -> no answer,
    anything else -> echoes the body."""

    def __init__(self, node, address, client=None):
        super().__init__(daemon=True)
        self.c = client or ebtest.BridgeClient(*node.bridge)
        self.c.register(address)
        self.c.ping()
        self.c.recv_until(lambda f: f.get("type") == "pong")
        self.stopped = False
        self.start()

    def run(self):
        while not self.stopped:
            try:
                f = self.c.recv_frame(timeout=0.2)
            except TimeoutError:
                continue
            except (ConnectionError, OSError, ValueError):
                return
            ra = f.get("replyAddress")
            body = f.get("body")
            if f.get("type") != "message" or ra is None:
                continue
            if isinstance(body, dict) and body.get("ignore"):
                continue
            if isinstance(body, dict) and "fail" in body:
                self.c.send_frame({"type": "send", "address": ra,
                                   "failureCode": body["fail"],
                                   "message": "refused by test"})
            else:
                self.c.send(ra, body, headers={"from": "responder"})

    def stop(self):
        self.stopped = True
        self.join(ebtest.scaled(5))
        self.c.close()


class EbctlEbnode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Everything the tests use is permitted; "denied.*" is not.
        permit = [{"addressRegex": "(svc|feed|nobody|anywhere)([.].*)?"}]
        cfg = ebtest.standalone_config(bridge={"inbound": permit,
                                               "outbound": permit})
        cls.node = ebtest.EbNode(cfg, name="ctl")
        cls.b = ["--bridge", "%s:%d" % cls.node.bridge]

    @classmethod
    def tearDownClass(cls):
        cls.node.close()

    def test_request_reply_through_ebnode(self):
        r = Responder(self.node, "svc.echo")
        try:
            rc, out, err = ebctl("request", "svc.echo", '{"q":1}', "--json",
                                 *self.b)
        finally:
            r.stop()
        self.assertEqual(rc, 0, err)
        reply = json.loads(out)
        self.assertEqual(reply["body"], {"q": 1})
        self.assertEqual(reply["headers"].get("from"), "responder")

    def test_request_recipient_failure_and_timeout(self):
        r = Responder(self.node, "svc.picky")
        try:
            rc, out, err = ebctl("request", "svc.picky", '{"fail":7}',
                                 *self.b)
            self.assertEqual(rc, 1)
            self.assertIn("RECIPIENT_FAILURE (7): refused by test", err)
            rc, out, err = ebctl("request", "svc.picky", '{"ignore":true}',
                                 "--timeout", "300ms", *self.b)
            self.assertEqual(rc, 1)
            self.assertIn("TIMEOUT", err)
        finally:
            r.stop()

    def test_request_no_handlers(self):
        rc, out, err = ebctl("request", "nobody.home", "{}", *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("NO_HANDLERS", err)
        self.assertIn("nobody.home", err)

    def test_listen_receives_send_and_publish(self):
        p = subprocess.Popen([EBCTL, "listen", "feed", "--count", "3",
                              "--json", "--timeout", "20s"] + self.b,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            # Probe with short requests until one is delivered (no
            # NO_HANDLERS): then the listener is registered (no sleeps).
            c = ebtest.BridgeClient(*self.node.bridge)
            ebtest.wait_until(lambda: self._probe(c), 10,
                              "listener registered")
            rc, out, err = ebctl("send", "feed", '{"n":1}', *self.b)
            self.assertEqual(rc, 0, err)
            rc, out, err = ebctl("publish", "feed", '"second"', *self.b)
            self.assertEqual(rc, 0, err)
            out, err = p.communicate(timeout=ebtest.scaled(15))
            c.close()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        msgs = [json.loads(x) for x in out.splitlines()]
        self.assertEqual([m["body"] for m in msgs],
                         [{"probe": True}, {"n": 1}, "second"])
        self.assertIn("replyAddress", msgs[0])  # the probe was a request
        self.assertTrue(msgs[1]["send"])
        self.assertFalse(msgs[2]["send"])

    def test_listen_prints_bodies_as_they_arrived(self):
        # Issue 23: a body as Python's client writes it (", " and ": ")
        # is printed with its tokens as they came: 0.1, not
        # 0.10000000000000001; --raw prints the frame's bytes untouched.
        body = (b'{"a": 0.1, "b": 1e-07, "c": 10000000000.0, '
                b'"e": "\\u00e9", "n": 12345678901234567890}')
        outs = []
        for mode in ([], ["--json"], ["--raw"]):
            addr = "feed.exact%d" % len(outs)
            p = subprocess.Popen([EBCTL, "listen", addr, "--count", "2",
                                  "--timeout", "20s"] + mode + self.b,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            try:
                c = ebtest.BridgeClient(*self.node.bridge)
                ebtest.wait_until(lambda: self._probe(c, addr), 10,
                                  "listener registered")
                c.send_frame(b'{"type": "publish", "address": "%s", '
                             b'"body": %s}' % (addr.encode(), body))
                out, err = p.communicate(timeout=ebtest.scaled(15))
                c.close()
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            self.assertEqual(p.returncode, 0, err)
            outs.append(out.splitlines()[1])
        compact = body.replace(b", ", b",").replace(b": ", b":")
        self.assertEqual(outs[0], b"feed.exact0  " + compact +
                         b"  (publish)")
        self.assertEqual(json.loads(outs[1])["body"]["a"], 0.1)
        self.assertIn(b'"body":' + compact + b',"send":false', outs[1])
        self.assertIn(b'"body":' + body + b',"send":false', outs[2])

    def _probe(self, c, address="feed"):
        # NO_HANDLERS until the listener is there; once it is, the listener
        # gets the probe (and never replies: TIMEOUT after 200 ms).
        c.send(address, {"probe": True}, headers={"timeout": 200},
               reply_address="probe")
        f = c.recv_until(lambda f: f.get("address") == "probe", timeout=5)
        return f.get("failureType") != "NO_HANDLERS"

    def test_send_and_publish_ok(self):
        rc, out, err = ebctl("send", "anywhere", '{"a":1}', "-H", "k=v",
                             *self.b)
        self.assertEqual(rc, 0, err)
        rc, out, err = ebctl("publish", "anywhere", "[1,2]", *self.b)
        self.assertEqual(rc, 0, err)

    def test_access_denied(self):
        for cmd in (["send", "denied.x", "1"], ["publish", "denied.x", "1"],
                    ["listen", "denied.x"]):
            rc, out, err = ebctl(*cmd, *self.b)
            self.assertEqual(rc, 1, cmd)
            self.assertIn("access_denied", err, cmd)

    def test_admin_commands(self):
        if self.node.admin is None:
            self.skipTest("ebnode runs no admin endpoint yet (READY admin=-)")
        a = ["--admin", "%s:%d" % self.node.admin]
        rc, out, err = ebctl("health", *a)
        self.assertEqual(rc, 0, err)
        rc, out, err = ebctl("nodes", "--json", *a)
        self.assertEqual(rc, 0, err)
        nodes = json.loads(out)["nodes"]
        self.assertEqual(len(nodes), 1)
        rc, out, err = ebctl("nodes", *a)
        self.assertEqual(rc, 0, err)
        self.assertIn(self.node.node_id, out)
        rc, out, err = ebctl("leader", "--json", *a)
        self.assertEqual(rc, 0, err)
        self.assertIn("node_id", json.loads(out))


CERTS = os.environ.get("EB_CERTS_DIR", "")


def cert(name):
    return os.path.join(CERTS, name)


@unittest.skipUnless(CERTS and os.path.exists(cert("ca.pem")),
                     "no test PKI (EB_CERTS_DIR)")
class EbctlEbnodeTLS(unittest.TestCase):
    """ebctl's TLS client (the tls/ engine) against ebnode's TLS bridge (client auth
    required) and an admin endpoint with a token."""

    @classmethod
    def setUpClass(cls):
        cfg = ebtest.standalone_config(
            bridge={"inbound": [{}], "outbound": [{}],
                    "tls": {"cert": cert("server.pem"),
                            "key": cert("server.key"),
                            "ca": cert("ca.pem"),
                            "client_auth": "required"}},
            admin={"token": "t0ken"})
        cls.node = ebtest.EbNode(cfg, name="ctl-tls")
        cls.b = ["--bridge", "%s:%d" % cls.node.bridge]
        cls.client = ["--ca", cert("ca.pem"), "--cert", cert("client.pem"),
                      "--key", cert("client.key")]

    @classmethod
    def tearDownClass(cls):
        cls.node.close()

    def test_tls_request_with_client_cert(self):
        # The responder needs TLS too: the stdlib client.
        ctx = ssl.create_default_context(cafile=cert("ca.pem"))
        ctx.load_cert_chain(cert("client.pem"), cert("client.key"))
        r = Responder(self.node, "svc.tls", client=ebtest.BridgeClient(
            *self.node.bridge, tls_context=ctx, server_hostname="localhost"))
        try:
            rc, out, err = ebctl("request", "svc.tls", '{"secure":true}',
                                 *self.client, *self.b)
        finally:
            r.stop()
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"secure": True})

    def test_tls_without_client_cert_fails(self):
        rc, out, err = ebctl("send", "a", "1", "--ca", cert("ca.pem"),
                             *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("ebctl: send:", err)

    def test_tls_wrong_ca_fails(self):
        rc, out, err = ebctl("send", "a", "1", "--ca", cert("wrongca.pem"),
                             "--cert", cert("client.pem"), "--key",
                             cert("client.key"), *self.b)
        self.assertEqual(rc, 1)
        self.assertIn("certificate verification failed", err)

    def test_plain_client_against_tls_fails(self):
        rc, out, err = ebctl("send", "a", "1", "--timeout", "2s", *self.b)
        self.assertEqual(rc, 1)

    def test_admin_token(self):
        if self.node.admin is None:
            self.skipTest("no admin endpoint")
        a = ["--admin", "%s:%d" % self.node.admin]
        rc, out, err = ebctl("nodes", *a)
        self.assertEqual(rc, 1)
        self.assertIn("HTTP 401 (check --token)", err)
        rc, out, err = ebctl("nodes", "--token", "t0ken", *a)
        self.assertEqual(rc, 0, err)
        self.assertIn(self.node.node_id, out)


if __name__ == "__main__":
    unittest.main()
