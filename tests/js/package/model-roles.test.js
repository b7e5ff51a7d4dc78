// scripts/model-roles.mjs computes a card's role numbers through the engine; on the shipped default
// model they agree with card.json within the tolerances of role-tolerance.js (justified there).
// Old-format cards (no "roles" section) only carry per-head previous-token scores: those are checked,
// and the rest is reported as not comparable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { V2S_TOL, PREV_TOL, inductionTol, copyTol } from './role-tolerance.js';

const root = new URL('../../../', import.meta.url);
const folder = ['dist/models/headscope-base/', 'web/models/headscope-base/']
  .map((p) => new URL(p, root))
  .find((u) => existsSync(new URL('card.json', u)));
const script = fileURLToPath(new URL('scripts/model-roles.mjs', root));

test(
  'model-roles.mjs on the default model agrees with its card',
  { skip: folder ? false : 'no default model with a card' },
  () => {
    const LISTS = 64; // more lists than the card's 16: the engine's side of the sampling error shrinks
    const out = execFileSync(process.execPath, [script, fileURLToPath(folder), '--json', '--lists', String(LISTS)], {
      encoding: 'utf8',
    });
    const r = JSON.parse(out);
    assert.equal(r.method.induction_lists, LISTS);
    const name = (h) => `L${h.layer}H${h.head}`;
    assert.ok(r.card, 'the script read card.json');
    const card = r.card;
    // previous token: every head, on different text (old and new cards carry it per head)
    const cardHeads = card.heads;
    assert.equal(cardHeads.length, r.heads.length, 'one card entry per head');
    let maxPrev = 0;
    for (const h of r.heads) {
      const c = (cardHeads || []).find((x) => x.layer === h.layer && x.head === h.head);
      if (c?.prev_token !== undefined) maxPrev = Math.max(maxPrev, Math.abs(h.prev_token - c.prev_token));
    }
    console.log(`# ${r.model}: max |engine - card| previous ${maxPrev.toFixed(3)}`);
    assert.ok(maxPrev <= PREV_TOL, `previous-token within ${PREV_TOL} (max ${maxPrev})`);
    if (!card.roles) {
      console.log('# old-format card: no induction, verb-to-subject or copy accuracy to compare');
      assert.equal(r.best.verb_to_subject, null, 'no probe sentences, so no verb-to-subject number is invented');
      return;
    }
    let maxInd = 0,
      worstInd = 0,
      maxV = 0;
    for (const h of r.heads) {
      const c = card.heads.find((x) => x.layer === h.layer && x.head === h.head);
      const dI = Math.abs(h.induction - c.induction);
      const tol = inductionTol(h.induction_list_sd, card.induction_lists || 16, LISTS);
      maxInd = Math.max(maxInd, dI);
      worstInd = Math.max(worstInd, dI / tol);
      assert.ok(
        dI <= tol,
        `${name(h)} induction: engine ${h.induction.toFixed(4)}, card ${c.induction} (tolerance ${tol.toFixed(4)})`,
      );
      const dV = Math.abs(h.verb_to_subject - c.verb_to_subject);
      maxV = Math.max(maxV, dV);
      assert.ok(
        dV <= V2S_TOL,
        `${name(h)} verb to subject: engine ${h.verb_to_subject.toFixed(4)}, card ${c.verb_to_subject}`,
      );
    }
    const ct = copyTol(card.copy_accuracy, r.copy_accuracy, card.induction_lists || 16, LISTS);
    assert.ok(
      Math.abs(r.copy_accuracy - card.copy_accuracy) <= ct,
      `copy accuracy: engine ${r.copy_accuracy}, card ${card.copy_accuracy} (tolerance ${ct.toFixed(4)})`,
    );
    // the named heads: verb to subject is measured on the same sentences, so the same head leads
    assert.equal(
      name(r.best.verb_to_subject),
      name(card.best.verb_to_subject),
      "the card's verb-to-subject head leads through the engine too",
    );
    assert.ok(Math.abs(r.best.verb_to_subject.score - card.best.verb_to_subject.score) <= V2S_TOL);
    // role counts: equal, unless some head lies within the tolerance of a threshold
    const near = (key, tol) => r.heads.some((h) => Math.abs(h[key] - card.thresholds[key]) <= tol(h));
    if (!near('verb_to_subject', () => V2S_TOL))
      assert.equal(r.counts.verb_to_subject, card.counts.verb_to_subject, 'verb-to-subject count');
    if (!near('induction', (h) => inductionTol(h.induction_list_sd, 16, LISTS)))
      assert.equal(r.counts.induction, card.counts.induction, 'induction count');
    console.log(
      `# max |engine - card|: induction ${maxInd.toFixed(4)} (worst ${(100 * worstInd).toFixed(0)}% of its tolerance), verb to subject ${maxV.toFixed(4)}; copy accuracy engine ${r.copy_accuracy.toFixed(4)}, card ${card.copy_accuracy}`,
    );
  },
);
