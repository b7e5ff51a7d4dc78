// smallerStorageFor (web/component/runtime/smaller-storage.js): which storage the demo retries a folder in
// when the engine refuses it for its size. The messages are the engine's own (model_load.cpp,
// check_weights_fit), as the wasm build words them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { smallerStorageFor } from '../../../web/component/runtime/smaller-storage.js';

const refusal = (tail) =>
  new Error(`this model needs about 3.1 GB of wasm memory (2.4 GB of F16 weights); the limit is 2.0 GB${tail}`);

test('F16 first where it fits, 8 bits where only that fits, nothing otherwise', () => {
  assert.equal(
    smallerStorageFor(
      refusal(
        "; it would fit with weights in F16: loadModel(source, { weights: 'f16' }), or in 8 bits: loadModel(source, { weights: 'q8' })",
      ),
    ),
    'f16',
  );
  assert.equal(
    smallerStorageFor(refusal("; it would fit with 8-bit weights: loadModel(source, { weights: 'q8' })")),
    'q8',
  );
  assert.equal(smallerStorageFor(refusal('; try a smaller model')), null);
  assert.equal(smallerStorageFor(new Error('model.safetensors: tensor "x" contains NaN or Inf (element 3)')), null);
  assert.equal(smallerStorageFor(undefined), null);
});
