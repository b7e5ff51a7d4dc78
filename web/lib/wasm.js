// Loads the WebAssembly engine once per page, worker or Node process: the relaxed-SIMD build where
// the runtime validates it, else SIMD128. headscope.js reaches the engine only through loadCore().
// Each build has its own glue: the two binaries import different sets of invoke_* helpers (the
// compiler inlines differently around relaxed SIMD's kernels), so one glue cannot load both. Both
// are imported statically because bundlers' worker formats (IIFE) refuse dynamic import().
import createSimd128Core from './headscope_wasm.js';
import createRelaxedCore from './headscope_wasm_relaxed.js';
import { isNode, fetchResponse, readLocalFile } from './files.js';

// Written as literal `new URL(..., import.meta.url)` so bundlers (Vite, webpack 5, esbuild)
// see these files and emit them next to the bundle.
const WASM_URL = new URL('./headscope_wasm.wasm', import.meta.url);
// The same engine built with relaxed SIMD: its products multiply-add in one f32x4.relaxed_madd
// (fused on CPUs with FMA).
const WASM_RELAXED_URL = new URL('./headscope_wasm_relaxed.wasm', import.meta.url);

// Whether this engine validates relaxed SIMD's standard multiply-add: a 40-byte module whose one
// function returns f32x4.relaxed_madd of three zero vectors (Chromium: yes; node 20: only with
// --experimental-wasm-relaxed-simd). Chosen once, at load.
const RELAXED_SIMD = typeof WebAssembly === 'object' && WebAssembly.validate(new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0,
  65, 0, 253, 17, 65, 0, 253, 17, 65, 0, 253, 17, 253, 133, 2, 11]));

let corePromise = null;

// The bindings never throw (a throw out of wasm would leak); they return null and keep the C++
// message for lastError().
export function checked(core, value) {
  if (value === null) throw new Error(core.lastError());
  return value;
}

// Loads (once) and returns the WebAssembly module.
export function loadCore() {
  if (!corePromise) {
    corePromise = (async () => {
      const options = {};
      const wasmUrl = await chooseWasm();
      if (isNode) {
        // This Emscripten's glue would use fetch() on a file path in Node 20: hand it the bytes.
        options.wasmBinary = await readLocalFile(wasmUrl);
      } else {
        // Compiled here rather than by the glue, so that a .wasm that cannot be read (no CORS
        // header on a CDN, a policy) is an Error naming the file, not an abort.
        let compiled, url = wasmUrl;
        try {
          compiled = await compileWasm(url);
        } catch (e) {
          // a copy of the package without the relaxed build (self-hosted, say): SIMD128 then
          if (url !== WASM_RELAXED_URL || !/HTTP 404/.test(e.message)) throw e;
          url = WASM_URL;
          compiled = await compileWasm(url);
        }
        let instantiateFailed;
        const failure = new Promise((_, reject) => { instantiateFailed = reject; });
        options.instantiateWasm = (imports, receiveInstance) => {
          WebAssembly.instantiate(compiled, imports).then((instance) => receiveInstance(instance, compiled), instantiateFailed);
          return {};
        };
        return Promise.race([glueFor(url)(options), failure]);
      }
      return glueFor(wasmUrl)(options);
    })();
    corePromise.catch(() => { corePromise = null; });
  }
  return corePromise;
}

// The relaxed-SIMD build where the engine validates it and the package holds it (a build without
// it, e.g. a checkout built for one target, falls back to SIMD128).
async function chooseWasm() {
  if (!RELAXED_SIMD) return WASM_URL;
  if (isNode) {
    try {
      await readLocalFile(WASM_RELAXED_URL);
      return WASM_RELAXED_URL;
    } catch {
      return WASM_URL;
    }
  }
  return WASM_RELAXED_URL;
}

const glueFor = (url) => (url === WASM_RELAXED_URL ? createRelaxedCore : createSimd128Core);

async function compileWasm(url) {
  const response = await fetchResponse(url);
  const type = response.headers.get('content-type') || '';
  // compileStreaming needs the application/wasm type; a server without it still works, unstreamed
  if (typeof WebAssembly.compileStreaming === 'function' && type.startsWith('application/wasm'))
    return WebAssembly.compileStreaming(response);
  return WebAssembly.compile(await response.arrayBuffer());
}
