// One head's insides through the JavaScript API: inspectHead() on the page thread and in
// the Worker (dist/worker-thread.js in a worker_threads thread, through the real protocol) against
// the native CLI's `run --inspect L:H --json`; errors; and what an inspect run does to the cache and
// to results on screen that a later run({ reuse }) patches.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { repo, testModelUrl, testModelDir } from './helpers.js';
import { nodeWorker } from './node-worker.js';

const SENTENCE = 'The chef, who trained in Paris, cooked the meal quickly.';
const cli = ['build/native-release/headscope', 'build/native-debug/headscope'].map((p) => repo + p).find(existsSync);

// The models compared with the CLI: the test model (the shipped default when built: d_head 20) and a
// fixture with 2 layers and d_head 12, so that a head past the first layer is checked too.
const FIXTURE = new URL('../../fixtures/models/odd-hs12/', import.meta.url);
const models = [
  { name: 'test model', url: testModelUrl, dir: testModelDir },
  { name: 'odd-hs12', url: FIXTURE, dir: fileURLToPath(FIXTURE) },
];
for (const m of models) {
  m.page = await loadModel(m.url);
  m.worker = await loadModelInWorker(m.url, { worker: nodeWorker() });
}
after(() => {
  for (const m of models) {
    m.page.dispose();
    m.worker.dispose();
  }
});

function cliInside(dir, text, layer, head, ablate = []) {
  assert.ok(cli, 'native CLI not built (tests/js/run.sh builds it first)');
  const off = ablate.length ? ['--ablate', ablate.map(([l, h]) => `${l}:${h}`).join(',')] : [];
  return JSON.parse(
    execFileSync(cli, ['run', '--model', dir, '--text', text, '--inspect', `${layer}:${head}`, ...off, '--json'], {
      maxBuffer: 1 << 28,
    }),
  );
}

// Native (SSE/AVX with FMA, -O3) and wasm SIMD128 run the same kernels with other instruction
// selection and tile widths, so float32 sums differ in order (tests/js/package/api.test.js). Bounds, as
// there: activations and logits-like values (q, k, v, scores, z, out, valueNorm: each a float32 sum
// of nEmbd or headSize products, layer after layer) agree to 1e-4 absolute + 1e-4 relative;
// attention probabilities (in [0, 1], after a softmax that damps score differences) to 1e-5.
const CLOSE = { abs: 1e-4, rel: 1e-4 };
const PROB = { abs: 1e-5, rel: 0 };
function assertClose(actual, expected, { abs, rel }, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const x = expected[i];
    const y = actual[i];
    if (x === null || x === -Infinity) {
      // the CLI writes a masked score as null
      assert.equal(y, -Infinity, `${what}[${i}] is masked`);
      continue;
    }
    const d = Math.abs(x - y);
    worst = Math.max(worst, d);
    assert.ok(d <= abs + rel * Math.abs(x), `${what}[${i}]: ${y} vs the CLI's ${x}`);
  }
  return worst;
}

const FIELDS = [
  ['q', 'q', CLOSE],
  ['k', 'k', CLOSE],
  ['v', 'v', CLOSE],
  ['scores', 'scores', CLOSE],
  ['attention', 'attention', PROB],
  ['z', 'z', CLOSE],
  ['out', 'out', CLOSE],
  ['valueNorm', 'value_norm', CLOSE],
];

function checkAgainstCli(inside, doc, layer, head, where) {
  const c = doc.inside;
  assert.equal(inside.layer, layer);
  assert.equal(inside.head, head);
  assert.deepEqual(
    inside.tokens.map((t) => t.id),
    doc.ids,
    `${where}: tokens`,
  );
  assert.equal(inside.T, doc.ids.length);
  for (const [key, cliKey, tol] of FIELDS) {
    assert.ok(inside[key] instanceof Float32Array, `${where}: ${key} is a Float32Array`);
    assertClose(inside[key], c[cliKey].flat(), tol, `${where} L${layer}H${head} ${key}`);
  }
}

for (const m of models) {
  test(`${m.name}: inspectHead on the page thread and in the Worker equals the CLI's --inspect`, async () => {
    const { nLayer, nHead, headSize, nEmbd } = m.page.info.config;
    // the first and the last head, and one in between: every layer's first head too
    const heads = [
      [0, 0],
      [nLayer - 1, nHead - 1],
      [Math.floor(nLayer / 2), Math.floor(nHead / 2)],
    ];
    for (const [layer, head] of heads) {
      const doc = cliInside(m.dir, SENTENCE, layer, head);
      const page = m.page.inspectHead(SENTENCE, layer, head);
      const worker = await m.worker.inspectHead(SENTENCE, layer, head);
      assert.equal(page.headSize, headSize);
      assert.equal(page.norm, 'layer norm'); // GPT-2: the explanation's words
      assert.equal(page.rotary, false);
      assert.equal(page.nEmbd, nEmbd);
      checkAgainstCli(page, doc, layer, head, 'page thread');
      checkAgainstCli(worker, doc, layer, head, 'worker');
      // the same wasm on both threads: identical numbers
      for (const [key] of FIELDS) assert.deepEqual(worker[key], page[key], `worker vs page: ${key}`);
      assert.deepEqual(worker.tokens, page.tokens);
      // spans index the text, as run()'s do (a fixture's short context keeps the text's end only)
      assert.equal(
        page.tokens.map((t) => SENTENCE.slice(t.start, t.end)).join(''),
        SENTENCE.slice(page.tokens[0].start),
      );
      assert.deepEqual(page.tokens, m.page.run(SENTENCE).tokens);
    }
  });

  test(`${m.name}: with heads switched off, inspectHead equals the CLI's --inspect --ablate and run({ ablate })'s map`, async () => {
    const { nLayer, nHead } = m.page.info.config;
    const layer = nLayer - 1;
    const head = nHead - 1;
    // every head of the layers below off (they change this head's input), and the inspected head
    // itself (it then writes nothing: out is 0, the rest as before)
    const below = [];
    for (let l = 0; l < layer; l++) for (let h = 0; h < nHead; h++) below.push([l, h]);
    const on = m.page.inspectHead(SENTENCE, layer, head);
    for (const ablate of [below, [...below, [layer, head]]]) {
      const doc = cliInside(m.dir, SENTENCE, layer, head, ablate);
      const page = m.page.inspectHead(SENTENCE, layer, head, { ablate });
      const worker = await m.worker.inspectHead(SENTENCE, layer, head, { ablate });
      const where = `${ablate.length} heads off`;
      checkAgainstCli(page, doc, layer, head, `page thread, ${where}`);
      checkAgainstCli(worker, doc, layer, head, `worker, ${where}`);
      for (const [key] of FIELDS) assert.deepEqual(worker[key], page[key], `worker vs page, ${where}: ${key}`);
      assert.deepEqual(page.ablate, ablate);
      // the same forward pass as the views': run()'s map with those heads off, bit for bit
      assert.deepEqual(page.attention, m.page.run(SENTENCE, { ablate }).attention(layer, head), where);
      const selfOff = ablate.some(([l, h]) => l === layer && h === head);
      if (selfOff)
        assert.ok(
          page.out.every((x) => x === 0),
          `${where}: a switched-off head writes nothing`,
        );
      // the set matters where it should: below a one-layer model nothing is off, and q only changes with earlier heads
      if (below.length) assert.notDeepEqual(page.q, on.q, `${where}: heads off below change the query`);
      else assert.deepEqual(page.q, on.q, `${where}: nothing below, the same query`);
    }
    await assert.rejects(m.worker.inspectHead(SENTENCE, layer, head, { ablate: [[nLayer, 0]] }), /layer/);
    assert.throws(() => m.page.inspectHead(SENTENCE, layer, head, { ablate: [[0]] }), /pairs/);
  });

  test(`${m.name}: the insides agree with run() and with themselves`, () => {
    const { nLayer, nHead } = m.page.info.config;
    const layer = nLayer - 1;
    const head = nHead - 1;
    const r = m.page.run(SENTENCE);
    const ins = m.page.inspectHead(SENTENCE, layer, head);
    const { T, headSize: HS, nEmbd: C } = ins;
    // the same forward pass: the map is run()'s, bit for bit, and the write's norm is the combine view's
    assert.deepEqual(ins.attention, r.attention(layer, head));
    const norms = r.headContribution(layer, head);
    for (let t = 0; t < T; t++) {
      let s = 0;
      for (let c = 0; c < C; c++) s += ins.out[t * C + c] ** 2;
      // a float64 norm of float32 entries vs the engine's float32 one: 1e-5 relative covers the rounding of C squares
      assert.ok(
        Math.abs(Math.sqrt(s) - norms[t]) <= 1e-5 * norms[t] + 1e-6,
        `||out[${t}]|| = ${Math.sqrt(s)} vs ${norms[t]}`,
      );
    }
    // what each field means, recomputed in float64 from the others: scores = q.k / sqrt(HS), the
    // softmax of each row, z = sum_j a_ij v_j. Float32 inputs and float32 engine sums of HS or T
    // terms: 1e-4 absolute + 1e-4 relative (the engine's reduction order differs from this loop's).
    for (let i = 0; i < T; i++) {
      let max = -Infinity;
      for (let j = 0; j <= i; j++) {
        let dot = 0;
        for (let d = 0; d < HS; d++) dot += ins.q[i * HS + d] * ins.k[j * HS + d];
        const s = dot / Math.sqrt(HS);
        assert.ok(Math.abs(s - ins.scores[i * T + j]) <= 1e-4 + 1e-4 * Math.abs(s), `score ${i},${j}`);
        max = Math.max(max, ins.scores[i * T + j]);
      }
      for (let j = i + 1; j < T; j++) assert.equal(ins.scores[i * T + j], -Infinity, `score ${i},${j} is masked`);
      let sum = 0;
      for (let j = 0; j <= i; j++) sum += Math.exp(ins.scores[i * T + j] - max);
      for (let j = 0; j <= i; j++) {
        const p = Math.exp(ins.scores[i * T + j] - max) / sum;
        assert.ok(Math.abs(p - ins.attention[i * T + j]) <= 1e-5, `softmax ${i},${j}`); // probabilities: 1e-5, as against the CLI
      }
      for (let d = 0; d < HS; d++) {
        let z = 0;
        for (let j = 0; j <= i; j++) z += ins.attention[i * T + j] * ins.v[j * HS + d];
        assert.ok(Math.abs(z - ins.z[i * HS + d]) <= 1e-4 + 1e-4 * Math.abs(z), `z ${i},${d}`);
      }
    }
  });
}

test('layers, heads and texts out of range are Errors naming the range, on both threads', async () => {
  const { page, worker } = models[0];
  const { nLayer, nHead } = page.info.config;
  const cases = [
    [[SENTENCE, nLayer, 0], new RegExp(`^layer ${nLayer} is outside \\[0, ${nLayer}\\)$`)],
    [[SENTENCE, -1, 0], new RegExp(`^layer -1 is outside \\[0, ${nLayer}\\)$`)],
    [[SENTENCE, 0, nHead], new RegExp(`^head ${nHead} is outside \\[0, ${nHead}\\)$`)],
    [[SENTENCE, 0, 1.5], /^head must be an integer, got 1\.5$/],
    [[SENTENCE, '0', 0], /^layer must be an integer, got string$/],
    [['', 0, 0], /text is empty/],
    [[42, 0, 0], /text must be a string/],
  ];
  for (const [args, message] of cases) {
    assert.throws(() => page.inspectHead(...args), { name: 'Error', message }, `page: ${JSON.stringify(args)}`);
    await assert.rejects(worker.inspectHead(...args), { name: 'Error', message }, `worker: ${JSON.stringify(args)}`);
  }
  // whatever failed, the model keeps working
  assert.equal(page.inspectHead(SENTENCE, 0, 0).layer, 0);
  assert.equal((await worker.inspectHead(SENTENCE, 0, 0)).head, 0);
  const gone = await loadModel(testModelUrl);
  gone.dispose();
  assert.throws(() => gone.inspectHead(SENTENCE, 0, 0), /disposed/);
});

// An inspect run takes the engine's cache, as any run does. A result on screen is updated by a
// later run({ reuse }) from rows the engine recomputes for the new text: rows before the first
// changed token are the result's own, which do not depend on what the engine ran in between.
test('an inspect run between two typed runs: the result on screen is still patched right, on both threads', async () => {
  const fresh = await loadModel(models[0].url);
  for (const m of [models[0].page, models[0].worker]) {
    const { nLayer: L, nHead: H } = m.info.config;
    const heads = (r) => Array.from({ length: L * H }, (_, i) => Array.from(r.attention(Math.floor(i / H), i % H)));
    let shown = await m.run('The chef, who trained', { reuse: null });
    shown = await m.run('The chef, who trained in', { reuse: shown });
    // another text, then the text on screen: the cache holds what was inspected last
    await m.inspectHead('A completely different sentence about cats.', 1, 0);
    shown = await m.run('The chef, who trained in Paris', { reuse: shown });
    assert.ok(shown.rowsFrom > 0, 'only the new rows came from the engine');
    assert.deepEqual(heads(shown), heads(fresh.run('The chef, who trained in Paris')));
    assert.deepEqual(shown.logitsLast, fresh.run('The chef, who trained in Paris').logitsLast);
    // inspecting the text on screen leaves it in the cache: the next keystroke computes little
    await m.inspectHead('The chef, who trained in Paris', 0, 1);
    shown = await m.run('The chef, who trained in Paris,', { reuse: shown });
    assert.ok(shown.reusedTokens > 0, `the keystroke after an inspect of its text reused ${shown.reusedTokens} tokens`);
    assert.deepEqual(heads(shown), heads(fresh.run('The chef, who trained in Paris,')));
  }
  // the worker's own record of its cache follows the inspect run (cacheState reads it)
  const w = models[0].worker;
  await w.run(SENTENCE, { reuse: await w.run(SENTENCE) });
  await w.inspectHead('A completely different sentence about cats.', 0, 0);
  const state = await w.cacheState();
  assert.equal(state.cachedTokens, (await w.tokenize('A completely different sentence about cats.')).length);
  assert.equal(state.onScreenCached, 0, 'the text on screen is not in the cache any more');
  fresh.dispose();
});

// Every head's value sizes with a run (run({ valueNorms: true })): the engine computes them from the
// run's own values by the kernel inspectHead uses, so within one build they are the same floats as
// inspectHead's valueNorm, bit for bit (inspectHead itself is checked against the CLI above).
test("run({ valueNorms }) gives every head's value sizes: inspectHead's, kept while typing, on both threads", async () => {
  const fresh = await loadModel(models[1].url);
  for (const [where, m] of [
    ['page', models[1].page],
    ['worker', models[1].worker],
  ]) {
    const { nLayer: L, nHead: H } = m.info.config;
    const r = await m.run(SENTENCE, { valueNorms: true });
    assert.ok(r.valueNorms instanceof Float32Array, `${where}: valueNorms is a Float32Array`);
    assert.equal(r.valueNorms.length, L * H * r.T);
    for (let l = 0; l < L; l++)
      for (let h = 0; h < H; h++) {
        const inside = await m.inspectHead(SENTENCE, l, h);
        assert.deepEqual(r.headValueNorms(l, h), inside.valueNorm, `${where}: L${l}H${h}`);
      }
    // typing at the end with reuse: the kept rows and the new rows equal a fresh run's
    let shown = await m.run('The chef, who trained', { valueNorms: true });
    shown = await m.run('The chef, who trained in', { valueNorms: true, reuse: shown }); // blocks with room to grow
    shown = await m.run('The chef, who trained in Paris,', { valueNorms: true, reuse: shown });
    assert.ok(shown.rowsFrom > 0 && shown.reusedTokens > 0, `${where}: an incremental run`);
    assert.deepEqual(
      shown.valueNorms,
      fresh.run('The chef, who trained in Paris,', { valueNorms: true }).valueNorms,
      `${where}: typed`,
    );
    // a head of layer 0 switched off: layer 0's sizes stay, a later layer's come from the changed stream
    const off = await m.run(SENTENCE, { valueNorms: true, ablate: [[0, 0]] });
    assert.deepEqual(off.valueNorms.subarray(0, H * off.T), r.valueNorms.subarray(0, H * r.T), `${where}: layer 0`);
    assert.notDeepEqual(off.headValueNorms(L - 1, 0), r.headValueNorms(L - 1, 0), `${where}: the last layer's moved`);
    // without the option: none, and the accessor says how to get them
    const plain = await m.run(SENTENCE);
    assert.equal(plain.valueNorms, undefined);
    assert.throws(() => plain.headValueNorms(0, 0), /run with \{ valueNorms: true \}/);
    assert.throws(() => r.headValueNorms(L, 0), new RegExp(`layer ${L} is outside \\[0, ${L}\\)`));
  }
  fresh.dispose();
});
