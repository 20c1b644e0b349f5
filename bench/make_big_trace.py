#!/usr/bin/env python3
"""Writes a large synthetic Kineto trace for timing `trainscope analyze` (docs/analyze.md, memory).

The events of a real trace (default: the H200 torch 2.11 fixture,
tests/fixtures/trace/h200_torch211_cnn) are repeated, each copy shifted in time past the previous
one and with its correlation and External ids and step numbers renumbered, until the file
reaches SIZE_MB. The object is written as a stream (the template is the only thing in memory),
so the writer itself stays small.

  python3 bench/make_big_trace.py OUT.pt.trace.json [SIZE_MB=500] [TEMPLATE]
"""
import glob
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def shifted(ev, dt_us, k, ids):
    e = dict(ev)
    if "ts" in e:
        e["ts"] = float(e["ts"]) + dt_us
    args = dict(e.get("args") or {})
    for key in ("correlation", "External id"):
        if key in args:
            args[key] = int(args[key]) + k * ids
    if args:
        e["args"] = args
    name = e.get("name", "")
    m = re.match(r"ProfilerStep#(\d+)$", name)
    if m:
        e["name"] = "ProfilerStep#%d" % (int(m.group(1)) + k * 1000)
    if e.get("ph") == "f" or e.get("ph") == "s":
        e["id"] = int(e.get("id", 0)) + k * ids
    return e


def main():
    out = sys.argv[1]
    target = int(float(sys.argv[2]) * 1e6) if len(sys.argv) > 2 else 500_000_000
    template = sys.argv[3] if len(sys.argv) > 3 else glob.glob(
        os.path.join(HERE, "..", "tests", "fixtures", "trace", "h200_torch211_cnn", "*.pt.trace.json.gz"))[0]
    doc = load(template)
    events = [e for e in doc["traceEvents"] if e.get("ph") in ("X", "i", "s", "f")]
    ts = [float(e["ts"]) for e in events if "ts" in e]
    span = max(float(e["ts"]) + float(e.get("dur", 0)) for e in events if "ts" in e) - min(ts) + 10.0
    ids = 1 + max([int((e.get("args") or {}).get(k, 0)) for e in events for k in ("correlation", "External id")] + [0])
    head = {k: v for k, v in doc.items() if k != "traceEvents"}
    with open(out, "w") as f:
        f.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        k, first = 0, True
        while f.tell() < target:
            for ev in events:
                f.write(("" if first else ",\n") + json.dumps(shifted(ev, k * span, k, ids)))
                first = False
            k += 1
        f.write("\n]}\n")
    print("%s: %.0f MB, %d copies of %d events (%s)" % (out, os.path.getsize(out) / 1e6, k, len(events), template))


if __name__ == "__main__":
    main()
