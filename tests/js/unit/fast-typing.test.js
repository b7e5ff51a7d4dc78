// Fast typing (runtime/fast-typing.js): after a worker run the page-thread instance catches up with
// the text (a prime), so that the next keystroke finds its cache ready. The prime's result is
// dropped, so it must not ask for what costs the most to copy out: every head's whole map. Fakes
// stand in for both instances and record what each run asked for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FastTypingModel } from '../../../web/component/runtime/fast-typing.js';

function fakeModel(name, calls) {
  return {
    disposed: false,
    info: { config: {} },
    run(text, options) {
      calls.push({ on: name, text, options });
      const T = text.length; // a token a character, enough for the costs fast-typing keeps
      const result = { text, T, reusedTokens: 0 };
      return name === 'worker' ? Promise.resolve(result) : result;
    },
    dispose() {
      this.disposed = true;
    },
  };
}

// the prime is a task of its own (setTimeout 0): a later timer of the same delay runs after it
const afterPrime = () => new Promise((resolve) => setTimeout(resolve, 0));

test('the prime after a worker run asks the page instance for thumbnails, never for maps', async () => {
  const calls = [];
  const model = new FastTypingModel(fakeModel('worker', calls), fakeModel('page', calls));
  assert.equal(await model.pageReady, true);
  const text = 'The chef, who trained in Paris, cooked the meal quickly.';
  const result = await model.run(text, { attention: 'all', ablate: [[0, 1]], valueNorms: true });
  assert.equal(result.ranOnPage, false, 'the first run has no page cache to extend: the worker runs it');
  await afterPrime();
  const primes = calls.filter((c) => c.on === 'page');
  assert.equal(primes.length, 1, `one prime, got ${JSON.stringify(calls)}`);
  assert.equal(primes[0].text, text);
  // the run's heads off and value sizes (what the next keystroke's update reuses), no maps
  assert.deepEqual(primes[0].options, { ablate: [[0, 1]], topK: 1, valueNorms: true, attention: 'thumbnails' });
  model.dispose();
});

test('runs that compute every token (all logits, a patch) leave the page instance alone', async () => {
  const calls = [];
  const model = new FastTypingModel(fakeModel('worker', calls), fakeModel('page', calls));
  await model.pageReady;
  await model.run('Some text.', { allLogits: true });
  await model.run('Some text.', { patch: { from: 'Other text.', layer: 0, head: 0 } });
  await afterPrime();
  assert.deepEqual(
    calls.map((c) => c.on),
    ['worker', 'worker'],
  );
  model.dispose();
});
