// Accessibility: axe-core (npm) on every page, with the pages under their strict CSP (axe is
// evaluated through the DevTools protocol, which a page's policy does not govern). No serious or
// critical violation is allowed, the large-model views (144 heads, 1024 tokens, zoomed) included.
import path from 'node:path';
import { test as base, expect, ROOT, withModel, demoReady, randomModelSite } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';

const test = base.extend({
  // the test site, plus a random 12 x 12-head model with a 1024-token context under /a11y/ (written once per worker)
  a11ySite: randomModelSite(
    'a11y',
    'gpt-12x12',
    { n_layer: 12, n_head: 12, n_embd: 96, n_positions: 1024 },
    { mounts: [['/fixtures/', path.join(ROOT, 'tests/fixtures/models')]] },
  ),
});

/** Waits until every widget matching `selector` has rendered a result. */
async function widgetsReady(page, selector) {
  await expect(page.locator(selector).first()).toBeAttached();
  await expect
    .poll(
      () =>
        page.locator(selector).evaluateAll((all) => all.every((w) => Number(w.dataset.tokens) > 0 || w.result?.T > 0)),
      { timeout: 60_000 },
    )
    .toBe(true);
}

const PAGES = [
  { name: 'demo', path: 'index.html', ready: demoReady },
  {
    name: 'comparison',
    path: 'compare.html',
    ready: async (page) => {
      await expect(page.locator('.hs-cell-badge').first()).toBeAttached({ timeout: 60_000 });
      await expect(page.locator('[role="status"]').filter({ hasText: 'Loading' })).toHaveCount(0, { timeout: 60_000 });
    },
  },
  { name: 'component article', path: 'component.html', ready: (page) => widgetsReady(page, 'headscope-view') },
  {
    name: 'lab article',
    path: 'lab-component.html',
    ready: (page) => widgetsReady(page, 'headscope-view, headscope-lab'),
  },
  {
    name: 'iframe mode',
    path: 'embed.html?view=lines&layer=1&head=1',
    ready: (page) => widgetsReady(page, 'headscope-view'),
  },
  {
    // "Inside this head" linked at its scores step, with the views coloured by weight × value size
    name: 'demo with "Inside this head" open',
    path: 'index.html?layer=1&head=1&inside=6&step=3&by=value',
    ready: async (page) => {
      await demoReady(page);
      await expect(page.locator('#inside')).toHaveAttribute('data-ready', /^1:1:6:\d+$/, { timeout: 60_000 });
      await expect(page.locator('#grid .hs-grid')).toHaveAttribute('data-weighting', 'value');
      await expect(page.locator('#by-explain')).toHaveText(/^Weight × value size: /);
    },
  },
  {
    // after Continue: the strip's written tokens and the next-token panel's drawn distribution
    name: 'demo after the model wrote',
    path: 'index.html',
    ready: async (page) => {
      await demoReady(page);
      await page.fill('#write-tokens', '8');
      await page.fill('#write-topk', '40');
      await page.click('#write-continue');
      await expect(page.locator('#write-status')).toHaveText(/^Wrote 8 tokens/, { timeout: 60_000 });
      // the next-token panel is drawn while on screen, as a reader scrolls to it
      await page.locator('#topk').scrollIntoViewIfNeeded();
      await expect(page.locator('#topk .hs-topk-drawn')).toHaveCount(1);
    },
  },
  {
    name: 'iframe mode, inside view',
    path: 'embed.html?layer=1&head=1&inside=5&step=4',
    ready: (page) =>
      expect(page.locator('headscope-view .hs-inside-figure [data-weight]').first()).toBeAttached({ timeout: 60_000 }),
  },
  { name: 'strict CSP page', path: 'csp.html', ready: (page) => widgetsReady(page, 'headscope-view') },
  {
    // the explainer: every lazy widget scrolled to and rendered, the figures drawn (at phone size:
    // tests/e2e/article.test.mjs)
    name: 'explainer article',
    path: 'article.html',
    ready: async (page) => {
      const ids = ['w-grid', 'w-one', 'w-eight', 'w-combine', 'chef-links', 'scale', 'pruning', 'kv', 'w-lab'];
      for (const id of ids) await page.locator(`#${id}`).scrollIntoViewIfNeeded();
      for (const id of ['chef-links', 'scale', 'pruning', 'kv'])
        await expect(page.locator(`#${id}`)).toHaveAttribute('data-ready', 'true', { timeout: 60_000 });
      await widgetsReady(page, 'headscope-view, headscope-lab');
    },
  },
  {
    name: 'training page',
    path: 'train.html',
    ready: async (page) => {
      // with charts, a probe grid and badges drawn: train run A for a while, then pause it
      await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 60_000 });
      const run = page.locator('[data-run="A"]');
      await run.locator('.train-start').click();
      await expect
        .poll(async () => Number((await run.getAttribute('data-steps')) || 0), { timeout: 60_000 })
        .toBeGreaterThan(60);
      await run.locator('.train-start').click();
      await expect(run).toHaveAttribute('data-state', 'paused');
    },
  },
];

for (const p of PAGES) {
  test(`axe: no serious or critical violations on the ${p.name}`, async ({ page, a11ySite, problems }) => {
    await page.goto(withModel(a11ySite.base + p.path));
    await p.ready(page);
    expect(await seriousViolations(page, problems)).toEqual([]);
  });
}

test('axe: no serious or critical violations with 144 heads, 1024 tokens, the zoomed heatmap and the lines view', async ({
  page,
  a11ySite,
  problems,
}) => {
  test.setTimeout(180_000);
  const words = 'the chef who trained in paris cooked the meal quickly while the guests waited'.split(' ');
  const text = Array.from({ length: 1400 }, (_, i) => words[i % words.length]).join(' ');
  await page.goto(
    `${a11ySite.base}index.html?model=${encodeURIComponent('/a11y/gpt-12x12/')}&text=${encodeURIComponent(text)}`,
  );
  // longer than the context: cut in steps of an eighth of it, so 7/8 of the context or more remain
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result?.T ?? 0), { timeout: 120_000 })
    .toBeGreaterThan(1024 - 128);
  await page.click('.hs-zoom-btn[aria-label="Zoom in"]');
  await expect(page.locator('.hs-zoom-text')).toHaveText(/^zoom 2×/);
  expect(await seriousViolations(page, problems), 'heatmap, zoomed').toEqual([]);
  await page.click('#tab-lines');
  await expect(page.locator('#detail-view svg line').first()).toBeAttached();
  expect(await seriousViolations(page, problems), 'lines view').toEqual([]);
  // "Inside this head" on the last of about 1,000 tokens: the keys with the most weight
  await page.locator('#inside').scrollIntoViewIfNeeded();
  await expect(page.locator('#inside')).toHaveAttribute('data-ready', /^\d+:\d+:\d+:\d+$/, { timeout: 60_000 });
  await page.click('#inside [role="tab"][data-step="4"]');
  await expect(page.locator('#inside [data-weight]')).toHaveCount(14);
  expect(await seriousViolations(page, problems), '"Inside this head" at 1,000 tokens').toEqual([]);
});
