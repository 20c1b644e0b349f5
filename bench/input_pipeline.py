#!/usr/bin/env python3
"""The Python baseline of bench/input_pipeline.sh: torch.utils.data.DataLoader over a
torchvision ImageFolder with the transforms trainscope's stream applies (docs/input-pipeline.md):
RandomResizedCrop(size) (size >= 128) or RandomCrop(size, padding=4), RandomHorizontalFlip,
ToTensor, Normalize. Prints one JSON object like bench/input_bench.cpp; cpu_s: CPU time of this
process and its loader workers (getrusage SELF + CHILDREN), so images_per_cpu_s is the rate per
busy core even on a loaded machine.
Usage: input_pipeline.py FOLDER [size=64] [workers=1] [batch=64] [images=0 (all)]"""
import json
import random
import resource
import sys
import time

import torch
import torchvision
from torchvision import transforms as T


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    size, workers, batch, limit = (int(a) for a in (sys.argv[2:6] + ["64", "1", "64", "0"][len(sys.argv) - 2:]))
    torch.set_num_threads(1)
    crop = T.RandomResizedCrop(size) if size >= 128 else T.RandomCrop(size, padding=4)
    tf = T.Compose([crop, T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize([0.5] * 3, [0.25] * 3)])
    ds = torchvision.datasets.ImageFolder(root, transform=tf)
    if 0 < limit < len(ds):
        idx = list(range(len(ds)))
        random.Random(1).shuffle(idx)
        ds = torch.utils.data.Subset(ds, idx[:limit])
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                                     prefetch_factor=2, persistent_workers=False)
    def cpu_s():  # this process and its finished children (the loader workers exit after the epoch)
        return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                   for f in ("ru_utime", "ru_stime"))
    c0, t0 = cpu_s(), time.perf_counter()
    images = 0
    for x, _ in dl:
        images += x.shape[0]
    wall = time.perf_counter() - t0
    del dl  # join the workers so that their CPU time is counted
    cpu = cpu_s() - c0
    print(json.dumps({"impl": "pytorch", "folder": root, "size": size, "workers": workers, "batch": batch,
                      "images": images, "wall_s": round(wall, 3), "images_per_s": round(images / wall, 1),
                      "images_per_s_per_worker": round(images / wall / workers, 1), "cpu_s": round(cpu, 3),
                      "images_per_cpu_s": round(images / cpu, 1),
                      "torch": torch.__version__, "torchvision": torchvision.__version__}))


if __name__ == "__main__":
    main()
