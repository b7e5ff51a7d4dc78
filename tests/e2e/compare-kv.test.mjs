// compare.html's "Sharing keys and values": the key/value-head family (the site's models of family
// "kv") on the page's text, each in its Web Worker. The table is, cell for cell, what compare-kv.js
// makes of the cards the site serves and the engines' numbers; each model's key/value cache per token
// is its card's and 2 x layers x key/value heads x head size x 4 bytes; the grids bracket the query
// heads that share a key/value head; a typed token's run computes one token and its time is a
// number. No key/value models, and hostile ?kv= names, leave the page working. Screenshots
// compare-kv*.png. Without the family on the site (or with HEADSCOPE_E2E_KV_FIXTURES=1): the
// Llama-family fixtures (no cards, other shapes, a 32-token context).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test, expect, SITE, ARTIFACTS, shot } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';
import {
  kvFamilyNames,
  kvFamilyTable,
  kvFamilyChart,
  kvTradeoffSentence,
  fmtBytes,
} from '../../web/demo/compare/compare-kv.js';
import { barTitle } from '../../web/component/charts/bars.js';

const siteModels = (() => {
  try {
    return JSON.parse(readFileSync(path.join(SITE, 'models/index.json'), 'utf8')).models;
  } catch {
    return [];
  }
})();
const FAMILY = kvFamilyNames(siteModels);
// a site built from a checkout that ships the family must list it (else the fallback below would hide it)
if (
  !FAMILY.length &&
  existsSync(path.join(SITE, 'models', 'kv-8', 'card.json')) &&
  process.env.HEADSCOPE_E2E_KV_FIXTURES !== '1'
)
  throw new Error('the site holds models/kv-8 but its models/index.json lists no model of family "kv"');
// HEADSCOPE_E2E_KV_FIXTURES=1 runs on the fixtures even when the site holds the family
const haveFamily = FAMILY.length > 0 && process.env.HEADSCOPE_E2E_KV_FIXTURES !== '1';
const FIXTURES = ['/fixtures/llama-mha/', '/fixtures/llama-gqa/', '/fixtures/llama-mqa/'];
// the fixtures' context is 32 byte-level tokens: a short text, so that typing on stays inside it
const query = haveFamily ? '?reps=2' : `?reps=2&text=${encodeURIComponent('The cat.')}&kv=${FIXTURES.join(',')}`;

test.afterAll(() => {
  if (!haveFamily)
    console.log('# compare-kv: ran on the Llama-family fixtures (no cards), not on the family of the site');
});

test.describe('wide', () => {
  test.use({ viewport: { width: 1400, height: 1000 } });

  test("compare.html: the key/value-head family's grids, cache, cards and typed token", async ({
    page,
    site,
    problems,
  }) => {
    test.setTimeout(240_000);
    if (haveFamily) {
      // a Llama-family folder needs its tokenizer.json on the site (scripts/build-package.sh copies the model files)
      const missing = FAMILY.filter((n) => !existsSync(path.join(SITE, 'models', n, 'tokenizer.json')));
      expect(missing, 'key/value-head models on the site without tokenizer.json').toEqual([]);
    }
    await page.goto(`${site.base}compare.html${query}`);
    await expect(page.locator('body')).toHaveAttribute('data-kv-timed', /^[1-9]\d*$/, { timeout: 200_000 });
    await expect(page.locator('body')).toHaveAttribute('data-kv-state', 'ready');
    const names = haveFamily ? FAMILY : FIXTURES;
    const entries = await page.evaluate(() =>
      window.headscopeCompare.kv.entries.map((e) => ({
        name: e.name,
        label: e.label,
        status: e.status,
        config: e.config,
        parameterCount: e.parameterCount,
        typedMs: e.typedMs,
        typedComputed: e.typedComputed,
        resultText: e.result?.text,
      })),
    );
    expect(entries.map((e) => e.name)).toEqual(names);
    for (const e of entries) expect(e.status, e.name).toBe('ready');
    const cards = Object.fromEntries(
      names.map((n) => [
        n,
        haveFamily ? JSON.parse(readFileSync(path.join(SITE, 'models', n, 'card.json'), 'utf8')) : null,
      ]),
    );

    // the table: what the page's builder makes of the cards the site serves and the engines' numbers
    const want = kvFamilyTable(entries.map((e) => ({ ...e, card: cards[e.name] })));
    const header = await page.locator('#kv-table thead th').allTextContents();
    expect(header).toEqual(['model', ...want.columns]);
    const shown = await page
      .locator('#kv-table tbody tr')
      .evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
    expect(shown).toEqual(want.rows.map((r) => [r.label, ...r.cells]));
    expect(await page.locator('#kv-notes p').allTextContents()).toEqual(want.notes);
    await expect(page.locator('#kv-summary')).toHaveText(
      kvTradeoffSentence(entries.map((e) => ({ ...e, card: cards[e.name] }))),
    );
    // the chart above the table: the same numbers as bars, each saying its number on hover; the
    // table itself folded under "The numbers"
    const chart = kvFamilyChart(entries.map((e) => ({ ...e, card: cards[e.name] })));
    const hovers = await page.locator('#kv-chart svg rect[data-row] title').allTextContents();
    const drawn = chart.rows.flatMap((_, i) =>
      chart.columns.map((c, j) => (Number.isFinite(c.values[i]) ? barTitle(chart, i, j) : null)),
    );
    expect(hovers).toEqual(drawn.filter(Boolean));
    await expect(page.locator('#kv-table')).toBeHidden();
    await page.locator('#kv-table-wrap summary').click();
    await expect(page.locator('#kv-table')).toBeVisible();
    // columns by key/value heads, most first
    const byLabel = Object.fromEntries(entries.map((e) => [e.label, e]));
    const kvs = want.columns.map((c) => byLabel[c].config.nKvHead);
    expect(kvs).toEqual([...kvs].sort((a, b) => b - a));

    // the key/value cache per token: the card's, and 2 (key, value) x layers x key/value heads x head size x 4 bytes (float32)
    const cacheRow = shown.find((r) => r[0] === 'Key/value cache per token');
    want.columns.forEach((label, i) => {
      const { config } = byLabel[label];
      const bytes = 2 * config.nLayer * config.nKvHead * config.headSize * 4;
      expect(config.kvCacheBytesPerToken, label).toBe(bytes);
      expect(cacheRow[i + 1], label).toBe(fmtBytes(bytes));
      const card = cards[byLabel[label].name];
      if (card) expect(card.architecture.kv_cache_bytes_per_token, `${label}: the card's cache`).toBe(bytes);
    });

    // a typed token: a finite time, and its run computed that one token (the rest came from the cache)
    const typedRow = shown.find((r) => r[0].startsWith('A typed token'));
    want.columns.forEach((label, i) => {
      const e = byLabel[label];
      expect(Number.isFinite(e.typedMs) && e.typedMs > 0, `${label}: ${e.typedMs} ms`).toBe(true);
      expect(e.typedComputed, `${label}: tokens computed by the typed token's run`).toBe(1);
      expect(typedRow[i + 1]).toMatch(/^\d+\.\d\d ms$/);
    });
    console.log(`# typed token: ${want.columns.map((l) => `${l} ${byLabel[l].typedMs.toFixed(3)} ms`).join(', ')}`);

    // the grids: every query head's map on the page's text, and a bracket per key/value head over its query heads
    const text = await page.inputValue('#cmp-text');
    const cols = page.locator('#kv-models .compare-col');
    await expect(cols).toHaveCount(names.length);
    for (let i = 0; i < names.length; i++) {
      const col = cols.nth(i);
      const { config, resultText, name } = entries[i];
      expect(resultText, name).toBe(text);
      const { nLayer, nHead, nKvHead } = config;
      await expect(col.locator('[role="gridcell"]')).toHaveCount(nLayer * nHead);
      const groups = col.locator('.hs-grid-group');
      await expect(groups, `${name}: brackets`).toHaveCount(nKvHead < nHead ? nKvHead : 0);
      if (nKvHead === nHead) {
        await expect(col.locator('[role="gridcell"][data-kv]')).toHaveCount(0);
        continue;
      }
      const size = nHead / nKvHead;
      for (let l = 0; l < nLayer; l++) {
        const kvOf = await col
          .locator(`[role="gridcell"][data-layer="${l}"]`)
          .evaluateAll((cells) => cells.map((c) => Number(c.dataset.kv)));
        expect(kvOf, `${name}, layer ${l}: the key/value head of each query head`).toEqual(
          Array.from({ length: nHead }, (_, h) => Math.floor(h / size)),
        );
        expect(new Set(kvOf).size, `${name}, layer ${l}: groups`).toBe(nKvHead);
      }
      for (let g = 0; g < nKvHead; g++) {
        await expect(groups.nth(g)).toHaveText(`key/value head ${g}`);
        const box = await groups.nth(g).boundingBox();
        const first = await col.locator(`[role="gridcell"][data-layer="0"][data-head="${g * size}"]`).boundingBox();
        const last = await col
          .locator(`[role="gridcell"][data-layer="0"][data-head="${(g + 1) * size - 1}"]`)
          .boundingBox();
        // the bracket spans its heads' columns (its margin is 2 px a side)
        expect(Math.abs(box.x - first.x), `${name}: bracket ${g}, left`).toBeLessThan(4);
        expect(Math.abs(box.x + box.width - (last.x + last.width)), `${name}: bracket ${g}, right`).toBeLessThan(4);
        await expect(col.locator(`[role="gridcell"][data-layer="0"][data-head="${g * size}"]`)).toHaveAttribute(
          'aria-label',
          new RegExp(`share key/value head ${g}`),
        );
      }
    }
    // the grids line up (a multi-head grid has no brackets, yet its heads start at the same height)
    // and fit side by side without a scrollbar of their own
    const tops = await page
      .locator('#kv-models [role="gridcell"][data-layer="0"][data-head="0"]')
      .evaluateAll((cells) => cells.map((c) => c.getBoundingClientRect().top));
    expect(Math.max(...tops) - Math.min(...tops), `first heads' tops ${tops}`).toBeLessThan(1.5);
    const overflow = await page
      .locator('#kv-models .compare-gridhost')
      .evaluateAll((hosts) => hosts.map((h) => h.scrollWidth - h.clientWidth));
    expect(
      overflow.every((x) => x <= 1),
      `grid overflow ${overflow}`,
    ).toBe(true);

    // the head measurement is the head-count family's: it does not list these models
    const pruned = await page.evaluate(() => window.headscopePruning.entries.map((e) => e.name));
    for (const n of names) expect(pruned).not.toContain(n);

    await page.locator('#kv').scrollIntoViewIfNeeded();
    await page.locator('#kv').screenshot({ path: path.join(ARTIFACTS, 'compare-kv.png') });
    await shot(page, 'compare-kv-page', { fullPage: true });
    // typing re-runs every grid of both sections
    await page.fill('#cmp-text', 'One two three, one two three.');
    await expect
      .poll(() =>
        page.evaluate(() =>
          window.headscopeCompare.kv.entries.every((e) => e.result?.text === 'One two three, one two three.'),
        ),
      )
      .toBe(true);
    expect(await seriousViolations(page, problems, '#kv')).toEqual([]);
  });
});

test('compare.html without key/value models says so; hostile ?kv= names stay text', async ({
  page,
  site,
  problems,
}) => {
  test.setTimeout(120_000);
  const heads = '/fixtures/tiny-hs4/';
  await page.goto(`${site.base}compare.html?reps=1&models=${heads}&kv=`);
  await expect(page.locator('body')).toHaveAttribute('data-kv-state', 'none', { timeout: 60_000 });
  await expect(page.locator('#kv-summary')).toHaveText(/^This site holds no key\/value-head models/);
  await expect(page.locator('#kv-table-wrap')).toBeHidden();
  // the heads section goes on: its models are timed
  await expect(page.locator('body')).toHaveAttribute('data-timed', /^[1-9]\d*$/, { timeout: 60_000 });

  // a name that is markup: shown as text, loads nothing, raises no dialog (the fixture reports dialogs);
  // its folder is not on the site
  problems.allow(/^(worker )?console error: Failed to load resource: the server responded with a status of 404/);
  const hostile = '<img src=x onerror=alert(1)>';
  await page.goto(
    `${site.base}compare.html?reps=1&models=${heads}&kv=${encodeURIComponent(hostile)},/fixtures/llama-gqa/`,
  );
  await expect(page.locator('body')).toHaveAttribute('data-kv-timed', /^[1-9]\d*$/, { timeout: 90_000 });
  await expect(page.locator('#kv img')).toHaveCount(0);
  await expect(page.locator('#kv-models .compare-col').first()).toContainText(`Could not load ${hostile}`);
  await expect(page.locator('#kv-table thead th').nth(1)).toHaveText(/^llama-gqa/);
  await expect(page.locator('#kv-table thead th').nth(2)).toHaveText(hostile);
  await expect(page.locator('#kv-notes')).toContainText('no card:');
});

test.describe('dark, phone', () => {
  test.use({ colorScheme: 'dark', viewport: { width: 390, height: 844 } });

  test('the section at phone width in the dark theme: no sideways scrolling of the page', async ({ page, site }) => {
    test.setTimeout(240_000);
    await page.goto(`${site.base}compare.html${query}`);
    await expect(page.locator('body')).toHaveAttribute('data-kv-timed', /^[1-9]\d*$/, { timeout: 200_000 });
    // the grids and the table scroll inside their boxes; the page itself keeps its width
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    const section = await page.locator('#kv').evaluate((s) => s.scrollWidth <= s.clientWidth + 1);
    expect(section).toBe(true);
    await page.locator('#kv').scrollIntoViewIfNeeded();
    await page.locator('#kv').screenshot({ path: path.join(ARTIFACTS, 'compare-kv-phone-dark.png') });
  });
});
