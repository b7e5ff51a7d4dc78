// byteToIndexMaps (web/lib/generation.js; from dist/, as the module loads the engine's glue): UTF-8
// byte offsets to UTF-16 indices, against a reference written here from the definition with
// TextEncoder, a character at a time: byte b maps to the start of the character holding it (start)
// and byte offset b to the end of the character holding byte b - 1 (end; 0 at 0). ASCII texts take
// the identity, the rest the arrays: both against the reference.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { byteToIndexMaps } from '../../../dist/generation.js';

function reference(text) {
  const start = [],
    end = [0];
  let index = 0;
  for (const ch of text) {
    const bytes = new TextEncoder().encode(ch).length;
    for (let b = 0; b < bytes; b++) {
      start.push(index);
      end.push(index + ch.length);
    }
    index += ch.length;
  }
  start.push(index); // the offset just past the text
  return { start, end };
}

test('every byte offset maps to the character that holds it, ASCII and not', () => {
  for (const text of [
    '',
    'The chef, who trained in Paris, cooked the meal quickly.',
    'tab\there\n',
    'café',
    'a 🧑‍🍳 b',
    '日本語 ok',
  ]) {
    const want = reference(text);
    const got = byteToIndexMaps(text);
    for (let b = 0; b < want.start.length; b++) assert.equal(got.start(b), want.start[b], `${text}: start(${b})`);
    for (let b = 0; b < want.end.length; b++) assert.equal(got.end(b), want.end[b], `${text}: end(${b})`);
  }
});
