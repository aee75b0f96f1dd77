"""ebbench end to end: every mode against ebbaseline and against a real
standalone ebnode, with fixed operation counts so that the checks are exact
(ops, lost, errors, latency ordering, server CPU/RSS present). Nothing here
asserts a speed: numbers belong in docs/PERFORMANCE.md, not in tests."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import ebtest  # noqa: E402

EBBENCH = os.environ.get("EBBENCH_BIN", "ebbench")
BASELINE = os.environ.get("EBBASELINE_BIN", "ebbaseline")
PLOT = os.path.join(HERE, "..", "..", "..", "bench", "plot.py")


def bench(port, *args, timeout=60):
    p = subprocess.run([EBBENCH, "--port", str(port), "--json"] +
                       [str(a) for a in args], capture_output=True,
                       text=True, timeout=ebtest.scaled(timeout))
    return p.returncode, p.stdout, p.stderr


class Baseline:
    def __init__(self):
        self.proc = subprocess.Popen([BASELINE, "--port", "0"],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("READY bridge="):
            self.close()
            raise RuntimeError("ebbaseline: no READY line: %r" % line)
        self.port = int(line.rsplit(":", 1)[1])
        self.pid = self.proc.pid

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(ebtest.scaled(5))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Checks:
    """Assertions shared by the baseline and ebnode runs."""

    def run_mode(self, mode, count, conns=1, extra=()):
        rc, out, err = bench(self.port, "--mode", mode, "--count", count,
                             "--connections", conns, "--server-pid",
                             self.pid, *extra)
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        per_op = conns if mode == "egress" else 1
        self.assertEqual(r["mode"], mode)
        self.assertEqual(r["ops"], count * per_op)
        self.assertEqual(r["sent"], count)
        self.assertEqual(r["lost"], 0)
        self.assertEqual(r["errors"], 0)
        lat = r["latency_us"]
        self.assertEqual(lat["samples"], count * per_op)
        self.assertGreater(lat["p50"], 0)
        self.assertLessEqual(lat["p50"], lat["p99"])
        self.assertLessEqual(lat["p99"], lat["p999"])
        self.assertLessEqual(lat["p999"], lat["max"])
        self.assertGreater(r["rate_per_s"], 0)
        pct = r["percentiles_us"]
        self.assertEqual(pct[0][0], 0.0)
        self.assertEqual(pct[-1], [1.0, lat["max"]])
        self.assertEqual([v for _, v in pct], sorted(v for _, v in pct))
        srv = r["server"]
        self.assertEqual(srv["pid"], self.pid)
        self.assertGreaterEqual(srv["cpu_us_per_op"], 0)
        self.assertGreater(srv["hwm_kb"], 0)
        self.assertGreater(srv["rss_kb_end"], 0)
        self.assertGreaterEqual(srv["hwm_kb"], srv["rss_kb_end"])
        return r


class AgainstBaseline(unittest.TestCase, Checks):
    def setUp(self):
        self.server = Baseline()
        self.port, self.pid = self.server.port, self.server.pid

    def tearDown(self):
        self.server.close()

    def test_rr(self):
        self.run_mode("rr", 2000, conns=2)

    def test_pipe(self):
        self.run_mode("pipe", 5000, conns=2, extra=("--depth", 8))

    def test_relay_through_responder(self):
        # The baseline relays requests to the responder (a sink) and its
        # replies back in order: the same hops as a bridge.
        r = self.run_mode("pipe", 3000, conns=2, extra=("--responder",))
        self.assertEqual(r["responder_replies"], 3000)
        r = self.run_mode("rr", 500, extra=("--responder", "--body", 400))
        self.assertEqual(r["responder_replies"], 500)

    def test_fire(self):
        self.run_mode("fire", 20000, conns=2, extra=("--depth", 500))

    def test_egress_fans_out(self):
        self.run_mode("egress", 5000, conns=3)

    def test_body_size_and_duration(self):
        rc, out, err = bench(self.port, "--mode", "pipe", "--duration",
                             "0.3", "--warmup", "0.1", "--body", "1000",
                             "--label", "big")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual(r["label"], "big")
        self.assertEqual(r["body_bytes"], 1000)
        self.assertGreater(r["ops"], 0)
        self.assertNotIn("server", r)  # no --server-pid

    def test_noread_sink_is_bounded_by_duration(self):
        # The consumer never reads: nothing is confirmed, the explicit
        # --duration ends the --count run, everything is reported lost
        # (exit status 3) and --settle adds the server's RSS afterwards.
        rc, out, err = bench(self.port, "--mode", "fire", "--count", 5000,
                             "--depth", 5000, "--duration", 0.5, "--drain",
                             0.3, "--sink-noread", "--settle", 0.2,
                             "--server-pid", self.pid)
        self.assertEqual(rc, 3, err)
        r = json.loads(out)
        self.assertEqual(r["ops"], 0)
        self.assertEqual(r["lost"], r["sent"])
        self.assertGreater(r["sent"], 0)
        self.assertGreater(r["server"]["rss_kb_settled"], 0)

    def test_plot_svg(self):
        import tempfile
        import xml.etree.ElementTree as ET
        rc, out, err = bench(self.port, "--mode", "pipe", "--count", 2000,
                             "--label", "baseline")
        self.assertEqual(rc, 0, err)
        with tempfile.TemporaryDirectory() as d:
            src, svg = os.path.join(d, "r.jsonl"), os.path.join(d, "r.svg")
            with open(src, "w") as f:
                f.write(out)
            p = subprocess.run([sys.executable, PLOT, src, svg],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            root = ET.parse(svg).getroot()
            paths = [e for e in root.iter() if e.tag.endswith("path")]
            self.assertEqual(len(paths), 1)  # one mode, one label
            texts = [e.text for e in root.iter() if e.tag.endswith("text")]
            self.assertIn("pipe", texts)
            self.assertIn("baseline", texts)

    def test_table_output(self):
        p = subprocess.run([EBBENCH, "--port", str(self.port), "--count",
                            "100"], capture_output=True, text=True,
                           timeout=ebtest.scaled(30))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ebbench rr 127.0.0.1:%d" % self.port, p.stdout)
        self.assertIn("latency us p50", p.stdout)


class Errors(unittest.TestCase):
    def test_usage_exit_2(self):
        for args in ([], ["--port", "1", "--mode", "nope"],
                     ["--port", "x"], ["--port", "1", "--bogus"]):
            p = subprocess.run([EBBENCH] + args, capture_output=True,
                               text=True, timeout=ebtest.scaled(10))
            self.assertEqual(p.returncode, 2, args)

    def test_refused_exit_1(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        rc, out, err = bench(port, "--count", "10")
        self.assertEqual(rc, 1)
        self.assertIn("connection refused", err.lower())


class AgainstEbnode(unittest.TestCase, Checks):
    """The same checks through a standalone ebnode's bridge (rr/pipe with
    ebbench's responder thread replying)."""

    def setUp(self):
        cfg = ebtest.standalone_config(
            bridge={"inbound": [{}], "outbound": [{}]},
            log={"level": "notice"})
        self.node = ebtest.EbNode(cfg, name="bench")
        self.port, self.pid = self.node.bridge[1], self.node.pid

    def tearDown(self):
        self.node.close()

    def test_rr(self):
        r = self.run_mode("rr", 1000, conns=2, extra=("--responder",))
        self.assertEqual(r["responder_replies"], 1000)

    def test_pipe(self):
        self.run_mode("pipe", 3000, extra=("--responder", "--depth", 8))

    def test_fire(self):
        self.run_mode("fire", 10000, conns=2, extra=("--depth", 500))

    def test_egress(self):
        self.run_mode("egress", 3000, conns=2)

    def test_rr_without_responder_reports_errors(self):
        # A bridge answers NO_HANDLERS: the run completes, errors counted.
        rc, out, err = bench(self.port, "--mode", "rr", "--count", "50")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual(r["errors"], 50)


CERTS = os.environ.get("EB_CERTS_DIR", "")


def cert(name):
    return os.path.join(CERTS, name)


@unittest.skipUnless(CERTS and os.path.exists(cert("ca.pem")),
                     "no test PKI (EB_CERTS_DIR)")
class AgainstEbnodeTLS(unittest.TestCase, Checks):
    """ebbench --tls through ebnode's TLS bridge (client auth required)."""

    def setUp(self):
        cfg = ebtest.standalone_config(
            bridge={"inbound": [{}], "outbound": [{}],
                    "tls": {"cert": cert("server.pem"),
                            "key": cert("server.key"), "ca": cert("ca.pem"),
                            "client_auth": "required"}},
            log={"level": "notice"})
        self.node = ebtest.EbNode(cfg, name="bench-tls")
        self.port, self.pid = self.node.bridge[1], self.node.pid
        self.tls = ("--ca", cert("ca.pem"), "--cert", cert("client.pem"),
                    "--key", cert("client.key"))

    def tearDown(self):
        self.node.close()

    def test_rr_and_fire_over_tls(self):
        self.run_mode("rr", 300, extra=("--responder",) + self.tls)
        self.run_mode("fire", 3000, extra=self.tls)
        self.run_mode("egress", 1000, conns=2, extra=self.tls)

    def test_wrong_ca_fails(self):
        rc, out, err = bench(self.port, "--count", "10", "--ca",
                             cert("wrongca.pem"), "--cert",
                             cert("client.pem"), "--key", cert("client.key"))
        self.assertEqual(rc, 1)
        self.assertIn("certificate verify failed", err)


if __name__ == "__main__":
    unittest.main()
