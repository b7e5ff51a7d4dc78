// The package's worker (dist/worker-thread.js) in Node, behind the Web Worker interface that
// headscope-worker.js's client talks to: loadModelInWorker(source, { worker: nodeWorker() }) then
// runs the real protocol (worker-protocol.js) across a real thread boundary, with transferred
// buffers, as a browser's module Worker would. Node has no Web Worker; worker_threads stands in.
import { Worker } from 'node:worker_threads';
import { dist } from './helpers.js';

// Inside the thread: `self` as worker-thread.js expects it (postMessage out, onmessage in), then
// the module itself.
const BOOTSTRAP = `
  const { parentPort } = require('node:worker_threads');
  globalThis.self = globalThis;
  self.postMessage = (message, transfer) => parentPort.postMessage(message, transfer);
  parentPort.on('message', (data) => self.onmessage?.({ data }));
  import(${JSON.stringify(new URL('worker-thread.js', dist).href)}).catch((e) => { throw e; });
`;

/** A Web Worker look-alike running dist/worker-thread.js in a worker_threads thread. */
export function nodeWorker() {
  const thread = new Worker(BOOTSTRAP, { eval: true });
  const worker = {
    onmessage: null,
    onerror: null,
    postMessage: (message, transfer = []) => thread.postMessage(message, transfer),
    terminate: () => {
      thread.terminate();
    },
  };
  thread.on('message', (data) => worker.onmessage?.({ data }));
  thread.on('error', (e) => worker.onerror?.({ message: e.message, preventDefault() {} }));
  return worker;
}
