#!/usr/bin/env bash
# Decode + augment throughput of trainscope's streaming image folder (build/input_bench) against
# Python's torch.utils.data.DataLoader with torchvision transforms (bench/input_pipeline.py), on
# the same JPEG folders and worker counts, in one invocation (docs/input-pipeline.md#benchmark).
# Makes the folders with bench/make_image_folder.py when they are missing (Fashion-MNIST,
# quality 90). Results: bench/RESULTS.md.
#   bash bench/input_pipeline.sh                     # 64x64 and 224x224, 1 worker and all cores
#   IMAGES=20000 WORKERS="1 2 8" SIZES="224" bash bench/input_pipeline.sh
# Env: BIN (build/input_bench), PY (python with torchvision; default /usr/bin/python3, Debian's
# python3-torchvision), DATA_DIR (folders, default /tmp/trainscope-bench), IMAGES (per run,
# default 4000), TRAIN (images per folder, default IMAGES), BATCH (64), SRC (the Fashion-MNIST
# folder make_image_folder.py reads; default its own default).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/build/input_bench}
PY=${PY:-/usr/bin/python3}
DATA_DIR=${DATA_DIR:-/tmp/trainscope-bench}
IMAGES=${IMAGES:-4000}
TRAIN=${TRAIN:-$IMAGES}
BATCH=${BATCH:-64}
SIZES=${SIZES:-"64 224"}
WORKERS=${WORKERS:-"1 $(nproc)"}
[[ -x $BIN ]] || { echo "input_pipeline.sh: $BIN not found; build first (cmake --build build --target input_bench)" >&2; exit 1; }
"$PY" -c 'import torchvision, PIL' 2>/dev/null || { echo "input_pipeline.sh: $PY lacks torchvision/Pillow (apt-get install python3-torchvision python3-pil, or set PY)" >&2; exit 1; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(hostname) $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for size in $SIZES; do
  dir=$DATA_DIR/fm$size
  if [[ ! -d $dir/train ]]; then
    "$PY" "$root/bench/make_image_folder.py" --out "$dir" --size "$size" --train "$TRAIN" --test 100 ${SRC:+--data "$SRC"} >&2
  fi
  for w in $WORKERS; do
    "$BIN" "$dir/train" "$size" "$w" "$BATCH" "$IMAGES"
    "$PY" "$root/bench/input_pipeline.py" "$dir/train" "$size" "$w" "$BATCH" "$IMAGES"
  done
done
