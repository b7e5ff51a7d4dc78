#!/usr/bin/env bash
# `npm run bench`: builds the benchmark subjects, runs them side by side and writes
# bench/results.json, bench/results.md and bench/latency.svg; prints the ratios at the end.
#   subjects: our wasm SIMD128 build, the same code without SIMD (preset wasm-scalar), our native
#   build (-O3 -march=native), onnxruntime-web 1.30 (wasm backend, one thread) on the same model
#   exported with torch.onnx; page-level figures in headless Chromium.
# Options (environment): BENCH_QUICK=1 shorter runs; BENCH_MODEL=DIR another model folder;
# BENCH_SKIP_PAGE=1 no browser; JOBS=N build parallelism; BENCH_GPT2=1 also bench/gpt2_small.sh
# (GPT-2 small's shape: native against PyTorch, wasm SIMD128/relaxed against onnxruntime-web).
# Training rows: training tokens/s of native, wasm SIMD128/relaxed (Node) and PyTorch on
# CPU with one thread, interleaved (bench/train_speed.mjs), and train.html's Start to the first
# induction head in headless Chromium (bench/train_page_bench.mjs). BENCH_SKIP_TRAIN=1 leaves them
# out; BENCH_ONLY=train runs only them (builds the CLI, the package and the site) and updates the
# training rows of the existing bench/results.json and bench/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs   # Debian's emscripten needs Debian's acorn (TOOLCHAIN.md)
JOBS="${JOBS:-2}"
OUT=build/bench
mkdir -p "$OUT" .cache/bench
QUICK=()
[ "${BENCH_QUICK:-0}" = 1 ] && QUICK=(--quick)
log() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }

# ---- training rows: train_rows NATIVE_CLI PACKAGE_DIR SITE_DIR (empty: no browser) --------------------
train_rows() {
  log "training: native, wasm SIMD128 and relaxed SIMD (Node), PyTorch with 1 thread, interleaved"
  node bench/train_speed.mjs --native "$1" --pkg "$2" --out "$OUT/train.json" "${QUICK[@]}" ||
    { log "training benchmark failed (see above)"; rm -f "$OUT/train.json"; }
  rm -f "$OUT/train-page.json"
  if [ -n "$3" ]; then
    log "headless Chromium: train.html, Start to the first induction head (default preset)"
    node bench/train_page_bench.mjs --site "$3" --out "$OUT/train-page.json" --repeats "$([ "${BENCH_QUICK:-0}" = 1 ] && echo 1 || echo 2)" ||
      log "training page benchmark failed (see above)"
  fi
}
if [ "${BENCH_ONLY:-}" = train ]; then
  log "only the training rows: building the native CLI and the package (dist/)"
  cmake --preset native-release -B "$OUT/native" -DHEADSCOPE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$OUT/native" -j "$JOBS" --target headscope | grep -v '^\[' || true
  scripts/build-package.sh >/dev/null
  SITE=""
  if [ "${BENCH_SKIP_PAGE:-0}" != 1 ]; then
    web/demo/build.sh "$PWD/$OUT/web" >/dev/null && SITE="$OUT/web" || log "could not build the demo site: no browser row"
  fi
  train_rows "$OUT/native/headscope" dist "$SITE"
  node bench/report.mjs --builds "$OUT" --only-train
  exit 0
fi

# ---- the model: the default model, or a random stand-in of the same shape until it is trained ----
MODEL="${BENCH_MODEL:-web/models/headscope-base}"
if [ ! -f "$MODEL/model.safetensors" ]; then
  MODEL=.cache/bench/random-base
  if [ ! -f "$MODEL/model.safetensors" ]; then
    log "web/models/headscope-base not trained yet: generating a random model of its shape"
    /usr/bin/python3 bench/make_model.py "$MODEL"
  fi
fi
log "model: $MODEL"

# ---- builds (own build trees under build/bench, so they never collide with other builds) ---------
build() {  # build PRESET DIR TARGET...
  local preset="$1" dir="$2"; shift 2
  cmake --preset "$preset" -B "$dir" -DHEADSCOPE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$dir" -j "$JOBS" --target "$@" | grep -v '^\[' || true
  test -f "$dir/CMakeCache.txt"
}
log "building native-release (-march=native and plain SSE2), wasm-release (SIMD128) and wasm-scalar"
build native-release "$OUT/native" headscope_bench_native headscope
cmake --preset native-release -B "$OUT/native-sse" -DHEADSCOPE_BUILD_TESTS=OFF -DHEADSCOPE_NATIVE_ARCH=OFF >/dev/null
cmake --build "$OUT/native-sse" -j "$JOBS" --target headscope_bench_native | grep -v '^\[' || true
build wasm-release "$OUT/wasm-simd" headscope_bench_wasm headscope_bench_wasm_prev headscope_wasm
build wasm-scalar "$OUT/wasm-scalar" headscope_bench_wasm headscope_wasm
build wasm-relaxed "$OUT/wasm-relaxed" headscope_wasm
for d in "$OUT/wasm-simd" "$OUT/wasm-scalar"; do
  [ -f "$d/headscope_bench_wasm.wasm" ] || { log "missing $d/headscope_bench_wasm.wasm"; exit 1; }
done
simd_ops=$(wasm-objdump -d "$OUT/wasm-simd/headscope_wasm.wasm" 2>/dev/null | grep -c 'f32x4' || true)
scalar_ops=$(wasm-objdump -d "$OUT/wasm-scalar/headscope_wasm.wasm" 2>/dev/null | grep -c 'f32x4' || true)
log "f32x4 instructions: SIMD build $simd_ops, scalar build $scalar_ops"
echo "{\"simd\": ${simd_ops:-0}, \"scalar\": ${scalar_ops:-0}}" > "$OUT/f32x4.json"

# the npm package's payload from the SIMD tree, for the browser page
rm -rf "$OUT/pkg" && mkdir -p "$OUT/pkg"
cp web/lib/*.js web/lib/*.json "$OUT/pkg/" && cp "$OUT/wasm-simd/headscope_wasm.js" "$OUT/wasm-simd/headscope_wasm.wasm" "$OUT/pkg/"
# Chromium validates relaxed SIMD: the page loads this build, as a reader's browser does
cp "$OUT/wasm-relaxed/headscope_wasm.wasm" "$OUT/pkg/headscope_wasm_relaxed.wasm"
# the package's worker with timestamps around the run (bench/page splits a worker run into its parts)
sed -e 's#value = plain(model.run(args.text, args.options));#const t0_ = performance.now(); value = plain(model.run(args.text, args.options)); value.__workerRunMs = performance.now() - t0_; value.__recvAt = performance.timeOrigin + t0_; value.__sentAt = performance.timeOrigin + performance.now();#' \
  web/lib/worker.js > "$OUT/pkg/probe-worker.js"
grep -q __workerRunMs "$OUT/pkg/probe-worker.js" || log "note: web/lib/worker.js changed; worker runs are not split into parts"

# the project's demo site (web/demo), built from the package in dist/, for the page-level figures
DEMO_ARGS=()
if [ -x web/demo/build.sh ] && [ "${BENCH_SKIP_PAGE:-0}" != 1 ]; then
  if scripts/build-package.sh >/dev/null && web/demo/build.sh "$PWD/$OUT/web" >/dev/null; then
    DEMO_ARGS=(--demo "$OUT/web")
  else
    log "could not build the demo site: page-level figures from bench/page only"
  fi
fi

# ---- onnxruntime-web's subject: the same model through torch.onnx -----------------------------------
ONNX=.cache/bench/onnx
if [ ! -f "$ONNX/manifest.json" ] || [ "$MODEL/model.safetensors" -nt "$ONNX/manifest.json" ] ||
   [ bench/export_onnx.py -nt "$ONNX/manifest.json" ] || ! grep -q "\"$(realpath "$MODEL")\"" "$ONNX/source.txt" 2>/dev/null; then
  log "exporting ONNX graphs with torch.onnx"
  /usr/bin/python3 bench/export_onnx.py "$MODEL" "$ONNX" 2>&1 | grep -v -i warn || true
  echo "\"$(realpath "$MODEL")\"" > "$ONNX/source.txt"
fi

# ---- runs -------------------------------------------------------------------------------------------
log "native"
"$OUT/native/headscope_bench_native" "$MODEL" "${QUICK[@]}" > "$OUT/native.json"
"$OUT/native-sse/headscope_bench_native" "$MODEL" --quick > "$OUT/native-sse.json"
log "calibration: SIMD128 throughput now, engine GEMM against a hand-written 4x8 tile"
node bench/variants.mjs --builds "$OUT" --out "$OUT/variants.json" --quick
log "node: wasm SIMD, wasm scalar, onnxruntime-web (default tiering: Liftoff, then TurboFan)"
node bench/node_bench.mjs --model "$MODEL" --onnx "$ONNX" --builds "$OUT" --out "$OUT/node.json" "${QUICK[@]}"
log "node --no-liftoff: cross-check of the SIMD build"
node --no-liftoff bench/node_bench.mjs --model "$MODEL" --onnx "$ONNX" --builds "$OUT" --out "$OUT/node-noliftoff.json" --simd-only --quick
log "native again (each native figure keeps the faster of the two runs, around the Node runs)"
"$OUT/native/headscope_bench_native" "$MODEL" "${QUICK[@]}" > "$OUT/native-2.json"
"$OUT/native-sse/headscope_bench_native" "$MODEL" --quick > "$OUT/native-sse-2.json"
if [ "${BENCH_SKIP_PAGE:-0}" != 1 ]; then
  log "headless Chromium: cold load, keystroke-to-paint"
  node bench/page_bench.mjs --model "$MODEL" --pkg "$OUT/pkg" --out "$OUT/page.json" "${DEMO_ARGS[@]}" "${QUICK[@]}" || log "page benchmark failed (see above)"
fi
if [ "${BENCH_SKIP_TRAIN:-0}" != 1 ]; then
  SITE=""
  [ "${BENCH_SKIP_PAGE:-0}" != 1 ] && [ ${#DEMO_ARGS[@]} -gt 0 ] && SITE="$OUT/web"
  train_rows "$OUT/native/headscope" "$OUT/pkg" "$SITE"
else
  rm -f "$OUT/train.json" "$OUT/train-page.json"
fi
log "report"
node bench/report.mjs --builds "$OUT" --model "$MODEL"
# GPT-2 small's shape (random checkpoint, native vs PyTorch, wasm vs onnxruntime-web): long, opt-in
if [ "${BENCH_GPT2:-0}" = 1 ]; then
  bench/gpt2_small.sh
fi
