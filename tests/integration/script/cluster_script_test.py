#!/usr/bin/env python3
"""The README's main command and example, end to end: `scripts/cluster up`
brings up ZooKeeper and 3 nodes, `ebctl listen` on node1 and `ebctl request`
to the ingress address at node2 show a message routed by the leader,
`scripts/cluster status` reports every node healthy, and
`scripts/cluster down` stops everything (no process left)."""
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..",
                                    ".."))
SCRIPT = os.path.join(ROOT, "scripts", "cluster")


def ephemeral_low():
    """The first port the kernel hands out as an ephemeral port."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_base(count=3):
    """A base port b with b+1..b+count free for bridge, admin and links,
    below the ephemeral range: the script binds these ports only after
    this probe, and a port from the ephemeral range can be taken meanwhile
    by any outgoing connection on the machine (other tests run in
    parallel)."""
    top = ephemeral_low() - 3 * 100 - count - 1
    rnd = random.Random()
    for _ in range(200):
        base = rnd.randrange(10000, max(10001, top)) // 10 * 10
        socks = []
        try:
            for off in (0, 100, 200):
                for i in range(1, count + 1):
                    t = socket.socket()
                    socks.append(t)
                    t.bind(("127.0.0.1", base + off + i))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise RuntimeError("no free port range")


class ClusterScript(unittest.TestCase):
    def test_up_example_status_down(self):
        build = os.environ["EB_CLUSTER_BUILD"]
        state = tempfile.mkdtemp(prefix="ebtest-cluster-")
        base = free_base()
        env = dict(os.environ, EB_CLUSTER_STATE=state,
                   EB_BRIDGE_BASE=str(base), EB_ADMIN_BASE=str(base + 100),
                   EB_CLUSTER_BASE=str(base + 200))
        ebctl = os.path.join(build, "ctl", "ebctl")

        def run(*args, timeout=120):
            return subprocess.run(list(args), env=env, capture_output=True,
                                  text=True, timeout=ebtest.scaled(timeout))

        self.addCleanup(run, SCRIPT, "down")
        up = run(SCRIPT, "up")
        self.assertEqual(up.returncode, 0, up.stdout + up.stderr)
        self.assertIn("node3: READY", up.stdout)
        self.assertIn("LEADER", up.stdout)
        b1 = "127.0.0.1:%d" % (base + 1)
        b2 = "127.0.0.1:%d" % (base + 2)
        listen = subprocess.Popen([ebctl, "--bridge", b1, "listen", "orders",
                                   "--count", "1", "--timeout", "20s",
                                   "--json"],
                                  env=env, stdout=subprocess.PIPE, text=True)
        self.addCleanup(listen.kill)

        # The listener's registration reaches the leader over the links
        # shortly after it connects: retry the request until it is routed.
        def routed():
            r = run(ebctl, "--bridge", b2, "--json", "request",
                    "external.ingress", '{"order":42}', timeout=10)
            return r.returncode == 0 and '"status":"ok"' in r.stdout
        ebtest.wait_until(routed, 20, "ingress request routed to orders")
        out, _ = listen.communicate(timeout=ebtest.scaled(20))
        self.assertEqual(listen.returncode, 0)
        self.assertIn('"ebnode.entry":"node2"', out)
        self.assertIn('"order":42', out)
        st = run(SCRIPT, "status")
        self.assertEqual(st.returncode, 0, st.stderr)
        self.assertEqual(len(re.findall(r"status:\s+ok", st.stdout)), 3,
                         st.stdout)
        down = run(SCRIPT, "down")
        self.assertEqual(down.returncode, 0, down.stderr)
        self.assertFalse([f for f in os.listdir(state) if f.endswith(".pid")])
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", base + 1), timeout=1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
