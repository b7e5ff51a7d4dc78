// Shared setup for the end-to-end tests: the static server (web/demo/static-server.mjs, with the
// strict CSP header on every response), headless Chromium through playwright-core, console/CSP error
// collection and screenshots under build/e2e-artifacts/.
import { mkdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startStaticServer, DEMO_CSP } from '../../web/demo/static-server.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SITE = process.env.HEADSCOPE_SITE || path.join(ROOT, 'build/e2e-site');
export const ARTIFACTS = path.join(ROOT, 'build/e2e-artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

/** The model the tests use: the shipped default when it was built, else a test fixture. */
export const MODEL_QUERY = existsSync(path.join(SITE, 'models/headscope-base/model.safetensors'))
  ? '' : 'model=/fixtures/odd-hs12/';
export const usingDefaultModel = MODEL_QUERY === '';

export function withModel(url) {
  if (!MODEL_QUERY) return url;
  return url + (url.includes('?') ? '&' : '?') + MODEL_QUERY;
}

/**
 * Serves a folder on a free port of 127.0.0.1 (web/demo/static-server.mjs, the demo's own server).
 * By default: the test site with the fixtures mounted, under the demo's strict CSP. Options:
 * root, mounts, csp (null: none), cors (as in static-server.mjs). `requests` collects the paths
 * asked for, in order.
 */
export async function startServer({ root = SITE, mounts = [['/fixtures/', path.join(ROOT, 'tests/fixtures/models')]], csp = DEMO_CSP, cors = null } = {}) {
  const requests = [];
  const server = await startStaticServer({ root, mounts, csp, cors, log: (method, p) => requests.push(p) });
  return { base: server.url, requests, close: server.close };
}

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

/**
 * A new page that records console errors, page errors, CSP violations and dialogs.
 * Returns { page, problems } where problems is an array of strings (expected to stay empty).
 */
export async function openPage(browser, url, { viewport = { width: 1280, height: 900 }, colorScheme = 'light', reducedMotion = 'no-preference', hasTouch = false, isMobile = false } = {}) {
  const context = await browser.newContext({ viewport, colorScheme, reducedMotion, hasTouch, isMobile, acceptDownloads: true });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`); });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('dialog', (d) => { problems.push(`dialog: ${d.message()}`); d.dismiss().catch(() => {}); });
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(url);
  return { page, context, problems };
}

export async function cspViolations(page) {
  return page.evaluate(() => window.__csp);
}

export async function shot(page, name, options = {}) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, ...options });
  return file;
}

/** Waits until the demo page has rendered a result (optionally with more renders than `after`). */
export async function demoReady(page, after = 0) {
  await page.waitForFunction((n) => document.body.dataset.ready === 'true' && Number(document.body.dataset.renders || 0) > n, after, { timeout: 30000 });
}
