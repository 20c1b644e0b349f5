#!/usr/bin/env python3
"""Which GPU fields a run folder's telemetry.csv.gz holds inside each run's training window.

Usage: run_devices_check.py RUN_FOLDER
Since NVML's slow fields are read only for the run's GPU (docs/telemetry.md, "Slow fields only
for the run's GPU"), a cpu run's window should hold gpu0's fast fields (power_w) but no
energy_j, pcie_* or sm_activity_pct rows, and a cuda:0 run's window (widened by 2 s either side:
its first slow read comes at the run's start, before its first epoch) all of them. Prints one line
per run and exits 1 when a window holds what it should not or lacks what it should.
"""
import csv
import gzip
import json
import sys

SLOW = ("energy_j", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "process_mem_bytes", "sm_activity_pct")


def main(folder):
    runs = json.load(open(f"{folder}/results.json"))["runs"]
    with gzip.open(f"{folder}/telemetry.csv.gz", "rt") as f:
        rows = [(int(r["t_ns"]), r["device"], r["metric"]) for r in csv.DictReader(f)]
    bad = 0
    for r in runs:
        t0, t1 = r["epochs"][0]["start_ns"], r["epochs"][-1]["end_ns"]
        gpu_run = r["device"].startswith("cuda")
        if gpu_run:  # the first slow read comes at the run's start, before its first epoch: 2 s either side
            t0, t1 = t0 - 2e9, t1 + 2e9
        got = sorted({m for t, d, m in rows if d == "gpu0" and t0 <= t <= t1})
        slow = [m for m in got if m in SLOW]
        ok = ("power_w" in got) and (bool(slow) == gpu_run)
        bad += not ok
        h = (r.get("telemetry") or {}).get("headline") or {}
        energy = (f"energy_method {h.get('energy_method')}, short window {h.get('energy_short_window')}, "
                  f"{h.get('energy_j')} J (power integration {h.get('energy_power_integration_j')} J, "
                  f"sources differ {h.get('energy_sources_diff_pct')} %)")
        print(f"{r['run_id']}: gpu0 slow fields in the window: {', '.join(slow) or 'none'}; "
              f"fast power_w: {'yes' if 'power_w' in got else 'no'}; {energy}; {'ok' if ok else 'WRONG'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
