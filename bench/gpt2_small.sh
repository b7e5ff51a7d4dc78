#!/usr/bin/env bash
# GPT-2 small's shape, side by side in one run (called by scripts/bench.sh with BENCH_GPT2=1, or alone):
#   native (preset native-release) against PyTorch with 1 thread  -> bench/gpt2-small-native.md
#   wasm SIMD128 and relaxed SIMD against onnxruntime-web (node)  -> bench/gpt2-small-wasm.md
#   typing at the end of 1,000 tokens in the demo (Chromium)     -> bench/gpt2-small-typing.md
# The random checkpoint (548 MB) and its ONNX export live in .cache/bench, never in the repository.
# Options (environment): JOBS=N build parallelism; BENCH_QUICK=1 fewer runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs   # Debian's emscripten needs Debian's acorn (TOOLCHAIN.md)
JOBS="${JOBS:-2}"
OUT=build/bench-gpt2
G=.cache/bench/gpt2-small
log() { echo "[gpt2-small $(date +%H:%M:%S)] $*" >&2; }
mkdir -p "$OUT" .cache/bench
[ -f "$G/model.safetensors" ] || /usr/bin/python3 bench/make_gpt2_small.py "$G"
if [ ! -f "$G-onnx/forward.onnx" ]; then
  log "exporting the ONNX graph with torch.onnx"
  /usr/bin/python3 bench/export_onnx.py "$G" "$G-onnx" 2>&1 | grep -v -i warn || true
fi
build() {  # build PRESET DIR TARGET...
  local preset="$1" dir="$2"; shift 2
  cmake --preset "$preset" -B "$dir" -DHEADSCOPE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$dir" -j "$JOBS" --target "$@" | grep -v '^\[' || true
}
build native-release "$OUT/native" headscope
build wasm-release "$OUT/wasm-simd" headscope_bench_wasm
build wasm-relaxed "$OUT/wasm-relaxed" headscope_bench_wasm
REPEAT=5; QUICK=()
[ "${BENCH_QUICK:-0}" = 1 ] && { REPEAT=2; QUICK=(--quick); }
log "native against PyTorch (1 thread)"
/usr/bin/python3 bench/native_vs_torch.py --cli "$OUT/native/headscope" --model "$G" --repeat "$REPEAT" \
  --markdown bench/gpt2-small-native.md
log "wasm SIMD128 and relaxed SIMD against onnxruntime-web"
node --experimental-wasm-relaxed-simd bench/wasm_gpt2_small.mjs --model "$G" --onnx "$G-onnx" \
  --simd "$OUT/wasm-simd" --relaxed "$OUT/wasm-relaxed" --markdown bench/gpt2-small-wasm.md "${QUICK[@]}"
log "typing at the end of 1,000 tokens in the demo (headless Chromium)"
web/demo/build.sh "$OUT/site" >/dev/null
node bench/long_text_bench.mjs --model "$G" --demo "$OUT/site" --out "$OUT/long-text.json" --markdown bench/gpt2-small-typing.md
