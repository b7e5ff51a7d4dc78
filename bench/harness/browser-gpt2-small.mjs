// The engine in headless Chromium on a cross-origin-isolated page, at 1 and 2 threads, against
// onnxruntime-web (wasm backend) at its own default thread count and at 2 threads, and the engine with
// 8-bit weights (weights: 'q8') at 1 and 2 threads, on the same page
// and checkpoint (bench/shapes/make_gpt2_small.py; ONNX graph from bench/shapes/export_onnx.py). Each subject is
// the npm package (or ORT) in a module Worker of its own (bench/harness/browser_page/); every run returns
// every attention map (L, H, T, T) and the last logits to JavaScript, as bench/harness/wasm-gpt2-small.mjs
// measures in node, where the threaded build does not load. Subjects run one at a time, interleaved
// round by round, so a load spike on the shared machine hits all alike. Outputs are checked against
// onnxruntime-web before anything is timed. Then training in the page: the package's trainer at 1
// and 2 threads on the training page's default preset (tokens/s).
// With --tjs DIR (bench/shapes/make_transformersjs_q8.py's folder), also transformers.js at its
// defaults (device wasm, dtype q8, its own thread count) against the package's q8, with every map
// and with the least its API returns (no full map), in the same rounds: the next-token
// distributions of both 8-bit models and of float32 are compared first (KL divergence, bound
// below), then the ratio goes to --tjs-markdown. --q8-peer-only runs just that comparison (the
// float32 package as the reference, no onnxruntime-web subjects, no training).
// --subjects NAME,... times those subjects alone (their references are loaded and checked too, not
// timed) and writes each sample to --out, no tables and no training: a cell timed apart from what the
// other subjects leave on the machine (bench/README.md). --rounds N overrides the rounds a length.
// --sessions N: the whole measurement in N fresh browsers in turn, each subject's samples pooled (and
// each session's medians written too): one session on a 2-core VM can be lastingly slower than the next.
// Usage: node bench/harness/browser-gpt2-small.mjs --model DIR --onnx DIR --pkg DIR --out FILE
//          [--tokens 256,1024] [--quick] [--markdown OUT] [--tjs DIR [--tjs-markdown OUT] [--q8-peer-only]]
//          [--subjects NAME,... [--rounds N]] [--sessions N]
//   DIR: a GPT-2-shaped folder; --pkg: the package's files (dist/, as scripts/build-package.sh builds it)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/common/chromium.mjs';
import { benchArgs, gpt2SmallMarkdown, machineInfo, openBenchPage, ROOT, startBenchPageServer, stats } from './lib.mjs';
import { DEMO_CSP, ISOLATION_HEADERS } from '../../web/server/static-server.mjs';

const opt = benchArgs(
  {
    required: ['model', 'onnx', 'pkg', 'out'],
    strings: ['markdown', 'tjs', 'tjs-markdown', 'subjects', 'rounds', 'sessions'],
    defaults: { tokens: '256,1024' },
    flags: ['quick', 'q8-peer-only'],
  },
  'node bench/harness/browser-gpt2-small.mjs --model DIR --onnx DIR --pkg DIR --out FILE [--tokens 256,1024] [--quick] [--markdown OUT] ' +
    '[--tjs DIR [--tjs-markdown OUT] [--q8-peer-only]] [--subjects NAME,... [--rounds N]] [--sessions N]',
);
const chosen = opt.subjects ? opt.subjects.split(',') : null;
if (chosen && (opt.tjs || opt.markdown))
  throw new Error('--subjects writes samples alone: not with --tjs or --markdown');
if (opt.rounds && !(Number(opt.rounds) >= 1)) throw new Error(`--rounds: a count of at least 1, got ${opt.rounds}`);
const SESSIONS = opt.sessions === undefined ? 1 : Number(opt.sessions);
if (!Number.isInteger(SESSIONS) || SESSIONS < 1)
  throw new Error(`--sessions: a whole number of at least 1, got ${opt.sessions}`);
const peerOnly = opt['q8-peer-only'];
if (peerOnly && !opt.tjs) throw new Error('--q8-peer-only needs --tjs DIR');
const TJS = path.join(ROOT, 'node_modules', '@huggingface', 'transformers');
const Ts = opt.tokens.split(',').map(Number);
const log = (...a) => console.error('[browser-gpt2]', ...a);

const tjsRequests = [];
const server = await startBenchPageServer('browser_page', {
  mounts: [
    ['/pkg/', path.resolve(opt.pkg)],
    ['/model/', path.resolve(opt.model)],
    ['/onnx/', path.resolve(opt.onnx)],
    ['/ort/', path.join(ROOT, 'node_modules', 'onnxruntime-web', 'dist')],
    // transformers.js's web bundle, the onnxruntime-web it pins (its own nested copy) and the folder
    ...(opt.tjs
      ? [
          ['/tjs/', path.join(TJS, 'dist')],
          ['/tjs-ort/', path.join(TJS, 'node_modules', 'onnxruntime-web', 'dist')],
          ['/tjs-models/model/', path.resolve(opt.tjs)],
        ]
      : []),
  ],
  csp: DEMO_CSP,
  headers: ISOLATION_HEADERS,
  // what transformers.js reads of its folder (it probes optional files: a 404 is one of those)
  log: (method, p) => {
    if (p.startsWith('/tjs-models/')) tjsRequests.push(p);
  },
});
// the subjects, loaded one after the other in each session (each holds its own copy of the weights)
const SUBJECTS = [
  ['ours-1', 'ours', 1],
  ...(peerOnly
    ? []
    : [
        ['ours-2', 'ours', 2],
        ['ort-default', 'ort', null],
        ['ort-2', 'ort', 2],
        // the last logits alone: the package without full maps, onnxruntime-web fetching logits_last only
        ['lean-1', 'ours-lean', 1],
        ['lean-2', 'ours-lean', 2],
        ['ortl-default', 'ort-logits', null],
        ['ortl-2', 'ort-logits', 2],
      ]),
  ['q8-1', 'ours-q8', 1],
  ['q8-2', 'ours-q8', 2],
  ...(opt.tjs
    ? [
        ['q8lean-1', 'ours-q8-lean', 1],
        ['q8lean-2', 'ours-q8-lean', 2],
        ['tjs-q8', 'tjs', null],
      ]
    : []),
];
if (chosen) {
  // the references every check below needs: the float32 pair, and each subject's own
  const refs = { 'ortl-default': ['ort-default'], 'ortl-2': ['ort-2'], 'q8-1': ['q8-2'], 'q8-2': ['q8-1'] };
  const known = SUBJECTS.map(([name]) => name);
  for (const name of chosen)
    if (!known.includes(name)) throw new Error(`--subjects: no subject ${name} (${known.join(', ')})`);
  const loaded = new Set(['ours-1', 'ort-default', ...chosen, ...chosen.flatMap((name) => refs[name] ?? [])]);
  SUBJECTS.splice(0, SUBJECTS.length, ...SUBJECTS.filter(([name]) => loaded.has(name)));
}
const has = (name) => SUBJECTS.some(([n]) => n === name);
// what is timed: all, but the float32 reference alone in the peer comparison, or the chosen ones
const TIMED = chosen
  ? SUBJECTS.filter(([name]) => chosen.includes(name))
  : peerOnly
    ? SUBJECTS.filter(([name]) => name !== 'ours-1')
    : SUBJECTS;
// One session: a fresh browser (its own processes and wasm memory), every subject loaded and checked,
// then the timed rounds. A 2-core VM gives one browser session lastingly faster or slower than
// another (the same subject 2.5 s in one and 3.2 s in the next, steady within each; bench/README.md,
// "GPT-2 small's shape"), so --sessions N pools the samples of N sessions in turn.
async function measureSession(index) {
  const browser = await launchChromium();
  try {
    const { page, pageErrors, env, call } = await openBenchPage(browser, server.url, log);

    const threads = {};
    let config = null,
      tjsInfo = null;
    for (const [name, kind, n] of SUBJECTS) {
      const t0 = Date.now();
      const r = await page.evaluate(([a, b, c]) => window.__bench.start(a, b, c), [name, kind, n]);
      threads[name] = r.threads;
      config ??= r.config;
      if (kind === 'tjs') tjsInfo = { ...r, requested: [...new Set(tjsRequests)] };
      log(`${name}: ${r.threads} thread(s), loaded in ${Date.now() - t0} ms`);
    }
    for (const name of ['ours-2', 'lean-2', 'q8-2', 'q8lean-2'])
      if (name in threads && threads[name] !== 2)
        throw new Error(`the package (${name}) runs ${threads[name]} thread(s) where 2 were asked for`);
    if (tjsInfo) {
      log(
        `transformers.js ${tjsInfo.version} on onnxruntime-web ${tjsInfo.onnxruntimeWeb}: inputs ${tjsInfo.inputNames.join(', ')}`,
      );
      log(`transformers.js read ${tjsInfo.requested.join(', ')}`);
      // its graph takes a key/value cache (past_key_values.N.*, empty on a first call) as Optimum's export does
      if (!tjsInfo.inputNames.includes('past_key_values.0.key') || !tjsInfo.outputNames.includes('present.0.key'))
        throw new Error(`the transformers.js graph has no key/value cache: ${tjsInfo.inputNames}`);
    }

    // agreement first, at a short text: float32 on both sides in different orders, so the bounds of
    // bench/harness/wasm-gpt2-small.mjs (attention within 1e-4, logits within 1e-3 of their largest size)
    const probe = (await call('ours-1', 'inputs', { T: 16 }))[0];
    const F32 = peerOnly ? 'ours-1' : 'ort-default'; // the float32 reference of the 8-bit checks
    for (const name of peerOnly ? [] : ['ours-1', 'ours-2', 'ort-2'].filter(has)) {
      const d = await page.evaluate(([a, input]) => window.__bench.agreement(a, 'ort-default', input), [name, probe]);
      log(
        `agreement ${name} vs ort-default at T=16: attention ${d.attention.toExponential(2)}, logits ${d.logits.toExponential(2)}`,
      );
      if (!(d.attention < 1e-4) || !(d.logits < 1e-3 * Math.max(1, d.logitMax)))
        throw new Error(`${name} disagrees with onnxruntime-web: not timing`);
    }
    // the last-logits-alone subjects return the very logits of their full runs (the same arithmetic)
    for (const [a, b] of peerOnly
      ? []
      : [
          ['lean-1', 'ours-1'],
          ['lean-2', 'ours-1'],
          ['ortl-default', 'ort-default'],
          ['ortl-2', 'ort-2'],
        ].filter(([a, b]) => has(a) && has(b))) {
      const d = await page.evaluate(([x, y, input]) => window.__bench.agreement(x, y, input), [a, b, probe]);
      if (d.logits !== 0) throw new Error(`${a} returns other logits than ${b} (${d.logits}): not timing`);
    }
    // 8 bits against float32: the bounds of tests/cpp/model/test_q8_storage.cpp (KL 0.03 nats, attention 0.3),
    // and the two thread counts give the same bits (a partition along outputs only)
    for (const name of ['q8-1', 'q8-2'].filter(has)) {
      const d = await page.evaluate(([a, b, input]) => window.__bench.agreement(a, b, input), [name, F32, probe]);
      log(
        `agreement ${name} vs ${F32} at T=16: attention ${d.attention.toExponential(2)}, KL ${d.kl.toExponential(2)}`,
      );
      if (!(d.attention < 0.3) || !(d.kl < 0.03)) throw new Error(`${name} is further from float32 than 8 bits allow`);
    }
    if (has('q8-1') && has('q8-2')) {
      const q8same = await page.evaluate(([a, input]) => window.__bench.agreement(a, 'q8-2', input), ['q8-1', probe]);
      if (q8same.attention !== 0 || q8same.logits !== 0) throw new Error('8 bits on 1 and 2 threads differ');
    }

    // The two 8-bit models against each other and against float32 (the package's), at the last
    // position, before anything of them is timed: at T = 16 and at each timed length. The bound: both
    // are 8-bit approximations of one float32 model, and for small changes KL is locally a squared
    // distance (half the Fisher metric), so sqrt(KL) obeys the triangle inequality to first order:
    // KL(q8 || tjs) <~ (sqrt(KL(f32 || q8)) + sqrt(KL(f32 || tjs)))^2 <= 2 (KL(f32 || q8) + KL(f32 || tjs)).
    // Twice that (4x the sum of the measured float32-vs-8-bit KLs) leaves room for the second-order
    // terms; a graph or feed that is wrong (another model, shifted positions, a broken quantizer) is
    // off by nats, far past it. Each 8-bit model must also be within 0.1 nats of float32 (the
    // package's own bound is 0.03, above; transformers.js's q8 is coarser: one scale per weight
    // tensor, embeddings in 8 bits too). And the lean run returns the very logits of the full one.
    const distributions = [];
    async function checkDistributions(T, input) {
      const pairs = [
        ['ours-1', 'q8-1'],
        ['ours-1', 'tjs-q8'],
        ['q8-1', 'tjs-q8'],
        ['q8-1', 'q8lean-1'],
      ];
      const names = ['ours-1', 'q8-1', 'q8lean-1', 'tjs-q8'];
      const d = await page.evaluate(([n, p, x]) => window.__bench.distributions(n, p, x), [names, pairs, input]);
      const [f32q8, f32tjs, q8tjs, lean] = d;
      const bound = 4 * (f32q8.kl + f32tjs.kl);
      const row = { T, kl_f32_q8: f32q8.kl, kl_f32_tjs: f32tjs.kl, kl_q8_tjs: q8tjs.kl, bound, top1: q8tjs.top1 };
      distributions.push(row);
      log(
        `T=${T}: KL(f32 || q8) ${f32q8.kl.toExponential(2)}, KL(f32 || transformers.js q8) ${f32tjs.kl.toExponential(2)}, ` +
          `KL(q8 || transformers.js q8) ${q8tjs.kl.toExponential(2)} (bound ${bound.toExponential(2)}); top tokens ${q8tjs.top1}`,
      );
      if (!(f32q8.kl < 0.1) || !(f32tjs.kl < 0.1))
        throw new Error(`T=${T}: an 8-bit model is further than 0.1 nats from float32: not timing`);
      if (!(q8tjs.kl <= bound))
        throw new Error(`T=${T}: the two 8-bit models disagree beyond 4 (KL_q8 + KL_tjs) = ${bound}: not timing`);
      if (lean.logits !== 0) throw new Error(`T=${T}: the lean q8 run's logits differ from the full run's`);
    }
    if (opt.tjs) await checkDistributions(16, probe);

    const samplesByT = [];
    for (const T of Ts) {
      const inputs = await call('ours-1', 'inputs', { T });
      if (opt.tjs) await checkDistributions(T, inputs[0]);
      const long = T >= 1024;
      // two warm-up runs at any length: the first runs at T = 1,024 that hand 604 MB of maps to JavaScript
      // are up to 1.4 s slower than the later ones in one process, either engine (fresh pages of a new
      // array, before the allocator reuses a freed one's: measured in Node, a JS copy of the maps 1.6 s
      // in the first two runs, 0.28 s after)
      const warm = opt.quick ? 1 : 2,
        rounds = opt.rounds ? Number(opt.rounds) : opt.quick ? 1 : long ? 4 : 6,
        perRound = 1;
      const samples = Object.fromEntries(TIMED.map(([name]) => [name, []]));
      for (const [name] of TIMED) await call(name, 'time', { inputs, runs: warm });
      // each round in another order, so that what one subject leaves behind (onnxruntime-web's
      // threads spin a while after a run) does not always fall on the same next one
      for (let r = 0; r < rounds; r++)
        for (let k = 0; k < TIMED.length; k++) {
          const [name] = TIMED[(k + r) % TIMED.length];
          samples[name].push(...(await call(name, 'time', { inputs, runs: perRound })));
        }
      samplesByT.push(samples);
      log(
        `session ${index + 1}, T=${T}: ` +
          Object.entries(samples)
            .map(([k, v]) => `${k} ${stats(v).median_ms.toFixed(0)} ms`)
            .join(', '),
      );
    }

    // training on the page's default preset: the package's trainer at 1 and 2 threads, side by side
    // (in the first session)
    const training = peerOnly || chosen || index > 0 ? null : await measureTraining(page, call, STEPS);
    if (pageErrors.length) throw new Error(`errors on the bench page: ${pageErrors.join('; ')}`);
    return { chromium: browser.version(), env, threads, config, tjsInfo, distributions, samplesByT, training };
  } finally {
    await browser.close();
  }
}

const STEPS = opt.quick ? 5 : 40;
const runs = [];
try {
  for (let i = 0; i < SESSIONS; i++) runs.push(await measureSession(i));
} finally {
  await server.close();
}
const { env, threads, config, tjsInfo, distributions, training } = runs[0];
const steps = STEPS;
// each subject's samples of every session together; with several sessions, each one's medians too
const rows = Ts.map((T, i) => {
  const samples = Object.fromEntries(TIMED.map(([name]) => [name, runs.flatMap((run) => run.samplesByT[i][name])]));
  const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)]));
  const perSession = runs.map((run) =>
    Object.fromEntries(Object.entries(run.samplesByT[i]).map(([k, v]) => [k, stats(v).median_ms])),
  );
  return {
    T,
    ...s,
    ...(chosen ? { samples_ms: samples } : {}),
    ...(SESSIONS > 1 ? { session_medians_ms: perSession } : {}),
  };
});

const ortVersion = JSON.parse(
  readFileSync(path.join(ROOT, 'node_modules/onnxruntime-web/package.json'), 'utf8'),
).version;
const result = {
  chromium: runs[0].chromium,
  machine: machineInfo(), // the CPU: the ceilings differ by vendor and flags
  sessions: SESSIONS,
  onnxruntime_web: ortVersion,
  cores: env.cores,
  threads,
  config,
  rows,
  training,
  ...(tjsInfo ? { transformers_js: tjsInfo, distributions } : {}),
};
writeFileSync(opt.out, JSON.stringify(result, null, 1) + '\n');
const m = (r, k) => r[k].median_ms;
if (chosen) {
  for (const r of rows) log(`T=${r.T} samples (ms): ${JSON.stringify(r.samples_ms)}`);
} else if (!peerOnly) {
  const lines = [
    `Chromium ${result.chromium}, ${env.cores} cores, cross-origin isolated; onnxruntime-web ${ortVersion} (wasm backend) ` +
      `at its default, ${threads['ort-default']} thread(s) here (min(4, ceil(cores / 2))), and at ${threads['ort-2']}; each subject in a ` +
      'module Worker of its own on one page, run one at a time; a full run returning every attention map and the last logits to ' +
      `JavaScript; median wall ms of interleaved runs${SESSIONS > 1 ? `, pooled over ${SESSIONS} browser sessions` : ''}.`,
    '',
    '| T | ours 1 thread | ours 2 threads | ORT default | ORT 2 threads | ours 2 / 1 thread | ours 2 threads / ORT default | ours / ORT, both 2 threads |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.T} | ${m(r, 'ours-1').toFixed(0)} | ${m(r, 'ours-2').toFixed(0)} | ${m(r, 'ort-default').toFixed(0)} | ` +
        `${m(r, 'ort-2').toFixed(0)} | ${(m(r, 'ours-1') / m(r, 'ours-2')).toFixed(2)}x | ${(m(r, 'ort-default') / m(r, 'ours-2')).toFixed(2)}x | ` +
        `${(m(r, 'ort-2') / m(r, 'ours-2')).toFixed(2)}x |`,
    ),
    '',
    'Returning the last logits alone, in the same rounds: the package without full maps (attentionMaps: false; its run ' +
      "still raises every head's thumbnail and role statistics, run(text, { attention: 'thumbnails', topK: 0 })), " +
      'onnxruntime-web fetching logits_last only (its graph still computes every map, as its softmax):',
    '',
    `| T | ours 1 thread | ours 2 threads | ORT default (${threads['ortl-default']} thread(s)) | ORT 2 threads | ours 1 thread / ORT default | ours / ORT, both 2 threads |`,
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.T} | ${m(r, 'lean-1').toFixed(0)} | ${m(r, 'lean-2').toFixed(0)} | ${m(r, 'ortl-default').toFixed(0)} | ` +
        `${m(r, 'ortl-2').toFixed(0)} | ${(m(r, 'ortl-default') / m(r, 'lean-1')).toFixed(2)}x | ` +
        `${(m(r, 'ortl-2') / m(r, 'lean-2')).toFixed(2)}x |`,
    ),
    '',
    "With 8-bit weights (weights: 'q8'; relaxed SIMD's 8-bit dot product in Chromium), in the same rounds:",
    '',
    '| T | q8 1 thread | q8 2 threads | q8 / float32, 1 thread | q8 / float32, 2 threads | q8 2 threads / ORT default |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.T} | ${m(r, 'q8-1').toFixed(0)} | ${m(r, 'q8-2').toFixed(0)} | ${(m(r, 'ours-1') / m(r, 'q8-1')).toFixed(2)}x | ` +
        `${(m(r, 'ours-2') / m(r, 'q8-2')).toFixed(2)}x | ${(m(r, 'ort-default') / m(r, 'q8-2')).toFixed(2)}x |`,
    ),
    '',
    `Training in the page (the package's trainer in a Worker, the training page's default preset: ${training.config.nLayer} layers x ` +
      `${training.config.nHead} heads, width ${training.config.nEmbd}, ${training.tokensPerStep} tokens per step; median of ${steps}-step chunks):`,
    '',
    '| trainer | 1 thread | 2 threads | 2 / 1 thread |',
    '|---|---|---|---|',
    `| tokens/s | ${training['train-1'].tokens_per_s.toFixed(0)} | ${training['train-2'].tokens_per_s.toFixed(0)} | ` +
      `${(training['train-2'].tokens_per_s / training['train-1'].tokens_per_s).toFixed(2)}x |`,
  ];
  console.log(lines.join('\n'));
  if (opt.markdown) {
    writeFileSync(
      opt.markdown,
      gpt2SmallMarkdown(
        "GPT-2 small's shape in Chromium, threaded, against onnxruntime-web",
        'node bench/harness/browser-gpt2-small.mjs --markdown ...',
        config,
        lines,
      ),
    );
  }
}
if (tjsInfo) {
  const n = threads['tjs-q8'];
  const x = (a, b) => `${(a / b).toFixed(2)}x`;
  const lines = [
    `Chromium ${result.chromium}, ${env.cores} cores, cross-origin isolated. transformers.js ${tjsInfo.version} at its defaults: ` +
      `device wasm, dtype q8 (onnx/model_quantized.onnx of bench/shapes/make_transformersjs_q8.py: DynamicQuantizeLinear + ` +
      `MatMulInteger, int8 weights with one scale per tensor), on its own onnxruntime-web ${tjsInfo.onnxruntimeWeb} (asyncify build) at ` +
      `its default thread count, ${n} here (min(4, ceil(cores / 2))). Its forward: model({ input_ids, attention_mask }) on T ids with an ` +
      `empty past, as Optimum's GPT-2 graph takes it (logits at every position and the key/value cache come back), to the last ` +
      "position's logits. The package with weights: 'q8' (per-channel int8 weights, per-token 7-bit activations, relaxed SIMD's " +
      '8-bit dot product): with every attention map and the last logits returned, and lean (attentionMaps: false and ' +
      "run(text, { attention: 'thumbnails', topK: 0 }): its API has no run that returns the last logits alone; the lean run " +
      "returns them with every head's 128 x 128 thumbnail). Each subject in a module Worker of its own on one page, one at a time, " +
      'interleaved round by round; median wall ms.',
    '',
    `| T | transformers.js q8 (${n} thread${n === 1 ? '' : 's'}) | q8 1 thread | q8 2 threads | q8 lean 1 thread | q8 lean 2 threads | ` +
      'q8 lean 1 thread / transformers.js | q8 lean 2 threads / transformers.js (both at their defaults) | ' +
      'q8 with maps 1 thread / transformers.js | q8 with maps 2 threads / transformers.js |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.T} | ${m(r, 'tjs-q8').toFixed(0)} | ${m(r, 'q8-1').toFixed(0)} | ${m(r, 'q8-2').toFixed(0)} | ` +
        `${m(r, 'q8lean-1').toFixed(0)} | ${m(r, 'q8lean-2').toFixed(0)} | ${x(m(r, 'tjs-q8'), m(r, 'q8lean-1'))} | ` +
        `${x(m(r, 'tjs-q8'), m(r, 'q8lean-2'))} | ${x(m(r, 'tjs-q8'), m(r, 'q8-1'))} | ${x(m(r, 'tjs-q8'), m(r, 'q8-2'))} |`,
    ),
    '',
    'Checked before timing, at the last position (nats; the bound is 4 (KL(f32 || q8) + KL(f32 || transformers.js)), ' +
      'the reasoning in bench/harness/browser-gpt2-small.mjs; f32 is the package in float32):',
    '',
    '| T | KL(f32 &#124;&#124; q8) | KL(f32 &#124;&#124; transformers.js q8) | KL(q8 &#124;&#124; transformers.js q8) | bound | most likely token (q8, transformers.js) |',
    '|---|---|---|---|---|---|',
    ...distributions.map(
      (d) =>
        `| ${d.T} | ${d.kl_f32_q8.toExponential(2)} | ${d.kl_f32_tjs.toExponential(2)} | ${d.kl_q8_tjs.toExponential(2)} | ` +
        `${d.bound.toExponential(2)} | ${d.top1.join(', ')} |`,
    ),
  ];
  console.log(lines.join('\n'));
  if (opt['tjs-markdown']) {
    writeFileSync(
      opt['tjs-markdown'],
      gpt2SmallMarkdown(
        "GPT-2 small's shape in Chromium: the package's q8 against transformers.js's q8",
        'node bench/harness/browser-gpt2-small.mjs --tjs DIR --tjs-markdown ...',
        config,
        lines,
      ),
    );
  }
}

// The package's trainer at 1 and 2 threads on the training page's default preset, side by side:
// tokens/s from the median wall time of `steps`-step chunks.
async function measureTraining(page, call, steps) {
  const TRAINERS = [
    ['train-1', 1],
    ['train-2', 2],
  ];
  const training = { threads: {} };
  for (const [name, n] of TRAINERS) {
    const r = await page.evaluate(([a, c]) => window.__bench.start(a, 'trainer', c), [name, n]);
    training.threads[name] = r.threads;
    training.tokensPerStep = r.tokensPerStep;
    training.config = r.config;
  }
  if (training.threads['train-2'] !== 2)
    throw new Error(`the trainer runs ${training.threads['train-2']} thread(s) where 2 were asked for`);
  for (const [name] of TRAINERS) await call(name, 'train', { steps: opt.quick ? 2 : 20 });
  const trainMs = Object.fromEntries(TRAINERS.map(([name]) => [name, []]));
  for (let r = 0; r < (opt.quick ? 1 : 5); r++)
    for (const [name] of TRAINERS) trainMs[name].push((await call(name, 'train', { steps })).ms);
  for (const [name] of TRAINERS) {
    const med = stats(trainMs[name]).median_ms;
    training[name] = {
      median_ms_per_chunk: med,
      steps_per_chunk: steps,
      tokens_per_s: (training.tokensPerStep * steps) / (med / 1000),
    };
  }
  log(`training: ${TRAINERS.map(([name]) => `${name} ${training[name].tokens_per_s.toFixed(0)} tokens/s`).join(', ')}`);
  return training;
}
