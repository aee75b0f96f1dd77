"""An election over well-formed members only, and the own member changed from
outside, with real ebnode processes and a real ZooKeeper (the shared "zk"
fixture; every test uses its own root). The damaging znodes and the 300
extra sessions come from zkpoke (tests/integration/zk/zkpoke.c, a raw
libzookeeper_st client).

Each case checks: a leader within one session timeout, /leader naming the
member that actually leads on every node, /health true, and no busy loop
(ebnode_zk_requests_total sampled over a few seconds, per node)."""

import os
import re
import select
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cl  # noqa: E402
from cl import ebtest  # noqa: E402

SESSION_MS = cl.SESSION_MS
# A quiet node sends the leader heartbeat (session/4) and little else; the
# busy loops this replaces sent thousands per second.
MAX_REQ_PER_S = 25.0
SAMPLE_S = 3.0
DAMAGED = "m-0badc0de-0000-4000-8000-000000000000-0000000000"


class Poke:
    """A zkpoke process: one command per line, one answer per line."""

    def __init__(self, session_ms=SESSION_MS):
        binary = os.environ.get("EB_ZKPOKE_BIN")
        if not binary:
            raise RuntimeError("EB_ZKPOKE_BIN is not set")
        self.p = subprocess.Popen(
            [binary, ebtest.zk_connect_string(), str(session_ms)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self._line(20)
        if line != "READY":
            self.close()
            raise RuntimeError("zkpoke: %r" % line)

    def _line(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [],
                                ebtest.scaled(timeout))
        if not r:
            raise RuntimeError("zkpoke: no answer within %ss" % timeout)
        return self.p.stdout.readline().strip()

    def cmd(self, line, timeout=30):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self._line(timeout)

    def ok(self, line, timeout=30):
        ans = self.cmd(line, timeout)
        if not ans.startswith("OK"):
            raise AssertionError("zkpoke %r: %r" % (line, ans))
        return ans[2:].strip()

    def ensure(self, path):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            ans = self.cmd("create p open /" + "/".join(parts[:i]))
            if not (ans.startswith("OK") or "exists" in ans):
                raise AssertionError("zkpoke ensure: %r" % ans)

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(ebtest.scaled(30))
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.p.stdout.close()


def metric(node, name):
    st, text = cl.admin(node, "GET", "/metrics")
    assert st == 200, (st, text)
    m = re.search(r"^%s (\d+)$" % re.escape(name), text, re.M)
    assert m, "%s not in /metrics" % name
    return int(m.group(1))


def request_rates(nodes, seconds=SAMPLE_S):
    """ZooKeeper requests per second of each node over a quiet period."""
    before = [metric(n, "ebnode_zk_requests_total") for n in nodes]
    t0 = time.time()
    time.sleep(seconds)  # a measuring window, not synchronisation
    dt = time.time() - t0
    after = [metric(n, "ebnode_zk_requests_total") for n in nodes]
    return [(a - b) / dt for a, b in zip(after, before)]


class Members(unittest.TestCase):
    def setUp(self):
        self.root = ebtest.unique_root()
        self.members = self.root + "/members"
        self.nodes = []
        self.poke = Poke()

    def tearDown(self):
        cl.stop_all(self.nodes)
        self.poke.close()

    def start(self, count, first=0):
        t0 = time.time()
        self.nodes += cl.start_nodes(self.root, count, first=first)
        return t0

    def leader_node(self, timeout):
        return cl.wait_one_leader([n for n in self.nodes if n.running()],
                                  timeout)

    def assert_truthful(self, leader, invalid=None):
        """/leader on every node names the leader (never "" nor a
        foreign node), /health is ok, the ignored-children gauge is as
        expected and nothing is polled."""
        live = [n for n in self.nodes if n.running()]

        def agree():
            for n in live:
                st, body = cl.admin(n, "GET", "/leader")
                if st != 200 or body.get("node_id") != leader.node_id:
                    return None
            return True
        ebtest.wait_until(agree, SESSION_MS / 1000.0,
                          "/leader names %s everywhere" % leader.node_id)
        for n in live:
            st, body = cl.admin(n, "GET", "/health")
            self.assertEqual(st, 200, body)
            self.assertEqual(body["reason"], "registered", body)
            st, body = cl.admin(n, "GET", "/nodes")
            self.assertEqual(body["leader"], leader.node_id)
            if invalid is not None:
                self.assertEqual(metric(n, "ebnode_members_invalid"),
                                 invalid)
        rates = request_rates(live)
        cl.report("zk-requests-per-s", "%s: %s" % (
            self.id().split(".")[-1],
            " ".join("%.1f" % r for r in rates)))
        for n, r in zip(live, rates):
            self.assertLess(r, MAX_REQ_PER_S, "%s: %.1f requests/s"
                            % (n.name, r))

    # ---- damaged children below every node ----

    def damaged(self, create):
        self.poke.ensure(self.members)
        self.poke.ok(create)
        t0 = self.start(3)
        leader = self.leader_node(SESSION_MS / 1000.0)
        took = time.time() - t0
        self.assertEqual(leader.node_id, "n00")
        cl.report("time-to-leader", "%s: %.0f ms from the first start"
                  % (self.id().split(".")[-1], took * 1000))
        self.assert_truthful(leader, invalid=1)
        for n in self.nodes:
            # One WARN per bad child, not one per check.
            self.assertEqual(n.log_text().count(
                "WARN childcache: member-ignored:"), 1, n.name)

    def test_persistent_bad_json_lowest(self):
        self.damaged("create p open %s/%s {not-json"
                     % (self.members, DAMAGED))

    def test_persistent_valid_json_naming_another_node(self):
        self.damaged('create p open %s/%s {"node_id":"n02",'
                     '"address":"addr-n02","cluster_port":1}'
                     % (self.members, DAMAGED))

    def test_unreadable_lowest(self):
        self.damaged('create e noread %s/%s {"node_id":"x","address":"x"}'
                     % (self.members, DAMAGED))

    def test_foreign_name(self):
        self.damaged("create p open %s/zz-not-a-member x" % self.members)

    # ---- the leader's own member changed from outside ----

    def own_member(self, node):
        """The node's member as its own /nodes shows it (the cache loads
        right after READY: bounded wait)."""
        def mine():
            st, body = cl.admin(node, "GET", "/nodes")
            for m in body.get("nodes", []):
                if m["self"]:
                    return m["member"]
            return None
        return ebtest.wait_until(mine, 5, "own member in /nodes of %s"
                                 % node.name)

    def assert_reregistered(self, old, node, member):
        node.wait_log("registry: member-%s: member=%s" % (old, member), 5)
        node.wait_log("revoked: reason=member-gone", 5)

        def new_member():
            st, body = cl.admin(node, "GET", "/health")
            if body.get("reason") != "registered":
                return None
            m = self.own_member(node)
            return m if m != member else None
        return ebtest.wait_until(new_member, 5,
                                 "%s re-registered" % node.name)

    def test_leader_member_deleted(self):
        self.start(3)
        old = self.leader_node(10)
        member = self.own_member(old)
        t0 = time.time()
        self.poke.ok("delete %s/%s" % (self.members, member))
        # The leader's own log says it stopped before "one leader" can
        # mean anybody else.
        old.wait_log("revoked: reason=member-gone", SESSION_MS / 1000.0)
        new = self.leader_node(SESSION_MS / 1000.0)
        took = time.time() - t0
        self.assertNotEqual(new.node_id, old.node_id)
        self.assert_reregistered("deleted", old, member)
        # The claim was kept: still there, and the node is in /nodes once.
        self.poke.ok("get %s/addresses/addr-%s" % (self.root, old.node_id))
        st, body = cl.admin(new, "GET", "/nodes")
        self.assertEqual(sorted(m["node_id"] for m in body["nodes"]),
                         ["n00", "n01", "n02"])
        iv = cl.intervals(self.nodes)
        overlap = max([0.0] + [a[1] - b[0] for a, b in zip(iv, iv[1:])])
        cl.report("member-deleted", "new leader after %.0f ms, overlap "
                  "%.1f ms" % (took * 1000, overlap * 1000))
        self.assertLess(overlap, ebtest.scaled(0.05))
        self.assert_truthful(new, invalid=0)

    def test_leader_member_overwritten(self):
        self.start(3)
        old = self.leader_node(10)
        member = self.own_member(old)
        t0 = time.time()
        self.poke.ok('set %s/%s {"node_id":"n02","address":"addr-n02",'
                     '"cluster_port":1}' % (self.members, member))
        old.wait_log("revoked: reason=member-gone", SESSION_MS / 1000.0)
        new = self.leader_node(SESSION_MS / 1000.0)
        took = time.time() - t0
        self.assertNotEqual(new.node_id, old.node_id)
        self.assert_reregistered("overwritten", old, member)
        # The overwritten member (owned by the old leader's session) is
        # gone: nobody can take it for a member naming n02.
        self.assertIn("no node", self.poke.cmd(
            "get %s/%s" % (self.members, member)))
        cl.report("member-overwritten", "new leader after %.0f ms"
                  % (took * 1000))
        self.assert_truthful(new, invalid=0)

    def test_every_member_deleted(self):
        self.start(3)
        self.leader_node(10)
        names = [self.own_member(n) for n in self.nodes]
        t0 = time.time()
        for m in names:
            self.poke.ok("delete %s/%s" % (self.members, m))

        def all_back():
            lead = cl.leader_of(self.nodes)
            if len(lead) != 1:
                return None
            for n in self.nodes:
                if self.own_member(n) in names:
                    return None
            return lead[0]
        leader = ebtest.wait_until(all_back, SESSION_MS / 1000.0,
                                   "a leader after every member was deleted")
        cl.report("every-member-deleted", "leader again after %.0f ms"
                  % ((time.time() - t0) * 1000))
        self.assert_truthful(leader, invalid=0)

    def test_health_while_reregistering(self):
        """/health tells the truth while the node re-registers: its
        member deleted and its claim held by another session with its own
        node id (as if its previous process still held it), the node waits
        for that claim (bounded) and says "re-registering" meanwhile; the
        claim goes, it registers again."""
        self.start(2)
        victim = self.nodes[1]
        member = self.own_member(victim)
        claim = "%s/addresses/addr-%s" % (self.root, victim.node_id)
        self.poke.ok("delete %s" % claim)
        self.poke.ok('create e open %s {"attempt":"x","node_id":"%s"}'
                     % (claim, victim.node_id))
        self.poke.ok("delete %s/%s" % (self.members, member))

        def health_is(reason):
            def pred():
                st, body = cl.admin(victim, "GET", "/health")
                return body.get("reason") == reason and (st, body)
            return pred
        st, body = ebtest.wait_until(health_is("re-registering"), 5,
                                     "/health says re-registering")
        self.assertEqual(st, 503, body)
        self.assertEqual(body["status"], "unhealthy")
        self.poke.ok("delete %s" % claim)
        st, body = ebtest.wait_until(health_is("registered"), 5,
                                     "/health says registered again")
        self.assertEqual(st, 200)

        def new_member_listed():
            st, body = cl.admin(victim, "GET", "/nodes")
            mine = [m["member"] for m in body["nodes"] if m["self"]]
            return mine and mine[0] != member
        ebtest.wait_until(new_member_listed, 5, "the new member in /nodes")
        self.assertTrue(victim.running())

    def test_claim_taken_fails_loudly(self):
        """Rule 7: the member and the claim deleted, the address claimed
        by another node meanwhile: the node exits 3 instead of staying
        unregistered."""
        self.start(2)
        victim = self.nodes[1]
        member = self.own_member(victim)
        claim = "%s/addresses/addr-%s" % (self.root, victim.node_id)
        self.poke.ok("delete %s" % claim)
        self.poke.ok('create e open %s {"attempt":"x","node_id":"thief"}'
                     % claim)
        self.poke.ok("delete %s/%s" % (self.members, member))
        self.assertEqual(victim.wait_exit(10), 3)
        self.assertIn("duplicate-address", victim.log_text())


class ManySessions(unittest.TestCase):
    """300 real sessions, each with a valid member, interleaved with the
    ebnode nodes' members: exactly one leader, bounded requests."""

    def test_300_sessions(self):
        root = ebtest.unique_root()
        poke = Poke()
        nodes = []
        try:
            poke.ensure(root + "/members")
            t0 = time.time()
            nodes += cl.start_nodes(root, 2)
            ans = poke.ok("sessions 150 %s/members 1" % root, 60)
            nodes += cl.start_nodes(root, 1, first=2)
            ans2 = poke.ok("sessions 150 %s/members 1" % root, 60)
            leader = cl.wait_one_leader(nodes, 10)
            self.assertEqual(leader.node_id, "n00")

            def all_seen():
                for n in nodes:
                    if metric(n, "ebnode_members") != 303:
                        return None
                return True
            ebtest.wait_until(all_seen, 20,
                              "every node sees 303 members")
            rates = request_rates(nodes)
            for n, r in zip(nodes, rates):
                self.assertLess(r, MAX_REQ_PER_S, n.name)
                # The 300 sessions are alive all along (zkpoke pings).
                self.assertEqual(metric(n, "ebnode_members"), 303)
            st, body = cl.admin(nodes[2], "GET", "/leader")
            self.assertEqual(body["node_id"], "n00")
            # Failover: n01 is next; n02 has 150 eligible members below.
            t1 = time.time()
            leader.stop()
            new = cl.wait_one_leader(nodes[1:], SESSION_MS / 1000.0)
            self.assertEqual(new.node_id, "n01")
            cl.report("300-sessions", "sessions %s + %s, leader n00, "
                      "failover %.0f ms, requests/s %s, total %.1f s"
                      % (ans, ans2, (time.time() - t1) * 1000,
                         " ".join("%.1f" % r for r in rates),
                         time.time() - t0))
        finally:
            cl.stop_all(nodes)
            poke.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
