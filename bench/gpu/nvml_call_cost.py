#!/usr/bin/env python3
"""What each NVML call of trainscope's sampler costs in CPU time, not only in wall time (issue 13).

`build/telemetry_cost` gives a whole slow poll's thread CPU time (on the H200 host 7.7 ms of CPU in
47.8 ms of wall time, bench/RESULTS.md tenth session); this script splits it by call. It calls
each NVML function of src/telemetry/nvml_source.cpp's slow poll (total energy, PCIe TX and RX
throughput, the process list, a GPM sample) and one fast call (power) REPEATS times, 0.1 s apart,
through ctypes (bench/gpu/nvml_ctypes.py, NVML index 0), and prints per call the median wall
time, the median thread CPU time (time.thread_time_ns: CPU this thread used, so a call that
sleeps in the driver costs wall time only, and one that spins costs both) and how many calls
failed (a nonzero NVML return code; a failed call is timed too). Not measured: the slow poll's
nvmlGpmMetricsGet (its struct is large; telemetry_cost's whole slow poll includes it), and the
calls run each in their own batch, not in a poll's order. Work the driver does outside the
calling thread is not in its thread CPU time.

A call whose CPU time is near its wall time holds a core for that long: on a CPU run that uses
every core it delays the intra-op thread whose core it takes, and every other thread waiting for
that one at the step's barrier.

Usage: python3 bench/gpu/nvml_call_cost.py [--repeats 20]   (run from bench/gpu; needs only
libnvidia-ml.so.1, not PyTorch)
Prints one JSON object.
"""
import argparse
import json
import statistics
import time

from nvml_ctypes import NVML


def cost(fn, repeats):
    wall, cpu, failed = [], [], 0
    for _ in range(repeats):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        rc = fn()
        cpu.append((time.thread_time_ns() - c0) / 1e3)
        wall.append((time.perf_counter_ns() - w0) / 1e3)
        if rc is None:
            return {"skipped": "this GPU has no GPM (nvmlGpmSampleAlloc failed)"}
        failed += rc != 0
        time.sleep(0.1)
    return {"wall_us_median": statistics.median(wall), "cpu_us_median": statistics.median(cpu),
            "cpu_us_max": max(cpu), "calls": repeats, "failed_calls": failed}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error(f"--repeats {a.repeats}: use a whole number >= 1")
    try:
        n = NVML()
    except (OSError, AssertionError) as e:
        raise SystemExit(f"nvml_call_cost.py: NVML did not start ({e}): run it on a host with the NVIDIA driver")
    calls = {
        "power (fast field)": n.power,
        "total energy": n.energy,
        "PCIe TX throughput": lambda: n.pcie(0),
        "PCIe RX throughput": lambda: n.pcie(1),
        "process list": n.processes,
        "GPM sample": n.gpm_sample,
    }
    print(json.dumps({"benchmark": "nvml_call_cost", "calls": {k: cost(f, a.repeats) for k, f in calls.items()}}, indent=2))


if __name__ == "__main__":
    main()
