"""Shared helpers for the bridge integration tests (stdlib only).

On top of ebtest: a bridge client with sync() (ping/pong as an ordering
barrier: the bridge handles a socket's frames in order, so once the pong is
back every earlier frame of that socket has been processed), exact-frame
assertions (byte equality with Vert.x's key order) and node/TLS builders.
"""

import json
import os
import ssl
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import ebtest  # noqa: E402
from ebtest import BridgeClient, EbNode, scaled  # noqa: E402,F401

CERTS = os.environ.get("EB_CERTS_DIR", "")


def frame_bytes(d):
    """The compact JSON Vert.x would write for dict d (key order kept)."""
    return json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode()


class Client(BridgeClient):
    def sync(self, timeout=5):
        """Pings and returns the frames that arrived before the pong."""
        self.ping()
        self.recv_until(lambda f: f.get("type") == "pong", timeout)
        return self.skipped

    def expect_exact(self, tc, want, timeout=5):
        """Reads one frame and asserts it is byte-equal to frame_bytes(want)."""
        got = self.recv_frame_bytes(timeout)
        tc.assertEqual(got.decode(), frame_bytes(want).decode())
        return json.loads(got)


def start_node(name, bridge=None, **sections):
    cfg = ebtest.standalone_config(**sections)
    if bridge:
        cfg = ebtest.merge(cfg, {"bridge": bridge})
    # Under ASan, freed memory sits in a 256 MiB quarantine, which would
    # swamp the peak-RSS measurements; a small one keeps them meaningful
    # (the variable is ignored by binaries built without ASan).
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = {"ASAN_OPTIONS": (asan + ":" if asan else "") +
           "quarantine_size_mb=8"}
    return EbNode(cfg, name=name, env=env)


def connect(node, tls_context=None, server_hostname=None):
    host, port = node.bridge
    return Client(host, port, tls_context=tls_context,
                  server_hostname=server_hostname)


def cert(name):
    return os.path.join(CERTS, name)


def client_tls(ca="ca.pem", certname=None, verify=True):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if verify:
        ctx.load_verify_locations(cert(ca))
        ctx.check_hostname = True
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if certname is not None:
        ctx.load_cert_chain(cert(certname + ".pem"), cert(certname + ".key"))
    return ctx


def tls_bridge(client_auth="none", certname="server", ca=True, **extra):
    b = {"tls": {"cert": cert(certname + ".pem"),
                 "key": cert(certname + ".key"),
                 "client_auth": client_auth}}
    if ca:
        b["tls"]["ca"] = cert("ca.pem")
    b.update(extra)
    return b


def vmhwm_kb(pid):
    """Peak resident set size of a process in KiB (VmHWM)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def vmrss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1
