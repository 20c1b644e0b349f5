#!/usr/bin/env bash
# One command: install dependencies, build, and run the default matrix (cpu and every GPU x
# mlp,cnn x batch 64,128, one epoch) on the real Fashion-MNIST. Extra arguments go to
# `trainscope run`, e.g. scripts/demo.sh --preset paper --max-steps 500
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTRAINSCOPE_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)" --target trainscope_cli
./build/trainscope run "$@"
