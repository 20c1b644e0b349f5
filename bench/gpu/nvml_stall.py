#!/usr/bin/env python3
"""Does an NVML poll stall a launch-bound training loop on the same GPU? (issue 13)

Runs without a trainscope build, on the GPU host's PyTorch: a small CNN (the shape of
trainscope's `cnn`, src/models) trains eagerly on random 28x28 batches while a thread calls
NVML through ctypes with most of the calls trainscope's NVML source makes
(src/telemetry/nvml_source.cpp; not GetFieldValues, the memory clock, clocks-event reasons or
GPM metrics; return codes unchecked; NVML index 0 taken as CUDA device 0, true on a one-GPU host):
fast (utilisation, power, temperature, SM clock, memory) every 0.1 s, slow (total energy,
PCIe TX and RX throughput, the process list, a GPM sample) every 1 s.

Two measurements:
  1. stalls: every step synchronises the device, so a step's host time is its device time; each
     NVML call is timed, and the steps that overlap a call of each kind are compared with the
     steps that overlap none (median step ms). A call that blocks the GPU or the launching
     thread shows as overlapping steps as long as the call.
  2. blocks: the ordinary asynchronous loop in alternating ~2 s blocks, NVML thread off / fast
     fields only / fast + slow, random order per round; the median over rounds of each mode's
     samples/s over the off block's of the same round.

Usage: python3 bench/gpu/nvml_stall.py [--rounds 10] [--block-s 2] [--batch 128]
Prints one JSON object per measurement and a summary line.
"""
import argparse
import json
import random
import statistics
import threading
import time

import torch
import torch.nn as nn

from nvml_ctypes import NVML


class Poller(threading.Thread):
    """Calls NVML like trainscope's sampler; records (kind, t0, t1) of each call, perf_counter s."""

    def __init__(self, nvml, slow):
        super().__init__(daemon=True)
        self.nvml, self.slow, self.calls, self.stop_flag = nvml, slow, [], threading.Event()

    def timed(self, kind, fn, *a):
        t0 = time.perf_counter()
        fn(*a)
        self.calls.append((kind, t0, time.perf_counter()))

    def run(self):
        last_slow = -1e9
        nxt = time.perf_counter()
        while not self.stop_flag.is_set():
            self.timed("fast", self.nvml.fast)
            if self.slow and nxt - last_slow >= 1.0:
                last_slow = nxt
                self.timed("energy", self.nvml.energy)
                self.timed("pcie_tx", self.nvml.pcie, 0)
                self.timed("pcie_rx", self.nvml.pcie, 1)
                self.timed("processes", self.nvml.processes)
                self.timed("gpm", self.nvml.gpm_sample)
            nxt += 0.1
            self.stop_flag.wait(max(0.0, nxt - time.perf_counter()))


def make_step(batch):
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    x = torch.randn(batch, 1, 28, 28, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def stalls(step, nvml, seconds):
    p = Poller(nvml, slow=True)
    spans = []
    p.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        spans.append((t0, time.perf_counter()))
    p.stop_flag.set()
    p.join()
    out = {}
    calls = p.calls
    for kind in sorted({c[0] for c in calls}):
        ks = [(a, b) for k, a, b in calls if k == kind]
        hit = [1e3 * (s1 - s0) for s0, s1 in spans if any(a < s1 and s0 < b for a, b in ks)]
        out[kind] = {"calls": len(ks), "call_ms_median": round(1e3 * statistics.median(b - a for a, b in ks), 3),
                     "overlapping_steps": len(hit),
                     "overlapping_step_ms_median": round(statistics.median(hit), 3) if hit else None}
    clean = [1e3 * (s1 - s0) for s0, s1 in spans if not any(a < s1 and s0 < b for _, a, b in calls)]
    out["no_call"] = {"steps": len(clean), "step_ms_median": round(statistics.median(clean), 3)}
    return out


def block(step, batch, seconds, poller):
    if poller:
        poller.start()
    torch.cuda.synchronize()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if poller:
        poller.stop_flag.set()
        poller.join()
    return n * batch / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--block-s", type=float, default=2.0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--stall-s", type=float, default=15.0)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    nvml = NVML()
    step = make_step(a.batch)
    block(step, a.batch, 3.0, None)  # warm-up: cuDNN autotuning, clocks up
    print(json.dumps({"bench": "nvml_stall", "measurement": "stalls", **stalls(step, nvml, a.stall_s)}), flush=True)
    rng = random.Random(1)
    ratios = {"fast": [], "fast+slow": []}
    for r in range(a.rounds):
        modes = ["off", "fast", "fast+slow"]
        rng.shuffle(modes)
        got = {}
        for m in modes:
            poller = None if m == "off" else Poller(nvml, slow=(m == "fast+slow"))
            got[m] = block(step, a.batch, a.block_s, poller)
        for m in ratios:
            ratios[m].append(got[m] / got["off"])
        print(json.dumps({"bench": "nvml_stall", "round": r, **{k: round(v) for k, v in got.items()}}), flush=True)
    summary = {m: round(statistics.median(v), 4) for m, v in ratios.items()}
    below = {m: sum(x < 1 for x in v) for m, v in ratios.items()}
    print(f"nvml_stall cnn b{a.batch} on {torch.cuda.get_device_name(0)}: median over {a.rounds} rounds of "
          f"samples/s with the NVML thread / without it: fast fields {summary['fast']} ({below['fast']} rounds below 1), "
          f"fast + slow {summary['fast+slow']} ({below['fast+slow']} rounds below 1)")


if __name__ == "__main__":
    main()
