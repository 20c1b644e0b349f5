#!/usr/bin/env python3
"""Makes a realistic JPEG image folder for the streaming input pipeline's tests and benchmarks
(docs/input-pipeline.md): <out>/train/<class>/<n>.jpg and <out>/test/<class>/<n>.jpg from
Fashion-MNIST (IDX, Debian's dataset-fashion-mnist) or CIFAR-10 (binary version), upscaled
(bicubic) to --size x --size RGB and written at JPEG quality --quality.

Needs Python 3 and Pillow (Debian python3-pil). Examples:
  bench/make_image_folder.py --out /tmp/fm64 --size 64 --train 60000 --test 10000
  bench/make_image_folder.py --out /tmp/fm224 --size 224 --train 60000 --test 10000
  bench/make_image_folder.py --source cifar10 --data ~/cifar-10-batches-bin --out /tmp/c224 --size 224
Never commit the images (the repository refuses files over 1 MiB and data sets)."""
import argparse
import gzip
import os
import struct
import sys

FASHION = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"]
CIFAR = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def read_maybe_gz(path):
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            with (gzip.open(p) if p.endswith(".gz") else open(p, "rb")) as f:
                return f.read()
    sys.exit(f"make_image_folder: {path}[.gz] does not exist; give the data folder with --data")


def idx_split(folder, stem_images, stem_labels):
    """Yields (label, mode, size, bytes) of an IDX pair (LeCun et al., MNIST file format)."""
    img = read_maybe_gz(os.path.join(folder, stem_images))
    lab = read_maybe_gz(os.path.join(folder, stem_labels))
    magic, n, rows, cols = struct.unpack(">IIII", img[:16])
    if magic != 0x803:
        sys.exit(f"make_image_folder: {stem_images}: not an IDX image file (magic {magic:#x})")
    px = rows * cols
    for i in range(n):
        yield lab[8 + i], "L", (cols, rows), img[16 + i * px:16 + (i + 1) * px]


def cifar_split(folder, files):
    """Yields (label, mode, size, bytes) of CIFAR-10 binary batches (1 label + 3x32x32 planes)."""
    for name in files:
        data = read_maybe_gz(os.path.join(folder, name))
        for off in range(0, len(data), 3073):
            rec = data[off:off + 3073]
            planes = rec[1:]
            rgb = bytes(b for i in range(1024) for b in (planes[i], planes[1024 + i], planes[2048 + i]))
            yield rec[0], "RGB", (32, 32), rgb


def write(split, out, names, count, size, quality, Image):
    made = 0
    for i, (label, mode, dims, raw) in enumerate(split):
        if made >= count:
            break
        d = os.path.join(out, names[label])
        os.makedirs(d, exist_ok=True)
        im = Image.frombytes(mode, dims, raw).convert("RGB").resize((size, size), Image.BICUBIC)
        im.save(os.path.join(d, f"{i:06d}.jpg"), quality=quality)
        made += 1
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", choices=["fashion-mnist", "cifar10"], default="fashion-mnist")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist", help="IDX or cifar-10-batches-bin folder")
    ap.add_argument("--out", required=True, help="folder to create (train/ and test/ below it)")
    ap.add_argument("--size", type=int, default=64, help="images are SIZE x SIZE pixels")
    ap.add_argument("--train", type=int, default=60000, help="training images (at most the source's)")
    ap.add_argument("--test", type=int, default=10000, help="test images (at most the source's)")
    ap.add_argument("--quality", type=int, default=90, help="JPEG quality")
    a = ap.parse_args()
    try:
        from PIL import Image
    except ImportError:
        sys.exit("make_image_folder: needs Pillow: apt-get install python3-pil (or pip install pillow)")
    if a.source == "fashion-mnist":
        names = FASHION
        tr = idx_split(a.data, "train-images-idx3-ubyte", "train-labels-idx1-ubyte")
        te = idx_split(a.data, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    else:
        names = CIFAR
        tr = cifar_split(a.data, [f"data_batch_{b}.bin" for b in range(1, 6)])
        te = cifar_split(a.data, ["test_batch.bin"])
    n_tr = write(tr, os.path.join(a.out, "train"), names, a.train, a.size, a.quality, Image)
    n_te = write(te, os.path.join(a.out, "test"), names, a.test, a.size, a.quality, Image)
    print(f"{a.out}: {n_tr} training and {n_te} test images, {a.size}x{a.size} RGB JPEG quality {a.quality}")


if __name__ == "__main__":
    main()
