// Why a head attends and which heads work together, through the JavaScript API: explainScore() and
// circuits() on the page thread and in the Worker (the real protocol in a worker_threads thread)
// against the native CLI's `headscope explain --json` and `headscope circuits --json`; the table's
// cells against the score; bad input refused with its message. The numbers themselves are checked
// against a float64 PyTorch reference in tests/cpp/analysis/test_explain.cpp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { repo, testModelUrl } from './helpers.js';
import { nodeWorker } from './node-worker.js';

const cli = ['build/native-release/headscope', 'build/native-debug/headscope'].map((p) => repo + p).find(existsSync);
const fixture = (name) => new URL(`../../fixtures/models/${name}/`, import.meta.url);

// GPT-2 (odd head size), grouped-query Llama with Qwen3's q/k norm, and the default model on an
// induction text: its induction head L1H2 at the second " Smith"... query, the token after the first
const cases = [
  {
    name: 'odd-hs12 (GPT-2)',
    url: fixture('odd-hs12'),
    text: 'The chef cooked the meal',
    head: [1, 2],
    query: 20,
    key: 9,
    versus: 3,
  },
  {
    name: 'qwen3-qknorm (grouped-query, q/k norm)',
    url: fixture('qwen3-qknorm'),
    text: 'one two three one two',
    head: [1, 3],
    query: 4,
    key: 2,
    versus: 'mean',
  },
  {
    name: 'the default model',
    url: testModelUrl,
    text: 'Mr. Smith left the room. Later, Mr. Smith',
    head: [1, 2],
    query: 9,
    key: 3,
    versus: 'mean',
  },
];

function cliJson(args) {
  assert.ok(cli, 'native CLI not built (tests/js/run.sh builds it first)');
  return JSON.parse(execFileSync(cli, args, { maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'pipe'] }));
}

// Native (AVX2, FMA) against wasm (SIMD128): the same float32 forward summing in other orders. The
// reference test allows 2e-5 + 1e-5 |x| between either and float64 (measured float32 copies land
// within 6.8e-6); two float32 engines differ by at most twice that.
const near = (a, b) => Math.abs(a - b) <= 4e-5 + 2e-5 * Math.abs(b);
function assertNear(actual, expected, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] === null) assert.ok(Number.isNaN(actual[i]), `${what}[${i}]: NaN where the CLI has null`);
    else assert.ok(near(actual[i], expected[i]), `${what}[${i}]: ${actual[i]} vs the CLI's ${expected[i]}`);
  }
}

for (const c of cases) {
  test(`${c.name}: explainScore() on the page thread and in the Worker equals the CLI's headscope explain --json`, async () => {
    const page = await loadModel(c.url, { threads: 1 });
    const worker = await loadModelInWorker(c.url, { worker: nodeWorker(), threads: 1 });
    try {
      const T = page.tokenize(c.text).length;
      const query = Math.min(c.query, T - 1);
      const key = Math.min(c.key, query);
      const versus = c.versus === 'mean' ? 'mean' : Math.min(c.versus, query);
      const args = ['explain', '--model', fileURLToPath(c.url), '--text', c.text, '--head', c.head.join(':')];
      args.push('--query', String(query), '--key', String(key), '--versus', String(versus), '--json');
      const doc = cliJson(args);
      const r = page.explainScore(c.text, ...c.head, query, key, { versus });
      assert.deepEqual(r.components, doc.components);
      assert.deepEqual(r.queryToken, doc.query_token);
      assert.deepEqual(r.keyToken, doc.key_token);
      assert.ok(near(r.score, doc.score), `score ${r.score} vs ${doc.score}`);
      assertNear(r.table, doc.table.flat(), 'table');
      assert.equal(r.versus, doc.contrast.against);
      assertNear(r.contrast, doc.contrast.table.flat(), 'contrast');
      assert.deepEqual(r.value.token, doc.value.token);
      assertNear(r.value.byToken, doc.value.by_token, 'value by token');
      assertNear(r.value.byPart, doc.value.by_part, 'value by part');
      assert.ok(near(r.value.total, doc.value.total));
      // the cells sum to the score (double sums of the same float32 activations; see test_explain.cpp)
      const sum = r.table.reduce((s, x) => s + x, 0);
      const size = r.table.reduce((s, x) => s + Math.abs(x), 0);
      assert.ok(Math.abs(sum - r.score) <= 1e-6 * (1 + size), `cells sum to ${sum}, score ${r.score}`);
      // the same wasm in the worker, bit for bit
      const w = await worker.explainScore(c.text, ...c.head, query, key, { versus });
      assert.deepEqual(w, r);
    } finally {
      page.dispose();
      worker.dispose();
    }
  });
}

test("circuits() on the page thread and in the Worker equals the CLI's headscope circuits --json", async () => {
  for (const url of [fixture('odd-hs12'), fixture('llama-gqa'), testModelUrl]) {
    const page = await loadModel(url, { threads: 1 });
    const worker = await loadModelInWorker(url, { worker: nodeWorker(), threads: 1 });
    try {
      const doc = cliJson(['circuits', '--model', fileURLToPath(url), '--seeds', '4', '--json']);
      const r = page.circuits({ seeds: 4 });
      // weights only, float32 products (kernels) summed in double: 1e-5 between the two builds; the
      // copying score is an eigenvalue sum of such a product: 1e-4
      for (const [k, K] of [
        ['q', 'Q'],
        ['k', 'K'],
        ['v', 'V'],
      ]) {
        const want = doc.composition[K].flat();
        assert.equal(r.composition[k].length, want.length);
        want.forEach((x, i) =>
          x === null
            ? assert.ok(Number.isNaN(r.composition[k][i]))
            : assert.ok(Math.abs(r.composition[k][i] - x) <= 1e-5, `${K}[${i}]: ${r.composition[k][i]} vs ${x}`),
        );
        // the baseline: the same seeded draws on both sides, double sums (libm's last bits may differ)
        assert.ok(Math.abs(r.baseline[k] - doc.baseline[K]) <= 1e-9, `baseline ${K}`);
      }
      doc.copying.flat().forEach((x, i) => assert.ok(Math.abs(r.copying[i] - x) <= 1e-4, `copying[${i}]`));
      assert.equal(r.seeds, 4);
      assert.deepEqual(await worker.circuits({ seeds: 4 }), r);
    } finally {
      page.dispose();
      worker.dispose();
    }
  }
});

test('bad input is refused with its message on both threads, and the model still runs', async () => {
  const url = fixture('odd-hs12');
  const page = await loadModel(url, { threads: 1 });
  const worker = await loadModelInWorker(url, { worker: nodeWorker(), threads: 1 });
  try {
    const text = 'The chef cooked';
    for (const [args, message] of [
      [[text, 1, 2, 2, 5], /key 5 comes after query 2/],
      [[text, 9, 0, 2, 1], /layer 9/],
      [[text, 0, 9, 2, 1], /head 9/],
      [[text, 0, 0, 99, 1], /query 99 is outside the run's tokens/],
      [[text, 0, 0, 2, 1, { versus: 3 }], /versus 3 comes after query 2/],
      [[text, 0, 0, 2, 1, { token: 1e9 }], /token/],
      [[text, 0, 0, -1, 0], /query must be a whole number/],
      [[3, 0, 0, 1, 0], /text must be a string/],
    ]) {
      assert.throws(() => page.explainScore(...args), message);
      await assert.rejects(worker.explainScore(...args), message);
    }
    assert.throws(() => page.circuits({ seeds: 0 }), /seeds must be a whole number >= 1/);
    assert.ok(page.run(text).tokens.length > 1);
    assert.ok((await worker.run(text)).tokens.length > 1);
  } finally {
    page.dispose();
    worker.dispose();
  }
});
