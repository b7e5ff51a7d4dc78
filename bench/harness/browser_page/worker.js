// One subject of bench/harness/browser-gpt2-small.mjs in its own module Worker: the npm package (ours, its
// threaded build when threads > 1 on this isolated page; kind 'ours-q8' with 8-bit weights) or
// onnxruntime-web's wasm backend. Both
// return the same outputs to JavaScript on every run: every attention map (L, H, T, T) and the last
// position's logits. Kinds 'ours-lean' and 'ours-q8-lean': float32 or 8 bits with the least the
// package's API returns (no full map kept or returned: attentionMaps false, run(text, { attention:
// 'thumbnails' }); it has no option that returns the last logits alone). Kind 'ort-logits': the same
// graph as 'ort', fetching its last logits alone (the maps are still computed inside the graph, as
// its softmax's output, but never leave wasm). Kind 'tjs': transformers.js at its defaults (device
// wasm, dtype q8, its onnxruntime-web's own thread count) on the folder of
// bench/shapes/make_transformersjs_q8.py, returning the logits (every position, as its model() does).
// Or (kind 'trainer') the package's trainer on the page's default preset, taking
// one step per call as the training page's Worker does. Or (op 'patch') the package's model.patch().
import { twoTexts } from '/common/inputs.js';
import { loadModel, createTrainer } from '/pkg/headscope.js';

let subject = null;
let turn = 0;

const ops = {
  async init({ kind, threads }) {
    if (kind === 'trainer') {
      const trainer = await createTrainer({ preset: 'induction', threads });
      subject = { kind, trainer };
      const { spec } = trainer;
      return { threads: trainer.threads, tokensPerStep: spec.batchSize * spec.seqLen, config: spec.config };
    }
    if (['ours', 'ours-lean', 'ours-q8', 'ours-q8-lean'].includes(kind)) {
      const lean = kind.endsWith('-lean');
      const options = {
        ...(threads ? { threads } : {}),
        ...(kind.startsWith('ours-q8') ? { weights: 'q8' } : {}),
        ...(lean ? { attentionMaps: false } : {}),
      };
      const model = await loadModel(new URL('/model/', self.location.href), options);
      subject = { kind: 'ours', model, lean };
      return { threads: model.threads, config: model.info.config, weights: model.info.weights };
    }
    if (kind === 'tjs') return initTransformersJs();
    const ort = await import('/ort/ort.wasm.min.mjs');
    ort.env.wasm.wasmPaths = new URL('/ort/', self.location.href).href;
    if (threads) ort.env.wasm.numThreads = threads; // else its default: min(4, ceil(cores / 2)) when isolated
    ort.env.logLevel = 'error';
    const session = await ort.InferenceSession.create(new URL('/onnx/forward.onnx', self.location.href).href, {
      executionProviders: ['wasm'],
      graphOptimizationLevel: 'all',
    });
    subject = { kind: 'ort', ort, session, fetches: kind === 'ort-logits' ? ['logits_last'] : undefined };
    return { threads: ort.env.wasm.numThreads };
  },

  // Two texts of exactly T tokens that differ in their first token (so that running one after the
  // other is a full run each time, not the engine's incremental update), and their ids (ours only).
  inputs({ T }) {
    return twoTexts(subject.model, T);
  },

  async outputs({ text, ids }) {
    if (subject.kind === 'ours') {
      const d = subject.model.runData(text, subject.lean ? LEAN : {});
      return { attention: subject.lean ? null : d.attentionAll, logitsLast: d.logitsLast };
    }
    if (subject.kind === 'tjs') {
      // its own tokenizer (tokenizer.json) must give the ids the bench feeds it
      const own = Array.from(subject.tokenizer(text).input_ids.data, Number);
      if (own.length !== ids.length || own.some((id, i) => id !== ids[i]))
        throw new Error(`transformers.js's tokenizer gives other ids: ${own.slice(0, 8)}... for ${ids.slice(0, 8)}...`);
      return { attention: null, logitsLast: await tjsForward(ids) };
    }
    const r = await subject.session.run(ortFeeds(ids), subject.fetches);
    return { attention: r.attention?.data ?? null, logitsLast: r.logits_last.data };
  },

  // `runs` runs alternating between the two inputs, across calls too (the same text twice in a row
  // would be the engine's cached run); the wall time of each, in ms
  async time({ inputs, runs }) {
    const out = [];
    for (let i = 0; i < runs; i++) {
      const { text, ids } = inputs[turn++ % 2];
      const t0 = performance.now();
      if (subject.kind === 'ours') subject.model.runData(text, subject.lean ? LEAN : {});
      else if (subject.kind === 'tjs') await tjsForward(ids);
      else await subject.session.run(ortFeeds(ids), subject.fetches);
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

// the lean run: no full map, the thumbnails instead (the least a run returns), no top-k list
const LEAN = { attention: 'thumbnails', topK: 0 };

async function initTransformersJs() {
  // its web bundle (dist/transformers.js: onnxruntime-web 1.31-dev's webgpu/wasm bundle inside)
  const tjs = await import('/tjs/transformers.js');
  const { env } = tjs;
  env.allowRemoteModels = false; // nothing from the Hub: the local folder only
  env.allowLocalModels = true;
  env.localModelPath = '/tjs-models/';
  // Its onnxruntime-web's files from this origin. Its own default is { mjs, wasm } on jsDelivr (the
  // asyncify build); given that object form, transformers.js fetches the .mjs and imports it from a
  // blob: URL (cacheWasm.js's loadWasmFactory), which the page's CSP (script-src 'self') refuses. A
  // path prefix loads the same asyncify build straight from here, so the CSP stays the demo's.
  env.backends.onnx.wasm.wasmPaths = new URL('/tjs-ort/', self.location.href).href;
  const model = await tjs.AutoModelForCausalLM.from_pretrained('model', { device: 'wasm', dtype: 'q8' });
  const tokenizer = await tjs.AutoTokenizer.from_pretrained('model');
  subject = { kind: 'tjs', tjs, model, tokenizer };
  const session = model.sessions.model;
  return {
    // onnxruntime-web sets its default when the first session is made: min(4, ceil(cores / 2)) when isolated
    threads: env.backends.onnx.wasm.numThreads,
    version: env.version,
    onnxruntimeWeb: env.backends.onnx.versions?.web ?? null,
    inputNames: session.inputNames,
    outputNames: session.outputNames,
  };
}

// transformers.js's forward on `ids`, as a caller writes it: model({ input_ids, attention_mask })
// (an empty past, which it builds itself), then the last position's logits (a copy)
async function tjsForward(ids) {
  const { Tensor } = subject.tjs;
  const T = ids.length;
  const input_ids = new Tensor('int64', BigInt64Array.from(ids, BigInt), [1, T]);
  const attention_mask = new Tensor('int64', new BigInt64Array(T).fill(1n), [1, T]);
  const { logits } = await subject.model({ input_ids, attention_mask });
  const V = logits.dims.at(-1);
  if (logits.dims[1] !== T) throw new Error(`transformers.js returned logits of shape ${logits.dims}`);
  return logits.data.slice((T - 1) * V, T * V);
}

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
