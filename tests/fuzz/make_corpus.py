#!/usr/bin/env python3
"""Writes the small seed corpora in tests/fuzz/corpus/<target>/ (valid and invalid inputs).
Re-run after changing it; the files are committed so the fuzzers start from them."""
import os, struct, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures", "telemetry")


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def idx_images(n, r, c, magic=0x803, body=None):
    return struct.pack(">IIII", magic, n, r, c) + (bytes(i % 251 for i in range(n * r * c)) if body is None else body)


def idx_labels(n, vals=None):
    return struct.pack(">II", 0x801, n) + bytes(vals if vals is not None else [i % 10 for i in range(n)])


def png(w, h, color_type=2):
    ch = {0: 1, 2: 3, 6: 4}[color_type]
    raw = b"".join(b"\0" + bytes((x * 40 + y * 7 + k) % 256 for x in range(w) for k in range(ch)) for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def bmp(w, h):
    row = (w * 3 + 3) // 4 * 4
    pix = b"".join(bytes((x * 30 + y) % 256 for x in range(w * 3)) + b"\0" * (row - w * 3) for y in range(h))
    return (b"BM" + struct.pack("<IHHI", 54 + len(pix), 0, 0, 54) +
            struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(pix), 2835, 2835, 0, 0) + pix)


put("fuzz_idx_images", "valid_2x3x3", idx_images(2, 3, 3))
put("fuzz_idx_images", "wrong_magic", idx_images(1, 2, 2, magic=0x12345678))
put("fuzz_idx_images", "truncated", idx_images(3, 4, 4)[:30])
put("fuzz_idx_images", "labels_file", idx_labels(4))
put("fuzz_idx_images", "huge_declared", idx_images(0xFFFFFFFF, 4096, 4096, body=b""))
put("fuzz_idx_labels", "valid_10_classes", b"\x09" + idx_labels(8))
put("fuzz_idx_labels", "out_of_range", b"\x01" + idx_labels(3, [0, 1, 7]))
put("fuzz_idx_labels", "trailing", b"\xff" + idx_labels(2) + b"xx")
put("fuzz_idx_labels", "images_file", b"\x09" + idx_images(1, 2, 2))
put("fuzz_cifar10", "one_record", bytes([3]) + bytes(range(256)) * 12)
put("fuzz_cifar10", "label_ten", bytes([10]) + bytes(3072))
put("fuzz_cifar10", "short", bytes([1]) + bytes(100))
put("fuzz_decode_image", "png_rgb_4x3", b"\x07" + png(4, 3, 2))
put("fuzz_decode_image", "png_grey_2x2", b"\x00" + png(2, 2, 0))
put("fuzz_decode_image", "png_rgba_3x3", b"\x15" + png(3, 3, 6))
put("fuzz_decode_image", "bmp_3x2", b"\x03" + bmp(3, 2))
put("fuzz_decode_image", "png_truncated", b"\x01" + png(4, 4)[:40])
put("fuzz_decode_image", "garbage", b"\x02this is not an image")
put("fuzz_toml_config", "valid",
    'models = ["mlp", "cnn"]\nbatch_sizes = [64, 128]\nrepeats = 1\npreset = "quick"\n'
    '[data]\nformat = "synthetic"\nsynthetic_train = 64\n[train]\noptimizer = "sgd"\nlearning_rate = 0.01\nepochs = 2\n')
put("fuzz_toml_config", "folder", '[data]\nformat = "folder"\npath = "/x"\nimage_size = 32\nimage_channels = 3\n'
    'test_fraction = 0.25\n')
put("fuzz_toml_config", "typo", "batch_size = [64]\n")
put("fuzz_toml_config", "syntax", 'models = ["mlp"\nrepeats = 2\n')
put("fuzz_toml_config", "wrong_type", 'repeats = "three"\n[train]\nepochs = 1.5\n')
for rel in ["proc/stat", "proc/self/stat", "proc/self/status", "proc/meminfo", "proc/cpuinfo"]:
    with open(os.path.join(FIX, rel), "rb") as f:
        put("fuzz_proc_parse", rel.replace("/", "_"), f.read())
put("fuzz_proc_parse", "garbage", "cpu  1 2 x 4\ncpu0 18446744073709551615 1 1 1 1\n(a) R 1\nVmRSS: 12 MB\n")
put("fuzz_proc_parse", "proc_self_cgroup", "12:cpu,cpuacct:/docker/abc\n7:blkio,memory:/docker/abc\n0::/init.scope\n")
chunks = []
for rel in ["proc/stat", "proc/self/stat", "proc/self/status", "proc/meminfo", "proc/cpuinfo"]:
    with open(os.path.join(FIX, rel), "rb") as f:
        chunks.append(f.read())
chunks += [b"package-0\n", b"dram\n", b"123456789\n", b"262143328850\n", b"coretemp\n", b"Package id 0\n",
           b"45000\n", b"x86_pkg_temp\n"]
put("fuzz_telemetry_sources", "fixture_files", b"\xff".join(chunks))
put("fuzz_telemetry_sources", "numbers", b"\xff".join([b"1000\n", b"package-0\n", b"99\n", b"!", b"coretemp\n"]))
put("fuzz_telemetry_sources", "empty_and_eacces", b"\xff!\xff\xff")
