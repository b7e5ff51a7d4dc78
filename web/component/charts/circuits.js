// "Heads working together" (the demo's circuits panel): a model's circuits (model.circuits(), the
// CLI's `headscope circuits`; defined in cpp/include/headscope/explain.hpp) as a chart scene (scene.js
// display list), and what one score split (model.explainScore()) says about the heads upstream of a
// head. Pure, so they are tested in Node (tests/js/unit/circuits-charts.test.js).
//   KINDS              Q, K and V composition: their names, colours and dash patterns
//   compositionEdges   every edge (head A -> head B, A in an earlier layer) of the chosen kinds at or above a threshold
//   defaultThreshold   where the slider starts: twice the largest baseline (random matrices)
//   circuitsScene      the layer x head grid, each head's copying score as its badge, the edges drawn
//   upstreamHeadSums      a score split's table summed per upstream head: rows (query side) and columns (key side)
import { signedColour, parseRgb, inkOn } from '../runtime/theme.js';
import { textWidth } from '../views/scene.js';
import { scoreText } from './patching.js';
import { headSums } from './explain.js';

/**
 * The three kinds of composition (Elhage et al. 2021), each with its own colour (Okabe-Ito, away
 * from the blue and orange of the copying badges) and its own dash pattern, so that they stay apart
 * without colour: Q solid, K dashed, V dotted.
 */
export const KINDS = Object.freeze([
  Object.freeze({ kind: 'q', name: 'Q', reads: 'query', light: '#CC79A7', dark: '#CC79A7', dash: [] }),
  Object.freeze({ kind: 'k', name: 'K', reads: 'key', light: '#007A5A', dark: '#2FC79A', dash: [7, 4] }),
  Object.freeze({ kind: 'v', name: 'V', reads: 'value', light: '#5b4a00', dark: '#F0E442', dash: [0.1, 4.5] }),
]);
/** The copying badges' colour scale: a score of ±1 is this far along it (paler than full, so the edges stay readable). */
export const BADGE_SCALE = 1.6;
const KIND = Object.fromEntries(KINDS.map((k) => [k.kind, k]));

/** A kind's line colour in `theme`. */
export const kindColour = (theme, kind) => (theme.dark ? KIND[kind].dark : KIND[kind].light);

/** 'L1H2' */
export const headName = (l, h) => `L${l}H${h}`;

/**
 * Every edge from head a to head b (layer(a) < layer(b)) of the kinds in `kinds` whose score is at
 * least `threshold`, strongest first: [{ kind, from: [l, h], to: [l, h], score }].
 */
export function compositionEdges(circuits, { kinds = ['q', 'k', 'v'], threshold = 0 } = {}) {
  const { nLayer: L, nHead: H } = circuits;
  const N = L * H;
  const edges = [];
  for (const kind of kinds) {
    const m = circuits.composition[kind];
    if (!m) continue;
    for (let a = 0; a < N; a++)
      for (let b = 0; b < N; b++) {
        const v = m[a * N + b];
        if (!(v >= threshold) || Math.floor(a / H) >= Math.floor(b / H)) continue; // NaN: not a pair
        edges.push({ kind, from: [Math.floor(a / H), a % H], to: [Math.floor(b / H), b % H], score: v });
      }
  }
  return edges.sort((x, y) => y.score - x.score);
}

/** The largest composition score of any kind (the slider's end). */
export function maxComposition(circuits) {
  let m = 0;
  for (const k of ['q', 'k', 'v']) for (const v of circuits.composition[k] ?? []) if (v > m) m = v;
  return m;
}

/** Where the threshold starts: twice the largest baseline, rounded up to 0.01 (below the largest score). */
export function defaultThreshold(circuits) {
  const b = Math.max(circuits.baseline.q, circuits.baseline.k, circuits.baseline.v);
  const t = Math.ceil(200 * b) / 100;
  const max = maxComposition(circuits);
  return max > 0 && t > max ? Math.floor(100 * max) / 100 : t;
}

/**
 * The layer x head grid (layers down, heads across, as the page's grid), each head a badge with its
 * copying score (blue above 0: it copies what it attends to; orange below), and the composition
 * edges at or above `threshold` of the `kinds` shown: a line from the bottom of head a to the top of
 * head b, in the kind's colour and dash pattern, thicker for a larger score, side by side when a
 * pair composes in several ways. At most `maxEdges` are drawn (the strongest). The edges of the
 * `selected` head are drawn on top, the others fainter. Above the grid: the kinds' legend and the
 * score scale with the threshold and the baseline (random matrices) marked.
 * Each head has a focusable hit target (class hs-circuit-node; { layer, head } data; the selected
 * head, else the first, in the tab order).
 * Returns { scene, edges (drawn), above (edges at or above the threshold), max, node(l, h) -> box }.
 */
export function circuitsScene(
  circuits,
  theme,
  { width = 420, kinds = ['q', 'k', 'v'], threshold = 0.16, selected = null, maxEdges = 80 } = {},
) {
  const { nLayer: L, nHead: H } = circuits;
  const items = [];
  const left = 30;
  const c = Math.max(22, Math.min(64, Math.floor((width - left - 8) / H)));
  const nodeW = Math.max(18, Math.min(46, c - 8));
  const nodeH = 20;
  const pitch = L <= 6 ? 66 : L <= 12 ? 54 : 44;
  const max = maxComposition(circuits);
  const sceneWidth = Math.max(width, left + H * c + 8);

  items.push({
    type: 'text',
    x: 4,
    y: 12,
    text: sceneWidth >= 400 ? 'Composition from the weights, and copying' : 'Composition and copying',
    size: 12,
    weight: 'bold',
    fill: theme.fg,
  });
  // the kinds' legend: a short line of each style
  let x = 4;
  let y = 32;
  for (const k of KINDS) {
    const on = kinds.includes(k.kind);
    const label = `${k.name}: ${k.reads} reads`;
    const w = 26 + 6 + textWidth(label, 11) + 14;
    if (x + w > sceneWidth && x > 4) {
      x = 4;
      y += 18;
    }
    items.push({
      type: 'line',
      x1: x,
      y1: y,
      x2: x + 26,
      y2: y,
      stroke: kindColour(theme, k.kind),
      width: 2.5,
      dash: k.dash,
      opacity: on ? 1 : 0.3,
      data: { legend: k.kind },
    });
    items.push({ type: 'text', x: x + 32, y, text: label, size: 11, fill: on ? theme.fg : theme.muted });
    x += w;
  }
  // the score scale, 0 to the largest score: the baseline and the threshold on it (its label above)
  y += 32;
  const axisL = 4 + textWidth('score 0', 10) + 6;
  const maxLabel = scoreText(max);
  const axisR = Math.min(sceneWidth - 8 - textWidth(maxLabel, 10) - 4, axisL + 320);
  const at = (v) => axisL + ((axisR - axisL) * Math.max(0, Math.min(max, v))) / (max || 1);
  items.push({ type: 'text', x: 4, y, text: 'score 0', size: 10, fill: theme.muted });
  items.push({ type: 'rect', x: axisL, y: y - 2, w: axisR - axisL, h: 4, fill: theme.faint });
  items.push({ type: 'rect', x: at(threshold), y: y - 2, w: axisR - at(threshold), h: 4, fill: theme.muted });
  items.push({ type: 'text', x: axisR + 4, y, text: maxLabel, size: 10, fill: theme.muted });
  const base = Math.max(circuits.baseline.q, circuits.baseline.k, circuits.baseline.v);
  const bx = at(base);
  items.push({
    type: 'line',
    x1: bx,
    y1: y - 7,
    x2: bx,
    y2: y + 7,
    stroke: theme.fg,
    width: 1.5,
    data: { baseline: base },
  });
  items.push({
    type: 'text',
    x: bx,
    y: y + 14,
    text: `random ${scoreText(base)}`,
    size: 10,
    fill: theme.muted,
    anchor: 'middle',
  });
  const tx = at(threshold);
  items.push({
    type: 'rect',
    x: tx - 2,
    y: y - 8,
    w: 4,
    h: 16,
    fill: theme.accent,
    data: { threshold },
  });
  const thrLabel = `threshold ${scoreText(threshold)}`;
  items.push({
    type: 'text',
    x: Math.min(Math.max(tx, axisL + textWidth(thrLabel, 10) / 2), axisR - textWidth(thrLabel, 10) / 2),
    y: y - 15,
    text: thrLabel,
    size: 10,
    fill: theme.fg,
    anchor: 'middle',
  });

  // the grid
  const top = y + 46;
  const node = (l, h) => ({
    x: left + h * c + (c - nodeW) / 2,
    y: top + l * pitch,
    w: nodeW,
    h: nodeH,
  });
  for (let h = 0; h < H; h++)
    if (c >= 26 || h % 2 === 0)
      items.push({
        type: 'text',
        x: left + h * c + c / 2,
        y: top - 12,
        text: `H${h}`,
        size: 10,
        fill: theme.muted,
        anchor: 'middle',
      });
  for (let l = 0; l < L; l++)
    items.push({
      type: 'text',
      x: left - 6,
      y: top + l * pitch + nodeH / 2,
      text: `L${l}`,
      size: 10,
      fill: theme.muted,
      anchor: 'end',
    });

  // the edges: weaker first, the selected head's last (on top)
  const above = compositionEdges(circuits, { kinds, threshold });
  const drawn = above.slice(0, Math.max(0, maxEdges));
  const [sl, sh] = selected ?? [-1, -1];
  const touches = (e) => (e.from[0] === sl && e.from[1] === sh) || (e.to[0] === sl && e.to[1] === sh);
  const order = [...drawn].reverse().sort((a, b) => Number(touches(a)) - Number(touches(b)));
  const offset = { q: -1, k: 0, v: 1 };
  const degree = new Map(); // 'l,h' -> { in, out }
  const deg = (l, h) => {
    const key = `${l},${h}`;
    if (!degree.has(key)) degree.set(key, { in: 0, out: 0 });
    return degree.get(key);
  };
  for (const e of drawn) {
    deg(...e.from).out++;
    deg(...e.to).in++;
  }
  for (const e of order) {
    const a = node(...e.from);
    const b = node(...e.to);
    const dx = offset[e.kind] * Math.min(6, nodeW / 5);
    const on = sl < 0 || touches(e);
    items.push({
      type: 'line',
      x1: a.x + a.w / 2 + dx,
      y1: a.y + a.h,
      x2: b.x + b.w / 2 + dx,
      y2: b.y,
      stroke: kindColour(theme, e.kind),
      width: 1 + 2.5 * Math.min(1, e.score / (max || 1)),
      dash: KIND[e.kind].dash,
      opacity: on ? 0.95 : 0.4,
      data: { kind: e.kind, from: headName(...e.from), to: headName(...e.to), score: e.score },
    });
  }

  // the heads: badges with their copying scores, the selected one outlined
  const digits = nodeW >= 34 ? 2 : 1;
  const focusable = sl >= 0 && sl < L && sh >= 0 && sh < H ? [sl, sh] : [0, 0];
  for (let l = 0; l < L; l++)
    for (let h = 0; h < H; h++) {
      const box = node(l, h);
      const v = circuits.copying[l * H + h];
      const fill = signedColour(theme, v, BADGE_SCALE);
      const on = l === sl && h === sh;
      if (on)
        items.push({
          type: 'rect',
          x: box.x - 3,
          y: box.y - 3,
          w: box.w + 6,
          h: box.h + 6,
          fill: 'none',
          stroke: theme.accent,
          strokeWidth: 2.5,
        });
      items.push({ type: 'rect', ...box, fill, stroke: theme.muted, strokeWidth: 0.75, data: { layer: l, head: h } });
      items.push({
        type: 'text',
        x: box.x + box.w / 2,
        y: box.y + box.h / 2,
        text: scoreText(v, digits),
        size: nodeW >= 30 ? 10 : 9,
        fill: inkOn(...parseRgb(fill)),
        anchor: 'middle',
        data: { badge: 1, layer: l, head: h, copying: v },
      });
      const d = degree.get(`${l},${h}`) ?? { in: 0, out: 0 };
      items.push({
        type: 'rect',
        x: box.x - 3,
        y: box.y - 3,
        w: box.w + 6,
        h: box.h + 6,
        hit: true,
        cls: 'hs-circuit-node',
        data: { layer: l, head: h },
        attrs: {
          tabindex: l === focusable[0] && h === focusable[1] ? 0 : -1,
          role: 'button',
          'aria-pressed': on ? 'true' : 'false',
          'aria-label': `Layer ${l} head ${h}: copying score ${scoreText(v)}${v > 0 ? ' (copies)' : ''}; ${d.in} edge${d.in === 1 ? '' : 's'} in, ${d.out} out`,
        },
      });
    }
  const bottom = top + (L - 1) * pitch + nodeH + 10;
  return {
    scene: { width: sceneWidth, height: bottom, background: theme.bg, font: theme.font, items },
    edges: drawn,
    above: above.length,
    max,
    node,
  };
}

/** A sentence about the drawing (the chart's accessible name). */
export function circuitsLabel(circuits, { kinds, threshold, edges, above }) {
  const names = KINDS.filter((k) => kinds.includes(k.kind)).map((k) => k.name);
  const strongest = edges[0]
    ? ` Strongest: ${headName(...edges[0].from)} to ${headName(...edges[0].to)}, ${KIND[edges[0].kind].name} composition ${scoreText(edges[0].score)}.`
    : '';
  const shown = edges.length < above ? ` (the strongest ${edges.length} drawn)` : '';
  return `Heads of ${circuits.nLayer} layers by ${circuits.nHead}, each with its copying score; ${above} ${names.length ? names.join(', ') : 'no'} composition edge${above === 1 ? '' : 's'} at or above ${scoreText(threshold)}${shown}.${strongest}`;
}

/**
 * A score split (explainScore()) summed per upstream head (explain.js's headSums of its score
 * table), with `total`: the score, which each side's parts sum to.
 */
export function upstreamHeadSums(split) {
  return { ...headSums(split.components, split.table), total: split.score };
}
