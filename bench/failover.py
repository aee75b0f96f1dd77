#!/usr/bin/env python3
"""Failover, startup, registration-propagation and idle-RSS benchmark
(issue 6), against real ebnode processes and a private ZooKeeper.

    bench/failover.py [--rounds N] [--build-dir D] [--no-build]
                      [--out DIR] [--plots DIR] [--window W]
                      [--startups N] [--regs N]

Starts its own standalone ZooKeeper (tests/fixtures/zk_fixture.sh) in a
temp dir and stops it at the end; every ebnode it spawns is killed on every
exit path (ebtest's atexit backstop included). Scenarios, in this order:

  startup      spawn -> READY line on stdout, --startups times (default
               10) standalone and clustered (joining a running 1-node
               cluster with a fresh address); median, min, max.
  propagation  2-node cluster A, B. A bridge client on A registers a fresh
               address; at the same instant a client on B starts sending
               requests to it, one in flight, re-sending at once on every
               NO_HANDLERS failure, until one reaches the handler on A.
               Measured: register frame sent -> request delivered to A's
               client (one clock, one process). --regs samples (default
               100). Register has no acknowledgement, so this includes the
               client -> A bridge hop of the register frame and up to one
               round trip of B's retry loop.
  idle RSS     VmRSS of each node of the failover cluster 1 s after the
               third READY, before any client connects.
  failover     cluster of 2 eligible nodes + 1 non-eligible node ("edge")
               that holds the client, session timeout 2000 ms. A bridge
               client on the edge pipelines ingress requests
               (external.ingress, default route -> "orders", whose consumer
               is the same connection) with a fixed window (--window, 32)
               continuously. Per round: the leader gets SIGTERM (or
               SIGKILL), failover time = signal -> first acknowledgement
               carrying an epoch greater than the last one before the
               signal; the client keeps going for 3 s after the signal,
               then a replacement eligible node is started and the flow is
               given 1.5 s to settle. --rounds rounds per signal (default
               20). Every request's send and answer time is written to
               OUT/failover-<sig>.csv.

Results: a summary on stdout, OUT/failover.json (every value measured),
and the timeline plots (acks per 10 ms from 0.5 s before to 3 s after the
signal, every round grey, the median round blue) PLOTS/perf-failover-term.svg
and PLOTS/perf-failover-kill.svg. Defaults: --build-dir build/perf, OUT =
<build-dir>/failover, PLOTS = OUT. Exit status 1 if a scenario failed (the
failure is reported; its numbers are not invented).
"""

import argparse
import json
import os
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import ebtest  # noqa: E402

sys.path.insert(0, HERE)
import plot  # noqa: E402

SESSION_MS = 2000
INGRESS = "external.ingress"
TARGET = "orders"
PRE_S = 0.5      # timeline: before the signal
POST_S = 3.0     # timeline: after the signal (and how long a round lasts)
BUCKET_MS = 10
SETTLE_S = 1.5   # steady flow after a replacement joined, before a signal


def log(msg):
    sys.stderr.write("%s failover.py: %s\n" % (time.strftime("%H:%M:%S"),
                                                msg))
    sys.stderr.flush()


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def stats(values):
    v = sorted(values)
    if not v:
        return None
    return {"n": len(v), "median": statistics.median(v), "min": v[0],
            "max": v[-1]}


# ---------------------------------------------------------------------------
# ZooKeeper (the test fixture script).

class ZooKeeper:
    def __init__(self):
        self.script = os.path.join(ROOT, "tests", "fixtures", "zk_fixture.sh")
        self.dir = tempfile.mkdtemp(prefix="ebbench-zk-")
        self.started = False

    def start(self):
        self.started = True
        subprocess.run([self.script, "start", self.dir, "standalone"],
                       check=True, stdout=subprocess.DEVNULL, timeout=180)
        with open(os.path.join(self.dir, "connect")) as f:
            self.connect = f.read().strip()
        return self.connect

    def stop(self):
        if self.started:
            subprocess.run([self.script, "stop", self.dir],
                           stdout=subprocess.DEVNULL, timeout=120)
            self.started = False
        subprocess.run(["rm", "-rf", self.dir])


# ---------------------------------------------------------------------------
# A raw bridge connection (select-driven, one thread).

class Conn:
    def __init__(self, hostport):
        self.sock = socket.create_connection(hostport, timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, *frames):
        self.sock.sendall(b"".join(ebtest.BridgeClient.encode(f)
                                   for f in frames))

    def read(self):
        """Reads what is there (the caller selected) and returns complete
        frames."""
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

    def frames(self, timeout):
        r, _, _ = select.select([self.sock], [], [], timeout)
        return self.read() if r else []

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------
# Nodes.

class Nodes:
    """Every ebnode this run spawned, closed at the end."""

    def __init__(self, zk):
        self.zk = zk
        self.all = []
        self.seq = 0

    def spawn(self, root=None, eligible=True, name=None, extra=None):
        self.seq += 1
        name = name or "n%d" % self.seq
        perm = {"inbound": [{}], "outbound": [{}]}
        if root is None:
            cfg = ebtest.standalone_config(bridge=perm,
                                           log={"level": "notice"})
        else:
            cfg = ebtest.cluster_config(
                root, "addr-%s-%d" % (name, self.seq), zk=self.zk,
                node={"id": name, "eligible": eligible},
                zookeeper={"session_timeout_ms": SESSION_MS},
                bridge=perm, ingress={"default_route": {"to": TARGET}})
        cfg = ebtest.merge(cfg, extra or {})
        t0 = time.monotonic()
        node = ebtest.EbNode(cfg, name=name, ready_timeout=30)
        node.ready_s = time.monotonic() - t0
        self.all.append(node)
        return node

    def close(self):
        for n in self.all:
            try:
                n.close()
            except Exception as e:  # keep closing the others
                log("closing %s: %s" % (n.name, e))


def leader_id(node):
    try:
        st, body = ebtest.admin_request(*node.admin, "GET", "/leader",
                                        timeout=2)
    except OSError:
        return None
    if st == 200 and isinstance(body, dict):
        return body.get("node_id")
    return None


# ---------------------------------------------------------------------------
# Scenario: startup time.

def bench_startup(nodes, count):
    out = {}
    samples = []
    for _ in range(count):
        n = nodes.spawn()
        samples.append(n.ready_s * 1000)
        n.close()
    out["standalone_ms"] = samples
    root = ebtest.unique_root()
    first = nodes.spawn(root)
    ebtest.wait_until(lambda: leader_id(first) is not None, 30,
                      "the first node leads")
    samples = []
    for _ in range(count):
        n = nodes.spawn(root)
        samples.append(n.ready_s * 1000)
        n.close()
    first.close()
    out["clustered_ms"] = samples
    return out


# ---------------------------------------------------------------------------
# Scenario: handler-registration propagation.

def bench_propagation(nodes, count):
    root = ebtest.unique_root()
    a = nodes.spawn(root, name="propA")
    ebtest.wait_until(lambda: leader_id(a) is not None, 30, "A leads")
    b = nodes.spawn(root, name="propB")
    ca, cb = Conn(a.bridge), Conn(b.bridge)
    samples, tries_all, failures = [], [], []
    try:
        # Sample -1 is a warm-up (node links still being set up): not kept.
        for i in range(-1, count):
            addr = "prop.%d.%s" % (i, uuid.uuid4().hex[:8])
            tries = 0
            delivered = None
            pending = False
            deadline = time.monotonic() + 10
            t0 = time.monotonic()
            ca.send({"type": "register", "address": addr})
            while True:
                if delivered is None and not pending:
                    tries += 1
                    cb.send({"type": "send", "address": addr, "body": {},
                             "replyAddress": "q%d.%d" % (i, tries)})
                    pending = True
                if delivered is not None and not pending:
                    break
                if time.monotonic() > deadline:
                    failures.append("sample %d: no delivery within 10 s "
                                    "(%d tries)" % (i, tries))
                    break
                r, _, _ = select.select([ca.sock, cb.sock], [], [], 0.5)
                now = time.monotonic()
                if ca.sock in r:
                    for f in ca.read():
                        if f.get("type") == "message" and \
                                f.get("address") == addr:
                            if delivered is None:
                                delivered = now
                            ca.send({"type": "send",
                                     "address": f["replyAddress"],
                                     "body": {"ok": True}})
                if cb.sock in r:
                    for f in cb.read():
                        if not str(f.get("address", "")).startswith("q"):
                            continue
                        pending = False
                        if f.get("type") == "err" and \
                                f.get("failureType") != "NO_HANDLERS":
                            failures.append("sample %d: %r" % (i, f))
            if delivered is not None and i >= 0:
                samples.append((delivered - t0) * 1000)
                tries_all.append(tries)
            ca.send({"type": "unregister", "address": addr})
    finally:
        ca.close()
        cb.close()
        b.close()
        a.close()
    return {"ms": samples, "tries": tries_all, "failures": failures}


# ---------------------------------------------------------------------------
# Scenario: failover.

class Load(threading.Thread):
    """The ingress client: pipelines requests with a fixed window and
    records every send and answer (monotonic seconds). The same connection
    is the consumer of the route target."""

    def __init__(self, node, window):
        super().__init__(daemon=True)
        self.c = Conn(node.bridge)
        self.window = window
        self.send_t = []        # index i -> send time
        self.ans = {}           # i -> (time, epoch or None, failure code)
        self.acks = []          # (time, epoch) of acks, arrival order
        self.delivered = 0
        self.halt = False
        self.error = None
        self.c.send({"type": "register", "address": TARGET})

    def run(self):
        try:
            while not self.halt:
                n = len(self.send_t)
                k = self.window - (n - len(self.ans))
                if k > 0:
                    frames = [{"type": "send", "address": INGRESS,
                               "replyAddress": "r%d" % (n + j),
                               "body": {"i": n + j}} for j in range(k)]
                    t = time.monotonic()
                    self.c.send(*frames)
                    self.send_t.extend([t] * k)
                r, _, _ = select.select([self.c.sock], [], [], 0.05)
                if not r:
                    continue
                fs = self.c.read()
                now = time.monotonic()
                for f in fs:
                    addr = f.get("address", "")
                    if addr == TARGET:
                        self.delivered += 1
                    elif addr.startswith("r"):
                        i = int(addr[1:])
                        if f.get("type") == "message":
                            e = f["body"]["epoch"]
                            self.ans[i] = (now, e, None)
                            self.acks.append((now, e))
                        else:
                            self.ans[i] = (now, None,
                                           f.get("failureCode"))
        except Exception as e:  # reported by the main thread
            self.error = repr(e)

    def stop(self):
        self.halt = True
        self.join(10)
        self.c.close()


def wait_flow(load, seconds, what):
    """Waits until acks have been arriving for `seconds` without a gap
    longer than 0.2 s (bounded)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if load.error:
            raise RuntimeError("client: %s" % load.error)
        a = load.acks
        now = time.monotonic()
        if a and now - a[-1][0] < 0.2:
            k = len(a) - 1
            while k > 0 and a[k - 1][0] > now - seconds and \
                    a[k][0] - a[k - 1][0] < 0.2:
                k -= 1
            if now - a[k][0] >= seconds * 0.95:
                return
        time.sleep(0.05)
    raise RuntimeError("no steady ingress flow (%s)" % what)


def bench_failover(nodes, rounds, window, sigs, rss_out):
    root = ebtest.unique_root()
    e = [nodes.spawn(root)]
    ebtest.wait_until(lambda: leader_id(e[0]) is not None, 30,
                      "the first node leads")
    e.append(nodes.spawn(root))
    edge = nodes.spawn(root, eligible=False, name="edge")
    time.sleep(1.0)  # idle: nothing to await, RSS after a quiet second
    for n in e + [edge]:
        rss_out.append({"node": n.name, "eligible": n is not edge,
                        "leader": leader_id(edge) == n.node_id,
                        "rss_kb": rss_kb(n.pid)})
    load = Load(edge, window)
    load.start()
    results = {}
    try:
        wait_flow(load, SETTLE_S, "start")
        for sig in sigs:
            rows = []
            for k in range(rounds):
                lid = leader_id(edge)
                leader = next((n for n in e if n.node_id == lid), None)
                if leader is None:
                    raise RuntimeError("round %d: leader %r unknown" %
                                       (k, lid))
                old = load.acks[-1][1]
                mark = len(load.acks)
                t_sig = time.monotonic()
                leader.send_signal(sig)
                first = None
                while time.monotonic() < t_sig + 15 and first is None:
                    if load.error:
                        raise RuntimeError("client: %s" % load.error)
                    a = load.acks
                    n = len(a)
                    for j in range(mark, n):
                        if a[j][1] > old:
                            first = a[j][0]
                            break
                    mark = n
                    time.sleep(0.005)
                left = t_sig + POST_S + 0.05 - time.monotonic()
                if left > 0:
                    time.sleep(left)  # the timeline's observation window
                code = leader.wait_exit(10)
                leader.close()
                e.remove(leader)
                row = {"round": k, "t_sig": t_sig, "old_epoch": old,
                       "exit_code": code, "leader": leader.name,
                       "failover_ms": (first - t_sig) * 1000
                       if first else None}
                rows.append(row)
                log("%s round %d/%d: leader %s, failover %s" % (
                    signal.Signals(sig).name, k + 1, rounds, leader.name,
                    "%.1f ms" % row["failover_ms"] if first else
                    "NONE within 15 s"))
                e.append(nodes.spawn(root))
                wait_flow(load, SETTLE_S, "after round %d" % k)
            results[sig] = rows
    finally:
        load.stop()
    return results, load


def timeline(load, t_sig):
    n = int(round((PRE_S + POST_S) * 1000 / BUCKET_MS))
    counts = [0] * n
    lo = t_sig - PRE_S
    for t, _ in load.acks:
        k = int((t - lo) * 1000 // BUCKET_MS)
        if 0 <= k < n:
            counts[k] += 1
    return counts


def write_csv(path, load, rows):
    """Every request sent during a round's window: round, i, send time and
    answer time relative to the signal (s), epoch, failure code."""
    with open(path, "w") as f:
        f.write("round,i,send_s,answer_s,epoch,failure\n")
        for r in rows:
            t_sig = r["t_sig"]
            for i, ts in enumerate(load.send_t):
                if not (t_sig - PRE_S <= ts <= t_sig + POST_S):
                    continue
                a = load.ans.get(i)
                f.write("%d,%d,%.6f,%s,%s,%s\n" % (
                    r["round"], i, ts - t_sig,
                    "%.6f" % (a[0] - t_sig) if a else "",
                    a[1] if a and a[1] is not None else "",
                    a[2] if a and a[2] is not None else ""))


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build",
                                                        "perf"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--plots")
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--startups", type=int, default=10)
    ap.add_argument("--regs", type=int, default=100)
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    if not args.no_build:
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.run(["cmake", "-S", ROOT, "-B", build,
                            "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], check=True,
                           stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build, "-j2", "--target",
                        "ebnode"], check=True, stdout=subprocess.DEVNULL)
    os.environ["EBNODE_BIN"] = os.path.join(build, "node", "ebnode")
    out = os.path.abspath(args.out or os.path.join(build, "failover"))
    plots = os.path.abspath(args.plots or out)
    os.makedirs(out, exist_ok=True)
    os.makedirs(plots, exist_ok=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short",
                             "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    res = {"commit": commit, "session_timeout_ms": SESSION_MS,
           "window": args.window, "rounds": args.rounds,
           "load_avg_start": os.getloadavg()[0], "errors": []}
    zk = ZooKeeper()
    nodes = None
    ok = True
    try:
        log("starting ZooKeeper")
        nodes = Nodes(zk.start())
        for name, fn in (
                ("startup", lambda: bench_startup(nodes, args.startups)),
                ("propagation", lambda: bench_propagation(nodes,
                                                          args.regs))):
            log("scenario %s" % name)
            try:
                res[name] = fn()
            except Exception as e:
                ok = False
                res["errors"].append("%s: %r" % (name, e))
                log("%s FAILED: %r" % (name, e))
        log("scenario failover (%d rounds per signal)" % args.rounds)
        rss = []
        try:
            fo, load = bench_failover(nodes, args.rounds, args.window,
                                      [signal.SIGTERM, signal.SIGKILL], rss)
            res["idle_rss"] = rss
            res["failover"] = {}
            for sig, rows in fo.items():
                sname = signal.Signals(sig).name
                tag = "term" if sig == signal.SIGTERM else "kill"
                write_csv(os.path.join(out, "failover-%s.csv" % tag), load,
                          rows)
                series = [timeline(load, r["t_sig"]) for r in rows]
                fos = [r["failover_ms"] for r in rows]
                good = [(v, k) for k, v in enumerate(fos) if v is not None]
                med_k = sorted(good)[len(good) // 2][1] if good else 0
                # Answers to requests sent in the rounds' windows.
                fails = {}
                for r in rows:
                    for i, ts in enumerate(load.send_t):
                        if r["t_sig"] - PRE_S <= ts <= r["t_sig"] + POST_S:
                            a = load.ans.get(i)
                            key = "unanswered" if a is None else (
                                "ok" if a[2] is None else str(a[2]))
                            fails[key] = fails.get(key, 0) + 1
                for r in rows:
                    del r["t_sig"]
                res["failover"][sname] = {
                    "rounds": rows, "failover_ms": stats(
                        [v for v in fos if v is not None]),
                    "no_failover_rounds": sum(1 for v in fos if v is None),
                    "answers_in_windows": fails,
                    "timeline_median_round": series[med_k] if series
                    else []}
                if series:
                    mk = fos[med_k]
                    plot.failover_timeline(
                        os.path.join(plots, "perf-failover-%s.svg" % tag),
                        "ingress acks per %d ms around %s of the leader "
                        "(%d rounds, session %d ms, window %d)" % (
                            BUCKET_MS, sname, len(rows), SESSION_MS,
                            args.window),
                        series, med_k, BUCKET_MS, -PRE_S,
                        [(mk / 1000.0, "first new-epoch ack, median "
                          "round: %.0f ms" % mk, "#2ca02c")] if mk else [])
            res["client"] = {"requests": len(load.send_t),
                             "answered": len(load.ans),
                             "delivered_to_consumer": load.delivered}
        except Exception as e:
            ok = False
            res["errors"].append("failover: %r" % e)
            log("failover FAILED: %r" % e)
            if rss:
                res["idle_rss"] = rss
    finally:
        if nodes:
            nodes.close()
        zk.stop()
    res["load_avg_end"] = os.getloadavg()[0]
    with open(os.path.join(out, "failover.json"), "w") as f:
        json.dump(res, f, indent=1)
    report(res, out, plots)
    return 0 if ok and not res["errors"] else 1


def fmt(s, unit="ms"):
    if not s:
        return "-"
    return "median %.1f %s, min %.1f, max %.1f (n=%d)" % (
        s["median"], unit, s["min"], s["max"], s["n"])


def report(res, out, plots):
    p = print
    p("\nbench/failover.py at %s, session timeout %d ms, load average "
      "%.1f -> %.1f" % (res["commit"], res["session_timeout_ms"],
                        res["load_avg_start"], res["load_avg_end"]))
    if "startup" in res:
        p("startup to READY, standalone: %s" %
          fmt(stats(res["startup"]["standalone_ms"])))
        p("startup to READY, clustered:  %s" %
          fmt(stats(res["startup"]["clustered_ms"])))
    if "propagation" in res:
        pr = res["propagation"]
        s = stats(pr["ms"])
        p("registration propagation (register sent -> first delivery on "
          "the other node): %s; tries median %s, max %s; failures %d" % (
              fmt(s), statistics.median(pr["tries"]) if pr["tries"]
              else "-", max(pr["tries"]) if pr["tries"] else "-",
              len(pr["failures"])))
        if s:
            v = sorted(pr["ms"])
            p("  p90 %.1f ms, worst %.1f ms" %
              (v[int(0.9 * (len(v) - 1))], v[-1]))
        for f in pr["failures"][:5]:
            p("  failure: %s" % f)
    for r in res.get("idle_rss", []):
        p("idle RSS %-5s (%s%s): %s kB" % (
            r["node"], "eligible" if r["eligible"] else "not eligible",
            ", leader" if r["leader"] else "", r["rss_kb"]))
    targets = {"SIGTERM": 50.0, "SIGKILL": SESSION_MS + 200.0}
    for sname, fo in res.get("failover", {}).items():
        s = fo["failover_ms"]
        p("failover %s: %s; rounds without a new-epoch ack within 15 s: "
          "%d" % (sname, fmt(s), fo["no_failover_rounds"]))
        p("  answers to requests sent within -%.1f..+%.1f s: %s" % (
            PRE_S, POST_S, fo["answers_in_windows"]))
        if s:
            t = targets[sname]
            what = "median" if sname == "SIGTERM" else "every round"
            val = s["median"] if sname == "SIGTERM" else s["max"]
            p("  target: %s <= %.0f ms: %s" % (
                what, t, "met" if val <= t else "MISSED (%.0f ms)" % val))
        p("  rounds: %s" % ", ".join(
            "%.0f" % r["failover_ms"] if r["failover_ms"] is not None
            else "none" for r in fo["rounds"]))
    if "client" in res:
        p("client: %(requests)d requests, %(answered)d answered, "
          "%(delivered_to_consumer)d delivered to the consumer" %
          res["client"])
    for e in res["errors"]:
        p("ERROR: %s" % e)
    p("results: %s/failover.json, per-request CSV %s/failover-*.csv, "
      "plots %s/perf-failover-{term,kill}.svg" % (out, out, plots))


if __name__ == "__main__":
    sys.exit(main())
