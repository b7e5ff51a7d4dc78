// weightSource (web/lib/files.js): how the engine reads a model's weights given as bytes or as a Blob.
// In a Worker a Blob is read a piece at a time through FileReaderSync (which Node lacks: a stand-in
// below reads the pieces the wrapper slices, so the wrapper's own logic is what is tested; the real
// one runs in tests/e2e/local-model.test.mjs, a folder opened in the demo's Worker).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { weightSource } from '../../../web/lib/files.js';

const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) % 251);

test('bytes pass as they are; a Blob without FileReaderSync is read whole', async () => {
  assert.deepEqual(await weightSource(bytes), bytes);
  assert.deepEqual(await weightSource(bytes.buffer), bytes);
  assert.equal(typeof globalThis.FileReaderSync, 'undefined');
  const whole = await weightSource(new Blob([bytes]));
  assert.ok(whole instanceof Uint8Array);
  assert.deepEqual(whole, bytes);
  await assert.rejects(() => weightSource('not bytes'), /weights must be an ArrayBuffer or typed array/);
});

test('in a Worker a Blob is read in the pieces the engine asks for, and a failed piece says why', async () => {
  // a Blob whose slices remember their range, and a FileReaderSync that reads them (or fails past 900)
  class Sliced extends Blob {
    slice(begin, end) {
      return { begin, end };
    }
  }
  const reads = [];
  globalThis.FileReaderSync = class {
    readAsArrayBuffer({ begin, end }) {
      reads.push([begin, end]);
      if (end > 900) throw new Error('The requested file could not be read');
      return bytes.slice(begin, end).buffer;
    }
  };
  try {
    const source = await weightSource(new Sliced([bytes]));
    assert.ok(!(source instanceof Uint8Array), 'not read whole');
    assert.equal(source.length, 1000);
    assert.deepEqual(reads, []);
    assert.deepEqual(source.subarray(8, 24), bytes.subarray(8, 24));
    assert.deepEqual(source.subarray(500, 900), bytes.subarray(500, 900));
    assert.deepEqual(reads, [
      [8, 24],
      [500, 900],
    ]);
    assert.equal(source.error, '');
    assert.equal(source.subarray(800, 1000), null);
    assert.equal(source.error, 'The requested file could not be read');
  } finally {
    delete globalThis.FileReaderSync;
  }
});
