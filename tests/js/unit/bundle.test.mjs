// The package as web/bundle.mjs publishes it (`node web/bundle.mjs --out DIR lib`): the sources
// moved into folders (web/lib/worker/, the component .d.ts in web/component/), but dist/ stays flat
// under the names package.json's "exports" and the CDN URLs use, and every import between the
// published files points at a published name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
// built beside them by scripts/build-package.sh (the engine's glue, the bundled components)
const BUILT = [
  'headscope_wasm.js',
  'headscope_wasm_relaxed.js',
  'headscope_wasm_threads.js',
  'headscope_wasm_threads_relaxed.js',
  'headscope-view.js',
  'headscope-lab.js',
];

test("lib: flat published names, the exports' types among them, and imports that resolve to published files", (t) => {
  const out = mkdtempSync(path.join(tmpdir(), 'headscope-lib-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  execFileSync(process.execPath, [path.join(ROOT, 'web/bundle.mjs'), '--out', out, 'lib']);
  const files = readdirSync(out, { recursive: true })
    .filter((f) => !f.endsWith(path.sep) && /\.(js|ts|json)$/.test(f))
    .sort();
  for (const name of [
    'headscope.js',
    'headscope-worker.js',
    'worker-thread.js',
    'worker-protocol.js',
    'analysis.js',
    'roles.json',
    'models/index.json',
  ])
    assert.ok(files.includes(name), `${name} is published`);
  for (const entry of Object.values(pkg.exports)) {
    const types = typeof entry === 'object' ? entry.types : null;
    if (types)
      assert.ok(files.includes(path.basename(types)) || BUILT.includes(path.basename(types)), `${types} is published`);
  }
  for (const file of files.filter((f) => /\.(js|d\.ts)$/.test(f))) {
    const text = readFileSync(path.join(out, file), 'utf8');
    for (const [, specifier] of text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"](\.\.?\/[^'"]+)['"]/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
      assert.ok(
        existsSync(path.join(out, target)) || BUILT.includes(target),
        `${file} imports ${specifier}, which is not published`,
      );
    }
  }
});
