"""Membership and election with real ebnode processes and a real ZooKeeper
(the shared "zk" fixture; every test uses its own root).

Sizes are small by default to keep CI short; the full scenarios of issue 3
run with EB_DUP_ROUNDS=30 EB_FAILOVER_ROUNDS=20 EB_HERD_NODES=30."""

import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cl  # noqa: E402
from cl import ebtest  # noqa: E402

DUP_ROUNDS = cl.env_int("EB_DUP_ROUNDS", 5)
FAILOVER_ROUNDS = cl.env_int("EB_FAILOVER_ROUNDS", 5)
HERD_NODES = cl.env_int("EB_HERD_NODES", 10)


class DuplicateRace(unittest.TestCase):
    def race(self, k, rounds):
        for r in range(rounds):
            root = ebtest.unique_root()
            procs = []
            try:
                for i in range(k):
                    cfg = cl.config(root, i)
                    cfg = ebtest.merge(cfg, {"node": {"address": "same"}})
                    procs.append(ebtest.EbNode(cfg, name="dup%d" % i,
                                               wait_ready=False))
                # Each either prints READY or exits on its own.
                winners, losers = [], []
                for p in procs:
                    try:
                        p.wait_ready(20)
                        winners.append(p)
                    except ebtest.EbNodeError as e:
                        losers.append((p, e.code))
                self.assertEqual(len(winners), 1, "round %d: %d winners"
                                 % (r, len(winners)))
                for p, code in losers:
                    self.assertEqual(code, 3, p.log_text())
                    text = p.log_text()
                    self.assertIn("duplicate-address: address=same", text)
                    self.assertIn('node_id="%s"' % winners[0].node_id, text)
                st, body = cl.admin(winners[0], "GET", "/nodes")
                self.assertEqual(st, 200)
                self.assertEqual(len(body["nodes"]), 1)
            finally:
                cl.stop_all(procs)
        cl.report("duplicate-race-%d" % k, "%d rounds, one winner each"
                  % rounds)

    def test_two(self):
        self.race(2, DUP_ROUNDS)

    def test_five(self):
        self.race(5, DUP_ROUNDS)


class FiveNodes(unittest.TestCase):
    def test_one_leader_same_view(self):
        root = ebtest.unique_root()
        nodes = cl.start_nodes(root, 5)
        try:
            leader = cl.wait_one_leader(nodes)
            self.assertEqual(leader.name, "n00")

            def same_view():
                views = []
                for n in nodes:
                    st, body = cl.admin(n, "GET", "/nodes")
                    if st != 200 or len(body["nodes"]) != 5:
                        return False
                    views.append((body["leader"], tuple(
                        (m["node_id"], m["sequence"], m["czxid"],
                         m["leader"]) for m in body["nodes"])))
                return len(set(views)) == 1 and views[0]
            view = ebtest.wait_until(same_view, 10, "same /nodes on all")
            self.assertEqual(view[0], "n00")
            self.assertEqual(sum(1 for m in view[1] if m[3]), 1)
            for n in nodes:
                st, body = cl.admin(n, "GET", "/nodes")
                selfs = [m for m in body["nodes"] if m["self"]]
                self.assertEqual([m["node_id"] for m in selfs], [n.node_id])
                st, h = cl.admin(n, "GET", "/health")
                self.assertEqual(st, 200)
                self.assertEqual(h["leader"], n is leader)
                st, ld = cl.admin(n, "GET", "/leader")
                self.assertEqual(st, 200)
                self.assertEqual(ld["node_id"], "n00")
            # Release: the leader steps down, the next one takes over.
            st, body = cl.admin(leader, "POST", "/leader/release")
            self.assertEqual(st, 200)
            st, body = cl.admin(nodes[2], "POST", "/leader/release")
            self.assertEqual(st, 409)
            new = cl.wait_one_leader(nodes)
            self.assertEqual(new.name, "n01")
            cl.assert_no_overlap(self, nodes)
        finally:
            cl.stop_all(nodes)


class Failover(unittest.TestCase):
    def test_sigterm_rounds(self):
        root = ebtest.unique_root()
        nodes = cl.start_nodes(root, 3)
        idx = 3
        lat = []
        everyone = list(nodes)
        try:
            for _ in range(FAILOVER_ROUNDS):
                leader = cl.wait_one_leader(nodes)
                leader.stop()
                nodes.remove(leader)
                new = cl.wait_one_leader(nodes)
                rv = [e for e in cl.events(leader) if e[1] == "revoked"]
                el = [e for e in cl.events(new) if e[1] == "elected"]
                self.assertEqual(rv[-1][3], "shutdown")
                lat.append(el[-1][0] - rv[-1][0])
                # Keep three nodes.
                nodes.append(cl.start_nodes(root, 1, first=idx)[0])
                everyone.append(nodes[-1])
                idx += 1
            med = cl.median_ms(lat)
            cl.report("sigterm-failover", "median=%.1fms max=%.1fms rounds=%d"
                      % (med, max(lat) * 1000, len(lat)))
            self.assertLess(med, 100.0 * ebtest.TIMEOUT_MULTIPLIER)
            cl.assert_no_overlap(self, everyone)
        finally:
            cl.stop_all(everyone)

    def test_sigkill(self):
        root = ebtest.unique_root()
        nodes = cl.start_nodes(root, 3)
        try:
            leader = cl.wait_one_leader(nodes)
            t0 = cl.now()
            leader.kill()
            nodes.remove(leader)
            new = cl.wait_one_leader(nodes, timeout=10)
            el = [e for e in cl.events(new) if e[1] == "elected"]
            dt = el[-1][0] - t0
            cl.report("sigkill-failover", "%.0fms (session %dms)"
                      % (dt * 1000, cl.SESSION_MS))
            self.assertLess(dt * 1000, (cl.SESSION_MS + 500) *
                            ebtest.TIMEOUT_MULTIPLIER)
            cl.assert_no_overlap(self, nodes + [leader],
                                 ends={leader.name: t0})
        finally:
            cl.stop_all(nodes + [leader])


class Herd(unittest.TestCase):
    def test_only_successor_checks(self):
        root = ebtest.unique_root()
        nodes = cl.start_nodes(root, HERD_NODES)
        try:
            leader = cl.wait_one_leader(nodes, timeout=20)
            others = [n for n in nodes if n is not leader]
            ebtest.wait_until(lambda: all(
                len(cl.admin(n, "GET", "/nodes")[1]["nodes"]) == HERD_NODES
                for n in others), 20, "full member lists")
            before = {n.name: cl.checks(n, "predecessor-deleted")
                      for n in others}
            leader.kill()
            new = cl.wait_one_leader(others, timeout=10)
            time.sleep(0.5)  # let any (wrong) late wake-up show up
            woke = [n.name for n in others
                    if cl.checks(n, "predecessor-deleted") > before[n.name]]
            cl.report("herd", "%d nodes, leader killed, woke=%r"
                      % (HERD_NODES, woke))
            self.assertEqual(woke, [new.name])
        finally:
            cl.stop_all(nodes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
