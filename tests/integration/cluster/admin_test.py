"""Admin HTTP endpoint of a real ebnode (standalone, so no ZooKeeper):
every route's success and error cases, malformed requests, a wrong token,
oversize requests, keep-alive, and that the node survives all of it."""

import os
import socket
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import ebtest  # noqa: E402


def raw_request(host, port, data, timeout=5):
    """Sends raw bytes, returns everything the server answers until it
    closes (or the timeout)."""
    s = socket.create_connection((host, port), timeout=ebtest.scaled(timeout))
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            out += b
        return out
    finally:
        s.close()


class AdminStandalone(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = ebtest.EbNode(ebtest.standalone_config(
            node={"id": "adm-1"}), name="admin")
        cls.h, cls.p = cls.node.admin

    @classmethod
    def tearDownClass(cls):
        code = cls.node.stop()
        cls.node.close()
        assert code == 0, "ebnode exit code %r" % code

    def req(self, method, path, **kw):
        return ebtest.admin_request(self.h, self.p, method, path, **kw)

    def test_health(self):
        st, body = self.req("GET", "/health")
        self.assertEqual(st, 200)
        self.assertEqual(body["status"], "ok")
        self.assertEqual(body["reason"], "standalone")
        self.assertTrue(body["leader"])

    def test_nodes(self):
        st, body = self.req("GET", "/nodes")
        self.assertEqual(st, 200)
        self.assertEqual(len(body["nodes"]), 1)
        n = body["nodes"][0]
        self.assertEqual(n["node_id"], "adm-1")
        self.assertTrue(n["self"])
        self.assertTrue(n["leader"])
        self.assertEqual(n["epoch"], 1)
        self.assertEqual(n["admin_port"], self.p)
        self.assertEqual(body["leader"], "adm-1")

    def test_leader(self):
        st, body = self.req("GET", "/leader")
        self.assertEqual(st, 200)
        self.assertEqual(body["node_id"], "adm-1")
        self.assertEqual(body["epoch"], 1)

    def test_release(self):
        st, body = self.req("POST", "/leader/release")
        self.assertEqual(st, 200)
        self.assertTrue(body["released"])
        # Standalone: it takes leadership back at once.
        ebtest.wait_until(
            lambda: self.req("GET", "/leader")[0] == 200, 5, "leader back")

    def test_not_found_and_method(self):
        st, body = self.req("GET", "/nope")
        self.assertEqual(st, 404)
        self.assertEqual(body["error"], "not_found")
        st, body = self.req("POST", "/nodes")
        self.assertEqual(st, 405)
        st, body = self.req("GET", "/leader/release")
        self.assertEqual(st, 405)
        st, body = self.req("DELETE", "/health")
        self.assertEqual(st, 405)

    def test_query_string_ignored(self):
        st, _ = self.req("GET", "/health?verbose=1")
        self.assertEqual(st, 200)

    def test_malformed(self):
        out = raw_request(self.h, self.p, b"GARBAGE\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400 "), out)
        out = raw_request(self.h, self.p,
                          b"GET /health HTTP/1.1\r\nHost x\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400 "), out)
        out = raw_request(self.h, self.p, b"\x00\x01\x02\xff\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400 "), out)

    def test_oversize(self):
        big = b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n"
        out = raw_request(self.h, self.p, big)
        self.assertTrue(out.startswith(b"HTTP/1.1 413 "), out)
        hdrs = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100)
                        for i in range(100))
        out = raw_request(self.h, self.p,
                          b"GET /health HTTP/1.1\r\n" + hdrs + b"\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 413 "), out)
        out = raw_request(self.h, self.p,
                          b"POST /leader/release HTTP/1.1\r\n"
                          b"Content-Length: 10000000\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 413 "), out)

    def test_keep_alive(self):
        s = socket.create_connection((self.h, self.p),
                                     timeout=ebtest.scaled(5))
        try:
            for _ in range(3):
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                buf = b""
                while b"\r\n\r\n" not in buf:
                    buf += s.recv(4096)
                head, _, rest = buf.partition(b"\r\n\r\n")
                self.assertIn(b"200 OK", head)
                self.assertIn(b"Connection: keep-alive", head)
                length = int([ln for ln in head.split(b"\r\n")
                              if ln.lower().startswith(b"content-length")
                              ][0].split(b":")[1])
                while len(rest) < length:
                    rest += s.recv(4096)
        finally:
            s.close()

    def test_many_connections_bounded(self):
        socks = []
        try:
            for _ in range(80):
                socks.append(socket.create_connection(
                    (self.h, self.p), timeout=ebtest.scaled(5)))
            # Over the 64 slots, each new connection closes the oldest
            # one waiting for a request (issue 11: idle or slow clients
            # cannot lock the endpoint out): the last one is served...
            socks[-1].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            data = socks[-1].recv(4096)
            self.assertIn(b"200 OK", data)
            # ...and the oldest 16 were closed, the node alive.
            for s in socks[:16]:
                self.assertEqual(s.recv(4096), b"")
        finally:
            for s in socks:
                s.close()
        ebtest.wait_until(lambda: self.req("GET", "/health")[0] == 200, 10,
                          "admin connections released, node healthy")


class AdminToken(unittest.TestCase):
    def test_token(self):
        cfg = ebtest.standalone_config(admin={"token": "s3cret"})
        with ebtest.EbNode(cfg, name="admin-token") as node:
            h, p = node.admin
            st, body = ebtest.admin_request(h, p, "GET", "/health")
            self.assertEqual(st, 401)
            self.assertEqual(body["error"], "unauthorized")
            st, _ = ebtest.admin_request(h, p, "GET", "/nodes",
                                         token="wrong")
            self.assertEqual(st, 401)
            st, _ = ebtest.admin_request(h, p, "GET", "/nodes",
                                         token="s3cret-longer")
            self.assertEqual(st, 401)
            st, _ = ebtest.admin_request(
                h, p, "GET", "/nodes", headers={"Authorization": "s3cret"})
            self.assertEqual(st, 401)
            st, body = ebtest.admin_request(h, p, "GET", "/nodes",
                                            token="s3cret")
            self.assertEqual(st, 200)
            self.assertEqual(len(body["nodes"]), 1)
            st, _ = ebtest.admin_request(h, p, "POST", "/leader/release",
                                         token="s3cret")
            self.assertEqual(st, 200)
            # The token never appears in the log.
            self.assertNotIn("s3cret", node.log_text())
            self.assertEqual(node.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
