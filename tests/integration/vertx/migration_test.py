"""The migration (issue 26, part B): 3 engine.sh nodes (the Java engine,
../shared/vertx45) with ingress load on every node's bridge and a Java
consumer of the routed address (an engine.sh node in an election of its
own with a `--consumer` of the test's own address) are replaced
one by one with ebnode nodes (SIGTERM the Java node, start ebnode with the
same engine address), then the last engine leader is killed (SIGKILL),
then the way back: engine.sh nodes replace the ebnode nodes one by one
(the killed one's address first, then SIGTERM of each ebnode node and
engine.sh with its address).

Per step the test reports requests sent, answered ok, failed (each failure
an explicit err frame), lost (no answer within the client's deadline) and
duplicated (a second answer to one request). Goal: 0 lost, 0 duplicated.

ebnode's side: ingress.address = EXTERNAL_EVENT_INGRESS, ingress.ack =
false (the router relays the target's reply: ebnode's confirmed sends
cannot reach Vert.x consumers, which have no receipts), default route to
the test's address. Skips (exit 77) without java or the fixtures."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import ebtest  # noqa: E402
from vertx_test import (ANCHOR, VERTX45, Engine,  # noqa: E402
                        report, skip)

SESSION_MS = 3000
STEP_S = float(os.environ.get("EB_MIGRATION_STEP_S", "2.5"))
ANSWER_S = 10.0  # a request unanswered after this is lost


class Load:
    """One client: ingress requests one at a time to one bridge, switched
    to another bridge when its node is replaced."""

    def __init__(self, name, port):
        self.name = name
        self.port = port
        self.kind = "java"  # the kind of node whose bridge it uses
        self.lock = threading.Lock()
        self.counts = {}
        self.step = "start"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.n = 0
        self.on = None  # the port the thread talks to now
        self.errors = set()
        self.why = {}  # (step, kind, failure text) -> count

    def bump(self, key, step, kind):
        """Counts an outcome for the step and node kind of its send."""
        with self.lock:
            c = self.counts.setdefault((step, kind), {
                "sent": 0, "ok": 0, "failed": 0, "lost": 0,
                "duplicated": 0, "conn_closed": 0})
            c[key] += 1

    def switch(self, port, kind):
        """Moves the load to port (a node of kind "java" or "ebnode") and
        waits until the thread talks to it (its request in flight is
        answered first)."""
        with self.lock:
            self.port = port
            self.kind = kind
        ebtest.wait_until(lambda: self.on == port, ANSWER_S + 5,
                          "%s on port %d" % (self.name, port))

    def run(self):
        client = None
        port = None
        while not self.stop.is_set():
            with self.lock:
                want = self.port
                step, kind = self.step, self.kind
            if client is None or port != want:
                if client is not None:
                    client.close()
                try:
                    client = ebtest.BridgeClient("127.0.0.1", want)
                    port = want
                    self.on = want
                except OSError:
                    client = None
                    time.sleep(0.05)  # the node is starting: retry
                    continue
            self.n += 1
            token = "%s-%d" % (self.name, self.n)
            self.bump("sent", step, kind)
            try:
                client.send("EXTERNAL_EVENT_INGRESS",
                            {"id": token}, reply_address=token)
                f = client.recv_until(lambda f: f.get("address") == token,
                                      timeout=ANSWER_S)
            except (TimeoutError, AssertionError):
                self.bump("lost", step, kind)
                continue
            except OSError:
                # the node went away under the request: the client sees
                # its connection close (not silent, but no answer)
                self.bump("conn_closed", step, kind)
                client = None
                continue
            self.bump("ok" if f.get("type") == "message" else "failed",
                      step, kind)
            if f.get("type") != "message":
                why = f.get("message", "")[:60]
                with self.lock:
                    self.errors.add(why)
                    k = (step, kind, why)
                    self.why[k] = self.why.get(k, 0) + 1
            try:
                extra = client.recv_until(
                    lambda f: f.get("address") == token, timeout=0.001)
                if extra is not None:
                    self.bump("duplicated", step, kind)
            except (TimeoutError, AssertionError, OSError):
                pass
        if client is not None:
            client.close()


class Migration(unittest.TestCase):
    def setUp(self):
        if not os.access(ANCHOR, os.X_OK):
            skip("no Vert.x fixtures at %s (set EB_VERTX45)" % VERTX45)
        if subprocess.call(["sh", "-c", "command -v java"],
                           stdout=subprocess.DEVNULL) != 0:
            skip("no Java runtime (java not on PATH)")
        self.zk = ebtest.zk_connect_string()
        self.engine_root = "/mig-%s" % uuid.uuid4().hex[:8]
        self.eb_root = ebtest.unique_root()
        self.procs = []
        self.nodes = []

    def tearDown(self):
        for n in self.nodes:
            n.close()
        for p in self.procs:
            p.close()

    def ebnode(self, address, route_to):
        cfg = ebtest.cluster_config(self.eb_root, "addr-" + address)
        cfg = ebtest.merge(cfg, {
            "node": {"id": address},
            "zookeeper": {"session_timeout_ms": SESSION_MS},
            "bridge": {"inbound": [{"addressRegex": ".*"}],
                       "outbound": [{"addressRegex": ".*"}]},
            "ingress": {"address": "EXTERNAL_EVENT_INGRESS", "ack": False,
                        "default_route": {"to": route_to}},
            "vertx": {"enabled": True, "cluster_host": "127.0.0.1",
                      "engine_root": self.engine_root,
                      "engine_address": address},
        })
        n = ebtest.EbNode(cfg, name=address)
        self.nodes.append(n)
        return n

    def routed(self, node):
        """ebnode_ingress_routed_total of node (its router's count)."""
        st, text = ebtest.admin_request(*node.admin, "GET", "/metrics")
        self.assertEqual(st, 200)
        m = re.search(r"^ebnode_ingress_routed_total(?:\{[^}]*\})? (\d+)",
                      text, re.M)
        self.assertIsNotNone(m, "ebnode_ingress_routed_total in /metrics")
        return int(m.group(1))

    def ask(self, client, n, tag):
        """n ingress requests, one at a time; counts the answers by who
        routed them: the Java leader's ingress consumer answers
        {"status":"ok","by":E}, ebnode's router (ack false) relays the
        target's reply (an engine consumer: {"ok":true,"by":E,"n":N})."""
        out = {}
        for i in range(n):
            token = "%s-%d" % (tag, i)
            client.send("EXTERNAL_EVENT_INGRESS", {"id": token},
                        reply_address=token)
            f = client.recv_until(lambda f: f.get("address") == token,
                                  timeout=ANSWER_S)
            body = f.get("body") or {}
            if f.get("type") != "message":
                key = "failed"
            elif body.get("status") == "ok" and "by" in body:
                key = "java:" + body["by"]  # the engine leader's answer
            elif body.get("ok") is True and "n" in body:
                key = "ebnode-router"  # the consumer's reply, relayed
            else:
                key = "other"
            out[key] = out.get(key, 0) + 1
        return out

    def handover(self, node, stop, until, tag):
        """Load on node's bridge while stop() runs, until until() holds
        and 100 more requests went; returns the load's counts."""
        load = Load(tag, node.bridge[1])
        load.kind = "ebnode"
        with load.lock:
            load.step = tag
        load.thread.start()
        ebtest.wait_until(lambda: load.n >= 20, 30, "load running")
        stop()
        ebtest.wait_until(until, 30, "%s: the next leader" % tag)
        n0 = load.n
        ebtest.wait_until(lambda: load.n >= n0 + 100, 60, "load after")
        load.stop.set()
        load.thread.join(ANSWER_S + 5)
        row = load.counts.get((tag, "ebnode"), {})
        report("forward %s via the ebnode bridge" % tag,
               "%s; failures seen: %s" % (row, sorted(load.errors)))
        return row

    def test_forward_to_java_leader(self):
        """While a JVM leads the engine, ingress on an ebnode bridge goes
        through the ebnode gateway to that JVM's ingress consumer (never
        ebnode's router, never round robin), also after a hand-over from
        one JVM to another; once the last JVM stops and the ebnode node
        leads, it goes through ebnode's router."""
        n_req = int(os.environ.get("EB_FORWARD_N", "200"))
        # The routed address is this test's own: a JVM stopped by an
        # earlier test (anchor.sh does not leave the cluster on SIGTERM)
        # keeps its registrations of a shared name such as echo until its
        # session expires, and the JVMs drop what they route to it (no
        # answer, no error). Its consumer: an engine.sh node in an
        # election of its own (its ingress address unused), up for the
        # whole test.
        orders = "orders-%s" % uuid.uuid4().hex[:8]
        target = Engine("target", self.zk, self.engine_root + "-target",
                        "target", consumers=[orders],
                        ingress="unused-" + orders)
        self.procs.append(target)
        e1 = Engine("e1", self.zk, self.engine_root, "e1", route_to=orders)
        self.procs.append(e1)
        ebtest.wait_until(lambda: e1.said("ELECTED"), 30, "e1 ELECTED")
        e2 = Engine("e2", self.zk, self.engine_root, "e2", route_to=orders)
        self.procs.append(e2)
        # the ebnode node's child comes third: it leads once both stop
        node = self.ebnode("e3", route_to=orders)
        node.wait_log("engine-ingress-route: via=jvm leader=e1", timeout=30)
        client = ebtest.BridgeClient(*node.bridge)
        for leader, nxt, tag in ((e1, e2, "e1"), (e2, None, "e2")):
            before = self.routed(node)
            got = self.ask(client, n_req, tag)
            routed = self.routed(node) - before
            report("forward while %s (Java) leads" % tag, "%d requests on "
                   "the ebnode bridge: %s; routed by ebnode's router %d"
                   % (n_req, got, routed))
            self.assertEqual(got, {"java:" + tag: n_req})
            self.assertEqual(routed, 0)
            # the hand-over under load: SIGTERM of the leader; the next
            # JVM leads (Java to Java), or the ebnode node does
            if nxt is not None:
                def until():
                    return any("via=jvm leader=e2" in ln
                               for ln in node.log_lines())
            else:
                def until():
                    return any("engine-elected" in ln
                               for ln in node.log_lines())
            row = self.handover(node, leader.close, until,
                                "handover-from-" + tag)
            self.assertEqual(row.get("lost", 0), 0)
            self.assertEqual(row.get("duplicated", 0), 0)
        waited = sum("engine-ingress-route: via=wait" in ln
                     for ln in node.log_lines())
        report("forward", "the gateway held (route 'wait') %d times"
               % waited)
        before = self.routed(node)
        own = self.ask(client, n_req, "o")
        routed_own = self.routed(node) - before
        report("forward after e3 (ebnode) leads", "%d requests on the "
               "ebnode bridge: %s; routed by ebnode's router %d"
               % (n_req, own, routed_own))
        client.close()
        self.assertEqual(own, {"ebnode-router": n_req})
        self.assertEqual(routed_own, n_req)

    def test_replace_one_by_one(self):
        # The Java consumer of the routed address: an engine.sh node in an
        # election of its own (its ingress address unused) with a consumer
        # of this test's own address (see test_forward_to_java_leader).
        orders = "orders-%s" % uuid.uuid4().hex[:8]
        target = Engine("target", self.zk, self.engine_root + "-target",
                        "target", consumers=[orders],
                        ingress="unused-" + orders)
        self.procs.append(target)
        engines = []
        for i in (1, 2, 3):
            e = Engine("e%d" % i, self.zk, self.engine_root, "e%d" % i,
                       route_to=orders)
            self.procs.append(e)
            engines.append(e)
            if i == 1:
                ebtest.wait_until(lambda: e.said("ELECTED"), 30,
                                  "e1 ELECTED")
        loads = [Load("c%d" % i, e.bridge_port)
                 for i, e in enumerate(engines, 1)]
        steps = []

        def step(name):
            for ld in loads:
                with ld.lock:
                    ld.step = name
            steps.append(name)

        step("java-only")
        for ld in loads:
            ld.thread.start()
        time.sleep(STEP_S)  # a measurement window, not a synchronisation
        for i, e in enumerate(engines):
            step("replace-e%d" % (i + 1))
            # the load moves to a node that stays, the Java node stops
            # (SIGTERM: the engine hands over at once), ebnode starts with
            # its engine address, the load comes back
            if i + 1 < len(engines):
                loads[i].switch(engines[i + 1].bridge_port, "java")
            else:
                loads[i].switch(self.nodes[0].bridge[1], "ebnode")
            e.close()
            n = self.ebnode("e%d" % (i + 1), route_to=orders)
            loads[i].switch(n.bridge[1], "ebnode")
            time.sleep(STEP_S)
        step("kill-leader")
        back = []  # the engine.sh nodes of the way back
        leader = None
        for n in self.nodes:
            if any("engine-elected" in ln for ln in n.log_lines()):
                leader = n
        self.assertIsNotNone(leader, "an ebnode node leads the engine")
        idx = self.nodes.index(leader)
        survivors = [k for k in range(3) if k != idx]
        loads[idx].switch(self.nodes[survivors[0]].bridge[1], "ebnode")
        leader.kill()
        # a survivor leads once the killed node's session has expired
        ebtest.wait_until(
            lambda: any(any("engine-elected" in ln for ln in
                            self.nodes[k].log_lines()) for k in survivors),
            SESSION_MS / 1000.0 + 30, "a surviving ebnode node elected")
        time.sleep(STEP_S)  # a measurement window
        # The way back: engine.sh nodes replace the ebnode nodes one by
        # one under the same load, the killed one's address first.
        for k in [idx] + survivors:
            address = "e%d" % (k + 1)
            step("back-" + address)
            if k != idx:
                # the load leaves the node, which stops with SIGTERM
                # (its child goes at once), Java takes its address
                loads[k].switch(back[0].bridge_port, "java")
                self.nodes[k].stop()
            e = Engine(address, self.zk, self.engine_root, address,
                       route_to=orders)
            self.procs.append(e)
            back.append(e)
            loads[k].switch(e.bridge_port, "java")
            time.sleep(STEP_S)
        step("end")
        for ld in loads:
            ld.stop.set()
        for ld in loads:
            ld.thread.join(ANSWER_S + 5)
        keys = ("sent", "ok", "failed", "lost", "duplicated", "conn_closed")
        lost = {"java": 0, "ebnode": 0}
        dup = 0
        for s in steps[:-1]:
            for kind in ("java", "ebnode"):
                row = dict.fromkeys(keys, 0)
                for ld in loads:
                    for k, v in ld.counts.get((s, kind), {}).items():
                        row[k] += v
                if row["sent"] == 0:
                    continue
                lost[kind] += row["lost"]
                dup += row["duplicated"]
                report("migration %s via %s bridges" % (s, kind),
                       "sent %(sent)d ok %(ok)d failed %(failed)d lost "
                       "%(lost)d duplicated %(duplicated)d "
                       "connection-closed %(conn_closed)d" % row)
                why = {}
                for ld in loads:
                    for (s2, k2, w), v in ld.why.items():
                        if s2 == s and k2 == kind:
                            why[w] = why.get(w, 0) + v
                if why:
                    report("migration %s via %s bridges" % (s, kind),
                           "failures %s" % sorted(why.items()))
        errors = set()
        for ld in loads:
            errors |= ld.errors
        report("migration", "lost via ebnode bridges %d, via Java bridges "
               "%d; duplicated %d; failures seen: %s"
               % (lost["ebnode"], lost["java"], dup, sorted(errors)))
        # ebnode's side loses nothing and nothing is answered twice; a
        # Java leader that stops drops what its bridge peers had routed to
        # it (Vert.x has no drain), which the Java clients see as lost
        self.assertEqual(lost["ebnode"], 0)
        self.assertEqual(dup, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
