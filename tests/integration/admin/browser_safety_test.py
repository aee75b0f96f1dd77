"""The admin endpoint against browsers (issue 22, docs/ADMIN.md "Browsers
and other origins"), with raw HTTP headers on real sockets against real
standalone ebnode processes:

  it.admin.cross_site  a state-changing request (POST /leader/release) is
                       refused (403 cross_site) with a foreign Origin, with
                       Sec-Fetch-Site cross-site or same-site, and without
                       a token when it lacks X-Ebnode-Admin; the node keeps
                       leading (its elections count does not move); its own
                       origin, ebctl's header and a configured origin may
                       write; with a token a foreign Origin is still refused
  it.admin.cors        no CORS header by default (GET from a foreign
                       Origin, a preflight refused 403), the configured
                       origins echoed (GET and a write preflight approving
                       X-Ebnode-Admin), "*" on GET only with a token; a bad
                       admin.cors_origins fails --check naming the key
  it.admin.cluster_view  two nodes on the ZooKeeper fixture: GET
                       /cluster/metrics on b holds b's and a's /metrics
                       text, gathered over the link (401 without the
                       token); a bridge client of b permitted to send to
                       "ebnode." addresses asks a's internal address and
                       is refused (RECIPIENT_FAILURE 403), 20 views in a
                       row on one keep-alive connection, a member that
                       stops shows as not ok

On the code before this change the first POST answers 200 released and the
GET answers carry Access-Control-Allow-Origin: *."""

import http.client
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import ebtest  # noqa: E402
import promtext  # noqa: E402

EVIL = "http://evil.example"
GOOD = "http://good.example:8080"


def raw(node, method, path, headers, token=None):
    """One request with exactly these headers (http.client adds Host,
    Accept-Encoding and, for POST, Content-Length): (status, headers dict
    with lower-case names, body text)."""
    conn = http.client.HTTPConnection(*node.admin,
                                      timeout=ebtest.scaled(10))
    try:
        hdrs = dict(headers)
        if token is not None:
            hdrs["Authorization"] = "Bearer %s" % token
        conn.request(method, path, body=b"" if method == "POST" else None,
                     headers=hdrs)
        r = conn.getresponse()
        body = r.read().decode("utf-8", errors="replace")
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


def elections(node, token=None):
    st, text = ebtest.admin_request(*node.admin, "GET", "/metrics",
                                    token=token)
    assert st == 200, (st, text)
    return promtext.parse(text).value("ebnode_leader_elections_total")


class CrossSite(unittest.TestCase):
    def test_writes_refused_without_token(self):
        # The default configuration: no token, no origins.
        with ebtest.EbNode(ebtest.standalone_config(),
                           name="admin-xsite") as node:
            own = "http://%s:%d" % node.admin
            e0 = elections(node)
            refused = [
                # The reproduction: what a page of another site
                # makes a browser send.
                {"Origin": EVIL, "Sec-Fetch-Site": "cross-site"},
                # Each signal alone, even with the CSRF header.
                {"Origin": EVIL, "X-Ebnode-Admin": "1"},
                {"Sec-Fetch-Site": "cross-site", "X-Ebnode-Admin": "1"},
                # Another port of the same host is the same site.
                {"Sec-Fetch-Site": "same-site", "X-Ebnode-Admin": "1"},
                {"Origin": "null", "X-Ebnode-Admin": "1"},
                {"Origin": own + "0", "X-Ebnode-Admin": "1"},
                # A form or simple fetch of an old browser: no Origin, no
                # Sec-Fetch-Site, and no custom header either.
                {},
                {"X-Ebnode-Admin": ""},
            ]
            for hdrs in refused:
                st, _, body = raw(node, "POST", "/leader/release", hdrs)
                self.assertEqual(st, 403, (hdrs, body))
                self.assertIn('"cross_site"', body)
            # PUT/DELETE to a path with a POST route: refused before the
            # 405, like any state-changing method.
            st, _, _ = raw(node, "DELETE", "/leader/release",
                           {"Origin": EVIL})
            self.assertEqual(st, 403)
            # The node kept leading: no release happened.
            self.assertEqual(elections(node), e0)
            st, body = ebtest.admin_request(*node.admin, "GET", "/leader")
            self.assertEqual(st, 200)
            self.assertEqual(node.log_text().count("election: revoked"), 0)

            # Allowed: its own origin (a page it served), ebctl's header
            # alone; each releases (and standalone takes leadership back
            # at once).
            allowed = [
                {"Origin": own, "Sec-Fetch-Site": "same-origin",
                 "X-Ebnode-Admin": "1"},
                {"X-Ebnode-Admin": "1"},
                {"Sec-Fetch-Site": "none", "X-Ebnode-Admin": "yes"},
            ]
            for i, hdrs in enumerate(allowed):
                st, h, body = raw(node, "POST", "/leader/release", hdrs)
                self.assertEqual(st, 200, (hdrs, body))
                self.assertIn('"released":true', body)
                ebtest.wait_until(lambda: elections(node) == e0 + i + 1, 5,
                                  "leadership back after release %d" % i)
                # Writes never carry CORS headers.
                self.assertNotIn("access-control-allow-origin", h)
            self.assertIn("cross-site-refused", node.log_text())
            self.assertEqual(node.stop(), 0)

    def test_configured_origin_may_write(self):
        cfg = ebtest.standalone_config(admin={"cors_origins": GOOD})
        with ebtest.EbNode(cfg, name="admin-xsite-origin") as node:
            e0 = elections(node)
            st, _, body = raw(node, "POST", "/leader/release",
                              {"Origin": GOOD, "Sec-Fetch-Site":
                               "cross-site"})
            self.assertEqual(st, 403, body)  # still needs the header
            st, _, body = raw(node, "POST", "/leader/release",
                              {"Origin": EVIL, "Sec-Fetch-Site":
                               "cross-site", "X-Ebnode-Admin": "1"})
            self.assertEqual(st, 403, body)
            self.assertEqual(elections(node), e0)
            st, _, body = raw(node, "POST", "/leader/release",
                              {"Origin": GOOD, "Sec-Fetch-Site":
                               "cross-site", "X-Ebnode-Admin": "1"})
            self.assertEqual(st, 200, body)
            self.assertEqual(node.stop(), 0)

    def test_token_does_not_admit_foreign_pages(self):
        cfg = ebtest.standalone_config(admin={"token": "t0k"})
        with ebtest.EbNode(cfg, name="admin-xsite-token") as node:
            e0 = elections(node, "t0k")
            # A page holding the token is still refused from elsewhere.
            st, _, body = raw(node, "POST", "/leader/release",
                              {"Origin": EVIL, "Sec-Fetch-Site":
                               "cross-site"}, token="t0k")
            self.assertEqual(st, 403, body)
            # Without the token: 401 (the token is the CSRF proof).
            st, _, _ = raw(node, "POST", "/leader/release",
                           {"X-Ebnode-Admin": "1"})
            self.assertEqual(st, 401)
            self.assertEqual(elections(node, "t0k"), e0)
            # With the token, no custom header is needed.
            st, _, body = raw(node, "POST", "/leader/release", {},
                              token="t0k")
            self.assertEqual(st, 200, body)
            self.assertEqual(node.stop(), 0)


class Cors(unittest.TestCase):
    def test_no_cors_by_default(self):
        with ebtest.EbNode(ebtest.standalone_config(),
                           name="admin-cors-default") as node:
            for path in ("/config", "/nodes", "/bridge", "/subscriptions",
                         "/metrics", "/health", "/leader"):
                st, h, _ = raw(node, "GET", path, {"Origin": EVIL})
                self.assertEqual(st, 200, path)
                self.assertNotIn("access-control-allow-origin", h, path)
            # The preflight a foreign page needs to send a header (or to
            # read with one) is refused.
            for path, m in (("/nodes", "GET"), ("/leader/release", "POST")):
                st, h, _ = raw(node, "OPTIONS", path, {
                    "Origin": EVIL, "Access-Control-Request-Method": m,
                    "Access-Control-Request-Headers": "x-ebnode-admin"})
                self.assertEqual(st, 403, path)
                self.assertNotIn("access-control-allow-origin", h)
            self.assertEqual(node.stop(), 0)

    def test_configured_origins_and_token(self):
        cfg = ebtest.standalone_config(
            admin={"cors_origins": "https://a.example, " + GOOD})
        with ebtest.EbNode(cfg, name="admin-cors-origins") as node:
            st, h, _ = raw(node, "GET", "/nodes", {"Origin": GOOD})
            self.assertEqual(st, 200)
            self.assertEqual(h.get("access-control-allow-origin"), GOOD)
            self.assertEqual(h.get("vary"), "Origin")
            st, h, _ = raw(node, "GET", "/nodes", {"Origin": EVIL})
            self.assertNotIn("access-control-allow-origin", h)
            st, h, _ = raw(node, "OPTIONS", "/leader/release", {
                "Origin": GOOD, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "x-ebnode-admin"})
            self.assertEqual(st, 204)
            self.assertEqual(h.get("access-control-allow-origin"), GOOD)
            self.assertIn("X-Ebnode-Admin",
                          h.get("access-control-allow-headers", ""))
            self.assertIn("POST", h.get("access-control-allow-methods", ""))
            self.assertEqual(node.stop(), 0)
        cfg = ebtest.standalone_config(admin={"token": "t0k"})
        with ebtest.EbNode(cfg, name="admin-cors-token") as node:
            # With a token any page may read, with the token only.
            st, h, _ = raw(node, "GET", "/nodes", {"Origin": EVIL}, "t0k")
            self.assertEqual(st, 200)
            self.assertEqual(h.get("access-control-allow-origin"), "*")
            st, h, _ = raw(node, "GET", "/nodes", {"Origin": EVIL})
            self.assertEqual(st, 401)
            self.assertEqual(h.get("access-control-allow-origin"), "*")
            # But a write preflight from it is not approved.
            st, h, _ = raw(node, "OPTIONS", "/leader/release", {
                "Origin": EVIL, "Access-Control-Request-Method": "POST"})
            self.assertEqual(st, 403)
            self.assertEqual(node.stop(), 0)

    def test_bad_origins_fail_check(self):
        for bad in ("*", "http://a.example/", "evil.example",
                    "http://a.example:99999x", "http://"):
            cfg = ebtest.standalone_config(admin={"cors_origins": bad})
            r = ebtest.run_ebnode(["--check"], config=cfg)
            self.assertNotEqual(r.code, 0, bad)
            self.assertIn("admin.cors_origins", r.stderr, bad)
        cfg = ebtest.standalone_config(
            admin={"cors_origins": "http://[::1]:7100 https://x.example"})
        r = ebtest.run_ebnode(["--check"], config=cfg)
        self.assertEqual(r.code, 0, r.stderr)


class ClusterView(unittest.TestCase):
    def test_gather_and_bridge_refused(self):
        root = ebtest.unique_root()
        token = "cv-t0k"
        admin = {"token": token}
        ca = ebtest.cluster_config(root, "a", admin=admin)
        cb = ebtest.cluster_config(root, "b", admin=admin, bridge={
            "inbound": [{"addressRegex": "ebnode\\..+"}]})
        with ebtest.EbNode(ca, name="cv-a") as a, \
                ebtest.EbNode(cb, name="cv-b") as b:
            st, _ = ebtest.admin_request(*b.admin, "GET", "/cluster/metrics")
            self.assertEqual(st, 401)

            def both():
                st, body = ebtest.admin_request(
                    *b.admin, "GET", "/cluster/metrics", token=token)
                self.assertEqual(st, 200, body)
                ok = {n["node_id"]: n for n in body["nodes"] if n["ok"]}
                return body if set(ok) == {"a", "b"} else None
            body = ebtest.wait_until(both, 20, "a and b in b's view")
            self.assertEqual(body["node_id"], "b")
            self.assertEqual([n["node_id"] for n in body["nodes"]][0], "b")
            self.assertTrue(body["nodes"][0]["self"])
            for n in body["nodes"]:
                m = promtext.parse(n["metrics"], prefix="ebnode_")
                info = m.samples("ebnode_info")
                self.assertEqual(len(info), 1)
                self.assertEqual(info[0][0]["node_id"], n["node_id"])
                self.assertEqual(info[0][0]["mode"], "clustered")
            # Keep-alive: 20 views in a row on one connection (the
            # asynchronous answer is written outside the read callback,
            # so the client's next request may come before its write
            # callback: it is held, never a reason to close).
            conn = http.client.HTTPConnection(*b.admin,
                                              timeout=ebtest.scaled(10))
            try:
                for i in range(20):
                    conn.request("GET", "/cluster/metrics",
                                 headers={"Authorization": "Bearer " + token})
                    r = conn.getresponse()
                    self.assertEqual(r.status, 200, i)
                    self.assertEqual(len(json.loads(r.read())["nodes"]), 2)
            finally:
                conn.close()
            # A bridge client is not a member: refused even when
            # bridge.inbound lets it reach "ebnode." addresses.
            c = ebtest.BridgeClient(*b.bridge)
            try:
                c.send("ebnode.admin.metrics.a", {}, reply_address="r1")
                f = c.recv_frame(timeout=ebtest.scaled(5))
                self.assertEqual((f["type"], f.get("failureType"),
                                  f.get("failureCode"), f.get("message")),
                                 ("err", "RECIPIENT_FAILURE", 403,
                                  "forbidden"), f)
            finally:
                c.close()
            # a stops: b shows it as not ok (no handler any more, or the
            # link down), within the 1 s bound per member.
            self.assertEqual(a.stop(), 0)

            def a_gone():
                st, body = ebtest.admin_request(
                    *b.admin, "GET", "/cluster/metrics", token=token)
                rows = {n["node_id"]: n for n in body["nodes"]}
                return "a" not in rows or not rows["a"]["ok"]
            ebtest.wait_until(a_gone, 20, "a not ok in b's view")
            self.assertEqual(b.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
