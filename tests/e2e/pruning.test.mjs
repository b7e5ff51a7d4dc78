// compare.html's "How many heads does this model need?": each family model and the
// demo's default model measured on its held-out passage in its Web Worker, the charts drawn (one dot
// per step of the greedy curve, a band bar per step, the +5% / +10% levels), the numbers on the page
// equal to the API's (measureHeads() on the page thread of the same page, an independent run of the
// same engine), Cancel, measuring the text above, and the link that opens the demo with the heads
// that can go before +5% switched off. Screenshots prune-*.png.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test, expect, SITE, ARTIFACTS, shot, demoReady } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';
import { headsOffBefore } from '../../web/component/charts/pruning-curve.js';

const FAMILY = ['heads-1', 'heads-2', 'heads-4', 'heads-8'];
const shipped = (n) => existsSync(path.join(SITE, 'models', n, 'model.safetensors'));
const haveFamily = FAMILY.every(shipped) && shipped('headscope-base');
// without the shipped models: fixtures (no held-out passage: the text above is measured)
const FIXTURES = ['/fixtures/tiny-hs4/', '/fixtures/odd-hs12/'];
const pruneModels = haveFamily ? [...FAMILY, 'headscope-base'] : FIXTURES;
const baseQuery = haveFamily ? '?reps=1' : `?reps=1&models=${FIXTURES.join(',')}`;

/** The page's numbers: the report each card shows (window.headscopePruning) and what the card says. */
async function shown(page) {
  return page.evaluate(() => {
    const p = window.headscopePruning;
    return p.entries.map((e) => {
      const r = p.reports[e.name];
      return {
        name: e.name,
        state: e.box.dataset.state,
        text: p.texts[e.name],
        report: r && {
          ...r,
          prunedLoss: [...r.prunedLoss],
          randomLossMean: [...r.randomLossMean],
          randomLossLow: [...r.randomLossLow],
          randomLossHigh: [...r.randomLossHigh],
          gateGrad: [...r.gateGrad],
          ablationDelta: [...r.ablationDelta],
        },
        k5: Number(e.els.summary.dataset.k5),
        k10: Number(e.els.summary.dataset.k10),
        summary: e.els.summary.textContent,
        rows: [...e.els.table.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((c) => c.textContent)),
        href: e.els.link.getAttribute('href'),
        svgLabel: e.box.querySelector('svg')?.getAttribute('aria-label'),
        dots: e.box.querySelectorAll('svg [data-series="greedy"]').length,
        bars: e.box.querySelectorAll('svg [data-series="band"]').length,
        levels: [...new Set([...e.box.querySelectorAll('svg [data-rise]')].map((x) => x.dataset.rise))],
        survivors: [...e.box.querySelectorAll('.prune-survivor')].map((s) => s.dataset.head),
      };
    });
  });
}

const f3 = (x) => x.toFixed(3);

// axe-core on the section once its charts, tables and links are there (tests/e2e/a11y.test.mjs runs
// axe on the page at load, before any measurement has finished): no serious or critical violation.
// axe adds <style> elements, which the page's CSP refuses: those refusals are expected from here on.
async function axeOnSection(page, problems) {
  expect(await seriousViolations(page, problems, '#cmp-prune')).toEqual([]);
}

test.describe('wide', () => {
  test.use({ viewport: { width: 1400, height: 1000 } });

  test("compare.html measures every model on its held-out passage, draws the curves and shows the API's numbers", async ({
    page,
    site,
    problems,
  }) => {
    // the family (at most 16 heads, exact) takes about 10 s and the default model (32 heads) about
    // 40 s of measuring in headless Chromium on this shared machine
    test.setTimeout(360_000);
    await page.goto(`${site.base}compare.html${baseQuery}`);
    await expect(page.locator('body')).toHaveAttribute('data-prune-state', 'running', { timeout: 90_000 });
    // progress shows while a model is measured
    await expect(page.locator('.prune-card[data-state="running"] progress:not([hidden])')).toHaveCount(1, {
      timeout: 60_000,
    });
    await expect(page.locator('body')).toHaveAttribute('data-prune-state', 'done', { timeout: 300_000 });
    await expect(page.locator('#cmp-prune-status')).toHaveText(
      `Measured ${pruneModels.length} of ${pruneModels.length} models, each on its own held-out passage.`,
    );
    const cards = await shown(page);
    expect(cards.map((c) => c.name)).toEqual(pruneModels);
    for (const c of cards) {
      const n = c.report.nLayer * c.report.nHead;
      expect(c.state).toBe('done');
      // the chart: a dot per point of the greedy curve, a band bar per point, both levels when reached
      expect(c.dots, `${c.name}: dots`).toBe(n + 1);
      expect(c.bars, `${c.name}: band bars`).toBe(n + 1);
      expect(c.svgLabel).toContain(`${c.k5} heads can go before the loss rises 5%`);
      // heads off before +5% / +10%, as the model cards count them
      expect(c.k5).toBe(headsOffBefore(c.report.prunedLoss, c.report.loss, 0.05));
      expect(c.k10).toBe(headsOffBefore(c.report.prunedLoss, c.report.loss, 0.1));
      // the table is the report, rounded to 3 decimals
      expect(c.rows.length).toBe(n + 1);
      c.rows.forEach((row, k) => {
        expect(row[0]).toBe(String(k));
        expect(row[1]).toBe(k ? `L${c.report.order[k - 1][0]}H${c.report.order[k - 1][1]}` : '–');
        expect(row[2]).toBe(f3(c.report.prunedLoss[k]));
        expect(row[3]).toBe(f3(c.report.randomLossMean[k]));
        expect(row[4]).toBe(`${f3(c.report.randomLossLow[k])}–${f3(c.report.randomLossHigh[k])}`);
      });
      const half = Math.floor(n / 2);
      expect(c.summary).toContain(
        `${c.k5} of ${n} heads can be switched off before the loss rises 5% (${c.k10} before 10%)`,
      );
      expect(c.summary).toContain(
        `${f3(c.report.prunedLoss[half])} nats in this order, ${f3(c.report.randomLossMean[half])} on average in 8 random orders`,
      );
      // the survivors: the last three heads of the order, the last first
      expect(c.survivors).toEqual(
        c.report.order
          .slice(-Math.min(3, n))
          .reverse()
          .map(([l, h]) => `${l}:${h}`),
      );
      // the held-out passage the site ships with the model
      if (haveFamily) expect(c.text).toBe(readFileSync(path.join(SITE, 'models', c.name, 'heldout.txt'), 'utf8'));
      // the link: the demo with the heads that can go before +5% switched off, on the measured text
      const link = new URL(c.href, site.base);
      expect(link.pathname).toBe('/index.html');
      expect(link.searchParams.get('model')).toBe(c.name);
      expect(link.searchParams.get('text')).toBe(c.text);
      expect(link.searchParams.get('off') ?? '').toBe(
        c.report.order
          .slice(0, c.k5)
          .map(([l, h]) => `${l}:${h}`)
          .join(','),
      );
    }
    // The API's numbers: measureHeads() on the page thread of this page, with the page's options,
    // for the family (the default model's 35 s are not spent twice: its report above is the worker's
    // measureHeads() itself). The same wasm engine on both threads runs the same float32 operations
    // in the same order, so the reports are equal exactly.
    const names = haveFamily ? FAMILY : FIXTURES;
    const api = await page.evaluate(
      async ({ names, texts }) => {
        const { loadModel } = await import('./headscope.js');
        const out = {};
        for (const name of names) {
          const m = await loadModel(name);
          const r = await m.measureHeads(texts[name], { randomOrders: 8, seed: 0 });
          m.dispose();
          out[name] = {
            ...r,
            prunedLoss: [...r.prunedLoss],
            randomLossMean: [...r.randomLossMean],
            randomLossLow: [...r.randomLossLow],
            randomLossHigh: [...r.randomLossHigh],
            gateGrad: [...r.gateGrad],
            ablationDelta: [...r.ablationDelta],
          };
        }
        return out;
      },
      { names, texts: Object.fromEntries(cards.map((c) => [c.name, c.text])) },
    );
    for (const name of names) expect(cards.find((c) => c.name === name).report, name).toEqual(api[name]);
    if (haveFamily) {
      // the default model: 32 heads, by gate gradients above 16; the family exactly
      expect(cards.at(-1).report.method).toBe('greedy, gate gradients (every 4 heads) + 4 measured per step');
      for (const c of cards.slice(0, 4)) expect(c.report.method).toBe('greedy, exact');
      console.log(
        `# heads off before +5%: ${cards.map((c) => `${c.name} ${c.k5}/${c.report.nLayer * c.report.nHead}`).join(', ')}`,
      );
      console.log(
        `# ${await page
          .locator('.prune-card .prune-state')
          .allTextContents()
          .then((t) => t.join(' | '))}`,
      );
    }
    await page.locator('.prune-card').first().locator('summary').click();
    await shot(page, 'prune-compare', { fullPage: true });
    await page.locator('#cmp-prune').screenshot({ path: path.join(ARTIFACTS, 'prune-section.png') });
    await axeOnSection(page, problems);

    // the link opens the demo with that set switched off
    const pick = cards.find((c) => c.name === 'heads-8' && c.k5 > 0) ?? cards.find((c) => c.k5 > 0) ?? cards[0];
    await page.locator(`.prune-card[data-model="${pick.name}"] .prune-demo-link`).click();
    await demoReady(page);
    await expect(page.locator('body')).toHaveAttribute('data-lab-ablated', String(pick.k5), { timeout: 30_000 });
    const off = await page
      .locator('#grid .hs-cell.hs-ablated')
      .evaluateAll((cells) => cells.map((c) => `${c.dataset.layer}:${c.dataset.head}`));
    expect(off.sort()).toEqual(
      pick.report.order
        .slice(0, pick.k5)
        .map(([l, h]) => `${l}:${h}`)
        .sort(),
    );
    await page.locator('.panel-grid').scrollIntoViewIfNeeded();
    await shot(page, 'prune-demo-off');
  });
});

test('compare.html: Cancel stops the measurement, the models still run; the text above can be measured', async ({
  page,
  site,
}) => {
  test.setTimeout(240_000);
  // the default model alone (a long measurement), then a short one on the text above
  const slow = haveFamily ? 'headscope-base' : FIXTURES[1];
  await page.goto(`${site.base}compare.html${baseQuery}&prune=${slow}`);
  await expect(page.locator('body')).toHaveAttribute('data-prune-state', 'running', { timeout: 90_000 });
  const bar = page.locator('.prune-card progress');
  await expect.poll(() => bar.evaluate((b) => b.value), { timeout: 60_000 }).toBeGreaterThan(0);
  await expect(page.locator('#cmp-prune-cancel')).toBeEnabled();
  await page.click('#cmp-prune-cancel');
  await expect(page.locator('body')).toHaveAttribute('data-prune-state', 'cancelled', { timeout: 30_000 });
  await expect(page.locator('#cmp-prune-status')).toHaveText('Cancelled: 0 of 1 models measured.');
  await expect(page.locator('.prune-card .prune-state')).toHaveText('Cancelled.');
  await expect(page.locator('.prune-card progress')).toBeHidden();
  await expect(page.locator('#cmp-prune-cancel')).toBeDisabled();
  // the measured model's worker still runs, and so do the grids' models (typing re-runs them)
  const T = await page.evaluate(
    async (name) => (await (await window.headscopePruning.getModel(name)).run('The chef cooked.')).T,
    slow,
  );
  expect(T).toBeGreaterThan(1);
  await page.fill('#cmp-text', 'One two three, one two three, one two three.');
  await expect
    .poll(() =>
      page.evaluate(() =>
        window.headscopeCompare.entries.every(
          (e) => !e.model || e.result?.text === 'One two three, one two three, one two three.',
        ),
      ),
    )
    .toBe(true);
  await page.locator('#cmp-prune').screenshot({ path: path.join(ARTIFACTS, 'prune-cancelled.png') });

  // on request, the text above: a small model, measured on the typed text
  const small = haveFamily ? 'heads-2' : FIXTURES[0];
  await page.goto(`${site.base}compare.html${baseQuery}&prune=${small}`);
  await expect(page.locator('body')).toHaveAttribute('data-prune-state', /running|done/, { timeout: 90_000 });
  await page.fill('#cmp-text', 'The cat sat on the mat. The cat sat on the mat again.');
  await page.click('#cmp-prune-text');
  await expect(page.locator('#cmp-prune-status')).toHaveText('Measured 1 of 1 models, on the text above.', {
    timeout: 120_000,
  });
  const [c] = await shown(page);
  expect(c.text).toBe('The cat sat on the mat. The cat sat on the mat again.');
  const tokens = await page.evaluate(
    async ([name, text]) => (await (await window.headscopePruning.getModel(name)).tokenize(text)).length,
    [small, c.text],
  );
  expect(c.report.tokens).toBe(tokens);
  await expect(page.locator('.prune-card .prune-state')).toContainText('of the text above');
});

test.describe('dark, phone', () => {
  test.use({ colorScheme: 'dark', viewport: { width: 390, height: 844 } });

  test('the chart in the dark theme at phone width', async ({ page, site, problems }) => {
    test.setTimeout(120_000);
    const one = haveFamily ? 'heads-4' : FIXTURES[1];
    await page.goto(`${site.base}compare.html${baseQuery}&prune=${one}`);
    await expect(page.locator('body')).toHaveAttribute('data-prune-state', 'done', { timeout: 100_000 });
    // the chart fits the card: no sideways scrolling at 390 px
    const fits = await page.locator('.prune-card').evaluate((card) => card.scrollWidth <= card.clientWidth + 1);
    expect(fits).toBe(true);
    await page.locator('#cmp-prune').scrollIntoViewIfNeeded();
    await page.locator('#cmp-prune').screenshot({ path: path.join(ARTIFACTS, 'prune-phone-dark.png') });
    await page.locator('.prune-card summary').click();
    await axeOnSection(page, problems);
  });
});
