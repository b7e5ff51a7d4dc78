// Head role scores on hand-built attention patterns, and knock-out ranking through the engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  headScores,
  headBadges,
  knockoutRanking,
  inductionProbeText,
  allHeadScores,
  HeadScoreRows,
} from '../../../dist/analysis.js';
import { loadModel } from '../../../dist/headscope.js';
import { testModelUrl } from './helpers.js';

function pattern(T, rowFn) {
  const a = new Float32Array(T * T);
  for (let t = 0; t < T; t++) {
    const w = rowFn(t);
    const s = w.reduce((x, y) => x + y, 0);
    for (let j = 0; j <= t; j++) a[t * T + j] = w[j] / s;
  }
  return a;
}
const T = 64;
const ids = Array.from({ length: T }, (_, i) => 1000 + i); // all distinct
const close = (x, y, eps, what) => assert.ok(Math.abs(x - y) <= eps, `${what}: ${x} vs ${y}`);

test('a pure previous-token head scores 1 on previous and 0 on the rest', () => {
  const s = headScores(
    pattern(T, (t) => Array.from({ length: t + 1 }, (_, j) => (t === 0 ? 1 : j === t - 1 ? 1 : 0))),
    ids,
  );
  close(s.previous, 1, 1e-6, 'previous');
  close(s.first, 1 / (T - 1), 1e-6, 'first'); // only row 1, whose previous token is the first
  close(s.self, 0, 1e-6, 'self');
  close(s.broad, 0, 1e-6, 'broad');
  assert.deepEqual(headBadges(s), ['previous']);
});

test('a uniform head scores near 0 on every pattern and 1 on broad', () => {
  const s = headScores(
    pattern(T, (t) => new Array(t + 1).fill(1)),
    ids,
  );
  // mean over t of 1/(t+1): (H_64 - 1) / 63 = 0.06
  assert.ok(s.previous < 0.08 && s.first < 0.08 && s.self < 0.08, JSON.stringify(s));
  close(s.broad, 1, 1e-5, 'broad');
  assert.deepEqual(headBadges(s), ['broad']);
});

test('first-token (sink) and self heads', () => {
  const sink = headScores(
    pattern(T, (t) => Array.from({ length: t + 1 }, (_, j) => (j === 0 ? 1 : 0))),
    ids,
  );
  close(sink.first, 1, 1e-6, 'first');
  assert.equal(headBadges(sink)[0], 'first');
  const self = headScores(
    pattern(T, (t) => Array.from({ length: t + 1 }, (_, j) => (j === t ? 1 : 0))),
    ids,
  );
  close(self.self, 1, 1e-6, 'self');
  assert.deepEqual(headBadges(self), ['self']);
});

test('duplicate-token and induction heads on a repeated sequence', () => {
  const n = 20;
  const rep = [...Array.from({ length: n }, (_, i) => 500 + i), ...Array.from({ length: n }, (_, i) => 500 + i)];
  const L = rep.length;
  const dup = headScores(
    pattern(L, (t) => Array.from({ length: t + 1 }, (_, j) => (t >= n ? (j === t - n ? 1 : 0) : j === t ? 1 : 0))),
    rep,
  );
  close(dup.duplicate, 1, 1e-6, 'duplicate');
  assert.ok(headBadges(dup).includes('duplicate'));
  const ind = headScores(
    pattern(L, (t) => Array.from({ length: t + 1 }, (_, j) => (t >= n ? (j === t - n + 1 ? 1 : 0) : j === 0 ? 1 : 0))),
    rep,
  );
  close(ind.induction, 1, 1e-6, 'induction');
  close(ind.duplicate, 0, 1e-6, 'duplicate of an induction head');
  assert.ok(headBadges(ind).includes('induction'));
  // without repeats there is nothing to measure: NaN, not a misleading 0
  assert.ok(
    Number.isNaN(
      headScores(
        pattern(T, (t) => new Array(t + 1).fill(1)),
        ids,
      ).induction,
    ),
  );
});

test('scores reject a wrongly sized matrix', () => {
  assert.throws(() => headScores(new Float32Array(10), [1, 2, 3]), /expected 3x3/);
});

test('knock-out ranking through the engine', async () => {
  const model = await loadModel(testModelUrl);
  const text = 'The chef, who trained in Paris';
  const ranking = await knockoutRanking(model, text);
  const { nLayer, nHead } = model.info.config;
  assert.equal(ranking.heads.length, nLayer * nHead);
  for (let i = 1; i < ranking.heads.length; i++) assert.ok(ranking.heads[i - 1].delta >= ranking.heads[i].delta);
  // each entry equals an explicit run with that head switched off
  const top = ranking.heads[0];
  const r = model.run(text, { allLogits: true, ablate: [[top.layer, top.head]] });
  assert.equal(r.loss, top.loss);
  assert.equal(model.run(text, { allLogits: true }).loss, ranking.baseLoss);
  assert.ok(ranking.heads.some((h) => h.delta !== 0));
  const scores = allHeadScores(model.run(text));
  assert.equal(scores.length, nLayer);
  assert.ok(scores[0][0].previous >= 0 && scores[0][0].previous <= 1);
  model.dispose();
});

test('live scores row by row: typing with reuse computes new rows only, and equals headScores on each full matrix', async () => {
  const model = await loadModel(testModelUrl);
  const rows = new HeadScoreRows();
  // exact: the same per-row numbers summed in the same order (0 tolerance); NaN where no row counts
  const same = (a, b) => (Number.isNaN(a) && Number.isNaN(b)) || a === b;
  let r = null;
  for (const text of [
    'The chef',
    'The chef, who',
    'The chef, who trained the chef',
    'The chef, who',
    'A cook, who cooked',
    'A cook, who cooked',
  ]) {
    r = model.run(text, { reuse: r });
    const live = rows.scores(r);
    const ids = r.tokens.map((t) => t.id);
    for (let l = 0; l < r.nLayer; l++)
      for (let h = 0; h < r.nHead; h++) {
        const full = headScores(r.attention(l, h), ids);
        for (const k of Object.keys(full))
          assert.ok(same(live[l][h][k], full[k]), `${text} L${l}H${h} ${k}: ${live[l][h][k]} vs ${full[k]}`);
      }
  }
  // other switched-off heads: nothing is reused
  const ablated = model.run('A cook, who cooked', { ablate: [[0, 0]] });
  const live = rows.scores(ablated);
  assert.ok(
    same(
      live[0][1].previous,
      headScores(
        ablated.attention(0, 1),
        ablated.tokens.map((t) => t.id),
      ).previous,
    ),
  );
  model.dispose();
});

test('induction probe text is two copies of whole-word tokens', async (t) => {
  const model = await loadModel(testModelUrl);
  if (model.info.config.vocabSize < 1000) {
    // the byte-level fixture vocabulary has no whole-word tokens: the probe must say so
    await assert.rejects(inductionProbeText(model), /whole-word tokens/);
  } else {
    const probe = await inductionProbeText(model);
    const tokens = model.tokenize(probe);
    const half = tokens.length / 2;
    assert.ok(Number.isInteger(half));
    assert.deepEqual(
      tokens.slice(0, half).map((x) => x.id),
      tokens.slice(half).map((x) => x.id),
    );
  }
  model.dispose();
});
