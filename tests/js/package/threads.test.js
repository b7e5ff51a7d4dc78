// The `threads` load option in Node: checked the same way everywhere (loadModel, createTrainer), and
// Node runs the single-threaded build (this Emscripten's threaded module does not load in Node),
// saying so once, only when more than one thread was asked for. The threaded build itself is tested
// in headless Chromium (tests/e2e/threads.test.mjs) and as a C++ suite on node's worker_threads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel, createTrainer } from '../../../dist/headscope.js';
import { testModelUrl } from './helpers.js';

// console.info's messages while fn runs
async function infoDuring(fn) {
  const seen = [];
  const original = console.info;
  console.info = (...args) => seen.push(args.join(' '));
  try {
    await fn();
  } finally {
    console.info = original;
  }
  return seen;
}

test('bad threads values reject with an Error naming the range', async () => {
  for (const bad of [0, -1, 65, 1.5, NaN, Infinity, '2', null]) {
    await assert.rejects(
      loadModel(testModelUrl, { threads: bad }),
      /threads must be a whole number from 1 to 64, got /,
      `loadModel threads ${String(bad)}`,
    );
    await assert.rejects(
      createTrainer({ threads: bad, steps: 1 }),
      /threads must be a whole number from 1 to 64/,
      `createTrainer threads ${String(bad)}`,
    );
  }
  await assert.rejects(loadModel(testModelUrl, { threads: 0 }), {
    message: 'threads must be a whole number from 1 to 64, got 0',
  });
  await assert.rejects(loadModel(testModelUrl, { threads: '2' }), {
    message: 'threads must be a whole number from 1 to 64, got "2"',
  });
});

test('Node runs one thread, and says why once only when more were asked for', async () => {
  const quiet = await infoDuring(async () => {
    const m = await loadModel(testModelUrl);
    assert.equal(m.threads, 1);
    assert.equal(m.info.threads, 1);
    const one = await loadModel(testModelUrl, { threads: 1 });
    assert.equal(one.threads, 1);
    m.dispose();
    one.dispose();
  });
  assert.deepEqual(quiet, [], 'nothing to say when no threads were asked for');
  const said = await infoDuring(async () => {
    for (const threads of [2, 64]) {
      const m = await loadModel(testModelUrl, { threads });
      assert.equal(m.threads, 1, `threads: ${threads} in Node`);
      m.dispose();
    }
    const t = await createTrainer({ threads: 4, steps: 1 });
    assert.equal(t.threads, 1);
    t.dispose();
  });
  assert.deepEqual(said, ['headscope: single-threaded engine: Node runs the single-threaded build']);
});
