"""The leader partitioned from ZooKeeper through the ebproxy fault proxy:
it must stop leading before anybody else is elected (ordering from the
logged wall-clock timestamps), and after the partition heals (its session
has expired meanwhile) it re-registers as a follower."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cl  # noqa: E402
from cl import ebtest  # noqa: E402


class Proxy:
    def __init__(self, target):
        binp = os.environ.get("EB_PROXY_BIN")
        if not binp:
            raise unittest.SkipTest("EB_PROXY_BIN not set")
        self.proc = subprocess.Popen([binp, "0", target],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("PROXY port="):
            self.close()
            raise RuntimeError("ebproxy said %r" % line)
        self.port = int(line.split("=", 1)[1])

    def cmd(self, c):
        self.proc.stdin.write(c + "\n")
        self.proc.stdin.flush()
        ans = self.proc.stdout.readline().strip()
        if not ans.startswith("ok"):
            raise RuntimeError("ebproxy %s: %r" % (c, ans))

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Partition(unittest.TestCase):
    def test_leader_partitioned(self):
        zk = ebtest.zk_connect_string()
        proxy = Proxy(zk.split(",")[0])
        root = ebtest.unique_root()
        nodes = []
        try:
            nodes.append(ebtest.EbNode(
                cl.config(root, 0, zk="127.0.0.1:%d" % proxy.port),
                name="n00"))
            nodes += cl.start_nodes(root, 2, first=1)
            old = cl.wait_one_leader(nodes)
            self.assertIs(old, nodes[0])
            t0 = cl.now()
            proxy.cmd("pause")
            new = cl.wait_one_leader(nodes[1:], timeout=15)
            rv = [e for e in cl.events(old) if e[1] == "revoked"]
            el = [e for e in cl.events(new) if e[1] == "elected"]
            self.assertTrue(rv, old.log_text())
            self.assertIn(rv[0][3], ("lease-expired", "zk-suspended"))
            cl.report("partition", "revoked +%.0fms (%s), new leader "
                      "+%.0fms, margin %.0fms"
                      % ((rv[0][0] - t0) * 1000, rv[0][3],
                         (el[-1][0] - t0) * 1000,
                         (el[-1][0] - rv[0][0]) * 1000))
            self.assertLess(rv[0][0], el[-1][0])
            self.assertGreater(el[-1][2], rv[0][2])
            # Heal after the expiry: the old leader comes back as a
            # follower with a new member node at the back.
            proxy.cmd("resume")
            ebtest.wait_until(
                lambda: sum("NOTICE registry: registered:" in ln
                            for ln in old.log_lines()) >= 2, 20,
                "re-registration of the partitioned node")
            ebtest.wait_until(lambda: cl.admin(old, "GET", "/health")[0]
                              == 200, 10, "healthy again")
            st, h = cl.admin(old, "GET", "/health")
            self.assertFalse(h["leader"])
            st, body = cl.admin(new, "GET", "/nodes")
            ebtest.wait_until(lambda: len(cl.admin(new, "GET", "/nodes")[1]
                                          ["nodes"]) == 3, 10, "3 members")
            st, body = cl.admin(new, "GET", "/nodes")
            mine = [m for m in body["nodes"] if m["node_id"] == "n00"][0]
            self.assertEqual(mine["sequence"],
                             max(m["sequence"] for m in body["nodes"]))
            self.assertEqual(body["leader"], new.node_id)
            self.assertEqual(cl.leader_of(nodes), [new])
            cl.assert_no_overlap(self, nodes)
        finally:
            cl.stop_all(nodes)
            proxy.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
