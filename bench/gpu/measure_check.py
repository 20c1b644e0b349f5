#!/usr/bin/env python3
"""`trainscope measure` against what the measured Python peer prints itself (issue 38; the
`measure` stage of bench/gpu/build_and_run.sh).

  measure_check.py run RUN_DIR EXPECTED_STEPS
      the run folder's steps, steps/s and items/s (measure.json) beside the throughput the script
      printed in stdout.log (its JSON lines: tokens_per_s of bench/lm_peer.py train, img_per_s of
      peer_best.py), the optimizer steps it took (EXPECTED_STEPS: warm-up + timed steps), and the
      program's GPU memory against the device's.
  measure_check.py pairs LOG
      LOG holds lines "measured <json>" and "plain <json>" (the script's own JSON line, from
      alternating runs with and without `measure`): the median of the script's throughput in each
      and the cost of being measured, % = 100 * (1 - measured / plain).
"""
import json
import statistics
import sys


def rate(line):
    j = json.loads(line)
    return j.get("tokens_per_s") or j.get("img_per_s")


def script_lines(path):
    out = []
    for line in open(path):
        line = line.strip()
        if line.startswith("{") and ("tokens_per_s" in line or "img_per_s" in line):
            out.append(line)
    return out


def run(run_dir, expected_steps):
    m = json.load(open(run_dir + "/measure.json"))
    printed = [rate(l) for l in script_lines(run_dir + "/stdout.log")]
    h = (m.get("telemetry") or {}).get("headline") or {}
    print(json.dumps({
        "run": run_dir, "outcome": m["outcome"], "steps": m["steps"], "expected_steps": expected_steps,
        "steps_match": m["steps"] == expected_steps, "steps_per_s": m["steps_per_s"],
        "items_per_s": m["items_per_s"], "script_printed": printed,
        "ratio_measure_to_script": (m["items_per_s"] / printed[-1]) if printed and m["items_per_s"] else None,
        "program_gpu_mem_bytes_max": h.get("process_mem_bytes_max"), "device_mem_used_bytes_max": h.get("mem_used_bytes_max"),
        "profile": m.get("profile"), "notes": m["notes"]}))


def pairs(log):
    got = {"measured": [], "plain": []}
    for line in open(log):
        kind, _, rest = line.strip().partition(" ")
        if kind in got and rest.startswith("{"):
            got[kind].append(rate(rest))
    med = {k: statistics.median(v) for k, v in got.items() if v}
    cost = 100 * (1 - med["measured"] / med["plain"]) if len(med) == 2 else None
    print(json.dumps({"pairs": min(len(got["measured"]), len(got["plain"])), "measured": got["measured"],
                      "plain": got["plain"], "median": med, "cost_pct": cost}))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], int(sys.argv[3]))
    else:
        pairs(sys.argv[2])
