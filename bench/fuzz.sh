#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with Debian's clang and runs each one for
# SECONDS_PER_TARGET seconds (default 300), one after another, starting from the seed corpus in
# tests/fuzz/corpus/<target>/. New corpus entries go to $FUZZ_WORK/corpus/<target>/ (the seeds
# in the repository stay as they are); crashes to $FUZZ_WORK/crashes/<target>/.
# Prints libFuzzer's final "#N DONE cov: ... exec/s" line per target and a summary table.
#
#   bench/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
# Env: BUILD_DIR (default /tmp/build-fuzz), FUZZ_WORK (default /tmp/trainscope-fuzz),
#      JOBS (build parallelism, default 2), FUZZ_ARGS (extra libFuzzer flags).
# Needs: clang and libclang-rt-14-dev (apt-get install -y clang libclang-rt-14-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-300}
shift || true
BUILD_DIR=${BUILD_DIR:-/tmp/build-fuzz}
FUZZ_WORK=${FUZZ_WORK:-/tmp/trainscope-fuzz}
JOBS=${JOBS:-2}
ALL=(fuzz_idx_images fuzz_idx_labels fuzz_cifar10 fuzz_decode_image fuzz_toml_config fuzz_proc_parse
     fuzz_telemetry_sources)
TARGETS=("${@:-${ALL[@]}}")
[[ $# -eq 0 ]] && TARGETS=("${ALL[@]}")

command -v clang++ >/dev/null || { echo "clang++ not found: apt-get install -y clang libclang-rt-14-dev" >&2; exit 1; }
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSCOPE_FUZZ=ON \
  -DTRAINSCOPE_WITH_TORCH=OFF -DTRAINSCOPE_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j"$JOBS" --target "${TARGETS[@]}"

summary=()
status=0
for t in "${TARGETS[@]}"; do
  corpus="$FUZZ_WORK/corpus/$t" crashes="$FUZZ_WORK/crashes/$t" log="$FUZZ_WORK/$t.log"
  mkdir -p "$corpus" "$crashes"
  echo "== $t: ${SECONDS_PER_TARGET}s"
  # -rss_limit_mb: a reader that allocates gigabytes for a small file is a finding, not noise.
  set +e
  "$BUILD_DIR/tests/fuzz/$t" "$corpus" "tests/fuzz/corpus/$t" -max_total_time="$SECONDS_PER_TARGET" \
    -rss_limit_mb=2048 -max_len=65536 -timeout=10 -print_final_stats=1 -artifact_prefix="$crashes/" \
    ${FUZZ_ARGS:-} >"$log" 2>&1
  rc=$?
  set -e
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
  echo "${done_line:-no DONE line (rc=$rc), see $log}"
  if [[ $rc -ne 0 ]]; then
    status=1
    echo "!! $t stopped with rc=$rc; crash inputs in $crashes:"; ls "$crashes"
    grep -E 'ERROR|SUMMARY' "$log" | head -5 || true
  fi
  cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$done_line")
  ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$done_line")
  eps=$(sed -nE 's/.*exec\/s: ([0-9]+).*/\1/p' <<<"$done_line")
  summary+=("| $t | ${SECONDS_PER_TARGET} | ${execs:-?} | ${cov:-?} | ${ft:-?} | ${eps:-?} | $([[ $rc -eq 0 ]] && echo none || echo "rc=$rc") |")
done
echo
echo "| target | seconds | executions | cov (edges) | ft (features) | exec/s | crashes |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
exit $status
