// "Which heads carry the answer?" in Node (web/component/charts/patching.js): the tokens aligned, a
// head's score (exact once in, else the estimate), and the scenes: every cell coloured by its value on
// the map's own scale, estimates marked, the residual map's pending cells, the scatter's dots where
// their values put them and the heads furthest from the diagonal named, the page's sentences.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { themeFrom, signedColour } from '../../../web/component/runtime/theme.js';
import {
  alignTokens,
  headScore,
  scoreText,
  patchHeadsScene,
  patchResidScene,
  patchPositionScene,
  patchScatterScene,
  patchSummary,
  patchLabel,
} from '../../../web/component/charts/patching.js';

const theme = themeFrom(() => '');
const tok = (id, text) => ({ id, text });

// 2 layers x 3 heads, 4 tokens differing at position 1; heads (0, 1) and (1, 2) not exact yet
function report({ byPosition = false } = {}) {
  const L = 2;
  const NH = 3;
  const T = 4;
  const heads = Float64Array.from([0.5, NaN, -0.2, 0.05, 0.3, NaN]);
  const headsAttribution = Float64Array.from([0.45, 0.8, -0.1, 0.05, 0.1, 0.02]);
  const resid = Float64Array.from([0, 1, 0, 0, 0, NaN, 0.4, 0.6]);
  const r = {
    nLayer: L,
    nHead: NH,
    tokens: T,
    firstDifference: 1,
    tokensClean: [tok(1, 'Mr'), tok(2, ' Smith'), tok(3, ' left'), tok(4, ' Mr')],
    tokensCorrupted: [tok(1, 'Mr'), tok(5, ' Jones'), tok(3, ' left'), tok(4, ' Mr')],
    answer: tok(2, ' Smith'),
    distractor: tok(5, ' Jones'),
    ldClean: 1.8,
    ldCorrupted: -0.8,
    heads,
    headsAttribution,
    resid,
    headsByPosition: null,
    headsByPositionAttribution: null,
    exactRunsDone: 10,
    exactRunsTotal: 14,
    complete: false,
  };
  if (byPosition) {
    r.headsByPosition = new Float64Array(L * NH * T).fill(NaN);
    r.headsByPositionAttribution = new Float64Array(L * NH * T).map((_, i) => (i % 5) / 10 - 0.1);
    r.headsByPosition[(1 * NH + 0) * T + 3] = 0.7;
  }
  return r;
}

test('alignTokens marks the differing columns, a missing token, and the first difference', () => {
  const a = [tok(1, 'a'), tok(2, 'b'), tok(3, 'c')];
  const same = alignTokens(a, [tok(1, 'a'), tok(9, 'x'), tok(3, 'c')]);
  assert.equal(same.sameLength, true);
  assert.deepEqual(
    same.columns.map((c) => c.differs),
    [false, true, false],
  );
  assert.equal(same.differing, 1);
  assert.equal(same.first, 1);
  const longer = alignTokens(a, [...a, tok(4, 'd')]);
  assert.equal(longer.sameLength, false);
  assert.equal(longer.first, 3);
  assert.equal(longer.columns[3].clean, null);
  assert.equal(alignTokens(a, a).first, -1);
});

test('headScore is the exact score once in, else the attribution estimate', () => {
  const r = report();
  assert.deepEqual(headScore(r, 0, 0), { value: 0.5, exact: true });
  assert.deepEqual(headScore(r, 0, 1), { value: 0.8, exact: false });
  assert.deepEqual(headScore(r, 1, 2), { value: 0.02, exact: false });
  assert.equal(scoreText(-0.2), '−0.20');
  assert.equal(scoreText(-0.001), '0.00');
  assert.equal(scoreText(NaN), '…');
});

test('the head map: each cell coloured by its score on one scale, estimates paler with ≈, the selected head outlined, one cell in the tab order', () => {
  const r = report();
  const { scene, max } = patchHeadsScene(r, theme, { selected: [1, 1], width: 420 });
  // the scale covers the estimate of (0, 1), 0.8, although its exact score is not in
  assert.equal(max, 0.8);
  const cells = scene.items.filter((it) => it.type === 'rect' && it.data?.exact !== undefined);
  assert.equal(cells.length, 6);
  for (const c of cells) {
    const { value, exact } = headScore(r, c.data.layer, c.data.head);
    assert.equal(c.fill, signedColour(theme, value, max), `L${c.data.layer}H${c.data.head}`);
    assert.equal(c.opacity, exact ? 1 : 0.55);
    assert.equal(c.data.exact, exact ? 1 : 0);
  }
  const texts = scene.items.filter((it) => it.type === 'text').map((it) => it.text);
  assert.ok(texts.includes('≈0.80') && texts.includes('0.50') && texts.includes('−0.20'), texts.join(' '));
  const outline = scene.items.filter((it) => it.stroke === theme.accent);
  assert.equal(outline.length, 1);
  const cell11 = cells.find((c) => c.data.layer === 1 && c.data.head === 1);
  assert.ok(Math.abs(outline[0].x - (cell11.x - 1)) < 1e-9 && Math.abs(outline[0].y - (cell11.y - 1)) < 1e-9);
  const hits = scene.items.filter((it) => it.hit);
  assert.equal(hits.length, 6);
  assert.deepEqual(
    hits.filter((h) => h.attrs.tabindex === 0).map((h) => [h.data.layer, h.data.head]),
    [[1, 1]],
  );
  assert.match(hits[1].attrs['aria-label'], /Layer 0 head 1: estimated score 0\.80/);
  for (const it of scene.items.filter((x) => x.type === 'rect'))
    assert.ok(it.x >= 0 && it.x + it.w <= scene.width + 1 && it.y + it.h <= scene.height + 1, JSON.stringify(it));
  // without a selection the first cell takes the tab stop
  const none = patchHeadsScene(r, theme).scene.items.filter((it) => it.hit && it.attrs.tabindex === 0);
  assert.deepEqual([none[0].data.layer, none[0].data.head], [0, 0]);
});

test('the residual map: pending cells faint with …, the differing column named clean/corrupted in the accent colour', () => {
  const r = report();
  const { scene, max } = patchResidScene(r, theme, { width: 300 });
  assert.equal(max, 1);
  const cells = scene.items.filter((it) => it.type === 'rect' && it.data?.position !== undefined);
  assert.equal(cells.length, 8);
  for (const c of cells) {
    const v = r.resid[c.data.layer * r.tokens + c.data.position];
    assert.equal(c.fill, Number.isFinite(v) ? signedColour(theme, v, max) : theme.faint);
  }
  const labels = scene.items.filter((it) => it.type === 'text' && it.data?.position !== undefined);
  assert.equal(labels.length, 4);
  assert.equal(labels[1].text, '·Smith/·Jones');
  assert.equal(labels[1].fill, theme.accent);
  assert.equal(labels[0].fill, theme.muted);
  assert.ok(scene.items.some((it) => it.type === 'text' && it.text === '…'));
});

test("one head's positions: exact where in, else the estimate; none without positions", () => {
  assert.equal(patchPositionScene(report(), theme, { layer: 0, head: 0 }), null);
  const r = report({ byPosition: true });
  const { scene } = patchPositionScene(r, theme, { layer: 1, head: 0, width: 400 });
  const cells = scene.items.filter((it) => it.type === 'rect');
  assert.equal(cells.length, 4);
  assert.deepEqual(
    cells.map((c) => c.data.exact),
    [0, 0, 0, 1],
  );
  assert.ok(scene.items.some((it) => it.type === 'text' && it.text === '0.70'));
});

test('the scatter: a dot per exact head at (estimate, exact), the diagonal, the furthest heads named', () => {
  const r = report();
  const { scene, sx, sy, outliers } = patchScatterScene(r, theme, {
    width: 320,
    height: 260,
    selected: [0, 0],
    label: 2,
  });
  const dots = scene.items.filter((it) => it.type === 'rect' && it.data?.layer !== undefined);
  assert.equal(dots.length, 4, 'heads (0, 1) and (1, 2) have no exact score yet');
  for (const d of dots) {
    const i = d.data.layer * r.nHead + d.data.head;
    assert.ok(Math.abs(d.x + d.w / 2 - sx(r.headsAttribution[i])) < 1e-9);
    assert.ok(Math.abs(d.y + d.h / 2 - sy(r.heads[i])) < 1e-9);
  }
  assert.equal(dots.find((d) => d.data.layer === 0 && d.data.head === 0).fill, theme.accent);
  // gaps: (1, 1) 0.2, (0, 2) 0.1, (0, 0) 0.05, (1, 0) 0
  assert.deepEqual(outliers, [
    [1, 1],
    [0, 2],
  ]);
  const diagonal = scene.items.find((it) => it.data?.series === 'diagonal');
  assert.ok(Math.abs(diagonal.x2 - diagonal.x1 - (diagonal.y1 - diagonal.y2) * ((320 - 84) / (260 - 76))) < 1e-6);
  for (const it of scene.items.filter((x) => x.type === 'text' && x.data?.outlier))
    assert.ok(it.anchor === 'end' || it.x < scene.width, 'a label stays inside');
});

test('what the page says: the best heads (exact or estimated), the furthest estimate, progress', () => {
  const r = report();
  const s = patchSummary(r);
  assert.deepEqual(
    s.best.map((b) => [b.l, b.h, b.value, b.exact]),
    [
      [0, 1, 0.8, false],
      [0, 0, 0.5, true],
      [1, 1, 0.3, true],
    ],
  );
  assert.deepEqual([s.worst.l, s.worst.h], [1, 1]);
  assert.ok(Math.abs(s.worst.gap - 0.2) < 1e-12);
  const label = patchLabel(r);
  assert.match(label, /"Smith" against "Jones"/);
  assert.match(label, /layer 0 head 1 about 0\.80/);
  assert.match(label, /10 of 14 exact runs done/);
  assert.match(patchLabel({ ...r, complete: true }), /Every score is exact/);
});
