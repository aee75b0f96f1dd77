#!/usr/bin/env python3
"""Rolling upgrade and rollback under ingress load (issue 27), against real
ebnode processes of two releases and a real ZooKeeper.

The previous release is the newest row of docs/RELEASES.md, built from its
recorded commit (prev_release.py; skipped with a message when the commit
is not in the clone). Three nodes on fixed ports, one config each that
both binaries read unchanged: n1 and n2 eligible (n1 leads first), n3 not
eligible. A client on n2 sends 200 ingress requests/s to external.ingress
(routed to "orders"), every 5th keyed with an ebnode.msgid header; a
consumer of "orders" is on n3.

Steps, each a SIGTERM and a start of the other binary with the same
config: upgrade n3 (consumer's node), n2 (client's node), n1 (leader; n2
takes over), then roll back n2 (now the leader; n1 takes over), n1, n3.
Before a node stops, what an operator would drain moves off it: the
consumer registers on another node first (the old registration goes with
the node), the client sends through another node and waits for the
answers of what it sent through the node that stops. After the node is
back and every link is up again, they move back.

Per step (requests by the time they were sent) the test prints sent, ok,
failed, lost (acknowledged, never received), unanswered, and the failures
that were in flight on the stopping node (explicit answers while it
stopped). It asserts: 0 failed outside those, 0 lost, 0 unanswered; every
node's /health "ok" and every link up at the end of each step (nothing
degraded while the versions are mixed).

The second test checks the negotiation and /health with the test-only
EBNODE_TEST_LINK_PROTOCOLS range: an old node (protocol 3 only), a new
node speaking 3..4 and one speaking only 4. The 3..4 node links with both
(version 3 and 4); the 4-only node cannot link to the old one and reports
/health "degraded" with reason version and ebnode_link_down{reason=
"version"} 1, until it restarts with the default range: then "ok".

EB_UPGRADE_STEP_S sets the steady seconds per step (default 4);
EB_UPGRADE_DRAIN=0 restarts nodes without moving anything off them first
(informational: see DRAIN below).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402
import prev_release  # noqa: E402

RATE = 200
STEADY_S = float(os.environ.get("EB_UPGRADE_STEP_S", "4"))
# EB_UPGRADE_DRAIN=0: nothing moves off the node that restarts (the
# consumer's node takes its consumer down with it, the client's node its
# connection): the table then shows what that costs; only "nothing
# acknowledged is lost" and "no request answered twice" are asserted.
DRAIN = os.environ.get("EB_UPGRADE_DRAIN", "1") != "0"
NEW_BIN = ebtest.ebnode_bin()


def _new_version():
    path = os.path.join(prev_release.SOURCE_DIR, "include", "ebnode",
                        "version.h")
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#define EB_VERSION_STRING"):
                return line.split('"')[1]
    return None


NEW_VERSION = _new_version()


def node_config(root, name, ports, eligible=True):
    cfg = ebtest.cluster_config(
        root, name,
        cluster={"listen": "127.0.0.1", "port": ports["cluster"]},
        bridge={"listen": "127.0.0.1", "port": ports["bridge"],
                "inbound": [{"address": "external.ingress"}],
                "outbound": [{"address": "orders"}]},
        admin={"listen": "127.0.0.1", "port": ports["admin"]},
        ingress={"default_route": {"to": "orders"}})
    if not eligible:
        cfg = ebtest.merge(cfg, {"node": {"eligible": False}})
    return cfg


def start(binary, config, name, env=None):
    """An EbNode of binary (ebtest reads the binary from EBNODE_BIN)."""
    saved = os.environ.get("EBNODE_BIN")
    os.environ["EBNODE_BIN"] = binary
    try:
        return ebtest.EbNode(config, name=name, env=env, ready_timeout=30)
    finally:
        os.environ["EBNODE_BIN"] = saved


def metrics(node):
    st, text = ebtest.admin_request(*node.admin, "GET", "/metrics")
    return text if st == 200 else ""


def metric(text, name, labels):
    """The value of name{labels...} (a dict), or None."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        if all('%s="%s"' % kv in line for kv in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def health(node):
    st, body = ebtest.admin_request(*node.admin, "GET", "/health")
    return st, body if isinstance(body, dict) else {}


def links_up(node, peers):
    text = metrics(node)
    return all(metric(text, "ebnode_link_up", {"peer": p}) == 1
               for p in peers)


class Client:
    """Ingress requests at RATE through one bridge connection at a time
    (one thread: send what is due, then read every open connection).
    move_to() sends through another node from then on; the connection it
    leaves is read until all it carried are answered, then closed."""

    def __init__(self, node):
        self.lock = threading.Lock()
        self.conns = [(ebtest.BridgeClient(*node.bridge), set())]
        self.sent = {}      # i -> send time
        self.answers = {}   # i -> (time, frame)
        self.cut = {}       # i -> time its connection closed unanswered
        self.dup = 0
        self.n = 0
        self.sending = True
        self.stop = False
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _send_due(self):
        due = int((time.monotonic() - self.t0) * RATE)
        conn, pending = self.conns[-1]
        while self.n < due:
            i = self.n
            self.n += 1
            self.sent[i] = time.monotonic()
            pending.add(i)
            # Every 5th request keyed (ebnode.msgid, issue 23): 0.1.0
            # passes the header on, this release deduplicates by it.
            headers = {"ebnode.msgid": "k%d" % i} if i % 5 == 0 else None
            try:
                conn.send("external.ingress", {"i": i}, headers=headers,
                          reply_address="r%d" % i)
            except OSError:
                self.cut[i] = time.monotonic()  # its node is gone
                pending.discard(i)

    def _read(self, conn, pending):
        try:
            f = conn.recv_frame(timeout=0.003)
        except TimeoutError:
            return True
        except (ConnectionError, OSError):
            now = time.monotonic()
            for i in pending:
                self.cut[i] = now
            pending.clear()
            return False
        addr = f.get("address", "")
        if not addr.startswith("r"):
            return True
        i = int(addr[1:])
        if i in self.answers:
            self.dup += 1
        else:
            self.answers[i] = (time.monotonic(), f)
        pending.discard(i)
        return True

    def _run(self):
        while not self.stop:
            with self.lock:
                if self.sending:
                    self._send_due()
                keep = []
                for k, (conn, pending) in enumerate(self.conns):
                    alive = self._read(conn, pending)
                    last = k == len(self.conns) - 1
                    if last or (alive and pending):
                        keep.append((conn, pending))
                    else:
                        conn.close()
                self.conns = keep

    def move_to(self, node):
        conn = ebtest.BridgeClient(*node.bridge)
        with self.lock:
            self.conns.append((conn, set()))

    def drained(self):
        """Only the current connection is left (the others answered)."""
        with self.lock:
            return len(self.conns) == 1

    def finish(self, bound):
        """Stops sending; waits (bounded) for the answers: what has none
        then is reported as unanswered, not raised here."""
        with self.lock:
            self.sending = False
        try:
            ebtest.wait_until(
                lambda: len(self.answers) + len(self.cut) >= self.n,
                bound, "every request answered")
        except AssertionError as e:
            print("finish: %s" % e)

    def close(self):
        self.stop = True
        self.thread.join(5)
        for conn, _ in self.conns:
            conn.close()


class PingedConsumer(ebtest.RecordingConsumer):
    """A RecordingConsumer that returns once its node has registered it:
    the bridge handles a connection's frames in order, so the pong after
    the register comes after the registration."""

    def __init__(self, node, address):
        self.c = ebtest.BridgeClient(*node.bridge)
        self.c.register(address)
        self.c.ping()
        self.msgs = []
        while True:
            f = self.c.recv_frame(timeout=ebtest.scaled(10))
            if f.get("type") == "pong":
                break
            if f.get("type") == "message":
                self.msgs.append(f)
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()


class Consumers:
    """The consumers of "orders" (one per node it was moved to); the ids
    received across all of them."""

    def __init__(self):
        self.list = []

    def add(self, node):
        c = PingedConsumer(node, "orders")
        self.list.append(c)
        return c

    def received(self):
        got = set()
        for c in self.list:
            for m in list(c.msgs):
                b = m.get("body")
                if isinstance(b, dict) and "i" in b:
                    got.add(b["i"])
        return got

    def close(self):
        for c in self.list:
            c.close()


class Rolling(unittest.TestCase):
    def setUp(self):
        version, commit, _ = prev_release.previous_release()
        self.prev_version = version
        self.old_bin = prev_release.prev_ebnode(commit)
        print("previous release %s (%s): %s" % (version, commit[:12],
                                                self.old_bin))

    def cluster(self, binaries, envs=None):
        root = ebtest.unique_root()
        self.configs = {}
        self.nodes = {}
        self.binaries = dict(binaries)
        for k, name in enumerate(("n1", "n2", "n3")):
            ports = {p: ebtest.free_port()
                     for p in ("cluster", "bridge", "admin")}
            self.configs[name] = node_config(root, name, ports,
                                             eligible=name != "n3")
        for name in ("n1", "n2", "n3"):
            env = (envs or {}).get(name)
            self.nodes[name] = start(binaries[name], self.configs[name],
                                     name, env)
            self.addCleanup(lambda n=name: self.nodes[n].close())
            if name == "n1":
                ebtest.wait_until(lambda: ebtest.admin_request(
                    *self.nodes["n1"].admin, "GET", "/leader")[0] == 200,
                    20, "n1 leads")

    def restart(self, name, binary, env=None):
        node = self.nodes[name]
        code = node.stop()
        self.assertEqual(code, 0, "%s exit code" % name)
        node.close()
        self.nodes[name] = start(binary, self.configs[name], name, env)
        self.binaries[name] = binary

    def all_linked(self, bound=30):
        names = list(self.nodes)

        def pred():
            return all(links_up(self.nodes[n], [p for p in names if p != n])
                       for n in names)
        ebtest.wait_until(pred, bound, "every link up")

    def test_rolling_upgrade_and_rollback_under_load(self):
        old, new = self.old_bin, NEW_BIN
        self.cluster({"n1": old, "n2": old, "n3": old})
        for name, cfg in self.configs.items():
            for b in (old, new):
                saved = os.environ.get("EBNODE_BIN")
                os.environ["EBNODE_BIN"] = b
                try:
                    r = ebtest.run_ebnode(["--check"], config=cfg)
                finally:
                    os.environ["EBNODE_BIN"] = saved
                self.assertEqual(r.code, 0, (name, b, r))
        self.all_linked()
        consumers = Consumers()
        self.addCleanup(consumers.close)
        consumers.add(self.nodes["n3"])
        client = Client(self.nodes["n2"])
        self.addCleanup(client.close)
        ebtest.wait_until(lambda: any(
            f["type"] == "message" for _, f in list(client.answers.values())),
            20, "ingress routed end to end")

        steps = []  # (label, t_start, t_end, t_stop, t_back)

        def steady(label, t_start):
            # The measured window of load in this state (not a wait for
            # anything: the load runs meanwhile).
            time.sleep(STEADY_S)
            return label, t_start, time.monotonic()

        def away(name):
            # Where the client or the consumer goes while name restarts.
            return "n1" if name != "n1" else None

        def step(label, name, binary):
            t0 = time.monotonic()
            moved_consumer = moved_client = False
            if not DRAIN:
                t_stop = time.monotonic()
                self.restart(name, binary)
                t_back = time.monotonic()
                self.all_linked()
                if name == "n3":
                    consumers.add(self.nodes["n3"])
                if name == "n2":
                    client.move_to(self.nodes["n2"])  # reconnects
                _, _, t1 = steady(label, t0)
                steps.append((label, t0, t1, t_stop, t_back))
                return
            if name == "n3":
                # n1 leads whenever n3 restarts: registered there (the
                # pong after the register says so), the route has it.
                consumers.add(self.nodes[away(name)])
                moved_consumer = True
            if name == "n2":
                client.move_to(self.nodes[away(name)])
                ebtest.wait_until(client.drained, 15,
                                  "the client's requests through n2 "
                                  "answered")
                moved_client = True
            t_stop = time.monotonic()
            self.restart(name, binary)
            t_back = time.monotonic()
            self.all_linked()
            if moved_consumer:
                consumers.add(self.nodes["n3"])
            if moved_client:
                client.move_to(self.nodes["n2"])
            for n, node in self.nodes.items():
                st, h = health(node)
                self.assertEqual((st, h.get("status")), (200, "ok"),
                                 "%s /health after %s: %r" % (n, label, h))
                # A new node never saw version skew (an old one has no
                # such metric).
                self.assertEqual(
                    metric(metrics(node), "ebnode_link_down_total",
                           {"reason": "version"}),
                    0 if self.binaries[n] == new else None,
                    "%s after %s" % (n, label))
            _, _, t1 = steady(label, t0)
            steps.append((label, t0, t1, t_stop, t_back))

        base = steady("all old (%s)" % self.prev_version, time.monotonic())
        steps.append(base + (None, None))
        step("upgrade n3 (consumer's node) old->new", "n3", new)
        step("upgrade n2 (client's node) old->new", "n2", new)
        step("upgrade n1 (leader) old->new", "n1", new)
        step("rollback n2 (leader) new->old", "n2", old)
        step("rollback n1 new->old", "n1", old)
        step("rollback n3 (consumer's node) new->old", "n3", old)
        client.finish(30)
        # Deliveries of the last acknowledgements may trail them.
        try:
            ebtest.wait_until(
                lambda: self.acked(client) <= consumers.received(), 10,
                "every acknowledged request received")
        except AssertionError as e:
            print("lost: %s" % e)  # counted per step by report()
        self.report(client, consumers, steps)

    @staticmethod
    def acked(client):
        return {i for i, (_, f) in list(client.answers.items())
                if f["type"] == "message"}

    def report(self, client, consumers, steps):
        got = consumers.received()
        rows = []
        bad = []
        for label, t0, t1, t_stop, t_back in steps:
            ids = [i for i, t in client.sent.items() if t0 <= t < t1]
            ok = failed = lost = unanswered = inflight = cut = 0
            reasons = {}
            for i in ids:
                a = client.answers.get(i)
                if i in client.cut:
                    cut += 1
                elif a is None:
                    unanswered += 1
                elif a[1]["type"] == "message":
                    ok += 1
                    if i not in got:
                        lost += 1
                else:
                    f = a[1]
                    why = "%s %s" % (f.get("failureCode"), f.get("message"))
                    # Sent before the node stopped, answered after: in
                    # flight on it.
                    in_stop = (t_stop is not None and
                               client.sent[i] < t_stop <= a[0])
                    if in_stop:
                        inflight += 1
                    else:
                        failed += 1
                    reasons[why] = reasons.get(why, 0) + 1
            rows.append((label, len(ids), ok, failed, lost, unanswered,
                         inflight, cut, reasons))
            if failed or lost or unanswered or cut:
                bad.append(label)
        print("\n| step | sent | ok | failed | lost | unanswered | "
              "in flight on the stopped node (failed explicitly) | cut |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | %d | %d | %d | %d | %d | %d | %d |" % r[:8])
        for r in rows:
            if r[8]:
                print("  %s: failures %r" % (r[0], r[8]))
        print("duplicate answers: %d" % client.dup)
        self.assertEqual(client.dup, 0)
        self.assertEqual(sum(r[4] for r in rows), 0, "acknowledged, lost")
        if DRAIN:
            self.assertEqual(bad, [], "steps with failed, lost, unanswered "
                             "or cut requests")

    def test_version_skew_reported_by_health(self):
        """Forced ranges: 3..4 links with the old release at 3 and with a
        4-only node at 4; the 4-only node and the old one cannot link, and
        the 4-only node says so on /health until it speaks 3 again."""
        old, new = self.old_bin, NEW_BIN
        self.cluster({"n1": old, "n2": new, "n3": new},
                     envs={"n2": {"EBNODE_TEST_LINK_PROTOCOLS": "3..4"},
                           "n3": {"EBNODE_TEST_LINK_PROTOCOLS": "4..4"}})
        n1, n2, n3 = (self.nodes[n] for n in ("n1", "n2", "n3"))
        ebtest.wait_until(lambda: links_up(n2, ["n1", "n3"]), 20,
                          "n2 linked to both")
        text = metrics(n2)
        self.assertEqual(metric(text, "ebnode_link_version", {"peer": "n1"}),
                         3)
        self.assertEqual(metric(text, "ebnode_link_version", {"peer": "n3"}),
                         4)
        st, h = health(n2)
        self.assertEqual(h.get("status"), "ok", h)

        def skewed():
            st, h = health(n3)
            return h.get("status") == "degraded" and \
                "reason=version" in h.get("reason", "") and \
                "node=n1" in h.get("reason", "")
        ebtest.wait_until(skewed, 10, "n3 degraded for version skew")
        st, h = health(n3)
        print("n3 /health while skewed: %d %r" % (st, h))
        self.assertEqual(st, 200)
        text = metrics(n3)
        self.assertEqual(metric(text, "ebnode_link_up", {"peer": "n1"}), 0)
        self.assertEqual(metric(text, "ebnode_link_down",
                                {"reason": "version"}), 1)
        self.assertGreaterEqual(metric(text, "ebnode_link_down_total",
                                       {"reason": "version"}), 1)
        self.assertEqual(metric(text, "ebnode_link_down",
                                {"reason": "unreachable"}), 0)
        # /nodes shows each member's version and range (the old one none).
        st, body = ebtest.admin_request(*n2.admin, "GET", "/nodes")
        byid = {m["node_id"]: m for m in body["nodes"]}
        self.assertEqual((byid["n2"]["link_min"], byid["n2"]["link_max"]),
                         (3, 4))
        self.assertEqual((byid["n3"]["link_min"], byid["n3"]["link_max"]),
                         (4, 4))
        self.assertEqual((byid["n1"]["link_min"], byid["n1"]["link_max"]),
                         (0, 0))
        self.assertEqual(byid["n1"]["version"], self.prev_version)
        self.assertEqual(byid["n2"]["version"], NEW_VERSION)
        # ebctl nodes: the same columns in its table.
        ebctl = os.environ.get("EBCTL_BIN")
        if ebctl:
            r = subprocess.run([ebctl, "nodes", "--admin",
                                "%s:%d" % n2.admin], capture_output=True,
                               text=True, timeout=ebtest.scaled(10),
                               check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            print(r.stdout)
            lines = r.stdout.splitlines()
            at = [k for k, ln in enumerate(lines) if ln.startswith("NODE")]
            self.assertEqual(len(at), 1, r.stdout)
            head = lines[at[0]].split()
            for col in ("VERSION", "LINK_MIN", "LINK_MAX"):
                self.assertIn(col, head)
            rows = {ln.split()[0]: ln.split() for ln in lines[at[0] + 1:]
                    if ln.strip()}
            self.assertEqual(rows["n3"][head.index("LINK_MIN")], "4")
            self.assertEqual(rows["n2"][head.index("VERSION")], NEW_VERSION)
        # n3 back at the default range: every link up, nothing degraded.
        self.restart("n3", new)
        self.all_linked()
        for n, node in self.nodes.items():
            st, h = health(node)
            self.assertEqual(h.get("status"), "ok", (n, h))
        text = metrics(self.nodes["n3"])
        self.assertEqual(metric(text, "ebnode_link_down",
                                {"reason": "version"}), 0)
        self.assertEqual(metric(metrics(n2), "ebnode_link_version",
                                {"peer": "n3"}), 3)


class Configs(unittest.TestCase):
    """Every configuration the previous release accepts (its own example
    files and fuzz corpus, this tree's, and edge cases) passes this
    release's --check; the reverse direction is reported (a rollback needs
    a config the old release reads: docs/UPGRADING.md)."""

    EDGE = {
        "heartbeat-at-link-timeout": {"cluster": {"heartbeat_ms": 3000}},
        "link-timeout-below-heartbeat": {
            "cluster": {"heartbeat_ms": 4000, "link_timeout_ms": 3000}},
        "optional-section": {"optional": ["vertx"], "vertx": {"x": 1}},
        "empty": {},
        "clustered": {"zookeeper": {"connect": "127.0.0.1:2181",
                                    "root": "/ebnode/x"},
                      "node": {"id": "a", "address": "a",
                               "eligible": False}},
    }

    def test_old_configs_start_on_new(self):
        version, commit, _ = prev_release.previous_release()
        old_bin = prev_release.prev_ebnode(commit)
        old_src = os.path.join(os.path.dirname(os.path.dirname(
            os.path.dirname(old_bin))), "src")
        files = []
        for top in (old_src, prev_release.SOURCE_DIR):
            for sub in ("etc", os.path.join("tests", "fuzz", "corpus",
                                            "conf")):
                d = os.path.join(top, sub)
                if os.path.isdir(d):
                    files += [os.path.join(d, f) for f in sorted(os.listdir(d))
                              if f.endswith((".json", ".jsonc"))]
        tmp = tempfile.mkdtemp(prefix="ebtest-configs-")
        self.addCleanup(shutil.rmtree, tmp, True)
        for name, cfg in self.EDGE.items():
            path = os.path.join(tmp, name + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            files.append(path)

        def check(binary, path):
            r = subprocess.run([binary, "--check", "-c", path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=ebtest.scaled(20),
                               cwd=os.path.dirname(path), check=False)
            return r.returncode, (r.stdout + r.stderr).strip()

        counts = {}
        broken = []
        print("\n| config | %s | %s |" % (version, "new"))
        print("|---|---|---|")
        for path in files:
            (oc, omsg), (nc, nmsg) = check(old_bin, path), check(NEW_BIN, path)
            short = os.path.relpath(path, os.path.dirname(old_src)) \
                if path.startswith(old_src) else os.path.basename(path)
            print("| %s | %s | %s |" % (
                short, "ok" if oc == 0 else "refused (%d)" % oc,
                "ok" if nc == 0 else "refused (%d)" % nc))
            key = ("old ok" if oc == 0 else "old refused",
                   "new ok" if nc == 0 else "new refused")
            counts[key] = counts.get(key, 0) + 1
            if oc == 0 and nc != 0:
                broken.append((short, nmsg))
        print("totals: %r" % sorted(counts.items()))
        self.assertEqual(broken, [], "accepted by %s, refused now" % version)
        # The edge cases this release accepts with a warning.
        for name in ("heartbeat-at-link-timeout",
                     "link-timeout-below-heartbeat", "optional-section"):
            code, msg = check(NEW_BIN, os.path.join(tmp, name + ".json"))
            self.assertEqual(code, 0, (name, msg))
            self.assertIn("WARN config:", msg, name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
