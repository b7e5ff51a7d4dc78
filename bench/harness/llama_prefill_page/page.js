// The page of bench/harness/browser-llama-prefill.mjs: one module Worker per subject (worker.js), all on
// this cross-origin-isolated page, driven one at a time through window.__bench. What is timed is timed
// inside the workers, so messaging to them is not part of it.
const workers = new Map();
const pending = new Map();
let seq = 0;

function call(name, op, args = {}) {
  const worker = workers.get(name);
  if (!worker) return Promise.reject(new Error(`no subject ${name}`));
  return new Promise((resolve, reject) => {
    const id = ++seq;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, op, ...args });
  });
}

function onReply({ data }) {
  const p = pending.get(data.id);
  if (!p) return;
  pending.delete(data.id);
  if (data.error) p.reject(new Error(data.error));
  else p.resolve(data.result);
}

window.__bench = {
  isolated: self.crossOriginIsolated,
  cores: navigator.hardwareConcurrency,
  /** Starts subject `name` (worker.js's init: kind 'headscope' or 'wllama', and its options). */
  async start(name, options) {
    const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    worker.onmessage = onReply;
    worker.onerror = (e) => {
      for (const p of pending.values()) p.reject(new Error(`worker ${name}: ${e.message}`));
      pending.clear();
    };
    workers.set(name, worker);
    return call(name, 'init', options);
  },
  call,
  /** Ends subject `name`'s Worker (and the Workers it started): its memory goes back before the next phase. */
  end(name) {
    workers.get(name)?.terminate();
    workers.delete(name);
  },
};
