#!/usr/bin/env python3
"""Counts the launch-to-kernel flows (Kineto's "ac2g" s/f pairs, docs/profiling.md) in the traces
of a CUDA run folder: trainscope's traces/*.trace.json.gz and Kineto's traces/*.pt.trace.json.
Exit 1 when a trainscope trace with GPU events has no flow, or a flow end has no start."""
import glob, gzip, json, sys

bad = 0
for path in sorted(glob.glob(sys.argv[1] + "/traces/*.json*")):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        t = json.load(f)
    ev = t["traceEvents"] if isinstance(t, dict) else t
    starts = {e["id"] for e in ev if e.get("cat") == "ac2g" and e.get("ph") == "s"}
    ends = [e for e in ev if e.get("cat") == "ac2g" and e.get("ph") == "f"]
    gpu = sum(1 for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    unmatched = sum(1 for e in ends if e["id"] not in starts)
    bp = sum(1 for e in ends if e.get("bp") == "e")
    print(f"{path}: {gpu} GPU events, {len(starts)} flow starts, {len(ends)} flow ends ({bp} with bp e), "
          f"{unmatched} ends without a start")
    if unmatched or (path.endswith(".trace.json.gz") and gpu and not ends):
        bad = 1
sys.exit(bad)
