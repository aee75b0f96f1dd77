#!/usr/bin/env python3
"""Latency-percentile plot of ebbench results, as a self-contained SVG
(stdlib only: no gnuplot or matplotlib needed).

    bench/plot.py RESULTS.jsonl OUT.svg [--title TEXT]

RESULTS.jsonl holds ebbench --json lines (bench/run.sh and bench/cluster.sh
write them). One panel per mode; one line per label (baseline, ebnode, ...);
each point is the median over the runs of that percentile. x: percentile on
a "nines" scale (50 %, 90 %, 99 %, 99.9 %, 99.99 %), y: latency in µs, log.
Rows whose label starts with "mem-" (memory scenarios) are ignored.
"""

import json
import math
import statistics
import sys
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
          "#8c564b"]
MODES = ["rr", "pipe", "fire", "egress"]
PW, PH = 460, 300             # panel size
ML, MR, MT, MB = 64, 16, 34, 44  # panel margins


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                if not r.get("label", "").startswith("mem-") and \
                        r.get("percentiles_us"):
                    rows.append(r)
    return rows


def curves(rows, mode):
    """{label: [(q, median µs)]} for one mode, 0 < q < 1 only."""
    out = {}
    labels = []
    for r in rows:
        if r["mode"] == mode and r["label"] not in labels:
            labels.append(r["label"])
    for label in labels:
        runs = [r["percentiles_us"] for r in rows
                if r["mode"] == mode and r["label"] == label]
        pts = []
        for i, (q, _) in enumerate(runs[0]):
            if 0 < q < 1:
                v = statistics.median(run[i][1] for run in runs)
                if v > 0:
                    pts.append((q, v))
        if pts:
            out[label] = pts
    return out


def nines(q):
    return math.log10(1.0 / (1.0 - q))


def panel(x0, y0, mode, data, colors):
    svg = []
    xs_max = 4.0  # 99.99 %
    xs_min = nines(0.25)
    vals = [v for pts in data.values() for _, v in pts]
    lo = 10 ** math.floor(math.log10(min(vals)))
    hi = 10 ** math.ceil(math.log10(max(vals)))
    if hi <= lo:
        hi = lo * 10
    w, h = PW - ML - MR, PH - MT - MB

    def px(q):
        return x0 + ML + (nines(q) - xs_min) / (xs_max - xs_min) * w

    def py(v):
        return y0 + MT + h - (math.log10(v) - math.log10(lo)) / \
            (math.log10(hi) - math.log10(lo)) * h

    svg.append('<text x="%d" y="%d" font-size="14" font-weight="bold">%s'
               '</text>' % (x0 + ML, y0 + 20, escape(mode)))
    svg.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
               'stroke="#888"/>' % (x0 + ML, y0 + MT, w, h))
    for q, text in ((0.5, "50%"), (0.9, "90%"), (0.99, "99%"),
                    (0.999, "99.9%"), (0.9999, "99.99%")):
        x = px(q)
        svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" '
                   'stroke="#ddd"/>' % (x, y0 + MT, x, y0 + MT + h))
        svg.append('<text x="%.1f" y="%d" font-size="11" '
                   'text-anchor="middle">%s</text>' % (x, y0 + MT + h + 15,
                                                       text))
    d = lo
    while d <= hi * 1.0001:
        y = py(d)
        svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" '
                   'stroke="#ddd"/>' % (x0 + ML, y, x0 + ML + w, y))
        label = ("%g" % d) if d < 1e6 else ("%.0e" % d)
        svg.append('<text x="%d" y="%.1f" font-size="11" '
                   'text-anchor="end">%s</text>' % (x0 + ML - 4, y + 4,
                                                    label))
        d *= 10
    svg.append('<text x="%d" y="%d" font-size="11" text-anchor="middle">'
               'percentile</text>' % (x0 + ML + w // 2, y0 + PH - 6))
    svg.append('<text x="%d" y="%d" font-size="11" transform="rotate(-90 '
               '%d %d)" text-anchor="middle">latency (µs)</text>'
               % (x0 + 14, y0 + MT + h // 2, x0 + 14, y0 + MT + h // 2))
    for k, (label, pts) in enumerate(data.items()):
        color = colors[label]
        path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", px(q),
                                         py(v))
                        for i, (q, v) in enumerate(pts))
        svg.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"/>'
                   % (path, color))
        ly = y0 + MT + 14 + 15 * k
        svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" '
                   'stroke-width="2"/>' % (x0 + ML + 8, ly - 4, x0 + ML + 26,
                                           ly - 4, color))
        svg.append('<text x="%d" y="%d" font-size="11">%s</text>'
                   % (x0 + ML + 30, ly, escape(label)))
    return svg


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    title = ""
    if len(argv) >= 5 and argv[3] == "--title":
        title = argv[4]
    rows = load(argv[1])
    modes = [m for m in MODES if any(r["mode"] == m for r in rows)]
    if not modes:
        sys.stderr.write("plot.py: no results with percentiles in %s\n"
                         % argv[1])
        return 1
    labels = []
    for r in rows:
        if r["label"] not in labels:
            labels.append(r["label"])
    colors = {l: COLORS[i % len(COLORS)] for i, l in enumerate(labels)}
    cols = 2 if len(modes) > 1 else 1
    nrows = (len(modes) + cols - 1) // cols
    top = 30 if title else 0
    width, height = cols * PW, nrows * PH + top
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>']
    if title:
        svg.append('<text x="%d" y="20" font-size="15" text-anchor="middle">'
                   '%s</text>' % (width // 2, escape(title)))
    for i, mode in enumerate(modes):
        svg += panel((i % cols) * PW, top + (i // cols) * PH, mode,
                     curves(rows, mode), colors)
    svg.append("</svg>")
    with open(argv[2], "w") as f:
        f.write("\n".join(svg) + "\n")
    return 0


def failover_timeline(path, title, series, highlight, bucket_ms=10,
                      t_from=-0.5, marks=()):
    """Failover timeline (bench/failover.py): acknowledged requests per
    bucket_ms bucket around a leader kill at t = 0, as an SVG at path.
    series: one list of counts per round (bucket k starts at
    t_from + k * bucket_ms / 1000 s); every round is drawn thin and grey,
    series[highlight] bold. marks: (t_s, text, color) vertical lines (the
    kill at 0 is always drawn)."""
    W, H = 920, 360
    L, R, T, B = 64, 20, 40, 46
    w, h = W - L - R, H - T - B
    n = max(len(s) for s in series)
    t_to = t_from + n * bucket_ms / 1000.0
    top = max(max(s) for s in series) or 1
    step = 10 ** math.floor(math.log10(top)) if top >= 10 else 1
    top = (int(top / step) + 1) * step

    def px(t):
        return L + (t - t_from) / (t_to - t_from) * w

    def py(v):
        return T + h - v / float(top) * h

    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15" text-anchor="middle">%s'
           '</text>' % (W // 2, escape(title)),
           '<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
           'stroke="#888"/>' % (L, T, w, h)]
    t = math.ceil(t_from * 2) / 2.0
    while t <= t_to + 1e-9:
        svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"'
                   '/>' % (px(t), T, px(t), T + h))
        svg.append('<text x="%.1f" y="%d" font-size="11" text-anchor='
                   '"middle">%g</text>' % (px(t), T + h + 15, t))
        t += 0.5
    for k in range(0, 6):
        v = top * k / 5.0
        svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"'
                   '/>' % (L, py(v), L + w, py(v)))
        svg.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end">'
                   '%g</text>' % (L - 4, py(v) + 4, v))
    svg.append('<text x="%d" y="%d" font-size="11" text-anchor="middle">'
               'time since the signal to the leader (s)</text>'
               % (L + w // 2, H - 8))
    svg.append('<text x="14" y="%d" font-size="11" transform="rotate(-90 14 '
               '%d)" text-anchor="middle">acks per %d ms</text>'
               % (T + h // 2, T + h // 2, bucket_ms))

    def line(s, color, width):
        pts = " ".join("%s%.1f,%.1f" % (
            "M" if k == 0 else "L",
            px(t_from + (k + 0.5) * bucket_ms / 1000.0), py(v))
            for k, v in enumerate(s))
        return ('<path d="%s" fill="none" stroke="%s" stroke-width="%s"/>'
                % (pts, color, width))
    for k, s in enumerate(series):
        if k != highlight:
            svg.append(line(s, "#bbb", "0.7"))
    svg.append(line(series[highlight], COLORS[0], "1.6"))
    for k, (t, text, color) in enumerate([(0.0, "signal", "#d62728")] +
                                         list(marks)):
        svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" '
                   'stroke-width="1.5" stroke-dasharray="%s"/>'
                   % (px(t), T, px(t), T + h, color,
                      "none" if k == 0 else "5,3"))
        right = px(t) > L + 0.55 * w  # label left of the line
        svg.append('<text x="%.1f" y="%d" font-size="11" fill="%s" '
                   'text-anchor="%s">%s</text>'
                   % (px(t) - 4 if right else px(t) + 4, T + 14 + 14 * k,
                      color, "end" if right else "start", escape(text)))
    svg.append('<text x="%d" y="%d" font-size="11" fill="#888">grey: every '
               'round; blue: the median round</text>' % (L + w - 290,
                                                         T + h - 8))
    svg.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
