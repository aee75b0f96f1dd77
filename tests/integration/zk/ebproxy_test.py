#!/usr/bin/env python3
"""it.zk.ebproxy: the ebproxy process (tests/harness/proxy_main.c) as Python
tests use it: PROXY port=<p> on stdout, then pause/resume/cut/heal/delay/stats
commands on stdin answered with "ok". Uses a local echo server; no ZooKeeper.
Environment: EB_PROXY_BIN (path of ebproxy)."""
import os
import select
import socket
import subprocess
import threading
import time
import unittest

TIMEOUT = 5.0 * int(os.environ.get("EB_TEST_TIMEOUT_MULTIPLIER", "1"))


class EchoServer(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stop = False

    def run(self):
        conns = []
        while not self.stop:
            r, _, _ = select.select([self.sock] + conns, [], [], 0.05)
            for s in r:
                if s is self.sock:
                    c, _ = s.accept()
                    conns.append(c)
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if data:
                    s.sendall(data)
                else:
                    conns.remove(s)
                    s.close()
        for c in conns:
            c.close()
        self.sock.close()


class Proxy:
    def __init__(self, target_port):
        self.p = subprocess.Popen(
            [os.environ["EB_PROXY_BIN"], "0", "127.0.0.1:%d" % target_port],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self._readline()
        assert line.startswith("PROXY port="), line
        self.port = int(line.split("=", 1)[1])

    def _readline(self):
        r, _, _ = select.select([self.p.stdout], [], [], TIMEOUT)
        if not r:
            raise AssertionError("ebproxy did not answer in time")
        return self.p.stdout.readline().strip()

    def cmd(self, c):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        return self._readline()

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=TIMEOUT)
        except Exception:
            self.p.kill()
            self.p.wait()


def roundtrip(port, payload=b"ping", timeout=TIMEOUT):
    """Echo payload through port; b"" when the proxy closed or reset the
    connection (cut: accepted and closed at once, which may arrive as an
    RST once our data is unread)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    got = b""
    try:
        s.settimeout(timeout)
        s.sendall(payload)
        while len(got) < len(payload):
            b = s.recv(65536)
            if not b:
                break
            got += b
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        s.close()
    return got


class EbproxyTest(unittest.TestCase):
    def setUp(self):
        self.echo = EchoServer()
        self.echo.start()
        self.proxy = Proxy(self.echo.port)

    def tearDown(self):
        self.proxy.close()
        self.echo.stop = True
        self.echo.join(TIMEOUT)

    def test_forward_and_commands(self):
        self.assertEqual(roundtrip(self.proxy.port), b"ping")
        self.assertEqual(self.proxy.cmd("bogus"), "err unknown command")

        # pause: an open connection gets nothing back until resume.
        s = socket.create_connection(("127.0.0.1", self.proxy.port),
                                     timeout=TIMEOUT)
        self.assertEqual(roundtrip(self.proxy.port, b"warm"), b"warm")
        self.assertEqual(self.proxy.cmd("pause"), "ok")
        s.sendall(b"held")
        r, _, _ = select.select([s], [], [], 0.3)
        self.assertEqual(r, [])
        self.assertEqual(self.proxy.cmd("resume"), "ok")
        s.settimeout(TIMEOUT)
        self.assertEqual(s.recv(4), b"held")

        # cut: the open connection ends, new ones are refused until heal.
        self.assertEqual(self.proxy.cmd("cut"), "ok")
        try:
            self.assertEqual(s.recv(4), b"")
        except ConnectionResetError:
            pass  # closed with unread data: an RST, also "ended"
        s.close()
        self.assertEqual(roundtrip(self.proxy.port, b"x"), b"")
        self.assertEqual(self.proxy.cmd("heal"), "ok")
        self.assertEqual(roundtrip(self.proxy.port, b"back"), b"back")

        # delay applies each way.
        self.assertEqual(self.proxy.cmd("delay 150"), "ok")
        t0 = time.monotonic()
        self.assertEqual(roundtrip(self.proxy.port, b"slow"), b"slow")
        self.assertGreaterEqual(time.monotonic() - t0, 0.29)
        self.assertEqual(self.proxy.cmd("delay x"), "err bad delay")
        self.assertTrue(self.proxy.cmd("stats").startswith("ok accepted="))


if __name__ == "__main__":
    unittest.main()
