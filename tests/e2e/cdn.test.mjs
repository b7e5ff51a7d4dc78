// End-to-end tests of embedding from a CDN: an article served on one origin loads <headscope-view>
// and <headscope-lab> from the package's dist/ served on another origin that sends
// "Access-Control-Allow-Origin: *", as jsDelivr and unpkg do. Every server listens on 127.0.0.1.
// Screenshots in build/e2e-artifacts/cdn-*.png. Run with tests/e2e/run.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, startServer, launch, openPage, shot, cspViolations } from './helpers.mjs';

const DIST = path.join(ROOT, 'dist');
const ARTICLES = path.join(ROOT, 'build/e2e-cdn-articles');
const FIXTURES = path.join(ROOT, 'tests/fixtures/models');

// The files a CDN user downloads with the default model: the two component bundles and what they
// import, the engine, and the default model's four files. Nothing else.
const EXPECTED_FILES = [
  '/headscope-view.js', '/headscope-lab.js', '/analysis.js', '/headscope-worker.js', '/headscope.js',
  '/headscope_wasm.js', '/result.js', '/worker.js', '/headscope_wasm.wasm',
  '/models/headscope-base/config.json', '/models/headscope-base/model.safetensors',
  '/models/headscope-base/vocab.json', '/models/headscope-base/merges.txt',
];

let browser;
const servers = [];
let cdn;          // dist/ with CORS on every file
let cdnJsOnly;    // dist/ with CORS on .js files only: scripts load, the .wasm cannot be read
let thirdOrigin;  // model folders without any CORS header

async function serve(options) {
  const s = await startServer({ mounts: [], ...options });
  servers.push(s);
  return s;
}

/** Writes an article page that loads the widgets from `from` and serves it under `csp`. */
async function article(name, { from, csp = null, body }) {
  const dir = path.join(ARTICLES, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'favicon.ico'), ''); // the browser asks for it; a 404 would be a console error
  writeFileSync(path.join(dir, 'index.html'), `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>An article that embeds headscope from a CDN</title>
<script type="module" src="${from}headscope-view.js"></script>
<script type="module" src="${from}headscope-lab.js"></script>
</head>
<body>
<h1>Attention, embedded from another origin</h1>
${body}
</body>
</html>
`);
  const s = await serve({ root: dir, csp });
  return s.base;
}

const VIEW_AND_LAB = `
<headscope-view id="view" view="heatmap" layer="0" head="1" editable></headscope-view>
<headscope-lab id="lab" text="The chef, who trained in Paris, cooked the meal quickly."></headscope-lab>`;

async function widgetsRendered(page) {
  await page.waitForFunction(() => Number(document.getElementById('view').dataset.tokens) > 0
    && document.getElementById('lab').result?.T > 0, null, { timeout: 60000 });
}

/** Distinct colours painted on the first canvas in a widget's shadow root (0: blank or missing). */
function paintedColours(page, id) {
  return page.evaluate((widgetId) => {
    const canvas = document.getElementById(widgetId).shadowRoot.querySelector('canvas');
    if (!canvas || canvas.width === 0 || canvas.height === 0) return 0;
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const colours = new Set();
    for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    return colours.size;
  }, id);
}

/** Checks that both widgets show attention, and that typing in the editable one re-runs it. */
async function checkWidgetsWork(page) {
  await widgetsRendered(page);
  // attention weights are painted in a colour ramp: a rendered head shows many shades, an empty
  // or failed canvas none (20 is far below the T*(T+1)/2 cells of even a short sentence)
  for (const id of ['view', 'lab']) {
    const colours = await paintedColours(page, id);
    assert.ok(colours > 20, `${id} paints attention (${colours} colours)`);
  }
  const typed = 'Typed into a widget from another origin.';
  await page.locator('#view textarea').fill(typed);
  await page.waitForFunction((t) => document.getElementById('view').result.text === t, typed);
  const caption = await page.locator('#view .hs-caption').textContent();
  assert.match(caption, /^Layer 0, head 1: .+ attends most to/);
}

function consoleInfos(page) {
  const infos = [];
  page.on('console', (msg) => { if (msg.type() === 'info') infos.push(msg.text()); });
  return infos;
}

before(async () => {
  rmSync(ARTICLES, { recursive: true, force: true });
  browser = await launch();
  cdn = await serve({ root: DIST, cors: ['*'], csp: null });
  cdnJsOnly = await serve({ root: DIST, cors: ['.js'], csp: null });
  thirdOrigin = await serve({ root: FIXTURES, csp: null });
});
after(async () => {
  await browser?.close();
  await Promise.all(servers.map((s) => s.close()));
});

test('an article on one origin runs both widgets from the package on another; one worker, one model load, only the needed files', async (t) => {
  const base = await article('open', { from: cdn.base, body: VIEW_AND_LAB });
  assert.notEqual(new URL(base).origin, new URL(cdn.base).origin);
  cdn.requests.length = 0;
  const { page, context, problems } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  const infos = consoleInfos(page);
  await page.goto(base);
  await checkWidgetsWork(page);
  assert.equal(page.workers().length, 1, 'the model runs in one Web Worker shared by both widgets');
  assert.ok(page.workers()[0].url().startsWith('blob:'), 'started through a same-origin blob: module');
  assert.deepEqual(infos.filter((m) => m.includes('headscope')), [], 'no page-thread fallback');
  const requested = [...new Set(cdn.requests)].sort();
  assert.deepEqual(requested, [...EXPECTED_FILES].sort(), 'a CDN user downloads the default model and the engine, nothing else');
  assert.equal(cdn.requests.filter((p) => p.endsWith('model.safetensors')).length, 1, 'one weights download for two widgets');
  await shot(page, 'cdn-article', { fullPage: true });
  assert.deepEqual(problems, []);
});

test('an article with a strict CSP that allows the CDN and blob: workers runs both widgets without violations', async (t) => {
  const cdnOrigin = new URL(cdn.base).origin;
  const csp = `default-src 'none'; script-src ${cdnOrigin} 'wasm-unsafe-eval'; worker-src blob: ${cdnOrigin}; connect-src ${cdnOrigin}`;
  const base = await article('strict', { from: cdn.base, csp, body: VIEW_AND_LAB });
  const { page, context, problems } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  const infos = consoleInfos(page);
  const response = await page.goto(base);
  assert.equal(response.headers()['content-security-policy'], csp);
  await checkWidgetsWork(page);
  assert.equal(page.workers().length, 1, 'the worker started under the policy');
  assert.deepEqual(infos.filter((m) => m.includes('headscope')), []);
  await shot(page, 'cdn-strict-csp', { fullPage: true });
  assert.deepEqual(await cspViolations(page), [], 'CSP violations');
  assert.deepEqual(problems, []);
});

test('a CSP that forbids blob: workers: the widgets run on the page thread, say why once, and share one model load', async (t) => {
  const cdnOrigin = new URL(cdn.base).origin;
  const csp = `default-src 'none'; script-src ${cdnOrigin} 'wasm-unsafe-eval'; worker-src 'self'; connect-src ${cdnOrigin}`;
  const body = `${VIEW_AND_LAB}\n<headscope-view id="lines" view="lines" layer="1" head="0"></headscope-view>`;
  const base = await article('no-blob-worker', { from: cdn.base, csp, body });
  cdn.requests.length = 0;
  const { page, context, problems } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  const infos = consoleInfos(page);
  await page.goto(base);
  await checkWidgetsWork(page);
  await page.waitForFunction(() => Number(document.getElementById('lines').dataset.tokens) > 0);
  assert.ok(await page.locator('#lines svg line').count() > 0, 'the lines widget draws links');
  assert.equal(page.workers().length, 0, 'no worker runs');
  const told = infos.filter((m) => m.includes('headscope'));
  assert.equal(told.length, 1, `told once, for three widgets: ${JSON.stringify(told)}`);
  assert.match(told[0], /no Web Worker could be started: .*worker\.js could not be started from this page .*must allow blob: and http:\/\/127\.0\.0\.1:\d+ in worker-src.*page thread/s);
  assert.equal(cdn.requests.filter((p) => p.endsWith('model.safetensors')).length, 1, 'one weights download for three widgets');
  // the only violation is the refused worker, and nothing else went wrong
  const violations = await cspViolations(page);
  assert.ok(violations.length >= 1 && violations.every((v) => /^worker-src blob/.test(v)), JSON.stringify(violations));
  const refusedWorker = /^console error: Creating a worker from 'blob:[^']+' violates the following Content Security Policy directive: "worker-src 'self'"/;
  assert.deepEqual(problems.filter((p) => !refusedWorker.test(p)), []);
  await shot(page, 'cdn-no-blob-worker', { fullPage: true });
});

test('a CDN that sends CORS headers only on scripts: each widget names the .wasm it could not read and the header it needs', async (t) => {
  const base = await article('wasm-without-cors', { from: cdnJsOnly.base, body: VIEW_AND_LAB });
  const { page, context } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  await page.goto(base);
  for (const id of ['view', 'lab']) {
    const status = page.locator(`#${id} [role="status"]`, { hasText: 'could not be loaded' });
    await status.waitFor({ timeout: 60000 });
    const message = await status.textContent();
    assert.ok(message.includes(`${cdnJsOnly.base}headscope_wasm.wasm`), `${id}: names the file: ${message}`);
    assert.match(message, /Access-Control-Allow-Origin/, `${id}: names the header`);
    assert.ok(await status.isVisible(), `${id}: the message is visible`);
  }
  await shot(page, 'cdn-wasm-without-cors', { fullPage: true });
});

test('a model folder on a third origin without CORS: the widget names the file and the header; the default model still runs beside it', async (t) => {
  const modelUrl = `${thirdOrigin.base}odd-hs12/`;
  const body = `<headscope-view id="other" model="${modelUrl}"></headscope-view>\n${VIEW_AND_LAB}`;
  const base = await article('model-without-cors', { from: cdn.base, body });
  const { page, context } = await openPage(browser, 'about:blank');
  t.after(() => context.close());
  await page.goto(base);
  const status = page.locator('#other [role="status"]', { hasText: 'could not be loaded' });
  await status.waitFor({ timeout: 60000 });
  const message = await status.textContent();
  assert.match(message, new RegExp(`${modelUrl.replace(/[.]/g, '\\.')}(config\\.json|model\\.safetensors|vocab\\.json|merges\\.txt)`), message);
  assert.match(message, /Access-Control-Allow-Origin/);
  await checkWidgetsWork(page);
  await shot(page, 'cdn-model-without-cors', { fullPage: true });
});
