// Opening a model folder from the reader's disk on the demo page: the folder picker, the four-files
// picker and drag and drop; clear errors for a folder without the files and for a checkpoint that
// is not GPT-2-shaped, with the previous model still in use. Nothing is uploaded: the test checks
// that no request carries the files. Screenshots in build/e2e-artifacts/local-*.png.
import { mkdirSync, copyFileSync, writeFileSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test as base, expect, ROOT, shot, openDemo } from './fixtures.mjs';

const FIXTURE = path.join(ROOT, 'tests/fixtures/models/odd-hs12');

const test = base.extend({
  // folder(name, { omit, extra, config }): a model folder `name` in the test's output folder with the
  // fixture's files, minus `omit`, plus `extra` ({ file: text }), with `config` as config.json if given
  folder: async ({}, use, testInfo) => {
    await use((name, { omit = [], extra = {}, config = null } = {}) => {
      const dir = testInfo.outputPath('local-models', name);
      mkdirSync(dir, { recursive: true });
      for (const f of ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt']) {
        if (!omit.includes(f)) copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
      }
      if (config) writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
      for (const [f, text] of Object.entries(extra)) writeFileSync(path.join(dir, f), text);
      return dir;
    });
  },
});

const bodyModel = (page) => page.locator('body').getAttribute('data-model');

test('a model folder from disk: picked by folder, named everywhere, not uploaded; bad folders are refused and the model stays', async ({
  page,
  site,
  folder,
}) => {
  const posted = [];
  // the files are read in the page; nothing may be sent, and nothing may name the local folders
  page.on('request', (r) => {
    if (r.method() !== 'GET' || /my-gpt|odd-shape|broken-gpt|local-models/.test(r.url()))
      posted.push(`${r.method()} ${r.url()}`);
  });
  await openDemo(page, site.url('index.html'));
  const before = await bodyModel(page);
  const status = page.locator('#local-status');

  // 1. a folder without merges.txt: refused with a message naming it; the page keeps its model
  await page.setInputFiles(
    '#folder-input',
    folder('broken-gpt', { omit: ['merges.txt'], extra: { 'pytorch_model.bin': 'x' } }),
  );
  await expect(status).toContainText('Could not open');
  await expect(status).toContainText(/"broken-gpt" is missing merges\.txt/);
  await expect(status).toContainText(`Still showing ${before}`);
  expect(await bodyModel(page)).toBe(before);

  // 2. a checkpoint that is not GPT-2-shaped (n_embd not divisible by n_head): the engine's message
  const cfg = JSON.parse(readFileSync(path.join(FIXTURE, 'config.json'), 'utf8'));
  await page.setInputFiles('#folder-input', folder('odd-shape', { config: { ...cfg, n_head: 5 } }));
  await expect(status).toContainText('Could not open odd-shape');
  await expect(status).toContainText(/n_embd .*n_head|n_head/);
  expect(await bodyModel(page), 'the previous model is still in use').toBe(before);
  // ... and still runs: typing updates the views
  await page.fill('#text', 'Still the same model.');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result.text)).toBe('Still the same model.');

  // 2b. a model too large for the tab (config.json claims 100 layers of width 16,384: about 1.2 TB of
  // weights): refused before any weight is read, with its size and the tab's limit; the page keeps
  // its model and it still runs
  await page.setInputFiles(
    '#folder-input',
    folder('huge-gpt', { config: { ...cfg, n_embd: 16384, n_head: 128, n_layer: 100 } }),
  );
  await expect(status).toContainText('Could not open huge-gpt');
  await expect(status).toContainText(/this model needs about \d{4}\.\d GB of wasm memory .*the limit is 4\.0 GB/);
  await expect(status).toContainText(`Still showing ${before}`);
  expect(await bodyModel(page), 'the previous model is still in use').toBe(before);
  await page.fill('#text', 'Still here after the large one.');
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result.text))
    .toBe('Still here after the large one.');

  // 3. a good folder: the page switches to it, names it in the picker, the tagline and the info
  await page.setInputFiles('#folder-input', folder('my-gpt'));
  await expect(page.locator('body')).toHaveAttribute('data-model', 'my-gpt');
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result && window.headscopeDemo.model.info.name))
    .toBe('my-gpt');
  await expect(status).toHaveText(
    /Opened my-gpt from your disk \([\d.]+ M parameters, [\d.]+ MB of weights( in F16| in 8 bits)?\)\. Nothing was uploaded\./,
  );
  await expect(page.locator('#tagline')).toHaveText(/^Every attention head of my-gpt \(\d+ layers × \d+ heads, /);
  await expect(page.locator('#model-info')).toHaveText(/^Model: my-gpt \(from your disk, not uploaded\)/);
  await expect(page.locator('#model-select')).toHaveValue('local:my-gpt');
  await expect(page).toHaveTitle(/my-gpt/);
  // the views show the new model's result for the current text
  await page.fill('#text', 'Now the folder from disk.');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result.text)).toBe('Now the folder from disk.');
  const shape = await page.evaluate(() => ({
    L: window.headscopeDemo.result.nLayer,
    H: window.headscopeDemo.result.nHead,
  }));
  expect(shape).toEqual({ L: cfg.n_layer, H: cfg.n_head });
  await expect(page.locator('#grid [role="gridcell"]')).toHaveCount(cfg.n_layer * cfg.n_head);
  // a model from disk has no URL: the page's URL keeps the text and view, not the model
  await expect
    .poll(() =>
      page.evaluate(() => !new URLSearchParams(location.search).has('model') || location.search.includes('fixtures')),
    )
    .toBe(true);
  await shot(page, 'local-folder', { fullPage: true });
  expect(posted, 'no request sent the files anywhere').toEqual([]);
});

test('a model from disk by its four files, and by drag and drop of the folder', async ({ page, site, folder }) => {
  await openDemo(page, site.url('index.html'));
  const dir = folder('four-files');
  await page.setInputFiles(
    '#files-input',
    ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt'].map((f) => path.join(dir, f)),
  );
  // files chosen one by one carry no folder name: the page calls it "local model"
  await expect(page.locator('body')).toHaveAttribute('data-model', 'local model');
  await expect
    .poll(() =>
      page.evaluate(
        () => window.headscopeDemo.model.info.name === 'local model' && !document.body.dataset.localLoading,
      ),
    )
    .toBe(true);
  await page.locator('#local-status').evaluate((e) => {
    e.textContent = '';
  });
  // drag and drop: a DataTransfer with the four files, dropped on the page
  const payload = Object.fromEntries(
    ['config.json', 'vocab.json', 'merges.txt', 'model.safetensors'].map((f) => [
      f,
      readFileSync(path.join(dir, f)).toString('base64'),
    ]),
  );
  await page.evaluate((files) => {
    const dt = new DataTransfer();
    for (const [name, b64] of Object.entries(files)) {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      dt.items.add(new File([bytes], name));
    }
    for (const type of ['dragenter', 'dragover', 'drop'])
      document.body.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, payload);
  await expect(page.locator('#local-status')).toContainText('Opened local model');
  await expect.poll(() => page.evaluate(() => !document.body.dataset.localLoading)).toBe(true);
  await expect(page.locator('body'), 'the drop outline is gone').not.toHaveClass(/(^|\s)drop-active(\s|$)/);
});

test('a Llama-family folder (tokenizer.json, grouped-query attention) opens; the grid groups the heads that share keys and values (screenshots)', async ({
  page,
  site,
  problems,
}, testInfo) => {
  // llama-mqa's config with 2 layers of 4 query heads over 1 key/value head would group all heads in one;
  // llama-gqa's 4 over 2 shows two groups
  const src = path.join(ROOT, 'tests/fixtures/models/llama-gqa');
  const dir = testInfo.outputPath('local-models', 'tiny-llama');
  mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(path.join(src, f), path.join(dir, f));
  // the hub's folders often hold GPT-2-style vocab.json and merges.txt too: config.json's model_type
  // picks tokenizer.json (its BOS below shows it was read)
  for (const f of ['vocab.json', 'merges.txt']) copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
  const cfg = JSON.parse(readFileSync(path.join(src, 'config.json'), 'utf8'));
  await openDemo(page, site.url('index.html'));
  await page.setInputFiles('#folder-input', dir);
  await expect(page.locator('body')).toHaveAttribute('data-model', 'tiny-llama');
  await expect(page.locator('#model-info')).toContainText(
    'heads 0-1 share key/value head 0, heads 2-3 share key/value head 1 (grouped-query attention)',
  );
  // 2 layers x 2 key/value heads x head size 6 x (key + value) x 4 bytes
  const cacheBytes = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 4;
  await expect(page.locator('#model-info')).toContainText(`${cacheBytes} bytes of key/value cache per token`);
  await page.fill('#text', 'The chef, who trained in Paris');
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result?.text))
    .toBe('The chef, who trained in Paris');
  // the model's tokens: Llama 3's <|begin_of_text|> first, then the text's
  const first = await page.evaluate(() => window.headscopeDemo.result.tokens[0].text);
  expect(first).toBe('<|begin_of_text|>');
  // the grid: every query head's map, and a bracket per key/value head over its query heads
  await expect(page.locator('#grid [role="gridcell"]')).toHaveCount(cfg.num_hidden_layers * cfg.num_attention_heads);
  const groups = page.locator('#grid .hs-grid-group');
  await expect(groups).toHaveCount(cfg.num_key_value_heads);
  await expect(groups.first()).toHaveText('key/value head 0');
  // each bracket spans the columns of its heads: its left and right edges are its first and last head's
  for (const [kv, a, b] of [
    [0, 0, 1],
    [1, 2, 3],
  ]) {
    const g = await groups.nth(kv).boundingBox();
    const c0 = await page.locator(`#grid [data-layer="0"][data-head="${a}"]`).boundingBox();
    const c1 = await page.locator(`#grid [data-layer="0"][data-head="${b}"]`).boundingBox();
    expect(Math.abs(g.x - c0.x)).toBeLessThan(4);
    expect(Math.abs(g.x + g.width - (c1.x + c1.width))).toBeLessThan(4);
  }
  await expect(page.locator('#grid [data-layer="1"][data-head="3"]')).toHaveAttribute(
    'aria-label',
    /^Layer 1, head 3 \(heads 2-3 share key\/value head 1\)/,
  );
  // the inside panel says which heads share this head's keys and values
  await page.locator('#grid [data-layer="1"][data-head="3"]').click();
  await page.locator('#inside').scrollIntoViewIfNeeded();
  await expect(page.locator('#inside-kv')).toContainText('In this model heads 2-3 share key/value head 1');
  // "How the heads combine" splits the next token's logit through the final RMSNorm, and its parts add up
  const combine = page.locator('section:has(#combine-title)');
  await combine.scrollIntoViewIfNeeded(); // drawn, and its split asked for, while on screen
  await expect(combine).toContainText('through the final RMSNorm');
  await expect(combine).toContainText(/All parts sum to -?\d/);
  // the grouped grid and the notes keep the page accessible (as tests/e2e/a11y.test.mjs checks the
  // GPT-2 pages): no serious or critical axe violations. axe's own <style> elements are refused by
  // the strict CSP, which is expected from here on.
  expect(problems.unexpected).toEqual([]);
  problems.allow(
    /^CSP violation: style-src-elem inline$/,
    /^console error: Applying inline style violates the following Content Security Policy directive 'style-src 'self''/,
  );
  await page.evaluate(readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));
  const violations = await page.evaluate(async () =>
    (await window.axe.run()).violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes[0].target.join(' ')}`),
  );
  expect(violations).toEqual([]);
  await shot(page, 'local-llama', { fullPage: true });
});
