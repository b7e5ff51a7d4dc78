// The views at scale: a random GPT-2-shaped model of 12 layers x 12 heads with a context of 1024
// tokens (written by random-model.mjs into build/, never downloaded or committed), and a text that
// fills the context. The heatmap fits, thins its labels, zooms and follows the focused token; the
// lines view draws the strongest links per token; the grid of 144 heads stays navigable by
// keyboard; exports work on the zoomed view. Screenshots in build/e2e-artifacts/scale-*.png.
import { test as base, expect, shot, randomModelSite, heatmapAgainstEngine } from './fixtures.mjs';

const test = base.extend({
  // a server for a random 12 x 12-head model with a 1024-token context under /scale/gpt-12x12/
  // (written once per worker); `config` is the model's config.json
  scaleSite: randomModelSite('scale', 'gpt-12x12', { n_layer: 12, n_head: 12, n_embd: 96, n_positions: 1024 }),
});

// Prose long enough to fill the context (about 1.3 tokens per word with the shipped tokenizer).
const WORDS =
  'the chef who trained in paris cooked the meal quickly while the guests waited in the garden and talked about the long summer'.split(
    ' ',
  );
function longText(nWords) {
  return Array.from({ length: nWords }, (_, i) => WORDS[i % WORDS.length]).join(' ') + '.';
}

// Opens the demo on `model` (with `query`, e.g. '&view=lines'), then types in a text of exactly n
// tokens of the model's own tokenizer: longer texts are cut in steps of an eighth of the context.
async function openWithTokens(page, site, model, n, query = '') {
  await page.goto(`${site.base}index.html?model=${encodeURIComponent(model)}${query}&text=Short.`);
  await ready(page, 1);
  const text = await page.evaluate(
    async ({ long, n }) => {
      const tokens = await window.headscopeDemo.model.tokenize(long);
      return tokens.length > n ? long.slice(0, tokens[n].start) : long;
    },
    { long: longText(1400), n },
  );
  await page.fill('#text', text);
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result.text), { timeout: 120_000 }).toBe(text);
  return text;
}

async function ready(page, minTokens) {
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 120_000 });
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result?.T ?? 0), { timeout: 120_000 })
    .toBeGreaterThanOrEqual(minTokens);
}

test('1024 tokens, 144 heads: the heatmap fits and zooms, labels thinned, the focused token followed; exports of the zoomed view', async ({
  page,
  scaleSite,
}) => {
  test.setTimeout(180_000);
  await openWithTokens(page, scaleSite, '/scale/gpt-12x12/', scaleSite.config.n_positions);
  const T = await page.evaluate(() => window.headscopeDemo.result.T);
  expect(T, 'the text fills the context').toBe(scaleSite.config.n_positions);
  await expect(page.locator('#tagline')).toContainText(/gpt-12x12 \(12 layers × 12 heads/);

  // the grid: 144 heads, one canvas, keyboard navigation across rows and columns
  await expect(page.locator('#grid [role="gridcell"]')).toHaveCount(144);
  await page.focus('#grid [data-layer="0"][data-head="0"]');
  for (let i = 0; i < 11; i++) await page.keyboard.press('ArrowRight');
  for (let i = 0; i < 11; i++) await page.keyboard.press('ArrowDown');
  await expect(page.locator('#grid [data-layer="11"][data-head="11"]')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.locator('#detail-caption')).toHaveText(/^Layer 11, head 11:/);
  await page.locator('.panel-grid').scrollIntoViewIfNeeded();
  await shot(page, 'scale-grid-144');

  // the heatmap: fitted (1 px per cell), row labels thinned to one in every `step`
  const labels = page.locator('#detail-view svg text[data-row]');
  const nLabels = await labels.count();
  expect(nLabels, `${nLabels} row labels for ${T} rows`).toBeGreaterThan(20);
  expect(nLabels, `${nLabels} row labels for ${T} rows`).toBeLessThanOrEqual(T / 8 + 2);
  await page.locator('#detail').scrollIntoViewIfNeeded();
  await shot(page, 'scale-heatmap-fit');
  await expect(page.locator('.hs-zoom'), 'zoom controls for a long text').toBeVisible();
  // zoom in three times (8x): cells of 8 px, the scroller scrolls both ways, the last token in view
  for (let i = 0; i < 3; i++) await page.click('.hs-zoom-btn[aria-label="Zoom in"]');
  await expect(page.locator('.hs-zoom-text')).toHaveText(/^zoom 8× · following token 1023 /);
  await expect(page.locator('#detail-scroll')).toHaveClass(/(^|\s)hs-zoomed(\s|$)/);
  const inView = () =>
    page.evaluate(() => {
      const scroller = document.getElementById('detail-scroll').getBoundingClientRect();
      const q = window.headscopeDemo.result.T - 1;
      const label = [...document.querySelectorAll('#detail-view svg text[data-row]')].find(
        (e) => e.dataset.row === String(q),
      );
      const r = label.getBoundingClientRect();
      return r.top >= scroller.top - 1 && r.bottom <= scroller.bottom + 1;
    });
  await expect.poll(inView, { message: 'the focused (last) token is scrolled into view' }).toBe(true);
  // more labels at 8 px per row than at 1 px
  expect(await labels.count()).toBeGreaterThan(nLabels * 4);
  // hover names the cell under the pointer
  const box = await page.locator('#detail-view canvas.hs-heatmap-cells').boundingBox();
  const scroller = await page.locator('#detail-scroll').boundingBox();
  await page.mouse.move(scroller.x + scroller.width / 2, scroller.y + scroller.height / 2);
  const tip = page.locator('#detail-scroll .hs-tooltip'); // the heatmap's ("Inside this head" has its own)
  await expect(tip).toBeVisible();
  await expect(tip).toHaveText(/→ .*: \d\.\d{4}|cannot see the later token/);
  expect(box.width, `the zoomed picture is larger than the panel (${JSON.stringify(box)})`).toBeGreaterThan(
    3 * scroller.width,
  );
  await shot(page, 'scale-heatmap-zoomed');
  // export the zoomed view: the rows in view, at the zoomed cell size
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="detail"][data-format="svg"]'),
  ]);
  const svg = Buffer.concat(await (await download.createReadStream()).toArray()).toString();
  const m = /tokens (\d+)–(\d+) of (\d+)/.exec(svg);
  expect(m, 'the export says which rows it holds').not.toBeNull();
  expect(Number(m[3])).toBe(T);
  expect(Number(m[2]), `rows ${m[1]}-${m[2]}: the part in view`).toBe(T - 1);
  expect(Number(m[1]), `rows ${m[1]}-${m[2]}: the part in view`).toBeGreaterThan(0);
  const [png] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="detail"][data-format="png"]'),
  ]);
  const bytes = Buffer.concat(await (await png.createReadStream()).toArray());
  expect(bytes.subarray(1, 4).toString()).toBe('PNG');
  // typing at the end keeps following the new last token
  await page.locator('#text').press('End');
  await page.keyboard.type(' more');
  // a re-run of 1024 tokens on 144 heads: seconds of work, in steps, on a loaded machine more
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result.text.endsWith(' more')), { timeout: 120_000 })
    .toBe(true);
  await expect.poll(inView, { message: 'still following after typing' }).toBe(true);
});

test('the lines view at 1024 tokens draws the strongest links of each of the 128 tokens around the focused one, k adjustable', async ({
  page,
  scaleSite,
}) => {
  test.setTimeout(180_000);
  await openWithTokens(
    page,
    scaleSite,
    '/scale/gpt-12x12/',
    scaleSite.config.n_positions,
    '&view=lines&layer=3&head=5',
  );
  const T = await page.evaluate(() => window.headscopeDemo.result.T);
  const lines = page.locator('#detail-view svg line');
  await expect(lines.first()).toBeAttached();
  // a window of 128 tokens ending at the focused (last) one, under a row for the tokens before it,
  // which takes each token's links to them as one line
  const shown = await page.locator('#detail-view svg [data-side="q"]').count();
  expect(shown).toBe(128);
  await expect(page.locator('#detail-view svg [data-side="q"]').last()).toHaveAttribute('data-index', String(T - 1));
  await expect(page.locator('#detail-view svg text', { hasText: `… ${T - 128} before` }).first()).toBeAttached();
  const three = await lines.count();
  expect(three, `${three} lines: more than 1 per token shown`).toBeGreaterThan(shown);
  expect(three, `${three} lines: at most 3 per token shown, and 1 to the row before`).toBeLessThanOrEqual(4 * shown);
  await page.selectOption('#links-select', '1');
  await expect.poll(() => lines.count(), { message: 'at most 1 line per token' }).toBeLessThanOrEqual(shown);
  await expect.poll(() => page.evaluate(() => new URLSearchParams(location.search).get('links'))).toBe('1');
  await shot(page, 'scale-lines-top1');
});

test('typing at the end of 1,000 tokens moves only the new rows of the head shown, and the result equals a fresh run', async ({
  page,
  scaleSite,
}) => {
  test.setTimeout(240_000);
  // 1,000 tokens: within the context of 1,024, so typed tokens add rows instead of shifting them all;
  // 144 full maps of 1,000 tokens are 576 MB, so the page keeps none (web/demo/index/long-text.js)
  const text = await openWithTokens(page, scaleSite, '/scale/gpt-12x12/', 1000);
  const before = await page.evaluate(() => window.headscopeDemo.pulled.rowsPulled);
  // the page's calls of the engine for a tile, counted from here
  await page.evaluate(() => {
    const model = window.headscopeDemo.model;
    const tile = model.attentionTile.bind(model);
    window.__tileCalls = 0;
    model.attentionTile = (...args) => (window.__tileCalls++, tile(...args));
  });
  await page.locator('#text').press('End');
  await page.keyboard.type(' chef');
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result.text), { timeout: 120_000 })
    .toBe(`${text} chef`);
  await page.evaluate(() => window.headscopeDemo.idle());
  const check = await page.evaluate(async () => {
    const r = window.headscopeDemo.result;
    const { loadModel } = await import('./headscope.js');
    const fresh = await loadModel('/scale/gpt-12x12/');
    const again = fresh.run(r.text, { attention: 'thumbnails' });
    const eq = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
    // the head on screen, pulled row by row while typing (the rows of the window around the focused,
    // last, token, and at most 32 more: pulled-maps.js), against its whole map now
    const { layer, head } = window.headscopeDemo.state;
    const src = r.pulled.get(layer * r.nHead + head);
    const map = fresh.attentionTile(r.text, layer, head).values;
    const [r0, r1] = src.rows;
    let shown = r0 <= r.T - 128 && r0 >= r.T - 160 && r1 === r.T;
    for (let q = r0; q < r1 && shown; q++)
      for (let k = 0; k < r.T && shown; k++) shown = Object.is(src.data[(q - r0) * src.stride + k], map[q * r.T + k]);
    fresh.dispose();
    return {
      T: r.T,
      maps: r.attentionAll === undefined ? 'none' : 'all',
      thumbnails: eq(r.thumbnails, again.thumbnails),
      roles: eq(r.roleScores, again.roleScores),
      shown,
      logits: eq(r.logitsLast, again.logitsLast),
      norms: eq(r.contributionNorms, again.contributionNorms),
      rowsPulled: window.headscopeDemo.pulled.rowsPulled,
    };
  });
  // exact: the same engine's numbers, carried from run to run (tests/cpp/model/test_tiles.cpp)
  expect(check).toMatchObject({ maps: 'none', thumbnails: true, roles: true, shown: true, logits: true, norms: true });
  // each run of the typed word brought the rows from its first new token: a few, not 1,000 again
  expect(check.rowsPulled - before, JSON.stringify(check)).toBeGreaterThan(0);
  expect(check.rowsPulled - before).toBeLessThan(100);
  // the heatmap's new rows were cut from the rows that came with each run (pulled-maps.js
  // tileFromPulled), with no call of the engine for a tile, and every pixel is the engine's tile
  const typedCalls = await page.evaluate(() => window.__tileCalls);
  const { layer, head } = await page.evaluate(() => window.headscopeDemo.state);
  const control = await page.evaluate(
    async ([l, h]) => {
      await window.headscopeDemo.result.tiles(l, h, { rows: [0, 4], columns: [0, 4], bin: 1 });
      return window.__tileCalls;
    },
    [layer, head],
  );
  expect(control, 'a tile of rows not held is asked of the engine, and counted').toBe(typedCalls + 1);
  expect(typedCalls, 'tile calls while typing').toBe(0);
  const heatmap = await heatmapAgainstEngine(page);
  expect(heatmap, JSON.stringify(heatmap.first)).toMatchObject({ T: check.T, rows: [0, check.T], bin: 1, wrong: 0 });
  expect(heatmap.checked).toBe(check.T * check.T);
  await expect(page.locator('#detail-caption')).toHaveText(/^Layer \d+, head \d+:/);
  await shot(page, 'scale-typed-rows');
});
