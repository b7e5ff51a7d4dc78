#!/usr/bin/env bash
# The main job: sets up the machine, builds the WebAssembly engine and the web demo, and serves
# the demo at http://localhost:${PORT:-8080}/ (Ctrl+C stops it). See scripts/serve.sh for options.
#   scripts/run.sh --cli [args...]   instead: build the native CLI and run it on the article's
#                                    sentence (MODEL=DIR picks another model folder, TEXT=... the text)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--cli" ]; then
  shift
  HEADSCOPE_SKIP_NPM=1 scripts/setup.sh
  cmake --preset native-release >/dev/null
  cmake --build --preset native-release --target headscope
  MODEL="${MODEL:-}"
  if [ -z "$MODEL" ]; then
    if [ -f web/models/headscope-base/model.safetensors ]; then MODEL=web/models/headscope-base
    else MODEL=tests/fixtures/models/odd-hs12; fi
  fi
  TEXT="${TEXT:-The chef, who trained in Paris, cooked the meal quickly.}"
  echo "model: $MODEL"
  exec build/native-release/headscope run --model "$MODEL" --text "$TEXT" "$@"
fi
scripts/setup.sh
exec scripts/serve.sh
