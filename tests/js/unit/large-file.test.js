// readLocalFile (web/lib/files.js): a model file past 2 GiB, as a billion-parameter checkpoint in F16
// is, read whole in Node (fs.readFile refuses it). The file is sparse: it takes no disk and reads fast.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, writeSync, ftruncateSync, closeSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { readLocalFile } from '../../../web/lib/files.js';

const dir = mkdtempSync(path.join(tmpdir(), 'headscope-large-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a file of 2 GiB and more is read whole, its last bytes included', async () => {
  const size = 2 ** 31 + 12345;
  const file = path.join(dir, 'model.safetensors');
  const fd = openSync(file, 'w');
  ftruncateSync(fd, size);
  writeSync(fd, Buffer.from([1, 2, 3]), 0, 3, 7); // marks at the start, the 2 GiB line and the end
  writeSync(fd, Buffer.from([4, 5]), 0, 2, 2 ** 31 - 1);
  writeSync(fd, Buffer.from([6]), 0, 1, size - 1);
  closeSync(fd);
  const bytes = await readLocalFile(pathToFileURL(file));
  assert.equal(bytes.byteLength, size);
  assert.deepEqual(
    [bytes[7], bytes[8], bytes[9], bytes[2 ** 31 - 1], bytes[2 ** 31], bytes[size - 1]],
    [1, 2, 3, 4, 5, 6],
  );
  assert.equal(bytes[size - 2], 0);
});
