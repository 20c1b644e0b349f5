#!/usr/bin/env bash
# Fetches, on a Debian 12 machine, the .deb files that bench/gpu/build_and_run.sh unpacks on a GPU
# host without Debian's packages (README.md#on-a-gpu-host): the -dev packages of
# scripts/install-deps.sh with their runtime libraries, the test-only ones, the default data
# sets (Fashion-MNIST, the python3-doc text corpus) and pmccabe. Into .device/debs/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device/debs
cd .device/debs
apt-get download libcli11-dev nlohmann-json3-dev libfmt-dev libfmt9 libsqlite3-dev libtomlplusplus-dev \
  libtomlplusplus3 zlib1g-dev libstb-dev libstb0 libjpeg62-turbo-dev libjpeg62-turbo libgtest-dev libgmock-dev \
  dataset-fashion-mnist libtcmalloc-minimal4 python3-doc pmccabe
ls -1 | wc -l
