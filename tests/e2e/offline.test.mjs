// The site offline (web/demo/common/service-worker.js, registered by article.html): once the article
// has loaded and its first widget has run, a new build's worker replaces the old one's cache, and
// then, with the browser offline and the server gone, the article reloads, its widget runs its model,
// the page is still cross-origin isolated and another page of the site opens. The fixtures' watch
// fails the test on any console error or CSP violation, offline included.
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test, expect, ROOT, SITE, startServer, usingDefaultModel } from './fixtures.mjs';
import { ISOLATION_HEADERS } from '../../web/server/static-server.mjs';
import { writeServiceWorker, WORKER } from '../../web/demo/precache.mjs';

test.skip(!usingDefaultModel, 'the article runs the shipped models');

/** The cache names of the site's worker, as the page sees them. */
const cacheNames = (page) => page.evaluate(() => caches.keys());

/** Whether the cache named `name` holds the site file `file`. */
const cached = (page, name, file) =>
  page.evaluate(async ([n, f]) => !!(await (await caches.open(n)).match(new URL(f, location.href).href)), [name, file]);

test('article.html works offline once loaded, cross-origin isolated and under the strict CSP; a new build replaces the cache', async ({
  page,
  context,
}) => {
  test.setTimeout(240_000);
  // a copy of the site, so that this test can make a new build of it
  const dir = mkdtempSync(path.join(ROOT, 'build', 'e2e-offline-'));
  cpSync(SITE, dir, { recursive: true });
  const server = await startServer({ root: dir, headers: ISOLATION_HEADERS });
  try {
    const version = () =>
      JSON.parse(/const SITE = (\{.*\});/.exec(readFileSync(path.join(dir, WORKER), 'utf8'))[1]).version;
    const first = version();
    await page.goto(`${server.base}article.html`);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    await expect(page.locator('#w-grid')).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
    // the worker controls the page and has cached the model the first widget loaded before it took over
    await expect(page.locator('html')).toHaveAttribute('data-offline', 'ready', { timeout: 60_000 });
    expect(await page.evaluate(() => !!navigator.serviceWorker.controller)).toBe(true);
    expect(await cacheNames(page)).toEqual([`headscope-site-${first}`]);
    expect(await cached(page, `headscope-site-${first}`, 'models/headscope-base/model.safetensors')).toBe(true);

    // a new build: one byte changed makes a new worker, which replaces the old cache when it takes over
    appendFileSync(path.join(dir, 'explainer.css'), '\n');
    writeServiceWorker(dir);
    const second = version();
    expect(second).not.toBe(first);
    await page.reload();
    await expect.poll(() => cacheNames(page), { timeout: 60_000 }).toEqual([`headscope-site-${second}`]);
    await expect(page.locator('#w-grid')).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
    await expect(page.locator('html')).toHaveAttribute('data-offline', 'ready', { timeout: 60_000 });
    expect(await cached(page, `headscope-site-${second}`, 'models/headscope-base/model.safetensors')).toBe(true);

    // offline, and the server gone: everything below comes from the worker's cache
    await context.setOffline(true);
    await server.close();
    await page.reload();
    await expect(page.locator('h1')).toHaveText('Many heads, one sentence');
    // the first screen's download sentence, the engine's size included (a HEAD the worker answers)
    await expect(page.locator('[data-fact="download"]')).toHaveText(/plus the engine \(\d+\.\d MB\), once$/);
    await expect(page.locator('#w-grid')).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    // the widget runs its model offline: an edited sentence is run again
    const text = 'The chef cooked.';
    await page.locator('#w-grid').evaluate((e, t) => e.setAttribute('text', t), text);
    await expect.poll(() => page.locator('#w-grid').evaluate((e) => e.result?.text), { timeout: 60_000 }).toBe(text);
    // the site's other pages are cached too: the demo opens on the same model
    await page.goto(`${server.base}index.html`);
    await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 60_000 });
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
  } finally {
    await context.setOffline(false);
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
