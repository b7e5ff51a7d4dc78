// web/demo/precache.mjs: the service worker's file list is the files in the built site (nothing typed
// in), split into the shell cached at install and the models' files cached on use; the build's
// version follows every file's bytes; the worker written into the site parses and holds that list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { siteFiles, writeServiceWorker, cachedOnUse, WORKER } from '../../../web/demo/precache.mjs';

function site(files) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'precache-'));
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), text);
  }
  return dir;
}

const FILES = {
  'article.html': '<p>a</p>',
  'headscope_wasm.wasm': 'wasm',
  'models/index.json': '{}',
  'models/m/card.json': '{}',
  'models/m/model.safetensors': 'weights',
  'models/m/vocab.json': '{}',
  [WORKER]: 'an old worker',
};

test("the list is the site's files: the shell at install, a model's files (not its card) on use", () => {
  const dir = site(FILES);
  try {
    const { shell, onUse, version } = siteFiles(dir);
    assert.deepEqual(shell, ['article.html', 'headscope_wasm.wasm', 'models/index.json', 'models/m/card.json']);
    assert.deepEqual(onUse, ['models/m/model.safetensors', 'models/m/vocab.json']);
    assert.match(version, /^[0-9a-f]{16}$/);
    assert.equal(cachedOnUse('models/index.json'), false);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('the version changes with any byte of any file, and only then', () => {
  const a = site(FILES);
  const b = site(FILES);
  const c = site({ ...FILES, 'models/m/vocab.json': '{ }' });
  const d = site({ ...FILES, [WORKER]: 'another worker' });
  try {
    const v = (dir) => siteFiles(dir).version;
    assert.equal(v(a), v(b));
    assert.notEqual(v(a), v(c));
    assert.equal(v(a), v(d), 'the worker itself is not part of the build it lists');
  } finally {
    for (const dir of [a, b, c, d]) rmSync(dir, { recursive: true });
  }
});

test('the worker written into the site holds the list and runs its install over it', async () => {
  const dir = site(FILES);
  try {
    const listed = writeServiceWorker(dir);
    const source = readFileSync(path.join(dir, WORKER), 'utf8');
    // the worker in a sandbox with a service worker's globals, enough to run its install
    const handlers = {};
    const added = [];
    const sandbox = {
      URL,
      Request: class {
        constructor(url) {
          this.url = url;
        }
      },
      Set,
      self: {
        location: { href: 'https://example.test/site/service-worker.js' },
        addEventListener: (type, fn) => (handlers[type] = fn),
        skipWaiting: async () => {},
      },
      caches: { open: async () => ({ addAll: async (requests) => added.push(...requests.map((r) => r.url)) }) },
    };
    vm.runInNewContext(source, sandbox);
    let done;
    handlers.install({ waitUntil: (p) => (done = p) });
    await done;
    assert.deepEqual(
      added,
      listed.shell.map((f) => `https://example.test/site/${f}`),
    );
    assert.deepEqual(Object.keys(handlers).sort(), ['activate', 'fetch', 'install', 'message']);
  } finally {
    rmSync(dir, { recursive: true });
  }
});
