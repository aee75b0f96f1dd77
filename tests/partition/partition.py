#!/usr/bin/env python3
"""Real network partitions (issue 10): ZooKeeper servers and ebnode nodes
in separate Linux network namespaces joined by a bridge; links are cut
(nft drop rules), cut one way, degraded (200 ms delay + 5% loss) or a node
is paused, under steady leader-routed ingress load, and the guarantees are
checked. docs/CHAOS.md "Network partitions" has the picture and numbers.

Topology (one set per run; every name carries the run tag ebp<pid>, so
parallel runs do not collide; addresses are private to the run's hub):

    ns <tag>-hub: bridge br0
      |-- vz1 -- <tag>-z1  10.77.0.11  ZooKeeper server 1 (3-server ensemble)
      |-- vz2 -- <tag>-z2  10.77.0.12  ZooKeeper server 2
      |-- vz3 -- <tag>-z3  10.77.0.13  ZooKeeper server 3
      |-- vn1 -- <tag>-n1  10.77.0.21  ebnode n1: the leader (started first);
      |                                 its zookeeper.connect names ONE
      |                                 ZooKeeper follower F
      |-- vn2 -- <tag>-n2  10.77.0.22  ebnode n2: the client's entry node
      |-- vn3 -- <tag>-n3  10.77.0.23  ebnode n3: holds the consumer
      `-- vcl -- <tag>-cl  10.77.0.2   this harness: client, consumer and
                                        the metric pollers (never faulted)
    n2 and n3 connect to the two servers other than F, so only the leader's
    session lives on F.

Scenarios (NAME[:PARAM]):
  a:SL     ZooKeeper server F (holding the leader's session) cut from the
           other two servers, not from n1; ensemble syncLimit SL (ticks of
           500 ms); cut for max(2 x session, SL x tick + session) + 1 s
  b        n1 (the leader) cut from every ZooKeeper server, not from n2/n3
  c        n3 (the consumer's node) cut from n1 (the leader), not from ZK
  d:DIR    one-way cut between n1 and F: DIR "in" drops F -> n1 (default),
           "out" drops n1 -> F
  e        n1's egress delayed 200 ms with 5% loss (a userspace frame
           forwarder in the hub: this kernel has no sch_netem)
  f:S      n3 (the route target's node) SIGSTOPped for S seconds (4, 6)
  Cuts b, c, d last 5 s, e 8 s.
  l:X      a lock holder (issue 14, docs/SHARED.md): X one of a, b, d:in,
           d:out, e, the fault above applied to n1 while n1's client
           holds the lock (a at syncLimit 5)
  c:X      a configuration change (issue 13): X one of a, b, applied to n1
           while new config versions are written ("Config scenarios")

Load: one bridge client (through n2) pipelines ingress requests asking for a
reply to "external.ingress" at RATE/s (EB_PARTITION_RATE, default 300); the
default route sends them to "orders", whose consumer (through n3) records
every message with its ebnode.epoch/ebnode.seq stamp. (chaos.py's Client and
Consumer.)

Checks (strict: any violation fails the trial):
  overlap-metrics  no two nodes report ebnode_leader 1 at overlapping
                   times (GET /metrics of every node polled every 20 ms)
  overlap-log      no overlapping "elected:"/"revoked:" intervals in the
                   logs (well-formed NOTICE lines only)
  stale            no message stamped by a superseded epoch reaches the
                   consumer after the first delivery or ack of a newer epoch
  ack-epochs       the acknowledged epochs never go backwards per client
  delivered        every acknowledged request's message reached the consumer
  answered         every request answered (ack or failure frame) within
                   ANSWER_BOUND_S
  recovery         after the heal one leader and acks again within a bound
  exit             every node exits with 0 on SIGTERM at the end (under
                   ASan that includes LeakSanitizer)
Reported, not failed: gaps in the per-epoch sequence numbers.

Lock scenarios (l:X): three bridge clients (this namespace), one per node,
loop acquire (with a notify address) -> writes every 10 ms for 20 ms to a
fencing-checking resource kept here (it records every (token, client)
write and rejects a token lower than the highest accepted) -> release. Once
n1's client holds the lock it is pinned (keeps it and keeps writing until
revoked or the heal), and the fault is applied. Checks (strict):
  two-holders  no two clients' hold intervals (acquire answer received ..
               release sent or notify received) share time
  tokens       tokens strictly increase in acquisition order
  fence        no write rejected (a stale holder writing after a newer
               token), accepted writes of different tokens never interleave
  told         every hold the node revoked reached its client as a notify
               (node revocation counters = notifies received)
  recovery     every client holds the lock 3 times after the heal
  exit, client node exit codes; no client connection error
Reported: cycles, notifies, time from the cut to the notify and to the
next holder.

Config scenarios (c:X, issue 13, docs/CONFIG.md): a bridge client on every
node (RATE/3 each) sends ingress requests; <root>/config routes them (body
field "c") to cfg.t1 or cfg.t2, one consumer each (on n3 and n2). X is a
or b above, applied to n1 (the leader; a at syncLimit 5); from the cut to
the heal the harness writes a new version every 0.5 s with ebctl through
the two quorum servers, alternating the target. Checks (strict), besides
overlap-*, stale, ack-epochs, delivered, answered, recovery and exit:
  cfg-monotonic    no node's applied version (ebnode_config_version, polled
                   every 20 ms) goes backwards
  cfg-written      every applied and every stamped version was written
                   (ebctl's answers = ebctl config history)
  cfg-route        every delivered message carries ebnode.config and went
                   to its version's target; its ack names that target
  cfg-epoch-order  per leader epoch the stamped versions never go back in
                   sequence order
  converge         after the heal every node applies the last version
                   within 30 s (scaled)
Reported: messages routed by a version older than the newest written when
they arrived and by how much, convergence and apply times, leadership
relative to the cut. (Plain "c" stays the consumer-cut scenario.)

Usage:
  partition.py [--scenarios a:4,b,...] [--trials N] [--short] [--json F]
  partition.py --cleanup-stale     remove namespaces of dead runs
Exit: 0 all checks passed, 1 a violation, 2 a harness error, 77 skipped
(not root, no network namespaces, tools missing).
Environment: EBNODE_BIN (required), EBCTL_BIN (c:X; default ../ctl/ebctl
next to EBNODE_BIN's directory), EB_TEST_TIMEOUT_MULTIPLIER,
EB_PARTITION_RATE, EB_TEST_KEEP_TMP=1 (keep the run dir of a passing run),
ZK_SERVER_SH (default /usr/share/zookeeper/bin/zkServer.sh).
"""

import argparse
import ctypes
import heapq
import http.client
import itertools
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
import ebtest  # noqa: E402
import chaos_checks  # noqa: E402
# Client and Consumer: the same load as the chaos suite.
import chaos  # noqa: E402

SKIP = 77
NET = "10.77.0."
ZK_IP = {i: NET + str(10 + i) for i in (1, 2, 3)}
NODE_IP = {i: NET + str(20 + i) for i in (1, 2, 3)}
CLIENT_IP = NET + "2"
SESSION_MS = 2000
TICK_MS = 500
RATE = float(os.environ.get("EB_PARTITION_RATE", "300"))
WINDOW = 256
POLL_S = 0.02
PRE_S = 2.0          # load before the fault
POST_S = 2.0         # load after recovery
CUT_S = 5.0          # b, c, d
DEGRADE_S = 8.0      # e
ANSWER_BOUND_S = ebtest.scaled(12)   # bus.request_timeout_ms 10 s + 2 s
DELIVERY_WAIT_S = ebtest.scaled(3)
RECOVERY_S = ebtest.scaled(30)
ZK_SERVER_SH = os.environ.get("ZK_SERVER_SH",
                              "/usr/share/zookeeper/bin/zkServer.sh")
LOCKS = ["l:a", "l:b", "l:d:in", "l:d:out", "l:e"]
SHORT = ["a:4", "a:5", "a:10", "b", "c", "d:in", "d:out", "e", "f:4",
         "f:6", "l:a", "l:b"]
CONFIGS = ["c:a", "c:b"]
LONG = ["a:4", "a:5", "a:10", "b", "c", "d:in", "d:out", "e", "f:4",
        "f:6"] + LOCKS + CONFIGS


def now():
    return time.time()


def log(msg):
    sys.stdout.write("%s partition: %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stdout.flush()


def run(argv, check=True, input=None, timeout=60):
    p = subprocess.run(argv, input=input, capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), p.returncode,
                                                 p.stderr.strip()))
    return p


# ---------------------------------------------------------------------------
# Namespaces, bridge, cuts.

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def setns(name):
    """Moves the calling thread (and the threads it creates later) into
    the named network namespace."""
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns %s: %s" % (name, os.strerror(e)))
    finally:
        os.close(fd)


def ns_pids(ns):
    p = run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def kill_ns(ns):
    """SIGKILLs every process in a namespace (not this one) and deletes
    it. Used on every exit path and for the leftovers of dead runs."""
    me = os.getpid()
    for _ in range(50):
        pids = [p for p in ns_pids(ns) if p != me]
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGCONT)
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    run(["ip", "netns", "del", ns], check=False)


def answer_checks(trial, reqs, acks, owner):
    """chaos_checks' answer rules for a trial: their counts in trial.info
    and a violation for each rule broken."""
    ansv = chaos_checks.check_answers(reqs, acks, owner, trial.t_end,
                                      True, ANSWER_BOUND_S, 0)
    counts = {}
    for rule, text in ansv:
        counts[rule] = counts.get(rule, 0) + 1
    trial.info["ack_regressions"] = counts.get("ack-epochs", 0)
    trial.info["acked_undelivered"] = counts.get("delivered", 0)
    trial.info["unanswered_or_late"] = counts.get("answered", 0)
    for rule in ("ack-epochs", "delivered", "answered"):
        texts = [t for r, t in ansv if r == rule]
        if texts:
            trial.violate(rule, "%d: %s" % (len(texts),
                                            "; ".join(texts[:3])))


def cleanup_stale():
    """Namespaces of runs whose harness is gone (SIGKILLed by a ctest
    timeout, say)."""
    names = run(["ip", "netns", "list"], check=False).stdout.split("\n")
    gone = 0
    for ln in names:
        m = re.match(r"^(ebp(\d+)-\S+)", ln.strip())
        if not m:
            continue
        pid = int(m.group(2))
        alive = False
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                alive = b"partition.py" in f.read()
        except OSError:
            pass
        if not alive:
            kill_ns(m.group(1))
            gone += 1
    return gone


class Net:
    HOSTS = [("z1", ZK_IP[1]), ("z2", ZK_IP[2]), ("z3", ZK_IP[3]),
             ("n1", NODE_IP[1]), ("n2", NODE_IP[2]), ("n3", NODE_IP[3]),
             ("cl", CLIENT_IP)]

    def __init__(self):
        self.tag = "ebp%d" % os.getpid()
        self.made = []
        self.cuts = 0

    def ns(self, short):
        return "%s-%s" % (self.tag, short)

    def ip(self, short, *args):
        return run(["ip", "-n", self.ns(short)] + list(args))

    def in_ns(self, short, argv):
        return ["ip", "netns", "exec", self.ns(short)] + list(argv)

    def offload_off(self, short, dev):
        # Frames cross the userspace forwarder of scenario e as they are:
        # every stack computes its own checksums and segments.
        run(self.in_ns(short, ["ethtool", "-K", dev, "tx", "off", "tso",
                               "off", "gso", "off", "gro", "off"]),
            check=False)

    def build(self):
        for short in ["hub"] + [h for h, _ in self.HOSTS]:
            run(["ip", "netns", "add", self.ns(short)])
            self.made.append(self.ns(short))
            self.ip(short, "link", "set", "lo", "up")
        self.ip("hub", "link", "add", "br0", "type", "bridge")
        self.ip("hub", "link", "set", "br0", "up")
        for short, addr in self.HOSTS:
            port = "v" + short
            self.ip("hub", "link", "add", port, "type", "veth", "peer",
                    "name", "eth0", "netns", self.ns(short))
            self.ip("hub", "link", "set", port, "master", "br0", "up")
            self.ip(short, "addr", "add", addr + "/24", "dev", "eth0")
            self.ip(short, "link", "set", "eth0", "up")
            self.offload_off(short, "eth0")
            self.offload_off("hub", port)

    def destroy(self):
        for ns in reversed(self.made):
            kill_ns(ns)
        self.made = []

    def cut(self, short, peers, direction="both"):
        """Drops packets between host short and peers (IPs), in its own
        namespace: "both", "in" (from the peers) or "out" (to them).
        Returns a handle for heal()."""
        self.cuts += 1
        table = "cut%d" % self.cuts
        rules = []
        for p in peers:
            if direction in ("both", "in"):
                rules.append("add rule inet %s input ip saddr %s drop"
                             % (table, p))
            if direction in ("both", "out"):
                rules.append("add rule inet %s output ip daddr %s drop"
                             % (table, p))
        script = "\n".join([
            "add table inet %s" % table,
            "add chain inet %s input { type filter hook input priority "
            "-10 ; }" % table,
            "add chain inet %s output { type filter hook output priority "
            "-10 ; }" % table] + rules) + "\n"
        run(self.in_ns(short, ["nft", "-f", "-"]), input=script)
        return (short, table)

    def heal(self, handle):
        short, table = handle
        run(self.in_ns(short, ["nft", "delete", "table", "inet", table]))

    def degrade(self, short, delay_ms, loss_pct):
        """Host short's egress delayed and lossy: its bridge port is
        detached and a forwarder (this script, --forward) carries its
        frames to a new port, delaying and dropping those it sends."""
        port = "v" + short
        self.ip("hub", "link", "add", "fa", "type", "veth", "peer", "name",
                "fb")
        self.offload_off("hub", "fa")
        self.offload_off("hub", "fb")
        self.ip("hub", "link", "set", "fb", "master", "br0", "up")
        self.ip("hub", "link", "set", "fa", "up", "promisc", "on")
        fwd = subprocess.Popen(
            self.in_ns("hub", [sys.executable, os.path.abspath(__file__),
                               "--forward", port, "fa", str(delay_ms),
                               str(loss_pct)]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = fwd.stdout.readline().strip()
        if line != "ready":
            fwd.kill()
            raise RuntimeError("forwarder said %r" % line)
        self.ip("hub", "link", "set", port, "nomaster")
        self.ip("hub", "link", "set", port, "promisc", "on")
        return (port, fwd)

    def restore(self, handle):
        port, fwd = handle
        try:
            fwd.stdin.close()  # EOF: the forwarder exits
        except OSError:
            pass
        try:
            fwd.wait(timeout=5)
        except subprocess.TimeoutExpired:
            fwd.kill()
            fwd.wait()
        self.ip("hub", "link", "set", port, "master", "br0")
        self.ip("hub", "link", "del", "fa")  # flushes fb's fdb entries
        if fwd.returncode != 0:
            raise RuntimeError("the frame forwarder failed (exit %d)"
                               % fwd.returncode)


def forward_main(a, b, delay_ms, loss_pct):
    """Frame forwarder between interfaces a (the degraded host's port) and
    b: frames from a are dropped with loss_pct % and sent after delay_ms;
    frames from b pass at once. Exits when stdin closes."""
    eth_p_all = 3
    sa = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                       socket.htons(eth_p_all))
    sa.bind((a, 0))
    sb = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                       socket.htons(eth_p_all))
    sb.bind((b, 0))
    for s in (sa, sb):
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    delay = delay_ms / 1000.0
    loss = loss_pct / 100.0
    q = []
    n = 0
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        t = time.monotonic()
        timeout = max(0.0, q[0][0] - t) if q else 1.0
        r, _, _ = select.select([sa, sb, sys.stdin], [], [], timeout)
        if sys.stdin in r and not sys.stdin.readline():
            return 0
        for s in (sa, sb):
            if s not in r:
                continue
            while True:
                try:
                    data, addr = s.recvfrom(65536)
                except BlockingIOError:
                    break
                except OSError:  # the port went away: restore() runs
                    return 0
                if addr[2] == socket.PACKET_OUTGOING:
                    continue
                if s is sa:
                    if random.random() < loss:
                        continue
                    heapq.heappush(q, (time.monotonic() + delay, n, data))
                    n += 1
                else:
                    try:
                        sa.send(data)
                    except OSError:
                        pass
        t = time.monotonic()
        while q and q[0][0] <= t:
            try:
                sb.send(heapq.heappop(q)[2])
            except OSError:
                pass


# ---------------------------------------------------------------------------
# ZooKeeper ensemble and nodes.

def fourlw(i, cmd):
    try:
        with socket.create_connection((ZK_IP[i], 2181), timeout=1) as s:
            s.settimeout(1)
            s.sendall(cmd.encode())
            out = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                out += b
            return out.decode(errors="replace")
    except OSError:
        return ""


class Ensemble:
    def __init__(self, net, workdir, sync_limit):
        self.net = net
        self.dir = os.path.join(workdir, "zk-sl%d" % sync_limit)
        self.sync_limit = sync_limit
        self.procs = {}

    def start(self):
        for i in (1, 2, 3):
            d = os.path.join(self.dir, "s%d" % i)
            os.makedirs(os.path.join(d, "data"), exist_ok=True)
            with open(os.path.join(d, "data", "myid"), "w") as f:
                f.write("%d\n" % i)
            cfg = [
                "tickTime=%d" % TICK_MS, "initLimit=20",
                "syncLimit=%d" % self.sync_limit,
                "minSessionTimeout=1000", "maxSessionTimeout=60000",
                "dataDir=%s/data" % d, "clientPort=2181",
                "clientPortAddress=%s" % ZK_IP[i], "maxClientCnxns=0",
                "admin.enableServer=false",
                "4lw.commands.whitelist=ruok,srvr,mntr,cons",
                "autopurge.purgeInterval=0"]
            cfg += ["server.%d=%s:2888:3888" % (j, ZK_IP[j])
                    for j in (1, 2, 3)]
            with open(os.path.join(d, "zoo.cfg"), "w") as f:
                f.write("\n".join(cfg) + "\n")
            env = dict(os.environ, ZOOPIDFILE=os.path.join(d, "zk.pid"),
                       ZOO_LOG_DIR=d, JMXDISABLE="true", SERVER_JVMFLAGS=(
                           "-Xmx256m -XX:+UseSerialGC "
                           "-XX:TieredStopAtLevel=1 -Dzookeeper.log.dir=%s "
                           "-Dzookeeper.root.logger=INFO,CONSOLE "
                           "-Dzookeeper.console.threshold=INFO" % d))
            out = open(os.path.join(d, "zk.out"), "ab")
            self.procs[i] = subprocess.Popen(
                self.net.in_ns("z%d" % i, [ZK_SERVER_SH, "start-foreground",
                                           os.path.join(d, "zoo.cfg")]),
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                cwd=d, start_new_session=True)
            out.close()
        self.wait_quorum(ebtest.scaled(90))
        log("ensemble up (syncLimit %d): %s" % (self.sync_limit,
                                                 self.modes()))

    def modes(self):
        out = {}
        for i in (1, 2, 3):
            m = re.search(r"^Mode: (\S+)", fourlw(i, "srvr"), re.M)
            out[i] = m.group(1) if m else None
        return out

    def wait_quorum(self, timeout):
        def ok():
            for i, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError("ZooKeeper server %d exited (%s)" %
                                       (i, self.dir))
            m = self.modes()
            return (sorted(v or "" for v in m.values()) ==
                    ["follower", "follower", "leader"])
        ebtest.wait_until(ok, timeout / ebtest.TIMEOUT_MULTIPLIER,
                          "ZooKeeper quorum of 3", interval=0.2)

    def follower(self):
        m = self.modes()
        return min(i for i, v in m.items() if v == "follower")

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        self.procs = {}


class Node:
    """An ebnode in its namespace, with its polled leader gauge."""

    def __init__(self, net, idx, root, zk, workdir, outbound=()):
        self.name = "n%d" % idx
        self.idx = idx
        self.wd = workdir
        self.lines = None  # the log, kept when the process is closed
        ip = NODE_IP[idx]
        wrapper = os.path.join(workdir, "ebnode-%s.sh" % self.name)
        binary = os.path.abspath(ebtest.ebnode_bin())  # runs in a temp dir
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n"
                    % (net.ns(self.name), binary))
        os.chmod(wrapper, 0o755)
        cfg = ebtest.cluster_config(
            root, "addr-" + self.name, zk=zk,
            node={"id": self.name, "host": ip, "eligible": True},
            zookeeper={"session_timeout_ms": SESSION_MS},
            cluster={"listen": ip, "port": 7001, "heartbeat_ms": 250,
                     "link_timeout_ms": 1000},
            bus={"request_timeout_ms": 10000},
            bridge={"listen": ip, "port": 7000,
                    "inbound": [{"address": chaos.INGRESS},
                                {"address": "ebnode.lock"}],
                    "outbound": [{"address": chaos.TARGET},
                                 {"addressRegex": "notify[.].*"}] +
                    [{"address": a} for a in outbound]},
            admin={"listen": ip, "port": 9090},
            ingress={"default_route": {"to": chaos.TARGET},
                     "hold_max": 1000, "hold_ms": 5000})
        asan = os.environ.get("ASAN_OPTIONS", "")
        env = {"ASAN_OPTIONS": (asan + ":" if asan else "") +
               "quarantine_size_mb=8"}
        real = os.environ["EBNODE_BIN"]
        os.environ["EBNODE_BIN"] = wrapper
        try:
            self.eb = ebtest.EbNode(cfg, name=self.name, ready_timeout=30,
                                    env=env)
        finally:
            os.environ["EBNODE_BIN"] = real
        self.end_ts = None
        self.exit_code = None
        self.stops = []
        self.samples = []
        self.cfgv = []  # (answered_ts, ebnode_config_version)
        self.quit = False
        self.poller = threading.Thread(target=self._poll, daemon=True,
                                       name="poll-" + self.name)
        self.poller.start()

    @property
    def shim(self):
        return types.SimpleNamespace(eb=self.eb)

    def _poll(self):
        host, port = self.eb.admin
        while not self.quit:
            t0 = now()
            v = None
            try:
                st, body = ebtest.admin_request(host, port, "GET",
                                                "/metrics", timeout=0.5)
                if st == 200 and isinstance(body, str):
                    m = re.search(r"^ebnode_leader (\S+)", body, re.M)
                    if m:
                        v = int(float(m.group(1)))
                    m = re.search(r"^ebnode_config_version (\S+)", body,
                                  re.M)
                    if m:
                        self.cfgv.append((now(), int(float(m.group(1)))))
            except (OSError, ValueError, http.client.HTTPException):
                pass
            self.samples.append((t0, now(), v))
            rest = t0 + POLL_S - now()
            if rest > 0:
                time.sleep(rest)  # the poll period, not a synchronisation

    def gauge(self):
        for _, _, v in reversed(self.samples[-10:]):
            if v is not None:
                return v
        return None

    def log_lines(self):
        return self.lines if self.lines is not None else self.eb.log_lines()

    def events(self):
        return chaos_checks.parse_events(self.log_lines(), self.name)

    def leading(self):
        ev = self.events()
        return ev[-1][2] if ev and ev[-1][1] == "elected" else None

    def close(self):
        self.quit = True
        self.poller.join(5)
        if self.eb.running():
            try:
                self.eb.send_signal(signal.SIGCONT)
            except OSError:
                pass
        if self.lines is not None:
            return
        self.exit_code = self.eb.stop()
        if self.end_ts is None:
            self.end_ts = now()
        self.lines = self.eb.log_lines()
        shutil.copy(self.eb.log_path, os.path.join(self.wd, self.name +
                                                   ".log"))
        self.eb.close()


# ---------------------------------------------------------------------------
# One trial.

class Trial:
    def __init__(self, ctx, scen, param):
        self.ctx = ctx
        self.scen = scen
        self.param = param
        self.label = scen + (":%s" % param if param is not None else "")
        self.nodes = []
        self.client = self.consumer = None
        self.violations = []
        self.info = {}

    def violate(self, rule, text):
        self.violations.append((rule, text))

    def run(self):
        ens = self.ctx.ensemble
        t_start = time.monotonic()
        root = ebtest.unique_root()
        f = ens.follower()
        others = [i for i in (1, 2, 3) if i != f]
        zk_f = "%s:2181" % ZK_IP[f]
        zk_o = ",".join("%s:2181" % ZK_IP[i] for i in others)
        self.info["zk_follower"] = f
        wd = self.ctx.trial_dir(self.label)
        n1 = Node(self.ctx.net, 1, root, zk_f, wd)
        self.nodes.append(n1)
        ebtest.wait_until(lambda: n1.leading() is not None, 30, "n1 leads")
        for i in (2, 3):
            self.nodes.append(Node(self.ctx.net, i, root, zk_o, wd))
        n2, n3 = self.nodes[1], self.nodes[2]
        self.consumer = chaos.Consumer(n3.shim)
        self.consumer.start()
        self.probe(n2)
        self.client = chaos.Client(1, n2.shim)
        self.client.start()
        ebtest.wait_until(lambda: len(self.client.acks) >= 10, 30,
                          "acks flow")
        time.sleep(PRE_S)  # steady load before the fault (the experiment)
        t_fault = self.t_fault = now()
        self.fault(n1, n3, f, others)
        t_heal = self.t_heal = now()
        self.info["fault_s"] = round(t_heal - t_fault, 2)
        self.recover(t_heal)
        time.sleep(POST_S)  # steady load after recovery (the experiment)
        self.finish()
        self.check()
        self.info["elapsed_s"] = round(time.monotonic() - t_start, 1)

    def probe(self, entry):
        c = ebtest.BridgeClient(*entry.eb.bridge)
        try:
            def ok():
                c.send(chaos.INGRESS, {"probe": entry.name},
                       reply_address="p")
                return c.recv_frame(timeout=5).get("type") == "message"
            ebtest.wait_until(ok, 30, "ingress through %s" % entry.name,
                              interval=0.2)
        finally:
            c.close()

    def fault(self, n1, n3, f, others):
        net = self.ctx.net
        s = self.scen
        if s == "a":
            sl = int(self.param)
            hold = max(2 * SESSION_MS, sl * TICK_MS + SESSION_MS) / 1000.0 + 1
            h = net.cut("z%d" % f, [ZK_IP[i] for i in others])
            log("%s: ZK server %d cut from %s for %.1f s" % (
                self.label, f, others, hold))
            time.sleep(hold)  # the fault's duration (the experiment)
            net.heal(h)
            self.t_cut_end = now()  # before the quorum forms again
            ens = self.ctx.ensemble
            ens.wait_quorum(ebtest.scaled(60))
        elif s == "b":
            h = net.cut("n1", list(ZK_IP.values()))
            log("%s: n1 (leader) cut from ZooKeeper for %.1f s"
                % (self.label, CUT_S))
            time.sleep(CUT_S)
            net.heal(h)
        elif s == "c":
            h = net.cut("n3", [NODE_IP[1]])
            log("%s: n3 (consumer) cut from n1 (leader) for %.1f s"
                % (self.label, CUT_S))
            time.sleep(CUT_S)
            net.heal(h)
        elif s == "d":
            d = self.param or "in"
            h = net.cut("n1", [ZK_IP[f]], direction=d)
            log("%s: one-way cut, %s dropped, for %.1f s" % (
                self.label, "ZK %d -> n1" % f if d == "in" else
                "n1 -> ZK %d" % f, CUT_S))
            time.sleep(CUT_S)
            net.heal(h)
        elif s == "e":
            h = net.degrade("n1", 200, 5)
            log("%s: n1 egress +200 ms, 5%% loss for %.1f s"
                % (self.label, DEGRADE_S))
            time.sleep(DEGRADE_S)
            net.restore(h)
        elif s == "f":
            secs = float(self.param)
            log("%s: n3 (consumer's node) SIGSTOP for %.1f s"
                % (self.label, secs))
            n3.eb.send_signal(signal.SIGSTOP)
            t = now()
            time.sleep(secs)
            n3.eb.send_signal(signal.SIGCONT)
            n3.stops.append((t, now()))
        else:
            raise ValueError("unknown scenario %r" % s)

    def recover(self, t_heal):
        def ok():
            leaders = [n for n in self.nodes if n.gauge() == 1]
            if len(leaders) != 1:
                return False
            return any(t > t_heal + 0.2 for t, _ in self.client.acks[-5:])
        try:
            ebtest.wait_until(ok, RECOVERY_S / ebtest.TIMEOUT_MULTIPLIER,
                              "one leader and acks after the heal")
        except AssertionError as e:
            self.violate("recovery", str(e))

    def finish(self):
        c = self.client
        c.sending = False
        deadline = time.monotonic() + ANSWER_BOUND_S + 1
        while c.outstanding > 0 and time.monotonic() < deadline \
                and c.error is None:
            time.sleep(0.05)
        owned = self.delivered_stamps

        def all_delivered():
            got = owned()
            return all((i[0], i[1]) in got for _, _, k, i in list(c.reqs)
                       if k == "ack")
        try:
            ebtest.wait_until(all_delivered, DELIVERY_WAIT_S /
                              ebtest.TIMEOUT_MULTIPLIER, "acked delivered")
        except AssertionError:
            pass  # counted by the check below
        self.t_end = now()
        c.stop()
        self.consumer.stop()
        for n in self.nodes:
            n.close()

    def delivered_stamps(self):
        return {(m[1], m[2]) for m in list(self.consumer.msgs)}

    def check(self):
        c, cons = self.client, self.consumer
        if c.error:
            self.violate("answered", "client connection: %s" % c.error)
        if cons.error:
            self.violate("delivered", "consumer connection: %s" % cons.error)
        for p in c.problems[:5]:
            self.violate("answered", p)
        for n in self.nodes:
            if n.exit_code != 0:  # under ASan: a leak report, a crash
                self.violate("exit", "%s exited with %s after SIGTERM" % (
                    n.name, n.exit_code))
        # Leadership from the metrics and the logs.
        mi = []
        for n in self.nodes:
            mi += chaos_checks.metric_intervals(n.samples, n.name)
        mo = chaos_checks.overlaps(mi)
        active, _ = chaos_checks.leadership(self.nodes)
        lo = chaos_checks.overlaps(active)
        self.info["overlap_metrics_ms"] = round(mo[0][0], 1) if mo else 0.0
        self.info["overlap_log_ms"] = round(lo[0][0], 1) if lo else 0.0
        self.info["poll_samples"] = sum(len(n.samples) for n in self.nodes)
        gaps = {}
        for n in self.nodes:
            ts = [t for t, _, v in n.samples if v is not None]
            gaps[n.name] = round(max((b - a for a, b in zip(ts, ts[1:])),
                                     default=0.0) * 1000)
        self.info["poll_max_gap_ms"] = gaps  # the metric check's resolution
        for ms, a, b in mo[:3]:
            self.violate("overlap-metrics", "%s and %s both report "
                         "ebnode_leader 1 for %.1f ms (%.3f..%.3f)" % (
                             a[3], b[3], ms, b[0], min(a[1], b[1])))
        for ms, a, b in lo[:3]:
            self.violate("overlap-log", "%s (epoch %d) and %s (epoch %d) "
                         "lead at once for %.1f ms by their logs" % (
                             a[3], a[2], b[3], b[2], ms))
        self.info["leaders"] = [(round(s, 3), round(e, 3), ep, nm)
                                for s, e, ep, nm in active]
        msgs = list(cons.msgs)
        acks = {1: list(c.acks)}
        reqs = {1: list(c.reqs)}
        st = chaos_checks.stale_deliveries(msgs, acks)
        self.info["stale_deliveries"] = len(st)
        if st:
            m, ep, t = st[0]
            self.violate("stale", "%d message(s) of a superseded epoch "
                         "delivered after epoch %d routed; first: epoch %d "
                         "seq %d, %.0f ms after" % (len(st), ep, m[1], m[2],
                                                    (m[0] - t) * 1000))
        seqv, owner = chaos_checks.check_sequence(msgs)
        answer_checks(self, reqs, acks, owner)
        self.info["sequence_gaps_info"] = len(seqv)
        ts = [t for t, _ in acks[1]]
        self.info["max_ack_gap_s"] = round(max(
            (b - a for a, b in zip(ts, ts[1:])), default=0.0), 2)
        lat = [a - s for s, a, _, _ in reqs[1] if a is not None]
        during = sorted(a - s for s, a, _, _ in reqs[1] if a is not None
                        and self.t_fault <= s <= self.t_heal)
        self.info["p50_answer_in_fault_ms"] = round(
            during[len(during) // 2] * 1000, 1) if during else None
        kinds = [k for _, _, k, _ in reqs[1]]
        fails = {}
        examples = {}
        for _, _, k, i in reqs[1]:
            if k == "fail":
                key = "%s/%s" % (i[0], i[1])
                fails[key] = fails.get(key, 0) + 1
                examples.setdefault(key, str(i[2])[:100])
        self.info["fail_examples"] = examples
        self.info.update({
            "requests": len(reqs[1]), "acked": kinds.count("ack"),
            "failed": kinds.count("fail"), "fail_kinds": fails,
            "delivered_msgs": len(msgs),
            "epochs": sorted({m[1] for m in msgs}),
            "max_answer_s": round(max(lat), 2) if lat else None})

    def close(self):
        for x in (self.client, self.consumer):
            if x is not None and x.is_alive():
                x.stop()
        for n in self.nodes:
            try:
                n.close()
            except Exception as e:  # keep closing the others
                log("close %s: %s" % (n.name, e))


# ---------------------------------------------------------------------------
# Lock scenarios (issue 14): a lock holder under the same faults.

LOCK = "plock"
LOCK_HOLD_S = 0.02        # a normal hold: writes every LOCK_WRITE_S
LOCK_WRITE_S = 0.01
LOCK_ACQ_MS = 10000       # acquire timeout_ms (a 408 is retried)
LOCK_AFTER_HEAL = 3       # holds per client after the heal (recovery)
LOCK_SCEN = {"a": ("a", "5"), "b": ("b", None), "d:in": ("d", "in"),
             "d:out": ("d", "out"), "e": ("e", None)}


class Fence:
    """The fencing-checking resource: every write carries the writer's
    token; a token lower than the highest accepted is rejected. Records
    every write (t, token, client, accepted)."""

    def __init__(self):
        self.mu = threading.Lock()
        self.highest = 0
        self.writes = []

    def write(self, token, client):
        with self.mu:
            ok = token >= self.highest
            if ok:
                self.highest = token
            self.writes.append((now(), token, client, ok))
            return ok


class LockFailure(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, "%s: %s" % (code, message))
        self.code = code


class LockClient(threading.Thread):
    """A bridge client (in the harness namespace, connected to one node)
    looping acquire -> writes to the fence -> release. A hold is
    [token, acquired_ts, end_ts, how, pinned]: how "released" (end = the
    release was sent), "revoked" (end = the notify arrived) or None.
    While pin is set, the next hold lasts until revoked or unpinned."""

    def __init__(self, node, fence):
        threading.Thread.__init__(self, daemon=True, name="lock-" + node.name)
        self.cname = node.name
        self.fence = fence
        self.notify = "notify." + node.name
        self.b = ebtest.BridgeClient(*node.eb.bridge)
        self.b.register(self.notify)
        self.b.ping()
        self.b.recv_until(lambda f: f.get("type") == "pong", timeout=10)
        self.seq = itertools.count(1)
        self.holds = []
        self.notifies = []      # (ts, token, reason)
        self.fails = {}         # failure code -> count
        self.pin = threading.Event()
        self.quit = False
        self.error = None
        self.revoked = set()

    def _frame(self, timeout):
        try:
            f = self.b.recv_frame(timeout / ebtest.TIMEOUT_MULTIPLIER)
        except TimeoutError:
            return None
        if f.get("address") == self.notify:
            body = f.get("body") or {}
            self.notifies.append((now(), body.get("token"),
                                  body.get("reason")))
            self.revoked.add(body.get("token"))
            return None
        return f

    def request(self, body, timeout):
        ra = "lr.%s.%d" % (self.cname, next(self.seq))
        self.b.send("ebnode.lock", body,
                    headers={"timeout": str(int(timeout * 1000))},
                    reply_address=ra)
        deadline = time.monotonic() + timeout + 5
        while time.monotonic() < deadline:
            f = self._frame(0.5)
            if f is None:
                continue
            if f.get("type") == "err":
                raise LockFailure(f.get("failureCode"), f.get("message"))
            if f.get("address") == ra:
                return f.get("body")
        raise TimeoutError("no answer to %r" % (body,))

    def run(self):
        try:
            self._loop()
        except Exception as e:  # reported by the check
            self.error = "%s: %s" % (type(e).__name__, e)

    def _loop(self):
        while not self.quit:
            try:
                r = self.request({"op": "acquire", "name": LOCK,
                                  "timeout_ms": LOCK_ACQ_MS,
                                  "notify": self.notify},
                                 LOCK_ACQ_MS / 1000.0 + 2)
            except LockFailure as e:
                self.fails[e.code] = self.fails.get(e.code, 0) + 1
                if not self.quit:
                    self._frame(0.05)  # back off: no ZooKeeper for now
                continue
            tok = r["token"]
            h = [tok, now(), None, None, self.pin.is_set()]
            self.holds.append(h)
            until = h[1] + LOCK_HOLD_S
            while True:
                if tok in self.revoked:
                    h[2] = [t for t, k, _ in self.notifies if k == tok][0]
                    h[3] = "revoked"
                    break
                if self.quit or (now() >= until and not
                                 (h[4] and self.pin.is_set())):
                    break
                self.fence.write(tok, self.cname)
                self._frame(LOCK_WRITE_S)
            if h[3] == "revoked":
                if h[4]:
                    self.pin.clear()
                continue
            h[2] = now()
            h[3] = "released"
            try:
                self.request({"op": "release", "name": LOCK, "token": tok},
                             10)
            except LockFailure as e:  # 404: revoked meanwhile (notified)
                self.fails["release-%s" % e.code] = \
                    self.fails.get("release-%s" % e.code, 0) + 1

    def current(self):
        h = self.holds[-1] if self.holds else None
        return h if h is not None and h[2] is None else None

    def stop(self):
        self.quit = True
        self.pin.clear()
        self.join(ebtest.scaled(LOCK_ACQ_MS / 1000.0 + 10))
        self.b.close()


class LockTrial(Trial):
    """l:X: bridge clients on n1, n2 and n3 loop on one lock; once n1's
    client holds it (pinned: it keeps the lock and keeps writing), fault X
    of the leadership scenarios is applied to n1 (a: its ZooKeeper server
    F cut from the quorum while serving reads; b: n1 cut from every
    ZooKeeper server; d:in / d:out: one-way n1 <-> F; e: n1's egress
    delayed and lossy), then healed."""

    def __init__(self, ctx, param):
        scen, p = LOCK_SCEN[param]
        Trial.__init__(self, ctx, scen, p)
        self.label = "l:" + param
        self.fence = Fence()
        self.clients = []

    def run(self):
        ens = self.ctx.ensemble
        t_start = time.monotonic()
        root = ebtest.unique_root()
        f = ens.follower()
        others = [i for i in (1, 2, 3) if i != f]
        self.info["zk_follower"] = f
        wd = self.ctx.trial_dir(self.label)
        self.nodes.append(Node(self.ctx.net, 1, root, "%s:2181" % ZK_IP[f],
                               wd))
        zk_o = ",".join("%s:2181" % ZK_IP[i] for i in others)
        for i in (2, 3):
            self.nodes.append(Node(self.ctx.net, i, root, zk_o, wd))
        self.clients = [LockClient(n, self.fence) for n in self.nodes]
        for c in self.clients:
            c.start()
        c1 = self.clients[0]
        ebtest.wait_until(lambda: all(len(c.holds) >= 3
                                      for c in self.clients), 30,
                          "lock cycles on every node")
        c1.pin.set()
        ebtest.wait_until(lambda: c1.current() is not None and
                          c1.current()[4], 30, "n1's client holds (pinned)")
        self.pinned = c1.current()
        t_fault = self.t_fault = now()
        self.fault(self.nodes[0], self.nodes[2], f, others)
        t_heal = self.t_heal = now()
        c1.pin.clear()
        self.info["fault_s"] = round(t_heal - t_fault, 2)
        try:
            ebtest.wait_until(
                lambda: all(sum(1 for h in c.holds if h[1] > t_heal)
                            >= LOCK_AFTER_HEAL for c in self.clients),
                RECOVERY_S / ebtest.TIMEOUT_MULTIPLIER,
                "%d holds per client after the heal" % LOCK_AFTER_HEAL)
        except AssertionError as e:
            self.violate("recovery", str(e))
        self.info["recovery_s"] = round(now() - t_heal, 2)
        self.finish()
        self.check()
        self.info["elapsed_s"] = round(time.monotonic() - t_start, 1)

    def finish(self):
        for c in self.clients:
            c.stop()
        self.t_end = now()
        self.revocations = {}
        for n in self.nodes:
            try:
                st, body = ebtest.admin_request(*n.eb.admin, "GET",
                                                "/metrics", timeout=5)
                m = re.search(r"^ebnode_shared_lock_revocations_total (\S+)",
                              body, re.M)
                self.revocations[n.name] = int(float(m.group(1)))
            except (OSError, ValueError, AttributeError, TypeError,
                    http.client.HTTPException):
                self.revocations[n.name] = None
        for n in self.nodes:
            n.close()

    def check(self):
        for n in self.nodes:
            if n.exit_code != 0:
                self.violate("exit", "%s exited with %s after SIGTERM" % (
                    n.name, n.exit_code))
        holds = []
        for c in self.clients:
            if c.error:
                self.violate("client", "%s: %s" % (c.cname, c.error))
            for tok, t0, t1, how, pin in c.holds:
                holds.append((t0, t1 if t1 is not None else self.t_end, tok,
                              c.cname, how, pin))
        # Two holders: hold intervals of different clients (acquire reply
        # received .. release sent or notify received) that share time.
        ov = chaos_checks.overlaps([(a, b, tok, nm)
                                    for a, b, tok, nm, _, _ in holds])
        self.info["max_hold_overlap_ms"] = round(ov[0][0], 1) if ov else 0.0
        for ms, a, b in ov[:3]:
            self.violate("two-holders", "%s (token %d) and %s (token %d) "
                         "hold at once for %.1f ms" % (a[3], a[2], b[3],
                                                        b[2], ms))
        # Tokens: strictly increasing in acquisition order, all distinct.
        hs = sorted(holds)
        bad = [(x, y) for x, y in zip(hs, hs[1:]) if y[2] <= x[2]]
        for x, y in bad[:3]:
            self.violate("tokens", "%s got token %d after %s's %d" % (
                y[3], y[2], x[3], x[2]))
        # The fence: no rejected write (a stale holder writing after its
        # successor), accepted writes of different tokens never interleave.
        w = list(self.fence.writes)
        rej = [x for x in w if not x[3]]
        self.info["fence_writes"] = len(w)
        self.info["fence_rejected"] = len(rej)
        for t, tok, cl, _ in rej[:3]:
            self.violate("fence", "%s wrote with token %d after a higher "
                         "token was accepted" % (cl, tok))
        span = {}
        for t, tok, cl, ok in w:
            if ok:
                a, b, _ = span.get(tok, (t, t, cl))
                span[tok] = (min(a, t), max(b, t), cl)
        wi = sorted(span.items())
        inter = [(x, y) for x, y in zip(wi, wi[1:]) if y[1][0] <= x[1][1]]
        self.info["fence_interleaved"] = len(inter)
        for x, y in inter[:3]:
            self.violate("fence", "accepted writes of tokens %d (%s) and "
                         "%d (%s) interleave" % (x[0], x[1][2], y[0],
                                                 y[1][2]))
        # Told: a hold that a later token superseded while it was not
        # ended by its client must have been revoked with a notify.
        for t0, t1, tok, nm, how, pin in holds:
            if how is None and any(h[2] > tok and h[0] < t1 for h in holds):
                self.violate("told", "%s held token %d without a notify "
                             "while a later token was granted" % (nm, tok))
        notes = [(t, tok, r, c.cname) for c in self.clients
                 for t, tok, r in c.notifies]
        self.info["lock_cycles"] = len(holds)
        self.info["notifies"] = len(notes)
        self.info["reasons"] = sorted({r for _, _, r, _ in notes})
        self.info["node_revocations"] = self.revocations
        known = [v for v in self.revocations.values() if v is not None]
        if len(known) == len(self.revocations) and sum(known) != len(notes):
            self.violate("told", "nodes count %d revocations, clients got "
                         "%d notifies" % (sum(known), len(notes)))
        ph = self.pinned
        tok = ph[0]
        rev = [t for t, k, _, _ in notes if k == tok]
        nxt = [h for h in holds if h[2] > tok]
        self.info["pinned_token"] = tok
        self.info["cut_to_revoke_ms"] = (
            round((rev[0] - self.t_fault) * 1000) if rev else None)
        self.info["cut_to_next_holder_ms"] = (
            round((min(h[0] for h in nxt) - self.t_fault) * 1000)
            if nxt else None)
        self.info["revoked_in_fault"] = bool(rev) and rev[0] <= self.t_heal
        self.info["fails"] = {c.cname: c.fails for c in self.clients}

    def close(self):
        for c in self.clients:
            if c.is_alive():
                c.stop()
        for n in self.nodes:
            try:
                n.close()
            except Exception as e:  # keep closing the others
                log("close %s: %s" % (n.name, e))


# ---------------------------------------------------------------------------
# Configuration changes under a ZooKeeper partition (issue 13): c:X.

CFG_TARGETS = ("cfg.t1", "cfg.t2")
CFG_WRITE_S = 0.5         # one new version every CFG_WRITE_S in the fault
CFG_SCEN = {"a": ("a", "5"), "b": ("b", None)}


def ebctl_bin():
    b = os.environ.get("EBCTL_BIN")
    if b:
        return b
    return os.path.join(os.path.dirname(os.path.abspath(ebtest.ebnode_bin())),
                        "..", "ctl", "ebctl")


def cfg_doc(target):
    """Version content: the client traffic (a body field "c") goes to
    target; the probes ({"probe": t}) to their own target in every
    version, so that both consumers can be probed."""
    return {"ingress": {"routes": [
        {"field": "probe", "equals": t, "to": t} for t in CFG_TARGETS] + [
        {"field": "c", "regex": "[0-9]+", "to": target}]}}


def cfg_target(doc):
    for r in (doc.get("ingress") or {}).get("routes") or []:
        if r.get("field") == "c":
            return r.get("to")
    return None


class CfgConsumer(chaos.Consumer):
    """A consumer of one route target: records every routed message as
    chaos.Consumer does, and meta[k] = (address, ebnode.config or None)
    for msgs[k]."""

    def __init__(self, node, address):
        threading.Thread.__init__(self, name="cfg-consumer-" + address,
                                  daemon=True)
        self.address = address
        self.conn = chaos.Conn(node.eb.bridge)
        self.conn.send({"type": "register", "address": address})
        self.msgs = []
        self.meta = []
        self.others = []
        self.quit = False
        self.error = None

    def _record(self, f):
        n = len(self.msgs)
        chaos.Consumer._record(self, f)
        if len(self.msgs) > n:
            h = f.get("headers") or {}
            v = h.get("ebnode.config")
            self.meta.append((f.get("address"),
                              int(v) if v is not None else None))


class ConfigTrial(Trial):
    """c:X: a bridge client on every node sends ingress requests whose
    route (cfg.t1 or cfg.t2, one consumer each, on n3 and n2) is set by
    the cluster configuration <root>/config; fault X is applied to n1 (the
    leader; a: its ZooKeeper server F cut from the quorum while serving
    reads, b: n1 cut from every ZooKeeper server) and, while it lasts, the
    harness writes a new version every CFG_WRITE_S with ebctl through the
    two servers of the quorum, alternating the target. Then heal."""

    def __init__(self, ctx, param):
        scen, p = CFG_SCEN[param]
        Trial.__init__(self, ctx, scen, p)
        self.label = "c:" + param
        self.clients = []
        self.consumers = []
        self.writes = []   # (t_before, t_after, version, target)
        self.history = {}  # version -> target, from ebctl config history
        self.rate = chaos.RATE
        self.t_cut_end = None

    def ctl(self, *args):
        argv = [ebctl_bin(), "config", "--zk", self.zk_o, "--root",
                self.root, "--timeout", "5000"] + list(args)
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=ebtest.scaled(20))

    def write(self, target):
        self.nwrite = getattr(self, "nwrite", 0) + 1
        path = os.path.join(self.wd, "cfg%d.json" % self.nwrite)
        with open(path, "w") as f:
            json.dump(cfg_doc(target), f)
        t0 = now()
        p = self.ctl("--json", "set", path)
        t1 = now()
        if p.returncode != 0:
            self.write_errors.append("%d: %s" % (p.returncode,
                                                  p.stderr.strip()[:200]))
            return None
        v = int(json.loads(p.stdout)["version"])
        self.writes.append((t0, t1, v, target))
        return v

    def all_at(self, v):
        return all(n.cfgv and n.cfgv[-1][1] >= v for n in self.nodes)

    def run(self):
        ens = self.ctx.ensemble
        t_start = time.monotonic()
        self.root = root = ebtest.unique_root()
        f = ens.follower()
        others = [i for i in (1, 2, 3) if i != f]
        self.zk_o = ",".join("%s:2181" % ZK_IP[i] for i in others)
        self.info["zk_follower"] = f
        self.wd = wd = self.ctx.trial_dir(self.label)
        self.write_errors = []
        n1 = Node(self.ctx.net, 1, root, "%s:2181" % ZK_IP[f], wd,
                  outbound=CFG_TARGETS)
        self.nodes.append(n1)
        ebtest.wait_until(lambda: n1.leading() is not None, 30, "n1 leads")
        for i in (2, 3):
            self.nodes.append(Node(self.ctx.net, i, root, self.zk_o, wd,
                                   outbound=CFG_TARGETS))
        n2, n3 = self.nodes[1], self.nodes[2]
        v = self.write(CFG_TARGETS[0])
        if v is None:
            raise RuntimeError("ebctl config set: %s" % self.write_errors)
        ebtest.wait_until(lambda: self.all_at(v), 30, "v%d applied" % v)
        self.consumers = [CfgConsumer(n3, CFG_TARGETS[0]),
                          CfgConsumer(n2, CFG_TARGETS[1])]
        for c in self.consumers:
            c.start()
        for n in self.nodes:
            for t in CFG_TARGETS:
                self.probe_to(n, t)
        chaos.RATE = self.rate / 3.0  # the same total load as Trial
        self.clients = [chaos.Client(k, n.shim)
                        for k, n in enumerate(self.nodes, 1)]
        self.client = self.clients[1]
        for c in self.clients:
            c.start()
        ebtest.wait_until(lambda: all(len(c.acks) >= 10
                                      for c in self.clients), 30,
                          "acks flow through every node")
        time.sleep(PRE_S / 2)  # steady load before the change
        v = self.write(CFG_TARGETS[1])  # a change before the fault
        time.sleep(PRE_S / 2)  # steady load before the fault
        self.v_before = v
        stop = threading.Event()

        def writer():
            k = 0
            while not stop.is_set() and self.t_cut_end is None:
                t0 = time.monotonic()
                self.write(CFG_TARGETS[k % 2])
                k += 1
                stop.wait(max(0.0, CFG_WRITE_S - (time.monotonic() - t0)))
        w = threading.Thread(target=writer, name="cfg-writer", daemon=True)
        self.t_fault = now()
        w.start()
        try:
            self.fault(n1, n3, f, others)
        finally:
            stop.set()
            w.join(ebtest.scaled(30))
        # The links are back at t_cut_end (c:a then waits for the quorum
        # of 3 to form again): convergence counts from there.
        t_back = now()
        t_heal = self.t_heal = self.t_cut_end or t_back
        self.info["fault_s"] = round(t_heal - self.t_fault, 2)
        self.info["quorum_back_ms"] = round((t_back - t_heal) * 1000)
        self.v_last = self.writes[-1][2]
        # Convergence: every node applies the last version after the heal.
        try:
            ebtest.wait_until(lambda: self.all_at(self.v_last),
                              RECOVERY_S / ebtest.TIMEOUT_MULTIPLIER,
                              "every node at v%d" % self.v_last,
                              interval=0.02)
        except AssertionError as e:
            self.violate("converge", str(e))
        self.recover(t_heal)
        time.sleep(POST_S)  # steady load after recovery (the experiment)
        p = self.ctl("--json", "history")
        if p.returncode == 0:
            for e in json.loads(p.stdout):
                self.history[int(e["version"])] = cfg_target(e["config"])
        else:
            self.violate("harness", "ebctl config history: %s"
                         % p.stderr.strip())
        self.finish()
        self.check()
        self.info["elapsed_s"] = round(time.monotonic() - t_start, 1)

    def probe_to(self, entry, target):
        c = ebtest.BridgeClient(*entry.eb.bridge)
        try:
            def ok():
                c.send(chaos.INGRESS, {"probe": target}, reply_address="p")
                return c.recv_frame(timeout=5).get("type") == "message"
            ebtest.wait_until(ok, 30, "ingress through %s to %s" % (
                entry.name, target), interval=0.2)
        finally:
            c.close()

    def recover(self, t_heal):
        def ok():
            leaders = [n for n in self.nodes if n.gauge() == 1]
            if len(leaders) != 1:
                return False
            return all(any(t > t_heal + 0.2 for t, _ in c.acks[-5:])
                       for c in self.clients)
        try:
            ebtest.wait_until(ok, RECOVERY_S / ebtest.TIMEOUT_MULTIPLIER,
                              "one leader and acks on every node after "
                              "the heal")
        except AssertionError as e:
            self.violate("recovery", str(e))

    def finish(self):
        for c in self.clients:
            c.sending = False
        deadline = time.monotonic() + ANSWER_BOUND_S + 1
        while time.monotonic() < deadline and any(
                c.outstanding > 0 and c.error is None for c in self.clients):
            time.sleep(0.05)

        def all_delivered():
            got = self.delivered_stamps()
            return all((i[0], i[1]) in got for c in self.clients
                       for _, _, k, i in list(c.reqs) if k == "ack")
        try:
            ebtest.wait_until(all_delivered, DELIVERY_WAIT_S /
                              ebtest.TIMEOUT_MULTIPLIER, "acked delivered")
        except AssertionError:
            pass  # counted by the check below
        self.t_end = now()
        for c in self.clients:
            c.stop()
        for c in self.consumers:
            c.stop()
        # GET /config names the version the metric shows.
        self.get_config = {}
        for n in self.nodes:
            try:
                st, body = ebtest.admin_request(*n.eb.admin, "GET",
                                                "/config", timeout=5)
                self.get_config[n.name] = body.get("version")
            except (OSError, ValueError, AttributeError,
                    http.client.HTTPException):
                self.get_config[n.name] = None
        for n in self.nodes:
            n.close()

    def delivered_stamps(self):
        return {(m[1], m[2]) for c in self.consumers for m in list(c.msgs)}

    def check(self):
        for c in self.clients:
            if c.error:
                self.violate("answered", "client %d connection: %s"
                             % (c.cid, c.error))
            for p in c.problems[:5]:
                self.violate("answered", p)
        for c in self.consumers:
            if c.error:
                self.violate("delivered", "consumer %s connection: %s"
                             % (c.address, c.error))
        for n in self.nodes:
            if n.exit_code != 0:
                self.violate("exit", "%s exited with %s after SIGTERM" % (
                    n.name, n.exit_code))
        for e in self.write_errors[:3]:
            self.violate("harness", "ebctl config set: %s" % e)
        # Leadership, as in Trial.check.
        mi = []
        for n in self.nodes:
            mi += chaos_checks.metric_intervals(n.samples, n.name)
        mo = chaos_checks.overlaps(mi)
        active, _ = chaos_checks.leadership(self.nodes)
        lo = chaos_checks.overlaps(active)
        for ms, a, b in mo[:3]:
            self.violate("overlap-metrics", "%s and %s both report "
                         "ebnode_leader 1 for %.1f ms" % (a[3], b[3], ms))
        for ms, a, b in lo[:3]:
            self.violate("overlap-log", "%s (epoch %d) and %s (epoch %d) "
                         "lead at once for %.1f ms by their logs" % (
                             a[3], a[2], b[3], b[2], ms))
        self.info["leaders"] = [(round(s, 3), round(e, 3), ep, nm)
                                for s, e, ep, nm in active]
        # Leadership relative to the cut: n1's revocation and the next
        # leader's election, ms after the cut.
        rel = [(round((a - self.t_fault) * 1000),
                round((b - self.t_fault) * 1000) if b != float("inf")
                else None, nm) for a, b, _, nm in active]
        self.info["leaders_ms_after_cut"] = rel
        # Messages of both consumers, in arrival order.
        rows = sorted((m + meta for c in self.consumers
                       for m, meta in zip(list(c.msgs), list(c.meta))),
                      key=lambda r: r[0])
        msgs = [r[:6] for r in rows]
        acks = {c.cid: list(c.acks) for c in self.clients}
        reqs = {c.cid: list(c.reqs) for c in self.clients}
        st = chaos_checks.stale_deliveries(msgs, acks)
        self.info["stale_deliveries"] = len(st)
        if st:
            m, ep, t = st[0]
            self.violate("stale", "%d message(s) of a superseded epoch "
                         "delivered after epoch %d routed; first: epoch %d "
                         "seq %d" % (len(st), ep, m[1], m[2]))
        # Two consumers on two sockets: their arrival order says nothing
        # of the routing order, so the sequence is checked in stamp order
        # (gaps and duplicates; reported, as in Trial).
        seqv, owner = chaos_checks.check_sequence(
            sorted(msgs, key=lambda m: (m[1], m[2])))
        self.info["sequence_gaps_info"] = len(seqv)
        self.info["sequence_first"] = seqv[0][1] if seqv else None
        answer_checks(self, reqs, acks, owner)
        kinds = [k for lst in reqs.values() for _, _, k, _ in lst]
        fails = {}
        for lst in reqs.values():
            for _, _, k, i in lst:
                if k == "fail":
                    key = "%s/%s" % (i[0], i[1])
                    fails[key] = fails.get(key, 0) + 1
        self.info.update({
            "requests": len(kinds), "acked": kinds.count("ack"),
            "failed": kinds.count("fail"), "fail_kinds": fails,
            "delivered_msgs": len(msgs),
            "epochs": sorted({m[1] for m in msgs})})
        # Per entry node: the longest answer (held while no leader routed).
        self.info["max_answer_s_by_entry"] = {
            "n%d" % c: round(max((a - s for s, a, _, _ in lst
                                  if a is not None), default=0.0), 2)
            for c, lst in reqs.items()}
        self.check_config(rows, reqs)

    def check_config(self, rows, reqs):
        hist = self.history
        wrote = {v: t for _, _, v, t in self.writes}
        self.info["versions_written"] = len(self.writes)
        self.info["last_version"] = self.v_last
        # The history keeps the last 20 versions (trimmed by each write,
        # issue 22): compare what it still holds; older versions are known
        # from ebctl's answers alone.
        diff = [(v, t) for v, t in sorted(wrote.items())
                if v in hist and hist[v] != t]
        for v, t in diff[:3]:
            self.violate("cfg-written", "ebctl wrote v%d with %s, the "
                         "history holds %r" % (v, t, hist.get(v)))
        known = dict(wrote)
        known.update(hist)
        # (1) applied versions: never backwards, only written ones.
        for n in self.nodes:
            back = [(a, b) for (_, a), (_, b) in zip(n.cfgv, n.cfgv[1:])
                    if b < a]
            for a, b in back[:3]:
                self.violate("cfg-monotonic", "%s applied v%d after v%d"
                             % (n.name, b, a))
            bad = sorted({v for _, v in n.cfgv if v and v not in known})
            if bad:
                self.violate("cfg-written", "%s applied version(s) %s that "
                             "were never written" % (n.name, bad[:5]))
            during = [v for t, v in n.cfgv
                      if self.t_fault <= t <= self.t_heal]
            self.info["%s_versions_in_fault" % n.name] = (
                [min(during), max(during)] if during else None)
            reach = [t for t, v in n.cfgv if v >= self.v_last]
            self.info["%s_converge_ms" % n.name] = (
                round(max(0.0, reach[0] - self.t_heal) * 1000)
                if reach else None)
        self.info["get_config_version"] = self.get_config
        for n in self.nodes:
            v = self.get_config.get(n.name)
            if v != self.v_last:
                self.violate("converge", "%s: GET /config shows version "
                             "%r at the end, v%d was written last" % (
                                 n.name, v, self.v_last))
        conv = [self.info["%s_converge_ms" % n.name] for n in self.nodes]
        self.info["converge_ms"] = (max(conv) if None not in conv
                                    else None)
        # Apply latency of the majority side (n2, n3) during the fault:
        # from ebctl's return to the first poll that shows the version
        # (or a later one); the polls are 20 ms apart.
        lat = []
        for _, t1, v, _ in self.writes:
            if not self.t_fault <= t1 <= self.t_heal:
                continue
            for n in self.nodes[1:]:
                seen = [t for t, x in n.cfgv if x >= v and t >= t1 - 1.0]
                if seen:
                    lat.append(max(0.0, seen[0] - t1))
        lat.sort()
        self.info["apply_ms_p50_max_n2n3"] = (
            [round(lat[len(lat) // 2] * 1000), round(lat[-1] * 1000)]
            if lat else None)
        # (2) every delivered client message went to its version's target,
        # (1) its stamped version was written and, per leader epoch, the
        # stamped versions never go back in sequence order.
        missing = wrong = unknown = 0
        stamp_to = {}
        by_epoch = {}
        first_bad = []
        for t, ep, seq, entry, c, i, addr, v in rows:
            if c is None:
                continue  # a probe: routed by its own rule
            stamp_to[(ep, seq)] = addr
            if v is None:
                missing += 1
                first_bad.append("c%s.%s (epoch %d seq %d) has no "
                                 "ebnode.config" % (c, i, ep, seq))
                continue
            if v not in known:
                unknown += 1
                first_bad.append("c%s.%s stamped v%d, never written"
                                 % (c, i, v))
                continue
            if known[v] != addr:
                wrong += 1
                first_bad.append("c%s.%s (epoch %d seq %d) stamped v%d "
                                 "(route to %s) delivered to %s" % (
                                     c, i, ep, seq, v, known[v], addr))
            by_epoch.setdefault(ep, {})[seq] = v
        for s in first_bad[:3]:
            self.violate("cfg-route", s)
        self.info["cfg_route_violations"] = missing + wrong + unknown
        back = 0
        for ep, d in sorted(by_epoch.items()):
            vs = [d[s] for s in sorted(d)]
            b = sum(1 for x, y in zip(vs, vs[1:]) if y < x)
            if b:
                back += b
                self.violate("cfg-epoch-order", "epoch %d: the stamped "
                             "version goes back %d time(s) in sequence "
                             "order" % (ep, b))
        # Across epochs (reported): the first version a new leader stamped
        # against the last one its predecessor stamped.
        eps = sorted(by_epoch)
        cross = []
        for a, b in zip(eps, eps[1:]):
            va = by_epoch[a][max(by_epoch[a])]
            vb = by_epoch[b][min(by_epoch[b])]
            cross.append((a, va, b, vb))
        self.info["epoch_versions"] = [
            (ep, min(d.values()), max(d.values()))
            for ep, d in sorted(by_epoch.items())]
        self.info["cross_epoch_regressions"] = sum(
            1 for _, va, _, vb in cross if vb < va)
        # The acknowledgement names the target of the delivered message.
        ackto = 0
        for lst in reqs.values():
            for _, _, k, info in lst:
                if k == "ack" and (info[0], info[1]) in stamp_to and \
                        stamp_to[(info[0], info[1])] != info[2]:
                    ackto += 1
        if ackto:
            self.violate("cfg-route", "%d acknowledgement(s) name another "
                         "target than the delivered message" % ackto)
        # Reported: messages routed by a version older than the newest one
        # already written when they arrived (the window in which a node
        # routes by what it has applied; bounded by the apply latency, or
        # for a cut leader by its lease).
        wt = sorted((t1, v) for _, t1, v, _ in self.writes)
        old = []
        for t, ep, seq, entry, c, i, addr, v in rows:
            if c is None or v is None:
                continue
            newest = max((x for tw, x in wt if tw <= t), default=0)
            if v < newest:
                old.append((t, ep, v, newest))
        self.info["older_version_deliveries"] = len(old)
        self.info["older_version_epochs"] = sorted({o[1] for o in old})
        self.info["older_version_max_behind_ms"] = round(max(
            (t - min(tw for tw, x in wt if x > v)
             for t, ep, v, newest in old), default=0.0) * 1000)

    def close(self):
        chaos.RATE = self.rate
        for c in self.clients + self.consumers:
            if c.is_alive():
                c.stop()
        for n in self.nodes:
            try:
                n.close()
            except Exception as e:  # keep closing the others
                log("close %s: %s" % (n.name, e))


class Ctx:
    def __init__(self, workdir):
        self.net = Net()
        self.workdir = workdir
        self.ensemble = None
        self.k = 0

    def trial_dir(self, label):
        self.k += 1
        d = os.path.join(self.workdir, "t%02d-%s" % (self.k,
                                                      label.replace(":", "")))
        os.makedirs(d, exist_ok=True)
        return d

    def use_ensemble(self, sync_limit):
        if self.ensemble and self.ensemble.sync_limit == sync_limit:
            return
        if self.ensemble:
            self.ensemble.stop()
        self.ensemble = Ensemble(self.net, self.workdir, sync_limit)
        self.ensemble.start()


def parse_scenarios(text):
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        if not tok:
            continue
        s, _, p = tok.partition(":")
        if s == "l":
            if p not in LOCK_SCEN:
                raise SystemExit("lock scenario: l:%s" % "|l:".join(
                    sorted(LOCK_SCEN)))
            out.append((s, p))
            continue
        if s == "c" and p:
            if p not in CFG_SCEN:
                raise SystemExit("config scenario: c:%s" % "|c:".join(
                    sorted(CFG_SCEN)))
            out.append(("cfg", p))
            continue
        if s not in "abcdef" or len(s) != 1:
            raise SystemExit("unknown scenario %r" % tok)
        if s == "a" and not p.isdigit():
            raise SystemExit("scenario a needs a syncLimit: a:4")
        if s == "f" and not p:
            raise SystemExit("scenario f needs seconds: f:4")
        if s == "d" and p not in ("", "in", "out"):
            raise SystemExit("scenario d: d:in or d:out")
        out.append((s, p or None))
    return out


def prerequisites():
    """None, or why this host cannot run the suite."""
    if os.geteuid() != 0:
        return "not root (network namespaces need CAP_SYS_ADMIN/NET_ADMIN)"
    for tool in ("ip", "nft", "ethtool"):
        if shutil.which(tool) is None:
            return "%s is not installed (scripts/deps.sh installs it)" % tool
    if not os.access(ZK_SERVER_SH, os.X_OK):
        return "%s not found (Debian package zookeeper)" % ZK_SERVER_SH
    probe = "ebp%d-probe" % os.getpid()
    p = run(["ip", "netns", "add", probe], check=False)
    if p.returncode != 0:
        return "ip netns add failed: %s" % p.stderr.strip()
    try:
        p = run(["ip", "netns", "exec", probe, "nft", "add", "table", "inet",
                 "t"], check=False)
        if p.returncode != 0:
            return "nft in a namespace failed: %s" % p.stderr.strip()
    finally:
        run(["ip", "netns", "del", probe], check=False)
    return None


def print_lock_summary(results):
    log("lock scenarios (strict; max overlap and rejected writes 0):")
    print("%-8s %6s %6s %7s %7s %8s %8s %s" % (
        "trial", "cycles", "notif", "ovl-ms", "fencrej", "revoke", "next",
        "result"))
    for r in results:
        i = r["info"]
        print("%-8s %6s %6s %7s %7s %8s %8s %s" % (
            r["trial"], i.get("lock_cycles", "-"), i.get("notifies", "-"),
            i.get("max_hold_overlap_ms", "-"), i.get("fence_rejected", "-"),
            i.get("cut_to_revoke_ms", "-"),
            i.get("cut_to_next_holder_ms", "-"),
            "PASS" if not r["violations"] else
            "FAIL(" + ",".join(sorted({v[0] for v in r["violations"]})) +
            ")"))
    sys.stdout.flush()


def print_config_summary(results):
    log("config scenarios (strict; route violations 0; converge: ms from "
        "the heal until every node applied the last version):")
    print("%-6s %5s %6s %6s %6s %6s %6s %8s %6s %8s %s" % (
        "trial", "vers", "reqs", "acked", "failed", "undlv", "route",
        "oldver", "xepoch", "converge", "result"))
    for r in results:
        i = r["info"]
        print("%-6s %5s %6s %6s %6s %6s %6s %8s %6s %8s %s" % (
            r["trial"], i.get("versions_written", "-"),
            i.get("requests", "-"), i.get("acked", "-"),
            i.get("failed", "-"), i.get("acked_undelivered", "-"),
            i.get("cfg_route_violations", "-"),
            i.get("older_version_deliveries", "-"),
            i.get("cross_epoch_regressions", "-"),
            i.get("converge_ms", "-"),
            "PASS" if not r["violations"] else
            "FAIL(" + ",".join(sorted({v[0] for v in r["violations"]})) +
            ")"))
    sys.stdout.flush()


def print_summary(results):
    locks = [r for r in results if r["trial"].startswith("l:")]
    cfgs = [r for r in results if r["trial"] in CONFIGS]
    results = [r for r in results if not r["trial"].startswith("l:")
               and r["trial"] not in CONFIGS]
    if locks:
        print_lock_summary(locks)
    if cfgs:
        print_config_summary(cfgs)
    if not results:
        return
    log("summary (strict; 0 expected everywhere):")
    hdr = ("%-7s %6s %6s %6s %6s %6s %6s %6s %6s %6s %s" % (
        "trial", "ovl-m", "ovl-l", "stale", "ackreg", "undlv", "unans",
        "reqs", "acked", "failed", "result"))
    print(hdr)
    for r in results:
        i = r["info"]
        print("%-7s %6s %6s %6s %6s %6s %6s %6s %6s %6s %s" % (
            r["trial"], i.get("overlap_metrics_ms", "-"),
            i.get("overlap_log_ms", "-"), i.get("stale_deliveries", "-"),
            i.get("ack_regressions", "-"), i.get("acked_undelivered", "-"),
            i.get("unanswered_or_late", "-"), i.get("requests", "-"),
            i.get("acked", "-"), i.get("failed", "-"),
            "PASS" if not r["violations"] else
            "FAIL(" + ",".join(sorted({v[0] for v in r["violations"]})) +
            ")"))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scenarios", default=None,
                    help="comma-separated, e.g. a:4,a:5,b,f:6 (default: the "
                    "short list %s)" % ",".join(SHORT))
    ap.add_argument("--long", action="store_true",
                    help="the long list: %s" % ",".join(LONG))
    ap.add_argument("--trials", type=int, default=1,
                    help="trials of each scenario (default 1)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--cleanup-stale", action="store_true",
                    help="remove the namespaces of dead runs and exit")
    ap.add_argument("--forward", nargs=4, metavar=("A", "B", "MS", "PCT"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.forward:
        a, b, ms, pct = args.forward
        return forward_main(a, b, float(ms), float(pct))
    why = prerequisites()
    if why:
        print("SKIP: network partition tests need network namespaces: %s"
              % why)
        return SKIP
    gone = cleanup_stale()
    if gone:
        log("removed %d namespace(s) of dead runs" % gone)
    if args.cleanup_stale:
        return 0
    scen = parse_scenarios(args.scenarios or
                           ",".join(LONG if args.long else SHORT))
    # Group by syncLimit so that one ensemble serves several trials:
    # scenario a at its own syncLimit, the others at syncLimit 5.
    plan = []
    for s, p in scen:
        for _ in range(args.trials):
            plan.append((int(p) if s == "a" else 5, s, p))
    plan.sort(key=lambda x: x[0])
    chaos.RATE = RATE
    chaos.WINDOW = WINDOW

    def on_term(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    workdir = tempfile.mkdtemp(prefix="ebpart-")
    ctx = Ctx(workdir)
    results = []
    ok = False
    t0 = time.monotonic()
    try:
        ctx.net.build()
        log("run %s, namespaces up, dir %s" % (ctx.net.tag, workdir))
        setns(ctx.net.ns("cl"))  # client, consumer, pollers: never faulted
        for sl, s, p in plan:
            ctx.use_ensemble(sl)
            tr = (LockTrial(ctx, p) if s == "l" else
                  ConfigTrial(ctx, p) if s == "cfg" else Trial(ctx, s, p))
            log("trial %s" % tr.label)
            try:
                tr.run()
            except (AssertionError, RuntimeError, OSError,
                    ebtest.EbNodeError) as e:
                tr.violate("harness", "%s: %s" % (type(e).__name__, e))
            finally:
                tr.close()
            results.append({"trial": tr.label, "info": tr.info,
                            "violations": tr.violations})
            for rule, text in tr.violations:
                log("  VIOLATION %s: %s" % (rule, text))
            log("  %s: %s" % (tr.label, json.dumps(
                {k: v for k, v in tr.info.items() if k != "leaders"})))
        ok = all(not r["violations"] for r in results)
    finally:
        if ctx.ensemble:
            ctx.ensemble.stop()
        ctx.net.destroy()
        elapsed = round(time.monotonic() - t0, 1)
        if results:
            print_summary(results)
        log("elapsed %.1f s" % elapsed)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"elapsed_s": elapsed, "results": results}, f,
                          indent=1)
        if ok and not os.environ.get("EB_TEST_KEEP_TMP"):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log("run dir kept: %s" % workdir)
    harness = any(v[0] == "harness" for r in results for v in r["violations"])
    return 0 if ok else (2 if harness and all(
        v[0] == "harness" for r in results for v in r["violations"]) else 1)


if __name__ == "__main__":
    sys.exit(main())
