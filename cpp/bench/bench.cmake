# Benchmarks, not part of the package or the test suite. Included from CMakeLists.txt.
#   wasm trees (wasm-release, wasm-scalar): headscope_bench_wasm, an ES module factory
#     (createHeadscopeBench) exposing the kernels at the model's shapes and the model to bench/*.mjs
#   native tree (native-release): headscope_bench_native, the same calls timed in C++
set(HEADSCOPE_BENCH_DIR ${CMAKE_CURRENT_LIST_DIR})
add_library(headscope_bench_variants STATIC ${HEADSCOPE_BENCH_DIR}/bench_variants.cpp ${HEADSCOPE_BENCH_DIR}/dev/kernel_versions.cpp)
target_link_libraries(headscope_bench_variants PUBLIC headscope_core headscope_kernels)
target_compile_definitions(headscope_bench_variants PRIVATE HEADSCOPE_SIMD=$<BOOL:${HEADSCOPE_SIMD}>)
if(EMSCRIPTEN)
  add_executable(headscope_bench_wasm ${HEADSCOPE_BENCH_DIR}/bench_embind.cpp)
  target_link_libraries(headscope_bench_wasm PRIVATE headscope_bench_variants headscope_core)
  target_include_directories(headscope_bench_wasm PRIVATE ${CMAKE_SOURCE_DIR}/cpp/bindings)
  target_link_options(headscope_bench_wasm PRIVATE
    --bind --profiling-funcs -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createHeadscopeBench
    -sENVIRONMENT=web,worker -sFILESYSTEM=0
    -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=32MB -sMAXIMUM_MEMORY=4GB -sTOTAL_STACK=1MB)
  set_target_properties(headscope_bench_wasm PROPERTIES SUFFIX ".js")
  headscope_wasm_postlink(headscope_bench_wasm)
else()
  add_executable(headscope_bench_native ${HEADSCOPE_BENCH_DIR}/bench_native.cpp)
  target_link_libraries(headscope_bench_native PRIVATE headscope_bench_variants headscope_core)
  # the blocked xsimd GEMM against Eigen's at GPT-2 small's shapes
  add_executable(headscope_gemm_native ${HEADSCOPE_BENCH_DIR}/gemm_native.cpp)
  target_link_libraries(headscope_gemm_native PRIVATE headscope_bench_variants headscope_core headscope_kernels)
endif()

