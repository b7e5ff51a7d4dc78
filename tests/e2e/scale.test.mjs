// The views at scale: a random GPT-2-shaped model of 12 layers x 12 heads with a context of 1024
// tokens (written by random-model.mjs into build/, never downloaded or committed), and a text that
// fills the context. The heatmap fits, thins its labels, zooms and follows the focused token; the
// lines view draws the strongest links per token; the grid of 144 heads stays navigable by
// keyboard; exports work on the zoomed view. Screenshots in build/e2e-artifacts/scale-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ROOT, SITE, startServer, launch, openPage, shot } from './helpers.mjs';
import { writeRandomModel } from './random-model.mjs';

const MODEL_DIR = path.join(ROOT, 'build/e2e-scale/gpt-12x12');
let server;
let browser;
let config;

before(async () => {
  rmSync(path.dirname(MODEL_DIR), { recursive: true, force: true });
  const shipped = path.join(SITE, 'models/headscope-base');
  const tokenizerDir = existsSync(path.join(shipped, 'vocab.json')) ? shipped : path.join(ROOT, 'tests/fixtures/models/odd-hs12');
  config = writeRandomModel(MODEL_DIR, { n_layer: 12, n_head: 12, n_embd: 96, n_positions: 1024, tokenizerDir });
  server = await startServer({ mounts: [['/scale/', path.dirname(MODEL_DIR)]] });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

// Prose long enough to fill the context (about 1.3 tokens per word with the shipped tokenizer).
const WORDS = 'the chef who trained in paris cooked the meal quickly while the guests waited in the garden and talked about the long summer'.split(' ');
function longText(nWords) {
  return Array.from({ length: nWords }, (_, i) => WORDS[i % WORDS.length]).join(' ') + '.';
}

async function ready(page, minTokens) {
  await page.waitForFunction((n) => document.body.dataset.ready === 'true' && window.headscopeDemo.result?.T >= n, minTokens, { timeout: 120000 });
}

test('1024 tokens, 144 heads: the heatmap fits and zooms, labels thinned, the focused token followed; exports of the zoomed view', async (t) => {
  const { page, context, problems } = await openPage(browser, 'about:blank', { viewport: { width: 1280, height: 900 } });
  t.after(() => context.close());
  const text = longText(1400);
  await page.goto(`${server.base}index.html?model=${encodeURIComponent('/scale/gpt-12x12/')}&text=${encodeURIComponent(text)}`);
  await ready(page, 1000);
  const T = await page.evaluate(() => window.headscopeDemo.result.T);
  assert.equal(T, config.n_positions, 'the text fills the context');
  assert.match(await page.textContent('#tagline'), /gpt-12x12 \(12 layers × 12 heads/);

  // the grid: 144 heads, one canvas, keyboard navigation across rows and columns
  assert.equal(await page.locator('#grid [role="gridcell"]').count(), 144);
  await page.focus('#grid [data-layer="0"][data-head="0"]');
  for (let i = 0; i < 11; i++) await page.keyboard.press('ArrowRight');
  for (let i = 0; i < 11; i++) await page.keyboard.press('ArrowDown');
  assert.deepEqual(await page.evaluate(() => [document.activeElement.dataset.layer, document.activeElement.dataset.head]), ['11', '11']);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('detail-caption').textContent.startsWith('Layer 11, head 11:'));
  await page.locator('.panel-grid').scrollIntoViewIfNeeded();
  await page.evaluate(() => new Promise(requestAnimationFrame));
  await shot(page, 'scale-grid-144');

  // the heatmap: fitted (1 px per cell), row labels thinned to one in every `step`
  const labels = page.locator('#detail-view svg text[data-row]');
  const nLabels = await labels.count();
  assert.ok(nLabels > 20 && nLabels <= T / 8 + 2, `${nLabels} row labels for ${T} rows`);
  await page.locator('#detail').scrollIntoViewIfNeeded();
  await page.evaluate(() => new Promise(requestAnimationFrame));
  await shot(page, 'scale-heatmap-fit');
  assert.equal(await page.locator('.hs-zoom').isVisible(), true, 'zoom controls for a long text');
  // zoom in three times (8x): cells of 8 px, the scroller scrolls both ways, the last token in view
  for (let i = 0; i < 3; i++) await page.click('.hs-zoom-btn[aria-label="Zoom in"]');
  await page.waitForFunction(() => document.querySelector('.hs-zoom-text').textContent.startsWith('zoom 8× · following token 1023 '));
  assert.equal(await page.evaluate(() => document.getElementById('detail-scroll').classList.contains('hs-zoomed')), true);
  const inView = () => page.evaluate(() => {
    const scroller = document.getElementById('detail-scroll').getBoundingClientRect();
    const q = window.headscopeDemo.result.T - 1;
    const label = [...document.querySelectorAll('#detail-view svg text[data-row]')].find((e) => e.dataset.row === String(q));
    const r = label.getBoundingClientRect();
    return r.top >= scroller.top - 1 && r.bottom <= scroller.bottom + 1;
  });
  assert.equal(await inView(), true, 'the focused (last) token is scrolled into view');
  // more labels at 8 px per row than at 1 px
  assert.ok(await labels.count() > nLabels * 4);
  // hover names the cell under the pointer
  const box = await page.locator('#detail-view canvas.hs-heatmap-cells').boundingBox();
  const scroller = await page.locator('#detail-scroll').boundingBox();
  await page.mouse.move(scroller.x + scroller.width / 2, scroller.y + scroller.height / 2);
  const tip = page.locator('.hs-tooltip');
  await tip.waitFor({ state: 'visible' });
  assert.match(await tip.textContent(), /→ .*: \d\.\d{4}|cannot see the later token/);
  assert.ok(box.width > 3 * scroller.width, `the zoomed picture is larger than the panel (${JSON.stringify(box)})`);
  await page.evaluate(() => new Promise(requestAnimationFrame));
  await shot(page, 'scale-heatmap-zoomed');
  // export the zoomed view: the rows in view, at the zoomed cell size
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-export="detail"][data-format="svg"]')]);
  const svg = await (await download.createReadStream()).toArray().then((chunks) => Buffer.concat(chunks).toString());
  const m = /tokens (\d+)–(\d+) of (\d+)/.exec(svg);
  assert.ok(m, 'the export says which rows it holds');
  assert.equal(Number(m[3]), T);
  assert.ok(Number(m[2]) === T - 1 && Number(m[1]) > 0, `rows ${m[1]}-${m[2]}: the part in view`);
  const [png] = await Promise.all([page.waitForEvent('download'), page.click('[data-export="detail"][data-format="png"]')]);
  const bytes = Buffer.concat(await (await png.createReadStream()).toArray());
  assert.equal(bytes.subarray(1, 4).toString(), 'PNG');
  // typing at the end keeps following the new last token
  await page.locator('#text').press('End');
  await page.keyboard.type(' more');
  await page.waitForFunction((n) => window.headscopeDemo.result.text.endsWith(' more') && window.headscopeDemo.runs > 0, T);
  await page.evaluate(() => new Promise(requestAnimationFrame));
  assert.equal(await inView(), true, 'still following after typing');
  assert.deepEqual(problems, []);
});

test('the lines view at 1024 tokens draws the strongest links of each token, k adjustable', async (t) => {
  const { page, context, problems } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  const text = longText(1400);
  await page.goto(`${server.base}index.html?model=${encodeURIComponent('/scale/gpt-12x12/')}&view=lines&layer=3&head=5&text=${encodeURIComponent(text)}`);
  await ready(page, 1000);
  const T = await page.evaluate(() => window.headscopeDemo.result.T);
  const lineCount = () => page.locator('#detail-view svg line').count();
  const three = await lineCount();
  assert.ok(three > T && three <= 3 * T, `${three} lines: at most 3 per token`);
  await page.selectOption('#links-select', '1');
  await page.waitForFunction((n) => document.querySelectorAll('#detail-view svg line').length <= n, T);
  assert.ok(await lineCount() <= T);
  await page.waitForFunction(() => new URLSearchParams(location.search).get('links') === '1');
  await page.evaluate(() => new Promise(requestAnimationFrame));
  await shot(page, 'scale-lines-top1');
  assert.deepEqual(problems, []);
});
