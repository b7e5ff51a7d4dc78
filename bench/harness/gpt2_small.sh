#!/usr/bin/env bash
# GPT-2 at scale, side by side in one run (scripts/bench.sh runs it with BENCH_GPT2=1, and in its quick
# mode; or run it alone):
#   native (build/native-release) against PyTorch with 1 thread, and the engine's GEMM against
#     Eigen's with the attention kernel alone (headscope_gemm_native)  -> gpt2-small-native.md
#   wasm SIMD128 and relaxed SIMD against onnxruntime-web (node)          -> gpt2-small-wasm.md
#   typing at the end of 1,000 tokens in the demo (headless Chromium)     -> gpt2-small-typing.md
#   the package at 1 and 2 threads against onnxruntime-web in Chromium,
#     on a cross-origin-isolated page, and the trainer at 1 and 2 threads -> gpt2-small-browser.md
#   in the same page and rounds, the package's q8 against transformers.js
#     at its defaults (device wasm, dtype q8)                            -> gpt2-small-browser-tjs.md
#   the last logits on 2 threads against onnxruntime-web's, the two alone
#     in the page (the full run's other subjects slow that cell)         -> browser-apart.json (samples)
# Full: a random checkpoint of GPT-2 small's exact shape (548 MB, .cache/bench/gpt2-small, never in
# the repository); the three files are written to bench/.
# BENCH_QUICK=1: the same scripts on a small model with GPT-2's vocabulary and context (2 layers x 4
# heads, n_embd 64: .cache/bench/gpt2-tiny), fewer lengths and runs; the files go to
# build/bench/quick/gpt2/. That checks the scripts still run end to end; its numbers mean nothing.
# Options (environment): JOBS=N build parallelism; BENCH_SITE=DIR a demo site already built
# (web/demo/build.sh; scripts/bench.sh passes its own).
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_PATH=/usr/share/nodejs   # Debian's emscripten needs Debian's acorn (cpp/README.md, "Toolchain notes")
JOBS="${JOBS:-2}"
log() { echo "[gpt2 $(date +%H:%M:%S)] $*" >&2; }
if [ "${BENCH_QUICK:-0}" = 1 ]; then
  G=.cache/bench/gpt2-tiny; SHAPE=(--layers 2 --heads 4 --embd 64)
  OUT=build/bench/quick/gpt2; MD=$OUT
  TOKENS=64,256; BROWSER_TOKENS=64; REPEAT=1; Q=(--quick); KEYS=3; BY_CONTEXT=0; SESSIONS=2
else
  G=.cache/bench/gpt2-small; SHAPE=()
  OUT=build/bench/gpt2; MD=bench/results
  TOKENS=64,256,1024; BROWSER_TOKENS=256,1024; REPEAT=5; Q=(); KEYS=11; BY_CONTEXT=1; SESSIONS=3
fi
mkdir -p "$OUT" .cache/bench
[ -f "$G/model.safetensors" ] || /usr/bin/python3 bench/shapes/make_gpt2_small.py "$G" "${SHAPE[@]}"
if [ ! -f "$G-onnx/forward.onnx" ] || [ "$G/model.safetensors" -nt "$G-onnx/forward.onnx" ]; then
  log "exporting the ONNX graph with torch.onnx"
  /usr/bin/python3 bench/shapes/export_onnx.py "$G" "$G-onnx" >"$OUT/export-onnx.log" 2>&1 || { tail -20 "$OUT/export-onnx.log" >&2; exit 1; }
fi

# transformers.js's folder (config, tokenizer, onnx/model_quantized.onnx): rebuilt when missing or
# older than the checkpoint or the script that writes it
TJS="$G-tjs"
if [ ! -f "$TJS/onnx/model_quantized.onnx" ] || [ "$G/model.safetensors" -nt "$TJS/onnx/model_quantized.onnx" ] ||
  [ bench/shapes/make_transformersjs_q8.py -nt "$TJS/onnx/model_quantized.onnx" ]; then
  log "writing transformers.js's q8 folder (torch.onnx, then the dynamic 8-bit graph with python3-onnx)"
  /usr/bin/python3 bench/shapes/make_transformersjs_q8.py "$G" "$TJS" >"$OUT/make-tjs.log" 2>&1 || { tail -20 "$OUT/make-tjs.log" >&2; exit 1; }
fi

# the presets' own trees, shared with scripts/test.sh and scripts/bench.sh: only missing targets are built
build() {  # build PRESET TARGET...
  local preset="$1"; shift
  [ -f "build/$preset/CMakeCache.txt" ] || cmake --preset "$preset" >/dev/null
  cmake --build "build/$preset" -j "$JOBS" --target "$@" >"$OUT/build-$preset.log" 2>&1 ||
    { tail -40 "$OUT/build-$preset.log" >&2; log "build failed: build/$preset $*"; exit 1; }
}
build native-release headscope headscope_gemm_native
build wasm-release headscope_bench_wasm
# the relaxed build's bench module: not in quick mode (its build and post-link rewrite took a minute of
# CI's run); without node's flag below wasm-gpt2-small.mjs then says it skips that subject
RELAXED_FLAG=()
if [ "${BENCH_QUICK:-0}" != 1 ]; then build wasm-relaxed headscope_bench_wasm; RELAXED_FLAG=(--experimental-wasm-relaxed-simd); fi
SITE="${BENCH_SITE:-}"
if [ -z "$SITE" ]; then
  scripts/build-package.sh >"$OUT/build-package.log" 2>&1 || { tail -20 "$OUT/build-package.log" >&2; exit 1; }
  SITE="$OUT/site"
  web/demo/build.sh "$PWD/$SITE" >/dev/null
fi

log "native against PyTorch (1 thread, then 1 and 2 threads); the GEMM against Eigen's and the attention kernel"
/usr/bin/python3 bench/shapes/vs_torch.py --cli build/native-release/headscope --gemm build/native-release/headscope_gemm_native \
  --model "$G" --tokens "$TOKENS" --repeat "$REPEAT" "${Q[@]}" --markdown "$MD/gpt2-small-native.md"
log "wasm SIMD128 and relaxed SIMD against onnxruntime-web"
node "${RELAXED_FLAG[@]}" bench/harness/wasm-gpt2-small.mjs --model "$G" --onnx "$G-onnx" --tokens "$TOKENS" \
  --simd build/wasm-release --relaxed build/wasm-relaxed --markdown "$MD/gpt2-small-wasm.md" "${Q[@]}"
log "typing at the end of 1,000 tokens in the demo (headless Chromium)"
node bench/harness/long-text-bench.mjs --model "$G" --demo "$SITE" --keys "$KEYS" --bare 1 --by-context "$BY_CONTEXT" --out "$OUT/long-text.json" --markdown "$MD/gpt2-small-typing.md"
log "the package threaded against onnxruntime-web in Chromium (an isolated page)"
node bench/harness/browser-gpt2-small.mjs --model "$G" --onnx "$G-onnx" --pkg dist --tokens "$BROWSER_TOKENS" "${Q[@]}" \
  --out "$OUT/browser.json" --markdown "$MD/gpt2-small-browser.md" --tjs "$TJS" --tjs-markdown "$MD/gpt2-small-browser-tjs.md"
log "the last logits on 2 threads against onnxruntime-web's, timed apart from the other subjects (--subjects), in $SESSIONS browser sessions"
node bench/harness/browser-gpt2-small.mjs --model "$G" --onnx "$G-onnx" --pkg dist --tokens "$BROWSER_TOKENS" "${Q[@]}" \
  --subjects lean-2,ortl-2 --sessions "$SESSIONS" --out "$OUT/browser-apart.json"
log "wrote $MD/gpt2-small-native.md, $MD/gpt2-small-wasm.md, $MD/gpt2-small-typing.md, $MD/gpt2-small-browser.md, $MD/gpt2-small-browser-tjs.md"
