#!/usr/bin/env bash
# Trains the same model, data, batch size and thread count through trainscope and through
# Python PyTorch in one invocation and prints the samples/s ratio (trainscope / PyTorch).
#   bench/compare_pytorch.sh [--trainscope PATH] [--python PY] [--device cpu|cuda:0]
#                            [--threads N] [--steps N] [--models mlp,cnn] [--batch-sizes 64,128]
#                            [--variants eager,bf16,graphs,graphs+bf16] [--cudnn-benchmark]
# --cudnn-benchmark turns cuDNN autotuning on for both sides (trainscope --cudnn-benchmark,
# torch.backends.cudnn.benchmark = True); off by default on both, as in PyTorch.
# --python-train-metrics makes the Python side also sum the training loss and accuracy on the
# device every step, as trainscope always does (src/train/step_sums.h): like-for-like work.
# Each variant (docs/variants.md) runs on both sides: trainscope --variants V and
# pytorch_baseline.py --variant V (on CUDA the tuned Python recipe: data on the GPU, fused Adam;
# graphs = whole-step capture with capturable Adam). GPU-only variants on the CPU print n/a.
# --python-malloc default leaves the Python side's glibc malloc at its moving thresholds; by
# default it gets the mmap threshold trainscope's run fixed for itself, read from that run's
# provenance.host_allocator, through MALLOC_MMAP_THRESHOLD_, and trimming off through a 4 GiB
# MALLOC_TRIM_THRESHOLD_ (docs/configuration.md#host-memory-allocator), so that both sides
# allocate alike and the ratio is the trainers', not the allocators'.
# On the CPU machine PY defaults to /usr/bin/python3 (Debian's python3-torch 1.13: the same
# LibTorch as trainscope's build). Telemetry, profiling and inference are switched off in
# trainscope so that both sides do the same work.
set -euo pipefail
cd "$(dirname "$0")/.."
TS=./build/trainscope; PY=/usr/bin/python3; DEV=cpu; THREADS=$(nproc); STEPS=300
MODELS=mlp,cnn; BATCHES=64,128; DATA=/usr/share/datasets/fashion-mnist; VARIANTS=eager; BENCH=(); PYX=()
PY_MALLOC=fixed
while (($#)); do
  case $1 in --cudnn-benchmark|--python-train-metrics) ;; *) [ $# -ge 2 ] || { echo "$1 needs a value" >&2; exit 2; };; esac
  case $1 in
  --trainscope) TS=$2; shift 2;; --python) PY=$2; shift 2;; --device) DEV=$2; shift 2;;
  --threads) THREADS=$2; shift 2;; --steps) STEPS=$2; shift 2;; --models) MODELS=$2; shift 2;;
  --batch-sizes) BATCHES=$2; shift 2;; --data) DATA=$2; shift 2;; --variants) VARIANTS=$2; shift 2;;
  --cudnn-benchmark) BENCH=(--cudnn-benchmark); shift;;
  --python-train-metrics) PYX=(--train-metrics); shift;;
  --python-malloc) PY_MALLOC=$2; shift 2;;
  *) echo "unknown option $1 (see the comment at the top of bench/compare_pytorch.sh)" >&2; exit 2;; esac; done
[[ $PY_MALLOC == fixed || $PY_MALLOC == default ]] || { echo "--python-malloc $PY_MALLOC: use fixed or default" >&2; exit 2; }
(( STEPS > 10 )) || { echo "--steps must exceed 10 (the Python side times the steps after its 10 warm-up steps)" >&2; exit 2; }
OUTD=$(mktemp -d)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) CPUs; threads=$THREADS; device=$DEV; steps=$STEPS; cudnn benchmark: ${BENCH[*]:-off}; python train metrics: $([ ${#PYX[@]} -gt 0 ] && echo on || echo off); python malloc: $PY_MALLOC; $(date -u +%F)"
printf "%-9s %5s %-20s %20s %17s %7s\n" model batch variant "trainscope samples/s" "pytorch samples/s" ratio
IFS=, read -ra ms <<<"$MODELS"; IFS=, read -ra bs <<<"$BATCHES"; IFS=, read -ra vs <<<"$VARIANTS"
for m in "${ms[@]}"; do for b in "${bs[@]}"; do for v in "${vs[@]}"; do
  if [[ $DEV == cpu && ( $v == *graphs* || $v == *tf32* ) ]]; then
    printf "%-9s %5s %-20s %20s %17s %7s\n" "$m" "$b" "$v" n/a n/a "(cpu)"; continue
  fi
  name="$m-$b-${v//+/_}"
  "$TS" run --devices "$DEV" --models "$m" --batch-sizes "$b" --variants "$v" --max-steps "$STEPS" \
     --threads "$THREADS" --data "$DATA" --no-telemetry --no-profile --no-inference --no-progress --out "$OUTD" \
     --name "$name" "${BENCH[@]}" >/dev/null 2>"$OUTD/$name.err" || {
    # a cell trainscope refuses (e.g. channels_last on a model without convolutions) is n/a, not the end
    printf "%-9s %5s %-20s %20s %17s %7s %s\n" "$m" "$b" "$v" n/a - - "$(grep -m1 error "$OUTD/$name.err" | cut -c1-120)"; continue; }
  ts=$(python3 -c "import json;r=json.load(open('$OUTD/$name/results.json'))['runs'][0];print(r['steady_samples_per_s'] or 0)")
  note=$(python3 -c "import json;print(json.load(open('$OUTD/$name/results.json'))['runs'][0].get('variant_note') or '')")
  # the thresholds trainscope's run fixed ("..., fixed thresholds: mmap 1024 MiB, trimming off"), for Python too
  mmap_mib=$(python3 -c "import json,re;m=re.search(r'fixed thresholds: mmap (\d+) MiB',json.load(open('$OUTD/$name/results.json'))['provenance'].get('host_allocator',''));print(m.group(1) if m else '')")
  PY_ENV=(); [[ $PY_MALLOC == fixed && -n $mmap_mib ]] && PY_ENV=(MALLOC_MMAP_THRESHOLD_=$((mmap_mib << 20)) MALLOC_TRIM_THRESHOLD_=4294967296)
  py=$(env ${PY_ENV[@]+"${PY_ENV[@]}"} "$PY" bench/pytorch_baseline.py --model "$m" --batch-size "$b" --steps "$STEPS" --threads "$THREADS" \
        --device "$DEV" --data "$DATA" --variant "$v" "${BENCH[@]}" "${PYX[@]}" | python3 -c "import json,sys;print(json.load(sys.stdin)['steady_samples_per_s'])")
  printf "%-9s %5s %-20s %20.0f %17.0f %7.2f %s\n" "$m" "$b" "$v" "$ts" "$py" "$(python3 -c "print($ts/$py)")" "$note"
done; done; done
rm -rf "$OUTD"
