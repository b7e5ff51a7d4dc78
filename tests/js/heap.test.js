// 10,000 runs in a row leave the wasm heap steady: no leaked embind handles or buffers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel, wasmHeapUsedBytes } from '../../dist/headscope.js';
import { testModelUrl } from './helpers.js';

test('10,000 runs keep malloc-ed wasm memory steady', async () => {
  const model = await loadModel(testModelUrl);
  const texts = ['The chef', 'The chef, who trained', 'The chef, who trained in Paris', 'A different text entirely', 'x'];
  const run = (i) => {
    const r = model.run(texts[i % texts.length], { ablate: i % 7 === 0 ? [[0, 1]] : [] });
    r.attention(0, 0);
    r.headContribution(0, 0);
  };
  for (let i = 0; i < 200; i++) run(i); // warm-up: caches and buffers reach their size
  const before = await wasmHeapUsedBytes();
  for (let i = 0; i < 10000; i++) run(i);
  const after = await wasmHeapUsedBytes();
  // A leak of even one 16-byte handle per run would add 160 KB; allow 16 KB of allocator noise.
  assert.ok(after - before <= 16384, `wasm heap grew from ${before} to ${after} bytes over 10,000 runs`);
  model.dispose();
  const afterDispose = await wasmHeapUsedBytes();
  assert.ok(afterDispose < before, `dispose() freed nothing: ${afterDispose} >= ${before}`);
});
