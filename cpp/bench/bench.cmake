# Benchmarks (issue 7), not part of the package or the test suite. Included from CMakeLists.txt.
#   wasm trees (wasm-release, wasm-scalar): headscope_bench_wasm, an ES module factory
#     (createHeadscopeBench) exposing the kernels at the model's shapes and the model to bench/*.mjs
#   native tree (native-release): headscope_bench_native, the same calls timed in C++
set(HEADSCOPE_BENCH_DIR ${CMAKE_CURRENT_LIST_DIR})
add_library(headscope_bench_variants STATIC ${HEADSCOPE_BENCH_DIR}/bench_variants.cpp ${HEADSCOPE_BENCH_DIR}/kernels_candidates.cpp)
target_link_libraries(headscope_bench_variants PUBLIC headscope_core)
target_compile_definitions(headscope_bench_variants PRIVATE HEADSCOPE_SIMD=$<BOOL:${HEADSCOPE_SIMD}>)
if(EMSCRIPTEN)
  add_executable(headscope_bench_wasm ${HEADSCOPE_BENCH_DIR}/bench_embind.cpp)
  target_link_libraries(headscope_bench_wasm PRIVATE headscope_bench_variants headscope_core)
  target_link_options(headscope_bench_wasm PRIVATE
    --bind --profiling-funcs -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createHeadscopeBench
    -sENVIRONMENT=web,worker -sFILESYSTEM=0
    -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=32MB -sMAXIMUM_MEMORY=2GB -sTOTAL_STACK=1MB)
  set_target_properties(headscope_bench_wasm PROPERTIES SUFFIX ".js")
else()
  add_executable(headscope_bench_native ${HEADSCOPE_BENCH_DIR}/bench_native.cpp)
  target_link_libraries(headscope_bench_native PRIVATE headscope_bench_variants headscope_core)
endif()
