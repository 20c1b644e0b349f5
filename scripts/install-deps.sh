#!/usr/bin/env bash
# Installs trainscope's build and test dependencies from Debian 12 packages (idempotent; root or sudo).
#   scripts/install-deps.sh          # build + run
#   scripts/install-deps.sh --test   # also what the tests need (GoogleTest, headless Chromium, curl,
#                                    # tcmalloc: the test that a preloaded allocator is left alone,
#                                    # pmccabe: the function-length check, python3-torch: the
#                                    # PyTorch 1.13 programs `measure` tests run)
set -euo pipefail
pkgs=(cmake g++ make pkg-config
      libtorch-dev              # LibTorch 1.13 (CPU)
      libgloo-dev               # Gloo headers for c10d's ProcessGroupGloo (docs/distributed.md#building)
      dataset-fashion-mnist     # the default real data set (IDX files)
      python3-doc               # the default text corpus for language models (docs/language-models.md)
      libopenblas0-openmp       # an optimised BLAS for LibTorch's CPU matrix products (Debian's default libblas.so.3 is the reference one; docs/language-models.md)
      libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev libtomlplusplus-dev zlib1g-dev libstb-dev
      libjpeg62-turbo-dev       # fast JPEG decoding for streamed image folders (docs/input-pipeline.md)
      python3-pil               # bench/make_image_folder.py writes the JPEG/PNG folders with Pillow
      )
if [[ ${1:-} == --test ]]; then
  pkgs+=(libgtest-dev libgmock-dev chromium curl libtcmalloc-minimal4 pmccabe python3 python3-torch)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=; [[ $(id -u) == 0 ]] || SUDO=sudo
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps.sh: every package is installed (${#pkgs[@]})"
fi
