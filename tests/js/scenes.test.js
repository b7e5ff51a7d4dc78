// The pure parts of the front end, in Node without a browser: the result layout (web/lib/result.js)
// and the scene builders of the views (web/component/views/*.js), on a synthetic result whose
// attention rows are known. Each check compares a scene against the numbers it was built from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  attentionIndex, attentionAt, headOffset, contributionIndex, makeResult, resultForTransfer, parseAblate, formatAblate,
} from '../../web/lib/result.js';
import { themeFrom, heat } from '../../web/component/theme.js';
import { describeHead, focusToken, strongestKey } from '../../web/component/views/describe.js';
import { heatmapScene, fitCell } from '../../web/component/views/heatmap.js';
import { linesScene, DEFAULT_LINKS } from '../../web/component/views/lines.js';
import { combineScene } from '../../web/component/views/combine.js';
import { gridScene } from '../../web/component/views/grid.js';
import { formatPercent } from '../../web/component/views/topk.js';

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
  return makeResult({ text: '', tokens, T, nLayer, nHead, attentionAll, contributionNorms, logitsLast: new Float32Array(4), topNext: [] });
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
  assert.equal(Object.values(data).some((v) => typeof v === 'function'), false);
  assert.deepEqual(transfer, [r.attentionAll.buffer, r.contributionNorms.buffer, r.logitsLast.buffer]);
  const rebuilt = makeResult(structuredClone(data));
  assert.deepEqual(Array.from(rebuilt.attention(1, 2)), Array.from(r.attention(1, 2)));
});

test('ablate strings: parsed, deduplicated, malformed parts dropped, and formatted back', () => {
  assert.deepEqual(parseAblate('0:1, 2:3,0:1,x:2,4.5'), [[0, 1], [2, 3], [4, 5]]);
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

test('heatmap scene: one cell per visible (query, key) pair in its weight\'s colour, none above the diagonal', () => {
  const r = syntheticResult({ T: 6 });
  const state = { layer: 1, head: 2, token: 3 };
  const { scene, layout } = heatmapScene(r, state, theme);
  const { x0, y0, cell, T } = layout;
  const cells = scene.items.filter((it) => it.type === 'rect' && it.w === cell && it.h === cell && it.x >= x0 && it.y >= y0);
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
  const lineWeights = (state, focus = null) => linesScene(r, state, theme, focus).scene.items.filter((it) => it.type === 'line').map((l) => l.opacity);
  // every pair with weight >= 0.01
  const all = [];
  for (let q = 0; q < 6; q++) for (let k = 0; k <= q; k++) if (attentionAt(r, 0, 1, q, k) >= 0.01) all.push(attentionAt(r, 0, 1, q, k));
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
  const multi = linesScene(r, { layer: 0, head: 0, heads: [0, 2] }, theme, null).scene.items.filter((it) => it.type === 'line');
  assert.equal(new Set(multi.map((l) => l.stroke)).size, 2);
});

test('heatmap scene at long texts: labels thinned to what fits, rows windowed for export', () => {
  const T = 300;
  const r = syntheticResult({ T, nLayer: 1, nHead: 2 });
  const state = { layer: 0, head: 1, token: 123 };
  assert.equal(fitCell(T), 3);
  const { scene, layout } = heatmapScene(r, state, theme, { image: true });
  const rowLabels = scene.items.filter((it) => it.type === 'text' && it.data?.row !== undefined).map((it) => it.data.row);
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
  assert.deepEqual(norms, [0, 1, 2].map((h) => r.contributionNorms[contributionIndex(r, 1, h, 4)]));
  const bars = scene.items.filter((it) => it.cls === 'hs-bar');
  assert.equal(bars.length, 3);
  const max = Math.max(...norms);
  // widths are norm / max of the same 230 px bar: equal ratios to 1e-9 (floating-point division)
  for (let h = 0; h < 3; h++) assert.ok(Math.abs(bars[h].w / bars[2].w - norms[h] / max) < 1e-9);
  assert.equal(bars[2].fill, theme.accent, 'the selected head is highlighted');
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
  const lum = (c) => { const v = c / 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const L = (r, g, b) => 0.2126 * lum(r) + 0.7152 * lum(g) + 0.0722 * lum(b);
  for (const scheme of ['light', 'dark']) {
    const t = themeFrom((name) => (name === '--hs-scheme' ? scheme : ''));
    for (let i = 0; i < 256; i++) {
      const [r, g, b] = t.lut.lut.slice(i * 3, i * 3 + 3);
      const bg = L(r, g, b);
      const ink = t.lut.ink[i] === '#fff' ? 1 : 0;
      const ratio = (Math.max(bg, ink) + 0.05) / (Math.min(bg, ink) + 0.05);
      assert.ok(ratio >= 4.5, `${scheme} entry ${i}: rgb(${r},${g},${b}) with ${t.lut.ink[i]} has contrast ${ratio.toFixed(2)}`);
    }
  }
});
