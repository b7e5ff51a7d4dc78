// A small table of bars: one row per model, one column per measure, each bar as long as its value
// against the column's largest, starting from zero (so a small difference looks small): the
// article's key/value family, its cache against its loss. A scene (views/scene.js); pure, tested in
// tests/js/unit/explainer.test.js. compare.html draws its head-count and key/value families with it.
import { textWidth, wrap } from '../views/scene.js';

const ROW = 26;
const TITLE_LINE = 14; // a column title's line; titles wrap to their column

/**
 * rows: [{ label }]; columns: [{ title, values: number[] (one per row), format(v) -> string }]. A value
 * that is not a number (not measured) draws no bar and a dash.
 * Returns a scene; each bar is a rect with data { row, column, value }.
 */
export function barsScene({ rows, columns }, theme, { width = 480 } = {}) {
  const labelW = Math.ceil(Math.max(40, ...rows.map((r) => textWidth(r.label, 12)))) + 8;
  const colW = (width - labelW) / Math.max(1, columns.length);
  const items = [];
  const titleSize = colW < 90 ? 11 : 12; // narrow columns (a phone): a size smaller
  const titles = columns.map((c) => wrap(c.title, titleSize, colW - 8));
  const HEAD = 6 + TITLE_LINE * Math.max(1, ...titles.map((t) => t.length));
  titles.forEach((lines, j) =>
    lines.forEach((line, k) =>
      items.push({
        type: 'text',
        x: labelW + j * colW,
        y: 13 + k * TITLE_LINE,
        text: line,
        size: titleSize,
        weight: 'bold',
        fill: theme.fg,
        data: k === 0 ? { title: j } : undefined,
      }),
    ),
  );
  rows.forEach((r, i) => {
    const y = HEAD + i * ROW;
    items.push({ type: 'text', x: 0, y: y + 15, text: r.label, size: 12, fill: theme.fg });
    columns.forEach((c, j) => {
      const v = c.values[i];
      const x = labelW + j * colW;
      if (!Number.isFinite(v)) {
        items.push({ type: 'text', x, y: y + 15, text: '–', size: 11, fill: theme.muted });
        return;
      }
      const known = c.values.filter(Number.isFinite);
      const max = Math.max(...known, 1e-12);
      const text = c.format(v);
      // one scale per column: the room its widest number leaves
      const room = colW - 12 - Math.max(...known.map((x) => textWidth(c.format(x), 11))) - 6;
      const w = Math.max(1, (room * v) / max);
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

/** What a bar says on hover: its row, its column's title and its value, as drawn. */
export function barTitle({ rows, columns }, row, column) {
  const c = columns[column];
  return `${rows[row].label}: ${c.title} ${c.format(c.values[row])}`;
}
