#!/usr/bin/env bash
# Training samples/s with telemetry sampling on (10 Hz) vs off, in one invocation, alternating
# on/off runs so drift on a shared machine hits both sides. Prints the median of each side and
# the cost in percent.  Usage: bench/telemetry_overhead.sh [TRAINSCOPE] [DEVICE] [DATA] [REPEATS]
set -euo pipefail
TS=${1:-./build/trainscope}; DEV=${2:-cpu}; DATA=${3:-/usr/share/datasets/fashion-mnist}; REP=${4:-3}
OUTD=$(mktemp -d)
run() {  # $1 = name, rest = extra flags
  local name=$1; shift
  "$TS" run --devices "$DEV" --models cnn --batch-sizes 128 --max-steps "${STEPS:-400}" --data "$DATA" --no-profile \
     --no-inference --no-progress --out "$OUTD" --name "$name" "$@" >/dev/null 2>&1
  python3 -c "import json;print(json.load(open('$OUTD/$name/results.json'))['runs'][0]['steady_samples_per_s'])"
}
on=(); off=()
for i in $(seq "$REP"); do
  on+=("$(run on$i --telemetry-interval 0.1)")
  off+=("$(run off$i --no-telemetry)")
done
python3 - "${on[*]}" "${off[*]}" "$DEV" <<'PY'
import statistics, sys
on = [float(x) for x in sys.argv[1].split()]; off = [float(x) for x in sys.argv[2].split()]
m_on, m_off = statistics.median(on), statistics.median(off)
print(f"device {sys.argv[3]}: telemetry on (10 Hz) {m_on:.0f} samples/s, off {m_off:.0f} samples/s "
      f"(medians of {len(on)}); cost {100*(m_off-m_on)/m_off:+.2f} %  on={on} off={off}")
PY
rm -rf "$OUTD"
