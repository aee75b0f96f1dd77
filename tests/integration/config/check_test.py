#!/usr/bin/env python3
"""`ebnode --check` and the loader on zookeeper.connect and
election.heartbeat_ms (issue 22), with the real binary (no ZooKeeper).

1. Every value the issue found passing --check and then failing at start
   (exit 1) or never reaching READY is refused by --check with exit 2 and
   a file:line:col message naming zookeeper.connect and the entry.
2. The same file makes a start fail at once with that message (before it
   waited for a session it could never get: 127.0.0.1:99999 never became
   READY).
3. election.heartbeat_ms below the 100 ms floor (1 meant 1 000 ZooKeeper
   writes/s) is refused; 0 and 100 pass.
4. Valid lists still pass, IPv6 written bare as the C client takes it.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

CLEAN_ENV = {k: None for k in os.environ
             if k.startswith("EBNODE_") and k != "EBNODE_BIN"}
EXIT_CONFIG = 2

BAD = {
    ",": "empty entry",
    ",,,": "empty entry",
    " ": "white space is not allowed",
    ":": "port not in 1..65535",
    "a": "expected host:port",
    "127.0.0.1:0": "port not in 1..65535",
    "[::1]:2181": "write an IPv6 address bare",
    "127.0.0.1:99999": "port not in 1..65535",
}
GOOD = ["127.0.0.1:2181", "::1:2181", "zk1:2181,zk2.example.com:2181/app"]


def config_text(connect, heartbeat=None):
    doc = {"zookeeper": {"connect": connect}}
    if heartbeat is not None:
        doc["election"] = {"heartbeat_ms": heartbeat}
    # One key per line: the message's line:col is predictable.
    return json.dumps(doc, indent=2) + "\n"


def check(text):
    return ebtest.run_ebnode(["--check"], config=text, env=CLEAN_ENV)


class Check(unittest.TestCase):
    def test_bad_connect_refused(self):
        passed = []
        for value, why in BAD.items():
            r = check(config_text(value))
            if r.code == 0:
                passed.append(value)
                continue
            self.assertEqual(r.code, EXIT_CONFIG, (value, r))
            self.assertIn("ebnode.json:3:16: zookeeper.connect: ",
                          r.stderr, (value, r))
            self.assertIn(why, r.stderr, (value, r))
        self.assertEqual(passed, [], "passed --check: %r" % passed)

    def test_start_fails_at_once(self):
        code, log = ebtest.start_expect_failure(
            config_text("127.0.0.1:99999"), name="badport", timeout=10,
            env=CLEAN_ENV)
        self.assertEqual(code, EXIT_CONFIG, log)
        self.assertIn("zookeeper.connect: \"127.0.0.1:99999\": port not "
                      "in 1..65535", log)

    def test_heartbeat_floor(self):
        r = check(config_text("127.0.0.1:2181", heartbeat=1))
        self.assertEqual(r.code, EXIT_CONFIG, r)
        self.assertIn("election.heartbeat_ms: 0 (session timeout / 4) or "
                      "at least 100 ms", r.stderr)
        for hb in (0, 100):
            r = check(config_text("127.0.0.1:2181", heartbeat=hb))
            self.assertEqual(r.code, 0, (hb, r))

    def test_good_connect_passes(self):
        for value in GOOD:
            r = check(config_text(value))
            self.assertEqual(r.code, 0, (value, r))


if __name__ == "__main__":
    unittest.main()
