// headscope's JavaScript API: adapts the embind module (cpp/bindings/embind.cpp) to the public
// interface documented in headscope.d.ts. Works in browsers, Web Workers and Node 20 (ES module).
//
// This layer only adapts: it loads the .wasm and the model files, converts UTF-8 byte spans into
// string indices, turns results into plain objects and typed-array copies, and guards against use
// after dispose(). All numerics happen in C++.
import createHeadscopeCore from './headscope_wasm.js';
import { makeResult, reuseInfo, firstChangedRow, roomyStride, withPreviousRows } from './result.js';
import { HeadscopeTrainer, presetsFromCore } from './trainer.js';

/** Names of the models shipped in this package (folders under ./models/). */
export const shippedModels = Object.freeze(['headscope-base', 'heads-1', 'heads-2', 'heads-4', 'heads-8']);
/** The model loadModel() uses when called without a source. */
export const defaultModelName = 'headscope-base';
// where a weight sits in a result's attentionAll, whatever its block width (see RunOptions.reuse)
export { attentionIndex, strideOf } from './result.js';

const isNode = typeof process === 'object' && !!process.versions?.node && typeof window === 'undefined'
  && typeof importScripts === 'undefined';

// Written as literal `new URL(..., import.meta.url)` so bundlers (Vite, webpack 5, esbuild)
// see these files and emit them next to the bundle.
const WASM_URL = new URL('./headscope_wasm.wasm', import.meta.url);
// The same engine built with relaxed SIMD: its products multiply-add in one f32x4.relaxed_madd
// (fused on CPUs with FMA). Same imports and exports as the SIMD128 build, so the same glue loads it.
const WASM_RELAXED_URL = new URL('./headscope_wasm_relaxed.wasm', import.meta.url);

// Whether this engine validates relaxed SIMD's standard multiply-add: a 40-byte module whose one
// function returns f32x4.relaxed_madd of three zero vectors (Chromium: yes; node 20: only with
// --experimental-wasm-relaxed-simd). Chosen once, at load.
const RELAXED_SIMD = typeof WebAssembly === 'object' && WebAssembly.validate(new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0,
  65, 0, 253, 17, 65, 0, 253, 17, 65, 0, 253, 17, 253, 133, 2, 11]));
const DEFAULT_MODEL_FILES = {
  config: new URL('./models/headscope-base/config.json', import.meta.url),
  weights: new URL('./models/headscope-base/model.safetensors', import.meta.url),
  vocab: new URL('./models/headscope-base/vocab.json', import.meta.url),
  merges: new URL('./models/headscope-base/merges.txt', import.meta.url),
};

let corePromise = null;

// The bindings never throw (a throw out of wasm would leak); they return null and keep the C++
// message for lastError().
function checked(core, value) {
  if (value === null) throw new Error(core.lastError());
  return value;
}

// Loads (once) and returns the WebAssembly module.
function loadCore() {
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
        let compiled;
        try {
          compiled = await compileWasm(wasmUrl);
        } catch (e) {
          // a copy of the package without the relaxed build (self-hosted, say): SIMD128 then
          if (wasmUrl !== WASM_RELAXED_URL || !/HTTP 404/.test(e.message)) throw e;
          compiled = await compileWasm(WASM_URL);
        }
        let instantiateFailed;
        const failure = new Promise((_, reject) => { instantiateFailed = reject; });
        options.instantiateWasm = (imports, receiveInstance) => {
          WebAssembly.instantiate(compiled, imports).then((instance) => receiveInstance(instance, compiled), instantiateFailed);
          return {};
        };
        return Promise.race([createHeadscopeCore(options), failure]);
      }
      return createHeadscopeCore(options);
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

async function compileWasm(url) {
  const response = await fetchResponse(url);
  const type = response.headers.get('content-type') || '';
  // compileStreaming needs the application/wasm type; a server without it still works, unstreamed
  if (typeof WebAssembly.compileStreaming === 'function' && type.startsWith('application/wasm'))
    return WebAssembly.compileStreaming(response);
  return WebAssembly.compile(await response.arrayBuffer());
}

// Why a fetch was refused, for files on another origin: the browser hides the reason (CORS or a
// Content-Security-Policy) behind a bare "Failed to fetch".
function crossOriginHint(url) {
  const here = globalThis.location?.origin;
  if (!here || here === 'null' || url.origin === here || !/^https?:$/.test(url.protocol)) return '';
  return `. ${url.origin} is another origin than this page (${here}): its server must send the header `
    + `"Access-Control-Allow-Origin: *" (or this page's origin), and the page's Content-Security-Policy `
    + `must allow ${url.origin} in connect-src`;
}

async function fetchResponse(url, signal) {
  let response;
  try {
    response = await fetch(url, { signal });
  } catch (e) {
    if (e?.name === 'AbortError') throw e;
    throw new Error(`cannot fetch ${url.href}: ${e.message}${crossOriginHint(url)}`);
  }
  if (!response.ok) throw new Error(`cannot fetch ${url.href}: HTTP ${response.status}`);
  return response;
}

async function readLocalFile(url) {
  const fsName = 'node:fs/promises'; // a variable, so bundlers for the browser leave it alone
  const fs = await import(/* @vite-ignore */ fsName);
  const buf = await fs.readFile(url);
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

// Fetches one file, reporting bytes as they arrive; file: URLs are read from disk in Node.
async function fetchBytes(url, onChunk, signal) {
  if (url.protocol === 'file:') {
    if (!isNode) throw new Error(`cannot read ${url.href} outside Node`);
    let bytes;
    try {
      bytes = await readLocalFile(url);
    } catch (e) {
      throw new Error(`cannot read ${url.href}: ${e.message}`);
    }
    onChunk(bytes.byteLength, bytes.byteLength);
    return bytes;
  }
  const response = await fetchResponse(url, signal);
  const total = Number(response.headers.get('content-length')) || 0;
  if (!response.body || !response.body.getReader) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onChunk(bytes.byteLength, bytes.byteLength);
    return bytes;
  }
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.byteLength;
    onChunk(value.byteLength, total);
  }
  const bytes = new Uint8Array(loaded);
  let offset = 0;
  for (const c of chunks) { bytes.set(c, offset); offset += c.byteLength; }
  return bytes;
}

function modelFileUrls(source) {
  if (source === undefined || source === null || source === defaultModelName) return { name: defaultModelName, urls: DEFAULT_MODEL_FILES };
  if (typeof source === 'string' && shippedModels.includes(source)) {
    const base = new URL(`./models/${source}/`, import.meta.url);
    return { name: source, urls: folderUrls(base) };
  }
  if (source instanceof URL || typeof source === 'string') {
    let base;
    try {
      base = new URL(String(source), typeof location === 'object' ? location.href : undefined);
    } catch {
      throw new Error(`unknown model "${source}": not a shipped model (${shippedModels.join(', ')}) and not a URL`);
    }
    if (!base.pathname.endsWith('/')) base = new URL(base.href + '/');
    const parts = base.pathname.split('/').filter(Boolean);
    return { name: parts[parts.length - 1] || base.href, urls: folderUrls(base) };
  }
  return null;
}

function folderUrls(base) {
  return {
    config: new URL('config.json', base),
    weights: new URL('model.safetensors', base),
    vocab: new URL('vocab.json', base),
    merges: new URL('merges.txt', base),
  };
}

const textDecoder = new TextDecoder('utf-8', { fatal: false });
function asText(v, what) {
  if (typeof v === 'string') return v;
  if (v instanceof ArrayBuffer) return textDecoder.decode(new Uint8Array(v));
  if (ArrayBuffer.isView(v)) return textDecoder.decode(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
  throw new Error(`${what} must be a string, ArrayBuffer or typed array`);
}
function asBytes(v, what) {
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  throw new Error(`${what} must be an ArrayBuffer or typed array`);
}

/**
 * Loads a model: a shipped model's name (default: headscope-base), the URL of a folder in the
 * Hugging Face GPT-2 layout, or the four files as buffers. `weights: 'f16'` holds the large weight
 * matrices in half precision (about half the memory); the default is 'f32'.
 */
export async function loadModel(source, options = {}) {
  const { onProgress, signal, weights = 'f32' } = options;
  if (weights !== 'f32' && weights !== 'f16')
    throw new Error(`weights must be 'f32' or 'f16', got ${typeof weights === 'string' ? `'${weights}'` : String(weights)}`);
  const core = await loadCore();
  let files;
  let name;
  const located = modelFileUrls(source);
  if (located) {
    name = located.name;
    const { urls } = located;
    const keys = ['config', 'weights', 'vocab', 'merges'];
    const totals = Object.fromEntries(keys.map((k) => [k, 0]));
    const loadedBy = Object.fromEntries(keys.map((k) => [k, 0]));
    const report = () => {
      if (!onProgress) return;
      const loaded = keys.reduce((s, k) => s + loadedBy[k], 0);
      const total = keys.reduce((s, k) => s + Math.max(totals[k], loadedBy[k]), 0);
      onProgress({ loaded, total });
    };
    const fetched = await Promise.all(keys.map((k) => fetchBytes(urls[k], (n, total) => {
      loadedBy[k] += n;
      totals[k] = total;
      report();
    }, signal)));
    files = Object.fromEntries(keys.map((k, i) => [k, fetched[i]]));
  } else if (typeof source === 'object') {
    for (const k of ['config', 'weights', 'vocab', 'merges'])
      if (!(k in source)) throw new Error(`model source object is missing "${k}" (expected { config, weights, vocab, merges })`);
    files = source;
    name = source.name ?? 'custom';
  } else {
    throw new Error(`model source must be a shipped model name, a folder URL or { config, weights, vocab, merges }, got ${typeof source}`);
  }
  const handle = checked(core, core.load(asText(files.config, 'config'), asBytes(files.weights, 'weights'),
    asText(files.vocab, 'vocab'), asText(files.merges, 'merges'), weights));
  return new HeadscopeModel(core, handle, name);
}

// Maps UTF-8 byte offsets of `text` to UTF-16 indices. A byte inside a character maps to the
// character's start (for starts) or end (for ends), so a token that splits an emoji still covers it.
function byteToIndexMaps(text) {
  const starts = [];  // byte offset -> index of the character containing it
  const ends = [];
  let index = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    const nbytes = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (let b = 0; b < nbytes; b++) {
      starts.push(index);
      ends.push(index + ch.length);
    }
    index += ch.length;
  }
  starts.push(index);
  ends.push(index);
  return { start: (b) => starts[b], end: (b) => (b === 0 ? 0 : ends[b - 1]) };
}

// Lone UTF-16 surrogates cannot be encoded as UTF-8; they become U+FFFD (same length, so string
// indices are unchanged).
function toWellFormed(text) {
  if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
  return typeof text.toWellFormed === 'function' ? text.toWellFormed()
    : text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

export class HeadscopeModel {
  #core;
  #handle;
  #info;
  #tokenTextCache = new Map();

  constructor(core, handle, name) {
    this.#core = core;
    this.#handle = handle;
    const config = handle.config();
    this.#info = Object.freeze({
      name,
      config: Object.freeze(config),
      parameterCount: handle.parameterCount(),
      weightBytes: handle.weightBytes(),
      weights: handle.weightStorage(),
      simd: Object.freeze(core.simdInfo()),
    });
  }

  #live() {
    if (!this.#handle) throw new Error('this headscope model was disposed; load it again with loadModel()');
    return this.#handle;
  }

  get info() { this.#live(); return this.#info; }
  get disposed() { return this.#handle === null; }

  /** Text of one vocabulary entry, for display. */
  tokenText(id) {
    const h = this.#live();
    let s = this.#tokenTextCache.get(id);
    if (s === undefined) {
      if (!Number.isInteger(id)) throw new Error(`token id must be an integer, got ${id}`);
      s = checked(this.#core, h.tokenText(id));
      if (this.#tokenTextCache.size < 100000) this.#tokenTextCache.set(id, s);
    }
    return s;
  }

  /** Tokens of `text` without running the model. */
  tokenize(text) {
    const h = this.#live();
    const wellFormed = toWellFormed(text);
    const map = byteToIndexMaps(wellFormed);
    return checked(this.#core, h.tokenize(wellFormed)).map((t) => ({ text: t.text, id: t.id, start: map.start(t.byteStart), end: map.end(t.byteEnd) }));
  }

  /**
   * Runs the model on `text`. Two calls into the engine return everything: the run, then tokens,
   * attention, contribution norms, the last logits, the top-k next tokens and (with allLogits) the
   * loss, all computed in C++; this layer maps byte spans to string indices and adds the accessors.
   * With `reuse` (an earlier result of this model, given up by the caller), only the attention rows
   * from the first changed token on are copied out of the engine, into reuse's buffer.
   */
  run(text, options = {}) {
    const { reuse = null, ...rest } = options;
    const data = this.runData(text, rest, reuse ? reuseInfo(reuse, rest.ablate ?? []) : null);
    return makeResult(data.attentionRows ? withPreviousRows(reuse, data) : data);
  }

  /**
   * The plain data of a run (what run() adds accessors to). With `previous` (reuseInfo() of an
   * earlier result), attention comes as `attentionRows`: only rows [rowsFrom, T) of every head, in
   * blocks `stride` wide, for result.js's withPreviousRows(); when no row is shared it is a full
   * attentionAll with room to spare (stride > T). The worker sends this across, and the page merges.
   */
  runData(text, options = {}, previous = null) {
    const h = this.#live();
    const wellFormed = toWellFormed(text);
    const { ablate = [], topK: k = 10, allLogits = false } = options;
    if (!Array.isArray(ablate)) throw new Error('ablate must be an array of [layer, head] pairs');
    if (!Number.isInteger(k) || k < 0) throw new Error(`topK must be a non-negative integer, got ${k}`);
    const flat = [];
    for (const pair of ablate) {
      if (!Array.isArray(pair) || pair.length !== 2 || !pair.every(Number.isInteger))
        throw new Error(`ablate entries must be [layer, head] pairs of integers, got ${JSON.stringify(pair)}`);
      flat.push(pair[0], pair[1]);
    }
    const run = checked(this.#core, h.run(wellFormed, flat, !!allLogits));
    const T = run.tokens;
    const { nLayer, nHead, nPositions } = this.#info.config;
    const rowsFrom = previous ? firstChangedRow(previous, h.tokenIds()) : 0;
    const stride = !previous ? T : rowsFrom > 0 ? previous.stride : roomyStride(T, nPositions);
    const out = checked(this.#core, h.results(k, !!allLogits, rowsFrom, rowsFrom > 0 ? T - rowsFrom : stride, stride));
    const map = byteToIndexMaps(wellFormed);
    const { tokenIds, tokenByteStarts, tokenByteEnds, tokenTexts } = out;
    const tokens = new Array(T);
    for (let i = 0; i < T; i++)
      tokens[i] = { text: tokenTexts[i], id: tokenIds[i], start: map.start(tokenByteStarts[i]), end: map.end(tokenByteEnds[i]) };
    const data = {
      text: wellFormed,
      tokens,
      T,
      nLayer,
      nHead,
      ablate: ablate.map(([l, hd]) => [l, hd]),
      droppedTokens: run.droppedTokens,
      reusedTokens: run.reusedTokens,
      stride,
      rowsFrom,
      contributionNorms: out.contributionNorms,
      logitsLast: out.logitsLast,
      topNext: out.topNext,
    };
    data[rowsFrom > 0 ? 'attentionRows' : 'attentionAll'] = out.attentionRows;
    if (allLogits) data.loss = out.loss;
    return data;
  }

  /**
   * Runs the model on `text` without building a result: the engine's key/value cache then holds
   * the text, and a later run() of a text that extends it only computes the new tokens (the result
   * equals a full run). For long texts run in steps, with progress and a chance to cancel in
   * between. Give it the ablate and allLogits options of that later run. Returns
   * { tokens, reusedTokens, droppedTokens }.
   */
  prefill(text, { ablate = [], allLogits = false } = {}) {
    const h = this.#live();
    // the same options as the run that follows: the engine reuses a cache made with the same ones
    return checked(this.#core, h.run(toWellFormed(text), ablate.flat(), !!allLogits));
  }

  /**
   * Allocates the engine's activations for `tokens` positions (at most the context) now, so that a
   * long text run in steps with prefill() never reallocates between steps (which drops the cache).
   * Returns true when it reallocated: the engine's cache is then empty.
   */
  reserve(tokens) {
    const h = this.#live();
    if (!Number.isInteger(tokens) || tokens < 1) throw new Error(`tokens must be a positive integer, got ${tokens}`);
    return checked(this.#core, h.reserve(tokens));
  }

  /** Frees the model's wasm memory. Any later call throws. Safe to call twice. */
  dispose() {
    if (this.#handle) {
      this.#handle.delete();
      this.#handle = null;
    }
  }
}

/**
 * Starts a training run in the engine: a fresh model (a preset's shape, or `config`) or `init`'s
 * weights, on a task (`induction`, `text` with `text`), with the preset's recipe (default preset:
 * 'induction', the training page's default) under any option given. See headscope.d.ts.
 */
export async function createTrainer(options = {}) {
  // trainer.js is imported statically: a dynamic import would make bundlers split chunks, which
  // Vite's default (iife) worker format refuses
  const core = await loadCore();
  return new HeadscopeTrainer(core, options, (handle, name) => new HeadscopeModel(core, handle, name));
}

/** The training page's presets: [{ name, label, description, spec }]. */
export async function trainingPresets() {
  return presetsFromCore(await loadCore());
}

/** Bytes allocated in the wasm heap right now (for leak checks). Loads the engine if needed. */
export async function wasmHeapUsedBytes() {
  return (await loadCore()).heapUsedBytes();
}

/** Size of the engine's WebAssembly memory in bytes (it only grows). Loads the engine if needed. */
export async function wasmMemoryBytes() {
  return (await loadCore()).HEAP8.length;
}
