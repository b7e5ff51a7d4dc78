// Opening a model folder from the reader's disk on the demo page: the folder picker, the four-files
// picker and drag and drop; clear errors for a folder without the files and for a checkpoint that
// is not GPT-2-shaped, with the previous model still in use. Nothing is uploaded: the test checks
// that no request carries the files. Screenshots in build/e2e-artifacts/local-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, copyFileSync, writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, startServer, launch, openPage, shot, withModel, demoReady, cspViolations } from './helpers.mjs';

const FIXTURE = path.join(ROOT, 'tests/fixtures/models/odd-hs12');
const WORK = path.join(ROOT, 'build/e2e-local-models');
let server;
let browser;

/** A model folder named `name` under WORK with the fixture's files, minus `omit`, plus `extra`. */
function folder(name, { omit = [], extra = {}, config = null } = {}) {
  const dir = path.join(WORK, name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt']) {
    if (!omit.includes(f)) copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
  }
  if (config) writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  for (const [f, text] of Object.entries(extra)) writeFileSync(path.join(dir, f), text);
  return dir;
}

before(async () => {
  rmSync(WORK, { recursive: true, force: true });
  server = await startServer();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function statusText(page) {
  return page.locator('#local-status').textContent();
}

test('a model folder from disk: picked by folder, named everywhere, not uploaded; bad folders are refused and the model stays', async (t) => {
  const { page, context, problems } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  const posted = [];
  // the files are read in the page; nothing may be sent, and nothing may name the local folders
  page.on('request', (r) => { if (r.method() !== 'GET' || /my-gpt|odd-shape|broken-gpt|e2e-local-models/.test(r.url())) posted.push(`${r.method()} ${r.url()}`); });
  await page.goto(withModel(server.base + 'index.html'));
  await demoReady(page);
  const before = await page.evaluate(() => document.body.dataset.model);

  // 1. a folder without merges.txt: refused with a message naming it; the page keeps its model
  await page.setInputFiles('#folder-input', folder('broken-gpt', { omit: ['merges.txt'], extra: { 'pytorch_model.bin': 'x' } }));
  await page.waitForFunction(() => /Could not open/.test(document.getElementById('local-status').textContent));
  let status = await statusText(page);
  assert.match(status, /"broken-gpt" is missing merges\.txt/);
  assert.match(status, new RegExp(`Still showing ${before}`));
  assert.equal(await page.evaluate(() => document.body.dataset.model), before);

  // 2. a checkpoint that is not GPT-2-shaped (n_embd not divisible by n_head): the engine's message
  const cfg = JSON.parse(readFileSync(path.join(FIXTURE, 'config.json'), 'utf8'));
  await page.setInputFiles('#folder-input', folder('odd-shape', { config: { ...cfg, n_head: 5 } }));
  await page.waitForFunction(() => /Could not open odd-shape/.test(document.getElementById('local-status').textContent));
  status = await statusText(page);
  assert.match(status, /n_embd .*n_head|n_head/, status);
  assert.equal(await page.evaluate(() => document.body.dataset.model), before, 'the previous model is still in use');
  // ... and still runs: typing updates the views
  await page.fill('#text', 'Still the same model.');
  await page.waitForFunction(() => window.headscopeDemo.result.text === 'Still the same model.');

  // 3. a good folder: the page switches to it, names it in the picker, the tagline and the info
  const runs = await page.evaluate(() => window.headscopeDemo.runs);
  await page.setInputFiles('#folder-input', folder('my-gpt'));
  await page.waitForFunction(() => document.body.dataset.model === 'my-gpt');
  await page.waitForFunction((n) => window.headscopeDemo.result && window.headscopeDemo.model.info.name === 'my-gpt'
    && document.body.dataset.renders > 0, runs);
  assert.match(await statusText(page), /Opened my-gpt from your disk \([\d.]+ M parameters, [\d.]+ MB of weights\)\. Nothing was uploaded\./);
  assert.match(await page.textContent('#tagline'), /^Every attention head of my-gpt \(\d+ layers × \d+ heads, /);
  assert.match(await page.textContent('#model-info'), /^Model: my-gpt \(from your disk, not uploaded\)/);
  assert.equal(await page.inputValue('#model-select'), 'local:my-gpt');
  assert.match(await page.title(), /my-gpt/);
  // the views show the new model's result for the current text
  await page.fill('#text', 'Now the folder from disk.');
  await page.waitForFunction(() => window.headscopeDemo.result.text === 'Now the folder from disk.');
  const shape = await page.evaluate(() => ({ L: window.headscopeDemo.result.nLayer, H: window.headscopeDemo.result.nHead }));
  assert.deepEqual(shape, { L: cfg.n_layer, H: cfg.n_head });
  assert.equal(await page.locator('#grid [role="gridcell"]').count(), cfg.n_layer * cfg.n_head);
  // a model from disk has no URL: the page's URL keeps the text and view, not the model
  await page.waitForFunction(() => !new URLSearchParams(location.search).has('model') || location.search.includes('fixtures'));
  await page.evaluate(() => new Promise(requestAnimationFrame));
  await shot(page, 'local-folder', { fullPage: true });
  assert.deepEqual(posted, [], 'no request sent the files anywhere');
  assert.deepEqual(await cspViolations(page), []);
  assert.deepEqual(problems, []);
});

test('a model from disk by its four files, and by drag and drop of the folder', async (t) => {
  const { page, context, problems } = await openPage(browser, withModel(server.base + 'index.html'));
  t.after(() => context.close());
  await demoReady(page);
  const dir = folder('four-files');
  await page.setInputFiles('#files-input', ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt'].map((f) => path.join(dir, f)));
  // files chosen one by one carry no folder name: the page calls it "local model"
  await page.waitForFunction(() => document.body.dataset.model === 'local model');
  await page.waitForFunction(() => window.headscopeDemo.model.info.name === 'local model' && !document.body.dataset.localLoading);
  await page.evaluate(() => { document.getElementById('local-status').textContent = ''; });
  // drag and drop: a DataTransfer with the four files, dropped on the page
  const payload = Object.fromEntries(['config.json', 'vocab.json', 'merges.txt', 'model.safetensors']
    .map((f) => [f, readFileSync(path.join(dir, f)).toString('base64')]));
  await page.evaluate((files) => {
    const dt = new DataTransfer();
    for (const [name, b64] of Object.entries(files)) {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      dt.items.add(new File([bytes], name));
    }
    for (const type of ['dragenter', 'dragover', 'drop']) document.body.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, payload);
  await page.waitForFunction(() => /Opened local model/.test(document.getElementById('local-status').textContent) && !document.body.dataset.localLoading);
  assert.equal(await page.evaluate(() => document.body.classList.contains('drop-active')), false, 'the drop outline is gone');
  assert.deepEqual(problems, []);
});
