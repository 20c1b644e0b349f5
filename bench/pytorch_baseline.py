#!/usr/bin/env python3
"""Python PyTorch baseline for trainscope's training throughput (bench/compare_pytorch.sh).

Trains the same network as trainscope (same layer shapes, see src/workload/model.h) on the
same IDX data with Adam and cross-entropy, batches gathered from an in-memory tensor, and
prints one JSON line with the steady-state samples/s after `--warmup` steps.
"""
import argparse, gzip, json, os, struct, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 0x803:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, 1, rows, cols)
    return np.frombuffer(data, np.uint8, offset=8).astype(np.int64)


def find(folder, stem):
    for s in ("", ".gz"):
        p = os.path.join(folder, stem + s)
        if os.path.exists(p):
            return p
    raise SystemExit(f"{folder}: no {stem}")


class Mlp(nn.Module):
    def __init__(self, d, k):
        super().__init__(); self.fc1 = nn.Linear(d, 128); self.fc2 = nn.Linear(128, k)
    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Cnn(nn.Module):
    def __init__(self, c, h, w, k):
        super().__init__()
        self.conv1 = nn.Conv2d(c, 32, 3, padding=1); self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * (h // 4) * (w // 4), 128); self.fc2 = nn.Linear(128, k)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2); x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Block(nn.Module):
    def __init__(self, i, o, s):
        super().__init__()
        self.conv1 = nn.Conv2d(i, o, 3, s, 1, bias=False); self.bn1 = nn.BatchNorm2d(o)
        self.conv2 = nn.Conv2d(o, o, 3, 1, 1, bias=False); self.bn2 = nn.BatchNorm2d(o)
        self.shortcut = (nn.Sequential(nn.Conv2d(i, o, 1, s, bias=False), nn.BatchNorm2d(o))
                         if s != 1 or i != o else None)
    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet18(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.stem = nn.Conv2d(c, 64, 3, 1, 1, bias=False); self.bn = nn.BatchNorm2d(64)
        layers, i = [], 64
        for n, w in enumerate((64, 128, 256, 512)):
            layers += [Block(i, w, 2 if n else 1), Block(w, w, 1)]; i = w
        self.layers = nn.Sequential(*layers); self.fc = nn.Linear(512, k)
    def forward(self, x):
        x = self.layers(F.relu(self.bn(self.stem(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    x = read_idx(find(a.data, "train-images-idx3-ubyte")).astype(np.float32) / 255.0
    y = read_idx(find(a.data, "train-labels-idx1-ubyte"))
    x = (x - x.mean()) / x.std()
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
    dev = torch.device(a.device)
    n, c, h, w = X.shape
    k = int(Y.max()) + 1
    model = {"mlp": lambda: Mlp(c * h * w, k), "cnn": lambda: Cnn(c, h, w, k),
             "resnet18": lambda: ResNet18(c, k)}[a.model]().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    if dev.type == "cuda":
        X, Y = X.pin_memory(), Y.pin_memory()
    perm = torch.randperm(n)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    t_warm = None
    for step in range(a.steps):
        if step == a.warmup:
            sync(); t_warm = time.perf_counter()
        s = (step * a.batch_size) % (n - a.batch_size)
        idx = perm[s:s + a.batch_size]
        bx, by = X[idx], Y[idx]
        if dev.type == "cuda":
            bx, by = bx.pin_memory().to(dev, non_blocking=True), by.pin_memory().to(dev, non_blocking=True)
        loss = F.cross_entropy(model(bx), by)
        opt.zero_grad(); loss.backward(); opt.step()
    sync()
    dt = time.perf_counter() - t_warm
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "model": a.model, "batch_size": a.batch_size, "device": a.device,
                      "steady_samples_per_s": (a.steps - a.warmup) * a.batch_size / dt}))


if __name__ == "__main__":
    main()
