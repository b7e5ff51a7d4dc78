// Shared setup for the end-to-end tests: the static server (web/demo/serve.mjs, with the strict
// CSP header on every response), headless Chromium through playwright-core, console/CSP error
// collection and screenshots under build/e2e-artifacts/.
import { spawn } from 'node:child_process';
import { mkdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

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
 * Starts web/demo/serve.mjs on a free port of 127.0.0.1. By default it serves the test site with
 * the fixtures mounted, quietly; `root` and `args` (e.g. ['--cors', '--csp', 'none']) change that.
 * With `log: true` the returned `requests` array collects the paths the server was asked for.
 */
export async function startServer({ root = SITE, args = null, log = false } = {}) {
  const serverArgs = args ?? ['--mount', `/fixtures/=${path.join(ROOT, 'tests/fixtures/models')}`];
  const child = spawn(process.execPath, [path.join(ROOT, 'web/demo/serve.mjs'), '--root', root, '--port', '0',
    ...(log ? [] : ['--quiet']), ...serverArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
  const requests = [];
  const base = await new Promise((resolve, reject) => {
    let out = '';
    let started = false;
    child.stdout.on('data', (d) => {
      out += d;
      const lines = out.split('\n');
      out = lines.pop();
      for (const line of lines) {
        const m = /at (http:\/\/\S+\/)/.exec(line);
        if (!started && m) { started = true; resolve(m[1]); continue; }
        const r = /^GET (\S+)$/.exec(line);
        if (r) requests.push(r[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
    setTimeout(() => reject(new Error('server did not start')), 10000);
  });
  return { base, requests, close: () => child.kill() };
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
