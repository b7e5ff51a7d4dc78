// The page-thread fallback of loadModelInWorker (client.js; published as worker-fallback.js): where
// no Web Worker can be started (a Content-Security-Policy without blob: or 'self' in worker-src, a
// worker script that cannot be read), the model is loaded on the page thread instead, behind the
// same promise API, and the reason is logged once per page with console.info.
import { loadModel } from '../headscope.js';

let fallbackAnnounced = false;

/** Loads `source` (loadModelInWorker's options) on the page thread, saying once why (`startError`). */
export async function loadOnPageThread(source, options, startError) {
  if (!fallbackAnnounced) {
    fallbackAnnounced = true;
    console.info(
      `headscope: ${startError.message}. The model runs on the page thread instead: ` +
        'the page cannot respond while a run is in progress (a few milliseconds per keystroke for the ' +
        'shipped models, much longer for long texts or large checkpoints).',
    );
  }
  return new PageThreadModel(
    await loadModel(source, {
      onProgress: options.onProgress,
      weights: options.weights,
      threads: 1,
      attentionMaps: options.attentionMaps,
      memoryLimit: options.memoryLimit,
      activations: options.activations,
    }),
  );
}

/** The same promise API as WorkerModel, for a model that runs on the page thread. */
class PageThreadModel {
  #model;
  constructor(model) {
    this.#model = model;
  }
  /** Where the model runs: 'page'. */
  get thread() {
    return 'page';
  }
  get info() {
    return this.#model.info;
  }
  get threads() {
    return this.#model.threads;
  }
  get disposed() {
    return this.#model.disposed;
  }
  async run(text, { onProgress, signal, ...options } = {}) {
    return this.#model.run(text, options);
  }
  async inspectHead(text, layer, head, options) {
    return this.#model.inspectHead(text, layer, head, options);
  }
  async measureHeads(text, options) {
    return this.#model.measureHeads(text, options);
  }
  async generate(text, options) {
    return this.#model.generate(text, options);
  }
  async logitAttribution(position, token, of) {
    return this.#model.logitAttribution(position, token, of);
  }
  async patch(options) {
    return this.#model.patch(options);
  }
  async explainScore(text, layer, head, query, key, options) {
    return this.#model.explainScore(text, layer, head, query, key, options);
  }
  async circuits(options) {
    return this.#model.circuits(options);
  }
  async memory() {
    return this.#model.memory();
  }
  async attentionTile(text, layer, head, options) {
    return this.#model.attentionTile(text, layer, head, options);
  }
  async attentionThumbnails(text, options) {
    return this.#model.attentionThumbnails(text, options);
  }
  async tokenize(text) {
    return this.#model.tokenize(text);
  }
  async tokenText(id) {
    return this.#model.tokenText(id);
  }
  async cacheState() {
    return null;
  }
  dispose() {
    this.#model.dispose();
  }
}
