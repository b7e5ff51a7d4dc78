// The Web Worker side of headscope-worker.js: holds one model and answers requests in order.
// Result typed arrays are transferred to the page, not copied.
import { loadModel } from './headscope.js';
import { resultForTransfer } from './result.js';

let model = null;

self.onmessage = async (event) => {
  const { id, method, args } = event.data;
  try {
    let value;
    let transfer = [];
    if (method === 'load') {
      if (model) model.dispose();
      model = await loadModel(args.source, {
        onProgress: (p) => self.postMessage({ id, progress: p }),
      });
      value = model.info;
    } else if (!model) {
      throw new Error('no model loaded in this worker');
    } else if (method === 'run') {
      // the methods stay behind; the client adds them back with makeResult()
      ({ data: value, transfer } = resultForTransfer(model.run(args.text, args.options)));
    } else if (method === 'tokenize') {
      value = model.tokenize(args.text);
    } else if (method === 'tokenText') {
      value = model.tokenText(args.id);
    } else if (method === 'dispose') {
      model.dispose();
      model = null;
      value = true;
    } else {
      throw new Error(`unknown method ${method}`);
    }
    self.postMessage({ id, ok: true, value }, transfer);
  } catch (e) {
    self.postMessage({ id, ok: false, error: e instanceof Error ? e.message : String(e) });
  }
};

// Tells the page that this module and its imports loaded: failures before this are the worker's
// (the page may then run the model itself), failures after it are the model's.
self.postMessage({ ready: true });
