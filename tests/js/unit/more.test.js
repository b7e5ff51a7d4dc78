// The pages' long explanations cut after their first sentence (web/demo/common/more.js): where the
// first sentence ends, past abbreviations and numbers. The cutting itself is checked in the pages
// (tests/e2e/demo.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstSentenceEnd } from '../../../web/demo/common/more.js';

test("the pages' explanations are cut after their first sentence, not inside an abbreviation or a number", () => {
  assert.equal(firstSentenceEnd('One thing. Another thing.'), 'One thing.'.length);
  assert.equal(
    firstSentenceEnd('Weights, e.g. 0.25, sit mid-scale. Then more.'),
    'Weights, e.g. 0.25, sit mid-scale.'.length,
  );
  assert.equal(firstSentenceEnd('A score of 0.25 is mid-scale. (Really.)'), 'A score of 0.25 is mid-scale.'.length);
  assert.equal(firstSentenceEnd('Only one sentence here.'), -1);
  assert.equal(firstSentenceEnd('lower case follows. no cut'), -1);
  assert.equal(firstSentenceEnd('Is it? Yes.'), 'Is it?'.length);
});
