// wasm at GPT-2 small's shape: our SIMD128 build, our relaxed-SIMD build and onnxruntime-web (wasm
// backend, one thread) on the same random checkpoint (bench/shapes/make_gpt2_small.py) in one node process,
// interleaved (bench/harness/lib.mjs compare). Every subject returns the same outputs to JavaScript: every
// attention map (L, NH, T, T) and the last position's logits. Outputs are checked against
// onnxruntime-web before anything is timed.
// Usage: node --experimental-wasm-relaxed-simd bench/harness/wasm-gpt2-small.mjs --model DIR --onnx DIR
//          [--simd build/wasm-release] [--relaxed build/wasm-relaxed] [--tokens 64,256,1024] [--quick]
//          [--markdown OUT]
// (--onnx: bench/shapes/export_onnx.py MODEL_DIR OUT_DIR; without the node flag the relaxed build is skipped.)
import path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import * as ort from 'onnxruntime-web';
import { ROOT, compare, loadBenchModule, readModelFiles, maxAbsDiff, benchIds, gpt2SmallMarkdown } from './lib.mjs';

const args = process.argv.slice(2);
const arg = (k, d) => {
  const i = args.indexOf(k);
  return i >= 0 ? args[i + 1] : d;
};
const quick = args.includes('--quick');
const modelDir = arg('--model');
const onnxDir = arg('--onnx');
const Ts = arg('--tokens', '64,256,1024').split(',').map(Number);
const log = (...a) => console.error('[wasm-gpt2]', ...a);

const files = readModelFiles(modelDir);
const cfg = JSON.parse(files.config);
const ids = benchIds(cfg.n_positions, cfg.vocab_size);

// A module using relaxed SIMD compiles only where the engine validates the standard opcode
// (Chromium; node 20 with --experimental-wasm-relaxed-simd): the same test a page makes before
// choosing the build. The bytes: a function returning f32x4.relaxed_madd of three i32x4.splat(0)
// (checked: false in node 20 without the flag, true with it, false for clang 14's fd af 01).
const relaxedOk = WebAssembly.validate(
  new Uint8Array([
    0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0, 65, 0, 253, 17, 65, 0, 253, 17,
    65, 0, 253, 17, 253, 133, 2, 11,
  ]),
);

const subjects = {};
subjects.simd128 = await loadBenchModule(path.resolve(arg('--simd', path.join(ROOT, 'build', 'wasm-release'))));
const relaxedDir = path.resolve(arg('--relaxed', path.join(ROOT, 'build', 'wasm-relaxed')));
// loadBenchModule fails when the relaxed tree lacks the bench module: a subject asked for is never skipped
if (relaxedOk) subjects.relaxed = await loadBenchModule(relaxedDir);
else
  log(
    'this engine does not validate relaxed SIMD (node needs --experimental-wasm-relaxed-simd): relaxed build skipped',
  );
const models = {};
for (const [k, m] of Object.entries(subjects)) {
  const t0 = performance.now();
  models[k] = m.loadModel(files.config, files.weights, files.vocab, files.merges);
  models[k].setIds(ids);
  log(
    `${k}: ${JSON.stringify(m.simdInfo())}, loaded in ${(performance.now() - t0).toFixed(0)} ms, wasm heap ${(m.heapBytes() / 2 ** 20).toFixed(0)} MB`,
  );
}
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';
const session = await ort.InferenceSession.create(readFileSync(path.join(onnxDir, 'forward.onnx')), {
  executionProviders: ['wasm'],
  graphOptimizationLevel: 'all',
});
const ortIds = (T) => ({ ids: new ort.Tensor('int64', BigInt64Array.from(ids.slice(0, T), BigInt), [1, T]) });

// agreement first: float32 on both sides in different orders; the same bounds as bench/harness/node-bench.mjs
{
  const T = 16;
  const r = await session.run(ortIds(T));
  for (const k of Object.keys(models)) {
    const o = models[k].forwardOut(T);
    const a = maxAbsDiff(o.attention, r.attention.data),
      l = maxAbsDiff(o.logitsLast, r.logits_last.data);
    let lmax = 0;
    for (const x of r.logits_last.data) lmax = Math.max(lmax, Math.abs(x));
    log(`agreement ${k} vs onnxruntime-web at T=${T}: attention ${a.toExponential(2)}, logits ${l.toExponential(2)}`);
    if (!(a < 1e-4) || !(l < 1e-3 * Math.max(1, lmax)))
      throw new Error(`${k} disagrees with onnxruntime-web: not timing`);
  }
}

const rows = [];
for (const T of Ts) {
  const cases = {};
  for (const k of Object.keys(models)) cases[k] = { fn: () => models[k].forwardOut(T) };
  cases.ort = { fn: () => session.run(ortIds(T)) };
  const long = T >= 1024;
  const s = await compare(cases, {
    warm: quick || long ? 1 : 3,
    minRuns: quick ? 2 : long ? 3 : 7,
    minMs: 0,
    rounds: quick ? 1 : long ? 3 : 7,
  });
  const inc = {};
  for (const k of Object.keys(models)) {
    inc[k] = (
      await compare(
        { [k]: { fn: () => models[k].incremental(T), before: () => models[k].prime(T) } },
        { warm: 2, minRuns: quick ? 3 : 9, minMs: 0, rounds: 1 },
      )
    )[k];
  }
  rows.push({ T, forward: s, incremental: inc });
  log(
    `T=${T}: ` +
      Object.entries(s)
        .map(([k, v]) => `${k} ${v.median_ms.toFixed(1)} ms`)
        .join(', '),
  );
}

const ks = Object.keys(models);
const lines = [];
lines.push(
  `node ${process.version} (V8 ${process.versions.v8}), onnxruntime-web ` +
    `${JSON.parse(readFileSync(path.join(ROOT, 'node_modules/onnxruntime-web/package.json'), 'utf8')).version} ` +
    '(wasm backend, 1 thread); full forward returning every attention map and the last logits to JavaScript, ' +
    `median wall ms of interleaved runs; incremental: one token typed at T; ${heapLine()}; load average ` +
    `${(await import('node:os'))
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}.`,
  '',
);
lines.push(
  `| T | ${ks.map((k) => `ours ${k}`).join(' | ')} | onnxruntime-web | ${ks.map((k) => `${k} / ORT speed`).join(' | ')} | ${ks.map((k) => `${k} ms per token`).join(' | ')} | ${ks.map((k) => `${k} incremental ms`).join(' | ')} |`,
);
lines.push(`|${'---|'.repeat(2 + 4 * ks.length)}`);
for (const r of rows) {
  const o = r.forward.ort.median_ms;
  lines.push(
    `| ${r.T} | ${ks.map((k) => r.forward[k].median_ms.toFixed(1)).join(' | ')} | ${o.toFixed(1)} | ` +
      `${ks.map((k) => (o / r.forward[k].median_ms).toFixed(2) + 'x').join(' | ')} | ` +
      `${ks.map((k) => (r.forward[k].median_ms / r.T).toFixed(2)).join(' | ')} | ` +
      `${ks.map((k) => r.incremental[k].median_ms.toFixed(1)).join(' | ')} |`,
  );
}
console.log(lines.join('\n'));
const mdOut = arg('--markdown');
if (mdOut) {
  writeFileSync(
    mdOut,
    gpt2SmallMarkdown(
      "GPT-2 small's shape in wasm, against onnxruntime-web",
      'node --experimental-wasm-relaxed-simd bench/harness/wasm-gpt2-small.mjs --markdown ...',
      {
        nLayer: cfg.n_layer,
        nHead: cfg.n_head,
        nEmbd: cfg.n_embd,
        nPositions: cfg.n_positions,
        vocabSize: cfg.vocab_size,
      },
      lines,
    ),
  );
}
function heapLine() {
  return ks.map((k) => `${k} wasm memory ${(subjects[k].heapBytes() / 2 ** 20).toFixed(0)} MB`).join(', ');
}
