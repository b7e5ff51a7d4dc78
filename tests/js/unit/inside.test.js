// "Inside this head" in Node: its numbers and sentences (web/component/model/inside.js) and its scene
// (web/component/views/inside-scene.js), on a synthetic head whose q, k, v, scores, weights and write
// are known. Each check compares the scene against the numbers it was built from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { themeFrom, heat, signedColour } from '../../../web/component/runtime/theme.js';
import { textWidth } from '../../../web/component/views/scene.js';
import { insideScene } from '../../../web/component/views/inside-scene.js';
import {
  insideSentence,
  shownKeys,
  dotProducts,
  writeNorm,
  strongestInsideKey,
  clampStep,
  MAX_KEY_ROWS,
} from '../../../web/component/model/inside.js';

const theme = themeFrom(() => '');

function syntheticInside({ T = 6, HS = 4, C = 8, layer = 1, head = 2, seed = 7 } = {}) {
  let a = seed;
  const rnd = () => {
    a = (a * 1103515245 + 12345) % 2147483648;
    return (a / 2147483648) * 2 - 1;
  };
  const fill = (n) => Float32Array.from({ length: n }, rnd);
  const q = fill(T * HS),
    k = fill(T * HS),
    v = fill(T * HS),
    W = fill(HS * C);
  const scores = new Float32Array(T * T).fill(-Infinity);
  const attention = new Float32Array(T * T);
  const z = new Float32Array(T * HS),
    out = new Float32Array(T * C),
    valueNorm = new Float32Array(T);
  for (let i = 0; i < T; i++) {
    for (let j = 0; j <= i; j++) {
      let d = 0;
      for (let x = 0; x < HS; x++) d += q[i * HS + x] * k[j * HS + x];
      scores[i * T + j] = d / Math.sqrt(HS);
    }
    const max = Math.max(...scores.subarray(i * T, i * T + i + 1));
    let sum = 0;
    for (let j = 0; j <= i; j++) sum += Math.exp(scores[i * T + j] - max);
    for (let j = 0; j <= i; j++) attention[i * T + j] = Math.exp(scores[i * T + j] - max) / sum;
    for (let x = 0; x < HS; x++) for (let j = 0; j <= i; j++) z[i * HS + x] += attention[i * T + j] * v[j * HS + x];
    for (let c = 0; c < C; c++) for (let x = 0; x < HS; x++) out[i * C + c] += z[i * HS + x] * W[x * C + c];
    let n = 0;
    for (let c = 0; c < C; c++) {
      let m = 0;
      for (let x = 0; x < HS; x++) m += v[i * HS + x] * W[x * C + c];
      n += m * m;
    }
    valueNorm[i] = Math.sqrt(n);
  }
  const words = ['The', ' chef', ',', ' who', ' cooked', ' it', '.', ' Then', ' more'];
  const tokens = Array.from({ length: T }, (_, i) => ({ text: words[i % words.length], id: i, start: 0, end: 0 }));
  return { layer, head, text: '', tokens, T, headSize: HS, nEmbd: C, q, k, v, scores, attention, z, out, valueNorm };
}

const insideItems = (inside, state, step, options = {}) => insideScene(inside, state, theme, { step, ...options });

test("inside scene, steps 1-2: the query's d_head cells in their signed colours; a key row per visible token, later ones masked", () => {
  const ins = syntheticInside({ T: 6, HS: 4 });
  const i = 3;
  const one = insideItems(ins, { token: i }, 1);
  const qCells = one.scene.items.filter((it) => it.data?.tip?.startsWith('q['));
  assert.equal(qCells.length, 4);
  const qMax = Math.max(...Array.from(ins.q.subarray(i * 4, i * 4 + 4), Math.abs));
  qCells.forEach((c, d) => {
    assert.equal(c.fill, signedColour(theme, ins.q[i * 4 + d], qMax), `colour of q[${d}]`);
    assert.match(
      c.data.tip,
      new RegExp(`= ${ins.q[i * 4 + d] < 0 ? '−' : ''}${Math.abs(ins.q[i * 4 + d]).toFixed(4)}$`),
      'the tooltip holds the value',
    );
  });
  // the signed scale: the largest size in full colour, blue above 0 and orange below, faint at 0
  assert.notEqual(signedColour(theme, 1, 1), signedColour(theme, -1, 1));
  assert.equal(signedColour(theme, 0, 1), signedColour(theme, -0, 1));
  const two = insideItems(ins, { token: i }, 2);
  assert.deepEqual(two.layout.keys, [0, 1, 2, 3], 'every token up to the query');
  assert.equal(two.scene.items.filter((it) => it.data?.tip?.startsWith('k[')).length, 4 * 4);
  assert.equal(two.scene.items.filter((it) => it.text === 'masked: a later token').length, 2, 'the two later tokens');
  assert.match(insideSentence(ins, i, 2), /the 2 later tokens are masked/);
  // GPT-2's words by default; a Llama-family head's (inspectHead() says norm and rotary) name its norm and the rotation
  assert.match(insideSentence(ins, i, 1), /after layer norm, .*what it looks for\.$/);
  const llama = { ...ins, norm: 'RMSNorm', rotary: true };
  assert.match(insideSentence(llama, i, 1), /after RMSNorm, .*rotary positions/);
  assert.match(insideSentence(llama, i, 2), /through W_K, turned by its own position/);
});

test("inside scene, step 3: the products of the picked key sum to q.k, and every score is the engine's", () => {
  const ins = syntheticInside({ T: 6, HS: 4 });
  const i = 5;
  for (const key of [0, 2, 5]) {
    const { scene, layout } = insideItems(ins, { token: i }, 3, { key });
    assert.equal(layout.key, key);
    const products = scene.items.filter((it) => it.data?.tip?.startsWith('q[') && it.data.tip.includes('×'));
    assert.equal(products.length, 4, 'd_head products');
    const { dot } = dotProducts(ins, i, key);
    // float64 sum of float32 products against the float32 score times sqrt(HS): 1e-6 of rounding
    assert.ok(Math.abs(dot / 2 - ins.scores[i * 6 + key]) < 1e-6);
    const sum = scene.items.find((it) => it.text?.startsWith('sum q · k'));
    assert.equal(
      sum.text,
      `sum q · k = ${dot < 0 ? '−' : ''}${Math.abs(dot).toFixed(2)}, ÷ √4 = ${ins.scores[i * 6 + key] < 0 ? '−' : ''}${Math.abs(ins.scores[i * 6 + key]).toFixed(3)}`,
    );
    const scores = scene.items.filter((it) => it.data?.score !== undefined);
    assert.deepEqual(
      scores.map((it) => it.data.key),
      [0, 1, 2, 3, 4, 5],
    );
    for (const it of scores)
      assert.equal(it.data.score, ins.scores[i * 6 + it.data.key], "the number is the engine's, unrounded");
  }
  // default: the key with the most weight
  const row = Array.from(ins.attention.subarray(i * 6, i * 6 + 6));
  assert.equal(insideItems(ins, { token: i }, 3).layout.key, row.indexOf(Math.max(...row)));
  assert.equal(strongestInsideKey(ins, i), row.indexOf(Math.max(...row)));
});

test("inside scene, step 4: the softmax weights are the attention row (the heatmap's), masked tokens left out", () => {
  const ins = syntheticInside({ T: 7, HS: 3 });
  const i = 4;
  const { scene } = insideItems(ins, { token: i }, 4);
  const weights = scene.items.filter((it) => it.data?.weight !== undefined);
  assert.deepEqual(
    weights.map((it) => it.data.key),
    [0, 1, 2, 3, 4],
  );
  for (const it of weights) {
    assert.equal(it.data.weight, ins.attention[i * 7 + it.data.key]);
    assert.equal(it.text, ins.attention[i * 7 + it.data.key].toFixed(4));
  }
  // the strip of row i in the heatmap's colours
  const strip = scene.items.filter((it) => it.type === 'rect' && it.data?.tip && !it.data.tip.startsWith('weight'));
  assert.deepEqual(
    strip.map((it) => it.fill),
    Array.from({ length: i + 1 }, (_, j) => heat(theme, ins.attention[i * 7 + j])),
  );
  assert.match(insideSentence(ins, i, 4), new RegExp(`row ${i} of the heatmap\\.$`));
});

test('inside scene, steps 5-6: weight × value rows add up to z; the write has n_embd cells and its size', () => {
  const ins = syntheticInside({ T: 5, HS: 4, C: 12 });
  const i = 4;
  const five = insideItems(ins, { token: i }, 5).scene;
  const zCells = five.items.filter((it) => it.data?.tip?.startsWith('z['));
  assert.equal(zCells.length, 4);
  zCells.forEach((c, d) =>
    assert.ok(c.data.tip.endsWith(`${ins.z[i * 4 + d] < 0 ? '−' : ''}${Math.abs(ins.z[i * 4 + d]).toFixed(4)}`)),
  );
  const sizes = five.items.filter((it) => it.data?.valueNorm !== undefined);
  assert.deepEqual(
    sizes.map((it) => it.data.valueNorm),
    Array.from(ins.valueNorm),
  );
  const six = insideItems(ins, { token: i }, 6).scene;
  assert.equal(six.items.filter((it) => it.data?.tip?.startsWith('write[')).length, 12);
  const norm = Math.hypot(...ins.out.subarray(i * 12, i * 12 + 12));
  assert.ok(Math.abs(writeNorm(ins, i) - norm) < 1e-9);
  assert.ok(six.items.some((it) => it.text?.includes(`= ${norm.toFixed(2)}`)));
});

test('inside scene: a long text draws the keys with the most weight (and the picked one); every step has one sentence', () => {
  const ins = syntheticInside({ T: 40, HS: 6 });
  const i = 39;
  const { keys, hidden } = shownKeys(ins, i, 3);
  assert.equal(keys.length, MAX_KEY_ROWS);
  assert.equal(hidden, 40 - MAX_KEY_ROWS);
  assert.ok(keys.includes(3), 'the picked key is drawn');
  const row = Array.from(ins.attention.subarray(i * 40, i * 40 + 40));
  const top = [...row.keys()].sort((a, b) => row[b] - row[a]).slice(0, MAX_KEY_ROWS - 1);
  for (const j of top) assert.ok(keys.includes(j), `key ${j} (weight ${row[j]}) is drawn`);
  assert.deepEqual(
    keys,
    [...keys].sort((a, b) => a - b),
    'in text order',
  );
  // a picked key among the strongest (or none picked): the next strongest fills the last row
  for (const picked of [top[0], null]) {
    const rows = shownKeys(ins, i, picked).keys;
    assert.equal(rows.length, MAX_KEY_ROWS, `picked ${picked}`);
    assert.deepEqual(
      rows,
      [...rows].sort((a, b) => a - b),
    );
  }
  for (let step = 1; step <= 6; step++) {
    const s = insideSentence(ins, i, step);
    assert.match(s, /\.$/, `step ${step} ends with a full stop`);
    assert.doesNotMatch(s.slice(0, -1), /[.!?]\s+[A-Z]/, `step ${step} is one sentence: ${s}`);
    // a scene fits the room it is given, a phone's 320 px at d_head 64 too, and draws nothing
    // outside itself (texts measured with textWidth's estimate, as the scenes lay them out)
    const big = syntheticInside({ T: 8, HS: 64, C: 96 });
    for (const width of [320, 640]) {
      const { scene, layout } = insideScene(big, { token: 7 }, theme, { step, width, caption: true });
      // as wide as its content within the room; where even 3 px cells leave no room for the
      // columns the picture is a little wider and the page shrinks it to the panel (by at most a
      // sixth here: still legible)
      assert.ok(
        scene.width >= 320 && scene.width <= (width >= 640 ? width : 1.2 * width),
        `step ${step} at ${width} px: ${scene.width} px wide`,
      );
      assert.ok(layout.x0 + 64 * layout.cellW <= scene.width, `step ${step}: 64 cells of ${layout.cellW} px fit`);
      for (const it of scene.items) {
        const [left, right] =
          it.type === 'rect'
            ? [it.x, it.x + it.w]
            : it.type === 'line'
              ? [Math.min(it.x1, it.x2), Math.max(it.x1, it.x2)]
              : it.anchor === 'end'
                ? [it.x - textWidth(it.text, it.size), it.x]
                : it.anchor === 'middle'
                  ? [it.x - textWidth(it.text, it.size) / 2, it.x + textWidth(it.text, it.size) / 2]
                  : [it.x, it.x + textWidth(it.text, it.size)];
        assert.ok(
          left >= 0 && right <= scene.width + 0.5,
          `step ${step} at ${width} px: ${it.type} ${it.text ?? ''} spans ${left.toFixed(1)}..${right.toFixed(1)}`,
        );
      }
    }
  }
  assert.equal(clampStep(0), 1);
  assert.equal(clampStep(9), 6);
  assert.equal(clampStep(undefined), 1);
});

// A result with value sizes, as run(text, { valueNorms: true }) gives: head (l, h)'s size of key k
