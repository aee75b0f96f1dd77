"""The shape of GET /metrics, to compare two builds (not a ctest case).

Captures GET /metrics of a standalone node and of each node of a 3-node
cluster (ZooKeeper from EB_ZK_CONNECT_FILE, e.g. a fixture started with
tests/fixtures/zk_fixture.sh start DIR standalone) of the ebnode in
EBNODE_BIN, after the same small, deterministic traffic (two bridge
clients, two registered addresses, sends, a publish, a send nobody takes,
a ping; web front on), and writes OUT.standalone and OUT.cluster.{a,b,c}
with every sample value replaced by V (and OUT.*.raw as scraped). Two
builds export the same families (names, types, HELP, labels, order) when
the stripped files are equal:

  EBNODE_BIN=old/ebnode EB_ZK_CONNECT_FILE=DIR/connect \
      python3 metrics_shape.py /tmp/before
  EBNODE_BIN=new/ebnode EB_ZK_CONNECT_FILE=DIR/connect \
      python3 metrics_shape.py /tmp/after
  for f in standalone cluster.a cluster.b cluster.c; do
      diff /tmp/before.$f /tmp/after.$f; done

Usage: metrics_shape.py OUT [standalone|cluster|all]
"""
import http.client
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import ebtest  # noqa: E402

OUT = sys.argv[1]
ALL = [{"addressRegex": ".+"}]
PERM = {"inbound": ALL, "outbound": ALL}


def scrape(node):
    c = http.client.HTTPConnection(*node.admin, timeout=10)
    c.request("GET", "/metrics")
    r = c.getresponse()
    t = r.read().decode()
    c.close()
    assert r.status == 200, r.status
    return t


def strip(text):
    """The text with every sample's value replaced by V."""
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            out.append(line)
        else:
            out.append(re.sub(r" [^ ]+$", " V", line))
    return "\n".join(out) + "\n"


def traffic(node):
    a = ebtest.BridgeClient(*node.bridge)
    a.register("t.one")
    a.register("t.two")
    b = ebtest.BridgeClient(*node.bridge)

    def subs():
        st, body = ebtest.admin_request(*node.admin, "GET", "/subscriptions")
        names = {s["address"] for s in body["subscriptions"]
                 if s["handlers"] >= 1}
        return {"t.one", "t.two"} <= names
    ebtest.wait_until(subs, 10, "registered")
    for i in range(3):
        b.send("t.one", {"i": i})
    b.publish("t.two", {"p": 1})
    b.send("nobody", {"x": 1})
    got = 0
    while got < 4:
        f = a.recv_frame(timeout=10)
        if f.get("type") == "message":
            got += 1
    b.ping()
    return a, b


def web_cfg():
    return {"web": {"enabled": True, "listen": "127.0.0.1",
                    "port": ebtest.free_port()}}


def standalone():
    cfg = ebtest.standalone_config(bridge=PERM, **web_cfg())
    n = ebtest.EbNode(cfg, name="s")
    cl = traffic(n)
    t = scrape(n)
    for c in cl:
        c.close()
    assert n.stop() == 0, n.log_text()[-2000:]
    n.close()
    return t


def cluster():
    root = ebtest.unique_root()
    nodes = []
    names = ["a", "b", "c"]
    for nm in names:
        cfg = ebtest.cluster_config(
            root, nm, zookeeper={"session_timeout_ms": 4000}, bridge=PERM,
            **web_cfg())
        nodes.append(ebtest.EbNode(cfg, name=nm))
        if nm == "a":
            ebtest.wait_until(
                lambda: "\nebnode_leader 1" in scrape(nodes[0]), 20,
                "a leads")

    def linked():
        for n, nm in zip(nodes, names):
            t = scrape(n)
            for p in names:
                if p != nm and ('ebnode_link_up{peer="%s"} 1' % p) not in t:
                    return False
            if ("\nebnode_members 3" not in t or
                    "\nebnode_leader_known 1" not in t):
                return False
        return True
    ebtest.wait_until(linked, 30, "all linked")
    cl = traffic(nodes[1])
    res = {nm: scrape(n) for n, nm in zip(nodes, names)}
    for c in cl:
        c.close()
    for n in reversed(nodes):
        assert n.stop() == 0, n.log_text()[-2000:]
        n.close()
    return res


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    mode = sys.argv[2] if len(sys.argv) > 2 else "all"
    if mode in ("all", "standalone"):
        t = standalone()
        write(OUT + ".standalone.raw", t)
        write(OUT + ".standalone", strip(t))
    if mode in ("all", "cluster"):
        for nm, t in cluster().items():
            write(OUT + ".cluster." + nm + ".raw", t)
            write(OUT + ".cluster." + nm, strip(t))
    print("ok")


if __name__ == "__main__":
    main()
