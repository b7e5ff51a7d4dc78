# The WebAssembly module of the npm package: an ES module factory (createHeadscopeCore) plus its
# .wasm. Single-threaded (pages that embed a widget cannot set cross-origin isolation headers),
# no eval (DYNAMIC_EXECUTION=0, so it runs under a CSP without 'unsafe-eval'), memory grows on demand.
add_executable(headscope_wasm cpp/bindings/embind.cpp)
target_link_libraries(headscope_wasm PRIVATE headscope_core)
target_link_options(headscope_wasm PRIVATE
  --bind
  -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createHeadscopeCore
  -sDYNAMIC_EXECUTION=0
  -sENVIRONMENT=web,worker      # with node in the list this Emscripten's ES module breaks in Node (cpp/README.md, "Toolchain notes" 6); Node passes wasmBinary
  -sFILESYSTEM=0
  -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=32MB -sMAXIMUM_MEMORY=4GB
  -sTOTAL_STACK=1MB)
set_target_properties(headscope_wasm PROPERTIES SUFFIX ".js")
headscope_wasm_postlink(headscope_wasm)
