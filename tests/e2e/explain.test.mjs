// "Why does it look there?" on the demo page (web/demo/index/explain-panel.js): a heatmap cell picked
// with the keyboard is split, and the panel's split is the page API's explainScore() of the same
// text, head and cell; the matrix drawn and the sentence are explain.js's of that split; on the
// default model's induction head a repeated list shows the previous-token head L0H3 on the key side;
// the contrast; an upstream head selects it; the URL; the export; axe; screenshots at desktop and
// phone size (build/e2e-artifacts/why-*.png).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test, expect, ARTIFACTS, usingDefaultModel, openDemo, nextFrames } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';
import { explainSummary, explainSentence } from '../../web/component/charts/explain.js';

const LIST = 'red green blue yellow pink red green blue yellow pink';
const panel = (page) => page.locator('#why');

// the API's split of the cell, with its typed arrays as arrays (for the Node-side functions)
async function apiSplit(page, q, k) {
  const s = await page.evaluate(
    async ({ text, q, k }) => {
      const r = await window.headscopeDemo.model.explainScore(text, 1, 2, q, k, { ablate: [], versus: 'mean' });
      const shown = window.headscopeDemo.why.split;
      const plain = (x) => ({
        ...x,
        table: [...x.table],
        contrast: [...x.contrast],
        value: { ...x.value, byToken: [...x.value.byToken], byPart: [...x.value.byPart] },
      });
      return { api: plain(r), shown: plain(shown) };
    },
    { text: LIST, q, k },
  );
  return s;
}

// the matrix the page drew: each cell's value (data-value), row by row
const drawnCells = (page) =>
  page.evaluate(() =>
    [...document.querySelectorAll('#why-view rect[data-value]')].map((r) => [
      Number(r.dataset.row),
      Number(r.dataset.col),
      Number(r.dataset.value),
    ]),
  );

test('a heatmap cell picked with the keyboard is split as the API splits it; the induction head shows L0H3 on the key side', async ({
  page,
  site,
  problems,
}) => {
  expect(usingDefaultModel, 'the site holds the shipped default model').toBe(true);
  await page.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(page, site.url(`index.html?text=${encodeURIComponent(LIST)}&layer=1&head=2&token=7`));
  // keyboard only: into the heatmap, three cells right from (7, 0), Enter
  await page.locator('#detail-view .hs-heatmap').focus();
  for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Enter');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.state.why)).toEqual({ q: 7, k: 3 });
  await panel(page).scrollIntoViewIfNeeded();
  await expect(panel(page)).toHaveAttribute('data-ready', '1:2:7:3', { timeout: 30_000 });
  const { api, shown } = await apiSplit(page, 7, 3);
  expect(shown).toEqual(api);
  expect(api.queryToken.text).toBe(' blue');
  expect(api.keyToken.text).toBe(' yellow');
  // the matrix and the sentence are explain.js's of that split
  const summary = explainSummary(api);
  const want = summary.cells.flatMap((row, r) => row.map((v, c) => [r, c, v]));
  const drawn = await drawnCells(page);
  expect(drawn.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    expect(drawn[i].slice(0, 2)).toEqual(want[i].slice(0, 2));
    expect(Math.abs(drawn[i][2] - want[i][2]), `cell ${want[i]}`).toBeLessThanOrEqual(
      1e-12 * (1 + Math.abs(want[i][2])),
    );
  }
  await expect(page.locator('#why-sentence')).toHaveText(explainSentence(api, summary));
  // the previous-token head L0H3 feeds the induction head's key
  await expect(
    page.locator('#why-heads .why-head[data-layer="0"][data-head="3"]', { hasText: 'key side' }),
  ).toHaveCount(1);
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'why-desktop.png') });

  // against the other keys
  await page.click('#why-contrast');
  await expect(page.locator('#why-contrast')).toHaveAttribute('aria-pressed', 'true');
  const contrast = explainSummary(api, { which: 'contrast' });
  await expect
    .poll(async () => (await drawnCells(page)).map((c) => c[2].toFixed(9)))
    .toEqual(contrast.cells.flat().map((v) => v.toFixed(9)));
  await expect(page.locator('#why-sentence')).toHaveText(explainSentence(api, contrast));
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'why-desktop-contrast.png') });

  // the URL keeps the cell and the split; the export draws the matrix
  await expect
    .poll(() => ['why', 'whyview'].map((k) => new URL(page.url()).searchParams.get(k)))
    .toEqual(['7:3', 'contrast']);
  const [svgDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="why"][data-format="svg"]'),
  ]);
  expect(svgDl.suggestedFilename()).toBe('headscope-why-L1H2.svg');
  expect(await readFile(await svgDl.path(), 'utf8')).toContain('L1H2: against the other keys, split');
  expect(await seriousViolations(page, problems, '#why')).toEqual([]);

  // an upstream head's button selects it
  await page.click('#why-heads .why-head[data-layer="0"][data-head="3"]');
  await expect
    .poll(() => page.evaluate(() => [window.headscopeDemo.state.layer, window.headscopeDemo.state.head]))
    .toEqual([0, 3]);
});

test('a link opens the split; on a phone the panel fits the width', async ({ page, site }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await openDemo(page, site.url(`index.html?text=${encodeURIComponent(LIST)}&layer=1&head=2&why=7:3`));
  await panel(page).scrollIntoViewIfNeeded();
  await expect(panel(page)).toHaveAttribute('data-ready', '1:2:7:3', { timeout: 30_000 });
  await nextFrames(page);
  const box = await page.evaluate(() => ({
    right: document.getElementById('why').getBoundingClientRect().right,
    width: document.documentElement.clientWidth,
    scroll: document.documentElement.scrollWidth,
  }));
  expect(box.right).toBeLessThanOrEqual(box.width);
  expect(box.scroll).toBeLessThanOrEqual(box.width);
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'why-phone.png') });
});

test('a line of the lines view and the scores step of "Inside this head" pick the cell too', async ({ page, site }) => {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(page, site.url(`index.html?text=${encodeURIComponent(LIST)}&layer=1&head=2&token=7`));
  // the lines view: the query token pinned, then a key token at or before it
  await page.click('#tab-lines');
  await page.locator('#detail-view [data-side="q"][data-index="7"]').first().click();
  await page.locator('#detail-view [data-side="k"][data-index="3"]').first().click();
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.state.why)).toEqual({ q: 7, k: 3 });
  await expect(panel(page)).toHaveAttribute('data-ready', '1:2:7:3', { timeout: 30_000 });
  // "Inside this head", step 3 (scores): its highlighted key's score, split
  await page.locator('#inside').scrollIntoViewIfNeeded();
  await page.locator('#inside-view .hs-inside-step').nth(2).click();
  // the key it highlights (the figure says which)
  await expect(page.locator('#inside-view .hs-inside-figure')).toHaveAttribute('data-key', /^\d+$/);
  const key = Number(await page.locator('#inside-view .hs-inside-figure').getAttribute('data-key'));
  await page.getByRole('button', { name: 'Why this score? Split it into its sources ↓' }).click();
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.state.why)).toEqual({ q: 7, k: key });
  await expect(panel(page)).toHaveAttribute('data-ready', `1:2:7:${key}`, { timeout: 30_000 });
});
