// loadModel(source, { weights: 'q8' }): 8-bit weights in the wasm package (the SIMD128 build in node:
// its 16-bit dot product), against the same model in float32, computed here in double; typing in 8
// bits against a full run; bad values. The kernel's own tests: tests/cpp/kernels/test_q8.cpp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadModel } from '../../../dist/headscope.js';
import { testModelUrl, testModelDir, defaultModelShipped } from './helpers.js';

const f32 = await loadModel(testModelUrl);
const q8 = await loadModel(testModelUrl, { weights: 'q8' });
const heldout = defaultModelShipped
  ? readFileSync(`${testModelDir}/heldout.txt`, 'utf8')
  : 'The chef, who trained in Paris, cooked the meal quickly. The chef, who trained in Paris, cooked.';

const logSoftmax = (z) => {
  let m = -Infinity,
    s = 0;
  for (const x of z) m = Math.max(m, x);
  for (const x of z) s += Math.exp(x - m);
  const ls = Math.log(s);
  return Array.from(z, (x) => x - m - ls);
};

test('info says q8, and the blocks take about a quarter of float32', () => {
  assert.equal(q8.info.weights, 'q8');
  assert.equal(f32.info.weights, 'f32');
  // the embedding stays F16 (half), the linear layers a quarter: the ratio lies between
  const ratio = q8.info.weightBytes / f32.info.weightBytes;
  assert.ok(ratio > 0.25 && ratio < 0.5, `q8 / f32 weight bytes ${ratio}`);
});

test('8 bits stay close to float32: the loss, the last next-token distribution, every attention weight', () => {
  // The bounds of tests/cpp/model/test_q8_storage.cpp (measured there: KL 0.001-0.005 nats, attention
  // 0.06-0.12, loss +0.005-0.007 nats), the same arithmetic in wasm: KL 0.03, attention 0.3, loss 0.05
  const a = f32.run(heldout, { allLogits: true }),
    b = q8.run(heldout, { allLogits: true });
  assert.deepEqual(
    b.tokens.map((t) => t.id),
    a.tokens.map((t) => t.id),
  );
  assert.ok(Math.abs(b.loss - a.loss) < 0.05, `loss ${a.loss} -> ${b.loss}`);
  const lp = logSoftmax(a.logitsLast),
    lq = logSoftmax(b.logitsLast);
  let kl = 0;
  for (let v = 0; v < lp.length; v++) kl += Math.exp(lp[v]) * (lp[v] - lq[v]);
  assert.ok(kl >= 0 && kl < 0.03, `KL ${kl}`);
  let worst = 0;
  for (let i = 0; i < a.attentionAll.length; i++)
    worst = Math.max(worst, Math.abs(a.attentionAll[i] - b.attentionAll[i]));
  assert.ok(worst < 0.3, `attention ${worst}`);
  // and it is not float32 itself: 8 bits must change something
  assert.ok(worst > 0, 'the 8-bit model gave float32 attention');
});

test('typing in 8 bits equals a full run, bit for bit', async () => {
  const text = 'The chef, who trained in Paris, cooked';
  const fresh = await loadModel(testModelUrl, { weights: 'q8' });
  for (let n = 10; n <= text.length; n += 7) {
    const typed = q8.run(text.slice(0, n));
    const full = fresh.run(text.slice(0, n), {});
    fresh.run('x'); // drop fresh's cache: its next run is a full one
    assert.deepEqual(typed.logitsLast, full.logitsLast);
    assert.deepEqual(typed.attentionAll, full.attentionAll);
  }
  fresh.dispose();
});

test("weights other than 'f32', 'f16', 'q8' or 'auto' reject with an Error", async () => {
  await assert.rejects(loadModel(testModelUrl, { weights: 'q4' }), /weights must be 'f32', 'f16', 'q8' or 'auto'/);
});
