"""promtext: a strict parser of the Prometheus text exposition format 0.0.4
(stdlib only), for the admin endpoint's GET /metrics tests.

It accepts what the format allows and rejects, with the line number, what
ebnode must never write:

- "# HELP name text" and "# TYPE name type" at most once per family, both
  before the family's first sample (ebnode's rule: every family has both);
  other "#" lines are comments; blank lines are ignored.
- metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*
  (not "__"-prefixed), no label twice in one sample;
- label values in double quotes with only \\\\, \\" and \\n as escapes;
- values as Go's ParseFloat reads them (also +Inf, -Inf, NaN), an optional
  integer timestamp;
- the samples of a family form one contiguous group; a histogram's
  _bucket/_sum/_count (a summary's _sum/_count) belong to it;
- no series twice (name plus label set);
- counters: names end in _total (ebnode's rule), values >= 0;
- histograms: every series has le-labelled buckets, strictly increasing le,
  cumulative (non-decreasing) counts, a +Inf bucket equal to _count, a _sum
  and a _count; "le" appears nowhere else.

parse(text) returns a Metrics object: .families {name: Family(type, help,
samples)}, and .value(name, **labels) for one sample's value.
"""

import math
import re

NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
FLOAT_RE = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class ParseError(AssertionError):
    pass


class Family:
    def __init__(self, name):
        self.name = name
        self.type = None
        self.help = None
        self.samples = []  # (sample name, {labels}, value)
        self.closed = False  # a later family started: no more samples


class Metrics:
    def __init__(self):
        self.families = {}
        self.series = {}  # (name, frozenset(labels)) -> value

    def value(self, name, **labels):
        key = (name, frozenset(labels.items()))
        if key not in self.series:
            raise KeyError("no series %s%r" % (name, labels))
        return self.series[key]

    def get(self, name, default=None, **labels):
        try:
            return self.value(name, **labels)
        except KeyError:
            return default

    def samples(self, name):
        """[(labels dict, value)] of every series with this sample name."""
        return [(dict(k[1]), v) for k, v in self.series.items()
                if k[0] == name]


def _fail(lineno, msg, line):
    raise ParseError("metrics line %d: %s: %r" % (lineno, msg, line))


def _parse_float(s, lineno, line):
    if not FLOAT_RE.fullmatch(s):
        _fail(lineno, "invalid value %r" % s, line)
    return float(s)


def _parse_labels(s, i, lineno, line):
    """s[i] == '{'; returns (labels, index after '}')."""
    labels = {}
    i += 1
    while True:
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        m = LABEL_RE.match(s, i)
        if not m:
            _fail(lineno, "invalid label name", line)
        lname = m.group(0)
        if lname.startswith("__"):
            _fail(lineno, "reserved label name %r" % lname, line)
        if lname in labels:
            _fail(lineno, "label %r twice" % lname, line)
        i = m.end()
        if s[i:i + 2] != '="':
            _fail(lineno, "expected =\" after label name", line)
        i += 2
        out = []
        while True:
            if i >= len(s):
                _fail(lineno, "unterminated label value", line)
            ch = s[i]
            if ch == "\\":
                nxt = s[i + 1:i + 2]
                if nxt == "\\":
                    out.append("\\")
                elif nxt == '"':
                    out.append('"')
                elif nxt == "n":
                    out.append("\n")
                else:
                    _fail(lineno, "invalid escape \\%s" % nxt, line)
                i += 2
                continue
            if ch == '"':
                i += 1
                break
            out.append(ch)
            i += 1
        labels[lname] = "".join(out)
        if i < len(s) and s[i] == ",":
            i += 1
            continue
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        _fail(lineno, "expected , or } after a label", line)


def _family_of(sample, families):
    """The family a sample name belongs to (histogram/summary suffixes)."""
    if sample in families:
        return sample
    for suffix, types in (("_bucket", ("histogram",)),
                          ("_sum", ("histogram", "summary")),
                          ("_count", ("histogram", "summary"))):
        if sample.endswith(suffix):
            base = sample[:-len(suffix)]
            f = families.get(base)
            if f is not None and f.type in types:
                return base
    return sample


def _unescape_help(s, lineno, line):
    """HELP text allows only \\\\ and \\n as escapes."""
    out = []
    i = 0
    while i < len(s):
        if s[i] == "\\":
            nxt = s[i + 1:i + 2]
            if nxt not in ("\\", "n"):
                _fail(lineno, "invalid escape in HELP", line)
            out.append("\\" if nxt == "\\" else "\n")
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def _meta(m, line, lineno, current):
    parts = line.split(" ", 3)
    if len(parts) < 3 or parts[1] not in ("HELP", "TYPE"):
        return current  # a comment
    kind, name = parts[1], parts[2]
    if not NAME_RE.fullmatch(name):
        _fail(lineno, "invalid metric name in %s" % kind, line)
    rest = parts[3] if len(parts) > 3 else ""
    f = m.families.get(name)
    if f is None:
        f = m.families[name] = Family(name)
    if f.samples:
        _fail(lineno, "%s after samples of %s" % (kind, name), line)
    if current is not None and current is not f:
        current.closed = True
    if kind == "HELP":
        if f.help is not None:
            _fail(lineno, "second HELP for %s" % name, line)
        f.help = _unescape_help(rest, lineno, line)
    else:
        if f.type is not None:
            _fail(lineno, "second TYPE for %s" % name, line)
        if rest not in TYPES:
            _fail(lineno, "invalid type %r" % rest, line)
        f.type = rest
    return f


def _sample(m, line, lineno, current):
    mt = NAME_RE.match(line)
    if not mt:
        _fail(lineno, "invalid metric name", line)
    name = mt.group(0)
    i = mt.end()
    labels = {}
    if i < len(line) and line[i] == "{":
        labels, i = _parse_labels(line, i, lineno, line)
    if i >= len(line) or line[i] != " ":
        _fail(lineno, "expected a space before the value", line)
    fields = line[i + 1:].split(" ")
    if len(fields) not in (1, 2) or fields[0] == "":
        _fail(lineno, "expected value [timestamp]", line)
    value = _parse_float(fields[0], lineno, line)
    if len(fields) == 2 and not re.fullmatch(r"-?[0-9]+", fields[1]):
        _fail(lineno, "invalid timestamp", line)
    fname = _family_of(name, m.families)
    f = m.families.get(fname)
    if f is None or f.type is None or f.help is None:
        _fail(lineno, "sample of %s before its HELP and TYPE" % fname, line)
    if f.closed or (current is not None and current is not f):
        _fail(lineno, "samples of %s are not one group" % fname, line)
    if "le" in labels and not (f.type == "histogram" and
                               name == fname + "_bucket"):
        _fail(lineno, "le label outside a histogram bucket", line)
    if f.type == "histogram" and name == fname:
        _fail(lineno, "histogram sample without a suffix", line)
    key = (name, frozenset(labels.items()))
    if key in m.series:
        _fail(lineno, "duplicate series", line)
    m.series[key] = value
    f.samples.append((name, labels, value))
    return f


def _check_counter(f):
    if not f.name.endswith("_total"):
        raise ParseError("counter %s does not end in _total" % f.name)
    for name, labels, v in f.samples:
        if math.isnan(v) or v < 0:
            raise ParseError("counter %s%r is %r" % (name, labels, v))


def _check_histogram(f):
    groups = {}
    for name, labels, v in f.samples:
        rest = frozenset((k, x) for k, x in labels.items() if k != "le")
        g = groups.setdefault(rest, {"buckets": [], "sum": None,
                                     "count": None})
        if name == f.name + "_bucket":
            if "le" not in labels:
                raise ParseError("%s bucket without le" % f.name)
            g["buckets"].append((float(labels["le"]), labels["le"], v))
        elif name == f.name + "_sum":
            g["sum"] = v
        elif name == f.name + "_count":
            g["count"] = v
    if not groups:
        raise ParseError("histogram %s has no samples" % f.name)
    for rest, g in groups.items():
        b = g["buckets"]
        if not b or g["sum"] is None or g["count"] is None:
            raise ParseError("histogram %s%r lacks buckets, _sum or "
                             "_count" % (f.name, dict(rest)))
        les = [x[0] for x in b]
        if les != sorted(les) or len(set(les)) != len(les):
            raise ParseError("histogram %s: le not strictly increasing: %r"
                             % (f.name, [x[1] for x in b]))
        if b[-1][1] != "+Inf":
            raise ParseError("histogram %s: last bucket is le=%r, not +Inf"
                             % (f.name, b[-1][1]))
        counts = [x[2] for x in b]
        if any(c2 < c1 for c1, c2 in zip(counts, counts[1:])):
            raise ParseError("histogram %s: buckets not cumulative: %r"
                             % (f.name, counts))
        if counts[-1] != g["count"]:
            raise ParseError("histogram %s: +Inf bucket %r != _count %r"
                             % (f.name, counts[-1], g["count"]))
        if g["sum"] < 0 or math.isnan(g["sum"]):
            raise ParseError("histogram %s: _sum %r" % (f.name, g["sum"]))


def parse(text, prefix=None):
    """Parses text strictly; raises ParseError (an AssertionError) with
    the offending line. With prefix, every family name must start with
    it."""
    if text and not text.endswith("\n"):
        raise ParseError("metrics text does not end with a newline")
    m = Metrics()
    current = None
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if line.strip() == "":
            continue
        if line != line.strip(" ") or "\t" in line or "\r" in line:
            _fail(lineno, "stray whitespace", line)
        if line.startswith("#"):
            current = _meta(m, line, lineno, current)
        else:
            current = _sample(m, line, lineno, current)
    for f in m.families.values():
        if f.type is None or f.help is None:
            raise ParseError("family %s lacks HELP or TYPE" % f.name)
        if prefix is not None and not f.name.startswith(prefix):
            raise ParseError("family %s does not start with %s"
                             % (f.name, prefix))
        if f.type == "counter":
            _check_counter(f)
        elif f.type == "histogram":
            _check_histogram(f)
    return m
