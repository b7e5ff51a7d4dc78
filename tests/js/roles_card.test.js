// The live head-role scores (headscope/analysis) agree with the shipped models' cards.
// A card's per-head prev_token / first_token were measured by scripts/train/export.py on 64 windows
// of validation text (which the card does not list), so on other text the numbers differ somewhat.
// What must agree: the head the card names as the strongest previous-token head also has the
// highest previous-token score on a long English paragraph; across heads, the live previous and
// first scores rank the heads like the card does (Spearman correlation), and the card's
// first-token head is among the live top two.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { loadModel } from '../../dist/headscope.js';
import { allHeadScores } from '../../dist/analysis.js';

const PARAGRAPH = 'The old house at the end of the street had been empty for many years. Children walked past it on their way to school, and some of them said that a ghost lived in the attic. '
  + 'In the spring of that year, a young family bought the house. The father was a carpenter, and he spent the summer repairing the roof, the windows and the long front porch. '
  + 'His wife planted a garden behind the kitchen, where tomatoes, beans and sunflowers soon grew taller than their two children. '
  + 'By the autumn the neighbours had stopped talking about ghosts. They talked instead about the new bread that came out of the oven every Saturday morning, and about the music that could be heard from the open windows in the evening.';

const root = new URL('../../', import.meta.url);
function shippedWithCards() {
  const out = [];
  for (const base of ['dist/models/', 'web/models/']) {
    const dir = new URL(base, root);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      const f = new URL(`${base}${name}/`, root);
      if (out.some((m) => m.name === name)) continue;
      if (existsSync(new URL('model.safetensors', f)) && existsSync(new URL('card.json', f))) {
        const card = JSON.parse(readFileSync(new URL('card.json', f), 'utf8'));
        if (Array.isArray(card.heads) && card.heads.length) out.push({ name, folder: f, card });
      }
    }
  }
  return out;
}

function ranks(xs) {
  const idx = xs.map((x, i) => [x, i]).sort((a, b) => a[0] - b[0]);
  const r = new Array(xs.length);
  idx.forEach(([, i], k) => { r[i] = k; });
  return r;
}
function spearman(a, b) {
  const ra = ranks(a), rb = ranks(b);
  const n = a.length;
  const m = (n - 1) / 2;
  let num = 0, da = 0, db = 0;
  for (let i = 0; i < n; i++) { num += (ra[i] - m) * (rb[i] - m); da += (ra[i] - m) ** 2; db += (rb[i] - m) ** 2; }
  return num / Math.sqrt(da * db);
}

const models = shippedWithCards();
if (!models.length) test('role scores agree with the model cards', { skip: 'no shipped model with a card.json yet' }, () => {});

for (const { name, folder, card } of models) {
  test(`role scores agree with the model card of ${name}`, async () => {
    const model = await loadModel(folder);
    try {
      const r = model.run(PARAGRAPH, { topK: 1 });
      assert.ok(r.T >= 100, `a long paragraph (${r.T} tokens)`);
      const live = allHeadScores(r);
      const heads = card.heads;
      const liveOf = (h, k) => live[h.layer][h.head][k];
      const argmax = (xs, f) => xs.reduce((a, b) => (f(b) > f(a) ? b : a));
      const cardPrev = argmax(heads, (h) => h.prev_token);
      const livePrev = argmax(heads, (h) => liveOf(h, 'previous'));
      assert.deepEqual([livePrev.layer, livePrev.head], [cardPrev.layer, cardPrev.head],
        `strongest previous-token head: card L${cardPrev.layer}H${cardPrev.head} (${cardPrev.prev_token}), live L${livePrev.layer}H${livePrev.head} (${liveOf(livePrev, 'previous').toFixed(3)})`);
      const line = [`# ${name}: strongest previous-token head L${cardPrev.layer}H${cardPrev.head}: card ${cardPrev.prev_token}, live ${liveOf(cardPrev, 'previous').toFixed(3)}`];
      if (heads.length >= 4) {
        const sp = spearman(heads.map((h) => h.prev_token), heads.map((h) => liveOf(h, 'previous')));
        const sf = spearman(heads.map((h) => h.first_token), heads.map((h) => liveOf(h, 'first')));
        line.push(`Spearman previous ${sp.toFixed(2)}, first ${sf.toFixed(2)}`);
        assert.ok(sp >= 0.7, `previous-token scores rank heads like the card (Spearman ${sp.toFixed(2)})`);
        assert.ok(sf >= 0.7, `first-token scores rank heads like the card (Spearman ${sf.toFixed(2)})`);
        const cardFirst = argmax(heads, (h) => h.first_token);
        const liveTop2 = [...heads].sort((a, b) => liveOf(b, 'first') - liveOf(a, 'first')).slice(0, 2);
        assert.ok(liveTop2.includes(cardFirst), `card's strongest first-token head L${cardFirst.layer}H${cardFirst.head} among the live top two`);
      }
      console.log(line.join('; '));
    } finally {
      model.dispose();
    }
  });
}
