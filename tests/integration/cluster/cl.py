"""Shared helpers of the cluster integration tests: node configs, starting
several ebnode processes, parsing the election log lines and checking
leadership intervals."""

import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import ebtest  # noqa: E402

SESSION_MS = int(os.environ.get("EB_IT_SESSION_MS", "2000"))

# "1795267163.019362 NOTICE election: elected: epoch=14 node=n2 member=..."
# Whole, well-formed lines only (as tests/chaos/chaos_checks.py): a
# client-chosen string logged inside another line cannot match.
_V = r"[^\s\"=\x00-\x1f\x7f]+"  # one field value
_ELECTED = re.compile(r"^(\d+\.\d{6}) NOTICE election: elected: "
                      r"epoch=(\d+) node=(%s) member=%s$" % (_V, _V))
_REVOKED = re.compile(r"^(\d+\.\d{6}) NOTICE election: revoked: "
                      r"reason=([a-z-]+) epoch=(\d+) node=(%s)$" % _V)
_CHECK = re.compile(r"^(\d+\.\d+) INFO election: check: trigger=(\S+)")


def env_int(name, default):
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


def config(root, idx, zk=None, session_ms=None, **sections):
    node_id = "n%02d" % idx
    cfg = ebtest.cluster_config(root, "addr-%s" % node_id, zk=zk)
    cfg = ebtest.merge(cfg, {
        "node": {"id": node_id},
        "zookeeper": {"session_timeout_ms": session_ms or SESSION_MS},
    })
    return ebtest.merge(cfg, sections)


def start_nodes(root, count, first=0, zk=None, session_ms=None):
    """Starts nodes one after the other (so sequence order = start order)
    and returns them."""
    nodes = []
    try:
        for i in range(first, first + count):
            nodes.append(ebtest.EbNode(
                config(root, i, zk=zk, session_ms=session_ms),
                name="n%02d" % i))
    except BaseException:
        stop_all(nodes)
        raise
    return nodes


def stop_all(nodes):
    for n in nodes:
        try:
            n.close()
        except Exception as e:  # keep stopping the others
            sys.stderr.write("stop %s: %s\n" % (n.name, e))


def events(node):
    """[(ts, 'elected'|'revoked', epoch, reason)] from a node's log."""
    out = []
    for ln in node.log_lines():
        m = _ELECTED.match(ln)
        if m:
            out.append((float(m.group(1)), "elected", int(m.group(2)), ""))
            continue
        m = _REVOKED.match(ln)
        if m:
            out.append((float(m.group(1)), "revoked", int(m.group(3)),
                        m.group(2)))
    return out


def checks(node, trigger=None):
    n = 0
    for ln in node.log_lines():
        m = _CHECK.match(ln)
        if m and (trigger is None or m.group(2) == trigger):
            n += 1
    return n


def leader_of(nodes):
    """The nodes currently leading by their own log (last event elected)."""
    out = []
    for n in nodes:
        if not n.running():
            continue
        ev = events(n)
        if ev and ev[-1][1] == "elected":
            out.append(n)
    return out


def wait_one_leader(nodes, timeout=10):
    def pred():
        lead = leader_of(nodes)
        return lead[0] if len(lead) == 1 else None
    return ebtest.wait_until(pred, timeout, "exactly one leader")


def intervals(nodes, ends=None):
    """Leadership intervals [(start, end, epoch, node name)] from the logs.
    An interval still open ends at ends[name] (the time the process was
    killed) or at +inf."""
    ends = ends or {}
    out = []
    for n in nodes:
        start = None
        epoch = None
        for ts, kind, ep, _ in events(n):
            if kind == "elected":
                start, epoch = ts, ep
            elif start is not None:
                out.append((start, ts, epoch, n.name))
                start = None
        if start is not None:
            out.append((start, ends.get(n.name, float("inf")), epoch,
                        n.name))
    out.sort()
    return out


def assert_no_overlap(testcase, nodes, ends=None):
    """Never two leaders at once; epochs increase from leader to leader."""
    iv = intervals(nodes, ends)
    for a, b in zip(iv, iv[1:]):
        testcase.assertLessEqual(
            a[1], b[0], "overlapping leadership: %r and %r" % (a, b))
        if a[3] != b[3]:
            testcase.assertLess(a[2], b[2], "epoch not increasing: %r %r"
                                % (a, b))
        else:
            testcase.assertLessEqual(a[2], b[2])
    return iv


def median_ms(values):
    return statistics.median(values) * 1000.0 if values else float("nan")


def report(name, text):
    """One line on stderr that the report quotes (ctest --verbose)."""
    sys.stderr.write("MEASURE %s: %s\n" % (name, text))
    sys.stderr.flush()


def admin(node, method, path):
    return ebtest.admin_request(node.admin_host, node.admin_port, method,
                                path)


def now():
    return time.time()
