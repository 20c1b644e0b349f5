#!/usr/bin/env bash
# The cost of being measured by `trainscope measure` on the CPU (issue 38): the same small CPU
# training script (bench/cpu_train_peer.py, Debian's python3-torch 1.13, one intra-op thread)
# run N times under `trainscope measure` (hook + telemetry sampler, the defaults) and N times
# alone, in alternating pairs whose order alternates too (measured-plain, plain-measured), so
# drift on the shared machine hits both sides. The figure is the script's own printed
# throughput (img/s); bench/gpu/measure_check.py `pairs` prints both medians and the cost,
# % = 100 * (1 - median(measured) / median(plain)). One discarded warm-up run first.
#
# Usage: bench/measure_cost_cpu.sh
# Environment: TS (binary, ./build/trainscope), N (pairs, 6), STEPS (optimizer steps per run,
#   2500: about 11 s on the 2-core VM), PY (/usr/bin/python3: the one with python3-torch),
#   WORK (/tmp/measure-cost-cpu: run folders and the pairs' log).
set -euo pipefail
TS=${TS:-./build/trainscope}
N=${N:-6}
STEPS=${STEPS:-2500}
PY=${PY:-/usr/bin/python3}
WORK=${WORK:-/tmp/measure-cost-cpu}
HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT="$HERE/cpu_train_peer.py"
rm -rf "$WORK"
mkdir -p "$WORK"
LOG="$WORK/pairs.log"
: > "$LOG"

measured() {
  "$TS" measure -o "$WORK/runs" --run-name "pair$1" --quiet --no-history --warmup-steps 50 --items-per-step 64 \
    -- "$PY" "$SCRIPT" "$STEPS" >/dev/null 2>&1
  echo "measured $(grep img_per_s "$WORK/runs/pair$1/stdout.log" | tail -1)" >> "$LOG"
}
plain() { echo "plain $("$PY" "$SCRIPT" "$STEPS" | grep img_per_s | tail -1)" >> "$LOG"; }

"$PY" "$SCRIPT" 300 >/dev/null  # warm-up: the interpreter and torch in the page cache
for i in $(seq 1 "$N"); do
  if [ $((i % 2)) -eq 1 ]; then measured "$i"; plain; else plain; measured "$i"; fi
  tail -2 "$LOG"
done
"$PY" "$HERE/gpu/measure_check.py" pairs "$LOG"
