// Which heads carry the answer, through the JavaScript API: patch() on the page thread and in the
// Worker (dist/worker-thread.js in a worker_threads thread, the real protocol) against the native
// CLI's `headscope patch --json` on the same texts; the attribution map before any exact run;
// progress, cancel, the engine's patching freed (the wasm heap), the page's runs answered between a
// worker patching's chunks; and bad inputs refused with their messages on both sides.
// The scores themselves are checked against a float64 PyTorch reference in tests/cpp/analysis/test_patching.cpp.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModel, wasmHeapUsedBytes } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { repo, testModelUrl } from './helpers.js';
import { nodeWorker } from './node-worker.js';

const cli = ['build/native-release/headscope', 'build/native-debug/headscope'].map((p) => repo + p).find(existsSync);
const scratch = mkdtempSync(path.join(tmpdir(), 'headscope-patch-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const fixture = (name) => new URL(`../../fixtures/models/${name}/`, import.meta.url);
// A GPT-2 fixture with an odd head size by position, a grouped-query Llama fixture with the answer
// named, and the shipped default model (or its stand-in) on an induction pair: a name that repeats.
const cases = [
  {
    name: 'odd-hs12 (GPT-2), by position',
    url: fixture('odd-hs12'),
    options: {
      clean: 'a cat sat on a mat',
      corrupted: 'a dog sat on a mat',
      byPosition: true,
    },
  },
  {
    name: 'llama-gqa (grouped-query), answer and distractor named',
    url: fixture('llama-gqa'),
    options: {
      clean: 'one two three four one two',
      corrupted: 'one two three five one two',
      answer: 'e',
      distractor: 'a',
    },
  },
  {
    name: 'the default model, an induction pair',
    url: testModelUrl,
    options: {
      clean: 'Mr. Smith left the room. Later, Mr.',
      corrupted: 'Mr. Jones left the room. Later, Mr.',
      answer: ' Smith',
      distractor: ' Jones',
    },
  },
];

function cliPatch(url, o) {
  assert.ok(cli, 'native CLI not built (tests/js/run.sh builds it first)');
  const args = ['patch', '--model', fileURLToPath(url), '--clean', o.clean, '--corrupted', o.corrupted, '--json'];
  for (const k of ['answer', 'distractor']) if (o[k] !== undefined) args.push(`--${k}`, String(o[k]));
  if (o.byPosition) args.push('--by-position');
  return JSON.parse(execFileSync(cli, args, { maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'pipe'] }));
}

// Tolerance, native (AVX2 with FMA) against wasm (SIMD128): the same float32 kernels summing in other
// orders. A logit is a chain of about K = nEmbd x nLayer float32 products and sums, so a logit moves by
// about K u |z| (u = 2^-24) and a logit difference by twice that; 4 K u zmax leaves a factor 2 (as in
// heads.test.js), zmax the largest |logit| at the last position of either run (patched runs lie
// between them: a factor 2 more). A score is a difference of two LDs over LD_clean - LD_corrupted, so
// it moves by eps (2 + 2 |score|) / |LD_clean - LD_corrupted|. The attribution is a float32 sum of
// products of activations and gradients, computed in the same orders on either side: the same bound.
function scoreTolerance(model, o, r) {
  const { nEmbd, nLayer } = model.info.config;
  let zmax = 1;
  for (const text of [o.clean, o.corrupted])
    for (const z of model.run(text).logitsLast) zmax = Math.max(zmax, Math.abs(z));
  const eps = 4 * nEmbd * nLayer * 2 ** -24 * 2 * zmax;
  const den = Math.abs(r.ldClean - r.ldCorrupted);
  return { eps, score: (s) => (eps * (2 + 2 * Math.abs(s))) / den };
}

function assertScores(actual, expected, tol, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++)
    assert.ok(
      Math.abs(actual[i] - expected[i]) <= tol.score(expected[i]),
      `${what}[${i}]: ${actual[i]} vs the CLI's ${expected[i]} (tolerance ${tol.score(expected[i])})`,
    );
}

function checkAgainstCli(r, doc, tol, where) {
  const { nLayer: L, nHead: NH, tokens: T } = r;
  assert.deepEqual(r.tokensClean, doc.tokens_clean, `${where}: clean tokens`);
  assert.deepEqual(r.tokensCorrupted, doc.tokens_corrupted, `${where}: corrupted tokens`);
  assert.equal(r.firstDifference, doc.first_difference, `${where}: first difference`);
  assert.deepEqual(r.answer, doc.answer, `${where}: answer`);
  assert.deepEqual(r.distractor, doc.distractor, `${where}: distractor`);
  for (const [k, d] of [
    ['ldClean', doc.ld_clean],
    ['ldCorrupted', doc.ld_corrupted],
  ])
    assert.ok(Math.abs(r[k] - d) <= 2 * tol.eps, `${where}: ${k} ${r[k]} vs the CLI's ${d}`);
  assertScores(r.heads, doc.heads.flat(), tol, `${where}: heads`);
  assertScores(r.headsAttribution, doc.heads_attribution.flat(), tol, `${where}: heads' attribution`);
  assertScores(r.resid, doc.resid.flat(), tol, `${where}: resid`);
  assert.equal(r.heads.length, L * NH);
  assert.equal(r.resid.length, L * T);
  if (doc.heads_by_position) {
    assertScores(r.headsByPosition, doc.heads_by_position.flat(2), tol, `${where}: heads by position`);
    assertScores(
      r.headsByPositionAttribution,
      doc.heads_by_position_attribution.flat(2),
      tol,
      `${where}: by position, attribution`,
    );
  } else {
    assert.equal(r.headsByPosition, null);
    assert.equal(r.headsByPositionAttribution, null);
  }
  assert.ok(r.complete && r.exactRunsDone === r.exactRunsTotal, `${where}: complete`);
}

for (const c of cases) {
  test(`${c.name}: patch() on the page thread and in the Worker equals the CLI's headscope patch --json`, async () => {
    const page = await loadModel(c.url, { threads: 1 });
    const worker = await loadModelInWorker(c.url, { worker: nodeWorker(), threads: 1 });
    try {
      const doc = cliPatch(c.url, c.options);
      const progress = [];
      const r = await page.patch({ ...c.options, chunkMs: 0, onProgress: (p) => progress.push(p) });
      checkAgainstCli(r, doc, scoreTolerance(page, c.options, r), 'page thread');
      // the attribution map is whole in the first progress, before any exact run
      assert.ok(progress.length >= 2, `${progress.length} progress reports`);
      const first = progress[0].report;
      assert.equal(first.exactRunsDone, 0);
      assert.ok(first.heads.every(Number.isNaN), 'no exact score before the exact runs');
      assert.deepEqual(first.headsAttribution, r.headsAttribution);
      assert.equal(first.ldClean, r.ldClean);
      for (let i = 1; i < progress.length; i++) {
        assert.ok(progress[i].fraction >= progress[i - 1].fraction, 'progress never goes back');
        assert.ok(progress[i].report.exactRunsDone > progress[i - 1].report.exactRunsDone, 'each chunk runs');
      }
      assert.ok(progress.every((p) => p.fraction < 1 && !p.report.complete));
      // an exact score, once in, is the final one
      const mid = progress[progress.length >> 1].report;
      for (let i = 0; i < r.heads.length; i++)
        if (!Number.isNaN(mid.heads[i])) assert.equal(mid.heads[i], r.heads[i], `head ${i} changed after it came in`);
      // the same wasm in the worker, with the same threads: the same numbers, bit for bit
      const workerProgress = [];
      const w = await worker.patch({ ...c.options, chunkMs: 0, onProgress: (p) => workerProgress.push(p) });
      assert.deepEqual(w, r);
      assert.equal(workerProgress.length, progress.length);
      // the answer and distractor named by id: the same patching
      if (typeof c.options.answer === 'string') {
        const byId = await page.patch({ ...c.options, answer: r.answer.id, distractor: r.distractor.id });
        assert.deepEqual(byId, r);
      }
      assert.deepEqual(workerProgress[0].report.headsAttribution, r.headsAttribution);
    } finally {
      page.dispose();
      worker.dispose();
    }
  });
}

const GOOD = cases[0].options;
const REFUSALS = [
  [{ clean: 'a cat sat', corrupted: 'a cat sat on' }, /tokens/],
  [{ clean: '', corrupted: 'The chef' }, /clean text is empty/],
  [{ ...GOOD, answer: 'P', distractor: 'P' }, /same token/],
  [{ clean: 'one two three', corrupted: 'one two thrae' }, /same token \(\d+\): both runs predict it most; name them/],
  [{ ...GOOD, answer: ' cat' }, /answer: " cat" is 4 tokens/],
  [{ ...GOOD, answer: 1e9 }, /answer must be one token's text or an id/],
  [{ ...GOOD, byPosition: 'yes' }, /byPosition must be a boolean/],
  [{ clean: 'x '.repeat(200), corrupted: 'y '.repeat(200) }, /exceed the model's context/],
  [{ clean: 3, corrupted: 'a' }, /clean must be a string/],
];

test('bad inputs are refused with their messages, on the page thread and in the Worker, and the model still runs', async () => {
  const page = await loadModel(cases[0].url, { threads: 1 });
  const worker = await loadModelInWorker(cases[0].url, { worker: nodeWorker(), threads: 1 });
  try {
    for (const [options, message] of REFUSALS) {
      await assert.rejects(page.patch(options), message, `page thread: ${JSON.stringify(options).slice(0, 80)}`);
      await assert.rejects(worker.patch(options), message, `worker: ${JSON.stringify(options).slice(0, 80)}`);
    }
    await assert.rejects(page.patch(null), /must be an object/);
    await assert.rejects(worker.patch(null), /must be an object/);
    // the texts' counts and where they differ are named
    await assert.rejects(page.patch(REFUSALS[0][0]), (e) => /\b\d+\b.*\b\d+\b/.test(e.message));
    const r = page.run(GOOD.clean);
    assert.ok(r.tokens.length > 1);
    assert.ok((await worker.run(GOOD.clean)).tokens.length > 1);
  } finally {
    page.dispose();
    worker.dispose();
  }
});

test('cancel rejects with an AbortError on both sides; the page thread frees every patching; the worker answers runs between chunks', async () => {
  const page = await loadModel(cases[0].url, { threads: 1 });
  const worker = await loadModelInWorker(cases[0].url, { worker: nodeWorker(), threads: 1 });
  try {
    const options = { ...GOOD, byPosition: true, chunkMs: 0 };
    await page.patch(options); // the engine's arenas grown once: later patchings reuse them
    // The baseline is taken after one cancelled patching, then three more must leave it exactly: a
    // cancel that leaked would grow it each time. (The first cancel may move a buffer into another
    // free chunk; malloc hands out whole chunks, so the bytes in use can then differ by a few bytes
    // from the full patching's without anything being leaked: 8 here since the engine's weights'
    // struct grew, depending on what earlier tests left on the heap.)
    let heap = null;
    for (let i = 0; i < 4; i++) {
      const controller = new AbortController();
      let calls = 0;
      await assert.rejects(
        page.patch({
          ...options,
          signal: controller.signal,
          onProgress: () => {
            if (++calls === 2) controller.abort();
          },
        }),
        (e) => e.name === 'AbortError',
      );
      assert.equal(calls, 2, 'stopped at the chunk after the abort');
      heap ??= await wasmHeapUsedBytes();
    }
    assert.equal(await wasmHeapUsedBytes(), heap, 'a cancelled patching leaves nothing on the heap');
    // a run between chunks (from onProgress) leaves the patching's numbers as they were
    const full = await page.patch(options);
    const interleaved = await page.patch({ ...options, onProgress: () => void page.run('Another text entirely.') });
    assert.deepEqual(interleaved, full);
    assert.equal(page.run(GOOD.clean).tokens.length, full.tokens);

    // the worker: a run sent during a patching is answered before the patching ends; a cancel stops it
    let ranAt = -1;
    let chunks = 0;
    const running = worker.patch({
      ...options,
      onProgress: () => {
        chunks++;
        if (chunks === 1)
          worker.run('Another text entirely.').then(() => {
            ranAt = chunks;
          });
      },
    });
    const w = await running;
    assert.deepEqual(w, full);
    assert.ok(ranAt >= 1 && ranAt < chunks, `the run came back after chunk ${ranAt} of ${chunks}`);
    const controller = new AbortController();
    await assert.rejects(
      worker.patch({ ...options, signal: controller.signal, onProgress: () => controller.abort() }),
      (e) => e.name === 'AbortError',
    );
    assert.deepEqual(await worker.patch(options), full);
  } finally {
    page.dispose();
    worker.dispose();
  }
});

// run({ patch }): the corrupted text with one head's output from the clean text, as a whole run (what
// the demo's views show for "patch only this head"). The ordinary forward pass, not patch()'s batched
// one: each head's score from its own run equals patch()'s within the native-vs-wasm bound above
// (both sides float32, summing in other orders). A result after a patched run is a plain run's, with
// `reuse` of the patched result too; the Worker gives the page's numbers; a text of another count is refused.
test('run({ patch }) scores every head as patch() does, on the page thread and in the Worker; the runs after it are plain runs', async () => {
  const c = cases[2];
  const page = await loadModel(c.url, { threads: 1 });
  const worker = await loadModelInWorker(c.url, { worker: nodeWorker(), threads: 1 });
  try {
    const r = await page.patch(c.options);
    const tol = scoreTolerance(page, c.options, r);
    const plain = page.run(c.options.corrupted);
    for (let l = 0; l < r.nLayer; l++)
      for (let h = 0; h < r.nHead; h++) {
        const patch = { from: c.options.clean, layer: l, head: h };
        const p = page.run(c.options.corrupted, { patch });
        assert.deepEqual(p.patch, patch);
        assert.equal(p.reusedTokens, 0);
        const ld = p.logitsLast[r.answer.id] - p.logitsLast[r.distractor.id];
        const score = (ld - r.ldCorrupted) / (r.ldClean - r.ldCorrupted);
        const want = r.heads[l * r.nHead + h];
        assert.ok(Math.abs(score - want) <= tol.score(want), `L${l}H${h}: ${score} vs patch()'s ${want}`);
        if (l === 1 && h === 2) {
          const w = await worker.run(c.options.corrupted, { patch });
          assert.deepEqual(Array.from(w.logitsLast), Array.from(p.logitsLast), 'the Worker gives the same run');
          assert.deepEqual(w.patch, patch);
          // a plain run reusing the patched result is a plain run, bit for bit
          const after = page.run(c.options.corrupted, { reuse: p });
          assert.equal(after.patch, null);
          assert.deepEqual(Array.from(after.logitsLast), Array.from(plain.logitsLast));
          assert.deepEqual(Array.from(after.attentionAll), Array.from(plain.attentionAll));
          const wAfter = await worker.run(c.options.corrupted, { reuse: w });
          assert.deepEqual(Array.from(wAfter.logitsLast), Array.from(plain.logitsLast));
        }
      }
    assert.throws(
      () => page.run(c.options.corrupted, { patch: { from: 'Mr. Smith left.', layer: 0, head: 0 } }),
      /a head is patched between texts of as many tokens/,
    );
    assert.throws(
      () => page.run(c.options.corrupted, { patch: { from: c.options.clean, layer: 99, head: 0 } }),
      /layer/,
    );
    assert.throws(() => page.run(c.options.corrupted, { patch: { from: 3, layer: 0, head: 0 } }), /patch must be/);
    await assert.rejects(
      worker.run(c.options.corrupted, { patch: { from: 'x', layer: 0, head: 0 } }),
      /as many tokens/,
    );
  } finally {
    page.dispose();
    worker.dispose();
  }
});
