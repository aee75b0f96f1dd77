"""Shared data over the cluster (issue 14): 3 real ebnode processes on a
real ZooKeeper, bridge clients in Python using the bus services
ebnode.lock, ebnode.counter and ebnode.id (docs/SHARED.md).

Sizes: EB_SHARED_CYCLES (lock cycles per client, default 1000),
EB_SHARED_INCS (increments per client, default 10000), EB_SHARED_IDS
(ids in all, default 1000000). Each test prints a "RESULT" line with its
numbers."""

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import ebtest  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cluster"))
from partition_test import Proxy  # noqa: E402

SESSION_MS = int(os.environ.get("EB_IT_SESSION_MS", "2000"))
CYCLES = int(os.environ.get("EB_SHARED_CYCLES", "1000"))
INCS = int(os.environ.get("EB_SHARED_INCS", "10000"))
IDS = int(os.environ.get("EB_SHARED_IDS", "1000000"))
EBCTL = os.environ.get("EBCTL_BIN", "ebctl")

PERMIT_IN = [{"addressRegex": "ebnode[.](lock|counter|id)"}]
PERMIT_OUT = [{"addressRegex": "notify[.].*"}]


def report(name, text):
    sys.stdout.write("RESULT %s: %s\n" % (name, text))
    sys.stdout.flush()


def node_config(root, i):
    cfg = ebtest.cluster_config(root, "addr-s%d" % i)
    return ebtest.merge(cfg, {
        "node": {"id": "s%d" % i},
        "zookeeper": {"session_timeout_ms": SESSION_MS},
        "bridge": {"inbound": PERMIT_IN, "outbound": PERMIT_OUT},
    })


class Failure(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, "%s: %s" % (code, message))
        self.code = code


class Client:
    """A bridge client that makes requests one at a time."""
    _ids = itertools.count(1)

    def __init__(self, node):
        self.node = node
        self.b = ebtest.BridgeClient(*node.bridge)
        self.tag = next(Client._ids)
        self.seq = itertools.count(1)

    def request(self, address, body, timeout=30, headers=None):
        ra = "reply.%d.%d" % (self.tag, next(self.seq))
        h = {"timeout": str(timeout * 1000)}
        h.update(headers or {})
        self.b.send(address, body, headers=h, reply_address=ra)
        f = self.b.recv_until(lambda f: f.get("address") == ra or
                              f.get("type") == "err", timeout=timeout + 5)
        if f.get("type") == "err":
            raise Failure(f.get("failureCode"), f.get("message"))
        return f["body"]

    def close(self):
        self.b.close()


class Fenced:
    """A resource guarded by fencing tokens: it rejects a token lower than
    the highest it has seen, and records the value it keeps."""

    def __init__(self):
        self.mu = threading.Lock()
        self.highest = 0
        self.value = 0
        self.rejected = 0
        self.holders = 0
        self.max_holders = 0

    def enter(self, token):
        with self.mu:
            if token < self.highest:
                self.rejected += 1
                return False
            self.highest = token
            self.holders += 1
            self.max_holders = max(self.max_holders, self.holders)
            return True

    def leave(self):
        with self.mu:
            self.holders -= 1


class Shared(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = ebtest.unique_root()
        cls.nodes = []
        for i in range(3):
            cls.nodes.append(ebtest.EbNode(node_config(cls.root, i),
                                           name="s%d" % i))

    @classmethod
    def tearDownClass(cls):
        for n in cls.nodes:
            n.close()

    @staticmethod
    def metrics(node):
        url = "http://%s:%d/metrics" % node.admin
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
        out = {}
        for ln in text.splitlines():
            if ln.startswith("ebnode_shared_"):
                k, v = ln.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def hold_notified(self, cl, name, notify):
        """cl takes lock name with its notify address registered (confirmed
        by a ping first); returns the grant and a fencing resource cl has
        entered with its token."""
        cl.b.register(notify)
        cl.b.send_frame({"type": "ping"})
        cl.b.recv_until(lambda f: f.get("type") == "pong")
        grant = cl.request("ebnode.lock", {"op": "acquire", "name": name,
                                           "notify": notify})
        res = Fenced()
        self.assertTrue(res.enter(grant["token"]))
        return grant, res

    def clients(self, nodes=None):
        return [Client(n) for n in (nodes or self.nodes)]

    def test_1_mutual_exclusion(self):
        res = Fenced()
        tokens = [[] for _ in range(3)]
        errors = []
        cs = self.clients()

        def run(i):
            c = cs[i]
            try:
                for _ in range(CYCLES):
                    r = c.request("ebnode.lock", {"op": "acquire",
                                                  "name": "mx",
                                                  "timeout_ms": 60000}, 90)
                    tok = r["token"]
                    tokens[i].append(tok)
                    if not res.enter(tok):
                        errors.append("token %d rejected" % tok)
                    v = res.value      # read
                    time.sleep(0)      # let another thread run here
                    res.value = v + 1  # write
                    res.leave()
                    c.request("ebnode.lock", {"op": "release",
                                              "name": "mx", "token": tok})
            except Exception as e:  # reported below
                errors.append("client %d: %r" % (i, e))

        t0 = time.monotonic()
        ts = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        dt = time.monotonic() - t0
        for c in cs:
            c.close()
        self.assertEqual(errors, [])
        self.assertEqual(res.value, 3 * CYCLES)
        self.assertEqual(res.rejected, 0)
        self.assertEqual(res.max_holders, 1)
        every = sorted(t for ts_ in tokens for t in ts_)
        self.assertEqual(len(set(every)), 3 * CYCLES)  # all distinct
        for ts_ in tokens:
            self.assertEqual(ts_, sorted(ts_))  # increasing per client
        report("mutual-exclusion", "%d cycles in %.1f s (%.0f/s), value %d, "
               "%d distinct tokens %d..%d, rejected %d, max holders %d"
               % (3 * CYCLES, dt, 3 * CYCLES / dt, res.value, len(every),
                  every[0], every[-1], res.rejected, res.max_holders))

    def test_2_try_release_and_connection_close(self):
        a, b = self.clients(self.nodes[:2])
        r = a.request("ebnode.lock", {"op": "try", "name": "t"})
        with self.assertRaises(Failure) as cm:
            b.request("ebnode.lock", {"op": "try", "name": "t"})
        self.assertEqual(cm.exception.code, 409)
        with self.assertRaises(Failure) as cm:
            b.request("ebnode.lock", {"op": "release", "name": "t",
                                      "token": r["token"]})
        self.assertEqual(cm.exception.code, 404)
        with self.assertRaises(Failure) as cm:
            b.request("ebnode.lock", {"op": "acquire", "name": "t",
                                      "timeout_ms": 300})
        self.assertEqual(cm.exception.code, 408)
        with self.assertRaises(Failure) as cm:
            b.request("ebnode.lock", {"op": "acquire", "name": "bad/name"})
        self.assertEqual(cm.exception.code, 400)
        # A client on the holder's node cannot pass for the holder's
        # connection: the bridge replaces any ebnode.conn header it sends
        # (connection ids are small integers; the first 300 are tried),
        # and sends and publishes without a reply address do nothing.
        m = Client(self.nodes[0])
        for k in range(1, 301):
            with self.assertRaises(Failure) as cm:
                m.request("ebnode.lock", {"op": "release", "name": "t",
                                          "token": r["token"]},
                          headers={"ebnode.conn": str(k)})
            self.assertEqual(cm.exception.code, 404)
            m.b.send("ebnode.lock", {"op": "release", "name": "t",
                                     "token": r["token"]},
                     headers={"ebnode.conn": str(k)})
            m.b.publish("ebnode.lock", {"op": "release", "name": "t",
                                        "token": r["token"]},
                        headers={"ebnode.conn": str(k)})
        with self.assertRaises(Failure) as cm:
            m.request("ebnode.lock", {"op": "try", "name": "t"})
        self.assertEqual(cm.exception.code, 409)  # a still holds it
        m.close()
        # The holder's connection closes: the lock goes to the waiter.
        t0 = time.monotonic()
        ra = "reply.wait"
        b.b.send("ebnode.lock", {"op": "acquire", "name": "t",
                                 "timeout_ms": 20000},
                 headers={"timeout": "30000"}, reply_address=ra)
        b.b.expect_no_frame(0.3)
        a.close()
        f = b.b.recv_until(lambda f: f.get("address") == ra, timeout=10)
        dt = time.monotonic() - t0 - 0.3
        self.assertGreater(f["body"]["token"], r["token"])
        report("conn-close", "waiter got the lock %.0f ms after the "
               "holder's connection closed" % (dt * 1000))
        b.close()

    def test_3_counters(self):
        cs = self.clients()
        errors = []
        name = "c%d" % os.getpid()

        def run(c):
            try:
                for _ in range(INCS):
                    c.request("ebnode.counter", {"op": "increment",
                                                 "name": name})
            except Exception as e:
                errors.append(repr(e))

        t0 = time.monotonic()
        ts = [threading.Thread(target=run, args=(c,)) for c in cs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        dt = time.monotonic() - t0
        self.assertEqual(errors, [])
        v = cs[0].request("ebnode.counter", {"op": "get", "name": name})
        self.assertEqual(v["value"], 3 * INCS)
        r = cs[1].request("ebnode.counter", {"op": "cas", "name": name,
                                             "expect": 1, "update": 5})
        self.assertEqual(r, {"name": name, "value": 3 * INCS, "ok": False})
        r = cs[1].request("ebnode.counter", {"op": "cas", "name": name,
                                             "expect": 3 * INCS,
                                             "update": 5})
        self.assertTrue(r["ok"])
        r = cs[2].request("ebnode.counter", {"op": "add", "name": name,
                                             "delta": -2})
        self.assertEqual(r["value"], 3)
        for c in cs:
            c.close()
        m = self.metrics(self.nodes[0])
        self.assertGreaterEqual(m["ebnode_shared_counter_ops_total"], INCS)
        self.assertGreaterEqual(m["ebnode_shared_lock_acquisitions_total"],
                                1)
        self.assertEqual(m["ebnode_shared_locks_held"], 0)
        self.assertIn("ebnode_shared_lock_revocations_total", m)
        report("counters", "3 x %d increments in %.1f s (%.0f/s): final %d"
               % (INCS, dt, 3 * INCS / dt, v["value"]))

    def test_4_ids(self):
        cs = self.clients()
        got = [[] for _ in range(3)]
        errors = []
        batch = 1000

        def run(i):
            per = IDS // 3 + (1 if i < IDS % 3 else 0)
            try:
                n = 0
                while n < per:
                    k = min(batch, per - n)
                    r = cs[i].request("ebnode.id", {"count": k})
                    got[i].extend(r["ids"])
                    n += k
            except Exception as e:
                errors.append(repr(e))

        t0 = time.monotonic()
        ts = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        dt = time.monotonic() - t0
        self.assertEqual(errors, [])
        total = sum(len(g) for g in got)
        every = set()
        for g in got:
            self.assertEqual(g, sorted(g))  # increasing per node
            every.update(g)
        self.assertEqual(len(every), total)
        self.assertNotIn(0, every)
        self.assertEqual(total, IDS)
        for c in cs:
            c.close()
        report("ids", "%d ids from 3 nodes (batches of %d over the bus) in "
               "%.1f s (%.0f/s): %d unique" % (total, batch, dt, total / dt,
                                                len(every)))

    def ebctl(self, node, *args, stdin=subprocess.DEVNULL):
        return subprocess.run([EBCTL, "--bridge", "%s:%d" % node.bridge] +
                              list(args), stdin=stdin, capture_output=True,
                              text=True, timeout=ebtest.scaled(20))

    def test_5_ebctl(self):
        n = self.nodes[1]
        name = "ctl%d" % os.getpid()
        r = self.ebctl(n, "counter", name, "add", "5")
        self.assertEqual((r.returncode, r.stdout), (0, "5\n"), r.stderr)
        r = self.ebctl(n, "counter", name, "increment")
        self.assertEqual(r.stdout, "6\n")
        r = self.ebctl(n, "counter", name, "cas", "1", "9")
        self.assertEqual((r.returncode, r.stdout), (1, "6\nok=false\n"))
        r = self.ebctl(n, "counter", name, "cas", "6", "9")
        self.assertEqual((r.returncode, r.stdout), (0, "9\nok=true\n"))
        r = self.ebctl(n, "counter", name)
        self.assertEqual(r.stdout, "9\n")
        r = self.ebctl(n, "counter", name, "delete")
        self.assertEqual((r.returncode, r.stdout), (0, "deleted=true\n"),
                         r.stderr)
        r = self.ebctl(n, "counter", name, "delete")
        self.assertEqual(r.stdout, "deleted=false\n")
        r = self.ebctl(n, "id", "3")
        ids = [int(x) for x in r.stdout.split()]
        self.assertEqual(len(ids), 3)
        self.assertEqual(ids, sorted(ids))
        # lock: held while stdin is open; another client finds it busy.
        p = subprocess.Popen([EBCTL, "--bridge", "%s:%d" % n.bridge,
                              "lock", name], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        try:
            line = p.stdout.readline()
            self.assertTrue(line.startswith("token="), line)
            c = Client(self.nodes[2])
            with self.assertRaises(Failure) as cm:
                c.request("ebnode.lock", {"op": "try", "name": name})
            self.assertEqual(cm.exception.code, 409)
            p.stdin.close()
            self.assertEqual(p.stdout.readline(), "released\n")
            self.assertEqual(p.wait(ebtest.scaled(10)), 0)
            r2 = c.request("ebnode.lock", {"op": "try", "name": name})
            self.assertGreater(r2["token"], int(line.split("=")[1]))
            c.close()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def test_6_holder_partitioned(self):
        """The holder's node is cut from ZooKeeper (ebproxy pause): the
        holder is told it lost the lock (notify) before anybody else gets
        it, and a write with its old token is then rejected by the fencing
        resource."""
        zk = ebtest.zk_connect_string()
        proxy = Proxy(zk.split(",")[0])
        root = ebtest.unique_root()
        nodes = []
        try:
            cfg = ebtest.merge(node_config(root, 0),
                               {"zookeeper": {"connect": "127.0.0.1:%d"
                                              % proxy.port}})
            nodes.append(ebtest.EbNode(cfg, name="p0"))
            nodes.append(ebtest.EbNode(node_config(root, 1), name="p1"))
            a, b = Client(nodes[0]), Client(nodes[1])
            ra, res = self.hold_notified(a, "p", "notify.a")
            got = {}

            def waiter():
                r = b.request("ebnode.lock", {"op": "acquire", "name": "p",
                                              "timeout_ms": 30000}, 40)
                got["t"] = time.monotonic()
                got["token"] = r["token"]
                got["ok"] = res.enter(r["token"])

            t = threading.Thread(target=waiter)
            t.start()
            t0 = time.monotonic()
            proxy.cmd("pause")
            f = a.b.recv_until(lambda f: f.get("address") == "notify.a",
                               timeout=ebtest.scaled(10))
            t_rev = time.monotonic()
            res.leave()  # the holder stops when told
            self.assertEqual(f["body"]["token"], ra["token"])
            self.assertIn(f["body"]["reason"],
                          ("zk-suspended", "lease-expired"))
            t.join(ebtest.scaled(30))
            self.assertIn("t", got)
            self.assertTrue(got["ok"])
            self.assertGreater(got["token"], ra["token"])
            self.assertLess(t_rev, got["t"])
            self.assertEqual(res.max_holders, 1)
            # The old holder writing late with its token is fenced off.
            self.assertFalse(res.enter(ra["token"]))
            report("holder-partitioned", "holder told (%s) %.0f ms after "
                   "the cut, next holder %.0f ms after the cut (margin "
                   "%.0f ms); tokens %d -> %d; late write with the old "
                   "token rejected" % (f["body"]["reason"],
                                       (t_rev - t0) * 1000,
                                       (got["t"] - t0) * 1000,
                                       (got["t"] - t_rev) * 1000,
                                       ra["token"], got["token"]))
            proxy.cmd("resume")
            a.close()
            b.close()
        finally:
            for n in nodes:
                n.close()
            proxy.close()

    def test_7_holder_node_paused(self):
        """The holder's node is frozen (SIGSTOP) while a client on another
        node waits: its session expires, the waiter gets the lock with a
        larger token; once the node runs again (SIGCONT) the old holder is
        told it lost the lock, a late write with its old token is rejected
        by the fencing resource, releasing with it answers not_held, and
        the node takes part again (a new acquire gets a larger token)."""
        root = ebtest.unique_root()
        nodes = [ebtest.EbNode(node_config(root, i), name="z%d" % i)
                 for i in range(2)]
        stopped = False
        try:
            a, b = Client(nodes[0]), Client(nodes[1])
            ra, res = self.hold_notified(a, "z", "notify.z")
            got = {}
            started = threading.Event()

            def waiter():
                started.set()
                r = b.request("ebnode.lock", {"op": "acquire", "name": "z",
                                              "timeout_ms": 30000}, 40)
                got["t"] = time.monotonic()
                got["token"] = r["token"]

            t = threading.Thread(target=waiter)
            t.start()
            started.wait(5)
            t_stop = time.monotonic()
            nodes[0].send_signal(signal.SIGSTOP)
            stopped = True
            t.join(ebtest.scaled(30))
            self.assertIn("token", got)
            hand = (got["t"] - t_stop) * 1000
            self.assertGreater(got["token"], ra["token"])
            # The frozen holder still believes it holds: only the token
            # keeps it out of the successor's way.
            res.leave()
            self.assertTrue(res.enter(got["token"]))
            res.leave()
            t_cont = time.monotonic()
            nodes[0].send_signal(signal.SIGCONT)
            stopped = False
            f = a.b.recv_until(lambda f: f.get("address") == "notify.z",
                               timeout=ebtest.scaled(10))
            told = (time.monotonic() - t_cont) * 1000
            self.assertEqual(f["body"]["token"], ra["token"])
            self.assertIn(f["body"]["reason"],
                          ("zk-expired", "lease-expired", "zk-suspended"))
            self.assertFalse(res.enter(ra["token"]))
            with self.assertRaises(Failure) as cm:
                a.request("ebnode.lock", {"op": "release", "name": "z",
                                          "token": ra["token"]})
            self.assertEqual(cm.exception.code, 404)
            b.request("ebnode.lock", {"op": "release", "name": "z",
                                      "token": got["token"]})
            # Back in the cluster: the lock goes to the old holder's node
            # again, with a larger token.
            deadline = time.monotonic() + ebtest.scaled(20)
            while True:
                try:
                    r2 = a.request("ebnode.lock", {"op": "acquire",
                                                   "name": "z",
                                                   "timeout_ms": 5000}, 10)
                    break
                except Failure:
                    if time.monotonic() > deadline:
                        raise
            self.assertGreater(r2["token"], got["token"])
            self.assertTrue(res.enter(r2["token"]))
            report("holder-node-paused", "SIGSTOP of the holder's node: "
                   "next holder after %.0f ms (session %d ms); after "
                   "SIGCONT the old holder was told (%s) in %.0f ms; its "
                   "token %d rejected, release not_held; tokens %d -> %d "
                   "-> %d" % (hand, SESSION_MS, f["body"]["reason"], told,
                              ra["token"], ra["token"], got["token"],
                              r2["token"]))
            a.close()
            b.close()
        finally:
            if stopped:
                nodes[0].send_signal(signal.SIGCONT)
            for n in nodes:
                n.close()

    def test_9_holder_dies(self):
        # Last: kills a node (a fresh set of 3 for this test).
        root = ebtest.unique_root()
        nodes = [ebtest.EbNode(node_config(root, i), name="k%d" % i)
                 for i in range(3)]
        try:
            a, b, c = [Client(n) for n in nodes]
            ra = a.request("ebnode.lock", {"op": "acquire", "name": "k"})
            res = Fenced()
            self.assertTrue(res.enter(ra["token"]))
            got = []
            mu = threading.Lock()

            def wait(cl, tag):
                try:
                    r = cl.request("ebnode.lock", {"op": "acquire",
                                                   "name": "k",
                                                   "timeout_ms": 30000}, 40)
                except Exception as e:
                    with mu:
                        got.append((tag, None, repr(e)))
                    return
                t = time.monotonic()
                with mu:
                    ok = res.enter(r["token"])
                    got.append((tag, t, r["token"], ok))
                    # Hold a moment to catch a second holder, then go.
                time.sleep(0.2)
                res.leave()
                cl.request("ebnode.lock", {"op": "release", "name": "k",
                                           "token": r["token"]})

            ts = [threading.Thread(target=wait, args=(b, "b")),
                  threading.Thread(target=wait, args=(c, "c"))]
            for t in ts:
                t.start()
            time.sleep(0.5)  # both waiting (not a synchronisation)
            t_kill = time.monotonic()
            nodes[0].send_signal(signal.SIGKILL)
            res.leave()  # the holder is gone with its node
            for t in ts:
                t.join(60)
            self.assertEqual(len(got), 2, got)
            for g in got:
                self.assertIsNotNone(g[1], g)
                self.assertTrue(g[3], "token %d rejected" % g[2])
                self.assertGreater(g[2], ra["token"])
            first = min(g[1] for g in got)
            hand = (first - t_kill) * 1000
            self.assertEqual(res.max_holders, 1)
            self.assertLess(hand, SESSION_MS + 500)
            report("holder-dies", "next waiter got the lock %.0f ms after "
                   "SIGKILL (session %d ms, bound %d ms); tokens %d -> %s; "
                   "max holders %d" % (hand, SESSION_MS, SESSION_MS + 500,
                                       ra["token"],
                                       sorted(g[2] for g in got),
                                       res.max_holders))
            for cl in (b, c):
                cl.close()
        finally:
            for n in nodes:
                n.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
