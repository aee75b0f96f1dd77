"""The checks of the chaos suite (tests/chaos/chaos.py) as pure functions
over recorded data, so that checks_test.py can show that each of them
fails on a broken record. Every check returns a list of (rule, text).

Data shapes:
  events   [(ts, "elected"|"revoked", epoch, reason)] from one node's log
  node     an object with .name, .events() (as above), .end_ts (reaped at,
           or None), .stops [(stopped_ts, cont_ts)]
  msgs     routed messages seen by the consumer, in arrival order:
           (recv_ts, epoch, seq, entry, client, i)
  reqs     {client: [(sent_ts, answer_ts|None, "ack"|"fail"|None, info)]}
           info: (epoch, seq, to) for "ack", (type, code, text) for "fail"
  acks     {client: [(answer_ts, epoch)]} in arrival order
"""

import re

# Only whole, well-formed lines count: the timestamp the node's sink wrote,
# then exactly the fields election.c logs, each value without spaces,
# quotes, '=' or control characters. A client-chosen string logged inside
# another line (escaped and quoted since issue 10) cannot match.
_V = r"[^\s\"=\x00-\x1f\x7f]+"  # one field value
_ELECTED = re.compile(r"^(\d+\.\d{6}) NOTICE election: elected: "
                      r"epoch=(\d+) node=(%s) member=(%s)$" % (_V, _V))
_REVOKED = re.compile(r"^(\d+\.\d{6}) NOTICE election: revoked: "
                      r"reason=([a-z-]+) epoch=(\d+) node=(%s)$" % _V)

INF = float("inf")


def parse_events(lines, node=None):
    """Election events from a node's stderr lines (wall-clock prefix).
    node: when given, only lines naming that node count (a node logs its
    own election events; a line naming another is not one of them)."""
    out = []
    for ln in lines:
        m = _ELECTED.match(ln)
        if m:
            if node is None or m.group(3) == node:
                out.append((float(m.group(1)), "elected", int(m.group(2)),
                            ""))
            continue
        m = _REVOKED.match(ln)
        if m and (node is None or m.group(4) == node):
            out.append((float(m.group(1)), "revoked", int(m.group(3)),
                        m.group(2)))
    return out


def leadership(nodes):
    """Active leadership intervals [(start, end, epoch, name)], sorted, and
    stale windows [(cont_ts, revoked_ts, epoch, name)].

    An interval runs from "elected" to the next "revoked". One still open
    ends when the process was reaped (end_ts; SIGKILL) or is open (inf).
    A leader SIGSTOPped during its interval can act only until it was seen
    stopped: the active interval ends there, and the time from SIGCONT to
    its "revoked" line is a stale window (it must not act in it)."""
    active, stale = [], []
    for n in nodes:
        start = epoch = None
        spans = []
        for ts, kind, ep, _ in n.events():
            if kind == "elected":
                if start is not None:  # elected twice without a revoke
                    spans.append((start, ts, epoch))
                start, epoch = ts, ep
            elif start is not None:
                spans.append((start, ts, epoch))
                start = None
        if start is not None:
            spans.append((start, n.end_ts if n.end_ts else INF, epoch))
        for s, e, ep in spans:
            stops = [(st, ct) for st, ct in n.stops if s < st < e]
            if stops:
                active.append((s, stops[0][0], ep, n.name))
                stale.append((stops[-1][1], e, ep, n.name))
            else:
                active.append((s, e, ep, n.name))
    active.sort()
    return active, stale


def check_leadership(active, stale, msgs, acks, stale_revoke_s):
    """overlap, epochs and stale (see chaos.py)."""
    out = []
    for a, b in zip(active, active[1:]):
        if a[3] != b[3] and not a[2] < b[2]:
            out.append(("epochs", "epoch did not increase from leader to "
                        "leader: %r -> %r" % (a, b)))
        if a[3] == b[3] and b[2] < a[2]:
            out.append(("epochs", "epoch decreased on one node: %r -> %r"
                        % (a, b)))
    latest = None
    for iv in active:
        if latest is not None and iv[0] < latest[1]:
            out.append(("overlap", "leadership %r starts before %r ended "
                        "(by %.1f ms)" % (iv, latest,
                                          (latest[1] - iv[0]) * 1000)))
        if latest is None or iv[1] > latest[1]:
            latest = iv
    for cont, rev, ep, name in stale:
        if rev - cont > stale_revoke_s:
            out.append(("stale", "%s (epoch %d) revoked %.0f ms after "
                        "SIGCONT" % (name, ep, (rev - cont) * 1000)))
        late = [m for m in msgs if m[1] == ep and m[0] > cont]
        if late:
            out.append(("stale", "%d message(s) of epoch %d (%s) delivered "
                        "after its SIGCONT, first %r" % (len(late), ep, name,
                                                        late[0])))
        late_acks = [(c, t) for c, lst in sorted(acks.items())
                     for t, e in lst if e == ep and t > cont]
        if late_acks:
            out.append(("stale", "%d ack(s) of epoch %d (%s) after its "
                        "SIGCONT, first %r" % (len(late_acks), ep, name,
                                              late_acks[0])))
    return out


UNCONFIRMED_RE = re.compile(r"not confirmed \(epoch (\d+), seq (\d+)\)")


def unconfirmed_stamps(reqs):
    """The stamps (epoch, seq) of routed messages whose delivery the leader
    could not confirm: answered with the ingress failure 508, whose text
    names the stamp. Such a sequence number may be missing among the
    delivered ones (the message may also have arrived)."""
    out = set()
    for lst in reqs.values():
        for _sent, _ans, kind, info in lst:
            if kind == "fail" and info and isinstance(info[-1], str):
                m = UNCONFIRMED_RE.search(info[-1])
                if m:
                    out.add((int(m.group(1)), int(m.group(2))))
    return out


def check_sequence(msgs, entries=None, unconfirmed=None):
    """sequence (and the entry stamp): per epoch the delivered sequence
    numbers are 1..n, no gap, no duplicate, in arrival order; one stamp
    never names two messages. entries: {client: the node it enters at}.
    unconfirmed: stamps answered as not confirmed (unconfirmed_stamps):
    they may be missing. A stamp delivered twice on the same message is a
    re-route after a failed receipt (at-least-once), not a duplicate."""
    out = []
    unconfirmed = unconfirmed or set()
    seen = set()
    by_epoch = {}
    owner = {}
    for t, ep, seq, entry, c, i in msgs:
        if (ep, seq, c, i) in seen:
            continue  # the same message routed again with its stamp
        seen.add((ep, seq, c, i))
        by_epoch.setdefault(ep, []).append(seq)
        if (ep, seq) in owner and owner[(ep, seq)] != (c, i):
            out.append(("sequence", "(epoch %d, seq %d) stamped on two "
                        "messages: c%s.%s and c%s.%s" % (
                            ep, seq, owner[(ep, seq)][0],
                            owner[(ep, seq)][1], c, i)))
        owner.setdefault((ep, seq), (c, i))
        if entries and c in entries and entry != entries[c]:
            out.append(("sequence", "c%s.%s stamped with entry %r, sent "
                        "through %r" % (c, i, entry, entries[c])))
    for ep, seqs in sorted(by_epoch.items()):
        s = sorted(seqs)
        missing = sorted(set(range(1, s[-1] + 1)) - set(s) -
                         {q for e, q in unconfirmed if e == ep})
        if missing or len(s) != len(set(s)):
            out.append(("sequence", "epoch %d: delivered seqs %d..%d, %d "
                        "missing (first %s), %d duplicate(s)" % (
                            ep, s[0], s[-1], len(missing), missing[:5],
                            len(s) - len(set(s)))))
        elif seqs != s:
            out.append(("sequence", "epoch %d delivered out of order" % ep))
    return out, owner


def check_answers(reqs, acks, owner, t_now, final, answer_bound_s,
                  delivery_slack_s):
    """answered, delivered and ack-epochs. owner: {(epoch, seq): (client,
    i)} of the delivered messages (from check_sequence)."""
    out = []
    for c, lst in sorted(reqs.items()):
        for i, (sent, ans, kind, info) in enumerate(lst):
            if ans is None:
                if final or t_now - sent > answer_bound_s:
                    out.append(("answered", "c%s.%d unanswered after %.1f s"
                                % (c, i, t_now - sent)))
                continue
            if ans - sent > answer_bound_s:
                out.append(("answered", "c%s.%d answered after %.1f s"
                            % (c, i, ans - sent)))
            if kind != "ack":
                continue
            ep, seq = info[0], info[1]
            got = owner.get((ep, seq))
            if got is None:
                if final or t_now - ans > delivery_slack_s:
                    out.append(("delivered", "c%s.%d acknowledged as (epoch "
                                "%d, seq %d) but not delivered"
                                % (c, i, ep, seq)))
            elif got != (c, i):
                out.append(("delivered", "c%s.%d acknowledged as (epoch %d, "
                            "seq %d) but that stamp was delivered on c%s.%s"
                            % (c, i, ep, seq, got[0], got[1])))
    for c, lst in sorted(acks.items()):
        last = 0
        for t, ep in lst:
            if ep < last:
                out.append(("ack-epochs", "client %s: ack of epoch %d after "
                            "one of epoch %d" % (c, ep, last)))
            last = max(last, ep)
    return out


# ---------------------------------------------------------------------------
# Hooks for the network-partition suite (tests/partition/partition.py).

def metric_intervals(samples, name):
    """Leadership intervals [(start, end, epoch, name)] of one node from
    its polled ebnode_leader gauge: samples [(sent_ts, answered_ts,
    value)] in time order, value 1, 0 or None (no answer). An interval is
    a run of 1-samples not interrupted by a 0-sample. The gauge was read at
    some instant between a poll's send and its answer, so the node surely
    led from the first 1-sample's answer to the last 1-sample's send: that
    is the interval (no extrapolation, and a slow poll cannot make up an
    overlap). A run whose span is empty (one sample) is a point at the
    midpoint of its single poll. A None sample does not end a run: an
    unanswered poll is not evidence that the node stopped. The epoch field
    is 0 (the gauge does not carry one)."""
    out = []
    run = []

    def close():
        if not run:
            return
        start, end = run[0][1], run[-1][0]
        if end < start:
            start = end = (run[0][0] + run[-1][1]) / 2.0
        out.append((start, end, 0, name))

    for sent, answered, v in samples:
        if v == 1:
            run.append((sent, answered))
        elif v == 0:
            close()
            run = []
    close()
    return out


def overlaps(intervals):
    """Pairs of leadership intervals of different nodes that share time:
    [(ms, a, b)], longest first. intervals as from leadership() or
    metric_intervals()."""
    out = []
    iv = sorted(intervals)
    for k, a in enumerate(iv):
        for b in iv[k + 1:]:
            if b[0] >= a[1]:
                break
            if a[3] != b[3]:
                out.append(((min(a[1], b[1]) - b[0]) * 1000.0, a, b))
    out.sort(key=lambda x: -x[0])
    return out


def stale_deliveries(msgs, acks):
    """Messages stamped by a superseded epoch that reached the consumer
    after the first evidence that a newer epoch routed (the first delivery
    or the first acknowledgement of a higher epoch): [(msg, newer_epoch,
    newer_first_ts)]. msgs and acks as in the module docstring."""
    first = {}
    for m in msgs:
        first[m[1]] = min(first.get(m[1], INF), m[0])
    for lst in acks.values():
        for t, ep in lst:
            first[ep] = min(first.get(ep, INF), t)
    out = []
    for m in msgs:
        newer = [(t, ep) for ep, t in first.items() if ep > m[1] and
                 t < m[0]]
        if newer:
            t, ep = min(newer)
            out.append((m, ep, t))
    return out
