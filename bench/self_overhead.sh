#!/usr/bin/env bash
# trainscope's cost to the workload it measures, end to end: N alternating pairs of the same run
# with every tool on (the default: telemetry, profiling window, inference) and every tool off
# (--no-telemetry --no-profile --no-inference), per cell, after one discarded warm-up run. Pairs
# alternate their order (on-off, off-on) so drift on a shared machine and the cold or warm
# device a run starts on hit both sides. Prints per cell the medians of the headline samples/s
# (steady_samples_per_s) and of the whole-run samples/s (samples trained / training time, the
# profiling window included), and median(default)/median(off) of each: a headline ratio near
# 1.00 means the measurement protocol keeps trainscope's instruments out of the headline
# (docs/profiling.md#measurement-protocol). The headline ratio comes with the median of the
# pairs' own ratios and its 90 % bootstrap interval (pairs resampled: a pair's two runs ran back
# to back, so the machine's drift cancels within it) and says whether they resolve a 3 % cost: on
# a host whose runs spread ±10 % (bench/RESULTS.md, H200 sixth session) 5 pairs do not. It also
# prints the on-off and the off-on pairs' medians apart, and their geometric mean, which cancels an
# order effect within pairs (the second run of a pair faster, as on the H200 in the ninth session).
# Each pair is printed as it ends ("CELL: pair 3 (default-off) default 12061 off 12210 ratio 0.9878"),
# so an invocation cut short by a time limit still leaves its pairs to pool.
#
# Usage: bench/self_overhead.sh [CELL ...]      CELL = device,model,batch  e.g. cuda:0,resnet18,128
#   default cells: cpu,mlp,128 cpu,cnn,128 (all threads); with a GPU also cuda:0,mlp,64
#   cuda:0,cnn,128 cuda:0,resnet18,128.
# Environment: TS (binary, ./build/trainscope), SAB (sampler_ab, beside TS), DATA (/usr/share/datasets/fashion-mnist for
#   mlp/cnn; resnet18 uses DATA_RESNET, default: DATA), N (pairs, 8: a verdict needs 8; an even N
#   runs as many pairs on-first as off-first), EPOCHS (1), MAX_STEPS
#   (0 = whole epochs), EXTRA (more flags for both sides; e.g. --no-inference takes inference out of
#   both sides' ends, although the default side still ends with its profiling window),
#   CONTROL=1 (an A/A control: the "default" side runs with every tool off too, so the ratios
#   show what this protocol reads on this host when nothing differs; the lines say "A/A"),
#   A_FLAGS and B_FLAGS (an A/B of two settings instead of default/off: A_FLAGS replaces the
#   default side's flags, B_FLAGS the off side's; the ratios are A/B, e.g. A_FLAGS="--no-profile"
#   B_FLAGS="--no-profile --telemetry-slow-interval 3600": what NVML's slow fields cost).
# Exit status: 0, 1 when a run measured nothing (its error is printed), 2 for bad input.
set -euo pipefail
TS=${TS:-./build/trainscope}
# the interval and the verdict rule (sampler_ab --verdict-of), beside TS (found on PATH if bare)
SAB=${SAB:-$(dirname "$(command -v "$TS" || echo "$TS")")/sampler_ab}
export SAB
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
DATA_RESNET=${DATA_RESNET:-$DATA}
N=${N:-8}; EPOCHS=${EPOCHS:-1}; MAX_STEPS=${MAX_STEPS:-0}; EXTRA=${EXTRA:-}
CONTROL=${CONTROL:-0}
die() { echo "self_overhead.sh: $*" >&2; exit 2; }
[[ $CONTROL =~ ^[01]$ ]] || die "CONTROL=$CONTROL: use 1 for an A/A control (both sides every tool off) or 0"
OFF_FLAGS=(--no-telemetry --no-profile --no-inference)
ON_FLAGS=()
# the sides' names in the output: "default" and "off", or A and B in an A/A control
export ON_LABEL=default OFF_LABEL=off
A_FLAGS=${A_FLAGS:-}; B_FLAGS=${B_FLAGS:-}
if [ "$CONTROL" = 1 ] && [ -n "$A_FLAGS$B_FLAGS" ]; then
  die "CONTROL=1 with A_FLAGS/B_FLAGS: use one (an A/A control runs every tool off on both sides)"
fi
if [ "$CONTROL" = 1 ]; then
  ON_FLAGS=("${OFF_FLAGS[@]}"); ON_LABEL=A; OFF_LABEL=B
  echo "self_overhead.sh: A/A control: both sides (A, B) run every tool off; a verdict below is the host's, not a cost"
elif [ -n "$A_FLAGS$B_FLAGS" ]; then
  # shellcheck disable=SC2206  # the flags are words, split as the user wrote them
  ON_FLAGS=($A_FLAGS); OFF_FLAGS=($B_FLAGS); ON_LABEL=A; OFF_LABEL=B
  echo "self_overhead.sh: A/B: A runs '${A_FLAGS}', B runs '${B_FLAGS}'; a ratio below 1 means A is slower"
fi
[[ $N =~ ^[1-9][0-9]*$ ]] || die "N=$N: use a whole number of pairs >= 1 (8 or more for a verdict)"
command -v "$TS" >/dev/null 2>&1 || die "TS=$TS is not an executable: build trainscope or set TS"
cells=("$@")
for cell in "${cells[@]}"; do
  [[ $cell =~ ^[^,]+,[^,]+,[1-9][0-9]*$ ]] || die "cell '$cell': use device,model,batch, e.g. cuda:0,resnet18,128"
done
if [ ${#cells[@]} -eq 0 ]; then
  cells=(cpu,mlp,128 cpu,cnn,128)
  if "$TS" devices 2>/dev/null | grep -q '^cuda:0'; then
    cells+=(cuda:0,mlp,64 cuda:0,cnn,128 cuda:0,resnet18,128)
  fi
fi
OUTD=$(mktemp -d)
trap 'rm -rf "$OUTD"' EXIT
failed=0

run() {  # $1 = folder name, $2 = device, $3 = model, $4 = batch, rest = flags; prints "headline whole"
  local name=$1 dev=$2 model=$3 batch=$4; shift 4
  local data=$DATA
  [ "$model" = resnet18 ] && data=$DATA_RESNET
  # shellcheck disable=SC2086
  "$TS" run --devices "$dev" --models "$model" --batch-sizes "$batch" --epochs "$EPOCHS" --max-steps "$MAX_STEPS" \
    --data "$data" --threads 0 --no-progress --out "$OUTD" --name "$name" $EXTRA "$@" >"$OUTD/$name.log" 2>&1 || true
  python3 - "$OUTD/$name/results.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))["runs"][0]
    whole = sum(e["samples"] for e in r["epochs"]) / r["train_time_s"] if r["train_time_s"] else float("nan")
    print(r["steady_samples_per_s"] or float("nan"), whole)
except Exception:
    print("nan nan")
PY
}

# One run of a pair's side ($1 = on: every tool, the default; off: every tool off), appended to
# that side's arrays; a run that measured nothing prints its error on stderr (the log goes with
# the temp folder) and sets `failed`.
side() {
  local name="$1-$i-${dev/:/}-$model-$batch" h w
  if [ "$1" = on ]; then
    read -r h w < <(run "$name" "$dev" "$model" "$batch" ${ON_FLAGS[@]+"${ON_FLAGS[@]}"})
    on_h+=("$h"); on_w+=("$w")
  else
    read -r h w < <(run "$name" "$dev" "$model" "$batch" "${OFF_FLAGS[@]}")
    off_h+=("$h"); off_w+=("$w")
  fi
  if [ "$h" = nan ]; then
    echo "self_overhead.sh: run $name measured no headline samples/s; its output ends:" >&2
    tail -5 "$OUTD/$name.log" >&2 || true
    failed=1
  fi
}

for cell in "${cells[@]}"; do
  IFS=, read -r dev model batch <<<"$cell"
  tag=$cell; [ "$CONTROL" = 1 ] && tag="$cell (A/A)"
  on_h=(); on_w=(); off_h=(); off_w=()
  # One discarded run first: the first run of a cell meets a cold device (an idle GPU's clocks,
  # cold caches); without it, that cost always fell on the same side.
  run "warmup-${dev/:/}-$model-$batch" "$dev" "$model" "$batch" "${OFF_FLAGS[@]}" >/dev/null
  for i in $(seq "$N"); do
    # The order within a pair alternates (on-off, off-on, ...): a run that follows a tools-on run
    # (which ends with inference) and one that follows a tools-off run each land on both sides.
    if [ $((i % 2)) -eq 1 ]; then side on; side off; order=$ON_LABEL-$OFF_LABEL; else side off; side on; order=$OFF_LABEL-$ON_LABEL; fi
    # each pair as it ends, so that an invocation cut short (a time limit) still leaves its pairs
    # to pool with sampler_ab --verdict-of (a pair with a nan side prints ratio nan; the summary
    # below also drops a pair whose whole-run figure is missing)
    awk -v c="$tag" -v i="$i" -v o="$order" -v la="$ON_LABEL" -v lb="$OFF_LABEL" -v a="${on_h[$((i - 1))]}" -v b="${off_h[$((i - 1))]}" \
      'function f(x) { return x == "nan" ? "nan" : sprintf("%.0f", x) }
       BEGIN { r = (a == "nan" || b == "nan" || b + 0 == 0) ? "nan" : sprintf("%.4f", a / b)
               printf "%s: pair %d (%s) %s %s %s %s ratio %s\n", c, i, o, la, f(a), lb, f(b), r }'
  done
  python3 - "$tag" "${on_h[*]}" "${on_w[*]}" "${off_h[*]}" "${off_w[*]}" <<'PY'
import math, os, statistics, subprocess, sys
cell = sys.argv[1]
on_h, on_w, off_h, off_w = ([float(x) for x in a.split()] for a in sys.argv[2:6])
# A pair counts only when both its runs measured: medians and ratios come from the kept pairs.
kept = [i for i in range(len(on_h)) if all(not math.isnan(v) and v > 0 for v in (on_h[i], off_h[i], on_w[i], off_w[i]))]
def med(v):
    return statistics.median([v[i] for i in kept]) if kept else float("nan")
def interval():
    # the median of the pairs' ratios on_i/off_i, its 90 % bootstrap interval (pairs resampled:
    # the two runs of a pair ran back to back, so a drift of the machine cancels within a pair)
    # and the 3 % verdict, from sampler_ab --verdict-of, where that rule lives
    if not kept:
        return "no pair measured"
    ratios = ",".join(f"{on_h[i] / off_h[i]:.6f}" for i in kept)
    try:
        return subprocess.run([os.environ["SAB"], "--verdict-of", ratios], capture_output=True, text=True,
                              check=True).stdout.strip()
    except OSError as e:
        return f"no interval ({os.environ['SAB']}: {e}; build it with cmake --build build --target sampler_ab)"
    except subprocess.CalledProcessError as e:
        return f"no interval ({os.environ['SAB']}: {e.stderr.strip()})"
A, B = os.environ["ON_LABEL"], os.environ["OFF_LABEL"]
print(f"{cell}: pairs ({A}/{B} headline samples/s): " + " ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(on_h, off_h)))
if not kept:
    print(f"{cell}: no pair measured (of {len(on_h)}): see the errors above")
    sys.exit(0)
mh, mw, fh, fw = med(on_h), med(on_w), med(off_h), med(off_w)
print(f"{cell}: headline samples/s {A} {mh:.0f} {B} {fh:.0f} ratio {mh / fh:.3f}, {interval()}; "
      f"whole-run samples/s {A} {mw:.0f} {B} {fw:.0f} ratio {mw / fw:.3f} (medians of the {len(kept)} of "
      f"{len(on_h)} pairs where both runs measured)")
# The order effect: pairs 1, 3, ... ran on-off, pairs 2, 4, ... off-on. If the second run of a
# pair tends to be faster, on-off pairs read low and off-on pairs high; the geometric mean of the
# two medians cancels an effect of the same size on both.
by_order = {name: [on_h[i] / off_h[i] for i in kept if i % 2 == first] for name, first in (("on-off", 0), ("off-on", 1))}
if all(by_order.values()):
    a, b = (statistics.median(v) for v in by_order.values())
    n1, n2 = len(by_order['on-off']), len(by_order['off-on'])
    print(f"{cell}: median pair ratio of the {A}-{B} pairs {a:.3f} ({n1} pair{'s' if n1 != 1 else ''}), of the {B}-{A} "
          f"pairs {b:.3f} ({n2} pair{'s' if n2 != 1 else ''}), their geometric mean {math.sqrt(a * b):.3f}")
PY
done
[ "$failed" = 0 ] || { echo "self_overhead.sh: some runs measured nothing (errors above)" >&2; exit 1; }
