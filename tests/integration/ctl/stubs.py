"""Stub servers for the ebctl tests: a small Vert.x TCP event-bus bridge
(enough of BRIDGE-PROTOCOL.md for ebctl: ping, register, unregister, send,
publish, request with built-in services) and an admin HTTP endpoint with the
JSON shapes of the admin routes (admin/, node/node_admin.c). Both bind
127.0.0.1:0 and run on threads.

Built-in bridge services (requests, i.e. send with replyAddress):
  echo          replies with the request's body and headers
  fail          fails with RECIPIENT_FAILURE 42 "boom"
  slow          never replies: TIMEOUT after headers.timeout ms (else 30 s)
  denied.*      access_denied (also for send/publish/register)
  anything else NO_HANDLERS, unless a client registered it (then delivered)
"""

import http.server
import json
import socket
import socketserver
import ssl
import struct
import threading
import time


def encode(frame):
    body = json.dumps(frame, separators=(",", ":")).encode()
    return struct.pack(">I", len(body)) + body


class _BridgeHandler(socketserver.BaseRequestHandler):
    def setup(self):
        self.lock = threading.Lock()
        self.server.stub._add_conn(self)

    def finish(self):
        self.server.stub._drop_conn(self)

    def write(self, frame):
        with self.lock:
            try:
                self.request.sendall(encode(frame))
            except OSError:
                pass

    def _read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.request.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def handle(self):
        while True:
            hdr = self._read_exact(4)
            if hdr is None:
                return
            (n,) = struct.unpack(">I", hdr)
            data = self._read_exact(n)
            if data is None:
                return
            try:
                frame = json.loads(data)
            except ValueError:
                continue
            if isinstance(frame, dict):
                self.server.stub._handle(self, frame)


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _TLSServer(_TCPServer):
    def __init__(self, addr, handler, context):
        self.context = context
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = super().get_request()
        try:
            return self.context.wrap_socket(sock, server_side=True), addr
        except (ssl.SSLError, OSError):
            sock.close()
            raise


class StubBridge:
    def __init__(self, tls_context=None):
        self.frames = []          # every frame received, in order
        self.registry = {}        # address -> [handler]
        self.cond = threading.Condition()
        if tls_context is not None:
            self.server = _TLSServer(("127.0.0.1", 0), _BridgeHandler,
                                     tls_context)
        else:
            self.server = _TCPServer(("127.0.0.1", 0), _BridgeHandler)
        self.server.stub = self
        self.port = self.server.server_address[1]
        self.endpoint = "127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # -- connections -------------------------------------------------------
    def _add_conn(self, h):
        pass

    def _drop_conn(self, h):
        with self.cond:
            for hs in self.registry.values():
                if h in hs:
                    hs.remove(h)
            self.cond.notify_all()

    def wait_for(self, pred, timeout=10):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def wait_registered(self, address, timeout=10):
        return self.wait_for(lambda: self.registry.get(address), timeout)

    def deliver(self, address, body, headers=None, send=False):
        """Server-side publish (send=False) or send to registered clients."""
        with self.cond:
            hs = list(self.registry.get(address, []))
        if send:
            hs = hs[:1]
        for h in hs:
            h.write({"type": "message", "address": address,
                     "headers": headers or {}, "body": body, "send": send})
        return len(hs)

    # -- protocol ----------------------------------------------------------
    def _handle(self, h, f):
        with self.cond:
            self.frames.append(f)
            self.cond.notify_all()
        t = f.get("type")
        if t == "ping":
            h.write({"type": "pong"})
            return
        if t not in ("send", "publish", "register", "unregister"):
            h.write({"type": "err", "message": "unknown_type"})
            return
        addr = f.get("address")
        if not isinstance(addr, str):
            h.write({"type": "err", "message": "missing_address"})
            return
        if addr.startswith("denied"):
            h.write({"type": "err", "message": "access_denied"})
            return
        if t == "register":
            with self.cond:
                self.registry.setdefault(addr, []).append(h)
                self.cond.notify_all()
        elif t == "unregister":
            with self.cond:
                hs = self.registry.get(addr, [])
                if h in hs:
                    hs.remove(h)
                else:
                    h.write({"type": "err", "message": "unknown_address"})
        elif t == "publish":
            self.deliver(addr, f.get("body"), f.get("headers"), send=False)
        elif "replyAddress" in f:
            self._request(h, f, addr)
        else:
            self.deliver(addr, f.get("body"), f.get("headers"), send=True)

    def _request(self, h, f, addr):
        ra = f["replyAddress"]
        headers = dict(f.get("headers") or {})
        timeout = headers.pop("timeout", 30000)

        def err(ftype, code, msg):
            h.write({"type": "err", "address": ra, "sourceAddress": addr,
                     "failureCode": code, "failureType": ftype,
                     "message": msg})

        if addr == "echo":
            h.write({"type": "message", "address": ra, "headers": headers,
                     "body": f.get("body"), "send": True})
        elif addr == "fail":
            err("RECIPIENT_FAILURE", 42, "boom")
        elif addr == "slow":
            threading.Timer(timeout / 1000.0, err, args=(
                "TIMEOUT", -1, "Timed out after waiting %d(ms) for a reply"
                % timeout)).start()
        else:
            err("NO_HANDLERS", -1, "No handlers for address " + addr)


NODES = {
    "nodes": [
        {"node_id": "n1", "address": "node-1", "host": "127.0.0.1",
         "cluster_port": 7101, "bridge_port": 7001, "admin_port": 7081,
         "sequence": 1, "epoch": 3, "joined_ms": 1763730000000,
         "leader": True, "self": True, "zone": "a"},
        {"node_id": "n2", "address": "node-2", "host": "127.0.0.1",
         "cluster_port": 7102, "bridge_port": 7002, "admin_port": 7082,
         "sequence": 2, "epoch": 3, "joined_ms": 1763730001000,
         "leader": False, "self": False},
    ],
    "leader": "n1",
}


class _AdminHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _reply(self, status, obj):
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self, method):
        stub = self.server.stub
        stub.requests.append((method, self.path,
                              self.headers.get("Authorization")))
        if stub.raw is not None:
            self.wfile.write(stub.raw)
            self.close_connection = True
            return
        if stub.token is not None and \
                self.headers.get("Authorization") != "Bearer " + stub.token:
            self._reply(401, {"error": "unauthorized"})
            return
        key = (method, self.path)
        if key == ("GET", "/nodes"):
            self._reply(200, stub.nodes)
        elif key == ("GET", "/leader"):
            self._reply(200, {"node_id": "n1", "address": "node-1",
                              "epoch": 3, "since_ms": 1763730000000})
        elif key == ("GET", "/health"):
            self._reply(stub.health_status, stub.health)
        elif key == ("POST", "/leader/release"):
            self._reply(200, {"released": True, "epoch": 3})
        else:
            self._reply(404, {"error": "not found: " + self.path})

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self._route("POST")


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True


class StubAdmin:
    def __init__(self, token=None):
        self.token = token
        self.requests = []
        self.nodes = NODES
        self.health_status = 200
        self.health = {"status": "ok", "reason": ""}
        self.raw = None  # bytes: answer with this instead of HTTP
        self.server = _HTTPServer(("127.0.0.1", 0), _AdminHandler)
        self.server.stub = self
        self.port = self.server.server_address[1]
        self.endpoint = "127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def closed_port():
    """A port on 127.0.0.1 with nothing listening (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
