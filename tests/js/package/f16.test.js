// loadModel(source, { weights: 'f16' }): half-precision weight storage in the wasm package, against
// the same model in float32; typing in F16 storage; bad values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadModel, wasmMemoryBytes } from '../../../dist/headscope.js';
import { testModelUrl } from './helpers.js';

const SENTENCE = 'The chef, who trained in Paris, cooked the meal quickly.';
// the test model (the shipped default model, whose file is F16, or a fixture)
const f32 = await loadModel(testModelUrl);
const f16 = await loadModel(testModelUrl, { weights: 'f16' });

// a fixture's four files, with the weights file chosen: model.safetensors is F32, model-f16 F16
const fixture = new URL('../../fixtures/models/odd-hs12/', import.meta.url);
function fixtureFiles(weightsFile) {
  const read = (f) => readFileSync(new URL(f, fixture));
  return {
    config: read('config.json'),
    weights: read(weightsFile),
    vocab: read('vocab.json'),
    merges: read('merges.txt'),
  };
}

test('info says the storage, and weightBytes about halves', () => {
  assert.equal(f32.info.weights, 'f32');
  assert.equal(f16.info.weights, 'f16');
  const ratio = f16.info.weightBytes / f32.info.weightBytes;
  // the large matrices (wte, the linear layers) halve; LayerNorms, biases and wpe stay float32:
  // a few percent of the weights in these models
  assert.ok(ratio >= 0.5 && ratio <= 0.55, `F16 / F32 weight bytes ${ratio}`);
});

test('an F32 checkpoint in F16 storage stays within F16 rounding of the F32 results', async () => {
  // Bound (derived in tests/cpp/model/test_f16_storage.cpp): rounding a weight to F16 moves it by a relative
  // u = 2^-11; the path has M = 4L + 2 products (four per block, embedding, LM head); with a gain
  // G = 4 for cancellation and LayerNorm, a logit moves by at most M u G (1 + max |logit|) and an
  // attention probability by M u G.
  const f32Model = await loadModel(fixtureFiles('model.safetensors'));
  const f16Model = await loadModel(fixtureFiles('model.safetensors'), { weights: 'f16' });
  const { nLayer: L } = f32Model.info.config;
  const M = 4 * L + 2,
    u = 2 ** -11,
    G = 4;
  const a = f32Model.run(SENTENCE),
    b = f16Model.run(SENTENCE);
  f32Model.dispose();
  f16Model.dispose();
  assert.deepEqual(
    b.tokens.map((t) => t.id),
    a.tokens.map((t) => t.id),
  );
  let maxLogit = 0,
    worstLogit = 0,
    worstAtt = 0;
  for (let i = 0; i < a.logitsLast.length; i++) {
    maxLogit = Math.max(maxLogit, Math.abs(a.logitsLast[i]));
    worstLogit = Math.max(worstLogit, Math.abs(a.logitsLast[i] - b.logitsLast[i]));
  }
  for (let i = 0; i < a.attentionAll.length; i++)
    worstAtt = Math.max(worstAtt, Math.abs(a.attentionAll[i] - b.attentionAll[i]));
  const logitBound = M * u * G * (1 + maxLogit),
    attBound = M * u * G;
  const what = `logits differ by up to ${worstLogit} (bound ${logitBound}), attention by up to ${worstAtt} (bound ${attBound})`;
  assert.ok(worstLogit <= logitBound, what);
  assert.ok(worstAtt <= attBound, what);
  assert.ok(worstLogit > 0, 'the weights were really rounded');
});

test('an F16 checkpoint gives the same bits in F16 storage as in F32 storage (no second rounding)', async () => {
  const x = await loadModel(fixtureFiles('model-f16.safetensors'));
  const y = await loadModel(fixtureFiles('model-f16.safetensors'), { weights: 'f16' });
  const pairs = [[x, y]];
  if (testModelFileIsF16()) pairs.push([f32, f16]);
  for (const [a, b] of pairs.map(([p, q]) => [p.run(SENTENCE), q.run(SENTENCE)])) {
    assert.deepEqual(b.logitsLast, a.logitsLast);
    assert.deepEqual(b.attentionAll, a.attentionAll);
  }
  x.dispose();
  y.dispose();
});

test('F16 storage: typing at the end equals a full run, bit for bit', async () => {
  const fresh = await loadModel(testModelUrl, { weights: 'f16' });
  try {
    f16.run(SENTENCE.slice(0, 20));
    const typed = f16.run(SENTENCE.slice(0, 21));
    const full = fresh.run(SENTENCE.slice(0, 21));
    assert.deepEqual(typed.logitsLast, full.logitsLast);
    assert.deepEqual(typed.attentionAll, full.attentionAll);
  } finally {
    fresh.dispose();
  }
});

test("weights: 'auto' keeps an F16 or BF16 checkpoint in half precision and an F32 one in float32", async () => {
  // the fixture's three files of the same weights: F32, F16 and BF16; 'auto' reads the header's dtypes
  for (const [file, want] of [
    ['model.safetensors', 'f32'],
    ['model-f16.safetensors', 'f16'],
    ['model-bf16.safetensors', 'f16'],
  ]) {
    const auto = await loadModel(fixtureFiles(file), { weights: 'auto' });
    const chosen = await loadModel(fixtureFiles(file), { weights: want });
    try {
      assert.equal(auto.info.weights, want, file);
      // the same storage chosen by hand: the same bits
      assert.deepEqual(auto.run(SENTENCE).logitsLast, chosen.run(SENTENCE).logitsLast, file);
    } finally {
      auto.dispose();
      chosen.dispose();
    }
  }
});

test('bad weights values reject with an Error naming them', async () => {
  await assert.rejects(loadModel(testModelUrl, { weights: 'f8' }), {
    message: "weights must be 'f32', 'f16', 'q8' or 'auto', got 'f8'",
  });
  await assert.rejects(
    loadModel(testModelUrl, { weights: 16 }),
    /weights must be 'f32', 'f16', 'q8' or 'auto', got 16/,
  );
  assert.ok((await wasmMemoryBytes()) > 0);
});

// whether the test model's file holds F16 tensors (the shipped models do)
function testModelFileIsF16() {
  const bytes = readFileSync(new URL('model.safetensors', testModelUrl));
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  return Object.entries(header).every(([k, v]) => k === '__metadata__' || v.dtype === 'F16');
}
