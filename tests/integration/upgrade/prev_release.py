"""The previous release's ebnode, built from its recorded commit (issue 27).

docs/RELEASES.md lists every release (version, full commit, link
protocols); the newest row is the release the tree upgrades from.
prev_ebnode() builds that commit's ebnode target once into a cache
directory keyed by the commit (git archive | tar -x, cmake, build only
ebnode) and returns the binary's path; later runs reuse it. A lock file
serialises two test processes that want the same build. It raises
unittest.SkipTest when the commit is not in the clone's history (a shallow
clone, a source tarball) with a message that says so.
"""
import fcntl
import os
import re
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get(
    "EB_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..", "..")))


def releases():
    """[(version, commit, protocols)] from docs/RELEASES.md, in order."""
    path = os.path.join(SOURCE_DIR, "docs", "RELEASES.md")
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^\|\s*(\d+\.\d+\.\d+)\s*\|\s*([0-9a-f]{40})\s*\|"
                         r"\s*([^|]*)\|", line)
            if m:
                rows.append((m.group(1), m.group(2), m.group(3).strip()))
    return rows


def previous_release():
    rows = releases()
    if not rows:
        raise unittest.SkipTest("docs/RELEASES.md lists no release")
    return rows[-1]


def _have_commit(commit):
    r = subprocess.run(["git", "-C", SOURCE_DIR, "cat-file", "-e",
                        commit + "^{commit}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
    return r.returncode == 0


def prev_ebnode(commit, cache=None, log=print):
    """The path of the ebnode built from commit (building it first when the
    cache has none)."""
    cache = cache or os.environ.get("EB_PREV_CACHE") or os.path.join(
        SOURCE_DIR, "build", "prev")
    top = os.path.join(cache, commit[:12])
    binary = os.path.join(top, "build", "node", "ebnode")
    if os.path.exists(binary):
        return binary
    if not _have_commit(commit):
        raise unittest.SkipTest(
            "release commit %s is not in this clone's history (shallow "
            "clone or source tarball?): cannot build the previous release; "
            "fetch it (git fetch --unshallow) to run the upgrade test"
            % commit)
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, ".lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(binary):
            return binary
        src = os.path.join(top, "src")
        if not os.path.isdir(src):
            tmp = src + ".tmp"
            subprocess.run(["rm", "-rf", tmp], check=True)
            os.makedirs(tmp)
            archive = subprocess.Popen(
                ["git", "-C", SOURCE_DIR, "archive", commit],
                stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", tmp], stdin=archive.stdout,
                           check=True)
            archive.stdout.close()
            if archive.wait() != 0:
                raise RuntimeError("git archive %s failed" % commit)
            os.rename(tmp, src)
        log("building the previous release %s in %s (once per commit)"
            % (commit[:12], top))
        build = os.path.join(top, "build")
        out = os.path.join(top, "build.log")
        with open(out, "w", encoding="utf-8") as f:
            for cmd in (["cmake", "-S", src, "-B", build,
                         "-DCMAKE_C_COMPILER=gcc",
                         "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                        ["cmake", "--build", build, "-j2", "--target",
                         "ebnode"]):
                r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                                   check=False)
                if r.returncode != 0:
                    raise RuntimeError("building %s failed (%s): see %s"
                                       % (commit[:12], " ".join(cmd), out))
    return binary
