#!/usr/bin/env python3
"""Flow control end to end (issue 17): clients flood fire-and-forget ingress
at a slow consumer, against three real ebnode processes and ZooKeeper.

Node a leads and routes, node b is the entry (a follower), node c (not
eligible) holds the only consumer of the route target: a bridge client that
reads RATE messages/s. CLIENTS processes flood b's bridge with fire-and-
forget sends to the ingress address for SECONDS, as fast as their sockets
take them. Then the senders stop and the consumer reads the rest.

What is measured and checked:
- nothing is dropped: the consumer receives every message sent, each
  sender's in order and without gaps, and every node's drop counters (bus,
  ingress, bridge slow-consumer closes) stay 0;
- RSS of every node (VmRSS from /proc, sampled every 0.2 s) stays under
  RSS_MAX_MB;
- the entry node is throttled: over the last 40 % of the flood, what
  b's bridge takes from its clients (its frames_in counter) beyond what
  c's node takes off its links, plus what the consumer reads and what
  any node counts as dropped or failed, stays below 2.5 times RATE. That
  is b's intake without what filled buffers past c's link intake: c's
  bus queue (a plain send may exceed consumer_queue_max up to 8 times,
  docs/BUS.md), its bridge's write queue (the consumer parked past 2 MiB)
  and the socket buffers between c and the consumer (Linux autotunes c's
  send buffer up to net.ipv4.tcp_wmem's maximum, 4 MiB). Those filled
  and emptied in steps of tens of thousands of frames as c's bridge
  parked and resumed the consumer, so b's bare intake over 4 s measured
  0.00-2.37 times RATE here (2.37: plain sends on a loaded machine, c's
  bus queue filling towards the grace) and 2.56 and 2.76 elsewhere; this
  measure 0.96-1.06 in the same runs (both are printed). What b's bridge
  takes without a throttle has nowhere else to go: beyond c's bounded
  queues c drops it (counted, so it is in the measure), and whatever b
  or a hold or the node links' fixed 256 KiB socket buffers hold is not
  subtracted. With b's bridge patched never to stop reading, b took
  289k/s (ingress) and 278k/s (plain sends) here: 28.6 and 27.1 times
  RATE in this measure. bench/flow.sh (30 s) measures the bare intake at
  about 1.0. The clients' own rate is printed too (it also fills the
  receive buffers of the connections b stopped reading);
- the pause itself happened: the entry node's bridge stopped reading
  (blocked_total > 0), or for ingress its gateway pressed its bridges.

Two more cases freeze c (SIGSTOP) 2 s into an ingress flood: for 2 s
(shorter than the link, receipt and session timeouts: nothing may be lost)
and for 5 s (past the 3 s link timeout: the links to c are cut; what they
carried may be lost, but every message the consumer misses must be counted
by a node as dropped or failed, nothing may arrive twice or out of order,
and the links come back).

Run by it.ingress.flow (10 s) and bench/flow.sh (30 s). Environment:
EB_FLOW_SECONDS, EB_FLOW_CLIENTS, EB_FLOW_RATE, EB_FLOW_RSS_MB;
EB_FLOW_DIRECT=0 leaves out the second case: plain sends to the consumer's
address at b, across the link to c. Plain sends have no end-to-end credit
(docs/BUS.md "Flow control"), so there a loss is allowed if c counts it.
"""
import json
import signal
import multiprocessing
import os
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

SECONDS = float(os.environ.get("EB_FLOW_SECONDS", "10"))
CLIENTS = int(os.environ.get("EB_FLOW_CLIENTS", "4"))
RATE = int(os.environ.get("EB_FLOW_RATE", "10000"))
RSS_MAX_MB = float(os.environ.get("EB_FLOW_RSS_MB", "64"))
BATCH = 64  # frames per sendall
RCVBUF = 256 * 1024  # the consumer's socket receive buffer


def node_config(root, name, **extra):
    cfg = ebtest.cluster_config(
        root, name,
        bridge={"inbound": [{"address": "external.ingress"},
                            {"address": "orders"}],
                "outbound": [{"address": "orders"}]},
        ingress={"default_route": {"to": "orders"}},
        log={"level": "notice"})
    return ebtest.merge(cfg, extra)


def frame(obj):
    p = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">I", len(p)) + p


def flooder(host, port, sid, seconds, counts, address):
    """Sends {"s": sid, "i": n} as fast as the socket takes them, for
    seconds; counts[sid] is the number of whole frames the kernel took.
    A frame cut at the end is not counted (the node discards it)."""
    s = socket.create_connection((host, port))
    s.settimeout(0.05)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        frames = [frame({"type": "send", "address": address,
                         "body": {"s": sid, "i": n + k}})
                  for k in range(BATCH)]
        buf = b"".join(frames)
        off = 0
        while off < len(buf) and time.monotonic() < end:
            try:
                off += s.send(buf[off:])
            except socket.timeout:
                continue
        whole, pos = 0, 0
        for f in frames:
            pos += len(f)
            if pos > off:
                break
            whole += 1
        n += whole
        counts[sid] = n
    s.close()


class SlowConsumer:
    """A bridge client on "orders" at c reading RATE messages/s (paced on
    the frames parsed), checking each sender's order."""

    def __init__(self, node):
        # A fixed receive buffer (no autotuning), as a client with bounded
        # memory has: what c writes beyond it stays in c, where it counts.
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        self.s.connect(node.bridge)
        self.s.sendall(frame({"type": "register", "address": "orders"}))
        self.buf = b""
        self.n = 0
        self.next = {}
        self.errors = []
        self.t0 = time.monotonic()
        self.paced = 0  # frames counted against RATE since t0
        self.allow_gaps = False  # a gap is counted, not an error
        self.missing = 0  # messages skipped by gaps

    def pace_from_now(self):
        self.t0 = time.monotonic()
        self.paced = 0

    def _frames(self):
        out = []
        while len(self.buf) >= 4:
            (ln,) = struct.unpack(">I", self.buf[:4])
            if len(self.buf) < 4 + ln:
                break
            out.append(json.loads(self.buf[4:4 + ln]))
            self.buf = self.buf[4 + ln:]
        return out

    def read_for(self, seconds):
        end = time.monotonic() + seconds
        self.s.settimeout(0.05)
        while time.monotonic() < end and \
                "consumer connection closed" not in self.errors:
            due = self.t0 + self.paced / RATE
            now = time.monotonic()
            if due > now:
                time.sleep(max(0.0, min(due - now, end - now)))
                continue
            try:
                data = self.s.recv(min(65536, 64 * 200))
            except socket.timeout:
                continue
            if not data:
                if "consumer connection closed" not in self.errors:
                    self.errors.append("consumer connection closed")
                return
            self.buf += data
            for f in self._frames():
                if f.get("type") != "message":
                    continue
                b = f["body"]
                if "probe" in b:
                    continue
                exp = self.next.get(b["s"], 0)
                if b["i"] > exp and self.allow_gaps:
                    self.missing += b["i"] - exp
                elif b["i"] != exp and len(self.errors) < 10:
                    self.errors.append("sender %d: got %d, expected %d" % (
                        b["s"], b["i"], exp))
                self.next[b["s"]] = b["i"] + 1
                self.n += 1
                self.paced += 1


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def series(text, name, label=None):
    """The values of name's series in a /metrics text, in order (those
    whose line has label, when given)."""
    for line in text.splitlines():
        if line.startswith(name) and line[len(name):][:1] in (" ", "{") \
                and (label is None or label in line):
            yield float(line.rsplit(" ", 1)[1])


def metrics_text(node):
    st, text = ebtest.admin_request(*node.admin, "GET", "/metrics")
    assert st == 200, st
    return text


def metric(node, name, label=None):
    return next(series(metrics_text(node), name, label), 0.0)


def intake(node):
    """Frames node's bridge has taken from its clients (sends)."""
    st, br = ebtest.admin_request(*node.admin, "GET", "/bridge")
    assert st == 200, st
    return br["stats"]["frames_in"]["send"]


def flow_counts(nodes):
    """(frames c's node took off its links, messages counted as dropped or
    failed by any node): one /metrics scrape per node."""
    off_links = lost = 0.0
    for k, n in nodes.items():
        text = metrics_text(n)
        if k == "c":
            off_links += sum(series(text, "ebnode_link_frames_total",
                                    'direction="in"'))
        lost += sum(series(text, "ebnode_bus_messages_all_total",
                           'kind="dropped"'))
        lost += sum(series(text, "ebnode_ingress_dropped_total"))
        lost += sum(series(text, "ebnode_ingress_failed_total"))
    return off_links, lost


def drops(node):
    st, br = ebtest.admin_request(*node.admin, "GET", "/bridge")
    return {
        "bus": metric(node, "ebnode_bus_messages_all_total",
                      'kind="dropped"'),
        "ingress": metric(node, "ebnode_ingress_dropped_total"),
        "ingress_failed": metric(node, "ebnode_ingress_failed_total"),
        "bridge_slow": br["stats"]["closed_slow"],
        "bridge_memory": br["stats"]["closed_memory"],
    }


class Flow(unittest.TestCase):
    def test_flood_slow_consumer(self):
        """Fire-and-forget ingress through b (the issue 17 goal)."""
        self.flood("external.ingress", SECONDS)

    def test_direct_sends_across_link(self):
        """Plain sends to "orders" at b, its consumer on c: only the
        PRESSURE link frames tell b's bridge to stop reading, and c
        queues what b had already written within the grace (8 x the queue
        bound, docs/BUS.md). Plain sends have no end-to-end credit: when c
        is starved of CPU, b can write more than the grace before it hears
        the PRESSURE, and c drops the excess. So this case checks that any
        loss is counted by c (and printed), not that there is none; the
        links stay up. EB_FLOW_DIRECT=0 skips it."""
        if os.environ.get("EB_FLOW_DIRECT", "1") == "0":
            self.skipTest("EB_FLOW_DIRECT=0")
        self.flood("orders", SECONDS, lossy=True)

    def test_consumer_node_paused(self):
        """Ingress flood while the consumer's node c is frozen (SIGSTOP)
        for 2 s, shorter than the link timeout (3 s), the receipt timeout
        (5 s) and the ZooKeeper session: the pressure holds the senders
        back while c is stopped, and after SIGCONT everything arrives, in
        order, nothing dropped, no link cut."""
        self.flood("external.ingress", SECONDS, pause=(2.0, 2.0))

    def test_consumer_node_paused_past_link_timeout(self):
        # lossy, and the links to c must have been cut and come back
        """The same with a 5 s freeze: the links to c time out (3 s) and
        what they carried is lost, but never silently: every message the
        consumer does not get is counted as failed or dropped by a node,
        nothing arrives twice or out of order, and the flow resumes."""
        self.flood("external.ingress", SECONDS, pause=(2.0, 5.0),
                   lossy=True, link_cut=True)

    def flood(self, address, seconds, pause=None, lossy=False,
              link_cut=False):
        root = ebtest.unique_root()
        a = ebtest.EbNode(node_config(root, "a"), name="a")
        self.addCleanup(a.close)
        ebtest.wait_until(lambda: ebtest.admin_request(
            *a.admin, "GET", "/leader")[0] == 200, 20, "a leads")
        b = ebtest.EbNode(node_config(root, "b"), name="b")
        self.addCleanup(b.close)
        c = ebtest.EbNode(node_config(root, "c", node={"eligible": False}),
                          name="c")
        self.addCleanup(c.close)
        nodes = {"a": a, "b": b, "c": c}
        consumer = SlowConsumer(c)
        self.addCleanup(consumer.s.close)
        probe = ebtest.BridgeClient(*b.bridge)
        self.addCleanup(probe.close)

        def routed():
            probe.send("external.ingress", {"probe": True},
                       reply_address="probe")
            ok = probe.recv_frame(timeout=5).get("type") == "message"
            consumer.read_for(0.1)
            return ok
        ebtest.wait_until(routed, 20, "ingress routed end to end")
        consumer.read_for(0.5)
        consumer.pace_from_now()

        counts = multiprocessing.Array("q", CLIENTS)
        procs = [multiprocessing.Process(
            target=flooder, args=(b.bridge[0], b.bridge[1], i, seconds,
                                  counts, address), daemon=True)
            for i in range(CLIENTS)]
        rss = {k: 0.0 for k in nodes}
        consumer.allow_gaps = lossy
        stop_at = cont_at = None
        if pause is not None:
            self.addCleanup(c.send_signal, signal.SIGCONT)
        t0 = time.monotonic()
        for p in procs:
            p.start()
        # (time, sent, received, b's intake, flow_counts) at 60 %;
        # flow_counts asks c, so not while c may be stopped.
        late = None
        while time.monotonic() - t0 < seconds:
            consumer.read_for(0.2)
            for k, n in nodes.items():
                rss[k] = max(rss[k], rss_mb(n.pid))
            now = time.monotonic() - t0
            if pause is not None and stop_at is None and now >= pause[0]:
                c.send_signal(signal.SIGSTOP)
                stop_at = now
            if stop_at is not None and cont_at is None and \
                    now >= stop_at + pause[1]:
                c.send_signal(signal.SIGCONT)
                cont_at = now
                consumer.pace_from_now()
            if late is None and time.monotonic() - t0 >= 0.6 * seconds:
                late = (time.monotonic(), sum(counts), consumer.n,
                        intake(b),
                        flow_counts(nodes) if pause is None else None)
        t1 = time.monotonic()
        sent_end, recv_end, intake_end = sum(counts), consumer.n, intake(b)
        counts_end = flow_counts(nodes) if pause is None else None
        while any(p.is_alive() for p in procs):
            consumer.read_for(0.1)
        for p in procs:
            p.join(5)
        sent = sum(counts)
        # The rest: everything buffered on the way, at the consumer's pace.
        drain_bound = time.monotonic() + ebtest.scaled(
            10 + 1.5 * sent / RATE)
        last_n, last_t = consumer.n, time.monotonic()
        while consumer.n < sent and time.monotonic() < drain_bound and \
                not consumer.errors:
            consumer.read_for(0.5)
            for k, n in nodes.items():
                rss[k] = max(rss[k], rss_mb(n.pid))
            if consumer.n != last_n:
                last_n, last_t = consumer.n, time.monotonic()
            elif lossy and time.monotonic() - last_t > ebtest.scaled(5):
                break  # what was lost does not come; the rest is here
        d = {k: drops(n) for k, n in nodes.items()}
        # The links stayed up (a cut link loses what it held).
        for k, peer in (("b", "c"), ("b", "a"), ("c", "a")):
            d[k]["link_reconnects_%s" % peer] = metric(
                nodes[k], "ebnode_link_ups_total", 'peer="%s"' % peer) - 1
        send_rate = (sent_end - late[1]) / (t1 - late[0])
        recv_rate = (recv_end - late[2]) / (t1 - late[0])
        intake_rate = (intake_end - late[3]) / (t1 - late[0])
        print("flow: to=%s seconds=%.0f clients=%d sent=%d received=%d "
              "buffered_at_end=%d" % (address, seconds, CLIENTS, sent,
                                      consumer.n, sent_end - recv_end))
        print("flow: last 40%%: b takes %.0f/s, consumer %.0f/s (ratio "
              "%.2f); clients send %.0f/s (into kernel buffers); whole "
              "flood: clients %.0f/s" % (
                  intake_rate, recv_rate, intake_rate / max(recv_rate, 1),
                  send_rate, sent_end / (t1 - t0)))
        if pause is None:
            # b's intake beyond c's link intake, plus what the consumer
            # took and what was lost (module docstring).
            throttled_rate = (
                intake_end - late[3] - (counts_end[0] - late[4][0]) +
                recv_end - late[2] + counts_end[1] - late[4][1]) / \
                (t1 - late[0])
            print("flow: last 40%%: c took %.0f/s off its links, %.0f/s "
                  "lost; b's intake beyond c's buffers %.0f/s: %.2f x "
                  "RATE (limit 2.5; bare intake %.2f x RATE)" % (
                      (counts_end[0] - late[4][0]) / (t1 - late[0]),
                      (counts_end[1] - late[4][1]) / (t1 - late[0]),
                      throttled_rate, throttled_rate / RATE,
                      intake_rate / RATE))
        print("flow: max RSS MB: %s" % ", ".join(
            "%s=%.1f" % kv for kv in sorted(rss.items())))
        print("flow: drops: %s" % json.dumps(d, sort_keys=True))
        if pause is not None:
            print("flow: c stopped at %.1f s for %.1f s; messages missing "
                  "at the consumer %d (in gaps %d)" % (
                      stop_at, cont_at - stop_at, sent - consumer.n,
                      consumer.missing))
        paused = {}
        for k, n in nodes.items():
            st, br = ebtest.admin_request(*n.admin, "GET", "/bridge")
            paused[k] = (br["stats"]["blocked_total"],
                         metric(n, "ebnode_ingress_pressed_total"))
            print("flow: %s bridge blocked_total=%d parked_total=%d "
                  "ingress pressed=%d" % (
                      k, br["stats"]["blocked_total"],
                      br["stats"]["parked_total"], paused[k][1]))
        self.assertEqual([], consumer.errors)
        cuts = sum(v[k] for v in d.values() for k in v
                   if k.startswith("link_reconnects"))
        if lossy:
            # Every message lost is counted by a node.
            lost = sent - consumer.n
            counted = sum(v["ingress"] + v["ingress_failed"] + v["bus"]
                          for v in d.values())
            print("flow: lost %d, counted as dropped or failed %d" % (
                lost, counted))
            self.assertLessEqual(lost, counted, "uncounted loss")
        if link_cut:
            # The freeze outlasted the link timeout; the links are back.
            self.assertGreater(cuts, 0, "links to c cut")
            for k in ("a", "b"):
                ebtest.wait_until(lambda: metric(
                    nodes[k], "ebnode_link_up", 'peer="c"') == 1, 20,
                    "%s's link to c up again" % k)
        else:
            self.assertEqual(0, cuts, "node links cut: %s" % d)
        if not lossy:
            self.assertEqual(sent, consumer.n, "every message received")
            for k, v in d.items():
                self.assertEqual(0, sum(v.values()),
                                 "drops on %s: %s" % (k, v))
        for k, v in rss.items():
            self.assertLessEqual(v, RSS_MAX_MB, "RSS of %s" % k)
        # b's bridge stopped reading: for plain sends on c's PRESSURE
        # frame; for ingress when its gateway's window and backlog filled.
        self.assertGreater(paused["b"][0], 0, "b's bridge blocked")
        if address == "external.ingress":
            self.assertGreater(paused["b"][1], 0, "b's ingress pressed")
        if pause is None:
            # b is throttled (see the module docstring for the 2.5 and
            # what is measured).
            self.assertLess(throttled_rate, 2.5 * RATE)
            self.assertGreater(recv_rate, 0.5 * RATE)


if __name__ == "__main__":
    unittest.main()
