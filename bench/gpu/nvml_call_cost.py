#!/usr/bin/env python3
"""What each NVML call of trainscope's sampler costs in CPU time, not only in wall time (issue 13).

`build/telemetry_cost` gives a whole slow poll's thread CPU time (on the H200 host 7.7 ms of CPU in
47.8 ms of wall time, bench/RESULTS.md tenth session); this script splits it by call. It calls
each NVML function of src/telemetry/nvml_source.cpp's slow poll (total energy, PCIe TX and RX
throughput, the process list, a GPM sample) and one fast call (power) REPEATS times, 0.1 s apart,
through ctypes (the NVML class of nvml_stall.py, NVML index 0), and prints per call the median
wall time and the median thread CPU time (time.thread_time_ns: CPU this thread used, so a call
that sleeps in the driver costs wall time only, and one that spins costs both).

A call whose CPU time is near its wall time holds a core for that long: on a CPU run that uses
every core it delays the intra-op thread whose core it takes, and every other thread waiting for
that one at the step's barrier.

Usage: python3 bench/gpu/nvml_call_cost.py [--repeats 20]   (a GPU host with libnvidia-ml.so.1)
Prints one JSON object.
"""
import argparse
import ctypes
import json
import statistics
import time

from nvml_stall import NVML


def cost(fn, repeats):
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        fn()
        cpu.append((time.thread_time_ns() - c0) / 1e3)
        wall.append((time.perf_counter_ns() - w0) / 1e3)
        time.sleep(0.1)
    return {"wall_us_median": statistics.median(wall), "cpu_us_median": statistics.median(cpu),
            "cpu_us_max": max(cpu), "calls": repeats}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error(f"--repeats {a.repeats}: use a whole number >= 1")
    n = NVML()
    v = ctypes.c_uint()
    calls = {
        "power (fast field)": lambda: n.lib.nvmlDeviceGetPowerUsage(n.h, ctypes.byref(v)),
        "total energy": n.energy,
        "PCIe TX throughput": lambda: n.pcie(0),
        "PCIe RX throughput": lambda: n.pcie(1),
        "process list": n.processes,
        "GPM sample": n.gpm_sample,
    }
    print(json.dumps({"benchmark": "nvml_call_cost", "calls": {k: cost(f, a.repeats) for k, f in calls.items()}}, indent=2))


if __name__ == "__main__":
    main()
