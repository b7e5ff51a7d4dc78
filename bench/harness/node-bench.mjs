// Node 20 side of the benchmark: our wasm SIMD build, our wasm scalar build and onnxruntime-web
// (wasm backend, one thread) on the same model and the same shapes, measured side by side; then the
// npm package's own module (its JS API over the engine).
// Usage: node bench/harness/node-bench.mjs --model DIR --onnx DIR --simd DIR --out FILE
//          [--scalar DIR --pkg DIR] [--quick] [--simd-only]
//   --simd, --scalar: build trees holding headscope_bench_wasm (presets wasm-release, wasm-scalar)
//   --pkg: the package's payload (dist/ or a copy of it)
// With --simd-only (used for the `node --no-liftoff` cross-check) only our SIMD build is timed.
import { readFileSync, writeFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as ort from 'onnxruntime-web';
import {
  benchArgs,
  ROOT,
  compare,
  loadBenchModule,
  readModelFiles,
  maxAbsDiff,
  benchIds,
  coreRunCall,
  machineInfo,
} from './lib.mjs';

const opt = benchArgs({ strings: ['model', 'onnx', 'simd', 'scalar', 'pkg', 'out'], flags: ['quick', 'simd-only'] });
const quick = opt.quick;
const simdOnly = opt['simd-only'];
if (!opt.model || !opt.simd || !opt.out || (!simdOnly && (!opt.onnx || !opt.scalar || !opt.pkg)))
  throw new Error(
    'usage: node bench/harness/node-bench.mjs --model DIR --onnx DIR --simd DIR --scalar DIR --pkg DIR --out FILE [--quick] | --simd-only',
  );
const modelDir = opt.model;
const onnxDir = opt.onnx;
const pkgDir = opt.pkg;
const outFile = opt.out;
const t0run = performance.now();
const log = (...a) => console.error(`[node +${((performance.now() - t0run) / 1000).toFixed(0)} s]`, ...a);
const budget = quick ? 0.4 : 2.5; // scales every minMs
// compare()'s options; the quick run only checks that every case runs and agrees: a third of the
// warm-up and timed runs, in 5 interleaved rounds instead of 20 (each round runs every subject once)
const timing = ({ minMs, minRuns = 15, warm = 8 }) =>
  quick
    ? { minMs, minRuns: Math.max(3, Math.ceil(minRuns / 3)), warm: Math.max(2, Math.ceil(warm / 3)), rounds: 5 }
    : { minMs, minRuns, warm };

// each subject's median of one case, for the log
const medians = (s) =>
  Object.entries(s)
    .map(([k, v]) => `${k} ${v.median_ms.toFixed(3)} ms`)
    .join(', ');
const files = readModelFiles(modelDir);
const cfg = JSON.parse(files.config);
const L = cfg.n_layer,
  NH = cfg.n_head,
  C = cfg.n_embd,
  F = cfg.n_inner ?? 4 * C,
  P = cfg.n_positions,
  V = cfg.vocab_size;
const ids = benchIds(P, V);

// ---- subjects ---------------------------------------------------------------------------------
const subj = {};
subj.simd = await loadBenchModule(opt.simd);
if (!simdOnly) subj.scalar = await loadBenchModule(opt.scalar);
const ours = Object.keys(subj);
const models = {};
for (const k of ours) {
  models[k] = subj[k].loadModel(files.config, files.weights, files.vocab, files.merges);
  models[k].setIds(ids);
}
log(
  'subjects:',
  ours.map((k) => `${k} (${JSON.stringify(subj[k].simdInfo())})`).join(', '),
  simdOnly ? '' : '+ onnxruntime-web',
);

let ortForward = null;
const ortGemm = {};
if (!simdOnly) {
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  const opts = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
  ortForward = await ort.InferenceSession.create(readFileSync(path.join(onnxDir, 'forward.onnx')), opts);
  const manifest = JSON.parse(readFileSync(path.join(onnxDir, 'manifest.json'), 'utf8'));
  for (const g of manifest.gemm)
    ortGemm[`${g.K}x${g.N}`] = await ort.InferenceSession.create(readFileSync(path.join(onnxDir, g.file)), opts);
  if (manifest.overhead)
    ortGemm.overhead = await ort.InferenceSession.create(readFileSync(path.join(onnxDir, manifest.overhead)), opts);
}
const ortIds = (T) => ({ ids: new ort.Tensor('int64', BigInt64Array.from(ids.slice(0, T), BigInt), [1, T]) });

const results = {
  machine: machineInfo(), // the CPU: the ceilings differ by vendor and flags
  env: { node: process.version, v8: process.versions.v8, execArgv: process.execArgv, quick },
  subjects: {},
};
for (const k of ours) results.subjects[k] = subj[k].simdInfo();
if (!simdOnly)
  results.subjects.ort = {
    package: 'onnxruntime-web',
    version: JSON.parse(readFileSync(path.join(ROOT, 'node_modules/onnxruntime-web/package.json'), 'utf8')).version,
    backend: 'wasm',
    threads: 1,
  };

// ---- agreement: check the outputs agree before timing anything ---------------------------------
if (!simdOnly) {
  results.agreement = [];
  for (const T of [16, P]) {
    const r = await ortForward.run(ortIds(T));
    for (const k of ours) {
      const o = models[k].forwardOut(T);
      const a = maxAbsDiff(o.attention, r.attention.data);
      const l = maxAbsDiff(o.logitsLast, r.logits_last.data);
      let lmax = 0;
      for (const x of r.logits_last.data) lmax = Math.max(lmax, Math.abs(x));
      results.agreement.push({
        subject: k,
        T,
        attention_max_abs_diff: a,
        logits_max_abs_diff: l,
        logits_max_abs: lmax,
      });
      log(
        `agreement ${k} vs ort, T=${T}: attention ${a.toExponential(2)}, logits ${l.toExponential(2)} (|logits| <= ${lmax.toFixed(2)})`,
      );
      if (!(a < 1e-4) || !(l < 1e-3 * Math.max(1, lmax)))
        throw new Error(`outputs disagree with onnxruntime-web (${k}, T=${T}): not timing`);
    }
  }
}

// ---- GEMM at the model's shapes --------------------------------------------------------------
const shapes = [
  [C, 3 * C, 'c_attn'],
  [C, C, 'c_proj'],
  [C, F, 'c_fc'],
  [F, C, 'mlp_proj'],
];
const Ms = [16, 64, P];
results.gemm = [];
for (const [K, N, layer] of shapes) {
  const g = {};
  for (const k of ours) g[k] = new subj[k].Gemm(K, N, P);
  const x = new Float32Array(P * K).map((_, i) => Math.sin(i));
  for (const M of Ms) {
    const cases = {};
    for (const k of ours) cases[k] = { fn: () => g[k].run(M) };
    if (!simdOnly) {
      const feeds = { x: new ort.Tensor('float32', x.subarray(0, M * K), [M, K]) };
      cases.ort = { fn: () => ortGemm[`${K}x${N}`].run(feeds) };
      if (ortGemm.overhead) cases.ort_overhead = { fn: () => ortGemm.overhead.run(feeds) };
    }
    const s = await compare(cases, timing({ minMs: 150 * budget, minRuns: 30, warm: 8 }));
    const flop = 2 * M * K * N;
    const row = { layer, M, K, N };
    for (const [k, st] of Object.entries(s)) row[k] = { ...st, gflops: flop / (st.median_ms * 1e6) };
    if (row.ort_overhead) {
      // onnxruntime-web's GEMM with its per-run cost (a one-op graph on the same input) taken out
      row.ort_kernel_gflops = flop / (Math.max(1e-6, row.ort.median_ms - row.ort_overhead.median_ms) * 1e6);
      delete row.ort_overhead.gflops;
    }
    results.gemm.push(row);
    log(
      `gemm ${layer} M=${M} K=${K} N=${N}: ` +
        Object.entries(row)
          .filter(([, v]) => v.gflops)
          .map(([k, v]) => `${k} ${v.gflops.toFixed(1)}`)
          .join(', ') +
        ' GFLOP/s',
    );
  }
  for (const k of ours) g[k].delete();
}

// ---- attention kernel alone (all heads of one layer) --------------------------------------------
results.attention = [];
const att = {};
for (const k of ours) att[k] = new subj[k].Attention(C, NH, P);
for (const T of [16, 64, P]) {
  const cases = {};
  for (const k of ours) cases[k] = { fn: () => att[k].run(T, 0) };
  const s = await compare(cases, timing({ minMs: 150 * budget, minRuns: 15, warm: 8 }));
  results.attention.push({ T, ...s });
  log(`attention T=${T}: ${medians(s)}`);
}

// ---- full forward against T (median, p95), with the attention kernel's share ------------------
results.forward = [];
// every 16 tokens for the plot; the quick run only the lengths the ratios use, and the shortest
const Ts = [];
for (let T = 8; T <= P; T += T < 16 ? 8 : 16) if (!quick || [8, 16, 64, P].includes(T)) Ts.push(T);
for (const T of Ts) {
  const cases = {};
  const key = [16, 64, P].includes(T); // the scalar build only at the tabulated T (it is slow)
  const subs = ours.filter((k) => key || k !== 'scalar');
  for (const k of subs) cases[k] = { fn: () => models[k].forwardOut(T) };
  if (!simdOnly) {
    const feeds = ortIds(T);
    cases.ort = { fn: () => ortForward.run(feeds) };
  }
  const s = await compare(cases, timing({ minMs: 300 * budget, minRuns: key ? 15 : 8, warm: 10 }));
  const a = await compare(
    Object.fromEntries(subs.map((k) => [k, { fn: () => att[k].run(T, 0) }])),
    timing({ minMs: 80 * budget, warm: 3 }),
  );
  const row = { T, ...s, attention_kernel_ms: Object.fromEntries(subs.map((k) => [k, a[k].median_ms * L])) };
  results.forward.push(row);
  log(
    `forward T=${T}: ` +
      Object.entries(s)
        .map(([k, v]) => `${k} ${v.median_ms.toFixed(2)}/${v.p95_ms.toFixed(2)} ms`)
        .join(', ') +
      `; attention share (simd) ${((100 * row.attention_kernel_ms.simd) / s.simd.median_ms).toFixed(0)}%`,
  );
}
for (const k of ours) att[k].delete();

// ---- one-token incremental update (T-1 tokens cached, one typed) -----------------------------
results.incremental = [];
for (const T of [16, 64, P]) {
  const cases = {};
  for (const k of ours) cases[k] = { fn: () => models[k].incremental(T), before: () => models[k].prime(T) };
  if (!simdOnly) {
    const feeds = ortIds(T);
    cases.ort = { fn: () => ortForward.run(feeds) };
  } // no KV cache in the graph: a full run
  const s = await compare(cases, timing({ minMs: 150 * budget, minRuns: 20, warm: 8 }));
  results.incremental.push({ T, ...s });
  log(`incremental T=${T}: ${medians(s)}`);
}
if (models.simd.incremental(P) !== P) {
  models.simd.prime(P);
  if (models.simd.incremental(P) !== P - 1) throw new Error('incremental run did not reuse the cache');
}

// ---- sizes and memory ----------------------------------------------------------------------------
results.memory = {};
for (const k of ours) results.memory[`${k}_bench_module_heap_bytes`] = subj[k].heapBytes();
if (!simdOnly) {
  const ortWasm = path.join(ROOT, 'node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm');
  results.sizes = {
    ort_wasm_bytes: statSync(ortWasm).size,
    onnx_model_bytes: statSync(path.join(onnxDir, 'forward.onnx')).size,
    model_safetensors_bytes: statSync(path.join(modelDir, 'model.safetensors')).size,
  };
}
// the npm package's module itself (its JS API over headscope_wasm): wasm memory after the longest run
if (!simdOnly) {
  const api = await import(pathToFileURL(path.resolve(pkgDir, 'headscope.js')).href);
  const tl0 = performance.now();
  await api.wasmMemoryBytes(); // loads the engine
  const tl1 = performance.now();
  const m = await api.loadModel({ ...files, name: 'bench' });
  const tl2 = performance.now();
  const before = await api.wasmMemoryBytes();
  const text = 'The history of the country is told in the speeches of its presidents. '.repeat(40);
  const t0 = performance.now();
  const r = m.run(text);
  const t1 = performance.now();
  results.memory.package_wasm_memory_after_load_bytes = before;
  results.memory.package_wasm_memory_peak_bytes = await api.wasmMemoryBytes();
  results.memory.package_heap_used_bytes = await api.wasmHeapUsedBytes();
  results.package_api = { T: r.T, first_run_ms: t1 - t0, core_instantiate_ms: tl1 - tl0, model_load_ms: tl2 - tl1 };
  log(
    `package module: wasm memory ${(before / 2 ** 20).toFixed(1)} MiB after load, ${(results.memory.package_wasm_memory_peak_bytes / 2 ** 20).toFixed(1)} MiB after a T=${r.T} run`,
  );
  // one keystroke at the end of a ~64-token text through the package's JS API, and its parts:
  // the embind calls HeadscopeModel.run makes, timed one by one on the same core
  const typed =
    'The quick brown fox jumps over the lazy dog near the river bank, while the old farmer watches from his porch and thinks about the harvest, the weather and the long winter that will come';
  const prev = typed.slice(0, -1);
  // the embind module itself (not part of the package's API), instantiated beside the package's
  const glue = await import(pathToFileURL(path.resolve(pkgDir, 'headscope_wasm.js')).href);
  const core = await glue.default({ wasmBinary: readFileSync(path.resolve(pkgDir, 'headscope_wasm.wasm')) });
  const h = core.load(files.config, files.weights, files.vocab, files.merges);
  if (h === null) throw new Error(`the package's engine did not load the model: ${core.lastError()}`);
  // the two engine calls HeadscopeModel.run makes for a result without `reuse`
  // (web/lib/headscope.js runData: run, then results with the top 10 and every attention row)
  const coreRun = (text) => {
    const r = coreRunCall(h, text);
    if (r === null) throw new Error(`Model.run failed: ${core.lastError()}`);
    if (h.results(10, false, 0, r.tokens, r.tokens, 0) === null)
      throw new Error(`Model.results failed: ${core.lastError()}`);
  };
  const parts = {
    api_run: { fn: () => m.run(typed), before: () => m.run(prev) },
    core_run: { fn: () => coreRun(typed), before: () => coreRun(prev) },
    tokenize: { fn: () => h.tokenize(typed) },
  };
  const ps = await compare(parts, timing({ minMs: 200 * budget, minRuns: 30, warm: 8 }));
  results.package_run_parts = { T: m.run(typed).T, ...ps };
  log(
    `package API, one keystroke at T=${results.package_run_parts.T}: run() ${ps.api_run.median_ms.toFixed(2)} ms; its two engine calls ${ps.core_run.median_ms.toFixed(2)} ms, tokenize alone ${ps.tokenize.median_ms.toFixed(3)} ms`,
  );
  h.delete();

  // ---- all logits (the lab's loss): the package's whole run() with allLogits, which also returns
  // the loss, top-k and attention, against onnxruntime-web's graph with every position's logits and
  // the attention. Full runs on both sides: before each timed run ours runs a text that differs from
  // the first token on, so nothing is reused from the cache.
  const ortAll = await ort.InferenceSession.create(readFileSync(path.join(onnxDir, 'forward_all_logits.onnx')), {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
  });
  const words = typed.split(' ');
  const textOf = (T, first) => {
    let text = first;
    for (let i = 0; m.tokenize(text).length < T; i++) text += ` ${words[i % words.length]}`;
    return text;
  };
  results.all_logits = [];
  for (const T of [16, 64, P]) {
    const text = textOf(T, 'The');
    const other = textOf(T, 'A');
    const Tours = m.run(text, { allLogits: true }).T;
    const feeds = ortIds(Tours);
    const s = await compare(
      {
        ours: { fn: () => m.run(text, { allLogits: true }), before: () => m.run(other, { allLogits: true }) },
        ort: { fn: () => ortAll.run(feeds) },
      },
      timing({ minMs: 300 * budget, minRuns: 10, warm: 5 }),
    );
    results.all_logits.push({ T: Tours, ...s });
    log(
      `all logits T=${Tours}: package run(allLogits) ${s.ours.median_ms.toFixed(2)} ms (with the loss), onnxruntime-web ${s.ort.median_ms.toFixed(2)} ms`,
    );
  }
  m.dispose();
}
writeFileSync(outFile, JSON.stringify(results, null, 1));
log('wrote', outFile);
process.exit(0);
