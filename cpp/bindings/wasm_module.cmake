# The WebAssembly module of the npm package: an ES module factory (createHeadscopeCore) plus its
# .wasm. No eval (DYNAMIC_EXECUTION=0, so it runs under a CSP without 'unsafe-eval'), memory grows on
# demand. Single-threaded, except in the wasm-threads tree (HEADSCOPE_WASM_THREADS): a second build
# for cross-origin-isolated pages, which the package picks at load (web/lib/wasm.js).
add_executable(headscope_wasm cpp/bindings/embind.cpp cpp/bindings/analysis_bindings.cpp cpp/bindings/train_bindings.cpp
               cpp/bindings/explain_bindings.cpp cpp/bindings/map_bindings.cpp)
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
if(HEADSCOPE_WASM_THREADS)
  # Named for the package (headscope_wasm_threads.js, .worker.js, .wasm): the glue finds its pthread
  # worker by its own name. The pool of pthread workers is made before the factory resolves, as many
  # as the loader asks for in Module.headscopeWorkers (the engine's threads minus the calling one): a
  # worker cannot start while the thread that made it waits. STRICT=2: a thread beyond the pool is an
  # error (std::system_error, refused by the loader) rather than a deadlock.
  # (headscope_wasm_threads_relaxed.* in the wasm-threads-relaxed tree: relaxed SIMD's multiply-add too)
  if(HEADSCOPE_RELAXED_SIMD)
    set_target_properties(headscope_wasm PROPERTIES OUTPUT_NAME headscope_wasm_threads_relaxed)
  else()
    set_target_properties(headscope_wasm PROPERTIES OUTPUT_NAME headscope_wasm_threads)
  endif()
  # USE_ES6_IMPORT_META=0: the glue would start its workers with a literal
  # `new Worker(new URL('...worker.js', import.meta.url))`, which bundlers (Vite) take for a module
  # worker to bundle, and fail on; the loader passes locateFile and mainScriptUrlOrBlob instead.
  target_link_options(headscope_wasm PRIVATE "-sPTHREAD_POOL_SIZE=Module.headscopeWorkers" -sPTHREAD_POOL_SIZE_STRICT=2
                      -sUSE_ES6_IMPORT_META=0)
endif()
headscope_wasm_postlink(headscope_wasm)
