// A long text on the demo page keeps no full map: past the page's budget (long-text.js) a run returns
// every head's thumbnail, the grid draws them, and the heads the detail views show are pulled from
// the engine, carried across typing (only the new rows come, with the run). A random GPT-2-shaped
// model (6 layers x 12 heads, context 1,024) at about 800 tokens: its 72 full maps would be 184 MB.
// Every number the page holds is checked against a fresh instance of the package's API on the same
// page (the same wasm: exact).
import { test as base, expect, shot, wideModelSite, longText, typeAtEnd } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';

const test = base.extend({ longSite: wideModelSite() });

// the page's result against a fresh model of the same folder: thumbnails, logits, and every pulled head's rows
const checkAgainstApi = (page) =>
  page.evaluate(async () => {
    const r = window.headscopeDemo.result;
    const { loadModel } = await import('./headscope.js');
    const fresh = await loadModel('/long/gpt-wide/');
    try {
      const again = fresh.run(r.text, { attention: 'thumbnails', ablate: r.ablate });
      const eq = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
      const heads = [];
      for (const [lh, m] of r.pulled ?? []) {
        const layer = Math.floor(lh / r.nHead),
          head = lh % r.nHead;
        const map = fresh.attentionTile(r.text, layer, head, { ablate: r.ablate }).values;
        // the rows pulled: those of the window around the focused token and at most 32 more
        // (pulled-maps.js), every column
        const [r0, r1] = m.rows;
        let same = r1 > r0 && r1 - r0 <= 160 && r1 - r0 >= Math.min(r.T, 128);
        for (let q = r0; q < r1 && same; q++)
          for (let k = 0; k < r.T && same; k++) same = Object.is(m.data[(q - r0) * m.stride + k], map[q * r.T + k]);
        heads.push({ layer, head, same });
      }
      return {
        T: r.T,
        maps: r.attentionAll === undefined ? 'none' : 'all',
        thumbnails: eq(r.thumbnails, again.thumbnails),
        logits: eq(r.logitsLast, again.logitsLast),
        heads,
      };
    } finally {
      fresh.dispose();
    }
  });

test('a long text: the grid from thumbnails, the heads shown pulled exactly, typing pulls only the new rows', async ({
  page,
  longSite,
  problems,
}) => {
  test.setTimeout(300_000);
  await page.goto(`${longSite.base}index.html?model=${encodeURIComponent('/long/gpt-wide/')}&text=Short.`);
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result?.text), { timeout: 120_000 }).toBe('Short.');
  const short = await page.evaluate(() => !!window.headscopeDemo.result.attentionAll);
  expect(short, 'a short text keeps its full maps').toBe(true);

  const text = longText(600);
  await page.fill('#text', text);
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result?.text), { timeout: 240_000 }).toBe(text);
  const first = await checkAgainstApi(page);
  expect(first.T).toBeGreaterThan(600);
  expect(first).toMatchObject({ maps: 'none', thumbnails: true, logits: true });
  expect(first.heads).toEqual([{ layer: 0, head: 0, same: true }]);
  await shot(page, 'long-text-thumbnails');

  // another head from the grid: pulled, and the heatmap's caption names it
  await page.click('#grid [data-layer="3"][data-head="5"]');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result.pulled?.has(3 * 12 + 5))).toBe(true);
  await expect(page.locator('#detail-caption')).toContainText('Layer 3, head 5');
  const picked = await checkAgainstApi(page);
  expect(picked.heads).toContainEqual({ layer: 3, head: 5, same: true });

  // typing at the end: one word, the new rows of the head shown, with the run
  const before = await page.evaluate(() => window.headscopeDemo.pulled.rowsPulled);
  await typeAtEnd(page, ' soup');
  const typed = await checkAgainstApi(page);
  const pulled = (await page.evaluate(() => window.headscopeDemo.pulled.rowsPulled)) - before;
  expect(typed).toMatchObject({ maps: 'none', thumbnails: true, logits: true });
  expect(typed.heads.find((h) => h.layer === 3 && h.head === 5)).toEqual({ layer: 3, head: 5, same: true });
  // each run of the typed word (one per result shown, at most one per key) brings the rows from its
  // first new token on: a few rows per run, never the whole map again
  expect(pulled, `rows pulled while typing: ${pulled}`).toBeGreaterThan(0);
  expect(pulled).toBeLessThan(typed.T / 4);

  // the grid after typing, repainted row by row from its last paint (the rows each result kept from
  // the one painted are not compared: paint.js paintThumbnails' knownRows), equals a whole paint of
  // the same thumbnails: the theme toggled and back repaints every cell, with another colour table
  const gridHash = () =>
    page.evaluate(() => {
      const c = document.querySelector('#grid canvas');
      const px = new Uint32Array(c.getContext('2d').getImageData(0, 0, c.width, c.height).data.buffer);
      let h = 2166136261;
      for (const v of px) h = Math.imul(h ^ v, 16777619) >>> 0;
      return `${c.width}x${c.height}:${h}`;
    });
  const typedGrid = await gridHash();
  const known = await page.evaluate(() => window.headscopeDemo.grid.knownRows);
  expect(known, 'the last paint skipped the rows the result kept').toBeGreaterThan(0);
  await page.click('#theme-toggle');
  await expect.poll(gridHash, { message: 'the grid repainted in the dark theme' }).not.toBe(typedGrid);
  await page.click('#theme-toggle');
  await expect.poll(gridHash, { message: 'a whole paint equals the one typed row by row' }).toBe(typedGrid);

  expect(await seriousViolations(page, problems)).toEqual([]);
});
