// End-to-end tests of embedding from a CDN: an article served on one origin loads <headscope-view>
// and <headscope-lab> from the package's dist/ served on another origin that sends
// "Access-Control-Allow-Origin: *", as jsDelivr and unpkg do. Every server listens on 127.0.0.1.
// Screenshots in build/e2e-artifacts/cdn-*.png. Run with tests/e2e/run.sh.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test as base, expect, ROOT, startServer, shot } from './fixtures.mjs';
import { ISOLATION_HEADERS } from '../../web/server/static-server.mjs';

const DIST = path.join(ROOT, 'dist');
const FIXTURES = path.join(ROOT, 'tests/fixtures/models');

// The files a CDN user downloads with the default model: the two component bundles and what they
// import, the engine (the relaxed-SIMD build: Chromium validates it; the SIMD128 binary is not
// fetched, its 66 KB glue is: wasm.js imports every glue statically, the threaded builds' too, whose
// .wasm and worker are fetched only on a cross-origin-isolated page), and the default model's four
// files. Nothing else.
const EXPECTED_FILES = [
  '/headscope-view.js',
  '/headscope-lab.js',
  '/analysis.js',
  '/roles.json',
  '/headscope-worker.js',
  '/headscope.js',
  '/headscope_wasm.js',
  '/headscope_wasm_relaxed.js',
  '/headscope_wasm_threads.js',
  '/headscope_wasm_threads_relaxed.js',
  '/wasm.js',
  '/files.js',
  '/result.js',
  '/reuse.js',
  '/worker-thread.js',
  '/headscope_wasm_relaxed.wasm',
  '/worker-protocol.js', // the page-worker message table, imported on both sides
  '/worker-fallback.js', // the model on the page thread where no worker starts (4 KB), a static import of headscope-worker.js
  '/trainer.js', // createTrainer's adapter (7 KB), a static import of headscope.js: bundlers' worker formats refuse code splitting
  '/generation.js', // generate()'s options and the written text's bytes, a static import of headscope.js
  '/patching.js', // patch()'s adapter (6 KB), a static import of headscope.js
  '/explain.js', // explainScore() and circuits()'s adapters (3 KB), a static import of headscope.js
  '/maps.js', // attentionTile() and attentionThumbnails()'s adapters (3 KB), a static import of headscope.js
  '/run-data.js', // a run's data from the engine, what an earlier result lets it leave out (3 KB), a static import of headscope.js
  '/models/index.json', // the shipped models' list (files.js's shippedModels), a JSON module of files.js
  '/models/headscope-base/config.json',
  '/models/headscope-base/model.safetensors',
  '/models/headscope-base/vocab.json',
  '/models/headscope-base/merges.txt',
];

/** A fixture serving `options` (startServer's) on its own origin for one test; `requests` logs its paths. */
const origin =
  (options) =>
  async ({}, use) => {
    const server = await startServer({ mounts: [], csp: null, ...options });
    await use(server);
    await server.close();
  };

const test = base.extend({
  // dist/ with CORS on every file, as jsDelivr and unpkg send it
  cdn: origin({ root: DIST, cors: ['*'] }),
  // dist/ with CORS on the module graph only (.js, and roles.json, a JSON module the lab imports):
  // the scripts load, the .wasm cannot be read
  cdnJsOnly: origin({ root: DIST, cors: ['.js', '.json'] }),
  // the test models without any CORS header
  thirdOrigin: origin({ root: FIXTURES }),
  // dist/ as a CDN that also sends Cross-Origin-Resource-Policy, which a cross-origin-isolated article
  // needs for the threaded engine's worker script (loaded without CORS)
  cdnWithCorp: origin({ root: DIST, cors: ['*'], headers: { 'Cross-Origin-Resource-Policy': 'cross-origin' } }),
  // article(name, { from, csp, body }): writes an article page (in the test's output folder) that
  // loads the widgets from `from`, serves it on an origin of its own under `csp`, returns its URL
  article: async ({}, use, testInfo) => {
    const servers = [];
    await use(async (name, { from, csp = null, body, headers = {} }) => {
      const dir = testInfo.outputPath(name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'favicon.ico'), ''); // the browser asks for it; a 404 would be a console error
      writeFileSync(
        path.join(dir, 'index.html'),
        `<!doctype html>
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
`,
      );
      const server = await startServer({ root: dir, mounts: [], csp, headers });
      servers.push(server);
      return server.base;
    });
    await Promise.all(servers.map((s) => s.close()));
  },
  // the console.info messages of the test's pages (the widgets' page-thread fallback says why there)
  infos: async ({ context }, use) => {
    const infos = [];
    context.on('console', (msg) => {
      if (msg.type() === 'info') infos.push(msg.text());
    });
    await use(infos);
  },
});

// what the single-threaded engine says, once, on a page that is not cross-origin isolated
const NOT_ISOLATED =
  'headscope: single-threaded engine: the page is not cross-origin isolated (it needs ' +
  'Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp or credentialless)';

const VIEW_AND_LAB = `
<headscope-view id="view" view="heatmap" layer="0" head="1" editable></headscope-view>
<headscope-lab id="lab" text="The chef, who trained in Paris, cooked the meal quickly."></headscope-lab>`;

/** Distinct colours painted on the first canvas in a widget's shadow root (0: blank or missing). */
function paintedColours(page, id) {
  return page.locator(`#${id}`).evaluate((widget) => {
    const canvas = widget.shadowRoot.querySelector('canvas');
    if (!canvas || canvas.width === 0 || canvas.height === 0) return 0;
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const colours = new Set();
    for (let i = 0; i < data.length; i += 4)
      if (data[i + 3] > 0) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    return colours.size;
  });
}

/** Checks that both widgets show attention, and that typing in the editable one re-runs it. */
async function checkWidgetsWork(page) {
  await expect(page.locator('#view')).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
  await expect
    .poll(() => page.locator('#lab').evaluate((e) => e.result?.T ?? 0), { timeout: 60_000 })
    .toBeGreaterThan(0);
  // attention weights are painted in a colour ramp: a rendered head shows many shades, an empty
  // or failed canvas none (20 is far below the T*(T+1)/2 cells of even a short sentence)
  for (const id of ['view', 'lab']) {
    await expect.poll(() => paintedColours(page, id), { message: `${id} paints attention` }).toBeGreaterThan(20);
  }
  const typed = 'Typed into a widget from another origin.';
  await page.locator('#view textarea').fill(typed);
  await expect.poll(() => page.locator('#view').evaluate((e) => e.result.text)).toBe(typed);
  await expect(page.locator('#view .hs-caption')).toHaveText(/^Layer 0, head 1: .+ attends most to/);
}

test('an article on one origin runs both widgets from the package on another; one worker, one model load, only the needed files', async ({
  page,
  cdn,
  article,
  infos,
}) => {
  const url = await article('open', { from: cdn.base, body: VIEW_AND_LAB });
  expect(new URL(url).origin).not.toBe(new URL(cdn.base).origin);
  await page.goto(url);
  await checkWidgetsWork(page);
  expect(page.workers(), 'the model runs in one Web Worker shared by both widgets').toHaveLength(1);
  expect(page.workers()[0].url(), 'started through a same-origin blob: module').toMatch(/^blob:/);
  expect(
    infos.filter((m) => m.includes('headscope')),
    'no page-thread fallback; the single-threaded engine said why, once',
  ).toEqual([NOT_ISOLATED]);
  const requested = [...new Set(cdn.requests)].sort();
  expect(requested, 'a CDN user downloads the default model and the engine, nothing else').toEqual(
    [...EXPECTED_FILES].sort(),
  );
  expect(
    cdn.requests.filter((p) => p.endsWith('model.safetensors')),
    'one weights download for two widgets',
  ).toHaveLength(1);
  await shot(page, 'cdn-article', { fullPage: true });
});

test('an article with a strict CSP that allows the CDN and blob: workers runs both widgets without violations', async ({
  page,
  cdn,
  article,
  infos,
}) => {
  // CSP violations would be reported by the page fixture
  const cdnOrigin = new URL(cdn.base).origin;
  const csp = `default-src 'none'; script-src ${cdnOrigin} 'wasm-unsafe-eval'; worker-src blob: ${cdnOrigin}; connect-src ${cdnOrigin}`;
  const url = await article('strict', { from: cdn.base, csp, body: VIEW_AND_LAB });
  const response = await page.goto(url);
  expect(response.headers()['content-security-policy']).toBe(csp);
  await checkWidgetsWork(page);
  expect(page.workers(), 'the worker started under the policy').toHaveLength(1);
  expect(infos.filter((m) => m.includes('headscope'))).toEqual([NOT_ISOLATED]);
  await shot(page, 'cdn-strict-csp', { fullPage: true });
});

test('a CSP that forbids blob: workers: the widgets run on the page thread, say why once, and share one model load', async ({
  page,
  cdn,
  article,
  infos,
  problems,
}) => {
  const cdnOrigin = new URL(cdn.base).origin;
  const csp = `default-src 'none'; script-src ${cdnOrigin} 'wasm-unsafe-eval'; worker-src 'self'; connect-src ${cdnOrigin}`;
  const body = `${VIEW_AND_LAB}\n<headscope-view id="lines" view="lines" layer="1" head="0"></headscope-view>`;
  const url = await article('no-blob-worker', { from: cdn.base, csp, body });
  // the refused worker is the one problem this page has: a violation report and its console error
  problems.allow(
    /^CSP violation: worker-src blob\b/,
    /^console error: Creating a worker from 'blob:[^']+' violates the following Content Security Policy directive: "worker-src 'self'"/,
  );
  await page.goto(url);
  await checkWidgetsWork(page);
  await expect(page.locator('#lines')).toHaveAttribute('data-tokens', /^[1-9]\d*$/);
  await expect(page.locator('#lines svg line').first(), 'the lines widget draws links').toBeAttached();
  expect(page.workers(), 'no worker runs').toHaveLength(0);
  const told = infos.filter((m) => m.includes('headscope') && m !== NOT_ISOLATED);
  expect(told, 'told once, for three widgets').toHaveLength(1);
  expect(told[0]).toMatch(
    /no Web Worker could be started: .*worker-thread\.js could not be started from this page .*must allow blob: and http:\/\/127\.0\.0\.1:\d+ in worker-src.*page thread/s,
  );
  expect(
    cdn.requests.filter((p) => p.endsWith('model.safetensors')),
    'one weights download for three widgets',
  ).toHaveLength(1);
  expect(problems.csp.length, 'the refused worker was reported').toBeGreaterThanOrEqual(1);
  for (const v of problems.csp) expect(v).toMatch(/^worker-src blob/);
  await shot(page, 'cdn-no-blob-worker', { fullPage: true });
});

test('a cross-origin-isolated article runs the engine threaded from a CDN that sends CORP, its pthread workers started from blob: scripts', async ({
  page,
  cdnWithCorp,
  article,
  infos,
}) => {
  const url = await article('isolated', { from: cdnWithCorp.base, body: VIEW_AND_LAB, headers: ISOLATION_HEADERS });
  await page.goto(url);
  expect(await page.evaluate(() => crossOriginIsolated), 'the article is isolated').toBe(true);
  await checkWidgetsWork(page);
  expect(
    infos.filter((m) => m.includes('headscope')),
    'nothing to say: the engine runs threaded',
  ).toEqual([]);
  // the widgets' model: its threads, and the threaded build's files from the CDN
  const threads = await page.evaluate(async (base) => {
    const { loadModelInWorker } = await import(`${base}headscope-worker.js`);
    const model = await loadModelInWorker();
    try {
      return model.threads;
    } finally {
      model.dispose();
    }
  }, cdnWithCorp.base);
  expect(threads, 'min(cores, 8) threads on this 2-core machine').toBe(
    Math.min(8, await page.evaluate(() => navigator.hardwareConcurrency)),
  );
  // Chromium validates relaxed SIMD: the threaded build with its multiply-add
  for (const f of ['/headscope_wasm_threads_relaxed.wasm', '/headscope_wasm_threads_relaxed.worker.js'])
    expect(cdnWithCorp.requests, `${f} came from the CDN`).toContain(f);
  await shot(page, 'cdn-isolated-threads', { fullPage: true });
});

test('a CDN that sends CORS headers only on the scripts: each widget names the .wasm it could not read and the header it needs', async ({
  page,
  cdnJsOnly,
  article,
}) => {
  const url = await article('wasm-without-cors', { from: cdnJsOnly.base, body: VIEW_AND_LAB });
  const wasm = `${cdnJsOnly.base}headscope_wasm_relaxed.wasm`; // the build Chromium loads
  // the refused read happens in the worker, whose network errors Chromium does not log on the page:
  // the page itself stays free of errors (the page fixture checks)
  await page.goto(url);
  for (const id of ['view', 'lab']) {
    const status = page.locator(`#${id} [role="status"]`, { hasText: 'could not be loaded' });
    await expect(status, `${id}: the message is visible`).toBeVisible({ timeout: 60_000 });
    await expect(status, `${id}: names the file`).toContainText(wasm);
    await expect(status, `${id}: names the header`).toContainText('Access-Control-Allow-Origin');
  }
  await shot(page, 'cdn-wasm-without-cors', { fullPage: true });
});

test('a model folder on a third origin without CORS: the widget names the file and the header; the default model still runs beside it', async ({
  page,
  cdn,
  thirdOrigin,
  article,
}) => {
  const modelUrl = `${thirdOrigin.base}odd-hs12/`;
  const body = `<headscope-view id="other" model="${modelUrl}"></headscope-view>\n${VIEW_AND_LAB}`;
  const url = await article('model-without-cors', { from: cdn.base, body });
  await page.goto(url);
  const status = page.locator('#other [role="status"]', { hasText: 'could not be loaded' });
  await expect(status).toBeVisible({ timeout: 60_000 });
  await expect(status).toContainText(
    new RegExp(`${escapeRegExp(modelUrl)}(config\\.json|model\\.safetensors|vocab\\.json|merges\\.txt)`),
  );
  await expect(status).toContainText('Access-Control-Allow-Origin');
  await checkWidgetsWork(page);
  await shot(page, 'cdn-model-without-cors', { fullPage: true });
});

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// the widgets of the explainer article (web/demo/article/article.html) exactly as its HTML writes
// them, the snippets its authors' guide tells an author to copy
const ARTICLE_WIDGETS = [
  ...readFileSync(path.join(ROOT, 'web/demo/article/article.html'), 'utf8').matchAll(
    /<headscope-(view|lab)\b[^>]*>[^<]*<\/headscope-\1>/g,
  ),
].map((m) => m[0]);

test("the explainer article's widgets, copied into an article on another origin: none loads a model before it is scrolled near, each renders", async ({
  page,
  cdn,
  article,
}) => {
  test.setTimeout(180_000);
  expect(ARTICLE_WIDGETS.length, 'the article holds its widgets').toBeGreaterThanOrEqual(5);
  expect(ARTICLE_WIDGETS.every((w) => w.includes('loading="lazy"'))).toBe(true);
  // a screenful of text first (no policy on this test page: the spacer may carry its own height)
  const body = `<div style="height: 3000px">An introduction.</div>\n${ARTICLE_WIDGETS.join('\n<p>Some prose.</p>\n')}`;
  const url = await article('lazy', { from: cdn.base, body });
  await page.goto(url);
  const widgets = page.locator('headscope-view, headscope-lab');
  await expect(widgets).toHaveCount(ARTICLE_WIDGETS.length);
  // every widget is defined and waiting: none has asked for a model
  for (const w of await widgets.all())
    await expect(w.locator('.hs-status-text, [role="status"]').first()).toHaveText(
      'The model loads when you scroll here.',
    );
  expect(cdn.requests.filter((p) => p.startsWith('/models/') && p !== '/models/index.json')).toEqual([]);
  for (const w of await widgets.all()) {
    await w.scrollIntoViewIfNeeded();
    await expect(w).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
  }
  const weights = cdn.requests.filter((p) => p.endsWith('/model.safetensors')).sort();
  expect(weights, 'each model the widgets name, once').toEqual([
    '/models/heads-1/model.safetensors',
    '/models/heads-8/model.safetensors',
    '/models/headscope-base/model.safetensors',
  ]);
  await shot(page, 'cdn-article-widgets', { fullPage: true });
});
