// The drawing pieces of insideScene() (inside-scene.js), one picture's: cells coloured by their sign,
// row labels, key rows, legends, and the notes on masked and undrawn keys. Pure (tested in Node
// through insideScene()): each appends scene items to `items`.
import { signedColour } from '../runtime/theme.js';
import { signed } from '../model/inside.js';

/**
 * The pen of one picture: `items` the scene's items, `g` its geometry and what it shows (i the
 * query token, k0 the picked key, T, keys and hidden as shownKeys() gives them, labels the tokens'
 * short labels, fs the labels' font size, x0 the cells' left edge, cellH, rowH, blockW, sceneW).
 */
export function insidePen(items, theme, g) {
  const { i, k0, T, keys, hidden, labels, fs, x0, cellH, rowH, blockW, sceneW } = g;
  const tipCells = (vec, n, x, yy, w, h, max, tip) => {
    for (let d = 0; d < n; d++)
      items.push({
        type: 'rect',
        x: x + d * w,
        y: yy,
        w: Math.max(1, w - (w >= 5 ? 1 : 0)),
        h,
        fill: signedColour(theme, vec[d], max),
        data: { tip: tip(d) },
      });
  };
  const label = (text, yy, bold, fill = theme.fg) =>
    items.push({
      type: 'text',
      x: x0 - 6,
      y: yy + cellH / 2,
      text,
      size: fs,
      fill,
      anchor: 'end',
      weight: bold ? 'bold' : undefined,
    });
  const rowBand = (j, yy) => {
    // the picked key's row is highlighted; every key row is a pointer target (data-key)
    items.push({
      type: 'rect',
      x: 4,
      y: yy - 3,
      w: sceneW - 8,
      h: rowH,
      fill: j === k0 ? theme.faint : 'none',
      rx: 3,
      data: { key: j },
    });
  };
  const legend = (yy, max, what) => {
    const n = 9;
    for (let s = 0; s < n; s++) {
      const v = ((s - (n - 1) / 2) / ((n - 1) / 2)) * max;
      items.push({ type: 'rect', x: x0 + s * 12, y: yy, w: 11, h: 9, fill: signedColour(theme, v, max) });
    }
    items.push({
      type: 'text',
      x: x0 - 4,
      y: yy + 4.5,
      text: signed(-max, 2),
      size: 9,
      fill: theme.muted,
      anchor: 'end',
    });
    items.push({
      type: 'text',
      x: x0 + n * 12 + 4,
      y: yy + 4.5,
      text: `${signed(max, 2)} ${what}`,
      size: 9,
      fill: theme.muted,
    });
    return yy + 18;
  };
  const laterNote = (yy) => {
    const later = T - 1 - i;
    if (later <= 0) return yy;
    const shown = Math.min(2, later);
    for (let j = i + 1; j <= i + shown; j++) {
      label(labels[j], yy, false, theme.muted);
      items.push({ type: 'rect', x: x0, y: yy, w: blockW, h: cellH, fill: theme.faint });
      items.push({
        type: 'text',
        x: x0 + blockW / 2,
        y: yy + cellH / 2,
        text: 'masked: a later token',
        size: 9,
        fill: theme.muted,
        anchor: 'middle',
      });
      yy += rowH;
    }
    if (later > shown) {
      items.push({
        type: 'text',
        x: x0,
        y: yy + 5,
        text: `and ${later - shown} more later token${later - shown === 1 ? '' : 's'}, masked`,
        size: 10,
        fill: theme.muted,
      });
      yy += 16;
    }
    return yy;
  };
  const hiddenNote = (yy) => {
    if (!hidden) return yy;
    items.push({
      type: 'text',
      x: x0,
      y: yy + 5,
      text: `${keys.length} of the ${i + 1} tokens it can see (the most weight); ${hidden} more not drawn`,
      size: 10,
      fill: theme.muted,
    });
    return yy + 16;
  };
  // a line of column titles: [x, text, anchor?] (one text item each: SVG collapses runs of spaces)
  const header = (yy, columns) => {
    for (const [x, text, anchor] of columns)
      items.push({ type: 'text', x, y: yy + 5, text, size: 10, fill: theme.muted, anchor });
    return yy + 16;
  };
  return { tipCells, label, rowBand, legend, laterNote, hiddenNote, header };
}
