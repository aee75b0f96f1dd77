"""Process-level tests of the ebnode binary: command line, configuration
checking (exact messages and exit codes), the READY line and signals.

Run as: node_test.py [-v] [cli|check|lifecycle ...] (all when none given).
Needs EBNODE_BIN; EB_SOURCE_DIR (the repository root) is optional.
"""
import json
import os
import re
import signal
import socket
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import ebtest  # noqa: E402

SOURCE_DIR = os.environ.get("EB_SOURCE_DIR") or os.path.abspath(
    os.path.join(HERE, "..", "..", ".."))

BAD_PORT = "{\n  \"bridge\": {\n    \"port\": 70000\n  }\n}\n"
BAD_PORT_MSG = ("ebnode.json:3:13: bridge.port: expected an integer in "
                "0..65535, got 70000\n")
# No EBNODE_* override from the caller's environment may leak in.
CLEAN_ENV = {k: None for k in os.environ
             if k.startswith("EBNODE_") and k != "EBNODE_BIN"}


def run(args, config=None, env=None, **kw):
    e = dict(CLEAN_ENV)
    e.update(env or {})
    return ebtest.run_ebnode(args, config=config, env=e, **kw)


def source_version():
    with open(os.path.join(SOURCE_DIR, "include", "ebnode", "version.h"),
              encoding="utf-8") as f:
        m = re.search(r'#define EB_VERSION_STRING\s+"([^"]+)"', f.read())
    return m.group(1)


class CliTest(unittest.TestCase):
    def test_version(self):
        r = run(["--version"])
        self.assertEqual(r.code, 0, r)
        self.assertRegex(r.stdout,
                         r"^ebnode \d+\.\d+\.\d+ \(link protocol \d+, "
                         r"speaks \d+\.\.\d+\)\n$")
        self.assertIn("ebnode %s " % source_version(), r.stdout)
        self.assertEqual(r.stderr, "")
        self.assertEqual(run(["-V"]).stdout, r.stdout)

    def test_help(self):
        r = run(["--help"])
        self.assertEqual(r.code, 0, r)
        self.assertTrue(r.stdout.startswith("Usage: ebnode [options]\n"))
        for opt in ("--config", "--set", "--check", "--print-config",
                    "--version", "EBNODE_BRIDGE_PORT"):
            self.assertIn(opt, r.stdout)
        self.assertEqual(r.stderr, "")
        self.assertEqual(run(["-h"]).stdout, r.stdout)

    def test_unknown_argument(self):
        r = run(["--bogus"])
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.stderr,
                         "ebnode: unknown argument: --bogus (see --help)\n")
        self.assertEqual(r.stdout, "")

    def test_missing_value(self):
        r = run(["--check", "--set"])
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.stderr,
                         "ebnode: option --set needs a value (see --help)\n")


class CheckTest(unittest.TestCase):
    def test_example_configs_pass(self):
        for name in ("ebnode.example.jsonc", "ebnode.production.jsonc"):
            path = os.path.join(SOURCE_DIR, "etc", name)
            r = run(["--check", "-c", path])
            self.assertEqual((r.code, r.stdout, r.stderr),
                             (0, "config ok\n", ""), name)

    def test_defaults_pass(self):
        r = run(["--check"])
        self.assertEqual((r.code, r.stdout), (0, "config ok\n"), r)

    def test_bad_value_in_file(self):
        r = run(["--check"], config=BAD_PORT)
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.stderr, BAD_PORT_MSG)
        self.assertEqual(r.stdout, "")

    def test_unknown_key_after_comments(self):
        text = ("// ebnode\n{\n  /* admin\n     section */\n"
                "  \"admin\": { \"tokn\": \"x\" } // typo\n}\n")
        r = run(["--check"], config=text)
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.stderr,
                         "ebnode.json:5:14: admin.tokn: unknown key\n")

    def test_environment_error(self):
        r = run(["--check"], env={"EBNODE_BRIDGE_PORT": "x"})
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.stderr,
                         "environment EBNODE_BRIDGE_PORT: bridge.port: "
                         "expected an integer in 0..65535, got \"x\"\n")

    def test_flag_error(self):
        r = run(["--check", "--set", "bridge.port=70000"])
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.stderr, "--set bridge.port: expected an integer "
                         "in 0..65535, got 70000\n")

    def test_missing_file(self):
        r = run(["--check", "-c", "nope.json"])
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.stderr,
                         "nope.json: cannot open: No such file or directory\n")

    def test_config_from_environment(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(BAD_PORT)
            r = run(["--check"], env={"EBNODE_CONFIG": path})
            self.assertEqual(r.code, 2, r)
            self.assertEqual(r.stderr, path + BAD_PORT_MSG[len("ebnode.json"):])
            # -c wins over EBNODE_CONFIG.
            r = run(["--check", "-c", os.devnull + "x"],
                    env={"EBNODE_CONFIG": path})
            self.assertTrue(r.stderr.startswith(os.devnull + "x: cannot "),
                            r)

    def test_precedence(self):
        cfg = {"bridge": {"port": 1}}

        def port(**kw):
            r = run(["--print-config"] + kw.get("args", []), config=cfg,
                    env=kw.get("env"))
            self.assertEqual(r.code, 0, r)
            return json.loads(r.stdout)["bridge"]["port"]
        self.assertEqual(port(), 1)
        self.assertEqual(port(env={"EBNODE_BRIDGE_PORT": "2"}), 2)
        self.assertEqual(port(env={"EBNODE_BRIDGE_PORT": "2"},
                              args=["--set", "bridge.port=3"]), 3)
        self.assertEqual(port(args=["-s", "bridge.port=4",
                                    "--set=bridge.port=5"]), 5)

    def test_start_failures_caught_by_check(self):
        # Issue 11: values that used to pass --check and fail only at
        # start (exit 1, EINVAL, no key named).
        long_root = "/" + "a" * 520
        cases = [
            ({"zookeeper": {"root": long_root}}, "zookeeper.root"),
            ({"zookeeper": {"root": "/" + "b/" * 200 + "c" * 200}},
             "zookeeper.root"),
            ({"zookeeper": {"root": "/a/./b"}}, "zookeeper.root"),
            ({"zookeeper": {"root": "/a/.."}}, "zookeeper.root"),
            ({"zookeeper": {"root": "/caf\u00e9"}}, "zookeeper.root"),
            ({"zookeeper": {"root": "/a\u0001b"}}, "zookeeper.root"),
            ({"node": {"address": "x" * 161}}, "node.address"),
            ({"bridge": {"listen": "localhost"}}, "bridge.listen"),
            ({"bridge": {"listen": "256.0.0.1"}}, "bridge.listen"),
            ({"admin": {"listen": "localhost"}}, "admin.listen"),
            ({"admin": {"listen": "256.0.0.1"}}, "admin.listen"),
            ({"cluster": {"listen": "localhost"}}, "cluster.listen"),
            ({"cluster": {"listen": "256.0.0.1"}}, "cluster.listen"),
            ({"zookeeper": {"connect": "127.0.0.1:2181/a/../b"}},
             "zookeeper.connect"),
            ({"zookeeper": {"connect": "127.0.0.1:2181/app",
                            "root": "/" + "r" * 510}}, "zookeeper.root"),
        ]
        for cfg, key in cases:
            text = json.dumps(cfg, indent=2)
            r = run(["--check"], config=text)
            self.assertEqual(r.code, 2, (cfg, r))
            self.assertRegex(r.stderr, r"^ebnode\.json:\d+:\d+: %s: .+\n$"
                             % re.escape(key), cfg)
        # Accepted, and they work at start: numeric IPv6, exactly 160 and
        # 512 characters, a chroot (folded into zookeeper.root; started
        # against a real ZooKeeper by it.cluster.chroot).
        ok = [{"bridge": {"listen": "::1"}},
              {"node": {"address": "x" * 160}},
              {"zookeeper": {"root": "/" + "a" * 511}},
              {"zookeeper": {"connect": "127.0.0.1:2181/app"}}]
        for cfg in ok:
            r = run(["--check"], config=json.dumps(cfg))
            self.assertEqual((r.code, r.stdout), (0, "config ok\n"),
                             (cfg, r))
        r = run(["--print-config", "--set",
                 "zookeeper.connect=h1:2181,h2:2181/app"])
        eff = json.loads(r.stdout)["zookeeper"]
        self.assertEqual((eff["connect"], eff["root"]),
                         ("h1:2181,h2:2181", "/app/ebnode/default"))

    def test_docs_list_every_key(self):
        """docs/CONFIG.md and the example file name every key and its
        environment variable (the effective config lists them all)."""
        r = run(["--print-config"])
        self.assertEqual(r.code, 0, r)
        keys = []

        def walk(obj, prefix):
            for k, v in obj.items():
                path = prefix + k
                if isinstance(v, dict) and path != "ingress.default_route":
                    walk(v, path + ".")
                else:
                    keys.append(path)
        walk(json.loads(r.stdout), "")
        self.assertGreater(len(keys), 40)
        with open(os.path.join(SOURCE_DIR, "docs", "CONFIG.md"),
                  encoding="utf-8") as f:
            doc = f.read()
        with open(os.path.join(SOURCE_DIR, "etc", "ebnode.example.jsonc"),
                  encoding="utf-8") as f:
            example = f.read()
        for k in keys:
            env = "EBNODE_" + k.upper().replace(".", "_")
            self.assertIn("| `%s` |" % k, doc, k)
            row = doc.split("| `%s` |" % k, 1)[1].split("\n", 1)[0]
            self.assertRegex(row, r"\| (static|\*\*dynamic\*\*) \|$", k)
            self.assertIn("`%s`" % env, doc, env)
            self.assertIn('"%s"' % k.rsplit(".", 1)[1], example, k)

    def test_print_config_round_trip(self):
        r = run(["--print-config", "--set", "admin.token=s3cret",
                 "--set", 'ingress.routes=[{"field":"k","equals":"v",'
                 '"to":"t"}]'])
        self.assertEqual(r.code, 0, r)
        eff = json.loads(r.stdout)
        self.assertEqual(eff["admin"]["token"], "<redacted>")
        self.assertEqual(eff["bridge"]["inbound"],
                         [{"address": "external.ingress"}])
        self.assertEqual(eff["ingress"]["routes"][0]["mode"], "send")
        self.assertNotIn("s3cret", r.stdout)
        eff["admin"]["token"] = "t"
        r2 = run(["--check"], config=eff)
        self.assertEqual((r2.code, r2.stdout), (0, "config ok\n"), r2)


def standalone(node_id):
    return ebtest.standalone_config(node={"id": node_id,
                                          "address": node_id})


READY_RE = re.compile(r"^READY admin=(\S+:\d+|-) bridge=(\S+:\d+|-) "
                      r"cluster=(\S+:\d+|-) node=(\S+)$")


class LifecycleTest(unittest.TestCase):
    def test_sigterm_while_zookeeper_unreachable(self):
        # Issue 11: SIGTERM during start, while the cluster step waits for
        # a ZooKeeper that refuses connections (its bound is 2 session
        # timeouts + margin, about 33 s by default), stops at once, exit 0.
        cfg = ebtest.merge(standalone("it-node-zk"), {
            "zookeeper": {"connect": "127.0.0.1:%d" % ebtest.free_port()}})
        n = ebtest.EbNode(cfg, name="nozk", wait_ready=False)
        try:
            n.wait_log("session-start", 10)
            t0 = time.monotonic()
            n.send_signal(signal.SIGTERM)
            code = n.wait_exit(5)
            took = time.monotonic() - t0
            sys.stderr.write("node: SIGTERM during start with ZooKeeper "
                             "unreachable: exit %d after %.3f s\n"
                             % (code, took))
            self.assertEqual(code, 0, n.log_text())
            self.assertLess(took, ebtest.scaled(2))
            self.assertTrue(any("start-canceled: step=cluster" in ln
                                for ln in n.log_lines()))
        finally:
            n.kill()

    def test_ready_then_sigterm(self):
        with ebtest.EbNode(standalone("it-node-1"), name="n1") as n:
            self.assertEqual(n.node_id, "it-node-1")
            lines = [ln for ln in n.stdout_lines() if ln.startswith("READY")]
            self.assertEqual(len(lines), 1, n.stdout_lines())
            self.assertRegex(lines[0], READY_RE)
            self.assertTrue(n.running())
            t0 = time.monotonic()
            code = n.stop(signal.SIGTERM, timeout=5)
            elapsed = time.monotonic() - t0
            self.assertEqual(code, 0, n.log_text())
            self.assertLess(elapsed, ebtest.scaled(5))
            log = n.log_text()
            self.assertIn("stop-requested: signal=SIGTERM", log)
            self.assertIn("stopped: exit_code=0", log)

    def test_ready_ports_accept_connections(self):
        with ebtest.EbNode(standalone("it-node-5"), name="n5",
                           env=CLEAN_ENV) as n:
            for part in ("admin", "bridge", "cluster"):
                hp = getattr(n, part)
                if hp is not None:
                    self.assertNotEqual(hp[1], 0)
                    socket.create_connection(
                        hp, timeout=ebtest.scaled(5)).close()
            self.assertEqual(n.stop(), 0)

    def test_disabled_parts_print_dash(self):
        cfg = standalone("it-node-6")
        cfg["bridge"]["enabled"] = False
        cfg["admin"]["enabled"] = False
        with ebtest.EbNode(cfg, name="n6", env=CLEAN_ENV) as n:
            self.assertIsNone(n.bridge)
            self.assertIsNone(n.admin)
            self.assertIn(" admin=- bridge=- ", n.stdout_lines()[0])
            self.assertEqual(n.stop(), 0)

    def test_sigint(self):
        with ebtest.EbNode(standalone("it-node-2"), name="n2") as n:
            self.assertEqual(n.stop(signal.SIGINT, timeout=5), 0,
                             n.log_text())
            self.assertIn("stop-requested: signal=SIGINT", n.log_text())

    def test_config_error_exits_2_before_ready(self):
        code, err = ebtest.start_expect_failure(BAD_PORT, name="bad",
                                                env=CLEAN_ENV, timeout=10)
        self.assertEqual(code, 2)
        self.assertEqual(err, BAD_PORT_MSG)

    def test_log_level_from_config(self):
        cfg = standalone("it-node-3")
        cfg["log"] = {"level": "debug"}
        with ebtest.EbNode(cfg, name="n3", env=CLEAN_ENV) as n:
            self.assertIn("started: step=bus", n.wait_log("started: step="))
            self.assertEqual(n.stop(), 0)
        cfg["log"] = {"level": "warn"}
        with ebtest.EbNode(cfg, name="n4", env=CLEAN_ENV) as n:
            self.assertEqual(n.stop(), 0)
            self.assertEqual(
                [ln for ln in n.log_lines() if " INFO " in ln or
                 " NOTICE " in ln], [])


CASES = {"cli": CliTest, "check": CheckTest, "lifecycle": LifecycleTest}

if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("-")]
    suite = unittest.TestSuite()
    for name in names or CASES:
        suite.addTests(
            unittest.defaultTestLoader.loadTestsFromTestCase(CASES[name]))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)
