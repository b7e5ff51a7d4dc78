// The same API as headscope.js, running in a Web Worker so the page stays smooth: every method
// returns a promise. Result buffers are transferred from the worker, not copied.
import { makeResult } from './headscope.js';

class WorkerModel {
  #worker;
  #pending = new Map();
  #nextId = 1;
  #info = null;
  #disposed = false;

  constructor(worker) {
    this.#worker = worker;
    worker.onmessage = (event) => {
      const { id, ok, value, error, progress } = event.data;
      const p = this.#pending.get(id);
      if (!p) return;
      if (progress) { p.onProgress?.(progress); return; }
      this.#pending.delete(id);
      if (ok) p.resolve(value); else p.reject(new Error(error));
    };
    worker.onerror = (event) => {
      const err = new Error(`headscope worker failed: ${event.message || 'unknown error'}`);
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
  }

  call(method, args, onProgress) {
    if (this.#disposed) return Promise.reject(new Error('this headscope model was disposed; load it again'));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ id, method, args });
    });
  }

  async _load(source, onProgress) {
    this.#info = await this.call('load', { source: source instanceof URL ? source.href : source }, onProgress);
    return this;
  }

  /** Configuration, parameter count and name of the loaded model. */
  get info() {
    if (this.#disposed) throw new Error('this headscope model was disposed; load it again');
    return this.#info;
  }
  get disposed() { return this.#disposed; }

  /** Runs the model on `text`; resolves to the same result object as HeadscopeModel.run. */
  async run(text, options = {}) {
    if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
    return makeResult(await this.call('run', { text, options }));
  }

  tokenize(text) { return this.call('tokenize', { text }); }
  tokenText(id) { return this.call('tokenText', { id }); }

  /** Frees the model and stops the worker. Later calls reject. */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const p of this.#pending.values()) p.reject(new Error('this headscope model was disposed'));
    this.#pending.clear();
    this.#worker.terminate();
  }
}

/**
 * Loads a model inside a new module Web Worker. `source` and `onProgress` are as for loadModel();
 * a source given as buffers is copied to the worker (structured clone).
 */
export async function loadModelInWorker(source, options = {}) {
  const worker = options.worker ?? new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  const model = new WorkerModel(worker);
  try {
    return await model._load(source, options.onProgress);
  } catch (e) {
    model.dispose();
    throw e;
  }
}
