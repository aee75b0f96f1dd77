"""Clustered event bus across real ebnode processes (ZooKeeper fixture,
node links, TCP bridges): send round robin across nodes, publish to every
handler once, request/reply and recipient failures between nodes, a request
in flight to a node that dies failing at once, and a node's interest
vanishing when it leaves. Clients talk to the nodes' bridges only.
"""

import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import ebtest  # noqa: E402

OPEN = {"inbound": [{}], "outbound": [{}]}


def tls_files():
    d = os.environ.get("EB_CERTS_DIR", "")
    return {"cert": os.path.join(d, "server.pem"),
            "key": os.path.join(d, "server.key"),
            "ca": os.path.join(d, "ca.pem")}


def node_config(root, idx, tls=False):
    node_id = "b%02d" % idx
    cfg = ebtest.cluster_config(root, "addr-%s" % node_id,
                                bridge=OPEN)
    cluster = {"heartbeat_ms": 200, "link_timeout_ms": 1000}
    if tls:
        cluster["tls"] = tls_files()
    return ebtest.merge(cfg, {"node": {"id": node_id},
                              "zookeeper": {"session_timeout_ms": 4000},
                              "cluster": cluster})


def is_msg(address):
    return lambda f: f.get("type") == "message" and \
        f.get("address") == address


class Cluster:
    def __init__(self, count, tls=False):
        self.root = ebtest.unique_root()
        self.nodes = []
        self.clients = []
        try:
            for i in range(count):
                self.nodes.append(ebtest.EbNode(
                    node_config(self.root, i, tls=tls), name="b%02d" % i))
            for n in self.nodes:
                for m in self.nodes:
                    if m is not n:
                        n.wait_log("link-up: node=%s" % m.node_id, 15)
        except BaseException:
            self.close()
            raise

    def client(self, idx):
        n = self.nodes[idx]
        c = ebtest.BridgeClient(n.bridge_host, n.bridge_port)
        self.clients.append(c)
        return c

    def close(self):
        for c in self.clients:
            try:
                c.close()
            except OSError:
                pass
        for n in self.nodes:
            try:
                n.close()
            except Exception as e:  # keep closing the others
                sys.stderr.write("close %s: %s\n" % (n.name, e))


def barrier(sender, receiver, tag):
    """Publishes to tag from sender until receiver (which registered tag
    after everything else) gets it: then the sender's node has seen all of
    the receiver's earlier registrations (one ordered link)."""
    receiver.register(tag)
    deadline = time.monotonic() + ebtest.scaled(10)
    while time.monotonic() < deadline:
        sender.publish(tag, {"b": 1})
        try:
            receiver.recv_until(is_msg(tag), timeout=0.2)
            return
        except TimeoutError:
            continue
    raise AssertionError("barrier %s never reached" % tag)


def drain(client, address, want, timeout=10):
    got = []
    deadline = time.monotonic() + ebtest.scaled(timeout)
    while len(got) < want and time.monotonic() < deadline:
        try:
            f = client.recv_frame(timeout=0.5)
        except TimeoutError:
            continue
        if f.get("address") == address:
            got.append(f)
    return got


class BusClusterTest(unittest.TestCase):

    def test_send_round_robin_and_publish(self):
        cl = Cluster(2)
        try:
            sender = cl.client(0)
            a1 = cl.client(0)
            b1 = cl.client(1)
            b2 = cl.client(1)
            for i, c in enumerate((a1, b1, b2)):
                c.register("rr")
                barrier(sender, c, "barrier.%d" % i)
            for i in range(300):
                sender.send("rr", {"i": i})
            counts = [len(drain(c, "rr", 100)) for c in (a1, b1, b2)]
            # 3 handlers: a1 (local) and two on b; weighted by node, then
            # round robin on b: 100 each.
            self.assertEqual(sum(counts), 300, counts)
            for n in counts:
                self.assertTrue(99 <= n <= 101, counts)
            for c in (a1, b1, b2):
                self.assertEqual(drain(c, "rr", 1, timeout=0.2), [])
            sender.publish("rr", {"p": 1})
            for c in (a1, b1, b2):
                f = c.recv_until(is_msg("rr"), timeout=5)
                self.assertEqual(f["body"], {"p": 1})
                # Exactly once per handler.
                self.assertEqual(drain(c, "rr", 1, timeout=0.3), [])
        finally:
            cl.close()

    def test_request_reply_and_failure_across_nodes(self):
        cl = Cluster(2)
        try:
            requester = cl.client(0)
            svc = cl.client(1)
            svc.register("svc")
            barrier(requester, svc, "barrier.svc")
            requester.send("svc", {"q": 1}, reply_address="r1")
            m = svc.recv_until(is_msg("svc"), timeout=5)
            self.assertIn("replyAddress", m)
            svc.send(m["replyAddress"], {"a": 2})
            r = requester.recv_until(is_msg("r1"), timeout=5)
            self.assertEqual(r["body"], {"a": 2})
            requester.send("svc", {"q": 2}, reply_address="r2")
            m = svc.recv_until(is_msg("svc"), timeout=5)
            svc.send_frame({"type": "send", "address": m["replyAddress"],
                            "failureCode": 1234, "message": "ooops!"})
            e = requester.recv_until(
                lambda f: f.get("type") == "err" and
                f.get("address") == "r2", timeout=5)
            self.assertEqual(e["failureType"], "RECIPIENT_FAILURE")
            self.assertEqual(e["failureCode"], 1234)
            self.assertEqual(e["message"], "ooops!")
            requester.send("nobody", {}, reply_address="r3")
            e = requester.recv_until(
                lambda f: f.get("type") == "err" and
                f.get("address") == "r3", timeout=5)
            self.assertEqual(e["failureType"], "NO_HANDLERS")
            self.assertEqual(e["message"], "No handlers for address nobody")
        finally:
            cl.close()

    def test_mutual_tls_links(self):
        cl = Cluster(3, tls=True)
        try:
            for n in cl.nodes:
                self.assertTrue(any("tls=yes" in ln for ln in n.log_lines()),
                                n.name)
            requester = cl.client(0)
            svc = cl.client(2)
            svc.register("svc")
            barrier(requester, svc, "barrier.tls")
            requester.send("svc", {"q": 1}, reply_address="r1")
            m = svc.recv_until(is_msg("svc"), timeout=5)
            svc.send(m["replyAddress"], {"a": "over tls"})
            r = requester.recv_until(is_msg("r1"), timeout=5)
            self.assertEqual(r["body"], {"a": "over tls"})
        finally:
            cl.close()

    def test_frozen_node_skipped_before_session_expiry(self):
        # Links time out after 1 s; the ZooKeeper session after 4 s. A
        # node that stops answering (SIGSTOP) loses its link, and with it
        # its in-flight requests and its interest, long before ZooKeeper
        # would notice; when it resumes the link comes back.
        cl = Cluster(2)
        try:
            requester = cl.client(0)
            svc = cl.client(1)
            svc.register("svc")
            barrier(requester, svc, "barrier.svc")
            requester.send("svc", {"q": 1}, headers={"timeout": 30000},
                           reply_address="r1")
            svc.recv_until(is_msg("svc"), timeout=5)
            t0 = time.monotonic()
            cl.nodes[1].send_signal(signal.SIGSTOP)
            try:
                e = requester.recv_until(
                    lambda f: f.get("type") == "err" and
                    f.get("address") == "r1", timeout=10)
                dt = time.monotonic() - t0
            finally:
                cl.nodes[1].send_signal(signal.SIGCONT)
            sys.stderr.write("in-flight request failed %.0f ms after "
                             "SIGSTOP (link timeout 1000 ms)\n"
                             % (dt * 1000))
            self.assertEqual(e["failureType"], "ERROR")
            self.assertGreater(dt, 0.5)
            self.assertLess(dt, ebtest.scaled(3.5))
            # Back: the link is re-established and requests flow again.
            b = cl.nodes[1].node_id
            ebtest.wait_until(
                lambda: sum("link-up: node=%s" % b in ln
                            for ln in cl.nodes[0].log_lines()) >= 2,
                10, "the link to come back")
            barrier(requester, svc, "barrier.svc2")
            requester.send("svc", {"q": 2}, reply_address="r2")
            m = svc.recv_until(
                lambda f: is_msg("svc")(f) and f["body"] == {"q": 2},
                timeout=5)
            svc.send(m["replyAddress"], {"a": 2})
            r = requester.recv_until(is_msg("r2"), timeout=5)
            self.assertEqual(r["body"], {"a": 2})
        finally:
            cl.close()

    def test_node_restart(self):
        # A node leaves gracefully (its member znode goes, its peers drop
        # the link and its interest), then comes back with the same id on
        # new ports: the others link to it again from the member cache.
        cl = Cluster(3)
        try:
            requester = cl.client(0)
            svc = cl.client(2)
            svc.register("svc")
            barrier(requester, svc, "barrier.r1")
            old = cl.nodes[2]
            self.assertEqual(old.stop(), 0)
            old.close()  # its temp dir; the config dict stays usable
            a = cl.nodes[0].node_id
            cl.nodes[0].wait_log("link-down: node=%s" % old.node_id, 10)
            requester.send("svc", {}, reply_address="r0")
            e = requester.recv_until(
                lambda f: f.get("type") == "err" and
                f.get("address") == "r0", timeout=5)
            self.assertEqual(e["failureType"], "NO_HANDLERS")
            new = ebtest.EbNode(old.config, name="b02-again")
            cl.nodes[2] = new
            for n in cl.nodes[:2]:
                ebtest.wait_until(
                    lambda n=n: sum("link-up: node=%s" % new.node_id in ln
                                    for ln in n.log_lines()) >= 2,
                    15, "%s to link to the restarted node" % n.name)
            new.wait_log("link-up: node=%s" % a, 10)
            svc2 = cl.client(2)
            svc2.register("svc")
            barrier(requester, svc2, "barrier.r2")
            requester.send("svc", {"q": 1}, reply_address="r1")
            m = svc2.recv_until(is_msg("svc"), timeout=5)
            svc2.send(m["replyAddress"], {"a": "again"})
            r = requester.recv_until(is_msg("r1"), timeout=5)
            self.assertEqual(r["body"], {"a": "again"})
        finally:
            cl.close()

    def test_duplicate_node_id_reported(self):
        # Two processes with one node.id (different addresses): links are
        # keyed by node id, so this is a configuration error ebnode names.
        root = ebtest.unique_root()
        nodes = []
        try:
            for addr in ("addr-dup-1", "addr-dup-2"):
                cfg = ebtest.merge(node_config(root, 0),
                                   {"node": {"id": "dup", "address": addr}})
                nodes.append(ebtest.EbNode(cfg, name=addr))
            line = nodes[1].wait_log("duplicate-node-id: id=dup", 10)
            self.assertIn("addr-dup-1", line)
            self.assertIn("addr-dup-2", line)
        finally:
            for n in nodes:
                n.close()

    def test_inflight_request_fails_when_node_dies(self):
        cl = Cluster(2)
        try:
            requester = cl.client(0)
            slow = cl.client(1)
            slow.register("slow")
            barrier(requester, slow, "barrier.slow")
            requester.send("slow", {"q": 1}, headers={"timeout": 30000},
                           reply_address="r1")
            slow.recv_until(is_msg("slow"), timeout=5)
            t0 = time.monotonic()
            cl.nodes[1].kill()
            e = requester.recv_until(
                lambda f: f.get("type") == "err" and
                f.get("address") == "r1", timeout=10)
            dt = time.monotonic() - t0
            sys.stderr.write("in-flight request failed %.0f ms after "
                             "kill -9\n" % (dt * 1000))
            self.assertLess(dt, ebtest.scaled(2))
            self.assertEqual(e["failureType"], "ERROR")
            # The dead node's interest is gone: NO_HANDLERS, not a hang.
            requester.send("slow", {}, reply_address="r2")
            e = requester.recv_until(
                lambda f: f.get("type") == "err" and
                f.get("address") == "r2", timeout=5)
            self.assertEqual(e["failureType"], "NO_HANDLERS")
        finally:
            cl.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
