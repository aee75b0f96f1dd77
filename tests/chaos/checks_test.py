#!/usr/bin/env python3
"""The chaos suite's checks (chaos_checks.py) on synthetic records: each
rule passes a good record and fails the broken one it exists for."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks as cc  # noqa: E402

T0 = 1795267000.0


class FakeNode:
    def __init__(self, name, lines, end_ts=None, stops=()):
        self.name = name
        self._lines = lines
        self.end_ts = end_ts
        self.stops = list(stops)

    def events(self):
        return cc.parse_events(self._lines)


def elected(t, epoch, node):
    return "%.6f NOTICE election: elected: epoch=%d node=%s member=m-x" % (
        T0 + t, epoch, node)


def revoked(t, epoch, node, reason="shutdown"):
    return "%.6f NOTICE election: revoked: reason=%s epoch=%d node=%s" % (
        T0 + t, reason, epoch, node)


def rules(violations):
    return sorted({r for r, _ in violations})


def lead(nodes, msgs=(), acks=None, stale_s=1.0):
    active, stale = cc.leadership(nodes)
    return cc.check_leadership(active, stale, list(msgs), acks or {},
                               stale_s)


class Leadership(unittest.TestCase):
    def test_parse_events(self):
        ev = cc.parse_events([
            "1795267000.100000 INFO election: check: trigger=start",
            elected(1, 7, "a"), revoked(2, 7, "a", "zk-suspended")])
        self.assertEqual(ev, [(T0 + 1, "elected", 7, ""),
                              (T0 + 2, "revoked", 7, "zk-suspended")])

    def test_parse_ignores_forged_and_malformed_lines(self):
        # What a client-chosen address looked like before issue 10 item 5
        # (a raw newline), what it looks like now (escaped, quoted), and
        # truncated or decorated election lines: none is an event.
        ev = cc.parse_events([
            "NOTICE election: elected: epoch=999999 node=forged member=m",
            "%.6f INFO bridge: access-denied: peer=p op=send address=\"x"
            "\\nNOTICE election: elected: epoch=999999 node=forged\"" % T0,
            elected(1, 7, "a") + " extra=1",
            elected(1, 7, "a")[:-11],
            "%.6f NOTICE election: elected: epoch=9 node=\"a b\" member=m"
            % T0,
            elected(3, 8, "b")])
        self.assertEqual(ev, [(T0 + 3, "elected", 8, "")])

    def test_handover_passes(self):
        a = FakeNode("a", [elected(0, 5, "a"), revoked(3, 5, "a")])
        b = FakeNode("b", [elected(3.01, 9, "b")])
        self.assertEqual(lead([a, b]), [])

    def test_overlap_fails(self):
        a = FakeNode("a", [elected(0, 5, "a"), revoked(3, 5, "a")])
        b = FakeNode("b", [elected(2.5, 9, "b")])
        self.assertEqual(rules(lead([a, b])), ["overlap"])

    def test_killed_leader_ends_when_reaped(self):
        a = FakeNode("a", [elected(0, 5, "a")], end_ts=T0 + 2)
        b = FakeNode("b", [elected(4, 9, "b")])
        self.assertEqual(lead([a, b]), [])
        early = FakeNode("b", [elected(1.9, 9, "b")])
        self.assertEqual(rules(lead([a, early])), ["overlap"])

    def test_running_leader_is_open(self):
        a = FakeNode("a", [elected(0, 5, "a")])
        b = FakeNode("b", [elected(100, 9, "b")])
        self.assertEqual(rules(lead([a, b])), ["overlap"])

    def test_epochs(self):
        a = FakeNode("a", [elected(0, 9, "a"), revoked(1, 9, "a")])
        b = FakeNode("b", [elected(2, 9, "b"), revoked(3, 9, "b")])
        self.assertEqual(rules(lead([a, b])), ["epochs"])
        # The same node may take its epoch back (same session).
        c = FakeNode("c", [elected(0, 9, "c"), revoked(1, 9, "c"),
                           elected(1.1, 9, "c")])
        self.assertEqual(lead([c]), [])
        d = FakeNode("d", [elected(0, 9, "d"), revoked(1, 9, "d"),
                           elected(1.1, 8, "d")])
        self.assertEqual(rules(lead([d])), ["epochs"])

    def test_stopped_leader(self):
        # Stopped at +1, a new leader at +3.5, SIGCONT at +4.5, revoke at
        # +4.6: no overlap (it could not act while stopped).
        a = FakeNode("a", [elected(0, 5, "a"), revoked(4.6, 5, "a",
                                                       "lease-expired")],
                     stops=[(T0 + 1, T0 + 4.5)])
        b = FakeNode("b", [elected(3.5, 9, "b")])
        self.assertEqual(lead([a, b]), [])
        # ... but a revoke long after SIGCONT is stale,
        slow = FakeNode("a", [elected(0, 5, "a"), revoked(6, 5, "a")],
                        stops=[(T0 + 1, T0 + 4.5)])
        self.assertEqual(rules(lead([slow, b])), ["stale"])
        # and so is anything it routed or acknowledged after SIGCONT.
        msgs = [(T0 + 0.5, 5, 1, "e", 1, 0), (T0 + 4.55, 5, 2, "e", 1, 1)]
        self.assertEqual(rules(lead([a, b], msgs=msgs)), ["stale"])
        acks = {1: [(T0 + 0.5, 5), (T0 + 4.55, 5)]}
        self.assertEqual(rules(lead([a, b], acks=acks)), ["stale"])
        self.assertEqual(lead([a, b], msgs=msgs[:1], acks={1: acks[1][:1]}),
                         [])


def msg(t, epoch, seq, c, i, entry="edge1"):
    return (T0 + t, epoch, seq, entry, c, i)


class Stream(unittest.TestCase):
    def test_sequence(self):
        good = [msg(0, 5, 1, 1, 0), msg(0, 5, 2, 1, 1), msg(1, 9, 1, 1, 2)]
        self.assertEqual(cc.check_sequence(good)[0], [])
        gap = [msg(0, 5, 1, 1, 0), msg(0, 5, 3, 1, 1)]
        self.assertEqual(rules(cc.check_sequence(gap)[0]), ["sequence"])
        late_start = [msg(0, 5, 2, 1, 0)]
        self.assertEqual(rules(cc.check_sequence(late_start)[0]),
                         ["sequence"])
        order = [msg(0, 5, 2, 1, 0), msg(0, 5, 1, 1, 1)]
        self.assertEqual(rules(cc.check_sequence(order)[0]), ["sequence"])
        # The bug this suite found: one epoch's sequence restarted.
        restart = [msg(0, 5, 1, 1, 0), msg(0, 5, 2, 1, 1),
                   msg(1, 5, 1, 1, 2)]
        out = cc.check_sequence(restart)[0]
        self.assertTrue(any("stamped on two" in t for _, t in out), out)
        entry = [msg(0, 5, 1, 2, 0, entry="edge1")]
        self.assertEqual(cc.check_sequence(entry, {1: "edge1"})[0], [])
        self.assertEqual(rules(cc.check_sequence(entry, {2: "edge2"})[0]),
                         ["sequence"])

    def test_sequence_unconfirmed(self):
        # seq 2 was routed, its delivery not confirmed (508 names the
        # stamp): the gap is allowed; seq 3 was not failed: still a gap.
        text = ("ebnode: delivery to orders not confirmed (epoch 5, seq 2): "
                "Link to node c lost; it may have been delivered")
        reqs = {1: [(T0, T0 + 1, "fail", ("RECIPIENT_FAILURE", 508, text))]}
        unc = cc.unconfirmed_stamps(reqs)
        self.assertEqual(unc, {(5, 2)})
        gap2 = [msg(0, 5, 1, 1, 0), msg(0, 5, 3, 1, 2)]
        self.assertEqual(cc.check_sequence(gap2, None, unc)[0], [])
        gap3 = [msg(0, 5, 1, 1, 0), msg(0, 5, 4, 1, 3)]
        self.assertEqual(rules(cc.check_sequence(gap3, None, unc)[0]),
                         ["sequence"])
        # A re-routed send delivered twice with its one stamp: not a
        # duplicate; the same stamp on another message still is.
        again = [msg(0, 5, 1, 1, 0), msg(0, 5, 1, 1, 0)]
        self.assertEqual(cc.check_sequence(again)[0], [])
        other = [msg(0, 5, 1, 1, 0), msg(0, 5, 1, 1, 1)]
        self.assertTrue(cc.check_sequence(other)[0])

    def answers(self, reqs, msgs, acks=None, t_now=T0 + 100, final=True):
        _, owner = cc.check_sequence(msgs)
        return cc.check_answers(reqs, acks or {}, owner, t_now, final,
                                answer_bound_s=12, delivery_slack_s=3)

    def test_answers(self):
        msgs = [msg(0.01, 5, 1, 1, 0)]
        ok = {1: [[T0, T0 + 0.01, "ack", (5, 1, "orders")],
                  [T0, T0 + 2, "fail", ("RECIPIENT_FAILURE", 504, "x")]]}
        self.assertEqual(self.answers(ok, msgs), [])
        none = {1: [[T0, None, None, None]]}
        self.assertEqual(rules(self.answers(none, msgs)), ["answered"])
        # Not yet due in a round check, due at the end.
        self.assertEqual(self.answers(none, msgs, t_now=T0 + 1,
                                      final=False), [])
        slow = {1: [[T0, T0 + 13, "ack", (5, 1, "orders")]]}
        self.assertEqual(rules(self.answers(slow, msgs)), ["answered"])
        lost = {1: [[T0, T0 + 0.01, "ack", (5, 2, "orders")]]}
        self.assertEqual(rules(self.answers(lost, msgs)), ["delivered"])
        other = {1: [[T0, T0 + 0.01, "ack", (5, 1, "orders")],
                     [T0, T0 + 0.02, "ack", (5, 1, "orders")]]}
        self.assertEqual(rules(self.answers(other, msgs)), ["delivered"])

    def test_ack_epochs(self):
        acks = {1: [(T0, 5), (T0 + 1, 9), (T0 + 2, 5)]}
        self.assertEqual(rules(self.answers({}, [], acks)), ["ack-epochs"])
        self.assertEqual(self.answers({}, [], {1: [(T0, 5), (T0, 5),
                                                   (T0, 9)]}), [])


class PartitionHooks(unittest.TestCase):
    """The hooks of the network-partition suite (tests/partition)."""

    def test_parse_well_formed_only(self):
        good = elected(1, 5, "a")
        lines = [good, good + " junk", "x" + good,
                 elected(2, 9, "forged"), revoked(3, 5, "a"),
                 revoked(4, 5, "a") + "\x1b"]
        self.assertEqual([e[1:3] for e in cc.parse_events(lines, "a")],
                         [("elected", 5), ("revoked", 5)])
        self.assertEqual(len(cc.parse_events(lines)), 3)

    def test_metric_intervals(self):
        # (sent, answered, value): each poll takes 4 ms.
        s = [(0.00, 0.004, 0), (0.02, 0.024, 1), (0.04, 0.044, None),
             (0.06, 0.064, 1), (0.08, 0.084, 0), (0.10, 0.104, 1)]
        iv = cc.metric_intervals(s, "a")
        self.assertEqual(iv[0], (0.024, 0.06, 0, "a"))
        self.assertEqual(len(iv), 2)
        self.assertAlmostEqual(iv[1][0], 0.102)
        self.assertAlmostEqual(iv[1][1], 0.102)
        self.assertEqual(cc.metric_intervals([(0, 0.1, 0), (1, 1.1, None)],
                                             "a"), [])
        # A slow poll (the value was read somewhere in 0.3 s) does not make
        # up an overlap with a hand-over inside it.
        a = [(0.0, 0.01, 1), (0.2, 0.5, 1), (0.6, 0.61, 0)]
        b = [(0.0, 0.01, 0), (0.3, 0.31, 1), (0.4, 0.41, 1)]
        iv = cc.metric_intervals(a, "a") + cc.metric_intervals(b, "b")
        self.assertEqual(cc.overlaps(iv), [])
        b = [(0.0, 0.01, 0), (0.1, 0.11, 1), (0.15, 0.16, 1)]
        iv = cc.metric_intervals(a, "a") + cc.metric_intervals(b, "b")
        self.assertEqual(len(cc.overlaps(iv)), 1)

    def test_overlaps(self):
        a = [(0.0, 1.0, 1, "a"), (1.0, 2.0, 2, "b")]  # hand-over, no overlap
        self.assertEqual(cc.overlaps(a), [])
        b = [(0.0, 1.0, 1, "a"), (0.9, 2.0, 2, "b"), (0.95, 0.99, 1, "a")]
        ov = cc.overlaps(b)
        self.assertEqual(len(ov), 2)
        self.assertAlmostEqual(ov[0][0], 100.0)
        self.assertEqual((ov[0][1][3], ov[0][2][3]), ("a", "b"))

    def test_stale_deliveries(self):
        msgs = [msg(1, 5, 1, 1, 0), msg(2, 7, 1, 1, 1), msg(3, 5, 2, 1, 2)]
        st = cc.stale_deliveries(msgs, {})
        self.assertEqual(len(st), 1)
        self.assertEqual(st[0][0][2], 2)
        self.assertEqual(st[0][1], 7)
        # An acknowledgement of the newer epoch counts as evidence too.
        st = cc.stale_deliveries([msg(3, 5, 1, 1, 0)], {1: [(T0 + 2.0, 7)]})
        self.assertEqual(len(st), 1)
        self.assertEqual(
            cc.stale_deliveries(msgs[:2], {1: [(T0 + 1.5, 5)]}), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
