// The pure parts of the front end, in Node without a browser: the result layout (web/lib/result.js)
// and the scene builders of the views (web/component/views/*.js; "Inside this head" in
// inside.test.js), on a synthetic result whose attention rows are known. Each check compares a scene against the numbers it was built from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  attentionIndex,
  attentionAt,
  headOffset,
  contributionIndex,
  makeResult,
  resultForTransfer,
  parseAblate,
  formatAblate,
} from '../../../web/lib/result.js';
import { themeFrom, heat, heatIndex } from '../../../web/component/runtime/theme.js';
import { describeHead, focusToken, strongestKey } from '../../../web/component/model/describe.js';
import { heatmapScene, fitCell } from '../../../web/component/views/heatmap.js';
import { linesScene, DEFAULT_LINKS, LINES_WINDOW, linesWindow } from '../../../web/component/views/lines.js';
import { combineScene, attributionTarget } from '../../../web/component/views/combine.js';
import { gridScene } from '../../../web/component/views/grid.js';
import { formatPercent } from '../../../web/component/views/topk.js';
import {
  valueWeighted,
  shownWeights,
  shownWeightAt,
  valueNormsOf,
  hasValueNorms,
  valueWeightingSentence,
  VALUE_WEIGHTING_SENTENCE,
} from '../../../web/component/model/weighting.js';
import { paintGrid } from '../../../web/component/views/paint.js';
import { stateFromQuery, stateToQuery } from '../../../web/component/runtime/url-state.js';

const theme = themeFrom(() => '');

// A result of nLayer x nHead heads over T tokens. Head (l, h) puts weight 0.6 on key
// (q - 1 - ((l + h) % 2)) when it exists and spreads the rest evenly over the row's keys, so the
// strongest key of every row is known without reading the arrays back.
function syntheticResult({ T = 6, nLayer = 2, nHead = 3 } = {}) {
  const attentionAll = new Float32Array(nLayer * nHead * T * T);
  const contributionNorms = new Float32Array(nLayer * nHead * T);
  for (let l = 0; l < nLayer; l++) {
    for (let h = 0; h < nHead; h++) {
      for (let q = 0; q < T; q++) {
        const target = q - 1 - ((l + h) % 2);
        const o = ((l * nHead + h) * T + q) * T;
        if (target < 0) {
          for (let k = 0; k <= q; k++) attentionAll[o + k] = 1 / (q + 1);
        } else {
          for (let k = 0; k <= q; k++) attentionAll[o + k] = 0.4 / (q + 1);
          attentionAll[o + target] += 0.6;
        }
        contributionNorms[(l * nHead + h) * T + q] = 1 + l + h / 10 + q / 100;
      }
    }
  }
  const words = ['The', ' chef', ',', ' who', ' cooked', ' it', '.', ' Then', ' more'];
  const tokens = Array.from({ length: T }, (_, i) => ({ text: words[i % words.length], id: i, start: 0, end: 0 }));
  return makeResult({
    text: '',
    tokens,
    T,
    nLayer,
    nHead,
    attentionAll,
    contributionNorms,
    logitsLast: new Float32Array(4),
    topNext: [],
  });
}

test('result layout: every index helper agrees with the per-head copies makeResult() hands out', () => {
  const r = syntheticResult({ T: 5, nLayer: 2, nHead: 3 });
  for (let l = 0; l < 2; l++) {
    for (let h = 0; h < 3; h++) {
      const head = r.attention(l, h);
      assert.equal(head.length, 25);
      assert.equal(headOffset(r, l, h), attentionIndex(r, l, h, 0, 0));
      for (let q = 0; q < 5; q++) for (let k = 0; k < 5; k++) assert.equal(attentionAt(r, l, h, q, k), head[q * 5 + k]);
      const norms = r.headContribution(l, h);
      for (let t = 0; t < 5; t++) assert.equal(r.contributionNorms[contributionIndex(r, l, h, t)], norms[t]);
    }
  }
  assert.throws(() => r.attention(2, 0), /layer 2 is outside \[0, 2\)/);
  assert.throws(() => r.attention(0, -1), /head -1 is outside \[0, 3\)/);
});

test('result transfer: plain data without methods, and exactly the three typed arrays to transfer', () => {
  const r = syntheticResult();
  const { data, transfer } = resultForTransfer(r);
  assert.equal(
    Object.values(data).some((v) => typeof v === 'function'),
    false,
  );
  assert.deepEqual(transfer, [r.attentionAll.buffer, r.contributionNorms.buffer, r.logitsLast.buffer]);
  const rebuilt = makeResult(structuredClone(data));
  assert.deepEqual(Array.from(rebuilt.attention(1, 2)), Array.from(r.attention(1, 2)));
});

test('ablate strings: parsed, deduplicated, malformed parts dropped, and formatted back', () => {
  assert.deepEqual(parseAblate('0:1, 2:3,0:1,x:2,4.5'), [
    [0, 1],
    [2, 3],
    [4, 5],
  ]);
  assert.deepEqual(parseAblate(''), []);
  assert.equal(formatAblate(parseAblate('1:0,0:7')), '1:0,0:7');
});

test('describeHead names the strongest key of the focused token', () => {
  const r = syntheticResult();
  assert.equal(focusToken(r, { token: null }), 5);
  assert.equal(focusToken(r, { token: 99 }), 5, 'out of range falls back to the last token');
  // head (0, 0): q - 1 is strongest; head (0, 1): q - 2
  assert.equal(strongestKey(r, 0, 0, 4).k, 3);
  assert.equal(strongestKey(r, 0, 1, 4).k, 2);
  const w = attentionAt(r, 0, 0, 4, 3);
  assert.equal(describeHead(r, 0, 0, 4), `Layer 0, head 0: 'cooked' attends most to 'who' (${w.toFixed(2)})`);
});

test("heatmap scene: one cell per visible (query, key) pair in its weight's colour, none above the diagonal", () => {
  const r = syntheticResult({ T: 6 });
  const state = { layer: 1, head: 2, token: 3 };
  const { scene, layout } = heatmapScene(r, state, theme);
  const { x0, y0, cell, T } = layout;
  const cells = scene.items.filter(
    (it) => it.type === 'rect' && it.w === cell && it.h === cell && it.x >= x0 && it.y >= y0,
  );
  assert.equal(cells.length, (T * (T + 1)) / 2);
  for (const c of cells) {
    const q = Math.round((c.y - y0) / cell);
    const k = Math.round((c.x - x0) / cell);
    assert.ok(k <= q, `cell (${q}, ${k}) is causal`);
    assert.equal(c.fill, heat(theme, attentionAt(r, 1, 2, q, k)), `colour of cell (${q}, ${k})`);
  }
  const focus = scene.items.find((it) => it.stroke === theme.accent);
  assert.equal(Math.round((focus.y + 0.5 - y0) / cell), 3, 'the focus frame sits on the focused row');
  // the canvas-backed variant leaves the cells out, and keeps everything else
  const image = heatmapScene(r, state, theme, { image: true }).scene;
  assert.equal(image.items.length, scene.items.length - cells.length - 1);
});

test('lines scene: the strongest links of each token (default 3, or every pair with links 0), opacity = weight', () => {
  const r = syntheticResult({ T: 6 });
  const lineWeights = (state, focus = null) =>
    linesScene(r, state, theme, focus)
      .scene.items.filter((it) => it.type === 'line')
      .map((l) => l.opacity);
  // every pair with weight >= 0.01
  const all = [];
  for (let q = 0; q < 6; q++)
    for (let k = 0; k <= q; k++) if (attentionAt(r, 0, 1, q, k) >= 0.01) all.push(attentionAt(r, 0, 1, q, k));
  assert.deepEqual(lineWeights({ layer: 0, head: 1, heads: [1], links: 0 }).sort(), all.sort());
  // the default: per query row, its DEFAULT_LINKS largest weights
  const top = [];
  for (let q = 0; q < 6; q++) {
    const row = Array.from({ length: q + 1 }, (_, k) => attentionAt(r, 0, 1, q, k)).sort((a, b) => b - a);
    top.push(...row.slice(0, DEFAULT_LINKS).filter((w) => w >= 0.01));
  }
  assert.equal(DEFAULT_LINKS, 3);
  assert.deepEqual(lineWeights({ layer: 0, head: 1, heads: [1] }).sort(), top.sort());
  assert.equal(lineWeights({ layer: 0, head: 1, heads: [1], links: 1 }).length, 6, 'one link per token');
  for (const w of lineWeights({ layer: 0, head: 1, heads: [1] })) assert.ok(w > 0 && w <= 1);
  // focusing a query token shows every link of it
  const focused = lineWeights({ layer: 0, head: 1, heads: [1] }, { side: 'q', index: 4 });
  assert.deepEqual(focused.sort(), [0, 1, 2, 3, 4].map((k) => attentionAt(r, 0, 1, 4, k)).sort());
  // several heads at once: one colour per head
  const multi = linesScene(r, { layer: 0, head: 0, heads: [0, 2] }, theme, null).scene.items.filter(
    (it) => it.type === 'line',
  );
  assert.equal(new Set(multi.map((l) => l.stroke)).size, 2);
});

test('heatmap scene at long texts: labels thinned to what fits, rows windowed for export', () => {
  const T = 300;
  const r = syntheticResult({ T, nLayer: 1, nHead: 2 });
  const state = { layer: 0, head: 1, token: 123 };
  assert.equal(fitCell(T), 3);
  const { scene, layout } = heatmapScene(r, state, theme, { image: true });
  const rowLabels = scene.items
    .filter((it) => it.type === 'text' && it.data?.row !== undefined)
    .map((it) => it.data.row);
  // 9 px labels on 3 px rows: every 4th row is labelled, plus the focused token
  assert.equal(layout.step, 4);
  assert.ok(rowLabels.includes(123), 'the focused token is labelled');
  assert.ok(rowLabels.every((i) => i % 4 === 0 || i === 123));
  assert.equal(rowLabels.length, Math.ceil(T / 4) + 1);
  // zoomed in and windowed to rows 100..139: the cells of those rows only, keys up to 139
  const win = heatmapScene(r, state, theme, { cell: 12, rows: [100, 140] });
  const cells = win.scene.items.filter((it) => it.type === 'rect' && it.w === 12 && it.h === 12);
  let expected = 0;
  for (let q = 100; q < 140; q++) expected += q + 1;
  assert.equal(cells.length, expected);
  assert.deepEqual([win.layout.from, win.layout.to], [100, 140]);
  const first = cells.find((c) => c.y === win.layout.y0 && c.x === win.layout.x0);
  assert.equal(first.fill, heat(theme, attentionAt(r, 0, 1, 100, 0)), 'the window starts at row 100');
});

test('combine scene: one bar per head, lengths proportional to the contribution norms at the focused token', () => {
  const r = syntheticResult({ T: 6, nHead: 3 });
  const { scene, norms } = combineScene(r, { layer: 1, head: 2, token: 4 }, theme);
  assert.deepEqual(
    norms,
    [0, 1, 2].map((h) => r.contributionNorms[contributionIndex(r, 1, h, 4)]),
  );
  const bars = scene.items.filter((it) => it.cls === 'hs-bar');
  assert.equal(bars.length, 3);
  const max = Math.max(...norms);
  // widths are norm / max of the same bar: equal ratios to 1e-9 (floating-point division)
  for (let h = 0; h < 3; h++) assert.ok(Math.abs(bars[h].w / bars[2].w - norms[h] / max) < 1e-9);
  assert.equal(bars[2].fill, theme.accent, 'the selected head is highlighted');
});

// A logit split of a synthetic result (what logitAttribution() returns, with the text and heads
// off of the run it split): head (l, h) pushes by (h - 1) * (l + 1) + 0.25, so layer 1 of three
// heads has one negative, one positive and one large positive head.
function fakeAttribution(r, { position, token }) {
  const heads = new Float64Array(r.nLayer * r.nHead);
  for (let l = 0; l < r.nLayer; l++)
    for (let h = 0; h < r.nHead; h++) heads[l * r.nHead + h] = (h - 1) * (l + 1) + 0.25;
  const attnBias = Float64Array.from({ length: r.nLayer }, (_, l) => 0.1 * l);
  const mlp = Float64Array.from({ length: r.nLayer }, (_, l) => 1.5 - l);
  const embedding = 0.7;
  const lnBias = -0.05;
  const total = [...heads, ...attnBias, ...mlp].reduce((s, v) => s + v, embedding + lnBias);
  return {
    position,
    token,
    logit: total + 1e-7,
    total,
    heads,
    attnBias,
    mlp,
    embedding,
    lnBias,
    nLayer: r.nLayer,
    nHead: r.nHead,
    text: r.text,
    ablate: r.ablate ?? [],
  };
}

test('combine scene with an attribution: one signed bar per head of the layer, the sentence names the token and sums to total', () => {
  const r = syntheticResult({ T: 6, nHead: 3 });
  for (const [state, predicted] of [
    [{ layer: 1, head: 2, token: 3 }, false],
    [{ layer: 1, head: 0, token: null }, true],
  ]) {
    if (predicted) r.topNext = [{ id: 41, token: ' soup', prob: 0.3 }];
    const target = attributionTarget(r, state);
    // an earlier token: the text's own next token; the last: the model's top prediction
    assert.deepEqual(
      target,
      predicted
        ? { position: 5, token: 41, text: ' soup', predicted: true }
        : { position: 3, token: 4, text: ' cooked', predicted: false },
    );
    const a = fakeAttribution(r, target);
    const { scene, attribution } = combineScene(r, state, theme, a);
    assert.equal(attribution, a);
    const bars = scene.items.filter((it) => it.cls === 'hs-dla-bar');
    assert.equal(bars.length, 3, 'one attribution bar per head');
    assert.equal(scene.items.filter((it) => it.cls === 'hs-bar').length, 3, 'the contribution bars stay');
    const axis = scene.items.find((it) => it.type === 'line');
    for (let h = 0; h < 3; h++) {
      const v = a.heads[1 * 3 + h];
      assert.equal(bars[h].data.head, h);
      assert.equal(bars[h].data.dla, v, `head ${h}'s value`);
      // negative: left of the zero axis, in the negative colour; positive: right of it
      if (v < 0)
        assert.ok(
          Math.abs(bars[h].x + bars[h].w - axis.x1) < 1e-9 && bars[h].fill !== bars[2].fill,
          `head ${h} is left of the axis`,
        );
      else assert.ok(Math.abs(bars[h].x - axis.x1) < 1e-9, `head ${h} is right of the axis`);
      const label = scene.items.find((it) => it.data?.dlaText === h);
      assert.equal(label.text, (v < 0 ? '−' : '+') + Math.abs(v).toFixed(2));
    }
    assert.ok(bars[0].data.dla < 0 && bars[1].data.dla > 0 && bars[2].data.dla > 0, 'the fake has both signs');
    // lengths proportional to |value|, the largest filling half the column
    for (let h = 0; h < 3; h++)
      assert.ok(Math.abs(bars[h].w / bars[2].w - Math.abs(a.heads[3 + h]) / a.heads[5]) < 1e-9);
    const texts = scene.items
      .filter((it) => it.type === 'text')
      .map((it) => it.text)
      .join(' ');
    assert.ok(
      texts.includes(
        predicted
          ? "Pushing 'soup' (the model's prediction for the next token)"
          : "Pushing 'cooked' (the next token of the text)",
      ),
      texts,
    );
    const check = scene.items.find((it) => it.data?.total !== undefined);
    assert.equal(check.data.total, a.total);
    assert.equal(
      Number(/sum to (-?[\d.]+)/.exec(check.text)[1]),
      Number(a.total.toFixed(3)),
      'the stated sum is total',
    );
    assert.ok(a.total > 1, "the fake's total is not the zero a placeholder would show");
    // (wrapped lines are joined with the spaces they were cut at)
    if (predicted) assert.ok(texts.includes(`the model's logit is ${a.logit.toFixed(3)}.`), texts);
    else assert.match(texts, /there is none to check it against here/);
    const layerSum = a.heads[3] + a.heads[4] + a.heads[5];
    assert.ok(
      texts.includes(`together: +${layerSum.toFixed(3)}`) && texts.includes(`+${(a.total - layerSum).toFixed(3)}.`),
      "the layer's heads and the rest",
    );
  }
});

test('combine scene without an attribution, or with one of another text, token or position: no attribution bars, a note instead', () => {
  const r = syntheticResult({ T: 6, nHead: 3 });
  const state = { layer: 1, head: 2, token: 3 };
  const target = attributionTarget(r, state);
  const good = fakeAttribution(r, target);
  const height = combineScene(r, state, theme, good).scene.height;
  for (const [why, a] of [
    ['none', null],
    ['a note', { note: 'not read' }],
    ['another text', { ...good, text: 'something else' }],
    ['another token', { ...good, token: 99 }],
    ['another position', { ...good, position: 2 }],
    ['other heads off', { ...good, ablate: [[0, 1]] }],
  ]) {
    const { scene, attribution } = combineScene(r, state, theme, a);
    assert.equal(attribution, null, why);
    assert.equal(scene.items.filter((it) => it.cls === 'hs-dla-bar').length, 0, `${why}: no attribution bars`);
    assert.equal(
      scene.items.some((it) => it.data?.total !== undefined),
      false,
      `${why}: no sum`,
    );
    const note = scene.items.find((it) => it.data?.attributionNote);
    assert.equal(note.data.attributionNote, a?.note ?? 'reading…', why);
    assert.equal(scene.items.filter((it) => it.cls === 'hs-bar').length, 3, `${why}: the contribution bars as before`);
    // the sentences' room is kept: the view does not change height when the numbers arrive
    assert.equal(scene.height, height, `${why}: same height`);
  }
});

test('grid scene: every head of every layer, the selected one framed', () => {
  const r = syntheticResult({ T: 4, nLayer: 2, nHead: 3 });
  const { scene } = gridScene(r, { layer: 1, head: 0 }, theme);
  const labels = scene.items.filter((it) => it.type === 'text').map((it) => it.text);
  for (const l of ['L0', 'L1', 'H0', 'H1', 'H2']) assert.ok(labels.includes(l), l);
  const frames = scene.items.filter((it) => it.stroke === theme.accent);
  assert.equal(frames.length, 1);
  assert.match(labels[0], /^All 6 heads/);
});

test('top-k percentages', () => {
  assert.equal(formatPercent(0.4213), '42.1%');
  assert.equal(formatPercent(0.000123), '0.012%');
  assert.equal(formatPercent(0), '0%');
});

test('token tints: the text colour on every heat colour has WCAG contrast of at least 4.5 (light and dark)', () => {
  const lum = (c) => {
    const v = c / 255;
    return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  const L = (r, g, b) => 0.2126 * lum(r) + 0.7152 * lum(g) + 0.0722 * lum(b);
  for (const scheme of ['light', 'dark']) {
    const t = themeFrom((name) => (name === '--hs-scheme' ? scheme : ''));
    for (let i = 0; i < 256; i++) {
      const [r, g, b] = t.lut.lut.slice(i * 3, i * 3 + 3);
      const bg = L(r, g, b);
      const ink = t.lut.ink[i] === '#fff' ? 1 : 0;
      const ratio = (Math.max(bg, ink) + 0.05) / (Math.min(bg, ink) + 0.05);
      assert.ok(
        ratio >= 4.5,
        `${scheme} entry ${i}: rgb(${r},${g},${b}) with ${t.lut.ink[i]} has contrast ${ratio.toFixed(2)}`,
      );
    }
  }
});

// ---- "Inside this head" and value weighting ------------------------------------------

// One head's insides over T tokens with d_head HS and width C, made the way the engine defines them
// (scores = q.k / sqrt(HS) with the mask, softmax rows, z = sum_j a_ij v_j, out = z W, valueNorm =
// ||v_j W||), from seeded numbers: the scene's numbers can then be read back against these arrays.
// is 0.25 + ((3 * k + l + 2 * h) % 5), so the weighted rows differ from the weights' everywhere.
function withValueNorms(r) {
  const valueNorms = new Float32Array(r.nLayer * r.nHead * r.T);
  for (let l = 0; l < r.nLayer; l++)
    for (let h = 0; h < r.nHead; h++)
      for (let k = 0; k < r.T; k++) valueNorms[(l * r.nHead + h) * r.T + k] = 0.25 + ((3 * k + l + 2 * h) % 5);
  return makeResult({ ...resultForTransfer(r).data, valueNorms });
}

// alpha_qk n_k / sum_j alpha_qj n_j, by hand in float64 from the result's arrays
function handWeighted(r, l, h, q, k) {
  const n = (j) => r.valueNorms[(l * r.nHead + h) * r.T + j];
  let sum = 0;
  for (let j = 0; j <= q; j++) sum += attentionAt(r, l, h, q, j) * n(j);
  return (attentionAt(r, l, h, q, k) * n(k)) / sum;
}

test("value weighting: rows of weight × value size sum to 1, from the result's own value sizes; a result without them shows its weights", () => {
  const plain = syntheticResult({ T: 6, nLayer: 2, nHead: 3 });
  const r = withValueNorms(plain);
  assert.equal(hasValueNorms(r), true);
  assert.equal(hasValueNorms(plain), false);
  assert.deepEqual(Array.from(valueNormsOf(r, 1, 2)), Array.from(r.headValueNorms(1, 2)));
  assert.equal(valueNormsOf(plain, 1, 2), null);
  const m = valueWeighted(r, 1, 2);
  assert.equal(valueWeighted(r, 1, 2), m, 'one matrix per result and head');
  for (let q = 0; q < 6; q++) {
    let sum = 0;
    for (let k = 0; k <= q; k++) {
      sum += m[q * 6 + k];
      // float32 storage of a float64 quotient: 1e-6 relative
      assert.ok(Math.abs(m[q * 6 + k] - handWeighted(r, 1, 2, q, k)) < 1e-6 * handWeighted(r, 1, 2, q, k));
    }
    for (let k = q + 1; k < 6; k++) assert.equal(m[q * 6 + k], 0);
    assert.ok(Math.abs(sum - 1) < 1e-6, `row ${q} sums to ${sum}`);
  }
  const state = { layer: 1, head: 2, token: 5, by: 'value' };
  assert.equal(shownWeights(r, state, 1, 2).weighted, true);
  assert.equal(shownWeights(plain, state, 1, 2).weighted, false, 'a result without value sizes keeps its weights');
  assert.equal(shownWeights(r, { ...state, by: 'weight' }, 1, 2).weighted, false);
  const { scene, layout } = heatmapScene(r, state, theme);
  assert.match(scene.items[0].text, /weight × value size$/);
  const cell = scene.items.find(
    (it) => it.type === 'rect' && it.x === layout.x0 && it.y === layout.y0 + 5 * layout.cell,
  );
  assert.equal(cell.fill, heat(theme, m[5 * 6]), 'cells coloured by weight × value size');
  assert.match(heatmapScene(plain, state, theme).scene.items[0].text, /attention weights$/);
  const lines = linesScene(r, { ...state, heads: [2] }, theme, { side: 'q', index: 5 }).scene.items.filter(
    (it) => it.type === 'line',
  );
  assert.deepEqual(
    lines.map((l) => l.opacity).sort(),
    Array.from(m.subarray(30, 36))
      .filter((w) => w >= 0.01)
      .sort(),
  );
  // the sentence says whose run the sizes are of when heads are off
  assert.equal(valueWeightingSentence([]), VALUE_WEIGHTING_SENTENCE);
  assert.match(
    valueWeightingSentence([
      [0, 1],
      [1, 2],
    ]),
    /this run's, with the 2 switched-off heads off\.$/,
  );
});

test("grid scene and painter by weight × value size: every cell is α·‖v‖ over its row's sum; by weight, the weights", () => {
  const r = withValueNorms(syntheticResult({ T: 5, nLayer: 2, nHead: 3 }));
  const { T, nLayer, nHead } = r;
  // gridScene's layout: tiles of px * T, gap 10, from (34, 50); a cell's rect at its (q, k), drawn
  // over its row's background (the last rect there)
  const px = Math.min(8, Math.floor(72 / T));
  const cellFill = (scene, l, h, q, k) =>
    scene.items
      .filter(
        (it) =>
          it.type === 'rect' &&
          it.w === px &&
          it.h === px &&
          it.x === 34 + h * (px * T + 10) + k * px &&
          it.y === 50 + l * (px * T + 10) + q * px,
      )
      .at(-1)?.fill;
  const byValue = gridScene(r, { layer: 0, head: 0, by: 'value' }, theme);
  const byWeight = gridScene(r, { layer: 0, head: 0, by: 'weight' }, theme);
  assert.equal(byValue.weighted, true);
  assert.equal(byWeight.weighted, false);
  assert.match(byValue.scene.items[0].text, /^All 6 heads, by weight × value size/);
  let differ = 0;
  for (let l = 0; l < nLayer; l++)
    for (let h = 0; h < nHead; h++)
      for (let q = 0; q < T; q++)
        for (let k = 0; k <= q; k++) {
          const want = handWeighted(r, l, h, q, k);
          const got = shownWeightAt(r, { by: 'value' }, l, h, q, k);
          // float32 rounding of alpha * n * (1 / sum): half an ulp (2^-24 relative), and 2^-53 for each
          // of the two float64 roundings the product with 1 / sum adds to the quotient
          assert.ok(Math.abs(got - want) <= want * (2 ** -24 + 2 ** -50), `L${l}H${h} (${q}, ${k}): ${got} vs ${want}`);
          assert.equal(shownWeightAt(r, { by: 'weight' }, l, h, q, k), attentionAt(r, l, h, q, k));
          assert.equal(cellFill(byValue.scene, l, h, q, k), heat(theme, want), `value: L${l}H${h} (${q}, ${k})`);
          assert.equal(
            cellFill(byWeight.scene, l, h, q, k),
            heat(theme, attentionAt(r, l, h, q, k)),
            `weight: L${l}H${h} (${q}, ${k})`,
          );
          if (heat(theme, want) !== heat(theme, attentionAt(r, l, h, q, k))) differ++;
        }
  assert.ok(differ > T * nLayer * nHead, `the two colourings differ (${differ} cells)`);
  // one cell by hand: L1H2, query 3, key 1 (0.4 / 4 spread, 0.6 on key 3 - 1 - 1 = 1; sizes of keys 0..3: 0.25 + 3k % 5)
  const w = [0.1, 0.7, 0.1, 0.1];
  const n = [0.25, 3.25, 1.25, 4.25];
  assert.deepEqual(Array.from(r.headValueNorms(1, 2).subarray(0, 4)), n);
  const hand = (w[1] * n[1]) / w.reduce((s, a, j) => s + a * n[j], 0);
  assert.ok(
    Math.abs(shownWeightAt(r, { by: 'value' }, 1, 2, 3, 1) - hand) < 1e-6,
    `${shownWeightAt(r, { by: 'value' }, 1, 2, 3, 1)} vs ${hand}`,
  );

  // the live grid's painter: one device pixel per (query, key) cell, every head's tile side by side
  const W = nHead * T;
  const layout = {
    width: W,
    height: nLayer * T,
    cells: Array.from({ length: nLayer }, (_, l) =>
      Array.from({ length: nHead }, (_, h) => ({
        box: [h * T, l * T, T, T],
        x: h * T,
        y: l * T,
        w: T,
        h: T,
      })),
    ),
  };
  const rgbAt = (pixels, x, y) => Array.from(new Uint8Array(pixels.buffer, (y * W + x) * 4, 3));
  const lutRgb = (w) => {
    const i = heatIndex(w);
    return Array.from(theme.lut.lut.subarray(i * 3, i * 3 + 3));
  };
  for (const by of ['value', 'weight']) {
    const pixels = new Int32Array(W * nLayer * T);
    paintGrid(pixels, layout, r, theme, { by });
    for (let l = 0; l < nLayer; l++)
      for (let h = 0; h < nHead; h++)
        for (let q = 0; q < T; q++)
          for (let k = 0; k <= q; k++) {
            const want = by === 'value' ? handWeighted(r, l, h, q, k) : attentionAt(r, l, h, q, k);
            assert.deepEqual(
              rgbAt(pixels, h * T + k, l * T + q),
              lutRgb(want),
              `painted by ${by}: L${l}H${h} (${q}, ${k})`,
            );
          }
  }
  // tiles narrower and shorter than T (a long text): pixel (x, y) shows query floor(y T / h), key
  // floor(x T / w), keys after the query faint; tiles of 3 x 2 pixels with 1 pixel of box around them
  const tw = 3,
    th = 2,
    bw = tw + 2,
    bh = th + 2;
  const small = {
    width: nHead * bw,
    height: nLayer * bh,
    cells: Array.from({ length: nLayer }, (_, l) =>
      Array.from({ length: nHead }, (_, h) => ({
        box: [h * bw, l * bh, bw, bh],
        x: h * bw + 1,
        y: l * bh + 1,
        w: tw,
        h: th,
      })),
    ),
  };
  const faintRgb = [0, 2, 4].map((i) => parseInt(theme.faint.slice(1 + i, 3 + i), 16));
  for (const by of ['value', 'weight']) {
    const pixels = new Int32Array(small.width * small.height);
    paintGrid(pixels, small, r, theme, { by });
    const at = (x, y) => Array.from(new Uint8Array(pixels.buffer, (y * small.width + x) * 4, 3));
    for (let l = 0; l < nLayer; l++)
      for (let h = 0; h < nHead; h++) {
        assert.deepEqual(at(h * bw, l * bh), faintRgb, 'the box around the tile');
        for (let y = 0; y < th; y++)
          for (let x = 0; x < tw; x++) {
            const q = Math.floor((y * T) / th),
              k = Math.floor((x * T) / tw);
            const want =
              k > q ? faintRgb : lutRgb(by === 'value' ? handWeighted(r, l, h, q, k) : attentionAt(r, l, h, q, k));
            assert.deepEqual(
              at(h * bw + 1 + x, l * bh + 1 + y),
              want,
              `small tiles by ${by}: L${l}H${h} pixel (${x}, ${y}) = (${q}, ${k})`,
            );
          }
      }
  }
  // without value sizes the painter and the scene keep the weights
  const plain = syntheticResult({ T: 5, nLayer: 2, nHead: 3 });
  assert.equal(gridScene(plain, { layer: 0, head: 0, by: 'value' }, theme).weighted, false);
  assert.equal(shownWeightAt(plain, { by: 'value' }, 1, 2, 3, 1), attentionAt(plain, 1, 2, 3, 1));
});

test('URL state: inside (the query token), step and by survive the round trip', () => {
  const s = stateFromQuery('?layer=1&head=3&inside=7&step=4&by=value&view=inside');
  assert.deepEqual(
    { layer: s.layer, head: s.head, inside: s.inside, step: s.step, by: s.by, view: s.view },
    { layer: 1, head: 3, inside: 7, step: 4, by: 'value', view: 'inside' },
  );
  assert.deepEqual(stateFromQuery(stateToQuery(s)), s);
  assert.equal(stateFromQuery('?step=9').step, undefined, 'steps are 1-6');
  assert.equal(stateFromQuery('?by=colour').by, undefined);
  assert.equal(stateToQuery({ step: 1, by: 'weight' }), '', 'the defaults stay out of the URL');
});

// A long text's lines view: the window of LINES_WINDOW tokens around the focused one, its targets and
// lines by the definition (each token's strongest links, from a sort of its row here), and one line
// per token to the row of the tokens before the window whose opacity is the sum of its links there.
test('lines scene past LINES_WINDOW tokens: a window around the focused token, links before it summed on one row', () => {
  const T = 400;
  const r = syntheticResult({ T, nLayer: 1, nHead: 2 });
  const state = { layer: 0, head: 1, heads: [1] };
  const focus = { side: 'k', index: 300 };
  const [from, to] = linesWindow(T, 300);
  assert.deepEqual([from, to], [300 - LINES_WINDOW / 2, 300 + LINES_WINDOW / 2]);
  assert.deepEqual(linesWindow(T, 5), [0, LINES_WINDOW], 'clamped at the start');
  assert.deepEqual(linesWindow(T, 399), [T - LINES_WINDOW, T], 'and at the end');
  assert.deepEqual(linesWindow(LINES_WINDOW, 100), [0, LINES_WINDOW], 'a short text: every token');
  const { scene, layout } = linesScene(r, state, theme, null);
  // no focus: the window is around the focused token of the state (the last)
  assert.deepEqual([layout.from, layout.to], [T - LINES_WINDOW, T]);
  const hits = scene.items.filter((it) => it.hit);
  assert.equal(hits.length, 2 * LINES_WINDOW);
  assert.deepEqual(
    [...new Set(hits.map((h) => h.data.index))],
    Array.from({ length: LINES_WINDOW }, (_, i) => T - LINES_WINDOW + i),
  );
  // the lines of every query of the window: its 3 strongest keys (ties: the earlier key), those in the
  // window drawn each, those before it summed into one line to the first row
  const y = (i) => layout.y0 + (i < layout.from ? 0 : i - layout.from + 1) * layout.rowH + layout.rowH / 2;
  const want = [];
  for (let q = layout.from; q < layout.to; q++) {
    const keys = Array.from({ length: q + 1 }, (_, k) => k).sort(
      (a, b) => attentionAt(r, 0, 1, q, b) - attentionAt(r, 0, 1, q, a) || a - b,
    );
    let before = 0;
    for (const k of keys.slice(0, DEFAULT_LINKS)) {
      const w = attentionAt(r, 0, 1, q, k);
      if (w < 0.01) continue;
      if (k < layout.from) before += w;
      else want.push([y(q), y(k), w]);
    }
    if (before >= 0.01) want.push([y(q), y(layout.from - 1), Math.min(1, before)]);
  }
  const got = scene.items.filter((it) => it.type === 'line').map((l) => [l.y1, l.y2, l.opacity]);
  const order = (a, b) => a[0] - b[0] || a[1] - b[1];
  assert.ok(want.length >= LINES_WINDOW, `${want.length} lines`);
  assert.ok(
    want.some((l) => l[1] === y(layout.from - 1)),
    'the first tokens of the window look before it',
  );
  assert.deepEqual(got.sort(order), want.sort(order));
  // the rows of the tokens before and after the window say how many
  const texts = scene.items.filter((it) => it.type === 'text').map((t) => t.text);
  assert.ok(texts.includes(`… ${(T - LINES_WINDOW).toLocaleString('en-US')} before`));
  // a key focused in the middle: the window around it, with a row after it too
  const mid = linesScene(r, state, theme, focus);
  assert.deepEqual([mid.layout.from, mid.layout.to], [from, to]);
  const midTexts = mid.scene.items.filter((it) => it.type === 'text').map((t) => t.text);
  assert.ok(midTexts.includes(`… ${T - to} after`));
});
