#!/usr/bin/env python3
"""Chaos suite for leader-routed ingress (issue 6), against real ebnode
processes, a real 3-server ZooKeeper ensemble and the ebproxy fault proxy.

Topology:
  - E eligible nodes (default 3) and two edge nodes (node.eligible=false).
    Every node reaches ZooKeeper only through its own ebproxy processes, one
    per ensemble server, so a node can be cut from ZooKeeper (or paused).
  - Load: one bridge client per edge node pipelines ingress requests
    (rate-limited, bounded window) to "external.ingress"; each request has
    the body {"c": client, "i": n} and asks for a reply. The leader routes
    them to "orders" (default route), where a consumer (a bridge client on
    edge 1) records every routed message with its stamp headers.
  - Faults, one per round, cycling through the fault types:
      kill-leader   SIGKILL of the leader (a replacement node is started)
      term-leader   SIGTERM of the leader (a replacement node is started)
      stop-node     SIGSTOP of the leader, an eligible follower or edge 2
                    for longer than the session timeout, then SIGCONT
      zk-cut        the node's ebproxies cut (connections closed and
                    refused) or paused (silent), leader, follower or edge
                    2, for longer than the session timeout, then healed
      zk-member     SIGKILL of the ensemble server the leader is connected
                    to, or of that one and a second one (quorum lost),
                    restarted after a while (zk_fixture.sh)
    Edge 1 (client 1 and the consumer) is never faulted here; since issue
    10 an ack means "delivered to the consumer" (delivery receipts), and
    the network-partition suite (tests/partition) faults the consumer's
    node itself. Edge 2 (client 2's entry node) is stopped and cut.

Checks (after every round and at the end; a failed check is reported with
the evidence and makes the exit code 1; they are pure functions in
chaos_checks.py, tested by checks_test.py):
  overlap      leadership intervals from the logs ("elected:"/"revoked:"
               lines, wall-clock prefix) never overlap. A SIGKILLed leader's
               interval ends when the process was reaped; a SIGSTOPped
               leader's interval ends when the process was seen stopped
               (state T); from SIGCONT to its "revoked:" line it is
               "stale" and must not act (see stale-routing).
  epochs       a new leader's epoch is strictly greater than the previous
               leader's (the same node may take the same epoch back after
               a reconnect of the same session).
  answered     every request gets exactly one answer (an acknowledgement or
               a failure frame) within the answer bound.
  sequence     per epoch the delivered sequence numbers are 1..n without a
               gap or duplicate, and arrive in order; a stamp (epoch, seq)
               never names two messages; ebnode.entry names the edge the
               request was sent through.
  delivered    every acknowledged (epoch, seq) was delivered to the consumer
               with the body of the request it acknowledged.
  ack-epochs   per client, acknowledged epochs never decrease.
  stale        a leader that was SIGSTOPped routes nothing after SIGCONT:
               no message or ack with its epoch arrives after the SIGCONT
               instant, and it logs "revoked:" within a bound after it.
  rss          VmRSS of every node stays under the bound (sampled).
  leader       after each round exactly one node leads (by its log) and the
               edge's GET /leader agrees.

Usage:
  chaos.py [--rounds N | --per-fault K] [--faults a,b,...] [--json FILE]
Environment: EBNODE_BIN, EB_PROXY_BIN, EB_ZK_FIXTURE_SCRIPT,
EB_ZK_FIXTURE_DIR, EB_ZK_CONNECT_FILE (a 3-server ensemble), optional
EB_TEST_TIMEOUT_MULTIPLIER, EB_CHAOS_RSS_MB (default 64), EB_CHAOS_RATE
(requests/s per client, default 200), EB_TEST_KEEP_TMP.
"""

import argparse
import json
import os
import re
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import ebtest  # noqa: E402

sys.path.insert(0, HERE)
import chaos_checks  # noqa: E402

SESSION_MS = 2000
STOP_MS = SESSION_MS + 1500     # SIGSTOP / cut duration: past the expiry
ZK_DOWN_MS = 2500               # how long a killed ensemble server stays down
ELIGIBLE = 3
WINDOW = 64                     # requests in flight per client
RATE = float(os.environ.get("EB_CHAOS_RATE", "200"))
RSS_MB = float(os.environ.get("EB_CHAOS_RSS_MB", "64"))
# No request may wait longer for its answer: the bridge's own request
# timeout (bus.request_timeout_ms below, 10 s) plus 2 s.
ANSWER_BOUND_S = ebtest.scaled(12)
DELIVERY_SLACK_S = ebtest.scaled(3)  # an ack older than this is delivered
STALE_REVOKE_S = ebtest.scaled(1)    # revoke after SIGCONT within this
FAULTS = ["kill-leader", "term-leader", "stop-node", "zk-cut", "zk-member"]
# Rounds slower than this (failover, or the longest ack gap) are anomalies:
# the node log lines around them are saved (EB_CHAOS_ANOMALY_DIR, default
# the current directory's chaos-anomalies/) and the election lines printed.
SLOW_S = {"term-leader": 0.3, "kill-leader": SESSION_MS / 1000.0 + 1.0,
          "stop-node": STOP_MS / 1000.0 + 1.0,
          "zk-cut": STOP_MS / 1000.0 + 1.0, "zk-member": 1.0}
INGRESS = "external.ingress"
TARGET = "orders"

def now():
    return time.time()  # wall clock: comparable with the log prefixes


def log(msg):
    sys.stdout.write("%s chaos: %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stdout.flush()


# ---------------------------------------------------------------------------
# Processes: ebproxy, nodes, the ensemble.

class Proxy:
    """One ebproxy process in front of one ZooKeeper server."""

    _all = []

    def __init__(self, target):
        binp = os.environ.get("EB_PROXY_BIN")
        if not binp:
            raise RuntimeError("EB_PROXY_BIN is not set")
        self.proc = subprocess.Popen([binp, "0", target],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        Proxy._all.append(self)
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
        return ans

    def active(self):
        m = re.search(r"active=(\d+)", self.cmd("stats"))
        return int(m.group(1)) if m else 0

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # EOF: the proxy exits
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @classmethod
    def close_all(cls):
        for p in cls._all:
            p.close()


class Node:
    """An ebnode behind its own proxies, with its fault history."""

    def __init__(self, cluster, name, eligible):
        self.name = name
        self.eligible = eligible
        self.proxies = [Proxy(t) for t in cluster.zk_targets]
        zk = ",".join("127.0.0.1:%d" % p.port for p in self.proxies)
        cfg = ebtest.cluster_config(
            cluster.root, "addr-" + name, zk=zk,
            node={"id": name, "eligible": eligible},
            zookeeper={"session_timeout_ms": SESSION_MS},
            cluster={"heartbeat_ms": 250, "link_timeout_ms": 1000},
            bus={"request_timeout_ms": 10000},
            bridge={"inbound": [{"address": INGRESS}],
                    "outbound": [{"address": TARGET}]},
            ingress={"default_route": {"to": TARGET}, "hold_max": 1000,
                     "hold_ms": 5000})
        self.end_ts = None          # reaped (killed / exited)
        self.stops = []             # [(stopped_ts, cont_ts)]
        self.stopped = False
        self.max_rss_kb = 0
        try:
            # Under ASan freed memory sits in a 256 MiB quarantine, which
            # would swamp the RSS bound; a small one keeps it meaningful
            # (ignored by binaries built without ASan).
            asan = os.environ.get("ASAN_OPTIONS", "")
            env = {"ASAN_OPTIONS": (asan + ":" if asan else "") +
                   "quarantine_size_mb=8"}
            self.eb = ebtest.EbNode(cfg, name=name, ready_timeout=30,
                                    env=env)
        except BaseException:
            self.close_proxies()
            raise

    @property
    def pid(self):
        return self.eb.pid

    def running(self):
        return self.end_ts is None and self.eb.running()

    def close_proxies(self):
        for p in self.proxies:
            p.close()

    def events(self):
        """[(ts, 'elected'|'revoked', epoch, reason)] from the log."""
        return chaos_checks.parse_events(self.eb.log_lines())

    def leading(self):
        """(epoch) if the node's last election event is "elected"."""
        ev = self.events()
        if ev and ev[-1][1] == "elected":
            return ev[-1][2]
        return None

    def registrations(self):
        return sum("NOTICE registry: registered:" in ln
                   for ln in self.eb.log_lines())

    def admin(self, method, path):
        try:
            return ebtest.admin_request(*self.eb.admin, method, path,
                                        timeout=5)
        except OSError as e:
            return 0, str(e)

    def proc_state(self):
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "?"

    def rss_kb(self):
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for ln in f:
                    if ln.startswith("VmRSS:"):
                        return int(ln.split()[1])
        except (OSError, ValueError):
            pass
        return 0


def fixture(*args):
    script = os.environ.get("EB_ZK_FIXTURE_SCRIPT")
    fdir = os.environ.get("EB_ZK_FIXTURE_DIR")
    if not script or not fdir:
        raise RuntimeError("EB_ZK_FIXTURE_SCRIPT/EB_ZK_FIXTURE_DIR not set")
    subprocess.run([script, args[0], fdir] + list(args[1:]), check=True,
                   timeout=ebtest.scaled(120), stdout=subprocess.DEVNULL)


# ---------------------------------------------------------------------------
# Load: bridge clients and the consumer.

class Conn:
    """A bridge connection read by one thread with select (sends may come
    from the same thread only)."""

    def __init__(self, hostport):
        self.sock = socket.create_connection(hostport,
                                             timeout=ebtest.scaled(10))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, frame):
        self.sock.sendall(ebtest.BridgeClient.encode(frame))

    def frames(self, timeout):
        """Frames available within timeout (possibly none)."""
        r, _, _ = select.select([self.sock], [], [], timeout)
        if r:
            data = self.sock.recv(262144)
            if not data:
                raise ConnectionError("bridge closed the connection")
            self.buf += data
        out = []
        while len(self.buf) >= 4:
            (n,) = struct.unpack(">I", self.buf[:4])
            if len(self.buf) < 4 + n:
                break
            out.append(json.loads(self.buf[4:4 + n].decode("utf-8")))
            self.buf = self.buf[4 + n:]
        return out

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Client(threading.Thread):
    """Pipelines ingress requests: at most WINDOW in flight, at most RATE
    per second. reqs[i] = (sent_ts, answer_ts, kind, info); kind is "ack"
    (info: (epoch, seq, to)) or "fail" (info: (failureType, code, text))."""

    def __init__(self, cid, node):
        super().__init__(name="chaos-client-%d" % cid, daemon=True)
        self.cid = cid
        self.conn = Conn(node.eb.bridge)
        self.reqs = []
        self.lock = threading.Lock()
        self.outstanding = 0
        self.sending = True
        self.quit = False
        self.error = None
        self.problems = []   # double answers, unknown frames
        self.acks = []       # (answer_ts, epoch) in arrival order

    def run(self):
        t0 = time.monotonic()
        try:
            while not self.quit:
                if self.sending:
                    budget = int(RATE * (time.monotonic() - t0)) - len(
                        self.reqs)
                    while budget > 0 and self.outstanding < WINDOW:
                        self._send_one()
                        budget -= 1
                elif self.outstanding == 0:
                    t0 = time.monotonic()
                for f in self.conn.frames(0.005):
                    self._answer(f)
        except (OSError, ValueError) as e:
            self.error = "%s: %s" % (type(e).__name__, e)

    def _send_one(self):
        i = len(self.reqs)
        with self.lock:
            self.reqs.append((now(), None, None, None))
            self.outstanding += 1
        self.conn.send({"type": "send", "address": INGRESS,
                        "body": {"c": self.cid, "i": i},
                        "replyAddress": "c%d.%d" % (self.cid, i)})

    def _answer(self, f):
        t = now()
        addr = f.get("address", "")
        try:
            cid, i = addr[1:].split(".")
            i = int(i)
            assert int(cid) == self.cid and 0 <= i < len(self.reqs)
        except (ValueError, AssertionError):
            self.problems.append("unexpected frame %r" % f)
            return
        r = self.reqs[i]
        if r[1] is not None:
            self.problems.append("second answer for %s: %r (first %r)"
                                 % (addr, f, r))
            return
        if f.get("type") == "message" and isinstance(f.get("body"), dict) \
                and f["body"].get("status") == "ok":
            b = f["body"]
            info = (int(b["epoch"]), int(b["seq"]), b.get("to"))
            kind = "ack"
            self.acks.append((t, info[0]))
        elif f.get("type") == "err":
            info = (f.get("failureType"), f.get("failureCode"),
                    f.get("message"))
            kind = "fail"
        else:
            self.problems.append("unexpected answer %r" % f)
            info, kind = (None, None, repr(f)), "fail"
        with self.lock:
            # Rows are replaced, never changed: a copy of the list is a
            # consistent snapshot of every row.
            self.reqs[i] = (r[0], t, kind, info)
            self.outstanding -= 1

    def stop(self):
        self.quit = True
        self.join(10)
        self.conn.close()


class Consumer(threading.Thread):
    """The target's consumer: records every routed message as
    (recv_ts, epoch, seq, entry, client, i)."""

    def __init__(self, node):
        super().__init__(name="chaos-consumer", daemon=True)
        self.conn = Conn(node.eb.bridge)
        self.conn.send({"type": "register", "address": TARGET})
        self.msgs = []
        self.others = []
        self.quit = False
        self.error = None

    def run(self):
        try:
            while not self.quit:
                for f in self.conn.frames(0.05):
                    self._record(f)
        except (OSError, ValueError) as e:
            self.error = "%s: %s" % (type(e).__name__, e)

    def _record(self, f):
        t = now()
        h = f.get("headers") or {}
        b = f.get("body") if isinstance(f.get("body"), dict) else {}
        if f.get("type") != "message" or "ebnode.epoch" not in h:
            self.others.append(f)
            return
        self.msgs.append((t, int(h["ebnode.epoch"]), int(h["ebnode.seq"]),
                          h.get("ebnode.entry"), b.get("c"), b.get("i")))

    def stop(self):
        self.quit = True
        self.join(10)
        self.conn.close()


class RssSampler(threading.Thread):
    def __init__(self, cluster):
        super().__init__(name="chaos-rss", daemon=True)
        self.cluster = cluster
        self.quit = False

    def run(self):
        while not self.quit:
            for n in list(self.cluster.nodes):
                if n.running():
                    n.max_rss_kb = max(n.max_rss_kb, n.rss_kb())
            time.sleep(0.25)


# ---------------------------------------------------------------------------
# The cluster and the faults.

class Violation(Exception):
    pass


class Round:
    def __init__(self, k, fault, variant):
        self.k = k
        self.fault = fault
        self.variant = variant
        self.t_start = self.t_fault = self.t_end = None
        self.old_leader = self.new_leader = None
        self.old_epoch = self.new_epoch = None
        self.failover_s = None
        self.max_gap_s = None
        self.note = ""


class Chaos:
    def __init__(self):
        self.root = ebtest.unique_root()
        n_servers = int(open(os.path.join(os.environ["EB_ZK_FIXTURE_DIR"],
                                          "count")).read().strip())
        self.zk_targets = ebtest.zk_connect_string().split(",")
        if n_servers != 3 or len(self.zk_targets) != 3:
            raise RuntimeError("the chaos suite needs the zk3 ensemble")
        self.nodes = []
        self.next_id = 1
        self.clients = []
        self.consumer = None
        self.rss = RssSampler(self)
        self.rounds = []
        self.violations = []
        self.violation_counts = {}
        self.seen = set()
        self.zk_down = set()

    # -- nodes -------------------------------------------------------------

    def spawn(self, eligible=True, prefix="n"):
        name = "%s%02d" % (prefix, self.next_id)
        self.next_id += 1
        n = Node(self, name, eligible)
        self.nodes.append(n)
        return n

    def live_eligible(self):
        return [n for n in self.nodes if n.eligible and n.running()]

    def leaders(self):
        """Running, not stopped nodes whose log says they lead."""
        return [n for n in self.nodes
                if n.running() and not n.stopped and n.leading() is not None]

    def start(self):
        log("root %s, ensemble %s" % (self.root, ",".join(self.zk_targets)))
        first = self.spawn()
        ebtest.wait_until(lambda: first.leading() is not None, 30,
                          "the first node leads")
        for _ in range(ELIGIBLE - 1):
            self.spawn()
        self.edges = [self.spawn(False, "edge"), self.spawn(False, "edge")]
        self.rss.start()
        self.consumer = Consumer(self.edges[0])
        self.consumer.start()
        # The consumer's interest must have reached the leader: probe
        # through each edge until a probe is acknowledged and delivered.
        for e in self.edges:
            self._probe(e)
        self.clients = [Client(i + 1, e) for i, e in enumerate(self.edges)]
        for c in self.clients:
            c.start()
        self.wait_flow(now(), None)

    def _probe(self, edge):
        c = ebtest.BridgeClient(*edge.eb.bridge)
        try:
            def ok():
                c.send(INGRESS, {"probe": edge.name}, reply_address="p")
                f = c.recv_frame(timeout=5)
                return f.get("type") == "message"
            ebtest.wait_until(ok, 30, "ingress through %s" % edge.name,
                              interval=0.2)
        finally:
            c.close()

    def close(self):
        for c in self.clients:
            c.stop()
        if self.consumer:
            self.consumer.stop()
        self.rss.quit = True
        for n in self.nodes:
            if n.stopped:
                n.eb.send_signal(signal.SIGCONT)
        for n in self.nodes:
            try:
                n.eb.close()
            except Exception as e:  # keep closing the others
                log("close %s: %s" % (n.name, e))
            n.close_proxies()
        Proxy.close_all()
        if self.zk_down:
            try:
                self.restart_servers(sorted(self.zk_down))
            except Exception as e:
                log("restart zk servers %s: %s" % (sorted(self.zk_down), e))

    # -- waiting -------------------------------------------------------------

    def one_leader(self):
        lead = self.leaders()
        return lead[0] if len(lead) == 1 else None

    def wait_flow(self, since, min_epoch):
        """Waits until every client got an ack after since (with an epoch
        >= min_epoch); returns the first such ack time over the clients."""
        def pred():
            firsts = []
            for c in self.clients:
                t = next((t for t, e in reversed(c.acks)
                          if t > since and (min_epoch is None or
                                            e >= min_epoch)), None)
                if t is None:
                    return None
                firsts.append(t)
            return min(firsts)
        ebtest.wait_until(pred, 60, "ingress acknowledged again",
                          interval=0.05)

    def first_ack_after(self, since, pred_epoch):
        ts = [t for c in self.clients for t, e in list(c.acks)
              if t > since and pred_epoch(e)]
        return min(ts) if ts else None

    def max_ack_gap(self, t0, t1):
        """The longest time any one client went without an ack in
        [t0, t1]."""
        gap = 0.0
        for c in self.clients:
            ts = [t0] + [t for t, _ in list(c.acks) if t0 <= t <= t1] + [t1]
            gap = max([gap] + [b - a for a, b in zip(ts, ts[1:])])
        return gap

    def settle(self, r):
        """After a fault: one leader (logs and the edge agree), at least two
        eligible nodes, every node healthy, ingress acknowledged again."""
        while len(self.live_eligible()) < 2:
            self.spawn()
        leader = ebtest.wait_until(self.one_leader, 30, "exactly one leader",
                                   interval=0.05)
        epoch = leader.leading()

        def edge_agrees():
            for e in self.edges:
                st, body = e.admin("GET", "/leader")
                if st != 200 or body.get("node_id") != leader.name:
                    return False
            return True
        ebtest.wait_until(edge_agrees, 30, "edges see leader %s"
                          % leader.name, interval=0.05)
        ebtest.wait_until(lambda: all(n.admin("GET", "/health")[0] == 200
                                      for n in self.nodes if n.running()),
                          30, "every node healthy", interval=0.1)
        self.wait_flow(r.t_fault, epoch)
        r.new_leader, r.new_epoch = leader.name, epoch

    # -- faults --------------------------------------------------------------

    def leader_now(self):
        return ebtest.wait_until(self.one_leader, 30, "a leader",
                                 interval=0.05)

    def pick(self, variant):
        leader = self.leader_now()
        if variant.startswith("leader"):
            return leader
        if variant.startswith("edge"):
            return self.edges[1]  # client 2's entry node, not the consumer's
        followers = [n for n in self.live_eligible() if n is not leader]
        return followers[0]

    def fault_kill(self, r, sig):
        node = self.leader_now()
        r.note = node.name
        r.t_fault = now()
        node.eb.send_signal(sig)
        code = node.eb.wait_exit(20)
        node.end_ts = now()
        if sig == signal.SIGTERM and code != 0:
            self.violate("term-exit", "%s exited with %r after SIGTERM"
                         % (node.name, code))
        node.close_proxies()
        self.spawn()  # keep the eligible pool

    def fault_stop(self, r):
        node = self.pick(r.variant)
        r.note = node.name
        r.t_fault = now()
        node.eb.send_signal(signal.SIGSTOP)
        ebtest.wait_until(lambda: node.proc_state() == "T", 5,
                          "%s stopped" % node.name, interval=0.001)
        t_stopped = now()
        node.stopped = True
        before = node.registrations()
        time.sleep(STOP_MS / 1000.0)  # the fault itself: frozen this long
        t_cont = now()
        node.stopped = False
        node.stops.append((t_stopped, t_cont))
        node.eb.send_signal(signal.SIGCONT)
        ebtest.wait_until(lambda: node.registrations() > before, 30,
                          "%s registered again" % node.name, interval=0.05)

    def fault_cut(self, r):
        target, mode = r.variant.split("-")
        node = self.pick(target)
        r.note = node.name
        before = node.registrations()
        r.t_fault = now()
        for p in node.proxies:
            p.cmd("cut" if mode == "cut" else "pause")
        time.sleep(STOP_MS / 1000.0)  # the fault itself: cut this long
        for p in node.proxies:
            p.cmd("heal" if mode == "cut" else "resume")
        ebtest.wait_until(lambda: node.registrations() > before, 30,
                          "%s registered again" % node.name, interval=0.05)

    def fault_zk_member(self, r):
        """leader-server: SIGKILL of the server the leader is connected to.
        quorum: that one and the next one (no quorum until they are back).
        """
        leader = self.leader_now()
        idx = next((i + 1 for i, p in enumerate(leader.proxies)
                    if p.active() > 0), 1)
        idxs = [idx] if r.variant == "leader-server" else [idx, idx % 3 + 1]
        r.note = "server %s (of %s)" % ("+".join(map(str, idxs)),
                                        leader.name)
        r.t_fault = now()
        for i in idxs:
            fixture("kill", str(i))
            self.zk_down.add(i)
        # While a server is down its proxies refuse connections instead of
        # dialling the dead port: hundreds of dials to a free loopback port
        # in the ephemeral range can self-connect (source port ==
        # destination port) and then hold the port the restarted server
        # must bind.
        for i in idxs:
            for p in self.server_proxies(i):
                p.cmd("cut")
        time.sleep(ZK_DOWN_MS / 1000.0)  # the fault itself
        self.restart_servers(idxs)
        for i in idxs:
            for p in self.server_proxies(i):
                p.cmd("heal")

    def server_proxies(self, idx):
        return [n.proxies[idx - 1] for n in self.nodes
                if n.proxies[idx - 1].proc.poll() is None]

    def restart_servers(self, idxs):
        """Restarts the servers together (one alone may not reach a quorum
        and would wait for the others), retrying the ones that fail."""
        script = os.environ["EB_ZK_FIXTURE_SCRIPT"]
        fdir = os.environ["EB_ZK_FIXTURE_DIR"]
        todo = sorted(idxs)
        for attempt in range(3):
            procs = [(i, subprocess.Popen([script, "restart", fdir, str(i)],
                                          stdout=subprocess.DEVNULL))
                     for i in todo]
            failed = []
            for i, p in procs:
                try:
                    code = p.wait(timeout=ebtest.scaled(120))
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                    code = None
                if code != 0:
                    failed.append(i)
                else:
                    self.zk_down.discard(i)
            if not failed:
                return
            log("restart of ZooKeeper server(s) %s failed (attempt %d)"
                % (failed, attempt + 1))
            todo = failed
        raise RuntimeError("ZooKeeper server(s) %s do not come back" % todo)

    def run_round(self, k, fault, variant):
        r = Round(k, fault, variant)
        r.t_start = now()
        old = self.leader_now()
        r.old_leader, r.old_epoch = old.name, old.leading()
        if fault == "kill-leader":
            self.fault_kill(r, signal.SIGKILL)
        elif fault == "term-leader":
            self.fault_kill(r, signal.SIGTERM)
        elif fault == "stop-node":
            self.fault_stop(r)
        elif fault == "zk-cut":
            self.fault_cut(r)
        elif fault == "zk-member":
            self.fault_zk_member(r)
        else:
            raise ValueError(fault)
        self.settle(r)
        r.t_end = now()
        if r.new_epoch != r.old_epoch or r.new_leader != r.old_leader:
            t = self.first_ack_after(r.t_fault,
                                     lambda e, x=r.new_epoch: e == x)
            r.failover_s = t - r.t_fault if t else None
        r.max_gap_s = self.max_ack_gap(r.t_fault, r.t_end)
        self.rounds.append(r)
        slow = max(r.failover_s or 0.0, r.max_gap_s)
        # Without a quorum every session expires: re-registration and a new
        # election after the servers are back, and some holds expire.
        limit = 15.0 if variant == "quorum" else SLOW_S[fault]
        if slow > limit:
            self.dump_round(r, "%.0f ms without an ack" % (slow * 1000))
        odd = self.failures_in(r.t_fault, r.t_end, expected=(504,))
        if odd:
            self.dump_round(r, "failures other than hold timeouts: %s"
                            % odd)
        log("round %d %s/%s (%s): leader %s@%d -> %s@%d, failover %s, "
            "longest ack gap %.0f ms" % (
                k, fault, variant, r.note, r.old_leader, r.old_epoch,
                r.new_leader, r.new_epoch,
                "%.0f ms" % (r.failover_s * 1000) if r.failover_s else "-",
                r.max_gap_s * 1000))
        self.check(final=False)

    def failures_in(self, t0, t1, expected):
        """{code: count} of failure answers in [t0, t1] whose code is not
        in expected."""
        out = {}
        for c in self.clients:
            for sent, ans, kind, info in list(c.reqs):
                if kind == "fail" and t0 <= ans <= t1 and \
                        info[1] not in expected:
                    out[info[1]] = out.get(info[1], 0) + 1
        return out

    def dump_round(self, r, why):
        """Saves every node's log lines from 2 s before the fault to the end
        of the round, and prints the election lines among them."""
        d = os.environ.get("EB_CHAOS_ANOMALY_DIR") or "chaos-anomalies"
        os.makedirs(d, exist_ok=True)
        path = os.path.join(os.path.abspath(d), "round-%03d-%s.log" % (
            r.k, r.fault))
        rows = []
        for n in self.nodes:
            for ln in n.eb.log_lines():
                try:
                    ts = float(ln.split(" ", 1)[0])
                except ValueError:
                    continue
                if r.t_fault - 2 <= ts <= r.t_end + 0.5:
                    rows.append((ts, n.name, ln))
        rows.sort()
        with open(path, "w") as f:
            f.write("round %d %s/%s target %s: %s; fault at %.6f, end "
                    "%.6f\n" % (r.k, r.fault, r.variant, r.note, why,
                                 r.t_fault, r.t_end))
            for _, name, ln in rows:
                f.write("%-7s %s\n" % (name, ln))
        log("ANOMALY round %d %s: %s; node log lines in %s" % (
            r.k, r.fault, why, path))
        for _, name, ln in rows:
            if " election: " in ln and ("NOTICE" in ln or "check:" in ln or
                                        "deleted" in ln or "WARN" in ln):
                log("  %-7s %s" % (name, ln))

    # -- checks --------------------------------------------------------------

    def violate(self, rule, text):
        """Records a failed check: every distinct one is counted, the first
        20 per rule are kept with their text."""
        if (rule, text) in self.seen:
            return
        self.seen.add((rule, text))
        self.violation_counts[rule] = self.violation_counts.get(rule, 0) + 1
        if self.violation_counts[rule] <= 20:
            self.violations.append((rule, text))
            log("VIOLATION %s: %s" % (rule, text))

    def intervals(self):
        return chaos_checks.leadership(self.nodes)

    def recorded(self):
        """A snapshot of what the load threads recorded, and its time. The
        time is taken first: whatever was acknowledged before it is in the
        lists copied after it, and deliveries are judged against it, not
        against the end of the (slow) checks."""
        t_snap = now()
        msgs = list(self.consumer.msgs)
        reqs, acks = {}, {}
        for c in self.clients:
            with c.lock:
                reqs[c.cid] = list(c.reqs)
            acks[c.cid] = list(c.acks)
        return t_snap, msgs, reqs, acks

    def check_records(self, final):
        active, stale = self.intervals()
        t_snap, msgs, reqs, acks = self.recorded()
        out = chaos_checks.check_leadership(active, stale, msgs, acks,
                                            STALE_REVOKE_S)
        seq, owner = chaos_checks.check_sequence(
            msgs, {c.cid: e.name for c, e in zip(self.clients, self.edges)},
            chaos_checks.unconfirmed_stamps(reqs))
        out += seq
        out += chaos_checks.check_answers(reqs, acks, owner, t_snap, final,
                                          ANSWER_BOUND_S, DELIVERY_SLACK_S)
        for rule, text in out:
            self.violate(rule, text)
        for c in self.clients:
            for p in c.problems:
                self.violate("answered", "client %d: %s" % (c.cid, p))
            if c.error:
                self.violate("load", "client %d: %s" % (c.cid, c.error))
        if self.consumer.error:
            self.violate("load", "consumer: %s" % self.consumer.error)

    def check_rss(self):
        for n in self.nodes:
            if n.max_rss_kb > RSS_MB * 1024:
                self.violate("rss", "%s VmRSS %.1f MB > %.0f MB" % (
                    n.name, n.max_rss_kb / 1024.0, RSS_MB))

    def check(self, final):
        self.check_records(final)
        self.check_rss()

    def finish(self):
        """Stops the load, waits for every answer and delivery, runs the
        final checks."""
        for c in self.clients:
            c.sending = False

        def answered():
            return all(c.outstanding == 0 for c in self.clients)
        try:
            ebtest.wait_until(answered, ANSWER_BOUND_S /
                              ebtest.TIMEOUT_MULTIPLIER,
                              "every request answered", interval=0.05)
        except AssertionError as e:
            self.violate("answered", str(e))
        acked = {(info[0], info[1]) for c in self.clients
                 for _, _, kind, info in list(c.reqs) if kind == "ack"}

        def delivered():
            got = {(m[1], m[2]) for m in list(self.consumer.msgs)}
            return acked <= got
        try:
            ebtest.wait_until(delivered, 10, "acked messages delivered",
                              interval=0.05)
        except AssertionError:
            pass  # check_answers names them
        self.check(final=True)
        lead = self.leaders()
        if len(lead) != 1:
            self.violate("leader", "at the end %d nodes lead: %s" % (
                len(lead), [n.name for n in lead]))

    # -- summary -------------------------------------------------------------

    def write_record(self, directory):
        """Every request with its answer, every routed message and the
        leadership intervals, one JSON object per line."""
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "requests.jsonl"), "w") as f:
            for c in self.clients:
                for i, (sent, ans, kind, info) in enumerate(list(c.reqs)):
                    f.write(json.dumps({"c": c.cid, "i": i, "sent": sent,
                                        "answered": ans, "kind": kind,
                                        "info": info}) + "\n")
        with open(os.path.join(directory, "routed.jsonl"), "w") as f:
            for t, ep, seq, entry, c, i in list(self.consumer.msgs):
                f.write(json.dumps({"t": t, "epoch": ep, "seq": seq,
                                    "entry": entry, "c": c, "i": i}) + "\n")
        active, stale = self.intervals()
        with open(os.path.join(directory, "leadership.jsonl"), "w") as f:
            for kind, rows in (("active", active), ("stale", stale)):
                for a, b, ep, name in rows:
                    f.write(json.dumps({"kind": kind, "node": name,
                                        "epoch": ep, "start": a,
                                        "end": None if b == float("inf")
                                        else b}) + "\n")
        log("record written to %s" % directory)

    def summary(self):
        out = {"rounds": len(self.rounds), "per_fault": {}, "totals": {},
               "violations": [list(v) for v in self.violations],
               "violation_counts": self.violation_counts,
               "rss_max_mb": {n.name: round(n.max_rss_kb / 1024.0, 1)
                              for n in self.nodes},
               "rss_bound_mb": RSS_MB, "session_ms": SESSION_MS,
               "stop_ms": STOP_MS, "rate_per_client": RATE,
               "clients": len(self.clients), "window": WINDOW}
        reqs = [(c.cid, i, r) for c in self.clients
                for i, r in enumerate(list(c.reqs))]
        bounds = [(r.t_start, self.rounds[j + 1].t_start
                   if j + 1 < len(self.rounds) else float("inf"), r)
                  for j, r in enumerate(self.rounds)]

        def round_of(ts):
            for a, b, r in bounds:
                if a <= ts < b:
                    return r
            return None

        def bucket():
            return {"rounds": 0, "requests": 0, "acked": 0, "failed": {},
                    "unanswered": 0, "failover_ms": [], "max_gap_ms": 0,
                    "leader_changes": 0}
        per = {}
        tot = bucket()
        lat = []
        for cid, i, (sent, ans, kind, info) in reqs:
            r = round_of(sent)
            b = per.setdefault(r.fault, bucket()) if r else None
            for x in ([b] if b else []) + [tot]:
                x["requests"] += 1
                if ans is None:
                    x["unanswered"] += 1
                elif kind == "ack":
                    x["acked"] += 1
                else:
                    code = "%s/%s" % (info[0], info[1])
                    x["failed"][code] = x["failed"].get(code, 0) + 1
            if ans is not None:
                lat.append(ans - sent)
        for r in self.rounds:
            b = per.setdefault(r.fault, bucket())
            for x in (b, tot):
                x["rounds"] += 1
                if r.failover_s is not None:
                    x["failover_ms"].append(round(r.failover_s * 1000, 1))
                if r.new_leader != r.old_leader or \
                        r.new_epoch != r.old_epoch:
                    x["leader_changes"] += 1
                x["max_gap_ms"] = max(x["max_gap_ms"],
                                      round(r.max_gap_s * 1000, 1))
        msgs = list(self.consumer.msgs)
        keys = [(m[4], m[5]) for m in msgs if m[4] is not None]
        tot["delivered"] = len(msgs)
        tot["redelivered"] = len(keys) - len(set(keys))
        tot["epochs"] = len({m[1] for m in msgs})
        if lat:
            lat.sort()
            tot["answer_ms_p50"] = round(lat[len(lat) // 2] * 1000, 1)
            tot["answer_ms_p99"] = round(lat[int(len(lat) * 0.99)] * 1000, 1)
            tot["answer_ms_max"] = round(lat[-1] * 1000, 1)
        out["per_fault"] = per
        out["totals"] = tot
        out["round_log"] = [
            {"k": r.k, "fault": r.fault, "variant": r.variant,
             "target": r.note, "old": "%s@%s" % (r.old_leader, r.old_epoch),
             "new": "%s@%s" % (r.new_leader, r.new_epoch),
             "failover_ms": round(r.failover_s * 1000, 1)
             if r.failover_s is not None else None,
             "max_gap_ms": round(r.max_gap_s * 1000, 1)}
            for r in self.rounds]
        return out


def print_summary(s, out=sys.stdout):
    def fmt_failed(d):
        return ",".join("%s:%d" % kv for kv in sorted(d.items())) or "-"

    def fo(b):
        f = b["failover_ms"]
        if not f:
            return "-", "-"
        return "%.0f" % statistics.median(f), "%.0f" % max(f)
    w = out.write
    w("\nCHAOS SUMMARY (session %d ms, SIGSTOP/cut %d ms, %d clients x %.0f "
      "req/s, window %d)\n" % (s["session_ms"], s["stop_ms"], s["clients"],
                               s["rate_per_client"], s["window"]))
    w("%-12s %6s %8s %8s %6s %6s %7s %8s %8s  %s\n" % (
        "fault", "rounds", "requests", "acked", "unans", "lchg", "fo_med",
        "fo_max", "gap_max", "failed (type/code:count)"))
    rows = sorted(s["per_fault"].items(),
                  key=lambda kv: FAULTS.index(kv[0]))
    for name, b in rows + [("TOTAL", s["totals"])]:
        med, mx = fo(b)
        w("%-12s %6d %8d %8d %6d %6d %7s %8s %8.0f  %s\n" % (
            name, b["rounds"], b["requests"], b["acked"], b["unanswered"],
            b["leader_changes"], med, mx, b["max_gap_ms"],
            fmt_failed(b["failed"])))
    t = s["totals"]
    w("delivered=%d redelivered(at-least-once)=%d epochs=%d answer ms "
      "p50=%s p99=%s max=%s\n" % (
          t["delivered"], t["redelivered"], t["epochs"],
          t.get("answer_ms_p50"), t.get("answer_ms_p99"),
          t.get("answer_ms_max")))
    w("max VmRSS MB (bound %.0f): %s\n" % (s["rss_bound_mb"], " ".join(
        "%s=%.1f" % kv for kv in sorted(s["rss_max_mb"].items()))))
    w("violations: %d %s\n" % (sum(s["violation_counts"].values()),
                               s["violation_counts"] or ""))
    for rule, text in s["violations"]:
        w("  %s: %s\n" % (rule, text))
    out.flush()


def schedule(args):
    faults = args.faults.split(",") if args.faults else FAULTS
    for f in faults:
        if f not in FAULTS:
            raise SystemExit("unknown fault %r (know %s)" % (f, FAULTS))
    variants = {
        "kill-leader": ["leader"], "term-leader": ["leader"],
        "stop-node": ["leader", "follower", "edge"],
        "zk-cut": ["leader-cut", "leader-pause", "edge-cut", "follower-cut",
                   "edge-pause", "follower-pause"],
        "zk-member": ["leader-server", "quorum"],
    }
    n = args.rounds if args.rounds else args.per_fault * len(faults)
    seen = {}
    out = []
    for k in range(n):
        f = faults[k % len(faults)]
        j = seen.get(f, 0)
        seen[f] = j + 1
        out.append((f, variants[f][j % len(variants[f])]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=0,
                    help="total rounds (cycling through the faults)")
    ap.add_argument("--per-fault", type=int, default=2,
                    help="rounds per fault type (when --rounds is 0)")
    ap.add_argument("--faults", default="",
                    help="comma-separated subset of %s" % ",".join(FAULTS))
    ap.add_argument("--json", default="", help="write the summary here")
    ap.add_argument("--record", default="",
                    help="directory for the full record: every request "
                    "and its answer, every routed message, the leadership "
                    "intervals (JSON lines)")
    args = ap.parse_args()
    plan = schedule(args)
    t0 = time.monotonic()
    ch = Chaos()
    ok = False
    try:
        ch.start()
        log("cluster up: %s; %d rounds planned" % (
            " ".join(n.name for n in ch.nodes), len(plan)))
        for k, (fault, variant) in enumerate(plan, 1):
            ch.run_round(k, fault, variant)
        ch.finish()
        ok = not ch.violations
    except Exception as e:  # a broken run is a failure too, with evidence
        ch.violate("run", "%s: %s" % (type(e).__name__, e))
        for n in ch.nodes:
            if n.eb.running() or n.end_ts:
                sys.stderr.write("--- %s log tail ---\n%s\n" % (
                    n.name, "\n".join(n.eb.log_lines()[-25:])))
        raise
    finally:
        try:
            s = ch.summary()
            s["elapsed_s"] = round(time.monotonic() - t0, 1)
            print_summary(s)
            log("elapsed %.1f s" % s["elapsed_s"])
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(s, f, indent=1)
            if args.record:
                ch.write_record(args.record)
        finally:
            if not ok:
                for n in ch.nodes:
                    n.eb._failed = True  # keep their logs
                    log("log of %s: %s" % (n.name, n.eb.log_path))
            ch.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
