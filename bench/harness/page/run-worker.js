// Times HeadscopeModel.run inside a worker (no messaging in the timed part): tells the cost of the
// wasm itself in a worker from the cost of the round trip.
import { loadModel } from '/pkg/headscope.js';
let model = null;
self.onmessage = async (e) => {
  const { text, n } = e.data;
  if (!model) model = await loadModel(new URL('/model/', self.location.href));
  const out = [];
  for (let i = 0; i < n; i++) {
    model.run(text.slice(0, text.length - 1));
    const t0 = performance.now();
    model.run(text);
    out.push(performance.now() - t0);
  }
  self.postMessage(out);
};
