// Hostile text through the JavaScript API: lone surrogates, NUL, right-to-left, combining marks,
// emoji sequences and a megabyte of pasted text are handled; truncation keeps the last tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel } from '../../../dist/headscope.js';
import { testModelUrl } from './helpers.js';

const model = await loadModel(testModelUrl);
const { nPositions } = model.info.config;

function checkSpans(text, r) {
  for (const t of r.tokens) {
    assert.ok(t.start >= 0 && t.start <= t.end && t.end <= text.length, `span [${t.start}, ${t.end}) outside the text`);
  }
  assert.equal(r.tokens.at(-1).end, text.length);
}

test('lone surrogates become U+FFFD, keeping string indices', () => {
  for (const text of ['a\uD800b', '\uDC00start', 'end\uD83D', '\uD83D\uD83D\uDE00']) {
    const r = model.run(text);
    assert.equal(r.text.length, text.length);
    assert.ok(!/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(r.text));
    checkSpans(text, r);
  }
});

test('NUL, right-to-left, combining marks and emoji sequences', () => {
  for (const text of [
    'a\0b\0c',
    'שלום עולם مرحبا',
    'e\u0301\u0302\u0303 Zalgo̶̢͓',
    '👨‍👩‍👧 🇫🇷 👍🏽 1️⃣',
    '\u202Ereversed\u202C',
    '\uFEFFbom',
  ]) {
    const r = model.run(text);
    checkSpans(text, r);
    assert.ok(r.logitsLast.every(Number.isFinite));
    for (const t of r.tokens) assert.equal(typeof t.text, 'string');
  }
});

test('a megabyte of pasted text keeps the last tokens that fit, cut in steps of an eighth of the context', () => {
  const sentence = 'The chef, who trained in Paris, cooked the meal quickly. ';
  const big = sentence.repeat(Math.ceil((1 << 20) / sentence.length));
  const t0 = performance.now();
  const r = model.run(big);
  const ms = performance.now() - t0;
  const step = Math.max(1, Math.floor(nPositions / 8));
  assert.ok(r.T <= nPositions && r.T > nPositions - step, `T ${r.T}`);
  assert.equal(r.droppedTokens % step, 0);
  assert.ok(r.droppedTokens > 1000);
  assert.equal(r.tokens.at(-1).end, big.length);
  assert.ok(r.tokens[0].start > big.length - 2000, 'the kept tokens are the ones at the end');
  console.log(`# 1 MB of text: ${r.droppedTokens} tokens dropped, ${ms.toFixed(0)} ms`);
});
