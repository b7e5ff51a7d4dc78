// The models of a page, shared by every widget on it: one load (one download, one Web Worker) per
// model source however many widgets ask, and the page-thread twin that makes typing fast.
import { loadModelInWorker } from '../../lib/worker/client.js';
import { loadModel } from '../../lib/headscope.js';
import { shippedModels } from '../../lib/files.js';
import { checkThreads } from '../../lib/wasm.js';
import { FastTypingModel } from './fast-typing.js';

const models = new Map(); // model source key -> { promise, listeners:Set, progress }
let pageThreads; // the engine threads of this page's workers (setThreads); undefined: the default

/**
 * The threads of the models this page loads from now on (1 to 64; undefined: the default, as
 * loadModelInWorker's `threads`). A page sets it before its first load, e.g. from ?threads=N.
 */
export function setThreads(threads) {
  checkThreads(threads);
  pageThreads = threads;
}

function keyOf(source) {
  return source ? String(source) : '';
}

// A shipped model keeps its full maps in the engine (its texts are short: a map is cheap, and copied
// at once). Any other (a folder's checkpoint) keeps none: its context is then what fits, not what
// its maps at the context would take (GPT-2 small's 604 MB at 1,024 tokens, SmolLM2's T² x 270
// heads), and a page pulls the rows it draws (runtime/pulled-maps.js), recomputed bit for bit.
const keepsMaps = (key) => key === '' || shippedModels.includes(key);

/**
 * Loads a model once per page, in one Web Worker, however many widgets ask for it.
 * `source` is a shipped model name, a folder URL, or empty for the default model.
 * `onProgress({loaded, total})` is called while the files download.
 * Where no worker can be started (a page policy without blob: workers), the model runs on the
 * page thread: a slower page beats a dead widget.
 */
export function getModel(source, { onProgress } = {}) {
  const key = keyOf(source);
  let entry = models.get(key);
  if (!entry) {
    entry = { listeners: new Set(), progress: null, promise: null };
    models.set(key, entry);
    entry.promise = loadModelInWorker(key || undefined, {
      pageThreadFallback: true,
      threads: pageThreads,
      attentionMaps: keepsMaps(key),
      weights: keepsMaps(key) ? 'f32' : 'auto', // a folder's F16 or BF16 checkpoint stays half precision
      // and a long text keeps only what the views read (every layer's activations up to a quarter of the memory)
      activations: keepsMaps(key) ? 'all' : 'auto',
      onProgress: (p) => {
        entry.progress = p;
        for (const fn of entry.listeners) fn(p);
      },
    });
    entry.promise.catch(() => models.delete(key));
    entry.promise.finally(() => entry.listeners.clear()).catch(() => {});
  }
  if (onProgress) {
    entry.listeners.add(onProgress);
    if (entry.progress) onProgress(entry.progress);
  }
  return entry.promise;
}

/**
 * Loads a model given as buffers ({ name, config, weights, vocab, merges }: a folder from the
 * reader's disk) in a worker of its own; not shared or cached. The buffers are moved to the worker,
 * not copied: a checkpoint of hundreds of MB is not held twice (so a second try needs the files
 * read again). `weights`: as loadModel's, by default 'auto' (an F16 or BF16 file stays half precision).
 */
export function loadModelFromBuffers(buffers, { onProgress, weights = 'auto' } = {}) {
  return loadModelInWorker(buffers, {
    pageThreadFallback: true,
    transferBuffers: true,
    onProgress,
    threads: pageThreads,
    attentionMaps: false, // a checkpoint from the reader's disk: its context is what fits (keepsMaps)
    weights,
    activations: 'auto', // and a long text keeps only what the views read (getModel)
  });
}

/** Models up to this many weight bytes also get a page-thread instance for typing (fast-typing.js). */
export const FAST_TYPING_MAX_BYTES = 64e6;

/**
 * The shared worker model of `source` (as getModel), for a page where one reader types: a small
 * model also gets a second instance on the page thread, which runs short incremental updates so that
 * a keystroke is painted in the next frame. A large model, or one already on the page thread, is
 * returned as it is.
 */
export async function getFastTypingModel(source, options = {}) {
  const model = await getModel(source, options);
  if (model.thread === 'page' || model.info.weightBytes > FAST_TYPING_MAX_BYTES) return model;
  // the files are in the HTTP cache by now: the second instance costs memory, not a download
  // (with the same weight storage: both instances must compute the same numbers; one thread: the
  // page thread may not wait for others, and a keystroke's update is too small to split)
  const page = loadModel(source || undefined, { weights: options.weights, threads: 1 }).catch(() => null);
  return new FastTypingModel(model, page);
}

/** How many distinct model loads this page started (for tests: widgets share one). */
export function modelLoadCount() {
  return models.size;
}
