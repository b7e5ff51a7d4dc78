// The head the demo page opens on for the article's sentence, read from a model card (the rule the
// page applies; the end-to-end test checks that the page opens where this function says).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openingHead } from '../../web/demo/models.js';

const link = (queryToken, layer, head, weight, uniform) => ({ query_token: queryToken, top: [{ layer, head, weight }], uniform_baseline: uniform });
const card = (links, heads = []) => ({ chef_sentence: { links }, heads });

test('the link to chef furthest above uniform attention, when at least 1.5x', () => {
  // cooked->chef 0.30/0.15 = 2.0x, who->chef 0.70/0.40 = 1.75x: cooked wins
  const c = card({ 'cooked->chef': link(11, 1, 6, 0.30, 0.15), 'who->chef': link(4, 0, 2, 0.70, 0.40) });
  assert.deepEqual(openingHead(c), { layer: 1, head: 6, token: 11, ratio: 2 });
});

test('below 1.5x: the strongest previous-token head (score >= 0.5) at the query token of cooked', () => {
  const links = { 'cooked->chef': link(11, 0, 6, 0.146, 0.1667), 'who->chef': link(4, 0, 2, 0.49, 0.4) };
  const heads = [{ layer: 0, head: 1, prev_token: 0.55 }, { layer: 1, head: 3, prev_token: 0.9 }, { layer: 1, head: 0, prev_token: 0.2 }];
  assert.deepEqual(openingHead(card(links, heads)), { layer: 1, head: 3, token: 11 });
});

test('no clear link and no previous-token head: null; a card without the sentence: null', () => {
  assert.equal(openingHead(card({ 'cooked->chef': link(11, 0, 6, 0.1, 0.1667) }, [{ layer: 0, head: 0, prev_token: 0.49 }])), null);
  assert.equal(openingHead({}), null);
  // a link whose uniform baseline is missing or zero is skipped, not divided by
  assert.equal(openingHead(card({ 'cooked->chef': link(11, 0, 6, 0.5, 0) })), null);
});
