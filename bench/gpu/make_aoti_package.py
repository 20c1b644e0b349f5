#!/usr/bin/env python3
"""Makes a torch.export / AOTInductor package (.pt2) of a resnet18 for `trainscope infer` (issue 38;
the `aoti` stage of bench/gpu/build_and_run.sh). PyTorch >= 2.6 with CUDA.

The model is trainscope's built-in resnet18 shape (CIFAR-style 3x3 stride-1 stem, no max-pool,
src/workload/model.h) for Fashion-MNIST's 1 x 28 x 28 inputs and 10 classes (the GPU host's
$DATA), written here in Python with fresh
weights (latency does not depend on them), exported with a dynamic batch dimension (1..1024),
compiled by AOTInductor for cuda and packaged.

  python3 bench/gpu/make_aoti_package.py OUT.pt2
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(s, cin, cout, stride):
        super().__init__()
        s.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); s.b1 = nn.BatchNorm2d(cout)
        s.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); s.b2 = nn.BatchNorm2d(cout)
        s.sc = nn.Sequential()
        if stride != 1 or cin != cout:
            s.sc = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(s, x):
        y = F.relu(s.b1(s.c1(x)))
        return F.relu(s.b2(s.c2(y)) + s.sc(x))


class ResNet18(nn.Module):
    def __init__(s, classes=10):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(1, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        s.layers = nn.Sequential(*layers)
        s.fc = nn.Linear(512, classes)

    def forward(s, x):
        return s.fc(torch.flatten(F.adaptive_avg_pool2d(s.layers(s.stem(x)), 1), 1))


def main():
    out = sys.argv[1]
    if not torch.cuda.is_available():
        sys.exit("make_aoti_package.py: no CUDA device; run it on the GPU host")
    torch.manual_seed(0)
    model = ResNet18().cuda().eval()
    example = torch.randn(8, 1, 28, 28, device="cuda")
    batch = torch.export.Dim("batch", min=1, max=1024)
    with torch.no_grad():
        ep = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
        path = torch._inductor.aoti_compile_and_package(ep, package_path=out)
    print("%s: resnet18 1x28x28, 10 classes, batch 1..1024, cuda (torch %s)" % (path, torch.__version__))


if __name__ == "__main__":
    main()
