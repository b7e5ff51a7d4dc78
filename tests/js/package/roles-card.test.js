// The live head-role scores (headscope/analysis) agree with the shipped models' cards.
// A card's per-head prev_token / first_token were measured by scripts/train/export.py on 64 windows
// of validation text (which the card does not list), so on other text the numbers differ somewhat.
// What must agree, averaged over eight 128-token windows of a long English paragraph: every head's previous- and first-token scores are
// close to the card's; the card's strongest previous-token head leads live too (or, among near-ties,
// both leaders are in each other's top three); and where the heads' scores spread enough to rank,
// previous-token scores and entropy rank the heads alike (Spearman correlation).
// New-format cards (a "roles" section) also carry induction and verb-to-subject scores per head:
// measured through the engine as the page measures them (headscope/analysis inductionScores on the
// roles.json word lists, verbSubjectScores on the card's probe sentences), every head agrees with
// the card within the tolerances of role-tolerance.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { loadModel } from '../../../dist/headscope.js';
import { allHeadScores, inductionScores, verbSubjectScores } from '../../../dist/analysis.js';
import { V2S_TOL, inductionTol } from './role-tolerance.js';

const PARAGRAPH =
  'The old house at the end of the street had been empty for many years. Children walked past it on their way to school, and some of them said that a ghost lived in the attic. ' +
  'In the spring of that year, a young family bought the house. The father was a carpenter, and he spent the summer repairing the roof, the windows and the long front porch. ' +
  'His wife planted a garden behind the kitchen, where tomatoes, beans and sunflowers soon grew taller than their two children. ' +
  'By the autumn the neighbours had stopped talking about ghosts. They talked instead about the new bread that came out of the oven every Saturday morning, and about the music that could be heard from the open windows in the evening.';

const root = new URL('../../../', import.meta.url);
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

/** Adds two heads' score objects key by key (the numeric scores of allHeadScores). */
function sumScores(a, b) {
  return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v + b[k]]));
}

function ranks(xs) {
  const idx = xs.map((x, i) => [x, i]).sort((a, b) => a[0] - b[0]);
  const r = new Array(xs.length);
  idx.forEach(([, i], k) => {
    r[i] = k;
  });
  return r;
}
function spearman(a, b) {
  const ra = ranks(a),
    rb = ranks(b);
  const n = a.length;
  const m = (n - 1) / 2;
  let num = 0,
    da = 0,
    db = 0;
  for (let i = 0; i < n; i++) {
    num += (ra[i] - m) * (rb[i] - m);
    da += (ra[i] - m) ** 2;
    db += (rb[i] - m) ** 2;
  }
  return num / Math.sqrt(da * db);
}

const models = shippedWithCards();
if (!models.length)
  test('role scores agree with the model cards', { skip: 'no shipped model with a card.json yet' }, () => {});

for (const { name, folder, card } of models) {
  test(`role scores agree with the model card of ${name}`, async () => {
    const model = await loadModel(folder);
    try {
      // Like the card, average over windows that start at different tokens: a content-dependent head
      // can single out one salient first token (e.g. ' father' in one window), which says nothing
      // about a first-token sink. Eight windows: the paragraph cut 0, 4, ..., 28 words before its end.
      const words = PARAGRAPH.split(' ');
      let live = null;
      const N = 8;
      // Each window is the last n_positions tokens of its text, cut here at a token boundary (the
      // engine cuts longer texts in steps of an eighth of the context; the card's windows are full).
      const n = model.info.config.nPositions;
      const lastTokens = (t) => {
        const tokens = model.tokenize(t);
        return tokens.length > n ? t.slice(tokens[tokens.length - n].start) : t;
      };
      for (let k = 0; k < N; k++) {
        const r = model.run(lastTokens(words.slice(0, words.length - 4 * k).join(' ')), { topK: 1 });
        assert.ok(r.T >= 100, `a long paragraph (${r.T} tokens)`);
        const s = allHeadScores(r);
        live = live ? live.map((L, l) => L.map((h, i) => sumScores(h, s[l][i]))) : s;
      }
      live = live.map((L) => L.map((h) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, v / N]))));
      const heads = card.heads;
      const liveOf = (h, k) => live[h.layer][h.head][k];
      const name_ = (h) => `L${h.layer}H${h.head}`;
      const byCard = [...heads].sort((a, b) => b.prev_token - a.prev_token);
      const byLive = [...heads].sort((a, b) => liveOf(b, 'previous') - liveOf(a, 'previous'));
      const line = [
        `# ${name}: strongest previous-token head: card ${name_(byCard[0])} (${byCard[0].prev_token}), live ${name_(byLive[0])} (${liveOf(byLive[0], 'previous').toFixed(3)})`,
      ];
      // 1. the same quantities: every head's live previous/first score is within 0.05 of the card's
      //    (different text, so not equal: the shipped models differ by at most 0.016 here, while their
      //    heads' scores range over 0.01-0.62, so a wrong head order or a wrong model fails)
      //    An induction head (card score >= 0.4) is left out of the first-token check: it rests on the
      //    first token whenever the current token has no earlier copy, so its first-token score
      //    follows how often this text repeats itself (0.44 on the card's windows against 0.32 here
      //    for heads-2's L1H0); part 4 checks those heads through the engine on the card's probe.
      let maxPrev = 0,
        maxFirst = 0;
      for (const h of heads) {
        maxPrev = Math.max(maxPrev, Math.abs(liveOf(h, 'previous') - h.prev_token));
        if (!(h.induction >= 0.4)) maxFirst = Math.max(maxFirst, Math.abs(liveOf(h, 'first') - h.first_token));
      }
      line.push(
        `max |live - card| previous ${maxPrev.toFixed(3)}, first ${maxFirst.toFixed(3)} (induction heads' first: ${
          heads
            .filter((h) => h.induction >= 0.4)
            .map((h) => `${name_(h)} card ${h.first_token} live ${liveOf(h, 'first').toFixed(2)}`)
            .join(', ') || 'none'
        })`,
      );
      assert.ok(maxPrev <= 0.05, `previous-token scores within 0.05 of the card (max diff ${maxPrev})`);
      assert.ok(maxFirst <= 0.05, `first-token scores within 0.05 of the card (max diff ${maxFirst})`);
      // 2. the strongest previous-token head: the same head when the card's leader stands out (by
      //    0.02 or more); among near-ties, the card's leader is in the live top three and vice versa
      if (heads.length > 1 && byCard[0].prev_token - byCard[1].prev_token >= 0.02) {
        assert.equal(name_(byLive[0]), name_(byCard[0]), "the card's strongest previous-token head leads live too");
      } else {
        assert.ok(byLive.slice(0, 3).includes(byCard[0]), `card's leader ${name_(byCard[0])} in the live top three`);
        assert.ok(byCard.slice(0, 3).includes(byLive[0]), `live leader ${name_(byLive[0])} in the card's top three`);
      }
      // 3. where the heads differ enough to rank (a spread of 0.05 or more), the ranking agrees
      const spread = byCard[0].prev_token - byCard[byCard.length - 1].prev_token;
      if (heads.length >= 4 && spread >= 0.05) {
        const sp = spearman(
          heads.map((h) => h.prev_token),
          heads.map((h) => liveOf(h, 'previous')),
        );
        const se = spearman(
          heads.map((h) => h.entropy),
          heads.map((h) => liveOf(h, 'broad')),
        );
        line.push(`Spearman previous ${sp.toFixed(2)}, card entropy vs live broad ${se.toFixed(2)}`);
        assert.ok(sp >= 0.8, `previous-token scores rank heads like the card (Spearman ${sp.toFixed(2)})`);
        assert.ok(
          se >= 0.8,
          `broad (normalized entropy) ranks heads like the card's entropy (Spearman ${se.toFixed(2)})`,
        );
      }
      // 4. induction and verb to subject, through the engine, where the card has them
      if (card.roles) {
        const LISTS = 32;
        const ind = await inductionScores(model, { lists: LISTS, perList: true });
        const v2s = await verbSubjectScores(model, card.roles.probe_sentences);
        assert.equal(v2s.sentences, card.roles.probe_sentences.length, "every probe sentence has the article's shape");
        const cardLists = Number(/(\d+) seeded lists/.exec(card.roles.method?.induction || '')?.[1]) || 16;
        let worst = 0,
          maxV = 0;
        for (const h of heads) {
          const dI = Math.abs(ind.scores[h.layer][h.head] - h.induction);
          const tol = inductionTol(ind.listSd[h.layer][h.head], cardLists, LISTS);
          worst = Math.max(worst, dI / tol);
          assert.ok(
            dI <= tol,
            `${name_(h)} induction: live ${ind.scores[h.layer][h.head].toFixed(4)}, card ${h.induction}, tolerance ${tol.toFixed(4)}`,
          );
          const dV = Math.abs(v2s.scores[h.layer][h.head] - h.verb_to_subject);
          maxV = Math.max(maxV, dV);
          assert.ok(
            dV <= V2S_TOL,
            `${name_(h)} verb to subject: live ${v2s.scores[h.layer][h.head].toFixed(4)}, card ${h.verb_to_subject}`,
          );
        }
        line.push(
          `induction: worst head at ${(100 * worst).toFixed(0)}% of its tolerance; verb to subject: max diff ${maxV.toFixed(4)}`,
        );
      } else {
        line.push('old-format card: no induction or verb-to-subject numbers');
      }
      console.log(line.join('; '));
    } finally {
      model.dispose();
    }
  });
}
