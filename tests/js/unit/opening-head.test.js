// The head the demo page opens on for the article's sentence, read from a model card (the rule the
// page applies; the end-to-end test checks that the page opens where this function says).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openingHead } from '../../../web/demo/common/models.js';

const link = (queryToken, layer, head, weight, uniform) => ({
  query_token: queryToken,
  top: [{ layer, head, weight }],
  uniform_baseline: uniform,
});
const card = (links, heads = []) => ({ chef_sentence: { links }, heads });

test('the link to chef furthest above uniform attention, when at least 1.5x', () => {
  // cooked->chef 0.30/0.15 = 2.0x, who->chef 0.70/0.40 = 1.75x: cooked wins
  const c = card({ 'cooked->chef': link(11, 1, 6, 0.3, 0.15), 'who->chef': link(4, 0, 2, 0.7, 0.4) });
  assert.deepEqual(openingHead(c), { layer: 1, head: 6, token: 11, ratio: 2 });
});

test('below 1.5x: the strongest previous-token head (score >= 0.5) at the query token of cooked', () => {
  const links = { 'cooked->chef': link(11, 0, 6, 0.146, 0.1667), 'who->chef': link(4, 0, 2, 0.49, 0.4) };
  const heads = [
    { layer: 0, head: 1, prev_token: 0.55 },
    { layer: 1, head: 3, prev_token: 0.9 },
    { layer: 1, head: 0, prev_token: 0.2 },
  ];
  assert.deepEqual(openingHead(card(links, heads)), { layer: 1, head: 3, token: 11 });
});

test('no clear link and no previous-token head: null; a card without the sentence: null', () => {
  assert.equal(
    openingHead(card({ 'cooked->chef': link(11, 0, 6, 0.1, 0.1667) }, [{ layer: 0, head: 0, prev_token: 0.49 }])),
    null,
  );
  assert.equal(openingHead({}), null);
  // a link whose uniform baseline is missing or zero is skipped, not divided by
  assert.equal(openingHead(card({ 'cooked->chef': link(11, 0, 6, 0.5, 0) })), null);
});

// New-format cards name a verb-to-subject head (card.roles.best, score averaged over probe sentences).
const roles = (layer, head, score, threshold = 3.0) => ({
  thresholds: { verb_to_subject: threshold },
  best: { verb_to_subject: { layer, head, score } },
});
const cooked = (top, uniform = 1 / 9) => ({ query_token: 8, key_tokens: [1], top, uniform_baseline: uniform });

test('the card\'s verb-to-subject head at "cooked", when its link on this sentence is clearly above chance', () => {
  // who->chef has the larger ratio (0.9/0.25 = 3.6x), but the verb-to-subject head wins: 0.2/(1/9) = 1.8x
  const c = {
    ...card({
      'cooked->chef': cooked([
        { layer: 1, head: 4, weight: 0.3 },
        { layer: 3, head: 5, weight: 0.2 },
      ]),
      'who->chef': link(3, 1, 4, 0.9, 0.25),
    }),
    roles: roles(3, 5, 3.9),
  };
  const got = openingHead(c);
  assert.deepEqual(
    { ...got, ratio: undefined },
    { layer: 3, head: 5, token: 8, role: 'verb_to_subject', ratio: undefined },
  );
  assert.ok(Math.abs(got.ratio - 1.8) < 1e-9);
});

test('a verb-to-subject head the card does not list on this sentence: the live weight decides', () => {
  const c = { ...card({ 'cooked->chef': cooked([{ layer: 1, head: 4, weight: 0.2 }]) }), roles: roles(3, 5, 3.9) };
  const calls = [];
  const strong = (l, h, q, keys) => {
    calls.push([l, h, q, keys]);
    return 0.5;
  };
  assert.deepEqual(openingHead(c, { linkWeight: strong }), {
    layer: 3,
    head: 5,
    token: 8,
    ratio: 4.5,
    role: 'verb_to_subject',
  });
  assert.deepEqual(calls, [[3, 5, 8, [1]]], "asked for that head, at cooked, over chef's tokens");
  // live weight 0.07 = 0.63x uniform (what the gen-2 sample's head does on the article's sentence):
  // not clearly above chance, so the page falls back to the strongest clear link (L1H4, 0.2 / (1/9) = 1.8x)
  const fallback = openingHead(c, { linkWeight: () => 0.07 });
  assert.equal(fallback.role, undefined);
  assert.deepEqual([fallback.layer, fallback.head, fallback.token], [1, 4, 8]);
  // no live weight (unknown): never opened on faith
  assert.equal(openingHead(c).role, undefined);
});

test('a verb-to-subject head below the threshold, or an old card, opens as before', () => {
  const links = {
    'cooked->chef': cooked([
      { layer: 3, head: 5, weight: 0.5 },
      { layer: 1, head: 4, weight: 0.1 },
    ]),
  };
  // the card's best is 2.9x < 3.0x: not a verb-to-subject head; the link rule still picks L3H5 (4.5x), without the role
  assert.equal(openingHead({ ...card(links), roles: roles(3, 5, 2.9) }).role, undefined);
  // the threshold comes from the card: a card with threshold 2.5 names it
  assert.equal(openingHead({ ...card(links), roles: roles(3, 5, 2.9, 2.5) }).role, 'verb_to_subject');
  // old card: no roles section
  assert.deepEqual(openingHead(card(links)), { layer: 3, head: 5, token: 8, ratio: 4.5 });
});

test('several verb-to-subject heads: the one that puts the most of "cooked" on "chef" here', () => {
  // L2H4 is the card's best on the probe sentences (3.8x), L3H5 also counts (3.56x); on this
  // sentence L3H5 puts 0.92 on chef, L2H4 0.31: the page opens on L3H5
  const heads = [
    { layer: 2, head: 4, verb_to_subject: 3.794 },
    { layer: 3, head: 5, verb_to_subject: 3.563 },
    { layer: 2, head: 7, verb_to_subject: 1.7 },
  ];
  const c = {
    ...card(
      {
        'cooked->chef': cooked([
          { layer: 3, head: 5, weight: 0.92 },
          { layer: 2, head: 7, weight: 0.41 },
          { layer: 2, head: 4, weight: 0.31 },
        ]),
      },
      heads,
    ),
    roles: roles(2, 4, 3.794),
  };
  const got = openingHead(c);
  assert.deepEqual([got.layer, got.head, got.token, got.role], [3, 5, 8, 'verb_to_subject']);
  // a head below the threshold (L2H7, 1.7x) is never chosen for the role, whatever its link
  const onlyWeak = { ...c, heads: heads.map((h) => (h.layer === 3 ? { ...h, verb_to_subject: 2.0 } : h)) };
  assert.deepEqual([openingHead(onlyWeak).layer, openingHead(onlyWeak).head], [2, 4]);
  // the live weight decides for heads the card does not list on this sentence
  const unlisted = { ...c, chef_sentence: { links: { 'cooked->chef': cooked([{ layer: 0, head: 0, weight: 0.5 }]) } } };
  const live = { '2:4': 0.2, '3:5': 0.6 };
  const pick = openingHead(unlisted, { linkWeight: (l, h) => live[`${l}:${h}`] });
  assert.deepEqual([pick.layer, pick.head, pick.role], [3, 5, 'verb_to_subject']);
});
