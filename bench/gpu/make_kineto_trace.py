#!/usr/bin/env python3
"""Writes a small real Kineto trace for the tests of `trainscope analyze` (docs/analyze.md).

Run on the GPU host (PyTorch 2.x with CUDA); its --gzip output on an H200 with torch 2.11 is the
fixture tests/fixtures/trace/h200_torch211_cnn (tests/fixtures/trace/README.md). A tiny CNN
trains 6 steps under torch.profiler with schedule(wait=1, warmup=1, active=3) and
tensorboard_trace_handler, so the trace holds steps
ProfilerStep#2..#4 with CPU operators, CUDA runtime calls, kernels, copies and fills, a
DataLoader category (a DataLoader over an in-memory TensorDataset) and `deviceProperties`. With
`--gzip` the trace is written as .pt.trace.json.gz. Kept small (< 2 MB): no stacks, no shapes,
no memory events; it prints the file and its size and exits 1 when it is larger.

  python3 bench/gpu/make_kineto_trace.py OUT_DIR [--gzip]
"""
import glob
import os
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, TensorDataset

LIMIT_BYTES = 2 * 1024 * 1024


def model():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(8 * 14 * 14, 10))


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out, use_gzip = sys.argv[1], "--gzip" in sys.argv[2:]
    if not torch.cuda.is_available():
        sys.exit("make_kineto_trace.py: no CUDA device; run it on the GPU host")
    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    net = model().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    data = TensorDataset(torch.randn(6 * 32, 1, 28, 28), torch.randint(0, 10, (6 * 32,)))
    loader = DataLoader(data, batch_size=32, pin_memory=True)
    os.makedirs(out, exist_ok=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(out, worker_name="h200", use_gzip=use_gzip),
                 record_shapes=False, profile_memory=False, with_stack=False) as prof:
        for x, y in loader:  # 6 steps
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=False)  # a memset per gradient
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
            prof.step()
    torch.cuda.synchronize()
    status = 0
    for path in sorted(glob.glob(os.path.join(out, "*.pt.trace.json*"))):
        size = os.path.getsize(path)
        print(f"{path}: {size} bytes (torch {torch.__version__}, {torch.cuda.get_device_name(0)})")
        if size > LIMIT_BYTES:
            print(f"  larger than {LIMIT_BYTES} bytes: too large for a fixture", file=sys.stderr)
            status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
