#!/usr/bin/env python3
"""Summarises the traces of a run folder: event counts by category/name prefix (GPU checks)."""
import collections, glob, gzip, json, sys

for path in sorted(glob.glob(sys.argv[1] + "/traces/*.json.gz")):
    with gzip.open(path, "rt") as f:
        t = json.load(f)
    ev = t["traceEvents"] if isinstance(t, dict) else t
    cats = collections.Counter(e.get("cat", e.get("ph")) for e in ev)
    print(path, len(ev), "events", dict(cats.most_common(12)))
    kernels = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    print("  gpu events:", len(kernels), [e["name"][:60] for e in kernels[:5]])
