"""ZooKeeper outages shorter than the session timeout must not change the
leader: the standalone server restarted (zkx fixture, it_cluster.zk_restart)
or one server of a 3-server ensemble killed (zk3 fixture,
it.cluster.zk_ensemble, run by zk_ensemble_test.py with KILL_ONE=1).

The leader revokes while the connection is in doubt (rule 5) and takes
leadership back with the same epoch once the same session reconnects: the
leader's identity and epoch do not change and no other node is elected."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cl  # noqa: E402
from cl import ebtest  # noqa: E402

SESSION_MS = cl.env_int("EB_RESTART_SESSION_MS", 15000)


def fixture(*args):
    script = os.environ.get("EB_ZK_FIXTURE_SCRIPT")
    fdir = os.environ.get("EB_ZK_FIXTURE_DIR")
    if not script or not fdir:
        raise unittest.SkipTest("no ZooKeeper fixture script/dir")
    subprocess.run([script, args[0], fdir] + list(args[1:]), check=True,
                   timeout=ebtest.scaled(120))


class ZkOutage(unittest.TestCase):
    KILL_ONE = os.environ.get("KILL_ONE", "") == "1"

    def test_no_leadership_change(self):
        root = ebtest.unique_root()
        nodes = cl.start_nodes(root, 3, session_ms=SESSION_MS)
        try:
            leader = cl.wait_one_leader(nodes)
            epoch = [e for e in cl.events(leader)
                     if e[1] == "elected"][-1][2]
            if self.KILL_ONE:
                # Every server is somebody's; kill server 1 (the leader's
                # connection moves if it was there).
                fixture("kill", "1")
            else:
                fixture("restart")
            ebtest.wait_until(lambda: all(
                cl.admin(n, "GET", "/health")[0] == 200 for n in nodes),
                SESSION_MS / 1000.0, "all nodes healthy again")
            again = cl.wait_one_leader(nodes, timeout=SESSION_MS / 1000.0)
            self.assertIs(again, leader)
            ep = [e for e in cl.events(leader) if e[1] == "elected"]
            self.assertEqual(ep[-1][2], epoch)
            for n in nodes:
                if n is not leader:
                    self.assertEqual(
                        [e for e in cl.events(n) if e[1] == "elected"], [])
                st, ld = cl.admin(n, "GET", "/leader")
                self.assertEqual(st, 200)
                self.assertEqual(ld["node_id"], leader.node_id)
                self.assertEqual(ld["epoch"], epoch)
            revokes = [e for e in cl.events(leader) if e[1] == "revoked"]
            cl.report("zk-outage" + ("-ensemble" if self.KILL_ONE else ""),
                      "leader %s kept epoch %d; revoked/re-elected %d time(s)"
                      % (leader.node_id, epoch, len(revokes)))
            cl.assert_no_overlap(self, nodes)
        finally:
            cl.stop_all(nodes)
            if self.KILL_ONE:
                try:
                    fixture("restart", "1")
                except Exception as e:  # best effort
                    sys.stderr.write("restart server 1: %s\n" % e)


if __name__ == "__main__":
    unittest.main(verbosity=2)
