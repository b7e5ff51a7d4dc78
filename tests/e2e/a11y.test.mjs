// Accessibility: axe-core (npm) on every page, with the pages under their strict CSP (axe is
// evaluated through the DevTools protocol, which a page's policy does not govern). No serious or
// critical violation is allowed, the large-model views (144 heads, 1024 tokens, zoomed) included.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ROOT, SITE, startServer, launch, openPage, withModel, demoReady } from './helpers.mjs';
import { writeRandomModel } from './random-model.mjs';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const MODEL_DIR = path.join(ROOT, 'build/e2e-a11y/gpt-12x12');
let server;
let browser;

before(async () => {
  rmSync(path.dirname(MODEL_DIR), { recursive: true, force: true });
  const shipped = path.join(SITE, 'models/headscope-base');
  const tokenizerDir = existsSync(path.join(shipped, 'vocab.json')) ? shipped : path.join(ROOT, 'tests/fixtures/models/odd-hs12');
  writeRandomModel(MODEL_DIR, { n_layer: 12, n_head: 12, n_embd: 96, n_positions: 1024, tokenizerDir });
  server = await startServer({ mounts: [['/fixtures/', path.join(ROOT, 'tests/fixtures/models')], ['/a11y/', path.dirname(MODEL_DIR)]] });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs axe on the page; returns its serious and critical violations as readable lines. */
async function seriousViolations(page) {
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => (await window.axe.run()).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}, ${v.nodes.length}x): ${v.nodes[0].target.join(' ')} - ${v.nodes[0].failureSummary.split('\n')[1]?.trim()}`));
  return violations;
}

async function widgetsReady(page, selector) {
  await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].every((w) => Number(w.dataset.tokens) > 0 || w.result?.T > 0), selector, { timeout: 60000 });
}

const PAGES = [
  { name: 'demo', path: 'index.html', ready: demoReady },
  { name: 'comparison', path: 'compare.html', ready: (page) => page.waitForFunction(() => document.querySelectorAll('.hs-cell-badge').length > 0 && [...document.querySelectorAll('[role="status"]')].every((s) => !/Loading/.test(s.textContent)), null, { timeout: 60000 }) },
  { name: 'component article', path: 'component.html', ready: (page) => widgetsReady(page, 'headscope-view') },
  { name: 'lab article', path: 'lab-component.html', ready: (page) => widgetsReady(page, 'headscope-view, headscope-lab') },
  { name: 'iframe mode', path: 'embed.html?view=lines&layer=1&head=1', ready: (page) => widgetsReady(page, 'headscope-view') },
  { name: 'strict CSP page', path: 'csp.html', ready: (page) => widgetsReady(page, 'headscope-view') },
];

for (const p of PAGES) {
  test(`axe: no serious or critical violations on the ${p.name}`, async (t) => {
    const { page, context } = await openPage(browser, withModel(server.base + p.path));
    t.after(() => context.close());
    await p.ready(page);
    assert.deepEqual(await seriousViolations(page), []);
  });
}

test('axe: no serious or critical violations with 144 heads, 1024 tokens, the zoomed heatmap and the lines view', async (t) => {
  const { page, context } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  const words = 'the chef who trained in paris cooked the meal quickly while the guests waited'.split(' ');
  const text = Array.from({ length: 1400 }, (_, i) => words[i % words.length]).join(' ');
  await page.goto(`${server.base}index.html?model=${encodeURIComponent('/a11y/gpt-12x12/')}&text=${encodeURIComponent(text)}`);
  await page.waitForFunction(() => window.headscopeDemo.result?.T >= 1000, null, { timeout: 120000 });
  await page.click('.hs-zoom-btn[aria-label="Zoom in"]');
  await page.waitForFunction(() => document.querySelector('.hs-zoom-text').textContent.startsWith('zoom 2×'));
  assert.deepEqual(await seriousViolations(page), [], 'heatmap, zoomed');
  await page.click('#tab-lines');
  await page.waitForSelector('#detail-view svg line', { state: 'attached' });
  assert.deepEqual(await seriousViolations(page), [], 'lines view');
});
