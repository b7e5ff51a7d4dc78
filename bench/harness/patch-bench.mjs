// Activation patching's speed against its targets (a reader's experiment must finish while they wait), on a pair of texts of 20 GPT-2 tokens that differ
// at position 1, the worst case: every patched run recomputes every row after it. Every head exact,
// and the residual map (what `headscope patch` and model.patch() compute without --by-position):
//   native: `headscope patch --threads N` against `headscope run --threads N` on the clean text, both
//     timed from outside; the patching is their difference (both load the model and run the text once);
//   Chromium: model.patch() of the package in a module Worker on a cross-origin-isolated page
//     (bench/harness/browser_page/), at each --browser-threads count: the time to its first progress
//     (the attribution map: both runs and one backward pass) and to the complete report, timed in the
//     Worker; the first call after the load apart (the wasm memory grows there), then --repeats calls.
// Runs are interleaved (native patch, native run, ...; then each thread count in turn), so a load
// spike on the shared machine hits all alike.
// Usage: node bench/harness/patch-bench.mjs --model DIR --cli PATH --pkg DIR --out FILE [--quick]
//          [--repeats N] [--threads 2] [--browser-threads 2,1] [--no-browser]
//   DIR: a folder with GPT-2's tokenizer (bench/shapes/make_gpt2_small.py), or a Llama-family one whose
//     tokenizer makes the texts 20 tokens too (bench/shapes/make_llama_small.py's SmolLM2-135M);
//     --pkg: the package's files
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/common/chromium.mjs';
import { benchArgs, machineInfo, openBenchPage, ROOT, stats, startBenchPageServer, timedCommand } from './lib.mjs';
import { DEMO_CSP, ISOLATION_HEADERS } from '../../web/server/static-server.mjs';

const opt = benchArgs(
  {
    required: ['model', 'cli', 'pkg', 'out'],
    strings: ['repeats', 'browser-threads'],
    defaults: { threads: '2' },
    flags: ['quick', 'no-browser'],
  },
  'node bench/harness/patch-bench.mjs --model DIR --cli PATH --pkg DIR --out FILE [--quick] [--repeats N]',
);
const log = (...a) => console.error('[patching]', ...a);
const repeats = Number(opt.repeats ?? (opt.quick ? 1 : 3));
const threads = Number(opt.threads);
const browserThreads = (opt['browser-threads'] ?? (opt.quick ? '2' : '2,1')).split(',').map(Number);

// 20 tokens each with GPT-2's tokenizer, differing in the second ("Mary" / "Alice")
const CLEAN = 'When Mary and John went to the big store in town, John gave a drink to the girl named';
const CORRUPTED = 'When Alice and John went to the big store in town, John gave a drink to the girl named';
// named: a random checkpoint's two runs may predict the same token most
const ANSWER = ' Mary';
const DISTRACTOR = ' Alice';
const TOKENS = 20;
const FIRST_DIFFERENCE = 1;

const config = JSON.parse(readFileSync(path.join(opt.model, 'config.json'), 'utf8'));
// GPT-2's config names, or the Llama family's
const nLayer = config.n_layer ?? config.num_hidden_layers,
  nHead = config.n_head ?? config.num_attention_heads;
const out = {
  machine: machineInfo(), // the CPU: the ceilings differ by vendor and flags
  model: {
    dir: path.resolve(opt.model),
    n_layer: nLayer,
    n_head: nHead,
    n_embd: config.n_embd ?? config.hidden_size,
    vocab_size: config.vocab_size,
  },
  tokens: TOKENS,
  first_difference: FIRST_DIFFERENCE,
};

// ---- native ----------------------------------------------------------------------------------------
const timed = (args) => timedCommand(opt.cli, args);
const common = ['--model', opt.model, '--threads', String(threads)];
const patchMs = [],
  runMs = [];
let report = null;
for (let i = 0; i < repeats; i++) {
  const p = timed([
    'patch',
    ...common,
    '--clean',
    CLEAN,
    '--corrupted',
    CORRUPTED,
    '--answer',
    ANSWER,
    '--distractor',
    DISTRACTOR,
    '--json',
  ]);
  const r = timed(['run', ...common, '--text', CLEAN]);
  patchMs.push(p.ms);
  runMs.push(r.ms);
  report ??= JSON.parse(p.stdout);
  log(`native, ${threads} threads: patch ${p.ms.toFixed(0)} ms, run ${r.ms.toFixed(0)} ms`);
}
if (report.tokens_clean.length !== TOKENS || report.first_difference !== FIRST_DIFFERENCE)
  throw new Error(
    `the pair is ${report.tokens_clean.length} tokens differing at ${report.first_difference}, ` +
      `not ${TOKENS} at ${FIRST_DIFFERENCE}: not GPT-2's tokenizer?`,
  );
// the patching alone: each patch's time less the run beside it (the load and one run of the text)
const alone = patchMs.map((ms, i) => ms - runMs[i]);
out.exact_runs = nLayer * (nHead + TOKENS - FIRST_DIFFERENCE);
out.native = { threads, patch_command: stats(patchMs), run_command: stats(runMs), patching: stats(alone) };

// ---- Chromium --------------------------------------------------------------------------------------
if (!opt['no-browser']) await inChromium();
writeFileSync(opt.out, JSON.stringify(out, null, 2) + '\n');
log(`wrote ${opt.out}`);

async function inChromium() {
  const server = await startBenchPageServer('browser_page', {
    mounts: [
      ['/pkg/', path.resolve(opt.pkg)],
      ['/model/', path.resolve(opt.model)],
    ],
    csp: DEMO_CSP,
    headers: ISOLATION_HEADERS,
  });
  const browser = await launchChromium();
  let pageErrors = [];
  try {
    const opened = await openBenchPage(browser, server.url, log);
    const { page, call } = opened;
    pageErrors = opened.pageErrors;
    const byThreads = {};
    for (const n of browserThreads) {
      const t0 = Date.now();
      const r = await page.evaluate(([a, b]) => window.__bench.start(a, 'ours', b), [`ours-${n}`, n]);
      if (r.threads !== n) throw new Error(`the package runs ${r.threads} thread(s) where ${n} were asked for`);
      log(`Chromium, ${n} thread(s): loaded in ${Date.now() - t0} ms`);
      byThreads[n] = { first: [], complete: [] };
    }
    const den = Math.abs(report.ld_clean - report.ld_corrupted);
    const patchOnce = async (n) => {
      const args = { clean: CLEAN, corrupted: CORRUPTED, answer: ANSWER, distractor: DISTRACTOR };
      const r = await call(`ours-${n}`, 'patch', args);
      if (r.tokens !== TOKENS || r.exactRuns !== out.exact_runs)
        throw new Error(`model.patch() ran ${r.exactRuns} runs on ${r.tokens} tokens`);
      // the CLI's figures, within float32's rounding in another build
      if (!(Math.abs(r.ldClean - report.ld_clean) < 1e-3 * Math.max(1, den)))
        throw new Error(`model.patch()'s LD_clean ${r.ldClean} is not the CLI's ${report.ld_clean}`);
      return r;
    };
    const shown = (r) => `attribution map ${r.firstMs.toFixed(0)} ms, complete ${r.completeMs.toFixed(0)} ms`;
    // the first patching after the load apart: the wasm memory grows there for the backward pass
    for (const n of browserThreads) {
      const r = await patchOnce(n);
      byThreads[n].cold = { first_progress_ms: r.firstMs, complete_ms: r.completeMs };
      log(`Chromium, ${n} thread(s), the first call: ${shown(r)}`);
    }
    for (let i = 0; i < repeats; i++)
      for (const n of browserThreads) {
        const r = await patchOnce(n);
        byThreads[n].first.push(r.firstMs);
        byThreads[n].complete.push(r.completeMs);
        log(`Chromium, ${n} thread(s): ${shown(r)}`);
      }
    out.chromium = {
      version: browser.version(),
      threads: Object.fromEntries(
        Object.entries(byThreads).map(([n, v]) => [
          n,
          { first_call: v.cold, first_progress: stats(v.first), complete: stats(v.complete) },
        ]),
      ),
    };
  } finally {
    await browser.close();
    await server.close();
  }
  if (pageErrors.length) throw new Error(`page errors: ${pageErrors.join('; ')}`);
}
