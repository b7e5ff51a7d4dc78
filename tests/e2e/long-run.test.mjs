// Long runs on the demo page: a random model wide enough (6 layers x 12 heads, width 384, context
// 1024; written by random-model.mjs) that a full text is seconds of work in wasm. The run shows its
// progress in steps of tokens, the page keeps answering meanwhile, Cancel stops it and keeps the
// previous result, and a run to the end gives the same numbers as a run in one go.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ROOT, SITE, startServer, launch, openPage, shot } from './helpers.mjs';
import { writeRandomModel } from './random-model.mjs';

const MODEL_DIR = path.join(ROOT, 'build/e2e-long/gpt-wide');
let server;
let browser;

before(async () => {
  rmSync(path.dirname(MODEL_DIR), { recursive: true, force: true });
  const shipped = path.join(SITE, 'models/headscope-base');
  const tokenizerDir = existsSync(path.join(shipped, 'vocab.json')) ? shipped : path.join(ROOT, 'tests/fixtures/models/odd-hs12');
  writeRandomModel(MODEL_DIR, { n_layer: 6, n_head: 12, n_embd: 384, n_positions: 1024, tokenizerDir, attnScale: 0.05 });
  server = await startServer({ mounts: [['/long/', path.dirname(MODEL_DIR)]] });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

const WORDS = 'the chef who trained in paris cooked the meal quickly while the guests waited in the garden'.split(' ');
const longText = (n) => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]).join(' ');

test('a long run shows its progress, leaves the page responsive, can be cancelled, and completes with the same numbers as one run', async (t) => {
  const { page, context, problems } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  await page.goto(`${server.base}index.html?model=${encodeURIComponent('/long/gpt-wide/')}&text=Short.`);
  await page.waitForFunction(() => window.headscopeDemo.result?.text === 'Short.', null, { timeout: 120000 });

  // a long text: the run goes in steps and says how far it is
  const text = longText(600); // about 800 tokens: within the context, so the run goes in steps
  await page.fill('#text', text);
  const progress = page.locator('#run-progress');
  await progress.waitFor({ state: 'visible', timeout: 60000 });
  assert.match(await page.textContent('#run-progress-text'), /^Running the model: \d+ of \d+ tokens…$/);
  // the page answers while the worker runs: switching the detail view is immediate
  await page.click('#tab-lines');
  assert.equal(await page.getAttribute('#tab-lines', 'aria-selected'), 'true');
  assert.equal(await progress.isVisible(), true, 'still running');
  await shot(page, 'long-run-progress');
  // Cancel: the progress goes, the previous result stays
  await page.click('#run-cancel');
  await progress.waitFor({ state: 'hidden' });
  await page.waitForFunction(() => /cancelled/.test(document.getElementById('stats').textContent));
  assert.equal(await page.evaluate(() => window.headscopeDemo.result.text), 'Short.');

  // run to the end (typing one more word starts it again), then compare with a run in one go
  await page.locator('#text').press('End');
  await page.keyboard.type(' end');
  await page.waitForFunction((t2) => window.headscopeDemo.result?.text === t2, `${text} end`, { timeout: 120000 });
  assert.equal(await progress.isVisible(), false);
  const same = await page.evaluate(async () => {
    const stepped = window.headscopeDemo.result;
    // the same text in one go, by a fresh instance of the package's API on this page
    const { loadModel } = await import('./headscope.js');
    const fresh = await loadModel('/long/gpt-wide/');
    const again = fresh.run(stepped.text);
    fresh.dispose();
    const eq = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
    return { T: stepped.T, attention: eq(stepped.attentionAll, again.attentionAll), logits: eq(stepped.logitsLast, again.logitsLast) };
  });
  assert.ok(same.T > 600 && same.T <= 1024, `T = ${same.T}`);
  assert.deepEqual({ attention: same.attention, logits: same.logits }, { attention: true, logits: true });
  assert.deepEqual(problems, []);
});
