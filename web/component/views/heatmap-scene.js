// The heatmap's pure scene builder (tested in Node): one head's attention, rows the query tokens,
// columns the key tokens they attend to. HeatmapView (heatmap.js) shows it; exports draw it whole.
import { textWidth, wrap } from './scene.js';
import { heat, tokenLabel } from '../runtime/theme.js';
import { focusToken, clamp } from '../model/describe.js';
import { shownWeights, weightAt } from '../model/weighting.js';

/** The cell size (px) that fits a T x T heatmap in about 1100 px: 26 for short texts, 1 at T = 1024. */
export function fitCell(T) {
  return T <= 16 ? 26 : T <= 32 ? 18 : T <= 64 ? 13 : T <= 100 ? 11 : T <= 128 ? 9 : Math.max(1, Math.floor(1100 / T));
}

/**
 * Heatmap of one head: rows are query tokens, columns are the key tokens they attend to.
 *   image: leave the cells (and the background) out; the page paints them on a canvas underneath,
 *          which is much cheaper than T*T SVG rectangles on every keystroke. Exports use the cells.
 *   cell:  the cell size in px (default fitCell(T)); a view zooms by passing a larger one.
 *   rows:  [from, to): only these query rows (and keys 0..to-1), for exporting the zoomed part.
 *   maxWidth: the panel's width, when known: the subtitle wraps to it (on a phone one line of it
 *          is wider than the panel, and the browser would shrink the whole picture to fit).
 * Token labels are thinned to what fits (every step-th, and always the focused token).
 * layout: { x0, y0, cell, T, from, to, width, height, step, reserve } maps scene points to cells;
 * reserve is the width around the grid (labels and margins): width = reserve + to * cell unless the
 * title or the 320 px minimum is wider.
 */
export function heatmapScene(
  result,
  state,
  theme,
  { image = false, cell = fitCell(result.T), rows = null, maxWidth = 0 } = {},
) {
  const { T, tokens } = result;
  const { layer, head } = state;
  const q0 = focusToken(result, state);
  // the weights, or weight × value size; a result without maps paints the engine's tiles of the
  // weights (heatmap-bitmap.js), and its exported cells are the rows pulled (exportOptions)
  const shown = shownWeights(result, state, layer, head);
  const src = image && !result.attentionAll ? { ...shown, weighted: false } : shown;
  const from = rows ? clamp(rows[0], 0, T) : 0;
  const to = rows ? clamp(rows[1], from, T) : T;
  const fs = cell >= 18 ? 12 : cell >= 13 ? 10 : 9;
  const step = Math.max(1, Math.ceil((fs + 1) / cell)); // a label every `step` cells: no overlaps
  const labelled = (i) => i % step === 0 || i === q0;
  const labels = tokens.map((t, i) => (labelled(i) ? tokenLabel(t.text, 14) : ''));
  const labelW = Math.max(30, ...labels.slice(0, to).map((s) => textWidth(s, fs))) + 8;
  const angle = -55;
  const sin = Math.sin((-angle * Math.PI) / 180);
  const cos = Math.cos((-angle * Math.PI) / 180);
  const what = src.weighted ? 'where what the head moves comes from' : 'how much it looks at each earlier token';
  const subtitle =
    from > 0 || to < T
      ? `tokens ${from}–${to - 1} of ${T}; row = a token, its row shows ${what}`
      : `row = a token; its row shows ${what} (columns)`;
  const subtitleLines = maxWidth > 0 ? wrap(subtitle, 11, Math.max(200, maxWidth - 24)) : [subtitle];
  const titleH = 40 + 14 * (subtitleLines.length - 1);
  const x0 = labelW + 22;
  const y0 = titleH + labelW * sin + 12;
  const gridW = to * cell; // keys 0..to-1
  const gridH = (to - from) * cell; // queries from..to-1
  const reserve = x0 + labelW * cos + 12;
  const width = Math.max(reserve + gridW, ...subtitleLines.map((s) => textWidth(s, 11) + 24), 320);
  // the colour legend: a bar, and its title to its right, or under it where the picture is too narrow
  const legendTitle = src.weighted ? 'weight × value size, per row (√ scale)' : 'attention weight (√ scale)';
  const legendTitleW = textWidth(legendTitle, 10);
  const lw = Math.max(60, Math.min(200, width - x0 - 16 - legendTitleW));
  const legendBelow = x0 + lw + 12 + legendTitleW > width;
  const legendH = legendBelow ? 60 : 46;
  const height = y0 + gridH + legendH;
  const yOf = (q) => y0 + (q - from) * cell;
  const items = [];
  items.push({
    type: 'text',
    x: 8,
    y: 12,
    text: `Layer ${layer}, head ${head}: ${src.weighted ? 'weight × value size' : 'attention weights'}`,
    size: 14,
    weight: 'bold',
    fill: theme.fg,
  });
  subtitleLines.forEach((line, i) =>
    items.push({ type: 'text', x: 8, y: 30 + 14 * i, text: line, size: 11, fill: theme.muted }),
  );
  // axis titles
  items.push({
    type: 'text',
    x: 10,
    y: y0 + gridH / 2,
    text: '← token (query)',
    size: 10,
    fill: theme.muted,
    anchor: 'middle',
    rotate: -90,
  });
  if (!image) {
    items.push({ type: 'rect', x: x0, y: y0, w: gridW, h: gridH, fill: theme.faint });
    for (let q = from; q < to; q++) {
      for (let k = 0; k <= q; k++) {
        const w = weightAt(src, q, k);
        items.push({ type: 'rect', x: x0 + k * cell, y: yOf(q), w: cell, h: cell, fill: heat(theme, w) });
      }
    }
  }
  if (q0 >= from && q0 < to) {
    items.push({
      type: 'rect',
      x: x0 - 0.5,
      y: yOf(q0) - 0.5,
      w: (q0 + 1) * cell + 1,
      h: cell + 1,
      fill: 'none',
      stroke: theme.accent,
      strokeWidth: 2,
    });
  }
  for (let i = 0; i < to; i++) {
    if (!labels[i]) continue;
    const bold = i === q0 ? 'bold' : undefined;
    if (i >= from)
      items.push({
        type: 'text',
        x: x0 - 5,
        y: yOf(i) + cell / 2,
        text: labels[i],
        size: fs,
        fill: theme.fg,
        anchor: 'end',
        weight: bold,
        data: { row: i },
      });
    items.push({
      type: 'text',
      x: x0 + i * cell + cell / 2,
      y: y0 - 5,
      text: labels[i],
      size: fs,
      fill: theme.fg,
      rotate: angle,
      weight: bold,
    });
  }
  // colour legend
  const ly = y0 + gridH + 18;
  const steps = 40;
  for (let i = 0; i < steps; i++) {
    const p = i / (steps - 1);
    items.push({ type: 'rect', x: x0 + (i * lw) / steps, y: ly, w: lw / steps + 0.5, h: 10, fill: heat(theme, p * p) });
  }
  // square-root colour scale: weight 0.25 sits in the middle
  for (const [p, label] of [
    [0, '0'],
    [0.5, '0.25'],
    [1, '1'],
  ]) {
    items.push({
      type: 'text',
      x: x0 + p * lw,
      y: ly + 20,
      text: label,
      size: 10,
      fill: theme.muted,
      anchor: 'middle',
    });
  }
  items.push({
    type: 'text',
    x: legendBelow ? x0 : x0 + lw + 12,
    y: legendBelow ? ly + 34 : ly + 5,
    text: legendTitle,
    size: 10,
    fill: theme.muted,
  });
  return {
    scene: { width, height, background: image ? null : theme.bg, font: theme.font, items },
    layout: { x0, y0, cell, T, from, to, width, height, step, reserve },
  };
}
