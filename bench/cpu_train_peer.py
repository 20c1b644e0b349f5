#!/usr/bin/env python3
"""A small CPU training script for the cost of `trainscope measure` on the CPU (bench/measure_cost_cpu.sh).

It knows nothing of trainscope: an MLP (784-512-256-10) trained with SGD on random data, batch 64,
one intra-op thread (the 2-core VM is shared), STEPS optimizer steps after WARMUP discarded ones.
It prints one JSON line with its own throughput, {"img_per_s": ..., "steps": ...}, which
bench/gpu/measure_check.py `pairs` reads. Runs with Debian's python3-torch 1.13.

  python3 bench/cpu_train_peer.py [STEPS=3000] [WARMUP=50]
"""
import json
import sys
import time

import torch
from torch import nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 50
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))


def step():
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


for _ in range(warmup):
    step()
t0 = time.perf_counter()
for _ in range(steps):
    step()
dt = time.perf_counter() - t0
print(json.dumps({"img_per_s": steps * 64 / dt, "steps": steps, "seconds": dt}), flush=True)
