#!/usr/bin/env bash
# Prints the module graph as the code has it: for every module folder, the
# other modules whose private headers it includes ("#include "<m>/..."),
# layered by the longest path down to common (a module sits one layer above
# the highest module it uses). docs/ARCHITECTURE.md shows this output; run
# it after moving code to redraw the figure. Public headers
# (include/ebnode/*.h) are open to every module and are not edges.
#   tools/module-graph.sh           print the graph
#   tools/module-graph.sh --check   fail when docs/ARCHITECTURE.md's figure
#                                   differs from it (CI runs this)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 - "$@" <<'PY'
import os, re, sys
mods = ["common", "tls", "zk", "stream", "member", "http", "election",
        "admin", "link", "cluster", "conf", "bridge", "ingress", "eventbus",
        "shared", "vertx", "web", "node", "ctl"]
inc = re.compile(r'^#include "([a-z_]+)/', re.M)
edges = {}
for m in mods:
    uses = set()
    for f in sorted(os.listdir(m)):
        if f.endswith((".c", ".h")):
            with open(os.path.join(m, f), encoding="utf-8") as fh:
                uses |= set(inc.findall(fh.read()))
    edges[m] = sorted(u for u in uses if u != m and u in mods)
layer = {}
def depth(m):
    if m not in layer:
        layer[m] = 1 + max((depth(u) for u in edges[m]), default=-1)
    return layer[m]
for m in mods:
    depth(m)
lines = {}
for m in mods:
    lines.setdefault(layer[m], []).append(m)
out = []
for l in sorted(lines, reverse=True):
    for m in lines[l]:
        out.append("%d  %-9s -> %s" % (l, m, " ".join(edges[m]) or "(none)"))
if sys.argv[1:] == ["--check"]:
    row = re.compile(r"^(\d+  \S+ +-> .*?)(?:\s{2,}\(.*\))?\s*$")
    with open("docs/ARCHITECTURE.md", encoding="utf-8") as fh:
        doc = [row.match(l).group(1).rstrip() for l in fh.read().splitlines()
               if row.match(l)]
    if doc != out:
        sys.stderr.write("module-graph: docs/ARCHITECTURE.md differs from the "
                         "code; the code says:\n" + "\n".join(out) + "\n")
        sys.exit(1)
    print("module-graph: docs/ARCHITECTURE.md matches the code (%d modules)"
          % len(out))
else:
    print("\n".join(out))
PY
