"""ebnode as a member of a Vert.x 4.5.15 cluster (issue 26, docs/VERTX.md):
2 anchor.sh JVMs (../shared/vertx45, clustered on the ZooKeeper fixture)
and 1 ebnode with the vertx section, bridge clients in Python on both
kinds of node.

Covered: requests, sends and publishes both ways with JSON and string
bodies and headers; a binary (Buffer) body from a Vert.x peer; a Java
failure and NO_HANDLERS; a Vert.x peer that sends a malformed frame
(disconnected, the node stays up); a JVM that stops reading (SIGSTOP:
the connection is closed at vertx.write_queue_bytes, requests over it fail
explicitly, RSS stays bounded); a JVM killed (requests fail explicitly,
then go to the other JVM); the ebnode node killed (the JVMs stop routing
to it once its session expires).

Skips (exit 77) without java or the fixtures. ../shared/vertx45 is
resolved from the source tree; EB_VERTX45 overrides it. Each test prints a
RESULT line with its numbers."""

import os
import signal
import struct
import subprocess
import sys
import threading
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import ebtest  # noqa: E402

SOURCE_DIR = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
VERTX45 = os.environ.get("EB_VERTX45",
                         os.path.join(SOURCE_DIR, "..", "shared", "vertx45"))
ANCHOR = os.path.join(VERTX45, "bin", "anchor.sh")
SESSION_MS = 3000          # ebnode's ZooKeeper session
WRITE_QUEUE = 1 << 20      # vertx.write_queue_bytes in this test
# The bound stated for the slow-JVM test (peak measured: about 7 MB); a
# sanitizer build (EB_TEST_TIMEOUT_MULTIPLIER > 1) keeps freed memory in
# its quarantine, so it gets three times as much.
RSS_BOUND_KB = 200 * 1024 * (1 if ebtest.TIMEOUT_MULTIPLIER <= 1 else 3)


def report(name, text):
    sys.stdout.write("RESULT %s: %s\n" % (name, text))
    sys.stdout.flush()


def skip(why):
    sys.stdout.write("SKIP: %s\n" % why)
    sys.stdout.flush()
    sys.exit(77)


class Anchor:
    """One anchor.sh JVM: consumers and a TCP bridge, clustered."""

    def __init__(self, name, zk):
        self.name = name
        self.bridge_port = ebtest.free_port()
        self.cluster_port = ebtest.free_port()
        self.lines = []
        self.proc = subprocess.Popen(
            [ANCHOR, "--cluster", "--zk", zk, "--cluster-host", "127.0.0.1",
             "--cluster-port", str(self.cluster_port),
             "--host", "127.0.0.1", "--port", str(self.bridge_port)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        ebtest.wait_until(
            lambda: any("bridge listening" in ln for ln in self.lines), 60,
            "%s: bridge listening" % name)

    def _read(self):
        for ln in self.proc.stdout:
            self.lines.append(ln.decode("utf-8", "replace"))

    def client(self):
        return ebtest.BridgeClient("127.0.0.1", self.bridge_port)

    def signal(self, sig):
        os.killpg(self.proc.pid, sig)

    def close(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=ebtest.scaled(15))
            except (subprocess.TimeoutExpired, ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class Engine(Anchor):
    """One engine.sh JVM (the Java engine's node): its election under
    --engine-root, a TCP bridge."""

    def __init__(self, name, zk, root, address, route_to=None,
                 consumers=(), ingress=None):
        self.name = name
        self.bridge_port = ebtest.free_port()
        self.cluster_port = ebtest.free_port()
        self.lines = []
        self.proc = subprocess.Popen(
            [os.path.join(VERTX45, "bin", "engine.sh"), "--zk", zk,
             "--engine-root", root, "--engine-address", address,
             "--bridge-port", str(self.bridge_port),
             "--bridge-host", "127.0.0.1", "--cluster-host", "127.0.0.1",
             "--cluster-port", str(self.cluster_port),
             "--session-ms", "4000"] +
            (["--route-to", route_to] if route_to else []) +
            [x for c in consumers for x in ("--consumer", c)] +
            (["--ingress", ingress] if ingress else []),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        ebtest.wait_until(lambda: any("READY" in ln for ln in self.lines),
                          60, "%s: READY" % name)

    def said(self, text):
        return any(text in ln for ln in self.lines)


class Rq:
    """Requests over one bridge client, one at a time."""
    _n = 0

    def __init__(self, client):
        self.c = client

    def request(self, address, body, headers=None, timeout=10):
        Rq._n += 1
        token = "t%d" % Rq._n
        self.c.send(address, body, headers=headers, reply_address=token)
        return self.c.recv_until(lambda f: f.get("address") == token,
                                 timeout=timeout)


def rss_kb(pid):
    with open("/proc/%d/status" % pid, encoding="ascii") as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


class VertxCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(ANCHOR, os.X_OK):
            skip("no Vert.x fixtures at %s (set EB_VERTX45)" % VERTX45)
        if subprocess.call(["sh", "-c", "command -v java"],
                           stdout=subprocess.DEVNULL) != 0:
            skip("no Java runtime (java not on PATH)")
        cls.zk = ebtest.zk_connect_string()
        cls.anchors = []

    @classmethod
    def tearDownClass(cls):
        for a in getattr(cls, "anchors", []):
            a.close()

    def setUp(self):
        self.nodes = []
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        for n in self.nodes:
            n.close()

    # -- helpers ----------------------------------------------------------

    def anchor_pair(self):
        if not self.anchors:
            self.anchors.append(Anchor("jA", self.zk))
            self.anchors.append(Anchor("jB", self.zk))
        return self.anchors

    def ebnode(self, name="eb", root=None, ingress=None, **vertx):
        cfg = ebtest.cluster_config(root or ebtest.unique_root(),
                                    "addr-" + name)
        if ingress is not None:
            cfg = ebtest.merge(cfg, {"ingress": ingress})
        cfg = ebtest.merge(cfg, {
            "zookeeper": {"session_timeout_ms": SESSION_MS},
            "bridge": {"inbound": [{"addressRegex": ".*"}],
                       "outbound": [{"addressRegex": ".*"}]},
            "vertx": ebtest.merge({"enabled": True,
                                   "cluster_host": "127.0.0.1",
                                   "write_queue_bytes": WRITE_QUEUE,
                                   "connect_timeout_ms": 2000,
                                   "drain_ms": 300}, vertx),
        })
        n = ebtest.EbNode(cfg, name=name)
        self.nodes.append(n)
        line = n.wait_log("cluster-listening:", 10)
        n.vertx_port = int(line.rsplit("port=", 1)[1].split()[0])
        line = n.wait_log("vertx-started:", 10)
        n.vertx_id = line.split("node_id=", 1)[1].split()[0]
        return n

    def client(self, host_port):
        c = ebtest.BridgeClient(*host_port)
        self.clients.append(c)
        return c

    def wait_reply(self, rq, address, body, what, timeout=30):
        """Requests until one is answered with a message (propagation
        through ZooKeeper): NO_HANDLERS answers come at once, so this
        waits for the event, bounded. A request not answered within 3 s
        counts as not yet routable and is sent again: a JVM can take the
        new node's request before it can answer it (once in CI, the first
        request after a node joined went unanswered for 10 s)."""
        got = []

        def ok():
            try:
                f = rq.request(address, body, timeout=3)
            except TimeoutError:
                return False
            if f["type"] == "message":
                got.append(f)
                return True
            return False
        ebtest.wait_until(ok, timeout, what, interval=0.1)
        return got[0]

    # -- tests ------------------------------------------------------------

    def test_0_first_requests_after_join(self):
        """A node that has just joined is answered: a JVM answers a node
        only once its membership cache has that node's NodeInfo, and
        drops the answer silently before ("Not a member of the cluster"
        in its log), so the node offers the JVMs to the bus only once
        they can know it. Every request from the first on is answered at
        once: NO_HANDLERS while the JVMs are not offered, then the echo
        (before the fix, 13 of 15 fresh nodes lost their first request
        to Java)."""
        self.anchor_pair()
        rounds = int(os.environ.get("EB_JOIN_ROUNDS", "3"))
        for r in range(rounds):
            n = self.ebnode("join%d" % r)
            rq = Rq(self.client(n.bridge))
            deadline = time.monotonic() + 15
            answered = None
            while answered is None and time.monotonic() < deadline:
                # 3 s: far beyond a round trip, far below the timeout
                f = rq.request("echo", {"round": r}, timeout=3)
                if f["type"] == "message":
                    answered = f
                else:
                    time.sleep(0.01)
            self.assertIsNotNone(answered, "echo answered within 15 s")
            self.assertEqual(answered["body"], {"round": r})
            n.close()
            self.nodes.remove(n)
        report("join", "%d fresh nodes: every request answered at once, "
               "the first echo within the join grace" % rounds)

    def test_1_ebnode_to_java(self):
        self.anchor_pair()
        n = self.ebnode()
        rq = Rq(self.client(n.bridge))
        f = self.wait_reply(rq, "echo", {"a": 1}, "echo through Java")
        self.assertEqual(f["body"], {"a": 1})
        f = rq.request("echo", "a string \u00e9")
        self.assertEqual((f["type"], f["body"]), ("message", "a string \u00e9"))
        f = rq.request("echo", [1, 2.5, None, True])
        self.assertEqual(f["body"], [1, 2.5, None, True])
        f = rq.request("echo.headers", {"x": 1}, headers={"k": "v"})
        self.assertEqual(f["body"], {"headers": {"k": "v"}, "body": {"x": 1}})
        self.assertEqual(f["headers"].get("x-reply-header"), "yes")
        f = rq.request("fail", {"code": 7, "message": "boom"})
        self.assertEqual((f["type"], f["failureType"], f["failureCode"],
                          f["message"]),
                         ("err", "RECIPIENT_FAILURE", 7, "boom"))
        f = rq.request("nobody.here", {"x": 1})
        self.assertEqual((f["type"], f["failureType"], f["message"]),
                         ("err", "NO_HANDLERS",
                          "No handlers for address nobody.here"))
        # sends: the two JVMs' ingress counters see every one
        j = Rq(self.anchors[0].client())
        before = [j.request("stats", {})["body"]["ingress"]]
        jb = Rq(self.anchors[1].client())
        before.append(jb.request("stats", {})["body"]["ingress"])
        c = self.client(n.bridge)
        for i in range(100):
            c.send("ingress", {"i": i})

        def counted():
            a = j.request("stats", {})["body"]["ingress"]
            b = jb.request("stats", {})["body"]["ingress"]
            return a + b - sum(before) == 100 and (a - before[0], b - before[1])
        split = ebtest.wait_until(counted, 20, "100 sends counted")
        j.c.close()
        jb.c.close()
        report("ebnode_to_java", "requests ok (JSON, string, array, "
               "headers), RECIPIENT_FAILURE(7), NO_HANDLERS; 100 sends "
               "split %d/%d between the JVMs" % split)

    def test_2_java_to_ebnode(self):
        self.anchor_pair()
        n = self.ebnode()
        svc = self.client(n.bridge)
        svc.register("eb.svc")
        stop = threading.Event()
        served = []

        def serve():
            while not stop.is_set():
                try:
                    m = svc.recv_frame(timeout=0.2)
                except Exception:  # noqa: BLE001 - timeouts end a poll
                    continue
                if m.get("type") != "message":
                    continue
                served.append(m)
                if m.get("replyAddress"):
                    svc.send(m["replyAddress"],
                             {"echo": m.get("body"), "h": m.get("headers")},
                             headers={"x-from": "ebnode"})
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        try:
            # a Java bridge client's request reaches the ebnode consumer
            jc = Rq(self.anchors[0].client())
            f = self.wait_reply(jc, "eb.svc", {"q": 1}, "Java -> ebnode")
            self.assertEqual(f["body"]["echo"], {"q": 1})
            self.assertEqual(f["headers"].get("x-from"), "ebnode")
            f = jc.request("eb.svc", "plain text", headers={"k2": "v2"})
            self.assertEqual(f["body"], {"echo": "plain text",
                                         "h": {"k2": "v2"}})
            # Java code's own request (ask.client on the other JVM)
            f = jc.request("ask.client", {"address": "eb.svc",
                                          "body": {"z": 2},
                                          "timeout": 3000})
            self.assertIn("reply", f["body"], f)
            # Java publishes: the ebnode consumer gets it, with its header
            n_before = len(served)
            f = jc.request("publish.to", {"address": "eb.svc",
                                          "body": {"pub": 1}})
            ebtest.wait_until(lambda: len(served) > n_before, 10,
                              "publish from Java")
            pub = served[-1]
            self.assertEqual((pub["send"], pub["body"],
                              pub["headers"].get("x-pub")),
                             (False, {"pub": 1}, "1"))
            # Java code's plain sends (egress.start: eb.send x 5)
            n_before = len(served)
            f = jc.request("egress.start", {"address": "eb.svc", "count": 5,
                                            "size": 8})
            self.assertEqual(f["body"], {"sent": 5})
            ebtest.wait_until(lambda: len(served) >= n_before + 5, 10,
                              "5 sends from Java")
            sends = served[n_before:n_before + 5]
            self.assertEqual(sorted(m["body"]["seq"] for m in sends),
                             [0, 1, 2, 3, 4])
            self.assertTrue(all(m["send"] and not m.get("replyAddress")
                                for m in sends))
            # an ebnode publish reaches Java bridge consumers on both JVMs
            # and the ebnode one
            subs = []
            for a in self.anchors:
                c = a.client()
                c.register("pub.all")
                subs.append(c)
            svc.register("pub.all")
            pc = self.client(n.bridge)
            # propagation: wait until a request to pub.all is answered by
            # nobody with NO_HANDLERS no more... publishes need no answer,
            # so publish until both JVM clients got one
            got = [0, 0]

            def both():
                pc.publish("pub.all", {"p": 1}, headers={"hp": "1"})
                for i, c in enumerate(subs):
                    try:
                        m = c.recv_frame(timeout=0.2)
                        if m.get("address") == "pub.all":
                            got[i] += 1
                            self.assertEqual(m["headers"].get("hp"), "1")
                    except Exception:  # noqa: BLE001
                        pass
                return all(got)
            ebtest.wait_until(both, 30, "publish to both JVMs", interval=0.1)
            for c in subs:
                c.close()
            jc.c.close()
            report("java_to_ebnode", "Java bridge requests (JSON, string, "
                   "headers), ask.client, publish.to, 5 eb.send from "
                   "egress.start; ebnode publish reached both JVMs")
        finally:
            stop.set()
            t.join(5)

    def test_3_malformed_frame_and_binary(self):
        self.anchor_pair()
        n = self.ebnode()
        import socket
        # a Buffer body from a Vert.x peer, straight to the cluster port
        svc = self.client(n.bridge)
        svc.register("eb.bin")
        time.sleep(0)  # registration is local: no propagation needed
        svc.ping()

        def s(b):
            return struct.pack(">i", len(b)) + b
        sender = str(uuid.uuid4()).encode()
        payload = bytes([2, 11, 0]) + s(b"eb.bin") + s(b"") + s(sender) + \
            struct.pack(">i", 4) + s(bytes([0xfb, 0xff, 0x00, 0x01]))
        peer = socket.create_connection(("127.0.0.1", n.vertx_port))
        peer.sendall(s(payload))
        m = svc.recv_until(lambda f: f.get("address") == "eb.bin", 10)
        self.assertEqual(m["body"], "-_8AAQ")  # base64url, no padding
        # garbage: a header block that says 3 bytes
        bad = bytes([2, 0, 0]) + s(b"eb.bin") + s(b"") + s(sender) + \
            struct.pack(">i", 3)
        peer.sendall(s(bad))
        peer.settimeout(ebtest.scaled(10))
        self.assertEqual(peer.recv(10), b"")  # closed by the node
        peer.close()
        n.wait_log("bad-frame:", 10)
        # an oversized length
        peer = socket.create_connection(("127.0.0.1", n.vertx_port))
        peer.sendall(struct.pack(">i", 0x7fffff00))
        peer.settimeout(ebtest.scaled(10))
        self.assertEqual(peer.recv(10), b"")
        peer.close()
        # the node still serves
        rq = Rq(self.client(n.bridge))
        f = self.wait_reply(rq, "echo", {"after": "garbage"}, "echo")
        self.assertEqual(f["body"], {"after": "garbage"})
        self.assertTrue(n.running())
        report("malformed", "Buffer body -> base64url; malformed frame and "
               "oversized length each disconnected; node serving")

    def test_4_jvm_stops_reading(self):
        a, b = self.anchor_pair()
        # pings every 500 ms: a JVM that stops reading also stops
        # answering them
        n = self.ebnode(ping_interval_ms=500, ping_timeout_ms=1000)
        rq = Rq(self.client(n.bridge))
        self.wait_reply(rq, "echo", {"warm": 1}, "echo")
        rss0 = rss_kb(n.pid)
        b.signal(signal.SIGSTOP)
        try:
            c = self.client(n.bridge)
            big = "x" * 60000
            outcomes = {}
            errs = []
            peak = rss0
            total, window = 600, 48
            sent = 0
            answered = set()
            deadline = time.monotonic() + ebtest.scaled(60)
            while len(answered) < total and time.monotonic() < deadline:
                while sent < total and sent - len(answered) < window:
                    c.send("echo", {"big": big, "i": sent},
                           reply_address="s%d" % sent)
                    sent += 1
                f = c.recv_frame(timeout=ebtest.scaled(20))
                tok = f.get("address", "")
                if tok.startswith("s") and tok not in answered:
                    answered.add(tok)
                    outcomes[f["type"]] = outcomes.get(f["type"], 0) + 1
                    if f["type"] == "err":
                        errs.append(f)
                peak = max(peak, rss_kb(n.pid))
            self.assertEqual(len(answered), total,
                             "every request answered (ok or failed)")
            kinds = sorted(set((e["failureType"], e["message"][:40])
                               for e in errs))
            self.assertGreater(len(errs), 0)
            # failed explicitly: the connection to the stopped JVM was
            # cut (bound or pong deadline) and what waited on it failed
            self.assertTrue(all(e["failureType"] == "ERROR" for e in errs),
                            kinds)
            self.assertGreater(outcomes.get("message", 0), 0)
            self.assertLess(peak, RSS_BOUND_KB)
            cut = [ln for ln in n.log_lines()
                   if "reason=peer-too-slow" in ln or "reason=no-pong" in ln]
            self.assertTrue(cut, "the connection was cut")
        finally:
            b.signal(signal.SIGCONT)
        report("jvm_stops_reading", "600 requests of 60 KB, 48 in flight: "
               "%d ok, %d failed explicitly (%s), 0 lost, cut by %s; "
               "ebnode RSS %d KB -> peak %d KB (bound %d KB, "
               "write_queue_bytes %d)"
               % (outcomes.get("message", 0), len(errs),
                  kinds, sorted(set(ln.split("reason=")[1].split()[0]
                                    for ln in cut)), rss0, peak,
                  RSS_BOUND_KB, WRITE_QUEUE))

    def test_6_jvm_killed(self):
        a, b = self.anchor_pair()
        n = self.ebnode()
        rq = Rq(self.client(n.bridge))
        self.wait_reply(rq, "echo", {"warm": 1}, "echo")
        for _ in range(10):  # both JVMs have a connection from us now
            rq.request("echo", {"w": 1})
        b.signal(signal.SIGKILL)
        b.proc.wait()
        self.anchors.remove(b)
        ok = failed = 0
        for i in range(200):
            f = rq.request("echo", {"i": i}, timeout=15)
            if f["type"] == "message":
                ok += 1
            else:
                failed += 1
                self.assertIn(f["failureType"], ("ERROR", "NO_HANDLERS"), f)
        # after the failures, everything goes to the remaining JVM
        for i in range(20):
            f = rq.request("echo", {"tail": i})
            self.assertEqual(f["type"], "message", f)
        report("jvm_killed", "200 requests after kill -9 of one JVM: %d ok, "
               "%d failed explicitly, 0 timed out; the next 20 all ok"
               % (ok, failed))

    def test_5_ebnode_killed(self):
        self.anchor_pair()
        n = self.ebnode(name="eb-k")
        svc = self.client(n.bridge)
        svc.register("eb.gone")
        stop = threading.Event()

        def serve():
            while not stop.is_set():
                try:
                    m = svc.recv_frame(timeout=0.2)
                except Exception:  # noqa: BLE001 - a timeout ends a poll
                    continue
                if m.get("replyAddress"):
                    svc.send(m["replyAddress"], {"ok": 1})
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        jc = Rq(self.anchors[0].client())
        ask = {"address": "eb.gone", "body": {"q": 1}, "timeout": 1000}
        try:
            ebtest.wait_until(
                lambda: "reply" in jc.request("ask.client", ask)["body"],
                30, "Java reaches the ebnode consumer", interval=0.1)
        finally:
            stop.set()
            t.join(5)
        t0 = time.monotonic()
        n.kill()
        seen = []

        def gone():
            f = jc.request("ask.client", ask, timeout=10)
            seen.append(f["body"].get("failureType", "reply"))
            return f["body"].get("failureType") == "NO_HANDLERS"
        ebtest.wait_until(gone, SESSION_MS / 1000.0 + 15,
                          "Java sees NO_HANDLERS", interval=0.1)
        jc.c.close()
        report("ebnode_killed", "kill -9 of ebnode: Java's requests ended "
               "%s, then NO_HANDLERS after %.1f s (session %d ms)"
               % (sorted(set(seen[:-1])), time.monotonic() - t0,
                  SESSION_MS))

    # 3a, 3b: before the tests that stop or kill a JVM (the shared JVMs
    # route to a killed one until its ZooKeeper session expires)

    def test_3a_one_ebnode_cluster(self):
        """Two ebnode nodes of one ebnode cluster, both Vert.x members:
        they reach each other over ebnode's links only (their NodeInfo
        names the same ebnode cluster), so a publish from one reaches the
        other's consumer once, not once per transport; the JVMs still
        reach that consumer over Vert.x, once per publish."""
        self.anchor_pair()
        root = ebtest.unique_root()
        s1 = self.ebnode("sib1", root=root)
        s2 = self.ebnode("sib2", root=root)
        addr = "dup-%s" % uuid.uuid4().hex[:8]
        c2 = self.client(s2.bridge)
        c2.register(addr)
        c1 = self.client(s1.bridge)
        j = Rq(self.anchors[0].client())

        def arrives(send, key):
            send()
            try:
                c2.recv_until(lambda f: key in (f.get("body") or {}),
                              timeout=0.5)
                return True
            except TimeoutError:
                return False
        # s2's registration is in ZooKeeper (a JVM reaches it), s1 has
        # read s2's NodeInfo and its own join grace passed: a Vert.x
        # route from s1 to s2 would be taken now, were it offered
        ebtest.wait_until(lambda: arrives(lambda: j.request(
            "publish.to", {"address": addr, "body": {"jw": 1}}), "jw"),
            30, "a JVM's publish reaches s2's consumer")
        s1.wait_log('member-seen: node_id="%s" ready=1' % s2.vertx_id, 20)
        s1.wait_log("vertx-join-grace-passed:", 20)
        # over ebnode's links: s1 has s2's interest
        ebtest.wait_until(lambda: arrives(lambda: c1.publish(
            addr, {"probe": 1}), "probe"), 30, "s1 reaches s2's consumer")
        n_pub = 50
        for i in range(n_pub):
            c1.publish(addr, {"i": i})
        j.request("publish.to", {"address": addr, "body": {"j": 1}})
        c1.publish(addr, {"end": 1})
        seen = {}
        jvm = [0]

        def count(f):
            body = f.get("body") or {}
            if "i" in body:
                seen[body["i"]] = seen.get(body["i"], 0) + 1
            if "j" in body:
                jvm[0] += 1
            return False
        c2.recv_until(lambda f: count(f) or "end" in (f.get("body") or {}),
                      timeout=20)
        # a second copy over another path would come within this time
        try:
            c2.recv_until(count, timeout=1.0)
        except TimeoutError:
            pass
        dups = sum(v - 1 for v in seen.values())
        report("one_ebnode_cluster", "%d publishes between two nodes of "
               "one ebnode cluster: %d received, %d duplicated; a JVM's "
               "publish received %d time(s)" % (n_pub, sum(seen.values()),
                                                dups, jvm[0]))
        self.assertEqual(sorted(seen), list(range(n_pub)))
        self.assertEqual(dups, 0)
        self.assertEqual(jvm[0], 1)

    def test_3b_other_ebnode_clusters_ingress(self):
        """ebnode's own addresses (__ebnode.*) stay inside one ebnode
        cluster: two ebnode clusters in one Vert.x cluster each route
        their own ingress with their own leader. Before, the ingress
        leader's address was registered in Vert.x and a gateway's
        forwards went round robin to the other cluster's router too."""
        self.anchor_pair()
        rt = "rt-%s" % uuid.uuid4().hex[:8]
        x = self.ebnode("ingx", ingress={"default_route": {"to": rt}})
        y = self.ebnode("ingy")  # ingress leader, no route at all
        x.wait_log("leading: epoch=", 20)
        y.wait_log("leading: epoch=", 20)
        cx = self.client(x.bridge)
        cx.register(rt)
        # y's leader registered before this marker: once x reaches the
        # marker over Vert.x, it has read y's earlier registrations
        mark = "mark-%s" % uuid.uuid4().hex[:8]
        cy = self.client(y.bridge)
        cy.register(mark)
        rx = Rq(self.client(x.bridge))
        ebtest.wait_until(lambda: self._reached(rx, cy, mark), 30,
                          "y's consumer reached from x over Vert.x")
        n_req = 40
        ok = 0
        failures = {}
        for i in range(n_req):
            f = rx.request("external.ingress", {"i": i}, timeout=10)
            if f["type"] == "message":
                ok += 1
            else:
                failures[f.get("message")] = failures.get(
                    f.get("message"), 0) + 1
        report("other_ebnode_clusters", "%d ingress requests on x: %d "
               "routed by x's own leader, failures %s"
               % (n_req, ok, failures))
        self.assertEqual((ok, failures), (n_req, {}))
        # and a Vert.x frame to an ebnode address is refused
        j = Rq(self.anchors[0].client())
        f = j.request("ask.client", {"address": "__ebnode.ingress.leader",
                                     "body": {}, "timeout": 3000})
        self.assertIn("NO_HANDLERS", str(f.get("body")), f)
        j.c.close()

    def _reached(self, rq, consumer, address):
        """One request from rq to address; True when consumer got it."""
        rq.c.send(address, {"probe": 1})
        try:
            consumer.recv_until(lambda f: f.get("address") == address,
                                timeout=0.5)
            return True
        except TimeoutError:
            return False


class EngineElection(unittest.TestCase):
    """Part B, started: ebnode in the Java engine's election."""

    def setUp(self):
        if not os.access(ANCHOR, os.X_OK):
            skip("no Vert.x fixtures at %s (set EB_VERTX45)" % VERTX45)
        self.zk = ebtest.zk_connect_string()
        self.root = "/etest-%s" % uuid.uuid4().hex[:8]
        self.procs = []
        self.nodes = []
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        for n in self.nodes:
            n.close()
        for p in self.procs:
            p.close()

    def ebnode(self, address, wait=True):
        cfg = ebtest.cluster_config(ebtest.unique_root(), "addr-" + address)
        cfg = ebtest.merge(cfg, {
            "zookeeper": {"session_timeout_ms": SESSION_MS},
            "bridge": {"inbound": [{"addressRegex": ".*"}],
                       "outbound": [{"addressRegex": ".*"}]},
            "ingress": {"address": "EXTERNAL_EVENT_INGRESS",
                        "default_route": {"to": "orders.eb"}},
            "vertx": {"enabled": True, "cluster_host": "127.0.0.1",
                      "engine_root": self.root,
                      "engine_address": address},
        })
        if not wait:
            return cfg
        n = ebtest.EbNode(cfg, name=address)
        self.nodes.append(n)
        return n

    def test_election_and_ingress(self):
        e1 = Engine("e1", self.zk, self.root, "e1")
        self.procs.append(e1)
        ebtest.wait_until(lambda: e1.said("ELECTED"), 30, "e1 ELECTED")
        n = self.ebnode("eb-e")
        n.wait_log("engine-follower: address=eb-e leader=e1", 20)
        # the duplicate check: a second node with e1's address stops
        code, err = ebtest.start_expect_failure(self.ebnode("e1", False),
                                                name="dup", timeout=30)
        self.assertEqual(code, 3, err[-400:])
        self.assertIn("engine-duplicate: address=e1", err)
        e2 = Engine("e2", self.zk, self.root, "e2")
        self.procs.append(e2)
        consumer = ebtest.BridgeClient(*n.bridge)
        self.clients.append(consumer)
        consumer.register("orders.eb")
        # e1 leaves (SIGTERM): ebnode's child is the lowest now
        t0 = time.monotonic()
        e1.close()
        n.wait_log("engine-elected: address=eb-e", 20)
        took = time.monotonic() - t0
        self.assertFalse(e2.said("ELECTED"))
        # ingress through the Java node's bridge reaches ebnode's router
        jc = Rq(e2.client())
        got = []

        def acked():
            f = jc.request("EXTERNAL_EVENT_INGRESS", {"order": 1},
                           timeout=10)
            if f["type"] == "message":
                got.append(f)
                return True
            return False
        ebtest.wait_until(acked, 20, "ingress through e2", interval=0.1)
        self.assertEqual(got[0]["body"].get("status"), "ok", got[0])
        m = consumer.recv_until(lambda f: f.get("address") == "orders.eb",
                                10)
        self.assertEqual(m["body"], {"order": 1})
        jc.c.close()
        report("engine", "ebnode follower behind e1, duplicate refused "
               "(exit 3), elected %.1f s after SIGTERM of e1, ingress "
               "from e2's bridge acked by ebnode %s" % (took, got[0]["body"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
