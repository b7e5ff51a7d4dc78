// "Why does it look there?" (the demo's score split): explainScore()'s table (a head's pre-softmax
// score split into the residual stream's parts on the query and the key side; definitions in
// cpp/include/headscope/explain.hpp) as a small matrix scene and the sentence the page states. Pure,
// tested in Node (tests/js/unit/explain-charts.test.js).
//   explainSummary  the strongest query-side and key-side parts, the rest summed into "other"
//   explainScene    that matrix in the signed palette, each cell's value written in it
//   partWords       a part's name in words ("what L0H3 wrote", "layer 0's MLP", ...)
//   explainSentence what dominates, in one plain sentence, and which split it describes
import { signedColour, parseRgb, inkOn, quoteToken } from '../runtime/theme.js';
import { textWidth } from '../views/scene.js';

const HEAD = /^L(\d+)H(\d+)$/;

/** [layer, head] of a part that is a head's write, else null. */
export function partHead(name) {
  const m = HEAD.exec(name);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** A part in words, on the query or the key side ('its own token', 'what L0H3 wrote', ...). */
export function partWords(name) {
  if (name === 'embed') return 'the token itself';
  if (name === 'pos') return 'its position';
  if (name === 'bias') return 'the biases';
  if (name === 'other') return 'everything else';
  if (partHead(name)) return `what ${name} wrote`;
  const m = /^L(\d+)\.(mlp|attn_bias)$/.exec(name);
  if (m) return m[2] === 'mlp' ? `layer ${m[1]}'s MLP` : `layer ${m[1]}'s attention bias`;
  return name;
}

/**
 * The matrix the page shows: the `n` query-side parts (rows) and key-side parts (columns) with the
 * largest |sum| over the other side, in the table's order, and "other" summing the rest of each
 * side (shown only when there is a rest). `which`: 'raw' (the table, summing to the score) or
 * 'contrast' (the table minus the table at another key or their mean). Returns { rows, cols (part
 * indices; -1 for "other"), names: { rows, cols }, cells: rows x cols, total, top: { row, col, value } }.
 */
export function explainSummary(split, { n = 4, which = 'raw' } = {}) {
  const P = split.components.length;
  const t = which === 'contrast' ? split.contrast : split.table;
  const rowSum = new Array(P).fill(0);
  const colSum = new Array(P).fill(0);
  for (let a = 0; a < P; a++)
    for (let b = 0; b < P; b++) {
      rowSum[a] += t[a * P + b];
      colSum[b] += t[a * P + b];
    }
  const strongest = (sums) =>
    sums
      .map((v, i) => [Math.abs(v), i])
      .sort((x, y) => y[0] - x[0] || x[1] - y[1])
      .slice(0, Math.min(n, P))
      .map(([, i]) => i)
      .sort((x, y) => x - y);
  const rowsKept = strongest(rowSum);
  const colsKept = strongest(colSum);
  const rows = rowsKept.length < P ? [...rowsKept, -1] : rowsKept;
  const cols = colsKept.length < P ? [...colsKept, -1] : colsKept;
  const inRows = new Set(rowsKept);
  const inCols = new Set(colsKept);
  const cells = rows.map(() => cols.map(() => 0));
  let total = 0;
  for (let a = 0; a < P; a++)
    for (let b = 0; b < P; b++) {
      const v = t[a * P + b];
      total += v;
      const r = inRows.has(a) ? rows.indexOf(a) : rows.length - 1;
      const c = inCols.has(b) ? cols.indexOf(b) : cols.length - 1;
      cells[r][c] += v;
    }
  let top = null;
  rows.forEach((a, r) =>
    cols.forEach((b, c) => {
      if (a >= 0 && b >= 0 && (!top || Math.abs(cells[r][c]) > Math.abs(top.value)))
        top = { row: a, col: b, value: cells[r][c] };
    }),
  );
  const name = (i) => (i < 0 ? 'other' : split.components[i]);
  return { rows, cols, names: { rows: rows.map(name), cols: cols.map(name) }, cells, total, top, which };
}

const num = (v, d = 2) => {
  const s = Math.abs(v).toFixed(d);
  return v < 0 && Number(s) !== 0 ? `−${s}` : s;
};

/** What dominates, in one sentence that says which split it describes. */
export function explainSentence(split, summary) {
  const q = quoteToken(split.queryToken.text);
  const k = quoteToken(split.keyToken.text);
  const { top } = summary;
  const against = split.versus === 'mean' ? 'the mean over the keys it can see' : `key ${split.versus}`;
  const of =
    summary.which === 'contrast'
      ? `of ${num(summary.total)}, how much more ${q} scores ${k} than ${against}`
      : `of the score ${num(split.score)}`;
  if (!top) return `L${split.layer}H${split.head}: ${q} on ${k}.`;
  const qa = split.components[top.row];
  const kb = split.components[top.col];
  return (
    `${q} looks at ${k} mostly because of ${partWords(qa)} at ${q} (query side) against ${partWords(kb)} at ${k} ` +
    `(key side): ${num(top.value)} ${of}.`
  );
}

/**
 * A split's table (components x components, row-major: the score's table or its contrast) summed per
 * part: row a summed over its columns is what part a wrote into the query, column b summed over the
 * rows what part b wrote into the key. Returns { query, key }: each side's heads (the parts named
 * L{l}H{h}) as [{ layer, head, name, value }], strongest (largest size) first, and { queryOthers,
 * keyOthers }: the parts that are not heads (embed, pos, MLPs, biases), also strongest first. Each
 * side's parts sum to the table's total. The one per-head sum of both panels that show it.
 */
export function headSums(components, table) {
  const P = components.length;
  const rows = new Float64Array(P);
  const cols = new Float64Array(P);
  for (let a = 0; a < P; a++)
    for (let b = 0; b < P; b++) {
      const v = table[a * P + b];
      rows[a] += v;
      cols[b] += v;
    }
  const side = (sums) => {
    const heads = [];
    const others = [];
    components.forEach((name, i) => {
      const h = partHead(name);
      if (h) heads.push({ layer: h[0], head: h[1], name, value: sums[i] });
      else others.push({ name, value: sums[i] });
    });
    const bySize = (x, y) => Math.abs(y.value) - Math.abs(x.value);
    return { heads: heads.sort(bySize), others: others.sort(bySize) };
  };
  const q = side(rows);
  const k = side(cols);
  return { query: q.heads, key: k.heads, queryOthers: q.others, keyOthers: k.others };
}

/**
 * The upstream heads of the table the summary shows (the score's, or its contrast's), both sides
 * together, strongest first: [{ layer, head, side: 'query' | 'key', value }].
 */
export function upstreamHeads(split, summary) {
  const s = headSums(split.components, summary.which === 'contrast' ? split.contrast : split.table);
  return [
    ...s.query.map(({ layer, head, value }) => ({ layer, head, side: 'query', value })),
    ...s.key.map(({ layer, head, value }) => ({ layer, head, side: 'key', value })),
  ].sort((a, b) => Math.abs(b.value) - Math.abs(a.value));
}

/**
 * The matrix as a scene: rows the query side's parts at the query token, columns the key side's at
 * the key token, each cell coloured on one signed scale (blue raises the score, orange lowers it)
 * with its value written in it; the row and column sums beside. Returns { scene, max }.
 */
export function explainScene(split, summary, theme, { width = 420 } = {}) {
  const { rows, cols, names, cells } = summary;
  const label = (name) => (name === 'other' ? 'other' : name);
  const left = Math.max(...names.rows.map((s) => textWidth(label(s), 11))) + 14;
  const top = 58;
  const cw = Math.max(40, Math.min(70, Math.floor((width - left - 56) / cols.length)));
  const ch = 26;
  let max = 0;
  for (const row of cells) for (const v of row) max = Math.max(max, Math.abs(v));
  max = max || 1;
  const items = [
    {
      type: 'text',
      x: 4,
      y: 12,
      text: `L${split.layer}H${split.head}: ${summary.which === 'contrast' ? 'against the other keys' : 'the score'}, split`,
      size: 12,
      weight: 'bold',
      fill: theme.fg,
    },
  ];
  // the two sides named above the matrix, the key side's after the query side's
  const queryLabel = `query ${label(split.queryToken.text)} ↓`;
  items.push({ type: 'text', x: 4, y: 30, text: queryLabel, size: 10, fill: theme.muted });
  const keyX = Math.max(left, 4 + textWidth(queryLabel, 10) + 14);
  items.push({
    type: 'text',
    x: keyX,
    y: 30,
    text: `key ${label(split.keyToken.text)} →`,
    size: 10,
    fill: theme.muted,
  });
  cols.forEach((_, c) =>
    items.push({
      type: 'text',
      x: left + c * cw + (cw - 2) / 2,
      y: top - 10,
      text: label(names.cols[c]),
      size: 10,
      fill: theme.muted,
      anchor: 'middle',
      data: { col: c },
    }),
  );
  rows.forEach((_, r) => {
    const y = top + r * ch;
    items.push({
      type: 'text',
      x: left - 6,
      y: y + (ch - 2) / 2,
      text: label(names.rows[r]),
      size: 11,
      fill: theme.fg,
      anchor: 'end',
      data: { row: r },
    });
    let sum = 0;
    cols.forEach((_, c) => {
      const v = cells[r][c];
      sum += v;
      const fill = signedColour(theme, v, max);
      items.push({ type: 'rect', x: left + c * cw, y, w: cw - 2, h: ch - 2, fill, data: { row: r, col: c, value: v } });
      items.push({
        type: 'text',
        x: left + c * cw + (cw - 2) / 2,
        y: y + (ch - 2) / 2,
        text: num(v),
        size: 10,
        fill: inkOn(...parseRgb(fill)),
        anchor: 'middle',
      });
    });
    items.push({
      type: 'text',
      x: left + cols.length * cw + 4,
      y: y + (ch - 2) / 2,
      text: `Σ ${num(sum)}`,
      size: 10,
      fill: theme.muted,
    });
  });
  const bottom = top + rows.length * ch + 8;
  items.push({
    type: 'text',
    x: 4,
    y: bottom + 6,
    text: `cells sum to ${num(summary.total, 3)}${summary.which === 'raw' ? ` (the score ${num(split.score, 3)})` : ''}`,
    size: 10,
    fill: theme.muted,
  });
  return {
    scene: {
      width: Math.max(width, left + cols.length * cw + 56),
      height: bottom + 16,
      background: theme.bg,
      font: theme.font,
      items,
    },
    max,
  };
}
