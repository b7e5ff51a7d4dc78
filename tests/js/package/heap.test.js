// Long use: 100,000 runs in a row leave the wasm heap steady (no leaked embind handles or
// buffers), checked after 10,000 and after 100,000. Runs on the small fixture model so the test
// measures leaks, not model speed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel, wasmHeapUsedBytes } from '../../../dist/headscope.js';

const fixture = new URL('../../fixtures/models/odd-hs12/', import.meta.url);

test('10,000 and 100,000 runs keep malloc-ed wasm memory steady', async () => {
  const model = await loadModel(fixture);
  const texts = [
    'The chef',
    'The chef, who trained',
    'The chef, who trained in Paris',
    'A different text entirely',
    'x',
    'héllo 😀',
  ];
  const run = (i) => {
    const r = model.run(texts[i % texts.length], { ablate: i % 7 === 0 ? [[0, 1]] : [], allLogits: i % 11 === 0 });
    r.attention(0, 0);
    r.headContribution(0, 0);
    if (i % 13 === 0) model.tokenize(texts[i % texts.length]);
    if (i % 17 === 0) assert.throws(() => model.run('')); // errors must not leak either
  };
  for (let i = 0; i < 500; i++) run(i); // warm-up: caches and buffers reach their size
  const before = await wasmHeapUsedBytes();
  for (let i = 0; i < 10000; i++) run(i);
  const after10k = await wasmHeapUsedBytes();
  // A leak of even one 16-byte block per run would add 160 KB; allow 16 KB of allocator noise.
  assert.ok(after10k - before <= 16384, `wasm heap grew from ${before} to ${after10k} bytes over 10,000 runs`);
  for (let i = 0; i < 90000; i++) run(i);
  const after100k = await wasmHeapUsedBytes();
  assert.ok(after100k - before <= 16384, `wasm heap grew from ${before} to ${after100k} bytes over 100,000 runs`);
  model.dispose();
  const afterDispose = await wasmHeapUsedBytes();
  assert.ok(afterDispose < before, `dispose() freed nothing: ${afterDispose} >= ${before}`);
});
