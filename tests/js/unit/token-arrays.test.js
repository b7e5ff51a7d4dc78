// The engine's tokens as the binding sends them (cpp/bindings/embind.cpp, set_token_arrays: ids, byte
// spans, and every display text in one UTF-8 buffer with each text's end), decoded by
// web/lib/result.js's tokenArrays / engineTokens. The buffers are written here with TextEncoder from
// the texts expected back, so each decoded text is compared with an independent source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tokenArrays, engineTokens } from '../../../web/lib/result.js';
import { tokensAfter, withPrevious } from '../../../web/lib/reuse.js';

function sent(texts) {
  const parts = texts.map((t) => new TextEncoder().encode(t));
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  const ends = new Int32Array(parts.length);
  let at = 0;
  parts.forEach((p, i) => {
    bytes.set(p, at);
    at += p.length;
    ends[i] = at;
  });
  const ids = Int32Array.from(texts, (_, i) => 100 + i);
  // spans of the concatenated texts, as a run without a source text has them
  const starts = Int32Array.from(ends, (e, i) => (i ? ends[i - 1] : 0));
  return { tokenIds: ids, tokenByteStarts: starts, tokenByteEnds: ends, tokenTextBytes: bytes, tokenTextEnds: ends };
}

test('every display text comes back as sent: ASCII, multi-byte, empty, long, a leading U+FEFF, NUL', () => {
  const texts = [
    'The',
    ' chef',
    '',
    'é',
    '\uFFFD', // a byte-level token's partial character, as token_display shows it
    '👨‍👩‍👧',
    '\uFEFFbom', // a leading U+FEFF is text, not a byte-order mark to drop
    '\uFEFF',
    'a\0b',
    'x'.repeat(65), // past the ASCII fast path's length
    'ü'.repeat(40),
  ];
  const got = tokenArrays(sent(texts));
  assert.deepEqual(
    got.map((t) => t.text),
    texts,
  );
  assert.deepEqual(
    got.map((t) => t.id),
    texts.map((_, i) => 100 + i),
  );
  const bytes = texts.map((t) => new TextEncoder().encode(t).length);
  got.forEach((t, i) => assert.equal(t.byteEnd - t.byteStart, bytes[i], `token ${i}'s span`));
});

test('engineTokens maps the spans through the caller map and stops at T', () => {
  const out = sent(['a', 'b', 'c']);
  const map = { start: (b) => b * 10, end: (b) => b * 10 + 1 };
  assert.deepEqual(engineTokens(out, 2, map), [
    { text: 'a', id: 100, start: 0, end: 11 },
    { text: 'b', id: 101, start: 10, end: 21 },
  ]);
});

// typing: the tokens an earlier result holds are not sent again (tokensAfter), and withPrevious puts
// them back. A token is held only when the ids up to it and the text up to its end are the same.
test('tokensAfter leaves out the tokens the earlier result holds; withPrevious puts them back', () => {
  const out = sent(['a', 'b', 'c', 'd']);
  const map = { start: (b) => b, end: (b) => b }; // one byte a character here
  const all = engineTokens(out, 4, map);
  const cases = [
    // [the earlier result's ids and text, the text now, tokens held]
    [{ ids: Int32Array.of(100, 101, 102), text: 'abc' }, 'abcd', 3], // a character typed at the end
    [{ ids: Int32Array.of(100, 101, 999), text: 'abz' }, 'abcd', 2], // its last token changed
    [{ ids: Int32Array.of(100, 101, 102), text: 'aXc' }, 'abcd', 0], // the same ids over another text
    [{ ids: Int32Array.of(100, 101, 102, 103, 104), text: 'abcde' }, 'abcd', 4], // a character deleted
    [{ ids: Int32Array.of(7), text: 'a' }, 'abcd', 0], // nothing shared
    [null, 'abcd', 0], // no earlier result
    [{ ids: Int32Array.of(100) }, 'abcd', 0], // an earlier result's ids without its text
    // a text past the context: the same window ids with another count dropped before them
    [{ ids: Int32Array.of(100, 101, 102), text: 'abc', droppedTokens: 1 }, 'abcd', 0],
  ];
  for (const [previous, text, held] of cases) {
    const { tokens, tokensFrom } = tokensAfter(out, 4, map, text, previous, 0);
    const label = `${previous?.text} -> ${text}`;
    assert.equal(tokensFrom, held, label);
    assert.deepEqual(tokens, all.slice(held), label);
    const earlier = { tokens: all.slice(0, Math.max(held, 3)).map((t) => ({ ...t })) };
    const merged = withPrevious(earlier, { T: 4, tokens, ...(held ? { tokensFrom: held } : {}) });
    assert.deepEqual(merged.tokens, all, label);
    assert.equal(merged.tokensFrom, undefined, 'the merged data says nothing of it');
  }
  assert.throws(
    () => withPrevious({ tokens: all.slice(0, 1) }, { T: 4, tokens: all.slice(3), tokensFrom: 3 }),
    /do not fit the earlier result/,
  );
});
