// The comparison page's trade-off sentence is computed from the numbers, not written in advance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tradeoffSentence } from '../../../web/demo/compare/tradeoff.js';

const entry = (nHead, valLoss, speedMs, params = 1068544) => ({
  info: { config: { nHead, headSize: 128 / nHead } },
  valLoss,
  valPpl: Math.exp(valLoss),
  params,
  speedMs,
});

test('names the best and worst model and says when more heads helped', () => {
  const s = tradeoffSentence([entry(1, 5.2, 3), entry(2, 5.1, 3.1), entry(4, 5.0, 3.5), entry(8, 4.9, 6)]);
  assert.match(
    s,
    /the 8-head model predicts best \(loss 4\.900, perplexity 134\.3\) and the 1-head model worst \(5\.200/,
  );
  assert.match(s, /more heads helped, by 0\.300 nats per token from 1 to 8 heads/);
  assert.match(s, /same number of parameters \(1\.069 M\)/);
  assert.match(s, /the 8-head model takes 2\.0× as long as the 1-head model on this text \(6\.0 vs 3\.0 ms/);
});

test('an optimum in the middle, and no difference in loss', () => {
  assert.match(
    tradeoffSentence([entry(1, 5.2), entry(4, 5.0), entry(8, 5.1)]),
    /more heads helped up to 4, and 8 narrower heads \(width 16\) gave some of that back/,
  );
  assert.match(
    tradeoffSentence([entry(1, 5.049), entry(2, 5.051), entry(4, 5.046), entry(8, 5.049)]),
    /the 4-head model predicts best .* the number of heads made almost no difference/,
  );
  assert.match(tradeoffSentence([entry(1, 5.0), entry(8, 5.3)]), /more, narrower heads did not help/);
});

test('speed: about the same time; waiting without numbers', () => {
  assert.match(
    tradeoffSentence([entry(1, NaN, 3.0), entry(8, NaN, 3.2)]),
    /the 8-head model takes about as long as the 1-head model/,
  );
  assert.equal(tradeoffSentence([]), 'Waiting for the models and their cards…');
});
