// Prefill against wllama 3.8.1 (llama.cpp in wasm) in headless Chromium on one cross-origin-isolated
// page: the npm package (headscope) and wllama, each in a module Worker of its own
// (bench/harness/llama_prefill_page/), at 1 and 2 threads, in float32 (headscope's 'f32' against
// wllama on the F32 GGUF) and in 8 bits (headscope's weights: 'q8' against wllama on the Q8_0 GGUF),
// on a random Llama-family checkpoint (bench/shapes/make_llama_small.py) and its GGUF files
// (bench/shapes/make_gguf.py). A run is a prefill of T tokens in one batch and nothing else (no map
// returned, no token decoded after the prompt). Outputs are checked before anything is timed: the
// last position's log-probabilities of wllama's F32 run against headscope's float32 run of the same
// text (and the same token count), which is where a wrong q/k permutation in the GGUF shows.
// Subjects run one at a time, interleaved round by round in a rotating order.
// Usage: node bench/harness/browser-llama-prefill.mjs --model DIR --gguf-f32 FILE --gguf-q8 FILE --pkg DIR
//          --out RESULTS [--markdown TABLE] [--tokens 256,1024] [--quick]
//   RESULTS: the JSON file to write; TABLE: the Markdown file of its table. DIR: a Llama-family
//   folder (config.json, model.safetensors, tokenizer.json); --pkg: the package's files (dist/, as
//   scripts/build-package.sh builds it). --quick: T = 32, one warm-up and one round.
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchChromium } from '../../scripts/common/chromium.mjs';
import { benchArgs, machineInfo, machineLine, openBenchPage, ROOT, startBenchPageServer, stats } from './lib.mjs';
import { ISOLATION_HEADERS } from '../../web/server/static-server.mjs';

const USAGE =
  'node bench/harness/browser-llama-prefill.mjs --model DIR --gguf-f32 FILE --gguf-q8 FILE --pkg DIR --out FILE ' +
  '[--markdown FILE] [--tokens 256,1024] [--quick]';
const opt = benchArgs(
  {
    required: ['model', 'gguf-f32', 'gguf-q8', 'pkg', 'out'],
    strings: ['markdown', 'tokens'],
    flags: ['quick'],
  },
  USAGE,
);
const Ts = (opt.tokens ?? (opt.quick ? '32' : '256,1024')).split(',').map(Number);
if (Ts.some((T) => !Number.isInteger(T) || T < 2)) throw new Error(`--tokens: whole numbers >= 2, got ${opt.tokens}`);
const log = (...a) => console.error('[llama-prefill]', ...a);
const maxT = Math.max(...Ts);

// The demo's policy plus blob: scripts and workers, which wllama needs: it starts its own Worker from a
// blob: URL of its bundled code (src/utils.ts, createWorker). Nothing is fetched from elsewhere.
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval' blob:; worker-src 'self' blob:; style-src 'self'";
const ggufs = { f32: path.resolve(opt['gguf-f32']), q8: path.resolve(opt['gguf-q8']) };
const server = await startBenchPageServer('llama_prefill_page', {
  mounts: [
    ['/pkg/', path.resolve(opt.pkg)],
    ['/model/', path.resolve(opt.model)],
    ['/gguf-f32/', path.dirname(ggufs.f32)],
    ['/gguf-q8/', path.dirname(ggufs.q8)],
    ['/wllama/', path.join(ROOT, 'node_modules', '@wllama', 'wllama')],
  ],
  csp: CSP,
  headers: ISOLATION_HEADERS,
});
const ggufUrl = (kind) => `/gguf-${kind}/${encodeURIComponent(path.basename(ggufs[kind]))}`;

// Two phases, by storage: float32 (headscope 'f32' and wllama on the F32 GGUF), then 8 bits (headscope
// 'q8' and wllama on the Q8_0 GGUF), each at 1 and 2 threads, its subjects loaded, checked, timed
// (interleaved) and ended before the next phase loads: all eight on one page at T = 1,024 pass the
// memory a renderer gets (a wllama allocation failed there). The ratios compare subjects of one phase.
const PHASES = ['f32', 'q8'].map((st) => [
  st,
  [1, 2].flatMap((threads) => [
    [`hs-${st}-${threads}`, { kind: 'headscope', threads, weights: st }],
    [`wl-${st}-${threads}`, { kind: 'wllama', threads, gguf: ggufUrl(st) }],
  ]),
]);
const SUBJECTS = PHASES.flatMap(([, subjects]) => subjects);
// wllama's context and batch: the whole prompt in one batch (n_batch = n_ubatch >= T), a context for it
// and the one token sampled after it
const WLLAMA = { nBatch: maxT, nCtx: maxT + 16 };

const machine = machineInfo();
log(`CPU: ${machineLine(machine)}; load ${machine.loadavg.map((x) => x.toFixed(2)).join(' ')}`);
const browser = await launchChromium();
try {
  const { page, pageErrors, env, call } = await openBenchPage(browser, server.url, log);

  const loaded = {};
  async function load(subjects) {
    for (const [name, options] of subjects) {
      const t0 = Date.now();
      const r = await page.evaluate(([a, b]) => window.__bench.start(a, b), [name, { ...options, ...WLLAMA }]);
      loaded[name] = r;
      log(
        `${name}: ${r.threads} thread(s)${r.weights ? `, weights ${r.weights}` : ''}, loaded in ${Date.now() - t0} ms`,
      );
      if (r.threads !== options.threads)
        throw new Error(`${name} runs ${r.threads} thread(s) where ${options.threads} were asked for`);
      if (options.kind === 'wllama' && r.multiThread !== options.threads > 1)
        throw new Error(`${name}: wllama ${r.multiThread ? 'with' : 'without'} its thread pool at ${options.threads}`);
      if (options.kind === 'headscope' && r.weights !== options.weights)
        throw new Error(`${name} holds its weights in ${r.weights}, not ${options.weights}`);
      if (options.kind === 'wllama' && !(r.context.n_batch >= maxT && r.context.n_ubatch >= maxT))
        throw new Error(`${name}: wllama's batch ${JSON.stringify(r.context)} does not hold ${maxT} tokens`);
      if (options.kind === 'wllama' && r.addBos)
        throw new Error(`${name}: the GGUF adds a BOS that headscope's tokenizer does not (make_gguf.py)`);
    }
  }
  // Agreement first, on a text of 32 tokens. Both sides in float32 on the same weights (BF16 values,
  // exact in F32), summing in different orders, and llama.cpp with its default F16 key/value cache: the
  // last position's log-probabilities (wllama's 40 most likely tokens) agree to 1.6e-4 (tiny-llama3) and
  // 2.5e-4 (SmolLM2-135M's shape) of their spread (largest minus smallest log-probability of headscope's
  // whole vocabulary). The bound is 2e-3 of the spread, and wllama's most likely token must be within
  // twice that of headscope's most likely. Measured with the q/k permutation left out of the GGUF (rope
  // then rotates the wrong pairs of every head): 5.3e-3 (tiny-llama3, whose near-uniform random attention
  // hides it most) and 1.9e-2 of the spread, so that mistake fails here. The 8-bit subjects (rounded
  // differently: per output channel in headscope, per block of 32 in Q8_0; measured 9e-3 and 1.6e-2 of
  // the spread on SmolLM2's shape) are held to 5e-2 of it.
  const BOUNDS = { 'wl-f32-1': 2e-3, 'wl-f32-2': 2e-3, 'hs-f32-2': 0 };
  const K = 40;
  let probe = null,
    ref = null,
    spread = 0;
  const agreement = {};
  const inputsOf = {}; // T -> the two texts, tokenized by the first phase's headscope
  const rows = Ts.map((T) => ({ T }));
  for (const [storage, subjects] of PHASES) {
    await load(subjects);
    const first = subjects[0][0]; // headscope at 1 thread
    if (!ref) {
      probe = (await call(first, 'inputs', { T: 32 }))[0];
      ref = await call(first, 'outputs', { ...probe, k: K });
      let lo = Infinity,
        hi = -Infinity;
      for (const v of ref.logprobs) ((lo = Math.min(lo, v)), (hi = Math.max(hi, v)));
      spread = hi - lo;
    }
    for (const [name] of subjects) {
      if (name === 'hs-f32-1') continue;
      const bound = BOUNDS[name] ?? 5e-2;
      const out = await call(name, 'outputs', { ...probe, k: K });
      const top = out.top; // [[id, logprob], ...], most likely first
      if (top.length !== K) throw new Error(`${name} listed ${top.length} tokens, not ${K}`);
      if (out.promptTokens !== undefined && out.promptTokens !== probe.ids.length)
        throw new Error(
          `${name} saw ${out.promptTokens} tokens where headscope saw ${probe.ids.length}: the tokenizers differ`,
        );
      let maxDiff = 0;
      for (const [id, lp] of top) maxDiff = Math.max(maxDiff, Math.abs(lp - ref.logprobs[id]));
      const topGap = ref.logprobs[ref.top[0][0]] - ref.logprobs[top[0][0]];
      agreement[name] = { maxDiff, relative: maxDiff / spread, topGap, bound, top1: top[0][0], refTop1: ref.top[0][0] };
      log(
        `agreement ${name} vs hs-f32-1 at T=32 over its ${K} most likely: max |d logprob| ${maxDiff.toExponential(2)} ` +
          `(${(maxDiff / spread).toExponential(2)} of the spread ${spread.toFixed(2)}), top-1 ${top[0][0]} vs ${ref.top[0][0]}`,
      );
      if (!(maxDiff <= bound * spread) || !(topGap <= 2 * bound * spread))
        throw new Error(`${name} disagrees with headscope float32 (bound ${bound} of the spread): not timing`);
    }

    for (const row of rows) {
      const T = row.T;
      const inputs = await call(first, 'inputs', { T });
      if (inputsOf[T] && JSON.stringify(inputsOf[T]) !== JSON.stringify(inputs))
        throw new Error(`the texts of ${T} tokens differ between the phases`);
      inputsOf[T] = inputs;
      const rounds = opt.quick ? 1 : T >= 1024 ? 3 : 5;
      const samples = Object.fromEntries(subjects.map(([name]) => [name, []]));
      for (const [name] of subjects) await call(name, 'time', { inputs, runs: 1 }); // warm-up
      // each round in another order, so that what one subject leaves behind (spinning threads, a cold
      // cache) does not always fall on the same next one
      for (let r = 0; r < rounds; r++)
        for (let k = 0; k < subjects.length; k++) {
          const [name] = subjects[(k + r) % subjects.length];
          samples[name].push(...(await call(name, 'time', { inputs, runs: 1 })));
        }
      for (const [name] of subjects) {
        const s = stats(samples[name].map((x) => x.ms));
        row[name] = { ...s, tokens_per_s: T / (s.median_ms / 1000) };
        if (samples[name][0].promptMs !== undefined) row[name].prompt_ms = stats(samples[name].map((x) => x.promptMs));
      }
      log(`${storage}, T=${T}: ` + subjects.map(([name]) => `${name} ${row[name].median_ms.toFixed(0)} ms`).join(', '));
    }
    for (const [name] of subjects) await page.evaluate((a) => window.__bench.end(a), name);
  }
  if (pageErrors.length) throw new Error(`errors on the bench page: ${pageErrors.join('; ')}`);

  const wllamaVersion = JSON.parse(
    readFileSync(path.join(ROOT, 'node_modules/@wllama/wllama/package.json'), 'utf8'),
  ).version;
  const shape = JSON.parse(readFileSync(path.join(opt.model, 'config.json'), 'utf8'));
  const result = {
    chromium: browser.version(),
    wllama: wllamaVersion,
    machine,
    cores: env.cores,
    shape,
    ggufs: Object.fromEntries(Object.entries(ggufs).map(([k, f]) => [k, path.basename(f)])),
    headscope: { simd: loaded['hs-f32-1'].simd, options: { attentionMaps: false, activations: 'views' } },
    wllama_context: WLLAMA,
    agreement,
    rows,
  };
  result.loadavg_after = os.loadavg();
  writeFileSync(opt.out, JSON.stringify(result, null, 1) + '\n');

  const m = (r, k) => r[k].median_ms;
  const ratio = (r, a, b) => (m(r, b) / m(r, a)).toFixed(2) + 'x';
  const cell = (r, k) => `${m(r, k).toFixed(0)} (p95 ${r[k].p95_ms.toFixed(0)}; ${r[k].tokens_per_s.toFixed(0)}/s)`;
  const lines = [
    `Chromium ${result.chromium}, ${env.cores} cores, cross-origin isolated; wllama ${wllamaVersion} (llama.cpp on the CPU, ` +
      'its one build: SIMD128 without relaxed SIMD, Memory64, JSPI, pthreads, run without a thread pool at 1 thread; ' +
      `n_batch = n_ubatch = ${WLLAMA.nBatch}, ` +
      `n_ctx ${WLLAMA.nCtx}, prompt caching off); headscope with attentionMaps: false and activations: 'views'. ` +
      'Each subject in a module Worker of its own on one page, run one at a time, interleaved within its phase (float32, then ' +
      '8 bits: the ratios compare subjects of one phase); a prefill of T tokens in ' +
      'one batch (headscope: prefill(); wllama: a completion of one greedy token, which samples from the last ' +
      "position's logits and decodes nothing more). Median wall ms (p95; tokens/s).",
    '',
    '| T | storage | threads | headscope | wllama | headscope / wllama | wllama prompt_ms (its own timer) |',
    '|---|---|---|---|---|---|---|',
    ...rows.flatMap((r) =>
      ['f32', 'q8'].flatMap((st) =>
        [1, 2].map(
          (n) =>
            `| ${r.T} | ${st === 'f32' ? 'float32 / F32' : 'q8 / Q8_0'} | ${n} | ${cell(r, `hs-${st}-${n}`)} | ` +
            `${cell(r, `wl-${st}-${n}`)} | ${ratio(r, `hs-${st}-${n}`, `wl-${st}-${n}`)} | ` +
            `${r[`wl-${st}-${n}`].prompt_ms.median_ms.toFixed(0)} |`,
        ),
      ),
    ),
    '',
    "Agreement before timing (last position, 32 tokens; log-probabilities of the peer's 40 most likely tokens against " +
      `headscope float32's, as a fraction of its log-probability spread ${spread.toFixed(2)}): ` +
      Object.entries(agreement)
        .map(([k, v]) => `${k} ${v.relative.toExponential(1)}`)
        .join(', ') +
      '.',
  ];
  console.log(lines.join('\n'));
  if (opt.markdown) {
    const md =
      `# Prefill against wllama ${wllamaVersion} (llama.cpp) in Chromium, at equal threads\n\n` +
      `Written by \`node bench/harness/browser-llama-prefill.mjs${opt.quick ? ' --quick' : ''} --tokens ${Ts.join(',')} ...\` on ` +
      new Date().toISOString().slice(0, 16).replace('T', ' ') +
      ` UTC, on a random checkpoint of bench/shapes/make_llama_small.py (${shape.num_hidden_layers} layers, hidden ` +
      `${shape.hidden_size}, ${shape.num_attention_heads} query heads over ${shape.num_key_value_heads}, intermediate ` +
      `${shape.intermediate_size}, vocabulary ${shape.vocab_size}) and its GGUF files from bench/shapes/make_gguf.py ` +
      `(F32 and Q8_0). CPU: ${machineLine(machine)}; load average at the start ` +
      `${machine.loadavg.map((x) => x.toFixed(2)).join(' ')}, at the end ` +
      `${result.loadavg_after.map((x) => x.toFixed(2)).join(' ')} (2 cores: above 2, others' processes ran too).\n\n` +
      lines.join('\n') +
      '\n';
    writeFileSync(opt.markdown, md);
  }
} finally {
  await browser.close();
  await server.close();
}
