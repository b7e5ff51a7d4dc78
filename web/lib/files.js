// Where a model's files are and how they arrive: shipped names, folder URLs (Hugging Face's layout:
// config.json and model.safetensors, with GPT-2's vocab.json + merges.txt or the Llama family's
// tokenizer.json), file: URLs read from disk in Node, streamed fetches that report progress.
// headscope.js loads models through this module; nothing here touches the engine.
// The shipped models are listed once, in web/models/index.json (published as models/index.json,
// written by scripts/train/summarize.py from the model cards).
import MODEL_INDEX from '../models/index.json' with { type: 'json' };

export const isNode =
  typeof process === 'object' &&
  !!process.versions?.node &&
  typeof window === 'undefined' &&
  typeof importScripts === 'undefined';

/** Names of the models shipped in this package (folders under ./models/, listed in models/index.json). */
export const shippedModels = Object.freeze(MODEL_INDEX.models.map((m) => m.name));
/** The model loadModel() uses when called without a source (DEFAULT_MODEL_FILES below are its files). */
export const defaultModelName = 'headscope-base';
const GPT2_KEYS = ['config', 'weights', 'vocab', 'merges'];
const TOKENIZER_JSON_KEYS = ['config', 'weights', 'tokenizer'];
/** config.json's model_type values whose folders carry tokenizer.json (the engine's Llama family). */
export const TOKENIZER_JSON_TYPES = Object.freeze(['llama', 'qwen3']);

/**
 * Which tokenizer files config.json (text) means: 'tokenizer' (tokenizer.json) for a Llama-family
 * model_type, 'vocab' (GPT-2's vocab.json + merges.txt) for gpt2 or none, 'none' for a model_type
 * the engine does not run (it names it; nothing else need be fetched).
 */
export function tokenizerKind(configText) {
  let type;
  try {
    type = JSON.parse(configText)?.model_type;
  } catch {
    return 'vocab'; // the engine says what is wrong with the config
  }
  if (TOKENIZER_JSON_TYPES.includes(type)) return 'tokenizer';
  return typeof type === 'string' && type !== 'gpt2' ? 'none' : 'vocab';
}

// Written as literal `new URL(..., import.meta.url)` so bundlers (Vite, webpack 5, esbuild)
// see these files and emit them next to the bundle.
const DEFAULT_MODEL_FILES = {
  config: new URL('./models/headscope-base/config.json', import.meta.url),
  weights: new URL('./models/headscope-base/model.safetensors', import.meta.url),
  vocab: new URL('./models/headscope-base/vocab.json', import.meta.url),
  merges: new URL('./models/headscope-base/merges.txt', import.meta.url),
};

// Why a fetch was refused, for files on another origin: the browser hides the reason (CORS or a
// Content-Security-Policy) behind a bare "Failed to fetch".
function crossOriginHint(url) {
  const here = globalThis.location?.origin;
  if (!here || here === 'null' || url.origin === here || !/^https?:$/.test(url.protocol)) return '';
  return (
    `. ${url.origin} is another origin than this page (${here}): its server must send the header ` +
    `"Access-Control-Allow-Origin: *" (or this page's origin), and the page's Content-Security-Policy ` +
    `must allow ${url.origin} in connect-src`
  );
}

export async function fetchResponse(url, signal) {
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

export async function readLocalFile(url) {
  const fsName = 'node:fs/promises'; // a variable, so bundlers for the browser leave it alone
  const fs = await import(/* @vite-ignore */ fsName);
  // read in pieces into one array: fs.readFile refuses files past 2 GiB (a billion-parameter
  // checkpoint in F16), a typed array does not
  const file = await fs.open(url, 'r');
  try {
    const { size } = await file.stat();
    const bytes = new Uint8Array(size);
    for (let at = 0; at < size;) {
      const { bytesRead } = await file.read(bytes, at, Math.min(size - at, 1 << 26), at);
      if (bytesRead === 0) throw new Error(`the file ended at byte ${at} of ${size}`);
      at += bytesRead;
    }
    return bytes;
  } finally {
    await file.close();
  }
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
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  return bytes;
}

export function modelFileUrls(source) {
  if (source === undefined || source === null || source === defaultModelName)
    return { name: defaultModelName, urls: DEFAULT_MODEL_FILES };
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

// loadModel()'s source as its files ({ config, weights, ... }, fetched or as given) and its name
export async function modelFiles(source, { onProgress, signal } = {}) {
  const located = modelFileUrls(source);
  if (located) return { name: located.name, files: await fetchModelFiles(located.urls, { onProgress, signal }) };
  if (typeof source === 'object') return { name: source.name ?? 'custom', files: givenModelFiles(source) };
  throw new Error(
    `model source must be a shipped model name, a folder URL, { config, weights, vocab, merges } or { config, weights, tokenizer }, got ${typeof source}`,
  );
}

function folderUrls(base) {
  return {
    config: new URL('config.json', base),
    weights: new URL('model.safetensors', base),
    vocab: new URL('vocab.json', base),
    merges: new URL('merges.txt', base),
    tokenizer: new URL('tokenizer.json', base),
  };
}

const textDecoder = new TextDecoder('utf-8', { fatal: false });
export function asText(v, what) {
  if (typeof v === 'string') return v;
  if (v instanceof ArrayBuffer) return textDecoder.decode(new Uint8Array(v));
  if (ArrayBuffer.isView(v)) return textDecoder.decode(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
  throw new Error(`${what} must be a string, ArrayBuffer or typed array`);
}
export function asBytes(v, what) {
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  throw new Error(`${what} must be an ArrayBuffer or typed array`);
}

/**
 * The weights as the engine reads them (JsBytes in cpp/bindings/js_bytes.hpp: a length and
 * subarray(begin, end)): bytes as given, or a Blob (the File a reader picked) read a tensor at a time.
 * In a Worker that read is synchronous (FileReaderSync), so the checkpoint is never whole in
 * JavaScript's memory, and may pass 2 GiB, past which Chromium's Blob.arrayBuffer() fails. On the
 * page thread the Blob is read whole first. A piece that cannot be read comes back null, with its
 * message in `error`, and the engine refuses the file with it.
 */
export async function weightSource(v) {
  if (typeof Blob === 'undefined' || !(v instanceof Blob)) return asBytes(v, 'weights');
  if (typeof FileReaderSync !== 'function') return new Uint8Array(await v.arrayBuffer());
  const reader = new FileReaderSync();
  const source = {
    length: v.size,
    error: '',
    subarray(begin, end) {
      try {
        return new Uint8Array(reader.readAsArrayBuffer(v.slice(begin, end)));
      } catch (e) {
        source.error = String(e?.message ?? e);
        return null;
      }
    },
  };
  return source;
}

// Fetches a model's files; onProgress gets the bytes loaded and expected over all of them. A folder
// (urls.tokenizer set) says in its config.json which tokenizer files it has, so that comes first
// (a few hundred bytes), then the others at once; a shipped model's files all at once.
export async function fetchModelFiles(urls, { onProgress, signal } = {}) {
  const totals = {};
  const loadedBy = {};
  const report = () => {
    if (!onProgress) return;
    const keys = Object.keys(loadedBy);
    const loaded = keys.reduce((s, k) => s + loadedBy[k], 0);
    const total = keys.reduce((s, k) => s + Math.max(totals[k] ?? 0, loadedBy[k]), 0);
    onProgress({ loaded, total });
  };
  const fetchKeys = (keys) =>
    Promise.all(
      keys.map((k) => {
        loadedBy[k] = 0;
        return fetchBytes(
          urls[k],
          (n, total) => {
            loadedBy[k] += n;
            totals[k] = total;
            report();
          },
          signal,
        );
      }),
    );
  if (!urls.tokenizer) {
    const fetched = await fetchKeys(GPT2_KEYS);
    return Object.fromEntries(GPT2_KEYS.map((k, i) => [k, fetched[i]]));
  }
  const [config] = await fetchKeys(['config']);
  const kind = tokenizerKind(asText(config, 'config'));
  // a family the engine does not run: it refuses the config by its model_type before reading anything else
  if (kind === 'none') return { config, weights: new Uint8Array(0), vocab: '', merges: '' };
  const keys = (kind === 'tokenizer' ? TOKENIZER_JSON_KEYS : GPT2_KEYS).slice(1);
  const fetched = await fetchKeys(keys);
  return { config, ...Object.fromEntries(keys.map((k, i) => [k, fetched[i]])) };
}

// The files given as buffers or strings, checked for presence: { config, weights, vocab, merges }
// (GPT-2's) or { config, weights, tokenizer } (tokenizer.json's contents: the Llama family's).
export function givenModelFiles(source) {
  const keys = 'tokenizer' in source && !('vocab' in source) ? TOKENIZER_JSON_KEYS : GPT2_KEYS;
  for (const k of keys)
    if (!(k in source))
      throw new Error(
        `model source object is missing "${k}" (expected { config, weights, vocab, merges } or { config, weights, tokenizer })`,
      );
  return source;
}
