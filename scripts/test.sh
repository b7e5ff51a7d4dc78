#!/usr/bin/env bash
# Sets up a fresh machine (scripts/setup.sh) and runs every test suite of headscope:
#   1. C++ engine, native, ASan + UBSan (Catch2 through ctest, preset native-debug), and under
#      ThreadSanitizer the tests of what runs on the thread pool (preset native-tsan: kernels/test_threads.cpp
#      runs every split kernel, the model, the trainer and the head measurement at several counts)
#   2. the same Catch2 suite built -O3 -march=native (preset native-release: the CLI's build, whose
#      kernels run this machine's widest vectors, e.g. 16 lanes with AVX-512)
#   3. the same Catch2 suite compiled to WebAssembly with pthreads, under node on worker_threads
#      (preset wasm-threads: the SIMD128 kernels, as the single-threaded package's, compiled with
#      -pthread), and the kernels' tests with relaxed SIMD's fused multiply-add (preset wasm-relaxed,
#      node --experimental-wasm-relaxed-simd). The single-threaded SIMD128 package (preset
#      wasm-release, built for the package) is what the JavaScript and browser suites run.
#   4. JavaScript tests (node --test: tests/js/unit on the sources, tests/js/package on dist/), the published types compiled by TypeScript consumers,
#      and browser end-to-end tests
#   5. libFuzzer targets (loaders, tokenizer), FUZZ_SECONDS each (default 5)
#   6. the commands README.md names, in a quick form (tests/readme_commands.sh): scripts/run.sh and
#      `npm start` serve the demo, scripts/run.sh --cli and the CLI lines run
#   7. the bench in its quick mode (BENCH_QUICK=1 scripts/bench.sh, = `npm run bench`), so it cannot rot
#   8. the README's picture, taken again in headless Chromium (`npm run screenshots`, written to build/)
#   9. the training pipeline's smoke run (PyTorch), and the self-checks of the float64 Llama-family
#      reference the fixtures come from (scripts/common/check_llama_torch.py)
# Every step runs even if an earlier one failed; the last line is the summary; the exit code is
# non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH=/usr/share/nodejs   # Debian's emscripten needs Debian's acorn (cpp/README.md, "Toolchain notes" 1)
JOBS="${JOBS:-2}"

scripts/setup.sh || { echo "headscope tests: setup failed"; exit 1; }

# each step's output also goes to build/test-logs/N.log, so that the summary can say what failed: CI
# keeps only the end of the output, and a failed step's own lines may be thousands of lines above it
LOGS=build/test-logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
declare -a names results
steps=0
step() {  # step NAME COMMAND...
  local name="$1"; shift
  echo; echo "=== $name ==="
  steps=$((steps + 1))
  local start=$SECONDS log="$LOGS/$steps.log"
  if "$@" 2>&1 | tee "$log"; then results+=("PASS"); else results+=("FAIL"); fi
  names+=("$name ($((SECONDS - start))s)")
}
# the lines of a failed step's log that say what failed (a test runner's failure lines, errors), at most 12
failures() {
  grep -aE '✘|FAIL|[Ff]ailed|Error|error:|Assertion|timed out|Timeout' "$1" | grep -avE '^\s*(✓|ok |PASS)' | tail -12 | cut -c1-300 | sed 's/^/      /'
}

ctest_preset() {  # ctest_preset PRESET [TARGET...]: builds the targets (default: all), runs its ctest
  local preset="$1"; shift
  cmake --preset "$preset" >/dev/null &&
    cmake --build --preset "$preset" -j "$JOBS" ${1:+--target "$@"} &&
    ctest --preset "$preset" -j "$JOBS"
}

# the sanitizer build: what its ctest runs, not the benches (the other presets build those for the bench)
# the formatters, check-only (scripts/format.mjs: clang-format, prettier, ruff); `node scripts/format.mjs` rewrites
step "formatting (check only)" node scripts/format.mjs --check
step "C++ native (ASan+UBSan)" ctest_preset native-debug headscope_tests
step "C++ native (ThreadSanitizer, the pool's tests)" ctest_preset native-tsan headscope_tests
step "C++ native -O3 -march=native" ctest_preset native-release
step "C++ wasm pthreads under node" ctest_preset wasm-threads headscope_tests headscope_wasm
# what the package ships and the tests (the bench adds its targets)
step "C++ wasm relaxed SIMD under node (kernels)" ctest_preset wasm-relaxed headscope_tests headscope_wasm
step "fuzzing (${FUZZ_SECONDS:-5} s per target)" scripts/fuzz.sh "${FUZZ_SECONDS:-5}"
if [ -f tests/js/run.sh ]; then
  step "JavaScript (unit, then the package)" tests/js/run.sh
fi
step "TypeScript consumers of the published types (tsc --noEmit)" tests/types/run.sh
if [ -f tests/e2e/run.sh ]; then
  step "browser end-to-end" tests/e2e/run.sh
fi
step "README commands (quick)" tests/readme_commands.sh
step "bench, quick mode" env BENCH_QUICK=1 scripts/bench.sh
step "README picture (npm run screenshots)" node scripts/screenshots.mjs --site build/e2e-site --out build/e2e-artifacts/readme-picture.png
# PyTorch is one of setup.sh's packages: without it this step fails rather than being skipped
step "training smoke run" /usr/bin/python3 scripts/train/train.py --smoke
step "float64 Llama-family reference, self-checks" /usr/bin/python3 scripts/common/check_llama_torch.py

echo
pass=0; fail=0
for i in "${!names[@]}"; do
  echo "  ${results[$i]}  ${names[$i]}"
  [ "${results[$i]}" = PASS ] && pass=$((pass + 1)) || { fail=$((fail + 1)); failures "$LOGS/$((i + 1)).log"; }
done
echo "headscope tests: $pass of $((pass + fail)) suites passed, $fail failed, in $((SECONDS / 60)) min $((SECONDS % 60)) s"
[ "$fail" -eq 0 ]
