// A small table of bars: one row per model, one column per measure, each bar as long as its value
// against the column's largest, starting from zero (so a small difference looks small): the
// article's key/value family, its cache against its loss. A scene (views/scene.js); pure, tested in
// tests/js/unit/explainer.test.js.
import { textWidth } from '../views/scene.js';

const ROW = 26;
const HEAD = 20;

/**
 * rows: [{ label }]; columns: [{ title, values: number[] (one per row), format(v) -> string }].
 * Returns a scene; each bar is a rect with data { row, column, value }.
 */
export function barsScene({ rows, columns }, theme, { width = 480 } = {}) {
  const labelW = Math.ceil(Math.max(40, ...rows.map((r) => textWidth(r.label, 12)))) + 8;
  const colW = (width - labelW) / Math.max(1, columns.length);
  const items = [];
  columns.forEach((c, j) => {
    items.push({ type: 'text', x: labelW + j * colW, y: 13, text: c.title, size: 12, weight: 'bold', fill: theme.fg });
  });
  rows.forEach((r, i) => {
    const y = HEAD + i * ROW;
    items.push({ type: 'text', x: 0, y: y + 15, text: r.label, size: 12, fill: theme.fg });
    columns.forEach((c, j) => {
      const v = c.values[i];
      const max = Math.max(...c.values.filter(Number.isFinite), 1e-12);
      const text = c.format(v);
      // one scale per column: the room its widest number leaves
      const room = colW - 12 - Math.max(...c.values.map((x) => textWidth(c.format(x), 11))) - 6;
      const w = Math.max(1, (room * v) / max);
      const x = labelW + j * colW;
      items.push({
        type: 'rect',
        x,
        y: y + 4,
        w,
        h: ROW - 10,
        fill: theme.heads[j % theme.heads.length],
        data: { row: i, column: j, value: v },
      });
      items.push({ type: 'text', x: x + w + 4, y: y + 15, text, size: 11, fill: theme.fg });
    });
  });
  return { width, height: HEAD + rows.length * ROW + 2, background: null, font: theme.font, items };
}
