#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-14, -fsanitize=fuzzer,address,undefined) and runs each for
# SECONDS (default 60; the test run uses 10), after replaying the committed regression inputs,
# JOBS (default 2) at a time.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 3600 tokenizer
# Targets: safetensors, config, vocab, tokenizer, tokenizer_json (tests/fuzz/fuzz_<target>.cpp).
# Seeds: tests/fuzz/corpus/<target>/ (committed). New corpus entries go to build/fuzz/corpus/.
# A crash is written to build/fuzz/crashes/<target>/ and fails the run: fix it, then copy the input
# into tests/fuzz/regressions/<target>/ so it is replayed on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-60}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(safetensors config vocab tokenizer tokenizer_json)
OUT=build/fuzz
mkdir -p "$OUT"
CXX=clang++-14
FLAGS=(-std=c++20 -g1 -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Icpp/include -Icpp/src)
# the model's files as CMakeLists.txt lists them for the engine (its one list; the fuzz targets need
# no analysis or training), so that a new file there is linked here too
MODEL_SOURCES() { grep -m1 'model/forward' CMakeLists.txt | tr -s ' ' '\n' | grep '^model/' | sed 's#^#cpp/src/#; s#$#.cpp#'; }
SOURCES=(cpp/src/arch/gpt2.cpp cpp/src/arch/llama.cpp cpp/src/io/config.cpp cpp/src/io/safetensors.cpp cpp/src/text/tokenizer.cpp cpp/src/text/tokenizer_load.cpp cpp/src/text/tokenizer_json.cpp cpp/src/text/unicode.cpp cpp/src/text/unicode_nfc.cpp $(ls cpp/src/kernels/*.cpp) $(MODEL_SOURCES))

# the engine once as objects (JOBS at a time, default 2), then one link per target
JOBS="${JOBS:-2}"
# returns once fewer than JOBS background jobs run (it polls rather than wait -n, so that every job's
# status is still there for the wait on its pid below)
wait_for_slot() { while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 0.2; done; }
mkdir -p "$OUT/obj"
objs=()
pids=()
for s in "${SOURCES[@]}"; do
  o="$OUT/obj/$(basename "$s" .cpp).o"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ -n "$(find cpp/include cpp/src -newer "$o" -name '*.hpp' -o -newer "$o" -name '*.inc' | head -1)" ]; then
    wait_for_slot
    rm -f "$o"
    $CXX "${FLAGS[@]/-fsanitize=fuzzer,address,undefined/-fsanitize=fuzzer-no-link,address,undefined}" -c "$s" -o "$o" &
    pids+=($!)
  fi
  objs+=("$o")
done
for pid in "${pids[@]}"; do wait "$pid" || { echo "fuzz: compiling the engine failed" >&2; exit 1; }; done

export HEADSCOPE_FUZZ_MODEL_DIR="$PWD/tests/fixtures/models/tiny-hs4"
export HEADSCOPE_FUZZ_LLAMA_DIR="$PWD/tests/fixtures/models/llama-gqa"
export HEADSCOPE_FUZZ_GPT2_DIR="$PWD/$OUT/gpt2-tokenizer"
[ -f "$HEADSCOPE_FUZZ_GPT2_DIR/vocab.json" ] || node scripts/codegen/make-tokenizer-cases.mjs "$HEADSCOPE_FUZZ_GPT2_DIR" >/dev/null
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1

# one target: link, replay its regressions, fuzz; prints its report, returns non-zero on a finding
fuzz_target() {
  local t="$1" bin="$OUT/fuzz_$1" status=0
  $CXX "${FLAGS[@]}" "tests/fuzz/fuzz_$t.cpp" "${objs[@]}" -o "$bin" || { echo "fuzz $t: link failed"; return 1; }
  mkdir -p "$OUT/corpus/$t" "$OUT/crashes/$t"
  local regressions=(tests/fuzz/regressions/$t/*)
  if [ -e "${regressions[0]}" ]; then
    echo "fuzz $t: replaying ${#regressions[@]} regression inputs"
    "$bin" -rss_limit_mb=4096 "${regressions[@]}" >/dev/null 2>"$OUT/$t.regressions.log" || { echo "fuzz $t: REGRESSION"; tail -30 "$OUT/$t.regressions.log"; status=1; }
  fi
  echo "fuzz $t: ${SECONDS_EACH}s"
  if ! "$bin" -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=4096 -max_len=65536 \
       -artifact_prefix="$OUT/crashes/$t/" -print_final_stats=1 "$OUT/corpus/$t" "tests/fuzz/corpus/$t" >"$OUT/$t.log" 2>&1; then
    echo "fuzz $t: FAILED (input saved in $OUT/crashes/$t/)"
    grep -E "ERROR|SUMMARY|runtime error" "$OUT/$t.log" | head -10
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$OUT/$t.log" | tail -2 | tr '\n' ' '; echo
  fi
  return $status
}

# JOBS targets at a time (libFuzzer runs on one core); reports printed in target order
status=0
declare -A tpid
for t in "${TARGETS[@]}"; do
  wait_for_slot
  fuzz_target "$t" >"$OUT/$t.report" 2>&1 &
  tpid[$t]=$!
done
for t in "${TARGETS[@]}"; do
  wait "${tpid[$t]}" || status=1
  cat "$OUT/$t.report"
done
exit $status
