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
// Usage: node bench/harness/browser-gpt2-small.mjs --model DIR --onnx DIR --pkg DIR --out FILE
//          [--tokens 256,1024] [--quick] [--markdown OUT]
//   DIR: a GPT-2-shaped folder; --pkg: the package's files (dist/, as scripts/build-package.sh builds it)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/common/chromium.mjs';
import { benchArgs, gpt2SmallMarkdown, ROOT, stats } from './lib.mjs';
import { startStaticServer, DEMO_CSP, ISOLATION_HEADERS } from '../../web/server/static-server.mjs';

const opt = benchArgs(
  {
    required: ['model', 'onnx', 'pkg', 'out'],
    strings: ['markdown'],
    defaults: { tokens: '256,1024' },
    flags: ['quick'],
  },
  'node bench/harness/browser-gpt2-small.mjs --model DIR --onnx DIR --pkg DIR --out FILE [--tokens 256,1024] [--quick] [--markdown OUT]',
);
const Ts = opt.tokens.split(',').map(Number);
const log = (...a) => console.error('[browser-gpt2]', ...a);

const server = await startStaticServer({
  root: path.join(ROOT, 'bench', 'harness', 'browser_page'),
  mounts: [
    ['/pkg/', path.resolve(opt.pkg)],
    ['/model/', path.resolve(opt.model)],
    ['/onnx/', path.resolve(opt.onnx)],
    ['/ort/', path.join(ROOT, 'node_modules', 'onnxruntime-web', 'dist')],
  ],
  csp: DEMO_CSP,
  headers: ISOLATION_HEADERS,
});
const browser = await launchChromium();
const pageErrors = [];
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => {
    log('page error:', e.message);
    pageErrors.push(e.message);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') log(`console ${m.type()}: ${m.text()}`);
  });
  await page.goto(server.url);
  await page.waitForFunction(() => window.__bench, null, { timeout: 30_000 });
  const env = await page.evaluate(() => ({ isolated: window.__bench.isolated, cores: window.__bench.cores }));
  if (!env.isolated) throw new Error('the bench page is not cross-origin isolated: no threads to measure');

  // the subjects, loaded one after the other (each holds its own copy of the weights)
  const SUBJECTS = [
    ['ours-1', 'ours', 1],
    ['ours-2', 'ours', 2],
    ['ort-default', 'ort', null],
    ['ort-2', 'ort', 2],
    ['q8-1', 'ours-q8', 1],
    ['q8-2', 'ours-q8', 2],
  ];
  const threads = {};
  let config = null;
  for (const [name, kind, n] of SUBJECTS) {
    const t0 = Date.now();
    const r = await page.evaluate(([a, b, c]) => window.__bench.start(a, b, c), [name, kind, n]);
    threads[name] = r.threads;
    config ??= r.config;
    log(`${name}: ${r.threads} thread(s), loaded in ${Date.now() - t0} ms`);
  }
  for (const name of ['ours-2', 'q8-2'])
    if (threads[name] !== 2)
      throw new Error(`the package (${name}) runs ${threads[name]} thread(s) where 2 were asked for`);
  const call = (name, op, args) => page.evaluate(([a, b, c]) => window.__bench.call(a, b, c), [name, op, args]);

  // agreement first, at a short text: float32 on both sides in different orders, so the bounds of
  // bench/harness/wasm-gpt2-small.mjs (attention within 1e-4, logits within 1e-3 of their largest size)
  const probe = (await call('ours-1', 'inputs', { T: 16 }))[0];
  for (const name of ['ours-1', 'ours-2', 'ort-2']) {
    const d = await page.evaluate(([a, input]) => window.__bench.agreement(a, 'ort-default', input), [name, probe]);
    log(
      `agreement ${name} vs ort-default at T=16: attention ${d.attention.toExponential(2)}, logits ${d.logits.toExponential(2)}`,
    );
    if (!(d.attention < 1e-4) || !(d.logits < 1e-3 * Math.max(1, d.logitMax)))
      throw new Error(`${name} disagrees with onnxruntime-web: not timing`);
  }
  // 8 bits against float32: the bounds of tests/cpp/model/test_q8_storage.cpp (KL 0.03 nats, attention 0.3),
  // and the two thread counts give the same bits (a partition along outputs only)
  for (const name of ['q8-1', 'q8-2']) {
    const d = await page.evaluate(([a, input]) => window.__bench.agreement(a, 'ort-default', input), [name, probe]);
    log(
      `agreement ${name} vs ort-default at T=16: attention ${d.attention.toExponential(2)}, KL ${d.kl.toExponential(2)}`,
    );
    if (!(d.attention < 0.3) || !(d.kl < 0.03)) throw new Error(`${name} is further from float32 than 8 bits allow`);
  }
  const q8same = await page.evaluate(([a, input]) => window.__bench.agreement(a, 'q8-2', input), ['q8-1', probe]);
  if (q8same.attention !== 0 || q8same.logits !== 0) throw new Error('8 bits on 1 and 2 threads differ');

  const rows = [];
  for (const T of Ts) {
    const inputs = await call('ours-1', 'inputs', { T });
    const long = T >= 1024;
    const warm = opt.quick || long ? 1 : 2,
      rounds = opt.quick ? 1 : long ? 4 : 6,
      perRound = 1;
    const samples = Object.fromEntries(SUBJECTS.map(([name]) => [name, []]));
    for (const [name] of SUBJECTS) await call(name, 'time', { inputs, runs: warm });
    // each round in another order, so that what one subject leaves behind (onnxruntime-web's
    // threads spin a while after a run) does not always fall on the same next one
    for (let r = 0; r < rounds; r++)
      for (let k = 0; k < SUBJECTS.length; k++) {
        const [name] = SUBJECTS[(k + r) % SUBJECTS.length];
        samples[name].push(...(await call(name, 'time', { inputs, runs: perRound })));
      }
    const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)]));
    rows.push({ T, ...s });
    log(
      `T=${T}: ` +
        Object.entries(s)
          .map(([k, v]) => `${k} ${v.median_ms.toFixed(0)} ms`)
          .join(', '),
    );
  }

  // training on the page's default preset: the package's trainer at 1 and 2 threads, side by side
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
  const steps = opt.quick ? 5 : 40;
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
  if (pageErrors.length) throw new Error(`errors on the bench page: ${pageErrors.join('; ')}`);

  const ortVersion = JSON.parse(
    readFileSync(path.join(ROOT, 'node_modules/onnxruntime-web/package.json'), 'utf8'),
  ).version;
  const result = {
    chromium: browser.version(),
    onnxruntime_web: ortVersion,
    cores: env.cores,
    threads,
    config,
    rows,
    training,
  };
  writeFileSync(opt.out, JSON.stringify(result, null, 1) + '\n');
  const m = (r, k) => r[k].median_ms;
  const lines = [
    `Chromium ${result.chromium}, ${env.cores} cores, cross-origin isolated; onnxruntime-web ${ortVersion} (wasm backend) ` +
      `at its default, ${threads['ort-default']} thread(s) here (min(4, ceil(cores / 2))), and at ${threads['ort-2']}; each subject in a ` +
      'module Worker of its own on one page, run one at a time; a full run returning every attention map and the last logits to ' +
      'JavaScript; median wall ms of interleaved runs.',
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
} finally {
  await browser.close();
  await server.close();
}
