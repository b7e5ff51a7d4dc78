// The bench pages' one way to drive their subjects (bench/harness/browser_page/, llama_prefill_page/):
// each subject a module Worker of its own (the page's worker.js), asked one request at a time by
// name; what is timed is timed inside the workers, so the messaging is not part of it. Served at
// /common/ by the benches' static servers.
export function subjectPool(workerUrl) {
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

  return {
    call,
    /** Starts subject `name` in a new Worker and sends it `init` with `options`. */
    start(name, options) {
      const worker = new Worker(workerUrl, { type: 'module' });
      worker.onmessage = onReply;
      worker.onerror = (e) => {
        for (const p of pending.values()) p.reject(new Error(`worker ${name}: ${e.message}`));
        pending.clear();
      };
      workers.set(name, worker);
      return call(name, 'init', options);
    },
    /** Ends subject `name`'s Worker (and the Workers it started). */
    end(name) {
      workers.get(name)?.terminate();
      workers.delete(name);
    },
  };
}
