// Which heads a model needs, through the JavaScript API: measureHeads() on the page
// thread and in the Worker (dist/worker-thread.js in a worker_threads thread, the real protocol)
// against the native CLI's `headscope heads --json` with the same options; progress, cancel, the
// engine's measurement freed (the wasm heap), runs answered between a worker measurement's chunks;
// and logitAttribution() against the run's own logits.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModel, wasmHeapUsedBytes } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { repo, dist } from './helpers.js';
import { nodeWorker } from './node-worker.js';
import { tensorsOf } from '../../../scripts/common/safetensors.mjs';

const SENTENCE = 'The chef, who trained in Paris, cooked the meal quickly.';
const cli = ['build/native-release/headscope', 'build/native-debug/headscope'].map((p) => repo + p).find(existsSync);
const scratch = mkdtempSync(path.join(tmpdir(), 'headscope-heads-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

// Two models and texts, both search modes: a fixture (2 layers x 4 heads, d_head 12, a context of 32
// that cuts the sentence) exactly and by gate gradients with 2 candidates; and the shipped heads-4
// (2 x 4, width 128) on its heldout.txt, exactly, as its card measures it. The CLI's run of the
// shipped default (32 heads, 85 tokens) takes about a minute on a shared machine: the e2e tests run it in the page.
const FIXTURE = new URL('../../fixtures/models/odd-hs12/', import.meta.url);
const HEADS4 = new URL('models/heads-4/', dist);
const cases = [
  {
    name: 'odd-hs12, exact',
    url: FIXTURE,
    text: SENTENCE,
    options: { randomOrders: 3, seed: 7, exactLimit: 64, candidates: 4 },
  },
  {
    name: 'odd-hs12, gate gradients + 2',
    url: FIXTURE,
    text: SENTENCE,
    options: { randomOrders: 2, seed: 0, exactLimit: 0, candidates: 2 },
  },
];
if (existsSync(new URL('model.safetensors', HEADS4)))
  cases.push({
    name: 'heads-4 on heldout.txt',
    url: HEADS4,
    text: readFileSync(new URL('heldout.txt', HEADS4), 'utf8'),
    options: { randomOrders: 8, seed: 0, exactLimit: 64, candidates: 4 },
  });

function cliHeads(url, text, { randomOrders, seed, exactLimit, candidates }) {
  assert.ok(cli, 'native CLI not built (tests/js/run.sh builds it first)');
  const file = path.join(scratch, 'text.txt');
  writeFileSync(file, text);
  return JSON.parse(
    execFileSync(
      cli,
      [
        'heads',
        '--model',
        fileURLToPath(url),
        '--text-file',
        file,
        '--random-orders',
        String(randomOrders),
        '--seed',
        String(seed),
        '--exact-limit',
        String(exactLimit),
        '--candidates',
        String(candidates),
        '--json',
      ],
      { maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'ignore'] },
    ),
  );
}

// The largest |logit| the model gives anywhere on the text with every head on: the last logits of
// each prefix (position t's logits depend on tokens 0..t only).
function largestLogit(model, text) {
  const tokens = model.tokenize(text);
  let zmax = 0;
  for (let t = 1; t <= tokens.length; t++) {
    const r = model.run(text.slice(0, tokens[t - 1].end));
    for (const z of r.logitsLast) zmax = Math.max(zmax, Math.abs(z));
  }
  return zmax;
}

// Tolerance, native (AVX2 with FMA, -O3) against wasm (SIMD128, no FMA): the same float32 kernels
// summing in other orders. A logit is a chain of about K = nEmbd x nLayer float32 products and sums,
// so the two builds' logits differ by at most about K u |z| (u = 2^-24). A loss term log sum exp(z) -
// z_target moves by at most twice the largest logit change, and so does their mean: losses (the
// loss, knock-outs, both curves) agree to 2 K u zmax, with zmax the largest logit on the text (heads
// switched off move logits by a few units: a factor 2 of room, so 4 K u zmax). The gate gradients are
// float32 sums of products of softmax differences (<= 1) and the same activations: the same bound,
// plus that much relative to the gradient. Here 3e-4 (odd-hs12) and 8e-4 (heads-4) nats; measured
// differences are about 1e-6, and another seed moves the random mean by 0.1.
function tolerance(model, text) {
  const { nEmbd, nLayer } = model.info.config;
  return 4 * nEmbd * nLayer * 2 ** -24 * Math.max(1, largestLogit(model, text));
}

// |actual - expected| <= abs + rel |expected|, element by element
function assertClose(actual, expected, { abs, rel = 0 }, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++)
    assert.ok(
      Math.abs(actual[i] - expected[i]) <= abs + rel * Math.abs(expected[i]),
      `${what}[${i}]: ${actual[i]} vs the CLI's ${expected[i]} (tolerance ${abs} + ${rel} relative)`,
    );
}

// The report against the CLI's document. The greedy order is compared head by head: a different
// head at some step is accepted only when the two choices tie within the tolerance (the loss after
// that step agrees), and the greedy curve is compared up to there; the random orders come from the
// seed on both sides and are compared in full.
function checkAgainstCli(r, doc, bound, where) {
  const tol = { abs: bound };
  const gradientTol = { abs: bound, rel: bound };
  const { nLayer: L, nHead: NH } = r;
  const n = L * NH;
  assert.equal(r.tokens, doc.tokens, `${where}: tokens`);
  assert.equal(r.droppedTokens, doc.dropped_tokens, `${where}: dropped tokens`);
  assert.equal(r.method, doc.method, `${where}: method`);
  assertClose([r.loss], [doc.loss], tol, `${where}: loss`);
  assertClose(r.gateGrad, doc.gate_grad.flat(), gradientTol, `${where}: gate gradient`);
  assertClose(r.ablationDelta, doc.ablation_delta.flat(), tol, `${where}: knock-out`);
  assert.equal(r.order.length, n);
  assert.equal(new Set(r.order.map(([l, h]) => `${l}:${h}`)).size, n, `${where}: every head once`);
  let same = 0;
  while (same < n && r.order[same][0] === doc.order[same][0] && r.order[same][1] === doc.order[same][1]) same++;
  if (same < n)
    assertClose(
      [r.prunedLoss[same + 1]],
      [doc.pruned_loss[same + 1]],
      tol,
      `${where}: step ${same} picks another head, so it must be a tie`,
    );
  assertClose(r.prunedLoss.subarray(0, same + 2), doc.pruned_loss.slice(0, same + 2), tol, `${where}: greedy curve`);
  assertClose(r.randomLossMean, doc.random_loss_mean, tol, `${where}: random mean`);
  assertClose(
    r.randomLossLow,
    doc.random_loss_band.map((b) => b[0]),
    tol,
    `${where}: random lowest`,
  );
  assertClose(
    r.randomLossHigh,
    doc.random_loss_band.map((b) => b[1]),
    tol,
    `${where}: random highest`,
  );
  return same;
}

for (const c of cases) {
  test(`${c.name}: measureHeads on the page thread and in the Worker equals the CLI's headscope heads --json`, async () => {
    const page = await loadModel(c.url);
    const worker = await loadModelInWorker(c.url, { worker: nodeWorker() });
    try {
      const doc = cliHeads(c.url, c.text, c.options);
      const fractions = [];
      const r = await page.measureHeads(c.text, {
        ...c.options,
        onProgress: (p) => {
          fractions.push(p.fraction);
        },
      });
      const tol = tolerance(page, c.text);
      const agreed = checkAgainstCli(r, doc, tol, 'page thread');
      assert.equal(agreed, r.order.length, "the greedy order is the CLI's (no tie on these texts)");
      for (const k of ['randomOrders', 'seed', 'exactLimit', 'candidates']) assert.equal(r[k], c.options[k], k);
      for (const k of ['gateGrad', 'ablationDelta', 'prunedLoss', 'randomLossMean', 'randomLossLow', 'randomLossHigh'])
        assert.ok(r[k] instanceof Float64Array, `${k} is a Float64Array`);
      // progress: after every chunk, never decreasing, ending at 1
      assert.ok(fractions.length >= 2, `${fractions.length} progress reports`);
      for (let i = 1; i < fractions.length; i++)
        assert.ok(fractions[i] >= fractions[i - 1], `progress went back: ${fractions[i - 1]} -> ${fractions[i]}`);
      assert.equal(fractions.at(-1), 1);
      assert.ok(fractions.slice(0, -1).every((f) => f >= 0 && f < 1));
      // the same wasm in the worker: the same numbers, bit for bit, and progress there too
      const workerFractions = [];
      const w = await worker.measureHeads(c.text, {
        ...c.options,
        onProgress: (p) => workerFractions.push(p.fraction),
      });
      assert.deepEqual(w, r);
      assert.ok(workerFractions.length >= 2 && workerFractions.at(-1) === 1);
      for (let i = 1; i < workerFractions.length; i++) assert.ok(workerFractions[i] >= workerFractions[i - 1]);
    } finally {
      page.dispose();
      worker.dispose();
    }
  });
}

test('the page thread: cancel rejects with an AbortError, the model still runs, and every measurement is freed', async () => {
  const model = await loadModel(FIXTURE);
  try {
    const options = { randomOrders: 4, seed: 1, exactLimit: 64, candidates: 4, chunkMs: 0 };
    // the first measurement grows the model's own buffers (logits at every position): a warm-up
    const full = await model.measureHeads(SENTENCE, options);
    const before = model.run(SENTENCE);
    const heap = await wasmHeapUsedBytes();
    const controller = new AbortController();
    let seen = 0;
    await assert.rejects(
      model.measureHeads(SENTENCE, {
        ...options,
        signal: controller.signal,
        onProgress: ({ fraction }) => {
          seen = fraction;
          if (fraction > 0.3) controller.abort();
        },
      }),
      { name: 'AbortError', message: /cancelled/ },
    );
    assert.ok(seen > 0.3 && seen < 1, `stopped at ${seen}`);
    // an aborted signal stops it before anything is allocated; bad input is an Error naming it
    await assert.rejects(model.measureHeads(SENTENCE, { signal: AbortSignal.abort() }), { name: 'AbortError' });
    await assert.rejects(model.measureHeads('x'), /at least 2 tokens/);
    await assert.rejects(model.measureHeads(SENTENCE, { randomOrders: 2.5 }), /randomOrders must be a whole number/);
    await assert.rejects(model.measureHeads(SENTENCE, { randomOrders: 5000 }), /random orders must be within/);
    // the model runs as before, and a new measurement gives the same report
    const after = model.run(SENTENCE);
    assert.deepEqual(after.logitsLast, before.logitsLast);
    assert.deepEqual(await model.measureHeads(SENTENCE, options), full);
    // Each measurement holds a training engine with a copy of the weights (a few hundred KB for this
    // fixture): one not freed would show far above the 16 KB heap.test.js allows for allocator noise.
    const heapAfter = await wasmHeapUsedBytes();
    assert.ok(Math.abs(heapAfter - heap) <= 16384, `the wasm heap went from ${heap} to ${heapAfter} bytes`);
    // a dispose() while measuring stops it at the next chunk (the measurement refers to the model)
    const pending = model.measureHeads(SENTENCE, { ...options, onProgress: () => model.dispose() });
    await assert.rejects(pending, /disposed/);
    assert.ok((await wasmHeapUsedBytes()) < heap, 'dispose() and the stopped measurement freed the model');
    // ... and one in the last onProgress (one chunk does it all): no report read from a freed model
    const other = await loadModel(FIXTURE);
    await assert.rejects(
      other.measureHeads(SENTENCE, {
        randomOrders: 0,
        chunkMs: 1e9,
        onProgress: ({ fraction }) => {
          if (fraction === 1) other.dispose();
        },
      }),
      /disposed/,
    );
  } finally {
    model.dispose();
  }
});

test('the Worker: cancel rejects with an AbortError, runs are answered between chunks, the worker still runs', async () => {
  const worker = await loadModelInWorker(FIXTURE, { worker: nodeWorker() });
  try {
    const options = { randomOrders: 8, seed: 0, exactLimit: 64, candidates: 4, chunkMs: 0 };
    const full = await worker.measureHeads(SENTENCE, options);
    // a run sent during a measurement comes back before the measurement ends
    const settled = [];
    const measuring = worker.measureHeads(SENTENCE, options).then((r) => {
      settled.push('measurement');
      return r;
    });
    const run = worker.run(SENTENCE, { topK: 3 }).then((r) => {
      settled.push('run');
      return r;
    });
    const [r, res] = await Promise.all([measuring, run]);
    assert.deepEqual(settled, ['run', 'measurement']);
    assert.deepEqual(r, full, 'a run between its chunks does not change the measurement');
    assert.equal(res.T, full.tokens);
    // cancel: the promise rejects, and the worker answers the next requests
    const controller = new AbortController();
    let seen = 0;
    await assert.rejects(
      worker.measureHeads(SENTENCE, {
        ...options,
        signal: controller.signal,
        onProgress: ({ fraction }) => {
          seen = fraction;
          if (fraction > 0.2) controller.abort();
        },
      }),
      { name: 'AbortError' },
    );
    assert.ok(seen < 1);
    assert.deepEqual((await worker.run(SENTENCE, { topK: 3 })).logitsLast, res.logitsLast);
    assert.deepEqual(await worker.measureHeads(SENTENCE, options), full);
  } finally {
    worker.dispose();
  }
});

// ---- direct logit attribution -------------------------------------------------------------------

// the tensors `names` of a .safetensors file (a path or a file: URL)
const readTensors = (file, names) => tensorsOf(new Uint8Array(readFileSync(file)), names);

for (const [name, url] of [
  ['odd-hs12', FIXTURE],
  ['heads-4', HEADS4],
]) {
  if (!existsSync(new URL('model.safetensors', url))) continue;
  test(`${name}: logitAttribution's parts sum to the run's logit, page thread and Worker`, async () => {
    const model = await loadModel(url);
    const worker = await loadModelInWorker(url, { worker: nodeWorker() });
    try {
      const { nEmbd: C, nLayer: L, nHead: NH, vocabSize: V } = model.info.config;
      const { 'wte.weight': wte, 'ln_f.weight': gamma } = readTensors(new URL('model.safetensors', url), [
        'wte.weight',
        'ln_f.weight',
      ]);
      const r = model.run(SENTENCE, { ablate: [[0, 1]] });
      const T = r.T;
      const top = r.topNext[0].id;
      for (const token of [top, 7, V - 1]) {
        const a = model.logitAttribution(T - 1, token);
        assert.equal(a.position, T - 1);
        assert.equal(a.token, token);
        assert.equal(a.heads.length, L * NH);
        assert.equal(a.mlp.length, L);
        assert.equal(a.attnBias.length, L);
        // it names the run it split
        assert.equal(a.text, SENTENCE);
        assert.deepEqual(a.ablate, [[0, 1]]);
        // at the last position the engine's logit is run()'s, exactly
        assert.equal(a.logit, r.logitsLast[token]);
        // The parts add up to LayerNorm(x) . (gamma * wte[token]) in float64; the logit is the same C-term
        // dot product after a float32 LayerNorm, so they differ by at most (C + 8) u times the sum of
        // |terms| (tests/cpp/model/test_inside.cpp), twice for the two sides. That sum is at most
        // ||xhat|| ||gamma * w|| <= sqrt(C) ||gamma * w|| (the normalised row has ||xhat||^2 <= C).
        let gw = 0;
        for (let i = 0; i < C; i++) gw += (gamma[i] * wte[token * C + i]) ** 2;
        const bound = 2 * (C + 8) * 2 ** -24 * (Math.sqrt(C) * Math.sqrt(gw) + 1) + 1e-6;
        const sum =
          a.heads.reduce((s, x) => s + x, 0) +
          a.attnBias.reduce((s, x) => s + x, 0) +
          a.mlp.reduce((s, x) => s + x, 0) +
          a.embedding +
          a.lnBias;
        assert.ok(Math.abs(a.total - sum) <= 1e-9 * (1 + Math.abs(sum)), 'total is the sum of the parts');
        assert.ok(
          Math.abs(a.total - a.logit) <= bound,
          `token ${token}: total ${a.total} vs logit ${a.logit} (bound ${bound})`,
        );
        // a switched-off head writes nothing
        assert.equal(a.heads[0 * NH + 1], 0);
        // the worker's engine, the same numbers
        await worker.run(SENTENCE, { ablate: [[0, 1]] });
        assert.deepEqual(await worker.logitAttribution(T - 1, token), a);
      }
      // an earlier position: run() gives only the last logits, so a run of the text up to that token
      // gives its logit (the same heads off; row t depends on tokens 0..t alone); the sum of the parts
      // at T - 2 meets it within the bound above (taken for that token's row)
      if (r.droppedTokens === 0) {
        const rp = model.run(SENTENCE.slice(0, r.tokens[T - 2].end), { ablate: [[0, 1]] });
        assert.equal(rp.T, T - 1);
        model.run(SENTENCE, { ablate: [[0, 1]] });
        let gw = 0;
        for (let i = 0; i < C; i++) gw += (gamma[i] * wte[top * C + i]) ** 2;
        const bound = 2 * (C + 8) * 2 ** -24 * (Math.sqrt(C) * Math.sqrt(gw) + 1) + 1e-6;
        const earlier = model.logitAttribution(T - 2, top);
        assert.equal(earlier.text, SENTENCE, 'the last run, not the shorter one before it');
        assert.ok(
          Math.abs(earlier.total - rp.logitsLast[top]) <= bound,
          `position ${T - 2}: ${earlier.total} vs ${rp.logitsLast[top]}`,
        );
      }
      // after a head measurement (the engine ran other texts) the last run is repeated: the same numbers
      const last = model.logitAttribution(T - 1, top);
      await model.measureHeads(SENTENCE, { randomOrders: 1, exactLimit: 0, candidates: 1 });
      model.inspectHead(SENTENCE.slice(0, 10), 0, 0);
      assert.deepEqual(model.logitAttribution(T - 1, top), last);
      await worker.measureHeads(SENTENCE, { randomOrders: 1, exactLimit: 0, candidates: 1 });
      assert.deepEqual(await worker.logitAttribution(T - 1, top), last);
      // `of`: the split of the text given, whatever ran last (the same numbers), which is then the last run
      const other = model.run('Something else entirely.');
      assert.notEqual(model.logitAttribution(other.T - 1, top).text, SENTENCE);
      assert.deepEqual(model.logitAttribution(T - 1, top, { text: SENTENCE, ablate: [[0, 1]] }), last);
      assert.deepEqual(model.logitAttribution(T - 1, top), last, 'the text given is the last run now');
      assert.equal(model.logitAttribution(0, top, { text: SENTENCE }).ablate.length, 0, 'other heads off: that run');
      assert.throws(() => model.logitAttribution(0, top, { text: 5 }), /text must be a string/);
      await worker.run('Something else entirely.');
      assert.deepEqual(await worker.logitAttribution(T - 1, top, { text: SENTENCE, ablate: [[0, 1]] }), last);
      // the worker's record of its engine's cache followed: a run of the text after it is the same run
      assert.deepEqual((await worker.run(SENTENCE, { ablate: [[0, 1]] })).logitsLast, r.logitsLast);
      // out of range, or not an integer: an Error naming it
      assert.throws(() => model.logitAttribution(T, top), /position/);
      assert.throws(() => model.logitAttribution(0, V), /token/);
      assert.throws(() => model.logitAttribution(0.5, top), /position must be an integer/);
      await assert.rejects(worker.logitAttribution(-1, top), /position/);
    } finally {
      model.dispose();
      worker.dispose();
    }
  });
}

test('logitAttribution before any run is an Error saying so', async () => {
  const model = await loadModel(FIXTURE);
  assert.throws(() => model.logitAttribution(0, 0), /run a text first/);
  model.inspectHead(SENTENCE, 0, 0); // not a run(): still nothing to split up
  assert.throws(() => model.logitAttribution(0, 0), /run a text first/);
  model.dispose();
});
