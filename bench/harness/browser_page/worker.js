// One subject of bench/harness/browser-gpt2-small.mjs in its own module Worker: the npm package (ours, its
// threaded build when threads > 1 on this isolated page; kind 'ours-q8' with 8-bit weights) or
// onnxruntime-web's wasm backend. Both
// return the same outputs to JavaScript on every run: every attention map (L, H, T, T) and the last
// position's logits. Or (kind 'trainer') the package's trainer on the page's default preset, taking
// one step per call as the training page's Worker does. Or (op 'patch') the package's model.patch().
import { loadModel, createTrainer } from '/pkg/headscope.js';

let subject = null;
let turn = 0;
const PROSE =
  'the chef who trained in paris cooked the meal quickly while the guests waited in the garden and ' +
  'talked about the long summer, the river, the market and the old bridge near the station; ';

const ops = {
  async init({ kind, threads }) {
    if (kind === 'trainer') {
      const trainer = await createTrainer({ preset: 'induction', threads });
      subject = { kind, trainer };
      const { spec } = trainer;
      return { threads: trainer.threads, tokensPerStep: spec.batchSize * spec.seqLen, config: spec.config };
    }
    if (kind === 'ours' || kind === 'ours-q8') {
      const options = { ...(threads ? { threads } : {}), ...(kind === 'ours-q8' ? { weights: 'q8' } : {}) };
      const model = await loadModel(new URL('/model/', self.location.href), options);
      subject = { kind: 'ours', model };
      return { threads: model.threads, config: model.info.config, weights: model.info.weights };
    }
    const ort = await import('/ort/ort.wasm.min.mjs');
    ort.env.wasm.wasmPaths = new URL('/ort/', self.location.href).href;
    if (threads) ort.env.wasm.numThreads = threads; // else its default: min(4, ceil(cores / 2)) when isolated
    ort.env.logLevel = 'error';
    const session = await ort.InferenceSession.create(new URL('/onnx/forward.onnx', self.location.href).href, {
      executionProviders: ['wasm'],
      graphOptimizationLevel: 'all',
    });
    subject = { kind, ort, session };
    return { threads: ort.env.wasm.numThreads };
  },

  // Two texts of exactly T tokens that differ in their first token (so that running one after the
  // other is a full run each time, not the engine's incremental update), and their ids (ours only).
  inputs({ T }) {
    const m = subject.model;
    const make = (first) => {
      let s = first;
      while (s.length < 8 * T) s += PROSE;
      const tokens = m.tokenize(s);
      const text = s.slice(0, tokens[T - 1].end);
      const ids = m.tokenize(text).map((t) => t.id);
      if (ids.length !== T) throw new Error(`a text of ${T} tokens came out with ${ids.length}`);
      return { text, ids };
    };
    const a = make('The'),
      b = make('A');
    if (a.ids[0] === b.ids[0]) throw new Error('the two texts start with the same token');
    return [a, b];
  },

  async outputs({ text, ids }) {
    if (subject.kind === 'ours') {
      const d = subject.model.runData(text);
      return { attention: d.attentionAll, logitsLast: d.logitsLast };
    }
    const r = await subject.session.run(ortFeeds(ids));
    return { attention: r.attention.data, logitsLast: r.logits_last.data };
  },

  // `runs` runs alternating between the two inputs, across calls too (the same text twice in a row
  // would be the engine's cached run); the wall time of each, in ms
  async time({ inputs, runs }) {
    const out = [];
    for (let i = 0; i < runs; i++) {
      const { text, ids } = inputs[turn++ % 2];
      const t0 = performance.now();
      if (subject.kind === 'ours') subject.model.runData(text);
      else await subject.session.run(ortFeeds(ids));
      out.push(performance.now() - t0);
    }
    return out;
  },
};

// model.patch() on two texts (bench/harness/patch-bench.mjs): the time to its first progress (the
// attribution map) and to the complete report, in ms
ops.patch = async ({ clean, corrupted, answer, distractor }) => {
  let firstMs = null;
  const t0 = performance.now();
  const r = await subject.model.patch({
    clean,
    corrupted,
    answer,
    distractor,
    onProgress: () => {
      firstMs ??= performance.now() - t0;
    },
  });
  const completeMs = performance.now() - t0;
  return { firstMs, completeMs, tokens: r.tokens, exactRuns: r.exactRunsTotal, ldClean: r.ldClean };
};

// `steps` training steps, one call each; their wall time in ms and the last loss
ops.train = ({ steps }) => {
  let loss = NaN;
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) loss = subject.trainer.step(1)[0];
  return { ms: performance.now() - t0, loss };
};

function ortFeeds(ids) {
  const { Tensor } = subject.ort;
  return { ids: new Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]) };
}

self.onmessage = async ({ data }) => {
  try {
    self.postMessage({ id: data.id, result: await ops[data.op](data) });
  } catch (e) {
    self.postMessage({ id: data.id, error: String(e?.stack ?? e) });
  }
};
