"""A zookeeper.connect with a chroot suffix ("host:port/chroot", issue 11)
works at start even when the chroot znode does not exist yet: it is folded
into zookeeper.root, so the registry creates it. Two nodes given the same
chroot form one cluster; a node given the equivalent root without chroot
joins the same cluster (the same znodes)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cl  # noqa: E402
from cl import ebtest  # noqa: E402


class Chroot(unittest.TestCase):
    def test_chroot_suffix_works_at_start(self):
        zk = ebtest.zk_connect_string()
        chroot = ebtest.unique_root()  # a fresh, non-existent path
        nodes = []
        try:
            a = cl.config(chroot, 0, zk=zk + chroot)
            a = ebtest.merge(a, {"zookeeper": {"root": "/ebnode/default"}})
            nodes.append(ebtest.EbNode(a, name="n00"))
            b = cl.config(chroot, 1, zk=zk + chroot)
            b = ebtest.merge(b, {"zookeeper": {"root": "/ebnode/default"}})
            nodes.append(ebtest.EbNode(b, name="n01"))
            # The same znodes without the chroot: the root spelled out.
            c = cl.config(chroot + "/ebnode/default", 2, zk=zk)
            nodes.append(ebtest.EbNode(c, name="n02"))
            leader = cl.wait_one_leader(nodes)
            self.assertEqual(leader.node_id, "n00")
            for n in nodes:
                ebtest.wait_until(
                    lambda: len(cl.admin(n, "GET", "/nodes")[1]
                                .get("nodes", [])) == 3,
                    10, "%s sees 3 members" % n.node_id)
                st, body = cl.admin(n, "GET", "/health")
                self.assertEqual(st, 200, body)
        finally:
            cl.stop_all(nodes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
