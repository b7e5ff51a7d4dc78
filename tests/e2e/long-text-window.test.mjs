// A text past the heatmap's bitmap (paint.js MAX_BITMAP, 2,048 cells a side) on the demo page: the
// heatmap paints the whole map in blocks, and zoomed in the part in view, one pixel per cell,
// painting the next part as the reader scrolls; the token strip shows a window of tokens around
// the focused one; typing at the end keeps every pixel right. A Llama-family model (llama-gqa: 2
// layers, 4 query heads over 2 key/value heads, RoPE) with its context raised to 4,096, at about
// 2,650 tokens. Every pixel of the bitmap is checked against the engine's own tile of the same rows,
// columns and bin (Model::attention_tile, the largest weight of each block), coloured by the page's
// colour table: the canvas cannot show a weight the engine did not compute.
import { test as base, expect, shot, llamaLongSite, longText, typeAtEnd, heatmapAgainstEngine } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';

const test = base.extend({ llamaSite: llamaLongSite() });
const MODEL = '/llama-long/llama-gqa/';

test("past 2,048 tokens the heatmap paints its map in blocks, zoomed the cells in view, each pixel the engine's tile; the strip shows a window", async ({
  page,
  llamaSite,
  problems,
}) => {
  test.setTimeout(300_000);
  await page.goto(`${llamaSite.base}index.html?model=${encodeURIComponent(MODEL)}&text=Short.`);
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result?.text), { timeout: 120_000 }).toBe('Short.');
  const text = longText(600); // about 2,650 of this tokenizer's tokens
  await page.fill('#text', text);
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result?.text), { timeout: 240_000 }).toBe(text);
  await page.evaluate(() => window.headscopeDemo.idle());
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result.pulled?.has(0)), { message: 'head 0:0 pulled' })
    .toBe(true);

  // the whole map, in blocks of 2 x 2 cells: a bitmap of ceil(T / 2) pixels a side, not T
  await page.locator('#detail').scrollIntoViewIfNeeded();
  const whole = await heatmapAgainstEngine(page);
  expect(whole.T).toBeGreaterThan(2048);
  expect(whole).toMatchObject({ rows: [0, whole.T], cols: [0, whole.T], bin: 2, wrong: 0 });
  expect(whole.size).toEqual([Math.ceil(whole.T / 2), Math.ceil(whole.T / 2)]);
  expect(whole.cells).toEqual(whole.size);
  expect(whole.checked).toBe(whole.size[0] * whole.size[1]);
  await shot(page, 'long-window-heatmap');
  // no T x T map in the page: the head shown holds the rows of the lines view's window around the
  // focused (last) token, every column, and at most the 32 more a page asks for (pulled-maps.js)
  const held = await page.evaluate(() => {
    const r = window.headscopeDemo.result;
    return [...r.pulled.values()].map((m) => ({ rows: m.rows, floats: m.data.length, stride: m.stride }));
  });
  for (const m of held) {
    expect(m.rows[1]).toBe(whole.T);
    expect(m.rows[0]).toBeLessThanOrEqual(whole.T - 128);
    expect(m.rows[0]).toBeGreaterThanOrEqual(whole.T - 160);
    expect(m.floats).toBe((m.rows[1] - m.rows[0]) * m.stride);
  }

  // zoomed in 8x: the bitmap holds the cells in view (and half a view around them), one pixel each,
  // around the focused (last) token
  for (let i = 0; i < 3; i++) await page.click('.hs-zoom-btn[aria-label="Zoom in"]');
  await expect(page.locator('.hs-zoom-text')).toHaveText(/^zoom 8× · following token \d+ /);
  await expect
    .poll(async () => (await heatmapAgainstEngine(page)).rows[1], { message: 'the window reaches the last row' })
    .toBe(whole.T);
  const zoomed = await heatmapAgainstEngine(page);
  expect(zoomed.bin).toBe(1);
  expect(zoomed.wrong, JSON.stringify(zoomed.first)).toBe(0);
  expect(zoomed.rows[0]).toBeGreaterThan(0);
  expect(zoomed.size).toEqual([zoomed.cols[1] - zoomed.cols[0], zoomed.rows[1] - zoomed.rows[0]]);
  expect(zoomed.cells).toEqual(zoomed.size);
  expect(zoomed.checked).toBe(zoomed.size[0] * zoomed.size[1]);
  await shot(page, 'long-window-zoomed');

  // scrolled to the top left: the next paint covers the first rows and columns
  await page.locator('#detail-scroll').evaluate((s) => s.scrollTo(0, 0));
  await expect
    .poll(async () => (await heatmapAgainstEngine(page)).rows[0], { message: 'the window follows the scroll' })
    .toBe(0);
  const top = await heatmapAgainstEngine(page);
  expect(top).toMatchObject({ cols: [0, expect.any(Number)], bin: 1, wrong: 0 });
  expect(top.rows[1]).toBeLessThan(whole.T);

  // the token strip: 512 tokens around the focused (last) one, and a button for the earlier ones
  const strip = page.locator('#tokens .token');
  await expect(strip).toHaveCount(512);
  await expect(strip.last()).toHaveAttribute('data-index', String(whole.T - 1));
  await expect(page.locator('#tokens .token[aria-pressed="true"]')).toHaveAttribute('data-index', String(whole.T - 1));
  const before = page.locator('#tokens .token-more');
  await expect(before).toHaveCount(1);
  await expect(before).toHaveText(`… ${(whole.T - 512).toLocaleString('en-US')} tokens before`);
  await before.click();
  // the token before the window is focused, and the window moved to hold it in its middle
  const focused = whole.T - 513;
  await expect(page.locator('#tokens .token[aria-pressed="true"]')).toHaveAttribute('data-index', String(focused));
  await expect(strip.first()).toHaveAttribute('data-index', String(focused - 256));
  await expect(page.locator('#tokens .token-more')).toHaveCount(2);
  await expect(page.locator('#tokens .token-more').last()).toHaveText(
    `… ${(whole.T - (focused + 256)).toLocaleString('en-US')} tokens after`,
  );
  // the heatmap follows the focused token: its window holds that row, every pixel still the engine's
  await expect
    .poll(async () => {
      const v = await heatmapAgainstEngine(page);
      return v.rows[0] <= focused && focused < v.rows[1] && v.wrong === 0;
    })
    .toBe(true);

  // typing at the end: the new token's row comes with the run, and every pixel is still the engine's
  await typeAtEnd(page, ' soup');
  await expect
    .poll(async () => {
      const v = await heatmapAgainstEngine(page);
      return v.T > whole.T && v.wrong === 0 && v.checked === v.size[0] * v.size[1];
    })
    .toBe(true);

  expect(await seriousViolations(page, problems)).toEqual([]);
});
