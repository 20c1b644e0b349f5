#!/usr/bin/env bash
# Which tool costs the headline on one cell: N rounds of alternating runs, each tool alone on
# (issue 13 follow-up). Usage: TS=... DATA=... N=6 bash bench/gpu/self_split.sh cuda:0 cnn 128 2000
set -uo pipefail
dev=$1 model=$2 batch=$3 steps=$4; N=${N:-6}
OUTD=$(mktemp -d); trap 'rm -rf "$OUTD"' EXIT
declare -A modes=(
  [off]="--no-telemetry --no-profile --no-inference"
  [telemetry]="--no-profile --no-inference"
  [telemetry_slow_off]="--no-profile --no-inference --telemetry-slow-interval 3600"
  [profile]="--no-telemetry --no-inference"
  [default]=""
  [default_slow10]="--telemetry-slow-interval 10"
  [default_slow_off]="--telemetry-slow-interval 3600"
)
read -r -a order <<<"${ORDER:-off telemetry profile default}"
for i in $(seq "$N"); do
  for m in "${order[@]}"; do
    # shellcheck disable=SC2086
    "$TS" run --devices "$dev" --models "$model" --batch-sizes "$batch" --epochs "${EPOCHS:-10}" --max-steps "$steps" --data "$DATA" \
      --threads 0 --no-progress --out "$OUTD" --name "$m-$i" ${modes[$m]} >/dev/null 2>&1
    python3 -c "import json,sys;r=json.load(open('$OUTD/$m-$i/results.json'))['runs'][0];print('$m',r['steady_samples_per_s'])" 2>/dev/null || echo "$m nan"
  done
done | python3 -c "
import sys,statistics,collections
d=collections.defaultdict(list)
for l in sys.stdin:
    k,v=l.split()
    if v not in ('nan','None'): d[k].append(float(v))
off=statistics.median(d['off'])
for k,v in d.items(): print(f'{k:18s} median {statistics.median(v):9.0f}  ratio to off {statistics.median(v)/off:.3f}  runs {[round(x) for x in v]}')
"
