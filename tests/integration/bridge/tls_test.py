"""TLS on the bridge (OpenSSL over memory BIOs): frames over TLS, client
auth REQUIRED with a wrong CA / no client certificate, a client that does
not trust the server, an expired server certificate, plain text sent to the
TLS port, and TLS < 1.2 refused."""

import socket
import ssl
import struct
import sys
import unittest

import bt
from bt import BridgeClient


def handshake_fails(tc, node, ctx):
    """The connection must fail: at the handshake, or (TLS 1.3, where the
    client finishes before the server checked its certificate) on the
    first read."""
    try:
        c = bt.connect(node, ctx, "localhost")
    except (ssl.SSLError, ConnectionError, OSError):
        return
    try:
        c.ping()
        c.recv_frame(3)
    except (ssl.SSLError, ConnectionError, OSError):
        return
    finally:
        c.close()
    tc.fail("TLS connection unexpectedly worked")


class TlsRequired(unittest.TestCase):
    node = None

    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node("tlsreq", bridge=bt.tls_bridge(
            "required", inbound=[{}], outbound=[{}]))

    @classmethod
    def tearDownClass(cls):
        code = cls.node.stop()
        if code != 0:
            raise AssertionError("ebnode exited with %r" % code)

    def ok_client(self):
        return bt.connect(self.node, bt.client_tls(certname="client"),
                          "localhost")

    def test_frames_over_tls(self):
        c = self.ok_client()
        try:
            c.register("t")
            c.sync()
            data = b"".join(BridgeClient.encode(
                {"type": "publish", "address": "t", "body": {"i": i}})
                for i in range(64))
            c.send_raw(data)  # 64 frames in one TLS write
            for i in range(64):
                c.expect_exact(self, {"type": "message", "address": "t",
                                      "headers": {}, "body": {"i": i},
                                      "send": False})
            big = {"type": "publish", "address": "t",
                   "body": "y" * 200000}  # spans many TLS records
            c.send_frame(big)
            f = c.recv_frame()
            self.assertEqual(len(f["body"]), 200000)
        finally:
            c.close()

    def test_300_concurrent_tls_connections(self):
        pid = self.node.pid
        before = bt.vmhwm_kb(pid)
        conns = []
        try:
            for _ in range(300):
                conns.append(self.ok_client())
            for c in conns:
                c.ping()
            for c in conns:
                c.expect_exact(self, {"type": "pong"})
            after = bt.vmhwm_kb(pid)
            sys.stderr.write("tls: 300 connections, ebnode VmHWM before=%d "
                             "KiB after=%d KiB\n" % (before, after))
        finally:
            for c in conns:
                c.close()

    def test_no_client_certificate_refused(self):
        handshake_fails(self, self.node, bt.client_tls())
        self.node.wait_log("tls-failed")

    def test_client_certificate_of_wrong_ca_refused(self):
        handshake_fails(self, self.node, bt.client_tls(certname="wrong"))

    def test_client_not_trusting_server_ca(self):
        ctx = bt.client_tls(ca="wrongca.pem", certname="client")
        with self.assertRaises(ssl.SSLCertVerificationError):
            bt.connect(self.node, ctx, "localhost")

    def test_plain_text_to_tls_port(self):
        host, port = self.node.bridge
        raw = BridgeClient(host, port)
        try:
            raw.send_frame({"type": "ping"})
            # The server answers with at most a TLS alert, never a frame,
            # and closes.
            self.assertTrue(raw.wait_closed(3))
        finally:
            raw.close()
        c = self.ok_client()  # the listener still works
        try:
            c.ping()
            c.expect_exact(self, {"type": "pong"})
        finally:
            c.close()

    def test_tls_1_1_refused(self):
        ctx = bt.client_tls(certname="client")
        ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        ctx.maximum_version = ssl.TLSVersion.TLSv1_1
        handshake_fails(self, self.node, ctx)


class TlsRequest(unittest.TestCase):
    def test_request_mode_accepts_with_and_without_client_cert(self):
        node = bt.start_node("tlsrequest", bridge=bt.tls_bridge(
            "request", inbound=[{}], outbound=[{}]))
        try:
            for ctx in (bt.client_tls(), bt.client_tls(certname="client")):
                c = bt.connect(node, ctx, "localhost")
                c.ping()
                c.expect_exact(self, {"type": "pong"})
                c.close()
            # A certificate that does not verify is still refused.
            handshake_fails(self, node, bt.client_tls(certname="wrong"))
        finally:
            node.stop()


class TlsExpired(unittest.TestCase):
    def test_expired_server_certificate_rejected_by_client(self):
        node = bt.start_node("tlsexp", bridge=bt.tls_bridge(
            "none", certname="expired", ca=False, inbound=[{}]))
        try:
            with self.assertRaises(ssl.SSLCertVerificationError) as cm:
                bt.connect(node, bt.client_tls(), "localhost")
            self.assertIn("expired", str(cm.exception))
        finally:
            node.stop()


class TlsNoClientAuth(unittest.TestCase):
    def test_server_only_tls(self):
        node = bt.start_node("tlsnone", bridge=bt.tls_bridge(
            "none", ca=False, inbound=[{}], outbound=[{}]))
        try:
            c = bt.connect(node, bt.client_tls(), "localhost")
            c.ping()
            c.expect_exact(self, {"type": "pong"})
            c.close()
        finally:
            node.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
