"""Admin endpoint observability routes against real ebnode processes:
GET /metrics (parsed by the strict promtext parser), /subscriptions and
/bridge, plus the admin endpoint's token/404/405 behaviour for them.

Cases (the ctest name's last part selects a class on the command line):
  it.admin.promtext       the parser rejects what it must (no ebnode)
  it.admin.metrics        standalone: traffic through the bridge moves the
                          counters (ingress, frames, errors, bus, latency)
  it.admin.routes         /subscriptions, /bridge, token, 404, 405
  it.admin.metrics_cluster  two nodes on the ZooKeeper fixture: role, epoch,
                          members, session state, links, ingress through a
                          follower, a leadership change
"""

import os
import socket
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import ebtest  # noqa: E402
import promtext  # noqa: E402

PROM_CTYPE = "text/plain; version=0.0.4"
ODD_ADDRESS = 'odd"addr\\with\nnewline'


def scrape(node, token=None):
    """GET /metrics: (status, content type, text), checked to be 200 and
    the 0.0.4 content type by the callers that parse it."""
    import http.client
    conn = http.client.HTTPConnection(*node.admin,
                                      timeout=ebtest.scaled(10))
    try:
        hdrs = {}
        if token is not None:
            hdrs["Authorization"] = "Bearer %s" % token
        conn.request("GET", "/metrics", headers=hdrs)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type", ""), \
            r.read().decode("utf-8")
    finally:
        conn.close()


def metrics(testcase, node, token=None):
    st, ctype, text = scrape(node, token)
    testcase.assertEqual(st, 200, text[:300])
    testcase.assertTrue(ctype.startswith(PROM_CTYPE), ctype)
    return promtext.parse(text, prefix="ebnode_")


def standalone(**sections):
    base = {
        "bridge": {"inbound": [{"address": "external.ingress"},
                               {"address": "plain"}],
                   "outbound": [{"address": "orders"},
                                {"addressRegex": "odd.*"}]},
        "ingress": {"routes": [{"header": "kind", "equals": "order",
                                "to": "orders"}]},
    }
    return ebtest.standalone_config(**ebtest.merge(base, sections))


class Consumer:
    """A bridge client registered on an address; reads its messages."""

    def __init__(self, node, address):
        self.c = ebtest.BridgeClient(*node.bridge)
        self.c.register(address)

    def local_port(self):
        return self.c.sock.getsockname()[1]

    def expect(self, n, address):
        got = []
        while len(got) < n:
            f = self.c.recv_frame(timeout=10)
            if f.get("type") == "message" and f.get("address") == address:
                got.append(f)
        return got

    def close(self):
        self.c.close()


def wait_registered(node, address, handlers=1):
    """Registration is asynchronous for the test (a frame): wait until
    /subscriptions shows it."""
    def ok():
        st, body = ebtest.admin_request(*node.admin, "GET", "/subscriptions")
        if st != 200:
            return False
        for s in body["subscriptions"]:
            if s["address"] == address and s["handlers"] >= handlers:
                return s
        return False
    return ebtest.wait_until(ok, 10, "%s registered" % address)


def start_node(testcase, config, name):
    """Starts ebnode; at cleanup it must stop cleanly on SIGTERM with exit
    code 0 (a sanitizer report or a crash fails the test)."""
    node = ebtest.EbNode(config, name=name)

    def stop():
        code = node.stop()
        log = node.log_text()[-3000:] if code != 0 else ""
        node.close()
        testcase.assertEqual(code, 0, "%s exited with %r:\n%s" % (
            name, code, log))
    testcase.addCleanup(stop)
    return node


def request(client, address, body, headers, reply):
    client.send(address, body, headers=headers, reply_address=reply)
    return client.recv_until(lambda f: f.get("address") == reply, 10)


class PromText(unittest.TestCase):
    """The parser is strict: each bad input must be rejected."""

    GOOD = ("# HELP a_total A.\n# TYPE a_total counter\n"
            "a_total{x=\"q\\\"\\\\\\n\"} 1\n"
            "# HELP h H.\n# TYPE h histogram\n"
            "h_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
            "h_sum 0.3\nh_count 2\n"
            "# HELP g G.\n# TYPE g gauge\ng -1.5e3\ng{y=\"1\"} NaN\n")

    BAD = {
        "no trailing newline": "# HELP g G.\n# TYPE g gauge\ng 1",
        "sample before TYPE": "# HELP g G.\ng 1\n# TYPE g gauge\n",
        "no HELP": "# TYPE g gauge\ng 1\n",
        "TYPE twice": "# HELP g G.\n# TYPE g gauge\n# TYPE g gauge\ng 1\n",
        "bad type": "# HELP g G.\n# TYPE g meter\ng 1\n",
        "bad name": "# HELP g G.\n# TYPE g gauge\n1g 1\n",
        "bad label name": "# HELP g G.\n# TYPE g gauge\ng{1a=\"x\"} 1\n",
        "reserved label": "# HELP g G.\n# TYPE g gauge\ng{__a=\"x\"} 1\n",
        "label twice": "# HELP g G.\n# TYPE g gauge\ng{a=\"x\",a=\"y\"} 1\n",
        "bad escape": "# HELP g G.\n# TYPE g gauge\ng{a=\"\\t\"} 1\n",
        "unterminated": "# HELP g G.\n# TYPE g gauge\ng{a=\"x} 1\n",
        "bad value": "# HELP g G.\n# TYPE g gauge\ng 1,5\n",
        "no value": "# HELP g G.\n# TYPE g gauge\ng\n",
        "duplicate series": "# HELP g G.\n# TYPE g gauge\ng 1\ng 2\n",
        "duplicate reordered": "# HELP g G.\n# TYPE g gauge\n"
                               "g{a=\"1\",b=\"2\"} 1\ng{b=\"2\",a=\"1\"} 1\n",
        "split group": "# HELP g G.\n# TYPE g gauge\ng{a=\"1\"} 1\n"
                       "# HELP f F.\n# TYPE f gauge\nf 1\ng{a=\"2\"} 1\n",
        "counter name": "# HELP c C.\n# TYPE c counter\nc 1\n",
        "negative counter": "# HELP c_total C.\n# TYPE c_total counter\n"
                            "c_total -1\n",
        "not cumulative": "# HELP h H.\n# TYPE h histogram\n"
                          "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                          "h_sum 1\nh_count 1\n",
        "inf != count": "# HELP h H.\n# TYPE h histogram\n"
                        "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\n"
                        "h_sum 1\nh_count 2\n",
        "no +Inf": "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\n"
                   "h_sum 1\nh_count 1\n",
        "le order": "# HELP h H.\n# TYPE h histogram\n"
                    "h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
                    "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "no _sum": "# HELP h H.\n# TYPE h histogram\n"
                   "h_bucket{le=\"+Inf\"} 1\nh_count 1\n",
        "le on gauge": "# HELP g G.\n# TYPE g gauge\ng{le=\"1\"} 1\n",
        "trailing space": "# HELP g G.\n# TYPE g gauge\ng 1 \n",
        "bad HELP escape": "# HELP g G\\x.\n# TYPE g gauge\ng 1\n",
    }

    def test_good(self):
        m = promtext.parse(self.GOOD)
        self.assertEqual(m.value("a_total", x="q\"\\\n"), 1.0)
        self.assertEqual(m.value("h_count"), 2.0)
        self.assertEqual(m.value("g"), -1500.0)

    def test_bad(self):
        for what, text in self.BAD.items():
            with self.subTest(what):
                with self.assertRaises(promtext.ParseError):
                    promtext.parse(text)

    def test_prefix(self):
        with self.assertRaises(promtext.ParseError):
            promtext.parse(self.GOOD, prefix="ebnode_")


class Metrics(unittest.TestCase):
    def test_traffic_moves_counters(self):
        node = start_node(self, standalone(), "metrics")
        m0 = metrics(self, node)
        self.assertEqual(m0.value("ebnode_leader"), 1)
        self.assertEqual(m0.value("ebnode_epoch"), 1)
        self.assertEqual(m0.value("ebnode_members"), 1)
        self.assertEqual(m0.value("ebnode_zk_session_state",
                                  state="standalone"), 1)
        self.assertEqual(sum(v for _, v in m0.samples(
            "ebnode_zk_session_state")), 1)
        self.assertEqual(m0.value("ebnode_ingress_received_total"), 0)
        self.assertEqual(m0.value(
            "ebnode_ingress_request_duration_seconds_count"), 0)
        self.assertGreater(m0.value(
            "ebnode_process_resident_memory_bytes"), 1 << 20)
        self.assertGreaterEqual(m0.value("ebnode_uptime_seconds"), 0)

        consumer = Consumer(node, "orders")
        self.addCleanup(consumer.close)
        odd = Consumer(node, ODD_ADDRESS)
        self.addCleanup(odd.close)
        wait_registered(node, "orders")
        wait_registered(node, ODD_ADDRESS)
        client = ebtest.BridgeClient(*node.bridge)
        self.addCleanup(client.close)

        n = 20
        for i in range(n):
            f = request(client, "external.ingress", {"i": i},
                        {"kind": "order"}, "r%d" % i)
            self.assertEqual(f["type"], "message", f)
            self.assertEqual(f["body"]["status"], "ok", f)
        consumer.expect(n, "orders")
        # One ingress request no rule routes: a 404 failure.
        f = request(client, "external.ingress", {"x": 1}, {"kind": "other"},
                    "unrouted")
        self.assertEqual(f["type"], "err", f)
        self.assertEqual(f["failureCode"], 404, f)
        # A malformed frame (err saying why), an unknown type (err), a
        # ping (pong), a send nobody may make (access_denied).
        client.send_frame(b"this is not json")
        f = client.recv_until(lambda f: f.get("type") == "err", 10)
        self.assertEqual(f["message"], "invalid_json: not a JSON object")
        client.send_frame({"type": "bogus", "address": "x"})
        f = client.recv_until(lambda f: f.get("type") == "err", 10)
        self.assertEqual(f["message"], "unknown_type")
        client.ping()
        client.recv_until(lambda f: f.get("type") == "pong", 10)
        client.send("forbidden", {"no": 1})
        f = client.recv_until(lambda f: f.get("type") == "err", 10)
        self.assertEqual(f["message"], "access_denied")

        m1 = metrics(self, node)
        self.assertGreaterEqual(m1.value("ebnode_uptime_seconds"),
                                m0.value("ebnode_uptime_seconds"))

        def delta(name, **labels):
            return m1.value(name, **labels) - m0.value(name, **labels)

        # Ingress: 20 acknowledged plus one failed (unrouted).
        self.assertEqual(delta("ebnode_ingress_received_total"), n + 1)
        self.assertEqual(delta("ebnode_ingress_forwarded_total"), n + 1)
        self.assertEqual(delta("ebnode_ingress_acked_total"), n)
        self.assertEqual(delta("ebnode_ingress_routed_total"), n)
        self.assertEqual(delta("ebnode_ingress_unrouted_total"), 1)
        self.assertEqual(delta("ebnode_ingress_failed_total"), 1)
        self.assertEqual(delta("ebnode_ingress_held_total"), 0)
        self.assertEqual(m1.value("ebnode_ingress_holding"), 0)
        self.assertEqual(m1.value("ebnode_ingress_leading"), 1)
        self.assertEqual(delta(
            "ebnode_ingress_request_duration_seconds_count"), n + 1)
        self.assertGreater(m1.value(
            "ebnode_ingress_request_duration_seconds_sum"), 0)
        # Loopback answers: all well under a second.
        self.assertEqual(m1.value(
            "ebnode_ingress_request_duration_seconds_bucket", le="1"), n + 1)
        # Bridge frames by direction and type.
        self.assertEqual(delta("ebnode_bridge_frames_total",
                               direction="in", type="send"), n + 2)
        self.assertEqual(delta("ebnode_bridge_frames_total",
                               direction="in", type="register"), 2)
        self.assertEqual(delta("ebnode_bridge_frames_total",
                               direction="in", type="malformed"), 1)
        self.assertEqual(delta("ebnode_bridge_frames_total",
                               direction="in", type="unknown"), 1)
        self.assertEqual(delta("ebnode_bridge_frames_total",
                               direction="in", type="ping"), 1)
        self.assertEqual(delta("ebnode_bridge_frames_total",
                               direction="out", type="pong"), 1)
        # Acks plus deliveries to the consumer.
        self.assertEqual(delta("ebnode_bridge_frames_total",
                               direction="out", type="message"), 2 * n)
        # unrouted failure, invalid_json, unknown_type, access_denied
        self.assertEqual(delta("ebnode_bridge_frames_total",
                               direction="out", type="err"), 4)
        self.assertEqual(m1.value("ebnode_bridge_connections"), 3)
        self.assertEqual(delta("ebnode_bridge_connections_accepted_total"),
                         3)
        self.assertEqual(m1.value("ebnode_bridge_consumers"), 2)
        # Errors by type.
        for t, d in (("bridge_malformed_frame", 1),
                     ("bridge_unknown_type", 1),
                     ("bridge_access_denied", 1), ("ingress_unrouted", 1),
                     ("ingress_failed", 1), ("bridge_auth_failed", 0)):
            with self.subTest(error=t):
                self.assertEqual(delta("ebnode_errors_total", type=t), d)
        # Bus per address: the router sent n to orders, its handler (the
        # bridge consumer) received them.
        self.assertEqual(m1.value("ebnode_bus_messages_total",
                                  address="orders", kind="sent"), n)
        self.assertEqual(m1.value("ebnode_bus_messages_total",
                                  address="orders", kind="received"), n)
        self.assertEqual(m1.value("ebnode_bus_handlers",
                                  address="orders", where="local"), 1)
        # The odd address round-trips through the label escaping.
        self.assertEqual(m1.value("ebnode_bus_handlers",
                                  address=ODD_ADDRESS, where="local"), 1)
        self.assertGreaterEqual(m1.value("ebnode_bus_addresses"), 4)
        self.assertGreaterEqual(delta("ebnode_bus_messages_all_total",
                                      kind="sent"), n)

        # Closing the connections is counted (reason other: peer closed).
        client.close()
        consumer.close()
        odd.close()
        ebtest.wait_until(
            lambda: metrics(self, node).value(
                "ebnode_bridge_connections") == 0, 10, "connections closed")
        m2 = metrics(self, node)
        self.assertEqual(
            m2.value("ebnode_bridge_connections_closed_total",
                     reason="other") -
            m0.value("ebnode_bridge_connections_closed_total",
                     reason="other"), 3)
        self.assertEqual(m2.value("ebnode_bridge_consumers"), 0)

    def test_refused_and_idle_closes(self):
        node = start_node(self, standalone(bridge={
            "max_connections": 1, "idle_timeout_ms": 1000}), "limits")
        first = ebtest.BridgeClient(*node.bridge)
        self.addCleanup(first.close)
        first.ping()
        first.recv_until(lambda f: f.get("type") == "pong", 10)
        second = ebtest.BridgeClient(*node.bridge)
        self.addCleanup(second.close)
        self.assertTrue(second.wait_closed(10), "over the limit: refused")
        # The idle timeout closes the first one.
        self.assertTrue(first.wait_closed(10), "idle connection closed")
        m = ebtest.wait_until(
            lambda: (lambda m: m.value("ebnode_bridge_connections") == 0
                     and m)(metrics(self, node)), 10, "no connections")
        self.assertEqual(m.value("ebnode_bridge_connections_refused_total"),
                         1)
        self.assertEqual(m.value("ebnode_bridge_connections_accepted_total"),
                         1)
        self.assertEqual(m.value("ebnode_bridge_connections_closed_total",
                                 reason="idle"), 1)
        self.assertEqual(m.value("ebnode_bridge_connections_closed_total",
                                 reason="other"), 0)

    def test_bus_series_are_bounded(self):
        """Many addresses: at most 32 get per-address series, the busiest
        ones."""
        node = start_node(self, standalone(bridge={"outbound": [
            {"addressRegex": "many\\..*"}, {"address": "orders"}]}),
            "bounded")
        clients = []
        self.addCleanup(lambda: [c.close() for c in clients])
        c = ebtest.BridgeClient(*node.bridge)
        clients.append(c)
        for i in range(50):
            c.register("many.%02d" % i)
        busy = Consumer(node, "orders")
        clients.append(busy.c)
        wait_registered(node, "many.49")
        wait_registered(node, "orders")
        client = ebtest.BridgeClient(*node.bridge)
        clients.append(client)
        for i in range(3):
            f = request(client, "external.ingress", {"i": i},
                        {"kind": "order"}, "r%d" % i)
            self.assertEqual(f["type"], "message", f)
        m = metrics(self, node)
        addrs = {lab["address"] for lab, _ in
                 m.samples("ebnode_bus_messages_total")}
        self.assertEqual(len(addrs), 32)
        self.assertIn("orders", addrs)
        self.assertGreaterEqual(m.value("ebnode_bus_addresses"), 52)
        self.assertEqual(len(m.samples("ebnode_bus_messages_total")),
                         32 * 6)


class Routes(unittest.TestCase):
    TOKEN = "s3cret-token"

    def setUp(self):
        self.node = start_node(self, standalone(
            admin={"token": self.TOKEN}), "routes")

    def get(self, path, token=TOKEN, method="GET"):
        return ebtest.admin_request(*self.node.admin, method, path,
                                    token=token)

    def test_subscriptions(self):
        consumer = Consumer(self.node, "orders")
        self.addCleanup(consumer.close)
        ebtest.wait_until(
            lambda: any(s["address"] == "orders" for s in
                        self.get("/subscriptions")[1]["subscriptions"]),
            10, "orders listed")
        client = ebtest.BridgeClient(*self.node.bridge)
        self.addCleanup(client.close)
        for i in range(3):
            f = request(client, "external.ingress", {"i": i},
                        {"kind": "order"}, "r%d" % i)
            self.assertEqual(f["type"], "message", f)
        consumer.expect(3, "orders")
        st, body = self.get("/subscriptions")
        self.assertEqual(st, 200)
        subs = {s["address"]: s for s in body["subscriptions"]}
        self.assertEqual(list(subs), sorted(subs))
        self.assertEqual(body["matched"], len(subs))
        self.assertEqual(body["totals"]["addresses"], len(subs))
        self.assertFalse(body["truncated"])
        self.assertEqual((body["prefix"], body["limit"]), ("", 1000))
        o = subs["orders"]
        self.assertEqual((o["handlers"], o["remote_handlers"],
                          o["remote_nodes"]), (1, 0, 0))
        self.assertEqual((o["sent"], o["received"]), (3, 3))
        gw = subs["external.ingress"]
        self.assertEqual(gw["handlers"], 1)
        self.assertEqual(gw["local_only_handlers"], 1)
        self.assertEqual(gw["received"], 3)
        self.assertIn("__ebnode.ingress.leader", subs)
        self.assertGreaterEqual(body["totals"]["sent"], 3)
        for k in ("pending_requests", "no_handlers", "published",
                  "received", "replied", "failed", "dropped"):
            self.assertIn(k, body["totals"])
        # prefix and limit (percent-decoded); bad queries are a 400.
        st, body = self.get("/subscriptions?prefix=ord")
        self.assertEqual([s["address"] for s in body["subscriptions"]],
                         ["orders"])
        st, body = self.get("/subscriptions?prefix=%5f%5Febnode.&limit=5")
        self.assertEqual([s["address"] for s in body["subscriptions"]],
                         ["__ebnode.ingress.leader"])
        st, body = self.get("/subscriptions?limit=1")
        self.assertEqual(st, 200)
        self.assertEqual(len(body["subscriptions"]), 1)
        self.assertTrue(body["truncated"])
        self.assertEqual(body["matched"], len(subs))
        self.assertEqual(body["subscriptions"][0]["address"], min(subs))
        for q in ("limit=-1", "limit=100001", "limit=x", "prefix=%zz",
                  "prefix=%00", "bogus=1"):
            with self.subTest(query=q):
                st, body = self.get("/subscriptions?" + q)
                self.assertEqual(st, 400, body)
                self.assertEqual(body["error"], "bad_request")
        # Unregistered: the address goes away with its consumer.
        consumer.c.unregister("orders")
        ebtest.wait_until(
            lambda: all(s["address"] != "orders" for s in
                        self.get("/subscriptions")[1]["subscriptions"]),
            10, "orders gone")

    def test_bridge(self):
        consumer = Consumer(self.node, "orders")
        self.addCleanup(consumer.close)
        client = ebtest.BridgeClient(*self.node.bridge)
        self.addCleanup(client.close)
        client.ping()
        client.recv_until(lambda f: f.get("type") == "pong", 10)
        ebtest.wait_until(lambda: self.get("/bridge")[1]["stats"]
                          ["consumers"] == 1, 10, "consumer counted")
        st, body = self.get("/bridge")
        self.assertEqual(st, 200)
        self.assertTrue(body["enabled"])
        self.assertFalse(body["tls"])
        self.assertEqual(body["port"], self.node.bridge[1])
        s = body["stats"]
        self.assertEqual(s["connections_open"], 2)
        self.assertEqual(s["accepted"], 2)
        self.assertEqual(s["frames_in"]["ping"], 1)
        self.assertEqual(s["frames_in"]["register"], 1)
        self.assertEqual(s["frames_out"]["pong"], 1)
        conns = {c["peer"]: c for c in body["connections"]}
        self.assertEqual(len(conns), 2)
        me = conns["127.0.0.1:%d" % client.sock.getsockname()[1]]
        self.assertEqual((me["frames_in"], me["frames_out"]), (1, 1))
        self.assertEqual((me["consumers"], me["tls"]), (0, False))
        self.assertGreaterEqual(me["age_ms"], 0)
        self.assertIn("queued_bytes", me)
        self.assertIn("pending_replies", me)
        other = conns["127.0.0.1:%d" % consumer.local_port()]
        self.assertEqual(other["consumers"], 1)
        self.assertLess(other["id"], me["id"])  # accept order
        self.assertEqual([c["id"] for c in body["connections"]],
                         sorted(c["id"] for c in body["connections"]))

    def test_token_404_405(self):
        for path in ("/metrics", "/subscriptions", "/bridge"):
            with self.subTest(path=path):
                st, body = self.get(path, token=None)
                self.assertEqual(st, 401, body)
                self.assertEqual(body["error"], "unauthorized")
                st, body = self.get(path, token="wrong")
                self.assertEqual(st, 401, body)
                st, _ = self.get(path)
                self.assertEqual(st, 200)
                for method in ("POST", "PUT", "DELETE"):
                    st, body = self.get(path, method=method)
                    self.assertEqual(st, 405, (method, body))
                    self.assertEqual(body["error"], "method_not_allowed")
                # Unauthenticated, a wrong method is still a 401.
                st, _ = self.get(path, token=None, method="POST")
                self.assertEqual(st, 401)
        st, body = self.get("/metricz")
        self.assertEqual(st, 404, body)
        self.assertEqual(body["error"], "not_found")
        st, _ = self.get("/metrics/extra")
        self.assertEqual(st, 404)
        # A query string does not change the route.
        st, text = self.get("/metrics?x=1")
        self.assertEqual(st, 200)
        promtext.parse(text, prefix="ebnode_")
        # With the token, the metrics parse; the WWW-Authenticate header
        # comes with a 401 (raw check).
        st, ctype, text = scrape(self.node, token=self.TOKEN)
        self.assertEqual(st, 200)
        self.assertTrue(ctype.startswith(PROM_CTYPE))
        with socket.create_connection(self.node.admin,
                                      timeout=ebtest.scaled(5)) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                      b"Connection: close\r\n\r\n")
            raw = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                raw += chunk
        head = raw.split(b"\r\n\r\n", 1)[0].decode()
        self.assertTrue(head.startswith("HTTP/1.1 401"), head)
        self.assertIn("WWW-Authenticate: Bearer", head)
        self.assertIn("Access-Control-Allow-Origin: *", head)

        # CORS for the GET routes (another member's dashboard reads them):
        # the preflight is open, GET answers allow any origin, the others
        # get no CORS header.
        def raw_req(req):
            with socket.create_connection(self.node.admin,
                                          timeout=ebtest.scaled(5)) as s:
                s.sendall(req)
                out = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    out += chunk
            return out.split(b"\r\n\r\n", 1)[0].decode()
        head = raw_req(b"OPTIONS /metrics HTTP/1.1\r\nHost: x\r\n"
                       b"Origin: http://other:1\r\n"
                       b"Access-Control-Request-Method: GET\r\n"
                       b"Access-Control-Request-Headers: authorization\r\n"
                       b"Connection: close\r\n\r\n")
        self.assertTrue(head.startswith("HTTP/1.1 204"), head)
        self.assertIn("Access-Control-Allow-Origin: *", head)
        self.assertIn("Access-Control-Allow-Methods: GET", head)
        self.assertIn("Access-Control-Allow-Headers: Authorization", head)
        head = raw_req(("GET /bridge HTTP/1.1\r\nHost: x\r\n"
                        "Authorization: Bearer %s\r\n"
                        "Connection: close\r\n\r\n" % self.TOKEN).encode())
        self.assertTrue(head.startswith("HTTP/1.1 200"), head)
        self.assertIn("Access-Control-Allow-Origin: *", head)
        head = raw_req(("POST /bridge HTTP/1.1\r\nHost: x\r\n"
                        "Authorization: Bearer %s\r\nContent-Length: 0\r\n"
                        "Connection: close\r\n\r\n" % self.TOKEN).encode())
        self.assertTrue(head.startswith("HTTP/1.1 405"), head)
        self.assertNotIn("Access-Control", head)
        # no preflight for a path without a GET route: 401 as before
        head = raw_req(b"OPTIONS /nothing HTTP/1.1\r\nHost: x\r\n"
                       b"Connection: close\r\n\r\n")
        self.assertTrue(head.startswith("HTTP/1.1 401"), head)


class MetricsCluster(unittest.TestCase):
    def config(self, root, name):
        cfg = ebtest.cluster_config(root, name, zookeeper={
            "session_timeout_ms": 4000})
        return ebtest.merge(cfg, {
            "bridge": {"inbound": [{"address": "external.ingress"}],
                       "outbound": [{"address": "orders"}]},
            "ingress": {"default_route": {"to": "orders"}}})

    def test_two_nodes(self):
        root = ebtest.unique_root()
        a = start_node(self, self.config(root, "a"), "a")
        ebtest.wait_until(lambda: metrics(self, a).value("ebnode_leader"),
                          20, "a leads")
        b = start_node(self, self.config(root, "b"), "b")

        def both_linked():
            ma, mb = metrics(self, a), metrics(self, b)
            return (ma.get("ebnode_link_up", peer="b") == 1 and
                    mb.get("ebnode_link_up", peer="a") == 1 and
                    ma.value("ebnode_members") == 2 and
                    mb.value("ebnode_members") == 2 and (ma, mb))
        ma, mb = ebtest.wait_until(both_linked, 20, "a and b linked")
        self.assertEqual(ma.value("ebnode_leader"), 1)
        self.assertEqual(mb.value("ebnode_leader"), 0)
        self.assertGreater(ma.value("ebnode_epoch"), 0)
        self.assertEqual(mb.value("ebnode_epoch"), ma.value("ebnode_epoch"))
        st, leader = ebtest.admin_request(*b.admin, "GET", "/leader")
        self.assertEqual(leader["epoch"], ma.value("ebnode_epoch"))
        for m in (ma, mb):
            self.assertEqual(m.value("ebnode_zk_session_state",
                                     state="connected"), 1)
            self.assertEqual(sum(v for _, v in m.samples(
                "ebnode_zk_session_state")), 1)
            self.assertGreaterEqual(m.value(
                "ebnode_zk_session_events_total", event="connected"), 1)
            self.assertEqual(m.value("ebnode_leader_known"), 1)
            self.assertEqual(m.value("ebnode_leader_changes_total"), 1)
        self.assertEqual(ma.value("ebnode_leader_elections_total"), 1)
        self.assertEqual(mb.value("ebnode_leader_elections_total"), 0)
        self.assertEqual(ma.value("ebnode_info", node_id="a", address="a",
                                  version=ma.samples("ebnode_info")[0][0]
                                  ["version"], mode="clustered"), 1)

        # Ingress through the follower, routed by the leader to a consumer
        # on the follower.
        consumer = Consumer(b, "orders")
        self.addCleanup(consumer.close)
        client = ebtest.BridgeClient(*b.bridge)
        self.addCleanup(client.close)

        def routed():
            f = request(client, "external.ingress", {"probe": 1}, None,
                        "probe")
            return f["type"] == "message"
        ebtest.wait_until(routed, 20, "ingress routed end to end")
        n = 10
        for i in range(n):
            f = request(client, "external.ingress", {"i": i}, None,
                        "r%d" % i)
            self.assertEqual(f["type"], "message", f)
        ma2, mb2 = metrics(self, a), metrics(self, b)
        self.assertGreaterEqual(mb2.value("ebnode_ingress_acked_total"),
                                n + 1)
        self.assertEqual(mb2.value("ebnode_ingress_routed_total"), 0)
        self.assertGreaterEqual(ma2.value("ebnode_ingress_routed_total"),
                                n + 1)
        self.assertEqual(ma2.value("ebnode_ingress_received_total"), 0)
        self.assertGreaterEqual(mb2.value(
            "ebnode_ingress_request_duration_seconds_count"), n + 1)
        self.assertGreater(mb2.value("ebnode_link_frames_total", peer="a",
                                     direction="out"), 0)
        self.assertGreater(ma2.value("ebnode_link_bytes_total", peer="b",
                                     direction="in"), 0)
        self.assertEqual(ma2.value("ebnode_link_ups_total", peer="b"), 1)
        # The leader sees the follower's consumer as a remote handler.
        self.assertEqual(ma2.value("ebnode_bus_handlers", address="orders",
                                   where="remote"), 1)

        # A leadership change: a steps down, b takes over.
        st, _ = ebtest.admin_request(*a.admin, "POST", "/leader/release")
        self.assertEqual(st, 200)

        def b_leads():
            m = metrics(self, b)
            return m.value("ebnode_leader") == 1 and m
        mb3 = ebtest.wait_until(b_leads, 20, "b leads")
        self.assertEqual(mb3.value("ebnode_leader_elections_total"), 1)
        self.assertGreater(mb3.value("ebnode_epoch"),
                           ma.value("ebnode_epoch"))
        ebtest.wait_until(
            lambda: metrics(self, a).value("ebnode_epoch") ==
            mb3.value("ebnode_epoch"), 10, "a knows the new epoch")
        # Rule 6: both fences follow the member cache to the new epoch
        # (a's too: it learns it from its cache, not from its election);
        # a clean hand-over refuses nothing.
        for node in (a, b):
            ebtest.wait_until(
                lambda: metrics(self, node).value("ebnode_fence_epoch") ==
                mb3.value("ebnode_epoch"), 10, "fence at the new epoch")
            m = metrics(self, node)
            self.assertEqual(m.value("ebnode_fenced_total", kind="message"),
                             0)
            self.assertEqual(m.value("ebnode_fenced_total", kind="ack"), 0)
        ebtest.wait_until(
            lambda: metrics(self, b).value(
                "ebnode_leader_changes_total") == 2, 10,
            "b observed the change")
        ma3 = ebtest.wait_until(
            lambda: (lambda m: m.value("ebnode_leader") == 0 and m)(
                metrics(self, a)), 10, "a no longer leads")
        self.assertEqual(ma3.value("ebnode_leader_changes_total"), 2)
        self.assertEqual(ma3.value("ebnode_ingress_leading"), 0)

    def test_hold_without_leader(self):
        """An edge node (never leads) alone: ingress is held (bounded),
        the gauges show no leader; a leader appears: the held messages
        are flushed and the latency histogram records the wait."""
        root = ebtest.unique_root()
        edge = start_node(self, ebtest.merge(self.config(root, "edge"), {
            "node": {"eligible": False},
            "ingress": {"hold_max": 2, "hold_ms": 60000}}), "edge")
        consumer = Consumer(edge, "orders")
        self.addCleanup(consumer.close)
        wait_registered(edge, "orders")
        client = ebtest.BridgeClient(*edge.bridge)
        self.addCleanup(client.close)
        for i in range(3):
            client.send("external.ingress", {"i": i},
                        reply_address="r%d" % i)
        f = client.recv_until(lambda f: f.get("address") == "r2", 10)
        self.assertEqual((f["type"], f["failureCode"]), ("err", 507), f)
        m = metrics(self, edge)
        self.assertEqual(m.value("ebnode_eligible"), 0)
        self.assertEqual(m.value("ebnode_leader"), 0)
        self.assertEqual(m.value("ebnode_leader_known"), 0)
        self.assertEqual(m.value("ebnode_epoch"), 0)
        self.assertEqual(m.value("ebnode_ingress_holding"), 2)
        self.assertEqual(m.value("ebnode_ingress_held_total"), 2)
        self.assertEqual(m.value("ebnode_ingress_failed_total"), 1)
        self.assertEqual(m.value(
            "ebnode_ingress_request_duration_seconds_count"), 1)
        self.assertEqual(m.value("ebnode_errors_total",
                                 type="ingress_failed"), 1)
        a = start_node(self, self.config(root, "a"), "a")
        for i in range(2):
            f = client.recv_until(lambda f: f.get("address") == "r%d" % i,
                                  20)
            self.assertEqual(f["type"], "message", f)
        # The edge knows the leader once its cache shows a's member and
        # the leader record (a ZooKeeper watch) confirms it; the flushed
        # messages travel the node link and can be acknowledged first.
        m = ebtest.wait_until(
            lambda: (lambda m: m.value("ebnode_leader_known") == 1 and m)(
                metrics(self, edge)), 10, "the edge knows the leader")
        self.assertEqual(m.value("ebnode_ingress_holding"), 0)
        self.assertEqual(m.value("ebnode_ingress_acked_total"), 2)
        self.assertEqual(m.value("ebnode_leader_changes_total"), 1)
        self.assertGreater(m.value("ebnode_epoch"), 0)
        self.assertEqual(m.value(
            "ebnode_ingress_request_duration_seconds_count"), 3)
        # The two held ones waited at least for a's start.
        self.assertLessEqual(m.value(
            "ebnode_ingress_request_duration_seconds_bucket", le="0.001"),
            1)
        self.assertEqual(metrics(self, a).value(
            "ebnode_ingress_routed_total"), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
