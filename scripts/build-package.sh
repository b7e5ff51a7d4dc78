#!/usr/bin/env bash
# Builds the WebAssembly modules (presets wasm-release, wasm-relaxed, wasm-threads, wasm-threads-relaxed) and
# assembles dist/, the npm package's payload: the JS API, its types, the worker, the web component, the .wasm and
# the shipped models.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs   # Debian's emscripten needs Debian's acorn (cpp/README.md, "Toolchain notes" 1)
. scripts/common/need_toolchain.sh
need_toolchain "${HEADSCOPE_WHO:-scripts/build-package.sh}"
cmake --preset wasm-release >/dev/null
cmake --build --preset wasm-release --target headscope_wasm -j "${JOBS:-2}"
# the same engine with relaxed SIMD's multiply-add; the JS layer picks it where the browser has it
cmake --preset wasm-relaxed >/dev/null
cmake --build --preset wasm-relaxed --target headscope_wasm -j "${JOBS:-2}"
# and with pthreads, for cross-origin-isolated pages (the JS layer picks it for a run on more than one
# thread), with relaxed SIMD where the browser has it and without
cmake --preset wasm-threads >/dev/null
cmake --build --preset wasm-threads --target headscope_wasm -j "${JOBS:-2}"
cmake --preset wasm-threads-relaxed >/dev/null
cmake --build --preset wasm-threads-relaxed --target headscope_wasm -j "${JOBS:-2}"
rm -rf dist.tmp && mkdir -p dist.tmp/models
cp build/wasm-release/headscope_wasm.js build/wasm-release/headscope_wasm.wasm dist.tmp/
# each binary with its own glue (their invoke_* imports differ: web/lib/wasm.js)
cp build/wasm-relaxed/headscope_wasm.wasm dist.tmp/headscope_wasm_relaxed.wasm
cp build/wasm-relaxed/headscope_wasm.js dist.tmp/headscope_wasm_relaxed.js
cp build/wasm-threads/headscope_wasm_threads.js build/wasm-threads/headscope_wasm_threads.worker.js \
   build/wasm-threads/headscope_wasm_threads.wasm dist.tmp/
cp build/wasm-threads-relaxed/headscope_wasm_threads_relaxed.js \
   build/wasm-threads-relaxed/headscope_wasm_threads_relaxed.worker.js \
   build/wasm-threads-relaxed/headscope_wasm_threads_relaxed.wasm dist.tmp/
# the JS API, its types and models/index.json, under their published names (PUBLISHED in web/bundle.mjs)
node web/bundle.mjs --out dist.tmp lib
for m in web/models/*/; do
  [ -f "$m/model.safetensors" ] || continue
  name=$(basename "$m")
  mkdir -p "dist.tmp/models/$name"
  for f in config.json model.safetensors vocab.json merges.txt tokenizer.json card.json README.md heldout.txt; do
    [ -f "$m/$f" ] && cp "$m/$f" "dist.tmp/models/$name/"
  done
done
# the <headscope-view> web component, bundled into one module beside the API (esbuild, devDependency)
web/component/build.sh "$PWD/dist.tmp"
rm -rf dist && mv dist.tmp dist
echo "dist/: $(du -sh dist | cut -f1)"
