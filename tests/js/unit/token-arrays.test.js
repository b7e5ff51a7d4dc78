// The engine's tokens as the binding sends them (cpp/bindings/embind.cpp, set_token_arrays: ids, byte
// spans, and every display text in one UTF-8 buffer with each text's end), decoded by
// web/lib/result.js's tokenArrays / engineTokens. The buffers are written here with TextEncoder from
// the texts expected back, so each decoded text is compared with an independent source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tokenArrays, engineTokens } from '../../../web/lib/result.js';

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
