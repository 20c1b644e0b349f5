#!/usr/bin/env bash
# One command: install dependencies, build, and run the default job on every device (cpu and
# every GPU): the image matrix (mlp,cnn x batch 64,128, one epoch) on the real Fashion-MNIST, then
# the language model gpt-mini on Debian's python3-doc corpus (batch 8 x 256 tokens, a training
# budget of TS_DEMO_LM_BUDGET_S seconds per run, default 90; TS_DEMO_LM=0 leaves it out;
# docs/language-models.md#the-default-job). Extra arguments go to the image matrix's
# `trainscope run`, e.g. scripts/demo.sh --preset paper --max-steps 500
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTRAINSCOPE_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)" --target trainscope_cli
./build/trainscope run "$@"
if [ "${TS_DEMO_LM:-1}" != 0 ]; then
  # At most 300 steps: a GPU reaches them within seconds, a 2-core CPU stops at the budget (a few
  # dozen steps: 3 warm-up steps leave a headline window; no profiling window, whose place a time
  # budget cannot plan).
  ./build/trainscope run --models gpt-mini --data-format text --batch-sizes 8 --seq-len 256 \
    --time-budget "${TS_DEMO_LM_BUDGET_S:-90}" --max-steps 300 --warmup-steps 3 --eval-windows 32 --no-profile
fi
