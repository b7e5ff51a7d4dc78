// Model loading shared by every widget on a page, the "at most one run in flight" runner, and the
// URL form of a view's state (used by the iframe mode and the "copy embed code" button).
import { loadModelInWorker } from '../lib/headscope-worker.js';
import { loadModel } from '../lib/headscope.js';
import { FastTypingModel } from './fast-typing.js';

const models = new Map(); // model source key -> { promise, listeners:Set, progress }

function keyOf(source) {
  return source ? String(source) : '';
}

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
 * not copied: a checkpoint of hundreds of MB is not held twice.
 */
export function loadModelFromBuffers(buffers, { onProgress } = {}) {
  return loadModelInWorker(buffers, { pageThreadFallback: true, transferBuffers: true, onProgress });
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
  // (with the same weight storage: both instances must compute the same numbers)
  const page = loadModel(source || undefined, { weights: options.weights }).catch(() => null);
  return new FastTypingModel(model, page);
}

/** How many distinct model loads this page started (for tests: widgets share one). */
export function modelLoadCount() {
  return models.size;
}

/**
 * Runs the model for the latest request only: at most one run in flight; when it finishes, the
 * newest text (if it changed meanwhile) runs next. Intermediate texts are skipped.
 * `requestOptions()` (optional) returns run options added to every request, such as the page's
 * switched-off heads; options given to request() take precedence.
 * A long run (one that reports progress: a big model on a long text) is cancelled when a newer
 * request arrives, since its result would be stale; `onProgress({ tokens, total })` follows it,
 * `cancel()` stops it, and `onCancel(request)` hears that it stopped.
 * With `reuseResults`, each run is given the previous result as `reuse`: typing at the end of a
 * long text then moves only the new attention rows, and the previous result must not be read once
 * onResult has the new one (keep the latest result only).
 */
export class Runner {
  #abort = null;
  #long = false;

  #last = null; // the latest result delivered (with reuseResults, the next run updates it)

  constructor(model, { onResult, onError, requestOptions, onProgress, onCancel, reuseResults = false } = {}) {
    this.model = model;
    this.reuseResults = reuseResults;
    this.onResult = onResult;
    this.onError = onError;
    this.onProgress = onProgress;
    this.onCancel = onCancel;
    this.requestOptions = requestOptions;
    this.pending = null;
    this.busy = false;
    this.runs = 0;
  }

  request(text, options = {}) {
    this.pending = { text, options: { ...this.requestOptions?.(), ...options } };
    if (this.busy && this.#long) this.#abort?.abort();
    if (!this.busy) this.#pump();
  }

  /** Stops the run in flight (between its steps, if it is long) and drops any pending request. */
  cancel() {
    this.pending = null;
    this.#abort?.abort();
  }

  async #pump() {
    this.busy = true;
    while (this.pending) {
      const req = this.pending;
      this.pending = null;
      const abort = new AbortController();
      this.#abort = abort;
      this.#long = false;
      try {
        const t0 = performance.now();
        const result = await this.model.run(req.text, {
          topK: 10, ...req.options, signal: abort.signal, reuse: this.reuseResults ? this.#last : null,
          onProgress: (p) => { this.#long = true; this.onProgress?.(p, req); },
        });
        this.runs++;
        result.runMs = performance.now() - t0;
        this.#last = result;
        this.onResult?.(result, req);
      } catch (e) {
        if (e?.name === 'AbortError') this.onCancel?.(req); else this.onError?.(e, req);
      }
    }
    this.#abort = null;
    this.busy = false;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #idleWaiters = [];

  /** Resolves once nothing is pending or running. */
  idle() {
    if (!this.busy && !this.pending) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}

export const VIEWS = ['grid', 'heatmap', 'lines'];
export const DEFAULT_TEXT = 'The chef, who trained in Paris, cooked the meal quickly.';

/** Reads { model, text, layer, head, heads, token, links, view } from URL query parameters. */
export function stateFromQuery(search) {
  const q = new URLSearchParams(search);
  const int = (name) => {
    const v = q.get(name);
    if (v === null || v === '') return undefined;
    const n = Number(v);
    return Number.isInteger(n) && n >= 0 ? n : undefined;
  };
  const state = {};
  if (q.has('model')) state.model = q.get('model');
  if (q.has('text')) state.text = q.get('text');
  const layer = int('layer');
  const head = int('head');
  const token = int('token');
  const links = int('links');
  if (layer !== undefined) state.layer = layer;
  if (head !== undefined) state.head = head;
  if (token !== undefined) state.token = token;
  if (links !== undefined) state.links = links;
  if (q.has('heads')) state.heads = parseHeads(q.get('heads'));
  const view = q.get('view');
  if (VIEWS.includes(view)) state.view = view;
  return state;
}

export function parseHeads(s) {
  if (!s) return [];
  return [...new Set(String(s).split(',').map((x) => Number(x.trim())).filter((n) => Number.isInteger(n) && n >= 0))];
}

/** The query string (without '?') holding a state. */
export function stateToQuery(state) {
  const q = new URLSearchParams();
  if (state.model) q.set('model', state.model);
  if (state.text !== undefined) q.set('text', state.text);
  if (Number.isInteger(state.layer)) q.set('layer', String(state.layer));
  if (Number.isInteger(state.head)) q.set('head', String(state.head));
  if (state.heads && state.heads.length > 1) q.set('heads', state.heads.join(','));
  if (Number.isInteger(state.token)) q.set('token', String(state.token));
  if (Number.isInteger(state.links)) q.set('links', String(state.links));
  if (state.view) q.set('view', state.view);
  return q.toString();
}

function escapeAttr(s) {
  return String(s).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The <iframe> snippet that shows `state` from the page at `embedUrl` (absolute URL of embed.html).
 *  No style attribute, so it can be pasted into pages with a strict style-src policy. */
export function embedSnippet(embedUrl, state, { width = 720, height = 560 } = {}) {
  const src = `${embedUrl}?${stateToQuery(state)}`;
  return `<iframe src="${escapeAttr(src)}" width="${width}" height="${height}" title="headscope: attention heads of a small GPT-2" loading="lazy" frameborder="0"></iframe>`;
}
