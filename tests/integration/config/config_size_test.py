#!/usr/bin/env python3
"""The configuration center's bounds (issue 22) with ebctl against a real
ZooKeeper (no node needed: ebctl writes <root>/config itself).

1. History: 25 `ebctl config set`, each a process that exits when its
   write is answered: after every one the history holds at most 20
   versions (EB_CLUSTER_CONFIG_HISTORY), at the end exactly the last 20.
   The trim is in the write's own multi; before, it ran after the answer
   and an exiting ebctl never did it (56 entries were found).
2. Size: a valid 669 KB configuration is refused before anything is sent,
   with a message naming the limit (zookeeper.max_request_bytes and the
   largest configuration it allows) instead of "ZooKeeper connection lost"
   (config + history copy over 1 MB in one multi); nothing is written. A
   configuration of exactly the largest size is written and read back; one
   byte more is refused.
3. --max-request: a lower bound is honoured (a 40 KB configuration refused
   at 65536, the same one accepted at the default).
4. --zk is checked like zookeeper.connect: a usage error (exit 2) naming
   the problem, instead of a time-out or "init-failed" later.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

EBCTL = os.environ.get("EBCTL_BIN", "ebctl")
HISTORY = 20


def ctl(root, *args, timeout=20):
    argv = [EBCTL, "config", "--zk", ebtest.zk_connect_string(),
            "--root", root] + list(args)
    p = subprocess.run(argv, capture_output=True, text=True,
                       timeout=ebtest.scaled(timeout))
    return p.returncode, p.stdout, p.stderr


def config_text(size, seed="a"):
    """A valid dynamic configuration of exactly size bytes: outbound
    permits (each of the same length), padded with JSON whitespace."""
    head, tail = '{"bridge": {"outbound": [', "]}}"
    items = []
    used = len(head) + len(tail)
    n = 0
    while True:
        item = json.dumps({"address": "%s-%06d-%s" % (seed, n, "x" * 40)})
        extra = len(item) + (2 if items else 0)
        if used + extra > size:
            break
        items.append(item)
        used += extra
        n += 1
    text = head + ", ".join(items) + tail
    assert len(text) <= size
    return text[:-1] + " " * (size - len(text)) + "}"


class ConfigSize(unittest.TestCase):
    def setUp(self):
        self.root = ebtest.unique_root()
        self.tmp = tempfile.TemporaryDirectory(prefix="ebcfgsize-")
        self.n = 0

    def tearDown(self):
        self.tmp.cleanup()

    def file(self, text):
        self.n += 1
        path = os.path.join(self.tmp.name, "c%d.json" % self.n)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def history(self):
        code, out, err = ctl(self.root, "--json", "history")
        self.assertEqual(code, 0, err)
        return [v["version"] for v in json.loads(out)]

    def version(self):
        code, out, err = ctl(self.root, "--json", "get")
        self.assertEqual(code, 0, err)
        return json.loads(out)

    def test_history_trimmed_by_each_write(self):
        counts = []
        for i in range(25):
            code, _, err = ctl(self.root, "set",
                               self.file(json.dumps(
                                   {"ingress": {"hold_ms": 1000 + i}})))
            self.assertEqual(code, 0, err)
            counts.append(len(self.history()))
        print("history entries after each write: %s" % counts)
        self.assertTrue(all(c <= HISTORY for c in counts), counts)
        versions = self.history()
        self.assertEqual(versions, list(range(25 - HISTORY + 1, 26)))
        self.assertEqual(self.version()["config"]["ingress"]["hold_ms"],
                         1024)

    def test_big_config_refused_clearly(self):
        big = config_text(669000)
        code, out, err = ctl(self.root, "set", self.file(big))
        print("669 KB config: exit %d: %s" % (code, err.strip()))
        self.assertEqual(code, 1, (out, err))
        self.assertNotIn("connection lost", err)
        self.assertIn("669000 bytes", err)
        self.assertIn("zookeeper.max_request_bytes = 1000000", err)
        self.assertIn("nothing written", err)
        m = re.search(r"more than the (\d+) bytes", err)
        self.assertIsNotNone(m, err)
        limit = int(m.group(1))
        self.assertGreater(limit, 499000)
        self.assertLess(limit, 500000)
        self.assertEqual(self.version()["version"], 0)
        # The largest configuration: written and read back whole.
        text = config_text(limit, "b")
        code, out, err = ctl(self.root, "--json", "set", self.file(text))
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["version"], 1)
        got = self.version()
        self.assertEqual(got["version"], 1)
        self.assertEqual(got["config"], json.loads(text))
        self.assertEqual(self.history(), [1])
        # One byte more: refused, version 1 stays.
        code, _, err = ctl(self.root, "set",
                           self.file(config_text(limit + 1, "c")))
        self.assertEqual(code, 1, err)
        self.assertIn("more than the %d bytes" % limit, err)
        self.assertEqual(self.version()["version"], 1)

    def test_max_request_option(self):
        text = config_text(40000)
        code, _, err = ctl(self.root, "--max-request", "65536", "set",
                           self.file(text))
        self.assertEqual(code, 1, err)
        self.assertIn("zookeeper.max_request_bytes = 65536", err)
        self.assertEqual(self.version()["version"], 0)
        code, _, err = ctl(self.root, "--max-request", "1000", "set",
                           self.file(text))
        self.assertEqual(code, 2, err)  # below the key's floor: usage
        code, _, err = ctl(self.root, "set", self.file(text))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.version()["version"], 1)

    def test_bad_zk_is_usage(self):
        # --zk is held to zookeeper.connect's rules: a list the client
        # refuses is a usage error at once, not a time-out later.
        for value, why in ((",", "empty entry"),
                           ("127.0.0.1:0", "port not in 1..65535"),
                           ("[::1]:2181", "write an IPv6 address bare")):
            p = subprocess.run([EBCTL, "config", "--timeout", "2000",
                                "--zk", value, "get"],
                               capture_output=True, text=True,
                               timeout=ebtest.scaled(20))
            self.assertEqual(p.returncode, 2, (value, p.stderr))
            self.assertIn("--zk: ", p.stderr)
            self.assertIn(why, p.stderr)


if __name__ == "__main__":
    unittest.main()
