// Loads the WebAssembly engine once per page, worker or Node process: single-threaded, the
// relaxed-SIMD build where the runtime validates it, else SIMD128; or, for a run on more than one
// thread (engineThreads()), the threaded build, with relaxed SIMD where it validates (Chromium), else
// SIMD128 (Safari, Firefox without the flag). headscope.js reaches the engine only through
// engineThreads() and loadCore(). Each build has its own glue: the binaries import different sets of
// invoke_* helpers (the compiler inlines differently around relaxed SIMD's kernels), so one glue
// cannot load another's. All are imported statically because bundlers' worker formats (IIFE) refuse
// dynamic import().
import createSimd128Core from './headscope_wasm.js';
import createRelaxedCore from './headscope_wasm_relaxed.js';
import createThreadedCore from './headscope_wasm_threads.js';
import createThreadedRelaxedCore from './headscope_wasm_threads_relaxed.js';
import { isNode, fetchResponse, readLocalFile } from './files.js';

// Written as literal `new URL(..., import.meta.url)` so bundlers (Vite, webpack 5, esbuild)
// see these files and emit them next to the bundle.
const WASM_URL = new URL('./headscope_wasm.wasm', import.meta.url);
// The same engine built with relaxed SIMD: its products multiply-add in one f32x4.relaxed_madd
// (fused on CPUs with FMA).
const WASM_RELAXED_URL = new URL('./headscope_wasm_relaxed.wasm', import.meta.url);
// The threaded build (pthreads on shared memory): its glue starts one Web Worker per thread from its
// .worker.js, which imports the glue again by URL.
const THREADED = {
  wasm: new URL('./headscope_wasm_threads.wasm', import.meta.url),
  glue: new URL('./headscope_wasm_threads.js', import.meta.url),
  worker: new URL('./headscope_wasm_threads.worker.js', import.meta.url),
  create: createThreadedCore,
};
// ... and with relaxed SIMD's multiply-add, as the single-threaded pair (cpp/README.md, "Builds")
const THREADED_RELAXED = {
  wasm: new URL('./headscope_wasm_threads_relaxed.wasm', import.meta.url),
  glue: new URL('./headscope_wasm_threads_relaxed.js', import.meta.url),
  worker: new URL('./headscope_wasm_threads_relaxed.worker.js', import.meta.url),
  create: createThreadedRelaxedCore,
};

/** The most threads a load may ask for (the engine's own limit is higher; more than the cores only costs). */
export const MAX_THREADS = 64;
// Threads taken by default where they can run: the cores, up to this many.
const DEFAULT_MAX_THREADS = 8;

// Whether this engine validates relaxed SIMD's standard multiply-add: a 40-byte module whose one
// function returns f32x4.relaxed_madd of three zero vectors (Chromium: yes; node 20: only with
// --experimental-wasm-relaxed-simd). Chosen once, at load.
const RELAXED_SIMD =
  typeof WebAssembly === 'object' &&
  WebAssembly.validate(
    new Uint8Array([
      0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0, 65, 0, 253, 17, 65, 0, 253, 17,
      65, 0, 253, 17, 253, 133, 2, 11,
    ]),
  );

const corePromises = new Map(); // threads of the core's pool (1: the single-threaded build) -> promise
const announced = new Set();

// console.info once per message and page or worker, as the worker fallback does
function announce(message) {
  if (announced.has(message)) return;
  announced.add(message);
  console.info(`headscope: ${message}`);
}

/**
 * Why this context cannot run the threaded build, or null when it can: threads need shared memory
 * (a cross-origin-isolated page), a Web Worker (a browser's page thread may not wait, and the engine's
 * threads wait for each other), more than one core, and a browser (this Emscripten's threaded module
 * does not load in Node).
 */
export function threadsUnavailable({ forWorker = false } = {}) {
  if (isNode) return 'Node runs the single-threaded build';
  if (typeof SharedArrayBuffer === 'undefined' || !globalThis.crossOriginIsolated)
    return (
      'the page is not cross-origin isolated (it needs Cross-Origin-Opener-Policy: same-origin and ' +
      'Cross-Origin-Embedder-Policy: require-corp or credentialless)'
    );
  if (!forWorker && typeof document !== 'undefined')
    return 'threads run only in a Web Worker (headscope/worker), not on the page thread';
  if (!(globalThis.navigator?.hardwareConcurrency > 1)) return 'this device reports one core';
  return null;
}

/** `threads` as a load option takes: undefined, or a whole number in [1, MAX_THREADS]. */
export function checkThreads(threads) {
  if (threads === undefined) return;
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS)
    throw new Error(
      `threads must be a whole number from 1 to ${MAX_THREADS}, got ${typeof threads === 'number' ? threads : (JSON.stringify(threads) ?? String(threads))}`,
    );
}

/**
 * The threads a run gets here (or, forWorker, in a Web Worker this page starts): `asked` (checked),
 * or by default min(cores, 8) where threads can run, else 1. When threads cannot run, it says once why
 * (console.info), unless one thread was asked for, or in Node nothing was.
 */
export function engineThreads(asked, { forWorker = false } = {}) {
  checkThreads(asked);
  const why = threadsUnavailable({ forWorker });
  if (why) {
    if (asked > 1 || (asked === undefined && !isNode)) announce(`single-threaded engine: ${why}`);
    return 1;
  }
  return asked ?? Math.min(navigator.hardwareConcurrency, DEFAULT_MAX_THREADS);
}

/**
 * The engine for a load that asks for `asked` threads (engineThreads()), and the threads the load gets
 * on it: as many as its pool runs (one if the threaded build fell back).
 */
export async function loadEngine(asked) {
  const wanted = engineThreads(asked);
  const core = await loadCore(wanted);
  return { core, threads: Math.min(wanted, core.poolThreads) };
}

// The bindings never throw (a throw out of wasm would leak); they return null and keep the C++
// message for lastError().
export function checked(core, value) {
  if (value === null) throw new Error(core.lastError());
  return value;
}

// Loads (once per pool size) and returns the WebAssembly module for `threads` threads: the
// single-threaded build for 1, else the threaded build with threads - 1 pthread workers (the calling
// thread is the last one). A threaded build that cannot start its workers falls back to one thread,
// and says why once. core.poolThreads is what the core can run.
export function loadCore(threads = 1) {
  if (!corePromises.has(threads)) {
    const promise = (
      threads > 1
        ? loadThreaded(threads).catch((e) => {
            announce(`single-threaded engine: the threaded build did not start (${e.message})`);
            return loadCore(1);
          })
        : loadSingle()
    ).then((core) => {
      core.poolThreads ??= threads > 1 ? threads : 1;
      return core;
    });
    corePromises.set(threads, promise);
    promise.catch(() => {
      corePromises.delete(threads);
    });
  }
  latest = corePromises.get(threads);
  return latest;
}

let latest = null;
/** The core loaded last (the one this page's or worker's model runs on), or the single-threaded one. */
export function currentCore() {
  return latest ?? loadCore(1);
}

/** Bytes allocated in the wasm heap right now (for leak checks), of the engine the last load used. Loads the engine if needed. */
export async function wasmHeapUsedBytes() {
  return (await currentCore()).heapUsedBytes();
}

/** Size of the engine's WebAssembly memory in bytes (it only grows). Loads the engine if needed. */
export async function wasmMemoryBytes() {
  const core = await currentCore();
  // the threaded build's heap views follow a growth only when JS reads through them: ask its memory
  return core.wasmMemory ? core.wasmMemory.buffer.byteLength : core.HEAP8.length;
}

async function loadSingle() {
  const options = {};
  const wasmUrl = await chooseWasm();
  if (isNode) {
    // This Emscripten's glue would use fetch() on a file path in Node 20: hand it the bytes.
    options.wasmBinary = await readLocalFile(wasmUrl);
    return glueFor(wasmUrl)(options);
  }
  let compiled,
    url = wasmUrl;
  try {
    compiled = await compileWasm(url);
  } catch (e) {
    // a copy of the package without the relaxed build (self-hosted, say): SIMD128 then
    if (url !== WASM_RELAXED_URL || !/HTTP 404/.test(e.message)) throw e;
    url = WASM_URL;
    compiled = await compileWasm(url);
  }
  return instantiate(glueFor(url), compiled, options);
}

async function loadThreaded(threads) {
  let build = RELAXED_SIMD ? THREADED_RELAXED : THREADED;
  let compiled;
  try {
    compiled = await compileWasm(build.wasm);
  } catch (e) {
    // a copy of the package without the relaxed build: SIMD128 then
    if (build !== THREADED_RELAXED || !/HTTP 404/.test(e.message)) throw e;
    build = THREADED;
    compiled = await compileWasm(build.wasm);
  }
  const options = {
    headscopeWorkers: threads - 1, // the pool's size: -sPTHREAD_POOL_SIZE=Module.headscopeWorkers
    // what each pthread worker imports: the glue by its absolute URL (a blob: worker has no base)
    mainScriptUrlOrBlob: build.glue.href,
  };
  // the glue's one file to locate: its pthread worker (the glue is built without import.meta.url)
  let workerUrl = build.worker.href;
  if (typeof location !== 'undefined' && build.worker.origin !== location.origin) {
    // a browser starts workers only from its own origin: from a CDN, a same-origin blob: script
    // imports the glue's worker file (which then needs Cross-Origin-Resource-Policy or CORS there)
    workerUrl = URL.createObjectURL(
      new Blob([`importScripts(${JSON.stringify(build.worker.href)});\n`], { type: 'text/javascript' }),
    );
  }
  options.locateFile = (path) => (path.endsWith('.worker.js') ? workerUrl : new URL(path, build.glue).href);
  return instantiate(build.create, compiled, options, true);
}

// Runs a glue on a module compiled here rather than by the glue, so that a .wasm that cannot be read
// (no CORS header on a CDN, a policy) is an Error naming the file, not an abort. With pthreads, a
// worker that fails to start (a policy, a file it cannot read) is an Error too: the glue would only
// print it and wait for the worker forever.
function instantiate(glue, compiled, options, threaded = false) {
  let failed;
  const failure = new Promise((_, reject) => {
    failed = reject;
  });
  options.instantiateWasm = (imports, receiveInstance) => {
    WebAssembly.instantiate(compiled, imports).then((instance) => receiveInstance(instance, compiled), failed);
    return {};
  };
  if (threaded) {
    options.printErr = (text) => {
      if (/worker sent an error/.test(text)) failed(new Error(text));
      else console.error(text);
    };
  }
  return Promise.race([glue(options), failure]);
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
