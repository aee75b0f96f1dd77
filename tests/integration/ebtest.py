"""ebtest: helpers for process-level ebnode integration tests (stdlib only).

Import it with

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import ebtest

What it provides:

- EbNode(config, name=...): writes the config as JSON into a private temp
  dir, spawns "$EBNODE_BIN -c <file>", sends stderr to a log file and waits
  (bounded) for the "READY admin=H:P bridge=H:P cluster=H:P node=<id>" line
  on stdout. .stop() sends SIGTERM (then SIGKILL), .kill() SIGKILL,
  .wait_exit() returns the exit code, .log_lines() the stderr lines.
  A context manager; every process is also killed at interpreter exit.
- run_ebnode(args, config=None) runs ebnode to completion (for --check,
  --version, ...) and returns a Completed(code, stdout, stderr).
- start_expect_failure(config) starts a node that must exit on its own
  (bad config, duplicate address...) and returns (exit code, stderr text).
- BridgeClient(host, port, tls_context=None): 4-byte big-endian length +
  JSON frames (the Vert.x TCP event-bus bridge format).
- admin_request(host, port, method, path, token=None, body=None).
- zk_connect_string(), unique_root(): the ZooKeeper fixture and a fresh
  chroot path per test.
- wait_until(pred, timeout, what): bounded polling for conditions that have
  no event to wait on.
- standalone_config()/cluster_config() and merge(): small config builders
  with every port set to 0 (ephemeral; read them back from READY).

Every timeout given to these helpers is multiplied by the environment
variable EB_TEST_TIMEOUT_MULTIPLIER (default 1; the sanitizer suite uses 3).
Set EB_TEST_KEEP_TMP=1 to keep the temp dirs (configs, logs) of passing runs.
"""

import atexit
import copy
import http.client
import json
import os
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

__all__ = [
    "TIMEOUT_MULTIPLIER", "scaled", "ebnode_bin", "EbNode", "EbNodeError",
    "Completed", "run_ebnode", "start_expect_failure", "BridgeClient",
    "RecordingConsumer",
    "admin_request", "zk_connect_string", "unique_root", "wait_until",
    "free_port", "merge", "standalone_config", "cluster_config",
]


def _multiplier():
    try:
        m = float(os.environ.get("EB_TEST_TIMEOUT_MULTIPLIER", "1") or "1")
    except ValueError:
        m = 1.0
    return m if m > 0 else 1.0


TIMEOUT_MULTIPLIER = _multiplier()


def scaled(seconds):
    """A timeout in seconds, scaled by EB_TEST_TIMEOUT_MULTIPLIER."""
    return float(seconds) * TIMEOUT_MULTIPLIER


def ebnode_bin():
    """Path of the ebnode binary under test (env EBNODE_BIN)."""
    path = os.environ.get("EBNODE_BIN")
    if not path:
        raise RuntimeError("EBNODE_BIN is not set (register the test with "
                           "ENVIRONMENT EBNODE_BIN=$<TARGET_FILE:ebnode>)")
    if not os.access(path, os.X_OK):
        raise RuntimeError("EBNODE_BIN=%s is not executable" % path)
    return os.path.abspath(path)  # the node runs in its own cwd


# ---------------------------------------------------------------------------
# Process bookkeeping: every process we spawn is killed at interpreter exit,
# whatever path the test took (the backstop; tests should stop them
# themselves).

_live = set()
_live_lock = threading.Lock()


def _track(proc):
    with _live_lock:
        _live.add(proc)


def _untrack(proc):
    with _live_lock:
        _live.discard(proc)


@atexit.register
def _kill_all():
    with _live_lock:
        procs = list(_live)
        _live.clear()
    for p in procs:
        if p.poll() is None:
            try:
                p.kill()
            except OSError:
                pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _keep_tmp():
    return os.environ.get("EB_TEST_KEEP_TMP", "") not in ("", "0")


# ---------------------------------------------------------------------------
# Config builders.

def merge(base, override):
    """Deep-merges dict override into a copy of base (dicts merge, anything
    else, including lists, replaces) and returns the copy."""
    out = copy.deepcopy(base)
    for k, v in override.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def standalone_config(**sections):
    """A standalone (no ZooKeeper) config with every listener on
    127.0.0.1:0. Keyword arguments are sections merged on top, e.g.
    standalone_config(bridge={"auth": {"token": "t"}})."""
    cfg = {
        "node": {"host": "127.0.0.1"},
        "log": {"level": "info"},
        "cluster": {"listen": "127.0.0.1", "port": 0},
        "bridge": {"listen": "127.0.0.1", "port": 0},
        "admin": {"listen": "127.0.0.1", "port": 0},
    }
    return merge(cfg, sections)


def cluster_config(root, address, zk=None, **sections):
    """A clustered config: ZooKeeper from the fixture (or zk), the given
    chroot root and node address, every listener on 127.0.0.1:0."""
    cfg = standalone_config()
    cfg = merge(cfg, {
        "node": {"address": address, "id": address},
        "zookeeper": {"connect": zk if zk is not None else
                      zk_connect_string(), "root": root},
    })
    return merge(cfg, sections)


# ---------------------------------------------------------------------------
# Running ebnode.

class EbNodeError(Exception):
    """ebnode did not behave as expected (exited early, no READY...).
    Carries .code (exit code or None) and .stderr (log text)."""

    def __init__(self, msg, code=None, stderr=""):
        tail = "\n".join(stderr.splitlines()[-40:])
        super().__init__("%s\n--- ebnode stderr (last 40 lines) ---\n%s"
                         % (msg, tail))
        self.code = code
        self.stderr = stderr


class Completed:
    """Result of run_ebnode(): exit code, stdout and stderr as text."""

    def __init__(self, code, stdout, stderr):
        self.code = code
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self):
        return "Completed(code=%r, stdout=%r, stderr=%r)" % (
            self.code, self.stdout, self.stderr)


def _write_config(directory, config, filename="ebnode.json"):
    path = os.path.join(directory, filename)
    with open(path, "w", encoding="utf-8") as f:
        if isinstance(config, (str, bytes)):
            # Raw text: lets tests write comments or broken JSON on purpose.
            f.write(config.decode() if isinstance(config, bytes) else config)
        else:
            json.dump(config, f, indent=2)
            f.write("\n")
    return path


def run_ebnode(args, config=None, env=None, timeout=20, cwd=None,
               config_name="ebnode.json"):
    """Runs ebnode with args to completion and returns Completed.

    If config is given (dict, or str for raw text), it is written to a temp
    dir (the process's cwd unless cwd is given) and "-c <config_name>" is
    prepended to args, so error messages read "<config_name>:L:C: ...".
    env entries are added to (not replacing) the current environment;
    a value of None removes that variable. Raises EbNodeError on timeout
    (after killing the process)."""
    tmp = tempfile.mkdtemp(prefix="ebtest-run-")
    try:
        argv = [ebnode_bin()]
        if config is not None:
            path = _write_config(tmp, config, config_name)
            # Relative to the temp dir (the cwd), so messages read
            # "<config_name>:L:C: ...", unless the caller chose a cwd.
            argv += ["-c", config_name if cwd is None else path]
        argv += list(args)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                env=_merged_env(env), cwd=cwd or tmp)
        _track(proc)
        try:
            out, err = proc.communicate(timeout=scaled(timeout))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise EbNodeError("ebnode %s did not exit within %.1fs"
                              % (" ".join(args), scaled(timeout)),
                              None, err.decode(errors="replace"))
        finally:
            _untrack(proc)
        return Completed(proc.returncode, out.decode(errors="replace"),
                         err.decode(errors="replace"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _merged_env(extra):
    env = dict(os.environ)
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def _parse_hostport(value):
    if value in ("-", ""):
        return None
    host, sep, port = value.rpartition(":")
    if not sep:
        raise ValueError("bad host:port %r" % value)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host, int(port))


def parse_ready(line):
    """Parses 'READY admin=H:P bridge=H:P cluster=H:P node=<id>' into a
    dict {admin: (h, p) | None, bridge: ..., cluster: ..., node: str}."""
    parts = line.strip().split()
    if not parts or parts[0] != "READY":
        raise ValueError("not a READY line: %r" % line)
    out = {}
    for tok in parts[1:]:
        k, sep, v = tok.partition("=")
        if not sep:
            raise ValueError("bad READY token %r in %r" % (tok, line))
        out[k] = v if k == "node" else _parse_hostport(v)
    for k in ("admin", "bridge", "cluster", "node"):
        if k not in out:
            raise ValueError("READY line lacks %s=: %r" % (k, line))
    return out


class EbNode:
    """One ebnode process.

    node = EbNode(config, name="a")      # spawns and waits for READY
    node.bridge        -> (host, port) or None when disabled
    node.bridge_host, node.bridge_port (same for admin and cluster)
    node.node_id       -> the node= value of the READY line
    node.stop()        -> exit code (SIGTERM, then SIGKILL after timeout)

    config is a dict (written as JSON) or a str (written as is). args are
    extra command-line arguments, env extra environment variables (None
    removes one). With wait_ready=False the process is only spawned; call
    wait_ready() yourself. On a failed start the process is killed and
    EbNodeError is raised with the exit code and stderr.
    """

    def __init__(self, config, name="node", args=(), env=None,
                 ready_timeout=20, wait_ready=True, tmpdir=None):
        self.name = name
        self.config = config
        self._own_tmp = tmpdir is None
        self.dir = tmpdir or tempfile.mkdtemp(prefix="ebtest-%s-" % name)
        self.config_path = _write_config(self.dir, config)
        self.log_path = os.path.join(self.dir, "%s.stderr.log" % name)
        self.ready = None
        self.admin = self.bridge = self.cluster = None
        self.node_id = None
        self.exit_code = None
        self._stdout_lines = []
        self._lines = queue.Queue()
        self._failed = False
        self._closed = False
        self._log = open(self.log_path, "wb")
        # Relative to the node's dir (its cwd): messages read
        # "ebnode.json:L:C: ...".
        argv = [ebnode_bin(), "-c", os.path.basename(self.config_path)]
        argv += list(args)
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE,
                                         stderr=self._log,
                                         env=_merged_env(env), cwd=self.dir)
        except BaseException:
            self._log.close()
            if self._own_tmp:
                shutil.rmtree(self.dir, ignore_errors=True)
            raise
        _track(self.proc)
        # stdout is drained by a thread for the whole life of the process,
        # so a chatty node can never block on a full pipe.
        self._reader = threading.Thread(target=self._read_stdout,
                                        name="ebtest-%s-stdout" % name,
                                        daemon=True)
        self._reader.start()
        if wait_ready:
            try:
                self.wait_ready(ready_timeout)
            except BaseException:
                self._failed = True
                self.kill()
                raise

    # -- stdout and READY -------------------------------------------------

    def _read_stdout(self):
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            self._stdout_lines.append(line)
            self._lines.put(line)
        self._lines.put(None)  # EOF

    def wait_ready(self, timeout=20):
        """Waits (bounded) for the READY line and parses it. Returns self."""
        if self.ready is not None:
            return self
        deadline = time.monotonic() + scaled(timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EbNodeError("%s: no READY line within %.1fs"
                                  % (self.name, scaled(timeout)),
                                  self.proc.poll(), self.log_text())
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                code = self._wait_code(scaled(5))
                raise EbNodeError("%s: exited with code %r before READY"
                                  % (self.name, code), code, self.log_text())
            if line.startswith("READY"):
                self._set_ready(parse_ready(line))
                return self

    def _set_ready(self, r):
        self.ready = r
        self.admin, self.bridge, self.cluster = (
            r["admin"], r["bridge"], r["cluster"])
        self.node_id = r["node"]
        for k in ("admin", "bridge", "cluster"):
            hp = r[k]
            setattr(self, k + "_host", hp[0] if hp else None)
            setattr(self, k + "_port", hp[1] if hp else None)

    def stdout_lines(self):
        """Every stdout line read so far (READY included)."""
        return list(self._stdout_lines)

    # -- logs --------------------------------------------------------------

    def log_text(self):
        """The node's stderr so far, as text."""
        try:
            self._log.flush()
        except ValueError:
            pass
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_lines(self):
        """The node's stderr lines so far."""
        return self.log_text().splitlines()

    def wait_log(self, substring, timeout=10):
        """Waits (bounded, polling) until a stderr line contains substring;
        returns that line."""
        found = []

        def pred():
            for ln in self.log_lines():
                if substring in ln:
                    found.append(ln)
                    return True
            return False
        wait_until(pred, timeout, "%s: log line containing %r"
                   % (self.name, substring))
        return found[0]

    def dump_log(self, file=None):
        """Writes the stderr log to file (default sys.stderr)."""
        out = file or sys.stderr
        out.write("--- %s stderr (%s) ---\n%s\n--- end %s ---\n"
                  % (self.name, self.log_path, self.log_text(), self.name))
        out.flush()

    # -- lifecycle ---------------------------------------------------------

    @property
    def pid(self):
        return self.proc.pid

    def running(self):
        return self.proc.poll() is None

    def _wait_code(self, timeout):
        try:
            self.exit_code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        _untrack(self.proc)
        return self.exit_code

    def send_signal(self, sig):
        """Sends sig if the process is still running."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def wait_exit(self, timeout=10):
        """Waits (bounded) for the process to exit and returns its exit
        code (negative: killed by that signal). Raises EbNodeError on
        timeout (the process keeps running; stop() or kill() it)."""
        code = self._wait_code(scaled(timeout))
        if code is None:
            raise EbNodeError("%s: still running after %.1fs"
                              % (self.name, scaled(timeout)), None,
                              self.log_text())
        return code

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Sends sig, waits up to timeout for the exit, then SIGKILLs.
        Returns the exit code (negative if killed by a signal)."""
        if self.proc.poll() is None:
            self.send_signal(sig)
            code = self._wait_code(scaled(timeout))
            if code is None:
                self._failed = True
                sys.stderr.write("ebtest: %s did not exit %.1fs after %s, "
                                 "sending SIGKILL\n" % (
                                     self.name, scaled(timeout),
                                     signal.Signals(sig).name))
                self.kill()
        else:
            self._wait_code(scaled(5))
        self._finish()
        return self.exit_code

    def kill(self):
        """SIGKILLs the process and reaps it. Returns the exit code."""
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
        self._wait_code(scaled(10))
        self._finish()
        return self.exit_code

    def _finish(self):
        if self.proc.poll() is None:
            return
        _untrack(self.proc)
        self._reader.join(timeout=scaled(5))
        try:
            self.proc.stdout.close()
        except OSError:
            pass
        try:
            self._log.close()
        except OSError:
            pass

    def close(self):
        """Stops the process (if running) and removes the temp dir unless
        the run failed or EB_TEST_KEEP_TMP is set."""
        if self._closed:
            return
        self.stop()
        self._closed = True
        if self._failed or _keep_tmp() or not self._own_tmp:
            return
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._failed = True
            self.dump_log()
        self.close()
        return False

    def __repr__(self):
        return "EbNode(%s, pid=%s, ready=%r)" % (self.name, self.proc.pid,
                                                 self.ready)


def start_expect_failure(config, name="failing", args=(), env=None,
                         timeout=20):
    """Starts a node that must exit on its own within timeout (bad config,
    duplicate address, ...). Returns (exit code, stderr text). A node that
    is still running at the deadline is killed and EbNodeError raised."""
    node = EbNode(config, name=name, args=args, env=env, wait_ready=False)
    try:
        code = node._wait_code(scaled(timeout))
        if code is None:
            node._failed = True
            node.kill()
            raise EbNodeError("%s: expected to fail but still running "
                              "after %.1fs (stdout: %r)"
                              % (name, scaled(timeout),
                                 node.stdout_lines()), None,
                              node.log_text())
        node._finish()
        return code, node.log_text()
    finally:
        node.close()


# ---------------------------------------------------------------------------
# Bridge client.

class BridgeClient:
    """A raw client of the TCP event-bus bridge: 4-byte big-endian length
    + UTF-8 JSON object per frame. Timeouts raise TimeoutError; a peer close
    while waiting for a frame raises ConnectionError."""

    def __init__(self, host, port, tls_context=None, server_hostname=None,
                 connect_timeout=10):
        sock = socket.create_connection((host, port),
                                        timeout=scaled(connect_timeout))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls_context is not None:
            sock = tls_context.wrap_socket(
                sock, server_hostname=server_hostname or host)
        self.sock = sock
        self._buf = b""
        self._eof = False

    # -- sending -----------------------------------------------------------

    def send_raw(self, data):
        """Sends bytes exactly as given (no framing)."""
        self.sock.sendall(data)

    @staticmethod
    def encode(frame):
        if isinstance(frame, (bytes, bytearray)):
            body = bytes(frame)
        elif isinstance(frame, str):
            body = frame.encode("utf-8")
        else:
            body = json.dumps(frame, separators=(",", ":"),
                              ensure_ascii=False).encode("utf-8")
        return struct.pack(">I", len(body)) + body

    def send_frame(self, frame):
        """Sends one frame: a dict is JSON-encoded; str/bytes are sent as
        the payload verbatim (for malformed-JSON tests)."""
        self.sock.sendall(self.encode(frame))

    def send(self, address, body=None, headers=None, reply_address=None):
        f = {"type": "send", "address": address, "body": body}
        if headers is not None:
            f["headers"] = headers
        if reply_address is not None:
            f["replyAddress"] = reply_address
        self.send_frame(f)

    def publish(self, address, body=None, headers=None):
        f = {"type": "publish", "address": address, "body": body}
        if headers is not None:
            f["headers"] = headers
        self.send_frame(f)

    def register(self, address, headers=None):
        f = {"type": "register", "address": address}
        if headers is not None:
            f["headers"] = headers
        self.send_frame(f)

    def unregister(self, address, headers=None):
        f = {"type": "unregister", "address": address}
        if headers is not None:
            f["headers"] = headers
        self.send_frame(f)

    def ping(self):
        self.send_frame({"type": "ping"})

    # -- receiving ---------------------------------------------------------

    def _fill(self, deadline):
        """Reads more bytes into the buffer; False on timeout, raises
        ConnectionError on EOF."""
        if self._eof:
            raise ConnectionError("bridge connection closed by peer")
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return False
        if not data:
            self._eof = True
            raise ConnectionError("bridge connection closed by peer")
        self._buf += data
        return True

    def recv_frame_bytes(self, timeout=5):
        """Returns the next frame's payload bytes (without the length)."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            if len(self._buf) >= 4:
                (n,) = struct.unpack(">I", self._buf[:4])
                if len(self._buf) >= 4 + n:
                    payload = self._buf[4:4 + n]
                    self._buf = self._buf[4 + n:]
                    return payload
            if not self._fill(deadline):
                raise TimeoutError("no bridge frame within %.1fs"
                                   % scaled(timeout))

    def recv_frame(self, timeout=5):
        """Returns the next frame as a dict (bounded wait)."""
        return json.loads(self.recv_frame_bytes(timeout).decode("utf-8"))

    def recv_until(self, pred, timeout=5):
        """Reads frames until pred(frame) is true and returns that frame;
        frames read before it are returned in .skipped."""
        deadline = time.monotonic() + scaled(timeout)
        self.skipped = []
        while True:
            left = (deadline - time.monotonic()) / TIMEOUT_MULTIPLIER
            if left <= 0:
                raise TimeoutError("no matching bridge frame within %.1fs "
                                   "(skipped %r)" % (scaled(timeout),
                                                     self.skipped))
            f = self.recv_frame(left)
            if pred(f):
                return f
            self.skipped.append(f)

    def expect_no_frame(self, timeout=0.5):
        """Asserts that no complete frame arrives within timeout (a peer
        close is not a frame). Not scaled: this is a quiet period."""
        deadline = time.monotonic() + timeout
        while True:
            if len(self._buf) >= 4:
                (n,) = struct.unpack(">I", self._buf[:4])
                if len(self._buf) >= 4 + n:
                    raise AssertionError("unexpected bridge frame: %r"
                                         % self._buf[4:4 + n][:400])
            try:
                if not self._fill(deadline):
                    return
            except ConnectionError:
                return

    def wait_closed(self, timeout=5):
        """True if the peer closes the connection within timeout (frames
        arriving meanwhile are discarded), False otherwise."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            try:
                if not self._fill(deadline):
                    return False
            except ConnectionError:
                return True
            except OSError:  # reset by peer counts as closed
                return True
            self._buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# ---------------------------------------------------------------------------
# Admin HTTP.

class RecordingConsumer:
    """A bridge client registered on an address at node; a thread records
    every message frame it receives, in order, in .msgs (appends are
    atomic; read a snapshot with list(c.msgs))."""

    def __init__(self, node, address):
        self.c = BridgeClient(*node.bridge)
        self.c.register(address)
        self.msgs = []
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop:
            try:
                f = self.c.recv_frame(timeout=0.2)
            except TimeoutError:
                continue
            except (ConnectionError, OSError):
                return
            if f.get("type") == "message":
                self.msgs.append(f)

    def close(self):
        self.stop = True
        self.t.join(5)
        self.c.close()


def metric(node, name):
    """The value of the unlabelled metric name in node's /metrics."""
    st, text = admin_request(*node.admin, "GET", "/metrics")
    assert st == 200, st
    m = re.search(r"^%s (\d+)$" % re.escape(name), text, re.M)
    assert m is not None, "no %s in /metrics" % name
    return int(m.group(1))


def admin_request(host, port, method, path, token=None, body=None,
                  timeout=10, headers=None):
    """One HTTP/1.1 request to the admin endpoint. body: dict/list (sent as
    JSON), str or bytes. Returns (status, parsed JSON or text)."""
    conn = http.client.HTTPConnection(host, port, timeout=scaled(timeout))
    try:
        hdrs = dict(headers or {})
        # The admin endpoint refuses writes without a token unless they
        # carry this header (cross-site protection, docs/ADMIN.md), as
        # ebctl sends it; pass headers={"X-Ebnode-Admin": ""} to omit it.
        hdrs.setdefault("X-Ebnode-Admin", "1")
        if not hdrs["X-Ebnode-Admin"]:
            del hdrs["X-Ebnode-Admin"]
        data = None
        if body is not None:
            if isinstance(body, (dict, list)):
                data = json.dumps(body).encode("utf-8")
                hdrs.setdefault("Content-Type", "application/json")
            elif isinstance(body, str):
                data = body.encode("utf-8")
            else:
                data = bytes(body)
        if token is not None:
            hdrs["Authorization"] = "Bearer %s" % token
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        raw = resp.read()
        text = raw.decode("utf-8", errors="replace")
        ctype = resp.getheader("Content-Type", "") or ""
        if "json" in ctype or text[:1] in ("{", "["):
            try:
                return resp.status, json.loads(text)
            except ValueError:
                pass
        return resp.status, text
    finally:
        conn.close()


# ---------------------------------------------------------------------------
# ZooKeeper fixture.

def zk_connect_string():
    """The fixture's "127.0.0.1:PORT", read from the file named by env
    EB_ZK_CONNECT_FILE. Raises RuntimeError if it is not available."""
    path = os.environ.get("EB_ZK_CONNECT_FILE")
    if not path:
        raise RuntimeError("EB_ZK_CONNECT_FILE is not set (the test needs "
                           "FIXTURES_REQUIRED on the ZooKeeper fixture)")
    try:
        with open(path, encoding="utf-8") as f:
            s = f.read().strip()
    except OSError as e:
        raise RuntimeError("cannot read EB_ZK_CONNECT_FILE=%s: %s"
                           % (path, e))
    if not s:
        raise RuntimeError("EB_ZK_CONNECT_FILE=%s is empty" % path)
    return s


def unique_root():
    """A fresh ZooKeeper root path for one test: /ebtest/<uuid>."""
    return "/ebtest/%s" % uuid.uuid4().hex


# ---------------------------------------------------------------------------
# Misc.

def wait_until(pred, timeout=10, what="condition", interval=0.02):
    """Polls pred() until it returns a true value (returned) or the scaled
    timeout passes (AssertionError naming what). For conditions with no
    event to wait on; prefer reading a frame or a line when there is one."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s"
                                 % (scaled(timeout), what))
        time.sleep(interval)


def free_port():
    """A port that was free a moment ago on 127.0.0.1. Racy by nature:
    prefer port 0 in the config and the READY line."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
