#!/usr/bin/env bash
# The main job: sets up the machine, builds the native CLI and runs it on the article's sentence.
# (The web demo takes this over once it exists.)  MODEL=DIR picks another model folder.
set -euo pipefail
cd "$(dirname "$0")/.."
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
build/native-release/headscope run --model "$MODEL" --text "$TEXT" "$@"
