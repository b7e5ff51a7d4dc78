#!/usr/bin/env bash
# `npm run bench`: builds the benchmark subjects, runs every sub-benchmark side by side and writes
# bench/results/results.json, the tables of bench/README.md (between its `tables` markers) and
# bench/results/latency.svg. bench/README.md says what each figure means.
#   subjects: our wasm SIMD128 build, the same code without SIMD (preset wasm-scalar), our native
#   build (-O3 -march=native) and the same built for plain SSE2, onnxruntime-web (wasm backend, one
#   thread) on the same model exported with torch.onnx; page-level figures in headless Chromium;
#   training speed against PyTorch (1 thread) and train.html in Chromium.
# Options (environment):
#   BENCH_QUICK=1   every sub-benchmark in a shortened form (CI runs this after scripts/test.sh); its
#                   noisy numbers go to build/bench/quick/ only, never to bench/. It includes
#                   bench/harness/gpt2_small.sh on a small model of GPT-2's vocabulary and context.
#   BENCH_GPT2=1    the full bench also runs bench/harness/gpt2_small.sh (GPT-2 small's shape: long, opt-in) and
#                   bench/shapes/vs_torch.py --family llama on SmolLM2-135M's shape, and the prefill against wllama
#   BENCH_WLLAMA=1  the full bench runs the prefill against wllama (llama.cpp) on SmolLM2-135M's shape
#   BENCH_ONLY=train  only the training rows (merged into the last results.json of this mode)
#   BENCH_SKIP_TRAIN=1, BENCH_SKIP_PAGE=1  leave those rows out (full mode only: quick runs all)
#   BENCH_MODEL=DIR another model folder; JOBS=N build parallelism (default 2)
#   BENCH_ALLOW_REGRESSIONS=1  the report marks figures more than 1.5x worse than the last committed
#                   full run's (bench/harness/regressions.mjs) without failing on them
# Every sub-benchmark runs even if an earlier one failed; the last lines list each stage with its
# time; the exit code is non-zero if any stage failed (and then no report is written). The full
# run's report stage also fails, after writing the report, on a figure more than 1.5x worse than the
# last committed full run's that bench/README.md's "Regressions explained" does not explain.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs   # Debian's emscripten needs Debian's acorn (cpp/README.md, "Toolchain notes")
JOBS="${JOBS:-2}"
QUICK="${BENCH_QUICK:-0}"
log() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }

# ---- what this needs: stop with one line rather than fail half-way --------------------------------
for tool in cmake ninja emcmake wasm-objdump /usr/bin/chromium /usr/bin/python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool not found: run scripts/setup.sh first" >&2; exit 1; }
done
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "bench: PyTorch (python3-torch) not found: run scripts/setup.sh first" >&2; exit 1; }
for p in onnxruntime-web playwright-core esbuild; do
  [ -d "node_modules/$p" ] || { echo "bench: node_modules/$p is missing: run npm ci (or scripts/setup.sh) first" >&2; exit 1; }
done

# ---- where things go ----------------------------------------------------------------------------
# RAW: this run's raw measurements (one JSON per sub-benchmark), cleared first so that a report never
# mixes in a file an earlier run left. The full bench's report goes to bench/, the quick one's stays
# beside its raw files.
if [ "$QUICK" = 1 ]; then
  RAW=build/bench/quick
  REPORT=(--json "$RAW/results.json" --tables "$RAW/tables.md" --svg "$RAW/latency.svg")
  Q=(--quick)
else
  RAW=build/bench/full
  REPORT=(--json bench/results/results.json --readme bench/README.md --svg bench/results/latency.svg)
  Q=()
fi
LOGS="$RAW/logs"
mkdir -p "$RAW" "$LOGS" .cache/bench
[ "${BENCH_ONLY:-}" = train ] || rm -f "$RAW"/*.json
rm -f "$LOGS"/*

# ---- stages: each timed; a failed one is recorded and the run goes on -----------------------------
declare -a STAGES=()
FAILED=0
stage() {  # stage NAME COMMAND...
  local name="$1"; shift
  local t0=$SECONDS rc
  log "$name"
  # a subshell outside any `if`, so `set -e` holds inside a stage's functions
  set +e
  ( set -e; "$@" )
  rc=$?
  set -e
  if [ "$rc" = 0 ]; then STAGES+=("ok    $(printf '%4d' $((SECONDS - t0))) s  $name")
  else STAGES+=("FAIL  $(printf '%4d' $((SECONDS - t0))) s  $name (exit $rc)"); FAILED=1; log "FAILED: $name"; fi
}
summary() {
  echo
  echo "bench stages ($([ "$QUICK" = 1 ] && echo quick || echo full) mode, $SECONDS s in all):"
  printf '  %s\n' "${STAGES[@]}" | tee "$RAW/stages.txt"
  if [ "$FAILED" = 1 ]; then echo "bench: FAILED (see the stages above; build logs in $LOGS)"; exit 1; fi
  echo "bench: all stages passed"
}

# ---- build trees ------------------------------------------------------------------------------------
# The presets' own trees (build/native-release, build/wasm-release, build/wasm-relaxed) are the test
# suite's and the package's (scripts/test.sh, scripts/build-package.sh): after them the bench only
# links its few extra targets there instead of compiling the engine again (a wasm build of the engine
# takes about half a minute on 2 cores). A tree that does not exist yet is configured as those scripts
# configure it. The two subjects only the bench needs live under build/bench/.
NATIVE=build/native-release
SIMD=build/wasm-release
RELAXED=build/wasm-relaxed
SCALAR=build/bench/wasm-scalar
NATIVE_SSE=build/bench/native-sse
# In quick mode (CI) those two are compiled -O1, in trees of their own (a full run's stay -O3): their
# numbers mean nothing there, what is checked is that they build and agree. The build stage then took
# 92 s where it took 120 (native-sse 91 s against 119 beside wasm-scalar 83 against 96).
SUBJECT_OPT=()
if [ "$QUICK" = 1 ]; then
  SCALAR=build/bench/quick-O1/wasm-scalar
  NATIVE_SSE=build/bench/quick-O1/native-sse
  SUBJECT_OPT=(-DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG")
fi
configure() {  # configure DIR PRESET [ARGS...]: once; a configured tree reconfigures itself when needed
  local dir="$1" preset="$2"; shift 2
  [ -f "$dir/CMakeCache.txt" ] || cmake --preset "$preset" -B "$dir" "$@" >"$LOGS/configure-$(basename "$dir").log" 2>&1 ||
    { tail -20 "$LOGS/configure-$(basename "$dir").log" >&2; return 1; }
}
build() {  # build DIR TARGET...
  local dir="$1"; shift
  local t0=$SECONDS out="$LOGS/build-$(basename "$dir").log"
  cmake --build "$dir" -j "$JOBS" --target "$@" >>"$out" 2>&1 || { tail -40 "$out" >&2; log "build failed in $dir: $*"; return 1; }
  log "  $dir: $* ($((SECONDS - t0)) s)"
}
# Two lanes at once, native and wasm: each tree's link steps run on one core (the relaxed build's
# post-link rewrite alone takes minutes), so the other lane's compiles use the second one.
build_native() {
  configure "$NATIVE" native-release
  build "$NATIVE" headscope headscope_bench_native headscope_gemm_native
  configure "$NATIVE_SSE" native-release -DHEADSCOPE_BUILD_TESTS=OFF -DHEADSCOPE_NATIVE_ARCH=OFF "${SUBJECT_OPT[@]}"
  build "$NATIVE_SSE" headscope_bench_native
}
build_wasm() {
  local gpt2_targets=()
  # bench/harness/gpt2_small.sh times the relaxed build's bench module too (not in quick mode: its build and
  # post-link rewrite took a minute of CI's run)
  if [ "$QUICK" != 1 ] && [ "${BENCH_GPT2:-0}" = 1 ]; then gpt2_targets=(headscope_bench_wasm); fi
  configure "$SIMD" wasm-release
  build "$SIMD" headscope_wasm headscope_bench_wasm
  configure "$RELAXED" wasm-relaxed
  build "$RELAXED" headscope_wasm "${gpt2_targets[@]}"
  configure "$SCALAR" wasm-scalar "${SUBJECT_OPT[@]}"
  build "$SCALAR" headscope_bench_wasm
}
build_all() {
  local native wasm rc=0 commit changed
  # what is measured: the commit, and how many of the files the builds and the bench read differ from it
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  changed=$(git status --porcelain -- cpp CMakeLists.txt CMakePresets.json web bench scripts 2>/dev/null | wc -l)
  build_native & native=$!
  build_wasm & wasm=$!
  wait "$native" || rc=1
  wait "$wasm" || rc=1
  [ "$rc" = 0 ] || return 1
  # the builds are what they say: SIMD128 instructions in the SIMD build, none in the scalar one
  local simd scalar
  simd=$(wasm-objdump -d "$SIMD/headscope_wasm.wasm" | grep -c 'f32x4')
  scalar=$(wasm-objdump -d "$SCALAR/headscope_bench_wasm.wasm" | grep -c 'f32x4' || true)
  log "  f32x4 instructions: SIMD build $simd, scalar build $scalar"
  [ "$simd" -gt 0 ] && [ "$scalar" = 0 ] || { log "unexpected f32x4 counts"; return 1; }
  local size="stat -c %s"
  cat > "$RAW/builds.json" <<EOF
{"source": {"commit": "$commit", "files_changed": $changed},
 "f32x4": {"simd": $simd, "scalar": $scalar},
 "bytes": {"wasm_bytes": $($size "$SIMD/headscope_wasm.wasm"), "wasm_relaxed_bytes": $($size "$RELAXED/headscope_wasm.wasm"),
   "glue_js_bytes": $($size "$SIMD/headscope_wasm.js")}}
EOF
}
# The npm package (dist/, from the SIMD and relaxed trees just built), and from it the payload the
# bench's own page loads and the demo site (web/demo) the page-level rows measure.
package_and_site() {
  scripts/build-package.sh >"$LOGS/build-package.log" 2>&1 || { tail -20 "$LOGS/build-package.log" >&2; return 1; }
  rm -rf "$RAW/pkg" && mkdir -p "$RAW/pkg"
  cp dist/*.js dist/*.json dist/*.wasm "$RAW/pkg/"
  # the shipped models' list: files.js imports it (the models themselves are not the bench's payload)
  mkdir -p "$RAW/pkg/models" && cp dist/models/index.json "$RAW/pkg/models/"
  web/demo/build.sh "$PWD/$RAW/web" >"$LOGS/build-site.log" 2>&1 || { tail -20 "$LOGS/build-site.log" >&2; return 1; }
}

# ---- the model: the default model, or a random stand-in of the same shape until it is trained ------
MODEL="${BENCH_MODEL:-web/models/headscope-base}"
if [ -z "${BENCH_MODEL:-}" ] && [ ! -f "$MODEL/model.safetensors" ]; then
  log "$MODEL is not trained yet: the bench runs a random model of its shape"
  MODEL=.cache/bench/random-base
fi
# onnxruntime-web's subject: the same model through torch.onnx, exported again when the model or the
# exporter changed
ONNX=.cache/bench/onnx
export_onnx() {
  if [ ! -f "$ONNX/manifest.json" ] || [ "$MODEL/model.safetensors" -nt "$ONNX/manifest.json" ] ||
     [ bench/shapes/export_onnx.py -nt "$ONNX/manifest.json" ] || [ "$(cat "$ONNX/source.txt" 2>/dev/null)" != "$(realpath "$MODEL")" ]; then
    rm -rf "$ONNX"
    /usr/bin/python3 bench/shapes/export_onnx.py "$MODEL" "$ONNX" >"$LOGS/export-onnx.log" 2>&1 || { tail -20 "$LOGS/export-onnx.log" >&2; return 1; }
    realpath "$MODEL" > "$ONNX/source.txt"
  else
    log "  $ONNX is up to date"
  fi
}
model_and_onnx() {
  if [ "$MODEL" = .cache/bench/random-base ] && [ ! -f "$MODEL/model.safetensors" ]; then
    /usr/bin/python3 bench/shapes/make_model.py "$MODEL"
  fi
  export_onnx
}

# ---- sub-benchmarks ---------------------------------------------------------------------------------
native_run() {  # native_run N: both native builds (N: 1 before the Node runs, 2 after them)
  "$NATIVE/headscope_bench_native" "$MODEL" "${Q[@]}" > "$RAW/native-$1.json"
  # the SSE2 build is a reference point for the cost of WebAssembly itself: its short form suffices
  "$NATIVE_SSE/headscope_bench_native" "$MODEL" --quick > "$RAW/native-sse-$1.json"
}
train_speed() {
  # quick: the default preset's shape only (the wider ones run the same code, for a minute of CI)
  node bench/harness/train-speed.mjs --native "$NATIVE/headscope" --pkg "$RAW/pkg" --out "$RAW/train.json" "${Q[@]}" \
    $([ "$QUICK" = 1 ] && echo --shapes default)
}
train_page() {
  node bench/harness/train-page-bench.mjs --site "$RAW/web" --out "$RAW/train-page.json" --repeats "$([ "$QUICK" = 1 ] && echo 1 || echo 2)"
}
typing() {
  # the two figures of typing in the demo (bench/harness/typing-bench.mjs), on GPT-2 small's exact shape in
  # both modes: the quick run's are the figures a regression shows first, so CI records them
  local g=.cache/bench/gpt2-small
  [ -f "$g/model.safetensors" ] || /usr/bin/python3 bench/shapes/make_gpt2_small.py "$g" >/dev/null
  node bench/harness/typing-bench.mjs --demo "$RAW/web" --gpt2 "$g" --out "$RAW/typing.json" "${Q[@]}"
}
patching() {
  # activation patching's speed: a 20-token pair on GPT-2 small's shape, natively and in
  # Chromium; quick: the same pair on the tiny GPT-2 of gpt2_small.sh's quick mode (seconds)
  local g=.cache/bench/gpt2-small shape=() browser=()
  [ "$QUICK" = 1 ] && g=.cache/bench/gpt2-tiny shape=(--layers 2 --heads 4 --embd 64)
  [ -f "$g/model.safetensors" ] || /usr/bin/python3 bench/shapes/make_gpt2_small.py "$g" "${shape[@]}" >/dev/null
  [ "$QUICK" != 1 ] && [ "${BENCH_SKIP_PAGE:-0}" = 1 ] && browser=(--no-browser)
  node bench/harness/patch-bench.mjs --model "$g" --cli "$NATIVE/headscope" --pkg "$RAW/pkg" --out "$RAW/patching.json" \
    "${Q[@]}" "${browser[@]}"
}
explain_and_circuits() {
  # the score split of one cell and the circuits, natively: 20 tokens on GPT-2 small's shape; quick:
  # the tiny GPT-2 of the patching stage (seconds)
  local g=.cache/bench/gpt2-small shape=()
  [ "$QUICK" = 1 ] && g=.cache/bench/gpt2-tiny shape=(--layers 2 --heads 4 --embd 64)
  [ -f "$g/model.safetensors" ] || /usr/bin/python3 bench/shapes/make_gpt2_small.py "$g" "${shape[@]}" >/dev/null
  node bench/harness/explain-bench.mjs --model "$g" --cli "$NATIVE/headscope" --out "$RAW/explain.json" "${Q[@]}"
}
report() {
  local allow=()
  [ "${BENCH_ALLOW_REGRESSIONS:-0}" = 1 ] && allow=(--allow-regressions)
  node bench/harness/report.mjs --raw "$RAW" --model "$MODEL" "${REPORT[@]}" "${allow[@]}" "$@"
}

stage "build: native and native SSE2 | wasm SIMD128, relaxed and scalar" build_all
[ "$FAILED" = 0 ] || summary   # nothing can be measured without the builds
stage "build: the package (dist/), the bench page's payload, the demo site" package_and_site
if [ "${BENCH_ONLY:-}" = train ]; then
  stage "training: native, wasm SIMD128 and relaxed (Node), PyTorch 1 thread, interleaved" train_speed
  stage "training: train.html, Start to the first induction head (headless Chromium)" train_page
  [ "$FAILED" = 0 ] && stage "report: the training rows" report --only-train
  summary
  exit 0
fi
stage "model ($MODEL) and its ONNX export (torch.onnx)" model_and_onnx
[ "$FAILED" = 0 ] || summary
stage "native: -march=native and SSE2, first run" native_run 1
stage "calibration: SIMD128 peak now, engine GEMM against a hand-written 4x8 tile, previous kernels" \
  node bench/harness/variants.mjs --simd "$SIMD" --model "$MODEL" --out "$RAW/variants.json" --quick
stage "node: wasm SIMD, wasm scalar, onnxruntime-web (default tiering: Liftoff, then TurboFan)" \
  node bench/harness/node-bench.mjs --model "$MODEL" --onnx "$ONNX" --simd "$SIMD" --scalar "$SCALAR" --pkg "$RAW/pkg" --out "$RAW/node.json" "${Q[@]}"
stage "node --no-liftoff: cross-check of the SIMD build" \
  node --no-liftoff bench/harness/node-bench.mjs --model "$MODEL" --onnx "$ONNX" --simd "$SIMD" --out "$RAW/node-noliftoff.json" --simd-only --quick
stage "native: second run (each native figure keeps the faster of the two, around the Node runs)" native_run 2
if [ "$QUICK" = 1 ] || [ "${BENCH_SKIP_PAGE:-0}" != 1 ]; then
  stage "page: cold load and keystroke to paint, bench/harness/page and web/demo (headless Chromium)" \
    node bench/harness/page-bench.mjs --model "$MODEL" --pkg "$RAW/pkg" --demo "$RAW/web" --out "$RAW/page.json" "${Q[@]}"
fi
if [ "$QUICK" = 1 ] || [ "${BENCH_SKIP_PAGE:-0}" != 1 ]; then
  stage "typing in the demo: the default model, and GPT-2 small's shape at 950 tokens (headless Chromium)" typing
fi
stage "activation patching: a 20-token pair, every head exact, native and in Chromium (bench/harness/patch-bench.mjs)" \
  patching
stage "score splits and circuits: headscope explain of one cell, headscope circuits, native (bench/harness/explain-bench.mjs)" \
  explain_and_circuits
if [ "$QUICK" = 1 ] || [ "${BENCH_SKIP_TRAIN:-0}" != 1 ]; then
  stage "training: native, wasm SIMD128 and relaxed (Node), PyTorch 1 thread, interleaved" train_speed
  if [ "$QUICK" = 1 ] || [ "${BENCH_SKIP_PAGE:-0}" != 1 ]; then
    stage "training: train.html, Start to the first induction head (headless Chromium)" train_page
  fi
fi
# GPT-2 small's shape: long, opt-in in the full bench; the quick run takes a small model instead
if [ "$QUICK" = 1 ] || [ "${BENCH_GPT2:-0}" = 1 ]; then
  stage "GPT-2 $([ "$QUICK" = 1 ] && echo "vocabulary and context, small model" || echo "small's shape") (bench/harness/gpt2_small.sh)" \
    env BENCH_SITE="$RAW/web" bench/harness/gpt2_small.sh
fi
# A Llama-family shape (SmolLM2-135M's: grouped-query attention, 30 layers), native against PyTorch:
# with GPT-2 small's, opt-in in the full bench (bench/results/llama-small-native.md); the quick run takes the
# grouped-query test fixture
if [ "$QUICK" = 1 ]; then
  stage "Llama family: the grouped-query fixture, native against PyTorch (bench/shapes/vs_torch.py --family llama --quick)" \
    /usr/bin/python3 bench/shapes/vs_torch.py --family llama --quick --cli "$NATIVE/headscope" --markdown "$RAW/llama-native.md"
elif [ "${BENCH_GPT2:-0}" = 1 ]; then
  stage "Llama family: SmolLM2-135M's shape, native against PyTorch (bench/shapes/vs_torch.py --family llama)" \
    /usr/bin/python3 bench/shapes/vs_torch.py --family llama --cli "$NATIVE/headscope" --markdown bench/results/llama-small-native.md
fi
# Prefill against wllama (llama.cpp in wasm) in Chromium, at equal threads, float32 against F32 and q8 against
# Q8_0 (bench/harness/browser-llama-prefill.mjs): SmolLM2-135M's shape at T = 256 and 1,024 in the full bench with
# BENCH_GPT2=1 or BENCH_WLLAMA=1 (bench/results/smollm2-prefill-wllama.md); quick: tiny-llama3 at T = 32. The GGUF
# files (bench/shapes/make_gguf.py) are written beside the checkpoint when missing or older than it or the writer.
llama_prefill() {
  local m=.cache/bench/smollm2-135m shape=() out=(--out bench/results/smollm2-prefill-wllama.json --markdown bench/results/smollm2-prefill-wllama.md) t
  if [ "$QUICK" = 1 ]; then
    m=.cache/bench/tiny-llama3 shape=(--shape tiny-llama3) out=(--out "$RAW/llama-prefill.json" --markdown "$RAW/llama-prefill.md" --quick)
  fi
  [ -f "$m/model.safetensors" ] || /usr/bin/python3 bench/shapes/make_llama_small.py "$m" "${shape[@]}" >/dev/null
  for t in f32 q8_0; do
    if [ ! -f "$m.$t.gguf" ] || [ "$m/model.safetensors" -nt "$m.$t.gguf" ] || [ bench/shapes/make_gguf.py -nt "$m.$t.gguf" ]; then
      /usr/bin/python3 bench/shapes/make_gguf.py "$m" "$m.$t.gguf" --type "$t" >/dev/null
    fi
  done
  node bench/harness/browser-llama-prefill.mjs --model "$m" --gguf-f32 "$m.f32.gguf" --gguf-q8 "$m.q8_0.gguf" --pkg "$RAW/pkg" "${out[@]}"
}
if [ "$QUICK" = 1 ] || [ "${BENCH_GPT2:-0}" = 1 ] || [ "${BENCH_WLLAMA:-0}" = 1 ]; then
  stage "prefill against wllama (llama.cpp), float32 / F32 and q8 / Q8_0, 1 and 2 threads (headless Chromium)" llama_prefill
fi
# bench/harness/before-after.mjs compares two builds of the engine (run by hand around a change); the quick run
# puts this build on both sides, one round, so the script cannot rot
before_after_smoke() {
  local d="$RAW/before-after"
  rm -rf "$d" && mkdir -p "$d"
  ln -s "$PWD/$NATIVE/headscope" "$d/headscope"
  ln -s "$PWD/$SIMD/headscope_wasm.js" "$d/headscope_wasm.js"
  ln -s "$PWD/$SIMD/headscope_wasm.wasm" "$d/headscope_wasm.wasm"
  node bench/harness/before-after.mjs --before "$d" --after "$d" --rounds 1 --out "$RAW/before-after.json" >/dev/null
}
if [ "$QUICK" = 1 ]; then
  stage "bench/harness/before-after.mjs on this build against itself (one round)" before_after_smoke
fi
if [ "$FAILED" = 0 ]; then
  stage "report" report
  # the committed tables are rendered from the committed results.json, never edited by hand
  if [ "$QUICK" = 1 ]; then
    stage "bench/README.md's tables are bench/results/results.json's" \
      node bench/harness/report.mjs --json bench/results/results.json --readme bench/README.md --check
  fi
else
  log "a stage failed: no report"
fi
summary
