// "Inside this head": one head's computation for the focused query token, step by
// step, with the model's own numbers (HeadscopeModel.inspectHead()):
//   1 query    the token's input, through W_Q, becomes its query q (d_head numbers)
//   2 keys     every token up to it has a key k_j; later tokens are masked
//   3 scores   q . k_j, the sum of d_head products (shown for one key), divided by sqrt(d_head)
//   4 weights  the softmax of the scores: the heatmap's row
//   5 values   each value v_j scaled by its weight; they add up to z
//   6 write    z times the head's rows of W_O: its share of the token's update
// insideScene() is the pure scene builder (tested in Node); InsideView shows it with step tabs,
// Back/Next, one sentence per step, a tooltip with each number and keyboard navigation.
import { textWidth, wrap } from './scene.js';
import { heat, tokenLabel, quoteToken, tokenWords } from '../runtime/theme.js';
import { focusToken, clamp } from '../model/describe.js';
import { SceneView, el } from './scene-view.js';
import { HostWidth } from './host-width.js';

export const INSIDE_STEPS = Object.freeze([
  { id: 'query', name: 'Query' },
  { id: 'keys', name: 'Keys' },
  { id: 'scores', name: 'Scores' },
  { id: 'weights', name: 'Weights' },
  { id: 'values', name: 'Values' },
  { id: 'write', name: 'Write' },
]);
/** Steps are counted from 1 (URL `step=`). */
export const clampStep = (s) => (Number.isInteger(s) ? clamp(s, 1, INSIDE_STEPS.length) : 1);

/** At most this many key rows are drawn; beyond, the keys with the most weight (and the one picked). */
export const MAX_KEY_ROWS = 14;

const f2 = (x) => (x === -Infinity ? '−∞' : x.toFixed(2));
const f3 = (x) => (x === -Infinity ? '−∞' : x.toFixed(3));
const f4 = (x) => x.toFixed(4);
const signed = (x, d = 3) => (x < 0 ? `−${(-x).toFixed(d)}` : x.toFixed(d));

// ---- the numbers ----------------------------------------------------------------------------------

/** Row i of a T x n matrix (a view, not a copy). */
const rowOf = (m, i, n) => m.subarray(i * n, (i + 1) * n);

/** The key a step points at by default: the one the query gives the most weight (ties: the first). */
export function strongestInsideKey(inside, i) {
  let best = 0;
  for (let j = 1; j <= i; j++) if (inside.attention[i * inside.T + j] > inside.attention[i * inside.T + best]) best = j;
  return best;
}

/**
 * The key rows drawn for query i: every token 0..i when they fit in `max` rows, else the max - 1 with
 * the most weight plus the picked key, in text order. `hidden`: how many earlier tokens are left out.
 */
export function shownKeys(inside, i, key, max = MAX_KEY_ROWS) {
  const all = Array.from({ length: i + 1 }, (_, j) => j);
  if (all.length <= max) return { keys: all, hidden: 0 };
  const T = inside.T;
  const byWeight = [...all].sort((a, b) => inside.attention[i * T + b] - inside.attention[i * T + a] || a - b);
  const keep = new Set(byWeight.slice(0, max - 1));
  // the picked key, or (when it is among them already, or none is picked) the next strongest
  keep.add(Number.isInteger(key) && key <= i && !keep.has(key) ? key : byWeight[max - 1]);
  return { keys: [...keep].sort((a, b) => a - b), hidden: i + 1 - keep.size };
}

/** q_i . k_j in float64 from the float32 vectors, and its d_head products. */
export function dotProducts(inside, i, j) {
  const HS = inside.headSize;
  const products = new Float64Array(HS);
  let dot = 0;
  for (let d = 0; d < HS; d++) {
    products[d] = inside.q[i * HS + d] * inside.k[j * HS + d];
    dot += products[d];
  }
  return { products, dot };
}

/** ||out_i||: the size of the head's write at token i (float64 sum of the float32 entries). */
export function writeNorm(inside, i) {
  let s = 0;
  for (let c = 0; c < inside.nEmbd; c++) s += inside.out[i * inside.nEmbd + c] ** 2;
  return Math.sqrt(s);
}

/** One plain sentence per step, for query token i (and the picked key, for the scores step). */
export function insideSentence(inside, i, step, key = strongestInsideKey(inside, i)) {
  const { T, headSize: HS, nEmbd } = inside;
  const tok = quoteToken(inside.tokens[i].text);
  const later = T - 1 - i;
  const sq = Math.sqrt(HS);
  switch (clampStep(step)) {
    case 1:
      return `${tok} reads its input, the ${nEmbd} numbers of the residual stream after ${inside.norm ?? 'layer norm'}, through this head's query weights W_Q: the result is its query q, ${HS} numbers that say what it looks for${inside.rotary ? ', turned by an angle that grows with its position (rotary positions: q · k then depends on how far apart two tokens are)' : ''}.`;
    case 2:
      return `Every token up to ${tok} also gets a key k through W_K${inside.rotary ? ', turned by its own position' : ''}, ${HS} numbers that say what it offers; ${later === 0 ? 'no token comes after it' : `the ${later} later token${later === 1 ? ' is' : 's are'} masked, because ${tok} cannot see ${later === 1 ? 'it' : 'them'}`}.`;
    case 3: {
      const { dot } = dotProducts(inside, i, key);
      return `A key's score is q · k, the sum of the ${HS} products of their numbers, divided by √${HS} = ${sq.toFixed(2)}: for ${quoteToken(inside.tokens[key].text)} that is ${signed(dot, 2)} ÷ ${sq.toFixed(2)} = ${signed(inside.scores[i * T + key])}.`;
    }
    case 4: {
      const top = strongestInsideKey(inside, i);
      return `The softmax turns the scores into weights that are positive and add up to 1, the larger scores getting much more, so ${tok} gives ${f2(inside.attention[i * T + top])} to ${top === i ? 'itself' : quoteToken(inside.tokens[top].text)}: this is row ${i} of the heatmap.`;
    }
    case 5:
      return `Each token's value v (${HS} numbers, through W_V) is scaled by its weight, and the scaled values add up to z, what the head reads out for ${tok}.`;
    default:
      return `z times this head's ${HS} rows of W_O gives the head's share of the update added to ${tok}: ${nEmbd} numbers of size ${writeNorm(inside, i).toFixed(2)}, its bar in "How the heads combine".`;
  }
}

// ---- colours --------------------------------------------------------------------------------------

// Signed numbers: blue for positive, orange for negative (Okabe-Ito, distinct for colour-blind
// readers), from the theme's faint colour at 0 to the full colour at the scale's largest size.
const SIGNED = { light: ['#0072B2', '#D55E00'], dark: ['#56B4E9', '#E69F00'] };
const lutCache = new Map();
function hexRgb(c) {
  const m = /^#([0-9a-f]{6})$/i.exec(String(c).trim());
  if (m) return [0, 2, 4].map((k) => parseInt(m[1].slice(k, k + 2), 16));
  const r = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(c);
  return r ? [+r[1], +r[2], +r[3]] : [200, 200, 200];
}
function signedLut(theme) {
  const key = `${theme.dark}|${theme.faint}`;
  let lut = lutCache.get(key);
  if (!lut) {
    const zero = hexRgb(theme.faint);
    lut = SIGNED[theme.dark ? 'dark' : 'light'].map((end) => {
      const e = hexRgb(end);
      return Array.from({ length: 33 }, (_, s) => `rgb(${zero.map((z, c) => Math.round(z + ((e[c] - z) * s) / 32)).join(',')})`);
    });
    lutCache.set(key, lut);
  }
  return lut;
}
/** Colour of a signed number on a scale whose largest size is `max` (linear in the size). */
export function signedColour(theme, v, max) {
  const [pos, neg] = signedLut(theme);
  const s = max > 0 ? Math.round(clamp(Math.abs(v) / max, 0, 1) * 32) : 0;
  return v < 0 ? neg[s] : pos[s];
}
const maxAbs = (...arrays) => arrays.reduce((m, a) => { for (const x of a) if (Math.abs(x) > m) m = Math.abs(x); return m; }, 0);

// ---- the scene ------------------------------------------------------------------------------------

/**
 * The scene of one step for the focused query token (state.token, default the last) of `inside`
 * (HeadscopeModel.inspectHead()'s data).
 *   step:    1..6 (INSIDE_STEPS)
 *   key:     the key the scores step shows the products of, and the rows highlight (default: the
 *            strongest)
 *   width:   the room the picture should fit (px): the cells shrink to 3 px at d_head 64 on a phone
 *   caption: the step's sentence in the picture too (exports; the page shows it as text)
 * layout: { i, key, keys, rows: Map(key -> y), rowH, cellW, cellH, x0, cursor: { x, y, n, w } | null }.
 * Cells carry data-tip (the tooltip's text); key rows data-key; the weights step's numbers data-weight
 * and the scores step's data-score, with the full float32 value.
 */
export function insideScene(inside, state, theme, { step = 1, key = null, width = 640, caption = false } = {}) {
  step = clampStep(step);
  const { T, headSize: HS, nEmbd, tokens } = inside;
  const i = focusToken(inside, state);
  const k0 = Number.isInteger(key) && key >= 0 && key <= i ? key : strongestInsideKey(inside, i);
  const { keys, hidden } = shownKeys(inside, i, k0);
  const fs = 11;
  const labels = tokens.map((t) => tokenLabel(t.text, 14));
  const later = Array.from({ length: Math.min(2, T - 1 - i) }, (_, n) => labels[i + 1 + n]);
  const rowLabels = {
    1: [`x ${labels[i]}`, `q ${labels[i]}`],
    2: [`q ${labels[i]}`, ...keys.map((j) => labels[j]), ...later],
    3: [`q ${labels[i]}`, `q × k ${labels[k0]}`, ...keys.map((j) => labels[j]), ...later],
    4: [...keys.map((j) => labels[j]), ...later, `row ${i}`],
    5: [...keys.map((j) => `${f2(inside.attention[i * T + j])} × ${labels[j]}`), `z = Σ ${labels[i]}`],
    6: [`z ${labels[i]}`, 'write'],
  }[step];
  // bold labels are about 8% wider than textWidth's estimate
  const labelW = Math.min(170, Math.max(44, ...rowLabels.map((t) => 1.08 * textWidth(t, fs)))) + 10;
  const x0 = 8 + labelW;
  // the columns right of the cells, per step
  // (narrow: the scores step drops its q · k column, which the picked key's sum line still gives)
  const fullExtra = { 1: 0, 2: 0, 3: 124, 4: 0, 5: 56, 6: 0 }[step];
  const narrow = step === 3 && Math.min(width, 900) - x0 - fullExtra - 16 < 4 * HS;
  const extraW = narrow ? 64 : fullExtra;
  const room = Math.max(3 * HS, Math.min(width, 900) - x0 - extraW - 16);
  const cellW = clamp(Math.floor(room / HS), 3, 18);
  const scoreX = narrow ? 56 : 116; // the ÷ sqrt(d_head) column's right edge, after the cells
  const cellH = clamp(cellW, 9, 16);
  const rowH = cellH + 6;
  const blockW = HS * cellW;
  const items = [];
  // the room given, or more where even 3 px cells do not fit it (the picture then shrinks to fit)
  // as wide as what the step draws, within the room given; wider where even 3 px cells do not fit
  // the room (the page then shrinks the picture to fit)
  const needed = Math.ceil(x0 + Math.max(blockW, step === 1 ? 150 : 0) + extraW + 16);
  const barW = clamp(width - x0 - 170, 80, 220);
  const stripW = Math.min(width - x0 - 16, Math.max(120, T * 12));
  const natural = step === 4 ? Math.ceil(x0 + Math.max(74 + barW + 56, stripW + 16)) : needed;
  const sceneW = Math.max(320, Math.min(Math.round(width), natural), needed);
  const title = `Layer ${inside.layer}, head ${inside.head}, token ${i} ${quoteToken(tokens[i].text)} · step ${step} of 6: ${INSIDE_STEPS[step - 1].name}`;
  let y = 12;
  for (const line of wrap(title, 13, sceneW - 16)) {
    items.push({ type: 'text', x: 8, y, text: line, size: 13, weight: 'bold', fill: theme.fg });
    y += 18;
  }
  if (caption) {
    for (const line of wrap(insideSentence(inside, i, step, k0), 11, sceneW - 16)) {
      items.push({ type: 'text', x: 8, y, text: line, size: 11, fill: theme.muted });
      y += 15;
    }
    y += 4;
  }
  const rows = new Map();
  let cursor = null;
  const tipCells = (vec, n, x, yy, w, h, max, tip) => {
    for (let d = 0; d < n; d++) items.push({ type: 'rect', x: x + d * w, y: yy, w: Math.max(1, w - (w >= 5 ? 1 : 0)), h, fill: signedColour(theme, vec[d], max), data: { tip: tip(d) } });
  };
  const label = (text, yy, bold, fill = theme.fg) => items.push({ type: 'text', x: x0 - 6, y: yy + cellH / 2, text, size: fs, fill, anchor: 'end', weight: bold ? 'bold' : undefined });
  const rowBand = (j, yy) => {
    // the picked key's row is highlighted; every key row is a pointer target (data-key)
    items.push({ type: 'rect', x: 4, y: yy - 3, w: sceneW - 8, h: rowH, fill: j === k0 ? theme.faint : 'none', rx: 3, data: { key: j } });
  };
  const legend = (yy, max, what) => {
    const n = 9;
    for (let s = 0; s < n; s++) {
      const v = ((s - (n - 1) / 2) / ((n - 1) / 2)) * max;
      items.push({ type: 'rect', x: x0 + s * 12, y: yy, w: 11, h: 9, fill: signedColour(theme, v, max) });
    }
    items.push({ type: 'text', x: x0 - 4, y: yy + 4.5, text: signed(-max, 2), size: 9, fill: theme.muted, anchor: 'end' });
    items.push({ type: 'text', x: x0 + n * 12 + 4, y: yy + 4.5, text: `${signed(max, 2)} ${what}`, size: 9, fill: theme.muted });
    return yy + 18;
  };
  const laterNote = (yy) => {
    const later = T - 1 - i;
    if (later <= 0) return yy;
    const shown = Math.min(2, later);
    for (let j = i + 1; j <= i + shown; j++) {
      label(labels[j], yy, false, theme.muted);
      items.push({ type: 'rect', x: x0, y: yy, w: blockW, h: cellH, fill: theme.faint });
      items.push({ type: 'text', x: x0 + blockW / 2, y: yy + cellH / 2, text: 'masked: a later token', size: 9, fill: theme.muted, anchor: 'middle' });
      yy += rowH;
    }
    if (later > shown) {
      items.push({ type: 'text', x: x0, y: yy + 5, text: `and ${later - shown} more later token${later - shown === 1 ? '' : 's'}, masked`, size: 10, fill: theme.muted });
      yy += 16;
    }
    return yy;
  };
  const hiddenNote = (yy) => {
    if (!hidden) return yy;
    items.push({ type: 'text', x: x0, y: yy + 5, text: `${keys.length} of the ${i + 1} tokens it can see (the most weight); ${hidden} more not drawn`, size: 10, fill: theme.muted });
    return yy + 16;
  };
  const qRow = rowOf(inside.q, i, HS);
  const qkMax = maxAbs(qRow, ...keys.map((j) => rowOf(inside.k, j, HS)));
  // a line of column titles: [x, text, anchor?] (one text item each: SVG collapses runs of spaces)
  const header = (yy, columns) => {
    for (const [x, text, anchor] of columns) items.push({ type: 'text', x, y: yy + 5, text, size: 10, fill: theme.muted, anchor });
    return yy + 16;
  };

  if (step === 1) {
    const boxW = Math.max(blockW, 150);
    label(`x ${labels[i]}`, y, true);
    items.push({ type: 'rect', x: x0, y, w: boxW, h: cellH, fill: theme.faint, stroke: theme.muted, strokeWidth: 1, rx: 2 });
    items.push({ type: 'text', x: x0 + boxW / 2, y: y + cellH / 2, text: `input: ${nEmbd} numbers`, size: 10, fill: theme.fg, anchor: 'middle' });
    y += rowH + 4;
    items.push({ type: 'text', x: x0, y: y + 6, text: `↓ × W_Q of this head (${nEmbd} × ${HS})`, size: 11, fill: theme.fg });
    y += 22;
    label(`q ${labels[i]}`, y, true);
    const qMax = maxAbs(qRow);
    tipCells(qRow, HS, x0, y, cellW, cellH, qMax, (d) => `q[${d}] of ${quoteToken(tokens[i].text)} = ${signed(qRow[d], 4)}`);
    cursor = { x: x0, y, n: HS, w: cellW, tip: (d) => `q[${d}] = ${signed(qRow[d], 4)}` };
    y += rowH + 6;
    y = legend(y, qMax, 'query numbers');
  } else if (step === 2 || step === 3) {
    label(`q ${labels[i]}`, y, true);
    tipCells(qRow, HS, x0, y, cellW, cellH, qkMax, (d) => `q[${d}] = ${signed(qRow[d], 4)}`);
    if (step === 2) cursor = null;
    y += rowH;
    if (step === 3) {
      // the products for the picked key, their sum, and the scaling
      const { products, dot } = dotProducts(inside, i, k0);
      const kRow = rowOf(inside.k, k0, HS);
      const pMax = maxAbs(products);
      label(`q × k ${labels[k0]}`, y, true);
      tipCells(products, HS, x0, y, cellW, cellH, pMax, (d) => `q[${d}] × k[${d}] = ${signed(qRow[d])} × ${signed(kRow[d])} = ${signed(products[d], 4)}`);
      cursor = { x: x0, y, n: HS, w: cellW, tip: (d) => `q[${d}] × k[${d}] of ${quoteToken(tokens[k0].text)} = ${signed(qRow[d])} × ${signed(kRow[d])} = ${signed(products[d], 4)}` };
      y += rowH;
      items.push({ type: 'text', x: x0, y: y + 5, text: `sum q · k = ${signed(dot, 2)}, ÷ √${HS} = ${signed(inside.scores[i * T + k0])}`, size: 11, fill: theme.fg, weight: 'bold' });
      y += 22;
      y = header(y, [[x0, 'keys k'], ...(narrow ? [] : [[x0 + blockW + 56, 'q · k', 'end']]), [x0 + blockW + scoreX, `÷ √${HS}`, 'end']]);
    } else {
      y += 4;
      y = header(y, [[x0, 'keys k (point at one to pick it)']]);
    }
    for (const j of keys) {
      rowBand(j, y);
      rows.set(j, y);
      label(labels[j], y, j === k0);
      const kRow = rowOf(inside.k, j, HS);
      tipCells(kRow, HS, x0, y, cellW, cellH, qkMax, (d) => `k[${d}] of ${quoteToken(tokens[j].text)} = ${signed(kRow[d], 4)}`);
      if (step === 2 && j === k0) cursor = { x: x0, y, n: HS, w: cellW, tip: (d) => `k[${d}] of ${quoteToken(tokens[j].text)} = ${signed(kRow[d], 4)}` };
      if (step === 3) {
        const s = inside.scores[i * T + j];
        if (!narrow) items.push({ type: 'text', x: x0 + blockW + 56, y: y + cellH / 2, text: signed(s * Math.sqrt(HS), 2), size: 11, fill: theme.muted, anchor: 'end' });
        items.push({ type: 'text', x: x0 + blockW + scoreX, y: y + cellH / 2, text: signed(s), size: 11, fill: theme.fg, anchor: 'end', weight: j === k0 ? 'bold' : undefined, data: { key: j, score: s } });
      }
      y += rowH;
    }
    y = hiddenNote(y);
    y = laterNote(y);
    y = legend(y + 6, qkMax, 'query and key numbers');
  } else if (step === 4) {
    // scores -> softmax -> weights: bars, the numbers, and the heatmap's row
    y = header(y, [[x0 + 44, 'score', 'end'], [x0 + 68, 'softmax → weight']]);
    for (const j of keys) {
      rowBand(j, y);
      rows.set(j, y);
      label(labels[j], y, j === k0);
      const s = inside.scores[i * T + j];
      const w = inside.attention[i * T + j];
      items.push({ type: 'text', x: x0 + 44, y: y + cellH / 2, text: signed(s), size: 11, fill: theme.muted, anchor: 'end', data: { key: j, score: s } });
      items.push({ type: 'text', x: x0 + 52, y: y + cellH / 2, text: '→', size: 11, fill: theme.muted });
      items.push({ type: 'rect', x: x0 + 68, y, w: barW, h: cellH, fill: theme.faint, rx: 2 });
      items.push({ type: 'rect', x: x0 + 68, y, w: Math.max(1, barW * w), h: cellH, fill: heat(theme, Math.max(0.06, w)), rx: 2, data: { tip: `weight on ${quoteToken(tokens[j].text)} = ${f4(w)} (score ${signed(s)})` } });
      items.push({ type: 'text', x: x0 + 74 + barW, y: y + cellH / 2, text: f4(w), size: 11, fill: theme.fg, weight: j === k0 ? 'bold' : undefined, data: { key: j, weight: w } });
      y += rowH;
    }
    y = hiddenNote(y);
    y = laterNote(y);
    // row i of the heatmap, in its colours: every key, masked ones faint
    y += 6;
    const c = stripW / T;
    label(`row ${i}`, y, false, theme.muted);
    items.push({ type: 'rect', x: x0, y, w: stripW, h: cellH, fill: theme.faint });
    for (let j = 0; j <= i; j++) items.push({ type: 'rect', x: x0 + j * c, y, w: c + (c > 2 ? -0.5 : 0.2), h: cellH, fill: heat(theme, inside.attention[i * T + j]), data: { tip: `${quoteToken(tokens[j].text)}: ${f4(inside.attention[i * T + j])}` } });
    y += cellH + 4;
    for (const line of wrap('the same weights in the heatmap\'s colours (√ scale); later tokens get 0', 9, sceneW - x0 - 8)) {
      items.push({ type: 'text', x: x0, y: y + 5, text: line, size: 9, fill: theme.muted });
      y += 12;
    }
    y += 6;
  } else if (step === 5) {
    // weight × value, per key; their sum is z
    const scaled = keys.map((j) => rowOf(inside.v, j, HS).map((x) => x * inside.attention[i * T + j]));
    const zRow = rowOf(inside.z, i, HS);
    const vMax = maxAbs(zRow, ...scaled);
    y = header(y, [[x0, 'weight × value v'], [x0 + blockW + 8, '‖v W_O‖']]);
    keys.forEach((j, r) => {
      rowBand(j, y);
      rows.set(j, y);
      const w = inside.attention[i * T + j];
      label(`${f2(w)} × ${labels[j]}`, y, j === k0);
      const vRow = rowOf(inside.v, j, HS);
      tipCells(scaled[r], HS, x0, y, cellW, cellH, vMax, (d) => `${f4(w)} × v[${d}] of ${quoteToken(tokens[j].text)} = ${f4(w)} × ${signed(vRow[d])} = ${signed(scaled[r][d], 4)}`);
      if (j === k0) cursor = { x: x0, y, n: HS, w: cellW, tip: (d) => `${f4(w)} × v[${d}] of ${quoteToken(tokens[j].text)} = ${signed(scaled[r][d], 4)}` };
      items.push({ type: 'text', x: x0 + blockW + 8, y: y + cellH / 2, text: inside.valueNorm[j].toFixed(2), size: 11, fill: theme.muted, data: { key: j, valueNorm: inside.valueNorm[j] } });
      y += rowH;
    });
    y = hiddenNote(y);
    items.push({ type: 'line', x1: x0, y1: y, x2: x0 + blockW, y2: y, stroke: theme.fg, width: 1 });
    y += 6;
    label(`z = Σ ${labels[i]}`, y, true);
    tipCells(zRow, HS, x0, y, cellW, cellH, vMax, (d) => `z[${d}] = ${signed(zRow[d], 4)}`);
    if (hidden) items.push({ type: 'text', x: x0 + blockW + 8, y: y + cellH / 2, text: `(all ${i + 1} tokens)`, size: 10, fill: theme.muted });
    y += rowH + 6;
    y = legend(y, vMax, 'value numbers');
  } else {
    // z × W_O^h: the head's write, nEmbd numbers in rows
    const zRow = rowOf(inside.z, i, HS);
    label(`z ${labels[i]}`, y, true);
    tipCells(zRow, HS, x0, y, cellW, cellH, maxAbs(zRow), (d) => `z[${d}] = ${signed(zRow[d], 4)}`);
    y += rowH + 4;
    items.push({ type: 'text', x: x0, y: y + 6, text: `↓ × this head's rows of W_O (${HS} × ${nEmbd})`, size: 11, fill: theme.fg });
    y += 22;
    const out = rowOf(inside.out, i, nEmbd);
    const oMax = maxAbs(out);
    // in rows of d_head numbers, as wide as z above (the rows are only a way to fold the vector)
    const oc = cellW;
    const perRow = HS;
    const ocH = clamp(Math.round(cellH * 0.7), 6, 11);
    label('write', y, true);
    for (let c = 0; c < nEmbd; c++) {
      const r = Math.floor(c / perRow);
      items.push({ type: 'rect', x: x0 + (c % perRow) * oc, y: y + r * (ocH + 1), w: Math.max(1, oc - (oc >= 5 ? 1 : 0)), h: ocH, fill: signedColour(theme, out[c], oMax), data: { tip: `write[${c}] = ${signed(out[c], 4)}` } });
    }
    cursor = { x: x0, y, n: nEmbd, w: oc, perRow, h: ocH + 1, tip: (c) => `write[${c}] = ${signed(out[c], 4)}` };
    y += Math.ceil(nEmbd / perRow) * (ocH + 1) + 8;
    for (const line of wrap(`size ‖z W_O‖ = ${writeNorm(inside, i).toFixed(2)}: this head's bar in "How the heads combine" (${nEmbd} numbers in rows of ${HS})`, 11, sceneW - x0 - 8)) {
      items.push({ type: 'text', x: x0, y: y + 6, text: line, size: 11, fill: theme.fg });
      y += 16;
    }
    y += 6;
    y = legend(y, oMax, 'numbers written');
  }
  return {
    scene: { width: sceneW, height: y + 6, background: theme.bg, font: theme.font, items },
    layout: { i, key: k0, keys, hidden, rows, rowH, cellW, cellH, x0, cursor, step },
  };
}

// ---- the view -------------------------------------------------------------------------------------

let viewCount = 0;
const reducedMotion = (win) => !!win?.matchMedia?.('(prefers-reduced-motion: reduce)').matches;

/**
 * The panel: step tabs, the step's sentence, the picture (SVG, with tooltips), Back and Next.
 * Keyboard: the tabs move with ← → Home End (and Back/Next are buttons); on the picture ↑ ↓ pick a
 * key, ← → move along the numbers of the highlighted vector (each is read out), PageUp/PageDown
 * step back and on. onStep(step) after the reader changes the step; onShowCombine (optional) adds a
 * link from the last step to "How the heads combine".
 */
export class InsideView {
  constructor(host, { tooltip, onStep, onAnnounce, onShowCombine } = {}) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.tooltip = tooltip;
    this.onStep = onStep;
    this.onAnnounce = onAnnounce;
    this.step = 1;
    this.key = null;
    this.dim = null;
    this.inside = null;
    const d = this.doc;
    const id = `hs-inside-${++viewCount}`;
    const root = el(d, 'div', 'hs-inside');
    const tabs = el(d, 'div', 'hs-inside-steps');
    tabs.setAttribute('role', 'tablist');
    tabs.setAttribute('aria-label', 'Steps inside the head');
    this.tabs = INSIDE_STEPS.map((s, n) => {
      const b = el(d, 'button', 'hs-inside-step');
      b.type = 'button';
      b.id = `${id}-tab-${n + 1}`;
      b.setAttribute('role', 'tab');
      b.setAttribute('aria-controls', `${id}-panel`);
      b.dataset.step = String(n + 1);
      b.append(el(d, 'span', 'hs-inside-step-n', String(n + 1)), el(d, 'span', 'hs-inside-step-name', s.name));
      b.addEventListener('click', () => this.setStep(n + 1, { focusTab: true }));
      tabs.appendChild(b);
      return b;
    });
    tabs.addEventListener('keydown', (e) => {
      const to = { ArrowLeft: this.step - 1, ArrowRight: this.step + 1, Home: 1, End: INSIDE_STEPS.length }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      this.setStep(clampStep(to), { focusTab: true });
    });
    this.sentence = el(d, 'p', 'hs-inside-sentence');
    this.sentence.id = `${id}-sentence`;
    const panel = el(d, 'div', 'hs-inside-figure');
    panel.id = `${id}-panel`;
    panel.setAttribute('role', 'tabpanel');
    panel.tabIndex = 0;
    panel.setAttribute('aria-describedby', this.sentence.id);
    this.panel = panel;
    this.figure = new SceneView(panel);
    this.panelWidth = new HostWidth(panel, () => this.#render());
    const nav = el(d, 'div', 'hs-inside-nav');
    this.back = el(d, 'button', 'hs-inside-back', '← Back');
    this.back.type = 'button';
    this.next = el(d, 'button', 'hs-inside-next', 'Next →');
    this.next.type = 'button';
    this.counter = el(d, 'span', 'hs-inside-counter');
    this.back.addEventListener('click', () => this.setStep(this.step - 1));
    this.next.addEventListener('click', () => this.setStep(this.step + 1));
    nav.append(this.back, this.counter, this.next);
    if (onShowCombine) {
      this.combineLink = el(d, 'button', 'hs-inside-combine', 'See how the heads combine ↓');
      this.combineLink.type = 'button';
      this.combineLink.addEventListener('click', () => onShowCombine());
      nav.appendChild(this.combineLink);
    }
    this.status = el(d, 'p', 'hs-inside-status');
    this.status.setAttribute('role', 'status');
    root.append(tabs, this.sentence, panel, nav, this.status);
    host.appendChild(root);
    this.root = root;
    panel.addEventListener('pointermove', (e) => this.#pointer(e));
    panel.addEventListener('pointerdown', (e) => this.#pointer(e));
    // a tap's tooltip stays until the next tap (a touch pointer leaves as soon as it lifts)
    panel.addEventListener('pointerleave', (e) => { if (e.pointerType !== 'touch') this.tooltip?.hide(); });
    panel.addEventListener('blur', () => { this.dim = null; this.tooltip?.hide(); this.#render(); });
    panel.addEventListener('keydown', (e) => this.#key(e));
  }

  /** Shows step `step` (1..6); focusTab moves the keyboard focus to its tab (tab-list keys, clicks). */
  setStep(step, { focusTab = false, silent = false } = {}) {
    step = clampStep(step);
    const changed = step !== this.step;
    this.step = step;
    this.dim = null;
    this.#render(changed);
    if (focusTab) this.tabs[step - 1].focus();
    if (changed && !silent) this.onStep?.(step);
  }

  /**
   * inside: inspectHead()'s data for the text on screen (or the last one, while the next loads:
   * then pass status), state: the page's state (token: the query token), theme.
   */
  update(inside, state, theme, { status = '' } = {}) {
    const focusChanged = this.inside && (focusToken(this.inside, this.state) !== (inside ? focusToken(inside, state) : -1)
      || this.inside.layer !== inside?.layer || this.inside.head !== inside?.head);
    if (focusChanged) this.key = null; // another query or head: its strongest key again
    this.inside = inside;
    this.state = state;
    this.theme = theme;
    if (this.status.textContent !== status) this.status.textContent = status;
    this.root.classList.toggle('hs-inside-busy', !!status);
    this.#render();
  }

  /** The scene as shown (for exports, with the sentence in the picture). */
  exportScene() {
    if (!this.inside) return null;
    return insideScene(this.inside, this.state, this.theme, { step: this.step, key: this.key, width: this.#width(), caption: true }).scene;
  }

  #width() {
    return Math.max(300, Math.min(900, this.panelWidth.width || 640));
  }

  #render(animate = false) {
    this.tabs.forEach((b, n) => {
      const on = n + 1 === this.step;
      b.setAttribute('aria-selected', on ? 'true' : 'false');
      b.tabIndex = on ? 0 : -1;
    });
    this.panel.setAttribute('aria-labelledby', this.tabs[this.step - 1].id);
    this.back.disabled = this.step <= 1;
    this.next.disabled = this.step >= INSIDE_STEPS.length;
    const counter = `Step ${this.step} of ${INSIDE_STEPS.length}`;
    if (this.counter.textContent !== counter) this.counter.textContent = counter;
    if (this.combineLink) this.combineLink.hidden = this.step !== INSIDE_STEPS.length;
    const inside = this.inside;
    if (!inside) {
      if (this.sentence.textContent !== '') this.sentence.textContent = '';
      return;
    }
    const i = focusToken(inside, this.state);
    const { scene, layout } = insideScene(inside, this.state, this.theme, { step: this.step, key: this.key, width: this.#width() });
    this.layout = layout;
    const text = insideSentence(inside, i, this.step, layout.key);
    if (this.sentence.textContent !== text) this.sentence.textContent = text;
    this.figure.show(scene, `Inside layer ${inside.layer}, head ${inside.head}, token ${i} '${tokenWords(inside.tokens[i].text)}': step ${this.step}, ${INSIDE_STEPS[this.step - 1].name}`);
    this.panel.dataset.step = String(this.step);
    this.panel.dataset.query = String(i);
    this.panel.dataset.key = String(layout.key);
    this.#cursor();
    if (animate && !reducedMotion(this.doc.defaultView)) {
      // a short fade and slide of the new step (none when the reader asks for reduced motion)
      this.panel.classList.remove('hs-inside-enter');
      void this.panel.offsetWidth; // restart the animation
      this.panel.classList.add('hs-inside-enter');
    }
  }

  // The keyboard cursor on one number of the highlighted vector: an outline and the tooltip.
  #cursor() {
    this.cursorEl?.remove();
    this.cursorEl = null;
    const c = this.layout?.cursor;
    if (!c || this.dim === null || !this.figure.svg) return null;
    const d = clamp(this.dim, 0, c.n - 1);
    this.dim = d;
    const per = c.perRow ?? c.n;
    const x = c.x + (d % per) * c.w;
    const y = c.y + Math.floor(d / per) * (c.h ?? 0);
    const r = this.doc.createElementNS('http://www.w3.org/2000/svg', 'rect');
    for (const [k, v] of Object.entries({ x, y, width: c.w, height: c.h ? c.h - 1 : this.layout.cellH, fill: 'none', stroke: this.theme.fg, 'stroke-width': 2, 'pointer-events': 'none' })) r.setAttribute(k, String(v));
    this.figure.svg.appendChild(r);
    this.cursorEl = r;
    const text = c.tip(d);
    const box = this.figure.svg.getBoundingClientRect();
    const s = box.width / this.figure.scene.width;
    this.tooltip?.show(text, box.left + (x + c.w) * s, box.top + y * s);
    return text;
  }

  #pointer(e) {
    if (!this.figure.svg) return;
    const target = e.target?.closest?.('[data-tip], [data-key]');
    const tip = e.target?.closest?.('[data-tip]')?.dataset.tip;
    if (tip) this.tooltip?.show(tip, e.clientX, e.clientY); else this.tooltip?.hide();
    // the key under the pointer: its products (scores step) and its row highlighted
    const p = this.figure.toScene(e);
    if (!p || !this.layout || ![2, 3, 4, 5].includes(this.step)) return;
    let key = null;
    for (const [j, y] of this.layout.rows) if (p.y >= y - 3 && p.y < y - 3 + this.layout.rowH) key = j;
    if (key === null && target?.dataset.key !== undefined) key = Number(target.dataset.key);
    if (key !== null && key !== this.layout.key) {
      this.key = key;
      this.#render();
    }
  }

  #key(e) {
    if (!this.layout) return;
    const { keys } = this.layout;
    const at = keys.indexOf(this.layout.key);
    let handled = true;
    switch (e.key) {
      case 'ArrowUp': this.key = keys[Math.max(0, at - 1)]; break;
      case 'ArrowDown': this.key = keys[Math.min(keys.length - 1, at + 1)]; break;
      case 'ArrowLeft': this.dim = this.dim === null ? 0 : this.dim - 1; break;
      case 'ArrowRight': this.dim = this.dim === null ? 0 : this.dim + 1; break;
      case 'Home': this.dim = 0; break;
      case 'End': this.dim = (this.layout.cursor?.n ?? 1) - 1; break;
      case 'PageUp': this.setStep(this.step - 1); return e.preventDefault();
      case 'PageDown': this.setStep(this.step + 1); return e.preventDefault();
      case 'Escape': this.dim = null; this.tooltip?.hide(); break;
      default: handled = false;
    }
    if (!handled) return;
    e.preventDefault();
    this.#render();
    // read out what the keys reached: the number under the cursor, or the picked key's row
    const c = this.layout.cursor;
    let said;
    if (this.dim !== null && c) said = c.tip(clamp(this.dim, 0, c.n - 1));
    else if (e.key === 'ArrowUp' || e.key === 'ArrowDown') said = this.#keySentence();
    if (said) this.onAnnounce?.(said);
  }

  #keySentence() {
    const { inside } = this;
    const i = this.layout.i;
    const j = this.layout.key;
    const T = inside.T;
    const who = quoteToken(inside.tokens[j].text);
    return `key ${who}: score ${signed(inside.scores[i * T + j])}, weight ${f4(inside.attention[i * T + j])}, value size ${inside.valueNorm[j].toFixed(2)}`;
  }
}
