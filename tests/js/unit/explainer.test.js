// article.html's pure modules in Node (web/demo/article/): the numbers the article states, computed
// from the model cards (facts.js) against the cards' own fields and the full model list
// (web/models/index.json, written by the training scripts from the same cards); the worked
// example's head scores (chef-heads.js) on hand-made attention; the scale picture (scale-scene.js)
// and the bars (web/component/charts/bars.js) drawn where their values put them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { themeFrom } from '../../../web/component/runtime/theme.js';
import {
  REFERENCE_MODELS,
  entryFromCard,
  modelEntry,
  shapeOf,
  headCountComparison,
  kvTradeoff,
  modelBytes,
  formatBytes,
  formatCount,
  cardPruningReport,
  judgeHeadsGuess,
} from '../../../web/demo/article/facts.js';
import { wordTokens, linkScores } from '../../../web/demo/article/chef-heads.js';
import { scaleScene } from '../../../web/demo/article/scale-scene.js';
import { barsScene, barTitle } from '../../../web/component/charts/bars.js';
import { textWidth } from '../../../web/component/views/scene.js';
import { formedRoles, rolesSentence } from '../../../web/demo/article/training.js';

const theme = themeFrom(() => '');
const MODELS = new URL('../../../web/models/', import.meta.url);
const index = JSON.parse(readFileSync(new URL('index.json', MODELS), 'utf8'));
const card = (name) => JSON.parse(readFileSync(new URL(`${name}/card.json`, MODELS), 'utf8'));
const entries = index.models.map((m) => entryFromCard(m.name, card(m.name)));

test('a card gives the shape, loss, download and cache per token the full model list states', () => {
  for (const m of index.models) {
    const e = modelEntry(entries, m.name);
    assert.ok(e, m.name);
    assert.equal(e.n_layer, m.n_layer, m.name);
    assert.equal(e.n_head, m.n_head, m.name);
    assert.equal(e.n_kv_head, m.n_kv_head, m.name);
    assert.equal(e.val_loss, m.val_loss, m.name);
    assert.equal(e.kv_cache_bytes_per_token, m.kv_cache_bytes_per_token, m.name);
    // what a page fetches is the folder without the tests' reference.json
    assert.ok(e.folder_bytes > 0.5 * m.folder_bytes && e.folder_bytes <= m.folder_bytes, m.name);
  }
  assert.equal(entryFromCard('x', {}), null);
  assert.equal(entryFromCard('x', null), null);
});

test('shapes from an entry or a Hugging Face config, and the reference models', () => {
  assert.deepEqual(shapeOf('a', { n_layer: 4, n_head: 8 }), { name: 'a', nLayer: 4, nHead: 8, heads: 32 });
  assert.deepEqual(shapeOf('b', { num_hidden_layers: 30, num_attention_heads: 9 }), {
    name: 'b',
    nLayer: 30,
    nHead: 9,
    heads: 270,
  });
  assert.equal(shapeOf('c', {}), null);
  const heads = REFERENCE_MODELS.map((m) => m.nLayer * m.nHead);
  assert.deepEqual(heads, [144, 9216]);
});

test('the head-count comparison: its ends, the gap, the best member, and the guess judged by it', () => {
  const cmp = headCountComparison(entries);
  const family = index.models.filter((m) => m.family === 'heads').sort((a, b) => a.n_head - b.n_head);
  assert.equal(cmp.fewer.name, family[0].name);
  assert.equal(cmp.more.name, family.at(-1).name);
  assert.equal(cmp.diff, family[0].val_loss - family.at(-1).val_loss);
  const best = family.reduce((b, m) => (m.val_loss < b.val_loss ? m : b));
  assert.equal(cmp.best.name, best.name);
  const lower = cmp.fewer.val_loss <= cmp.more.val_loss ? 'fewer' : 'more';
  assert.equal(judgeHeadsGuess(cmp, lower).right, true);
  assert.equal(judgeHeadsGuess(cmp, lower === 'fewer' ? 'more' : 'fewer').right, false);
  // 'about the same' is right only within the closeness asked for
  const rel = judgeHeadsGuess(cmp, 'same').relative;
  assert.equal(judgeHeadsGuess(cmp, 'same', { close: rel * 2 }).right, true);
  assert.equal(judgeHeadsGuess(cmp, 'same', { close: rel / 2 }).right, false);
  assert.equal(headCountComparison([entries[0]]), null);
});

test('made-up entries: the comparison follows the numbers, not the names', () => {
  const mk = (name, n_head, val_loss) => ({ name, family: 'heads', n_head, val_loss });
  const cmp = headCountComparison([mk('b', 8, 3.0), mk('a', 1, 2.0), mk('c', 4, 2.5)]);
  assert.equal(cmp.fewer.name, 'a');
  assert.equal(cmp.more.name, 'b');
  assert.equal(cmp.lower.name, 'a');
  assert.equal(cmp.best.name, 'a');
  assert.equal(judgeHeadsGuess(cmp, 'fewer').right, true);
  assert.equal(judgeHeadsGuess(cmp, 'same').right, false);
});

test('the key/value family: most key/value heads first, with its cache and loss', () => {
  const kv = kvTradeoff(entries);
  const listed = index.models.filter((m) => m.family === 'kv');
  assert.equal(kv.length, listed.length);
  for (let i = 1; i < kv.length; i++) assert.ok(kv[i - 1].nKvHead > kv[i].nKvHead);
  for (const k of kv) {
    const m = listed.find((x) => x.name === k.name);
    assert.equal(k.cacheBytesPerToken, m.kv_cache_bytes_per_token);
    assert.equal(k.loss, m.val_loss);
  }
});

test('the download counts each model once and names what it cannot size', () => {
  const a = modelEntry(entries, 'heads-1').folder_bytes;
  const b = modelEntry(entries, 'heads-8').folder_bytes;
  assert.deepEqual(modelBytes(entries, ['heads-1', 'heads-8', 'heads-1']), { bytes: a + b, missing: [] });
  assert.deepEqual(modelBytes(entries, ['heads-1', 'http://x/m/']), { bytes: a, missing: ['http://x/m/'] });
  assert.equal(formatBytes(12_100_000), '12.1 MB');
  assert.equal(formatBytes(2048), '2 kB');
  assert.equal(formatBytes(256), '256 bytes');
  assert.equal(formatCount(9216), '9,216');
  assert.equal(formatCount(32), '32');
});

test("a card's head measurement as the pruning chart's report", () => {
  const p = card('heads-8').pruning;
  const r = cardPruningReport(card('heads-8'));
  assert.equal(r.order.length, p.heads);
  assert.equal(r.prunedLoss.length, p.heads + 1);
  assert.equal(r.randomLossMean.length, p.heads + 1);
  assert.equal(r.randomLossLow.length, p.heads + 1);
  for (let k = 0; k <= p.heads; k++) assert.ok(r.randomLossLow[k] <= r.randomLossHigh[k]);
  assert.equal(r.loss, p.loss);
  assert.equal(r.randomOrders, p.random_orders);
  assert.equal(cardPruningReport({}), null);
});

// a result-like object: tokens with spans and one attention map per head (row = query)
function fakeResult(text, words, maps) {
  const tokens = [];
  let at = 0;
  for (const w of words) {
    const start = text.indexOf(w, at);
    tokens.push({ text: w, start, end: start + w.length });
    at = start + w.length;
  }
  const T = tokens.length;
  return {
    text,
    tokens,
    T,
    nLayer: maps.length,
    nHead: maps[0].length,
    attention: (l, h) => Float32Array.from(maps[l][h](T)),
  };
}
// a map where every query spreads its attention evenly, except `query` which gives `w` to `key`
const even = (T) =>
  Array.from({ length: T * T }, (_, i) => (i % T <= Math.floor(i / T) ? 1 / (Math.floor(i / T) + 1) : 0));
const pointing = (query, key, w) => (T) => {
  const a = even(T);
  for (let k = 0; k <= query; k++) a[query * T + k] = k === key ? w : (1 - w) / query;
  return a;
};

test('the worked example finds the head that links a word to an earlier one, and scores it against an even spread', () => {
  const text = 'The chef, who trained, cooked it.';
  const words = ['The', ' chef', ',', ' who', ' trained', ',', ' cooked', ' it', '.'];
  assert.deepEqual(wordTokens(fakeResult(text, words, [[even]]).tokens, text, 'cooked'), [6]);
  assert.deepEqual(wordTokens(fakeResult(text, words, [[even]]).tokens, text, 'chef'), [1]);
  assert.deepEqual(wordTokens(fakeResult(text, words, [[even]]).tokens, text, 'cook'), []); // whole words only
  const r = fakeResult(text, words, [
    [even, pointing(3, 1, 0.5)],
    [pointing(6, 1, 0.9), even],
  ]);
  const cooked = linkScores(r, 'cooked', 'chef');
  assert.equal(cooked.query, 6);
  assert.deepEqual(cooked.keys, [1]);
  assert.deepEqual([cooked.heads[0].layer, cooked.heads[0].head], [1, 0]);
  assert.ok(Math.abs(cooked.heads[0].weight - 0.9) < 1e-6);
  assert.ok(Math.abs(cooked.heads[0].ratio - 0.9 * 7) < 1e-5); // 7 tokens visible from "cooked"
  const who = linkScores(r, 'who', 'chef');
  assert.deepEqual([who.heads[0].layer, who.heads[0].head], [0, 1]);
  assert.ok(Math.abs(who.heads[0].ratio - 0.5 * 4) < 1e-5);
  assert.equal(linkScores(r, 'chef', 'cooked'), null); // the earlier word cannot look ahead
  assert.equal(linkScores(r, 'waiter', 'chef'), null);
});

test('the scale picture: one square per head, every model at the same square size, the widest filling the width', () => {
  const models = [{ name: 'mine', nLayer: 4, nHead: 8, own: true }, ...REFERENCE_MODELS];
  const { scene, cell } = scaleScene(models, theme, { width: 480 });
  assert.equal(cell, 480 / 96);
  for (const m of models) {
    const rects = scene.items.filter((it) => it.type === 'rect' && it.data?.model === m.name);
    assert.equal(rects.length, m.nLayer * m.nHead, m.name);
    assert.ok(rects.every((r) => r.w === rects[0].w && r.w === scene.items.find((x) => x.type === 'rect').w));
    const right = Math.max(...rects.map((r) => r.x + cell));
    assert.ok(Math.abs(right - m.nHead * cell) < 1e-9, m.name);
    assert.ok(rects.every((r) => r.y + r.h <= scene.height));
    const label = scene.items.find((it) => it.type === 'text' && it.data?.model === m.name);
    assert.match(label.text, new RegExp(`= ${formatCount(m.nLayer * m.nHead)} heads$`));
  }
  assert.ok(
    scene.items.filter((it) => it.data?.model === 'mine' && it.type === 'rect').every((r) => r.fill === theme.accent),
  );
});

test("the bars: each as long as its value against its column's largest, from zero", () => {
  const data = {
    rows: [{ label: 'a' }, { label: 'b' }, { label: 'c' }],
    columns: [
      { title: 'cache', values: [2048, 512, 256], format: String },
      { title: 'loss', values: [4.46, 4.48, 4.48], format: (v) => v.toFixed(2) },
    ],
  };
  const scene = barsScene(data, theme, { width: 480 });
  const bar = (row, column) => scene.items.find((it) => it.data?.row === row && it.data?.column === column);
  assert.ok(Math.abs(bar(1, 0).w / bar(0, 0).w - 512 / 2048) < 1e-9);
  assert.ok(Math.abs(bar(2, 0).w / bar(0, 0).w - 256 / 2048) < 1e-9);
  assert.ok(Math.abs(bar(0, 1).w / bar(1, 1).w - 4.46 / 4.48) < 1e-9);
  for (const it of scene.items)
    if (it.type === 'rect') assert.ok(it.x + it.w <= scene.width && it.y + it.h <= scene.height);
  assert.ok(bar(0, 1).x >= bar(0, 0).x + bar(0, 0).w); // the second column starts after the first's longest bar
});

test('the training run names the heads past a role threshold, strongest first', () => {
  const probe = {
    nLayer: 2,
    nHead: 2,
    previous: Float32Array.of(0.9, 0.1, 0.2, 0.5),
    induction: Float32Array.of(0, 0, 0.7, 0.39),
  };
  const formed = formedRoles(probe, { previous: 0.5, induction: 0.4 });
  assert.deepEqual(
    formed.map((f) => [f.layer, f.head, f.role]),
    [
      [0, 0, 'previous'],
      [1, 0, 'induction'],
      [1, 1, 'previous'],
    ],
  );
  assert.equal(rolesSentence(formed), 'L0H0 previous token (0.90), L1H0 induction (0.70), L1H1 previous token (0.50)');
  assert.equal(rolesSentence(formedRoles(probe, { previous: 0.95, induction: 0.95 })), 'no head has a role yet');
  assert.deepEqual(formedRoles(null, { previous: 0.5 }), []);
});

test("the bars: a column's title wraps inside its column, an unmeasured value draws a dash and no bar, a bar's title says its number", () => {
  const data = {
    rows: [{ label: 'one' }, { label: 'two' }],
    columns: [
      { title: 'a long column title that cannot fit', values: [1, NaN], format: String },
      { title: 'another long column title here', values: [2, 3], format: String },
      { title: 'and a third long title', values: [4, 5], format: String },
    ],
  };
  const scene = barsScene(data, theme, { width: 360 });
  const firsts = scene.items.filter((it) => it.data?.title !== undefined);
  assert.equal(firsts.length, 3);
  for (let j = 0; j + 1 < firsts.length; j++) {
    const lines = scene.items.filter((it) => it.type === 'text' && it.weight === 'bold' && it.x === firsts[j].x);
    assert.ok(lines.length > 1, 'the title wrapped');
    for (const l of lines) assert.ok(l.x + textWidth(l.text, l.size) <= firsts[j + 1].x, l.text);
  }
  const bars = scene.items.filter((it) => it.type === 'rect');
  assert.equal(bars.length, 5);
  assert.ok(!bars.some((b) => b.data.row === 1 && b.data.column === 0));
  assert.ok(
    Math.min(...bars.map((b) => b.y)) > Math.max(...scene.items.filter((it) => it.weight === 'bold').map((t) => t.y)),
  );
  assert.equal(barTitle(data, 1, 1), 'two: another long column title here 3');
});
