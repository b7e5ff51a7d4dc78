#!/usr/bin/env bash
# Installs what a fresh Debian bookworm machine lacks to build, test and serve headscope.
# Idempotent: packages already present are skipped, `npm ci` only runs when node_modules
# is older than package-lock.json.
#   scripts/setup.sh            system packages + npm packages
#   HEADSCOPE_SKIP_NPM=1 ...    system packages only
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang-14 libclang-rt-14-dev      # libFuzzer / sanitizers
  clang-format-14                  # scripts/format.mjs (clang-format, the C++ formatter)
  emscripten wabt binaryen          # WebAssembly build and inspection (wasm-objdump)
  libeigen3-dev libxsimd-dev catch2 nlohmann-json3-dev
  python3-torch python3-numpy python3-regex libopenblas0-openmp   # training and PyTorch reference checks
  python3-onnx                      # the bench builds transformers.js's 8-bit graph (bench/shapes/)
  unicode-data                      # UnicodeData.txt for the tokenizer's category tables
  chromium chromium-driver fonts-dejavu-core         # end-to-end tests in headless Chromium
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages present"
fi

if [ -z "${HEADSCOPE_SKIP_NPM:-}" ] && [ -f package-lock.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "setup: npm ci"
    npm ci --no-audit --no-fund --ignore-scripts
  else
    echo "setup: node_modules up to date"
  fi
fi
