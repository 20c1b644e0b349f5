#!/usr/bin/env python3
"""Python PyTorch baseline for trainscope's training throughput (bench/compare_pytorch.sh).

Trains the same network as trainscope (same layer shapes, see src/workload/model.h) on the
same IDX data with Adam and cross-entropy, batches gathered from an in-memory tensor, and
prints one JSON line with the steady-state samples/s after `--warmup` steps.

--variant takes trainscope's variant names (docs/variants.md): eager, or a '+' combination of
graphs, bf16, tf32, channels_last. On CUDA every variant is the "tuned" recipe a performance-minded
user writes: the data set resident on the GPU, batches gathered there, fused Adam; graphs adds
the whole step (forward, loss, backward, Adam with capturable=True) captured once in a CUDA graph
after 3 warm-up steps on a side stream, static inputs filled by copy_ before each replay; bf16 is
autocast(bfloat16); channels_last converts the model and each batch; tf32 sets
torch.backends.{cuda.matmul,cudnn}.allow_tf32. --host-gather keeps the older recipe (batches
gathered on the host, pinned, copied), which is what trainscope's eager step does.
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
    ap.add_argument("--model", default="cnn", choices=["mlp", "cnn", "resnet18"],
                    help="the Python twins of trainscope's models (vgg11 has none here)")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--variant", default="eager")
    ap.add_argument("--host-gather", action="store_true")
    ap.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    ap.add_argument("--train-metrics", action="store_true",
                    help="sum the training loss and correct count on the device every step, as trainscope does "
                         "(src/train/step_sums.h), to compare like for like")
    a = ap.parse_args()
    if a.steps <= a.warmup:
        ap.error(f"--steps ({a.steps}) must exceed --warmup ({a.warmup}): the steady rate is timed after the warm-up")
    parts = set() if a.variant == "eager" else set(a.variant.split("+"))
    unknown = parts - {"graphs", "bf16", "tf32", "channels_last"}
    if unknown:
        raise SystemExit(f"unknown variant part(s) {sorted(unknown)}; use eager or graphs, bf16, tf32, channels_last")
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
    cuda = dev.type == "cuda"
    if ("graphs" in parts or "tf32" in parts) and not cuda:
        raise SystemExit(f"variant {a.variant} needs a CUDA device")
    torch.backends.cudnn.benchmark = a.cudnn_benchmark
    if "tf32" in parts:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    fmt = torch.channels_last if "channels_last" in parts else torch.contiguous_format
    model = model.to(memory_format=fmt)
    tuned = cuda and not a.host_gather
    opt = (torch.optim.Adam(model.parameters(), lr=1e-3, fused=True, capturable="graphs" in parts) if tuned
           else torch.optim.Adam(model.parameters(), lr=1e-3))
    if tuned:
        X, Y = X.to(dev), Y.to(dev)
    elif cuda:
        X, Y = X.pin_memory(), Y.pin_memory()
    perm = torch.randperm(n, device=X.device)

    def batch(step):
        s = (step * a.batch_size) % (n - a.batch_size)
        idx = perm[s:s + a.batch_size]
        bx, by = X[idx], Y[idx]
        if cuda and not tuned:
            bx, by = bx.pin_memory().to(dev, non_blocking=True), by.pin_memory().to(dev, non_blocking=True)
        return bx, by

    sums = torch.zeros(2, dtype=torch.float64, device=dev)

    def train_step(bx, by):
        opt.zero_grad(set_to_none="graphs" not in parts)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled="bf16" in parts):
            logits = model(bx.contiguous(memory_format=fmt)).float()
            loss = F.cross_entropy(logits, by)
        loss.backward()
        opt.step()
        if a.train_metrics:  # the same figures as trainscope's step sums, as its ATen path computes them (add_step_sums_aten)
            with torch.no_grad():
                sums[0].add_(loss.detach(), alpha=by.size(0))
                sums[1].add_(logits.detach().argmax(1).eq(by).sum())
        return loss

    one = lambda step: train_step(*batch(step))
    if "graphs" in parts:  # PyTorch's whole-network capture recipe (docs: notes/cuda.html#cuda-graphs)
        sx, sy = batch(0)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                train_step(sx, sy)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=False)
        with torch.cuda.graph(g):
            sloss = train_step(sx, sy)

        def one(step):
            bx, by = batch(step)
            sx.copy_(bx, non_blocking=True)
            sy.copy_(by, non_blocking=True)
            g.replay()
            return sloss
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    t_warm = None
    for step in range(a.steps):
        if step == a.warmup:
            sync(); t_warm = time.perf_counter()
        one(step)
    sync()
    dt = time.perf_counter() - t_warm
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "model": a.model, "batch_size": a.batch_size, "device": a.device, "variant": a.variant,
                      "recipe": "host-gather" if not tuned else "tuned",
                      "steady_samples_per_s": (a.steps - a.warmup) * a.batch_size / dt}))


if __name__ == "__main__":
    main()
