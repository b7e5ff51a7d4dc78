// The memory budget through the JavaScript API (LoadOptions.memoryLimit, HeadscopeModel.memory()):
// the budget by its definition (the limit less the weights, what the engine held before them and the
// reserve), a Llama-family context fitted to it, and refusals with their numbers that leave an open
// model working. The engine's own tests of the same: tests/cpp/io/test_config_safetensors.cpp [memory].
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadModel, wasmHeapUsedBytes } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { nodeWorker } from './node-worker.js';

const MB = 1 << 20;
const folder = (name) => new URL(`../../fixtures/models/${name}/`, import.meta.url);
const read = (name, file) => readFileSync(new URL(file, folder(name)));
// llama-gqa (2 layers, 4 query heads) claiming a million positions: its context is what fits
function longLlama() {
  const config = JSON.parse(read('llama-gqa', 'config.json'));
  config.max_position_embeddings = 1000000;
  return {
    config: JSON.stringify(config),
    weights: new Uint8Array(read('llama-gqa', 'model.safetensors')),
    tokenizer: read('llama-gqa', 'tokenizer.json').toString(),
  };
}
const open = [];
after(() => {
  for (const m of open) m.dispose();
});

test('memory(): the activations budget is the limit less the weights, what was in use and the reserve', async () => {
  const m = await loadModel(longLlama(), { memoryLimit: 160 * MB, threads: 1 });
  open.push(m);
  const u = m.memory();
  assert.equal(u.limitBytes, 160 * MB);
  assert.equal(u.reserveBytes, 64 * MB); // a sixteenth of the limit, at least 64 MB
  assert.ok(u.inUseAtLoadBytes > 0, 'the tokenizer and the module were in use before the weights');
  assert.equal(u.activationBudgetBytes, u.limitBytes - u.weightBytes - u.inUseAtLoadBytes - u.reserveBytes);
  assert.equal(u.contextTokens, m.info.config.nPositions);
  // the maps are kept (2 x 4 x T² floats): they alone bound the context from above
  assert.ok(u.contextTokens <= Math.sqrt(u.activationBudgetBytes / 32));
  assert.ok(u.contextTokens > 100 && u.bytesAtContext <= u.activationBudgetBytes);
  // a text past the context is cut to it, not refused, and stays within the budget
  const r = m.run(' ab'.repeat(u.contextTokens + 40));
  assert.ok(r.T <= u.contextTokens && r.droppedTokens > 0);
  assert.ok(m.memory().activationBytes <= u.activationBudgetBytes);
});

test('a model that leaves no room for a text is refused with the numbers; the open one keeps working', async () => {
  const kept = await loadModel(longLlama(), { threads: 1 });
  open.push(kept);
  const before = kept.run('one two three').logitsLast;
  // a limit of what the engine holds now and 64 MB: the weights fit, the reserve takes the rest
  const tight = (await wasmHeapUsedBytes()) + 64 * MB;
  await assert.rejects(
    loadModel(longLlama(), { memoryLimit: tight }),
    /this model leaves 0 MB for a text's activations \(the memory limit \d+ MB less 0 MB of weights, \d+ MB in use before them and 64 MB kept free\), and 64 tokens need \d+ KB/,
  );
  // weights beyond the limit: refused before any is read, with the sizes
  await assert.rejects(
    loadModel(longLlama(), { memoryLimit: 1024 }),
    /needs about .* of wasm memory .*the limit is 0\.0 GB/,
  );
  assert.deepEqual(kept.run('one two three').logitsLast, before);
  // the same refusal from a worker's engine, and the worker's model is still there to use
  const w = await loadModelInWorker(longLlama(), { worker: nodeWorker(), threads: 1, memoryLimit: 160 * MB });
  open.push(w);
  assert.equal((await w.memory()).limitBytes, 160 * MB);
  await assert.rejects(
    loadModelInWorker(longLlama(), { worker: nodeWorker(), memoryLimit: 1024 }),
    /the limit is 0\.0 GB/,
  );
  assert.deepEqual((await w.run('one two three')).logitsLast, before);
});

test('memoryLimit is checked', async () => {
  for (const bad of [-1, 1.5, '96', NaN])
    await assert.rejects(loadModel(longLlama(), { memoryLimit: bad }), /memoryLimit must be a whole number of bytes/);
});
