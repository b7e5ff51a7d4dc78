// "Why does it look there?" in Node (web/component/charts/explain.js): the matrix keeps the parts
// with the largest sums on each side and sums the rest into "other" without losing any of the
// table; the cells drawn are those numbers in the signed palette; the sentence names the largest
// cell and which split it describes; the upstream heads are the table's rows and columns summed per head.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { themeFrom, signedColour } from '../../../web/component/runtime/theme.js';
import {
  explainSummary,
  explainScene,
  explainSentence,
  upstreamHeads,
  partWords,
  partHead,
} from '../../../web/component/charts/explain.js';

const theme = themeFrom(() => '');
const components = ['embed', 'pos', 'L0H0', 'L0H1', 'L0.attn_bias', 'L0.mlp', 'bias'];
const P = components.length;
// a table whose cell (a, b) is (a + 1) * (b - 2) / 10, with a large (L0.mlp x L0H1) cell
const table = Float64Array.from({ length: P * P }, (_, i) => ((Math.floor(i / P) + 1) * ((i % P) - 2)) / 10);
table[5 * P + 3] = 9;
const contrast = table.map((v) => v / 2);
const split = {
  layer: 1,
  head: 2,
  query: 7,
  key: 3,
  queryToken: { id: 1, text: ' blue' },
  keyToken: { id: 2, text: ' yellow' },
  components,
  score: table.reduce((s, v) => s + v, 0),
  table,
  versus: 'mean',
  contrast,
};

test('the summary keeps the strongest parts of each side and sums the rest into "other", losing nothing', () => {
  const s = explainSummary(split, { n: 3 });
  assert.equal(s.rows.length, 4);
  assert.equal(s.rows.at(-1), -1);
  assert.equal(s.names.rows.at(-1), 'other');
  // every cell of the table is in exactly one cell of the matrix
  const sum = s.cells.flat().reduce((a, v) => a + v, 0);
  assert.ok(Math.abs(sum - split.score) < 1e-12);
  assert.ok(Math.abs(s.total - split.score) < 1e-12);
  // the kept rows are the three with the largest |row sum|
  const rowSums = components.map((_, a) => table.slice(a * P, (a + 1) * P).reduce((x, v) => x + v, 0));
  const want = rowSums
    .map((v, i) => [Math.abs(v), i])
    .sort((x, y) => y[0] - x[0])
    .slice(0, 3)
    .map(([, i]) => i)
    .sort((x, y) => x - y);
  assert.deepEqual(s.rows.slice(0, 3), want);
  assert.deepEqual(s.top, { row: 5, col: 3, value: 9 });
  // all parts kept: no "other"
  assert.ok(!explainSummary(split, { n: P }).rows.includes(-1));
  // the contrast's matrix sums to the contrast
  const c = explainSummary(split, { n: 3, which: 'contrast' });
  assert.ok(Math.abs(c.total - split.score / 2) < 1e-12);
});

test('the scene draws each matrix cell in the signed palette with its value, and the row sums', () => {
  const s = explainSummary(split, { n: 3 });
  const { scene, max } = explainScene(split, s, theme, { width: 420 });
  const cells = scene.items.filter((it) => it.type === 'rect' && it.data?.value !== undefined);
  assert.equal(cells.length, s.rows.length * s.cols.length);
  assert.equal(max, Math.max(...s.cells.flat().map(Math.abs)));
  for (const c of cells) {
    assert.equal(c.data.value, s.cells[c.data.row][c.data.col]);
    assert.equal(c.fill, signedColour(theme, c.data.value, max));
  }
  const texts = scene.items.filter((it) => it.type === 'text').map((it) => it.text);
  assert.ok(texts.includes('9.00'));
  assert.ok(texts.some((t) => t.startsWith('cells sum to ')));
  // the side labels do not overlap
  const [q, k] = scene.items.filter((it) => it.type === 'text' && /^(query|key) /.test(it.text));
  assert.ok(k.x > q.x + 6 * q.text.length * 0.5, `${q.text} at ${q.x}, ${k.text} at ${k.x}`);
});

test('the sentence names the largest cell, its parts in words and the split; the upstream heads are the head parts', () => {
  const s = explainSummary(split, { n: 3 });
  const sentence = explainSentence(split, s);
  assert.match(
    sentence,
    /^'blue' looks at 'yellow' mostly because of layer 0's MLP at 'blue' \(query side\) against what L0H1 wrote at 'yellow' \(key side\): 9\.00 of the score/,
  );
  assert.match(
    explainSentence({ ...split }, explainSummary(split, { n: 3, which: 'contrast' })),
    /how much more 'blue' scores 'yellow' than the mean over the keys it can see/,
  );
  // the heads of the table shown, each side's sum over the other side's parts, strongest first
  for (const which of ['score', 'contrast']) {
    const t = which === 'contrast' ? contrast : table;
    const heads = upstreamHeads(split, explainSummary(split, { n: 3, which }));
    const want = [];
    components.forEach((name, i) => {
      const h = partHead(name);
      if (!h) return;
      let row = 0,
        col = 0;
      for (let j = 0; j < P; j++) ((row += t[i * P + j]), (col += t[j * P + i]));
      want.push(
        { layer: h[0], head: h[1], side: 'query', value: row },
        { layer: h[0], head: h[1], side: 'key', value: col },
      );
    });
    want.sort((a, b) => Math.abs(b.value) - Math.abs(a.value));
    assert.equal(heads.length, want.length, which);
    heads.forEach((h, i) => {
      assert.deepEqual([h.layer, h.head, h.side], [want[i].layer, want[i].head, want[i].side], `${which} ${i}`);
      assert.ok(Math.abs(h.value - want[i].value) < 1e-12, `${which} ${i}`);
    });
  }
  assert.deepEqual(partHead('L10H3'), [10, 3]);
  assert.equal(partHead('L0.mlp'), null);
  assert.equal(partWords('L2.attn_bias'), "layer 2's attention bias");
  assert.equal(partWords('embed'), 'the token itself');
});
