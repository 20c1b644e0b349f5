#!/usr/bin/env bash
# One command: install dependencies, build everything with tests, and run the test suite
# (GoogleTest through ctest). Then the torch-free unit tests again under ASan+UBSan.
# Set TS_SKIP_SANITIZERS=1 to skip the sanitizer pass.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
# The structure checks first (seconds): includes point down the layers (docs/design.md#layers),
# no function over 100 lines (CONTRIBUTING.md). ctest runs them again (LayersPointDown, FunctionsWithinLimit).
python3 scripts/check-layers.py
python3 scripts/check-function-length.py
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTRAINSCOPE_BUILD_TESTS=ON
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
if [[ -z ${TS_SKIP_SANITIZERS:-} ]]; then
  # AddressSanitizer + UndefinedBehaviorSanitizer over the parts that do not need LibTorch
  # to be instrumented (readers, parsers, config, results, telemetry, report).
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTRAINSCOPE_WITH_TORCH=OFF -DTRAINSCOPE_SANITIZE=address
  cmake --build build-asan -j"$(nproc)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$(nproc)"
fi
