// Fixtures and helpers shared by the end-to-end tests (@playwright/test, Debian's Chromium; the
// browser, its flags and the timeouts are in playwright.config.mjs).
//
//   import { test, expect } from './fixtures.mjs';
//   test('...', async ({ page, site, problems }) => { await page.goto(site.url('index.html')); ... });
//
// - `site` (one per worker): the test site build/e2e-site/ with the test models mounted under
//   /fixtures/, served by web/server/static-server.mjs under the demo's strict CSP header.
// - `context` / `page`: Playwright's, with every page of the context watched for console errors,
//   page errors, dialogs and CSP violations. At the end of a test that passed so far, any of them
//   fails it, unless the test declared it with problems.allow(/pattern/). Playwright closes the
//   context after every test, passed or failed.
// - shot(): a named screenshot in build/e2e-artifacts/, taken after the next painted frame.
import { existsSync, mkdirSync, rmSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test as base, expect } from '@playwright/test';
import { startStaticServer, DEMO_CSP } from '../../web/server/static-server.mjs';
import { writeRandomModel } from './random-model.mjs';

export { expect };

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SITE = process.env.HEADSCOPE_SITE || path.join(ROOT, 'build/e2e-site');
export const ARTIFACTS = path.join(ROOT, 'build/e2e-artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

/** The model the tests use: the shipped default when it was built, else a test fixture. */
export const usingDefaultModel = existsSync(path.join(SITE, 'models/headscope-base/model.safetensors'));
const MODEL_QUERY = usingDefaultModel ? '' : 'model=/fixtures/odd-hs12/';

export function withModel(url) {
  if (!MODEL_QUERY) return url;
  return url + (url.includes('?') ? '&' : '?') + MODEL_QUERY;
}

/**
 * Serves a folder on a free port of 127.0.0.1 (web/server/static-server.mjs, the demo's own server).
 * By default: the test site with the fixtures mounted, under the demo's strict CSP. Options:
 * root, mounts, csp (null: none), cors, headers (as in static-server.mjs). `requests` collects the paths
 * asked for, in order.
 */
export async function startServer({
  root = SITE,
  mounts = [['/fixtures/', path.join(ROOT, 'tests/fixtures/models')]],
  csp = DEMO_CSP,
  cors = null,
  headers = {},
} = {}) {
  const requests = [];
  const server = await startStaticServer({ root, mounts, csp, cors, headers, log: (method, p) => requests.push(p) });
  return { base: server.url, requests, close: server.close };
}

/**
 * A worker fixture (for test.extend): a random GPT-2-shaped model (random-model.mjs), written once per
 * worker into a fresh build/e2e-<mount>/<name>/ with the shipped model's tokenizer (the odd-hs12
 * fixture's when the site has none), and a server with that folder mounted under /<mount>/, beside
 * `mounts`. Gives the server with the model's `config` and `modelDir`.
 *   shape: writeRandomModel's { n_layer, n_head, n_embd, n_positions, attnScale?, seed? }
 */
export function randomModelSite(mount, name, shape, { mounts = [] } = {}) {
  return [
    async ({}, use) => {
      const dir = path.join(ROOT, 'build', `e2e-${mount}`);
      rmSync(dir, { recursive: true, force: true });
      const shipped = path.join(SITE, 'models/headscope-base');
      const tokenizerDir = existsSync(path.join(shipped, 'vocab.json'))
        ? shipped
        : path.join(ROOT, 'tests/fixtures/models/odd-hs12');
      const modelDir = path.join(dir, name);
      const config = writeRandomModel(modelDir, { ...shape, tokenizerDir });
      const server = await startServer({ mounts: [...mounts, [`/${mount}/`, dir]] });
      await use({ ...server, config, modelDir });
      await server.close();
    },
    { scope: 'worker' },
  ];
}

/** What went wrong on the pages of one test: console errors, page errors, dialogs, CSP violations. */
class PageProblems {
  #seen = [];
  #allowed = [];

  /** Watches every page of `context`, present and future. */
  async watch(context) {
    const onConsole = (where) => (msg) => {
      if (msg.type() === 'error') this.#seen.push(`${where}console error: ${msg.text()}`);
    };
    context.on('console', onConsole(''));
    // the model runs in a Web Worker: its console is watched too
    const watchWorkers = (page) => page.on('worker', (w) => w.on('console', onConsole('worker ')));
    context.pages().forEach(watchWorkers);
    context.on('page', watchWorkers);
    context.on('weberror', (e) => this.#seen.push(`page error: ${e.error().message}`));
    context.on('dialog', (d) => {
      this.#seen.push(`dialog: ${d.message()}`);
      d.dismiss().catch(() => {});
    });
    await context.exposeBinding('__headscopeTestCsp', (source, text) => this.#seen.push(`CSP violation: ${text}`));
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) =>
        window.__headscopeTestCsp(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
  }

  /** Every problem so far, as 'console error: ...', 'worker console error: ...', 'page error: ...', 'dialog: ...',
   *  'CSP violation: <directive> <url>'. */
  get all() {
    return [...this.#seen];
  }

  /** The CSP violations so far, as '<directive> <blocked URL>'. */
  get csp() {
    return this.#seen.filter((p) => p.startsWith('CSP violation: ')).map((p) => p.slice('CSP violation: '.length));
  }

  /** Declares problems this test expects (each pattern is matched against the strings of `all`). */
  allow(...patterns) {
    this.#allowed.push(...patterns);
  }

  /** The problems no allow() pattern matches. */
  get unexpected() {
    return this.#seen.filter((p) => !this.#allowed.some((re) => re.test(p)));
  }
}

// The wide random model of the long-text tests (6 layers x 12 heads, width 384, context 1,024): a full
// text is seconds of work in wasm, and its 72 full maps at 800 tokens pass the demo's map budget.
/**
 * A worker fixture: the llama-gqa test model (2 layers, 4 query heads over 2 key/value heads, RoPE,
 * its float64 references in tests/fixtures/models/llama-gqa/) with its context raised to 4,096 tokens
 * (rotary positions need no table), served under /llama-long/llama-gqa/: a Llama-family model for
 * texts of thousands of tokens. A test file adds it with base.extend({ llamaSite: llamaLongSite() }).
 */
export const llamaLongSite = () => [
  async ({}, use) => {
    const dir = path.join(ROOT, 'build', 'e2e-llama-long');
    const model = path.join(dir, 'llama-gqa');
    const src = path.join(ROOT, 'tests/fixtures/models/llama-gqa');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(model, { recursive: true });
    for (const f of ['model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(path.join(src, f), path.join(model, f));
    const config = JSON.parse(readFileSync(path.join(src, 'config.json'), 'utf8'));
    config.max_position_embeddings = 4096;
    writeFileSync(path.join(model, 'config.json'), JSON.stringify(config, null, 2));
    const server = await startServer({ mounts: [['/llama-long/', dir]] });
    await use({ ...server, config });
    await server.close();
  },
  { scope: 'worker' },
];

/** Types `word` at the end of the demo's text box and waits until its run is shown and the page idle. */
export async function typeAtEnd(page, word) {
  const text = await page.evaluate(() => window.headscopeDemo.result.text);
  await page.locator('#text').press('End');
  await page.keyboard.type(word);
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result?.text), { timeout: 120_000 })
    .toBe(`${text}${word}`);
  await page.evaluate(() => window.headscopeDemo.idle());
}

// Served under /long/gpt-wide/; a test file adds it with base.extend({ longSite: wideModelSite() }).
export const wideModelSite = () =>
  randomModelSite('long', 'gpt-wide', { n_layer: 6, n_head: 12, n_embd: 384, n_positions: 1024, attnScale: 0.05 });

// n words of the running example's kind, about 1.06 tokens a word
const LONG_WORDS = 'the chef who trained in paris cooked the meal quickly while the guests waited in the garden'.split(
  ' ',
);
export const longText = (n) => Array.from({ length: n }, (_, i) => LONG_WORDS[i % LONG_WORDS.length]).join(' ');

export const test = base.extend({
  site: [
    async ({}, use) => {
      const server = await startServer();
      await use({ ...server, url: (p) => withModel(server.base + p) });
      await server.close();
    },
    { scope: 'worker' },
  ],

  problems: async ({}, use) => {
    await use(new PageProblems());
  },

  context: async ({ context, problems }, use, testInfo) => {
    await problems.watch(context);
    await use(context);
    // a test that already failed keeps its own error as the report's first line
    if (testInfo.status === testInfo.expectedStatus) {
      expect(problems.unexpected, 'console errors, page errors, dialogs or CSP violations').toEqual([]);
    }
  },
});

/** Resolves after the page has painted two more frames (what a screenshot should show is on screen). */
export async function nextFrames(page) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
}

/** A screenshot named `name` in build/e2e-artifacts/, after the next painted frames. */
export async function shot(page, name, options = {}) {
  await nextFrames(page);
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, ...options });
  return file;
}

/** How many times the demo page has rendered (body[data-renders]). */
export async function renders(page) {
  return Number((await page.locator('body').getAttribute('data-renders')) || 0);
}

/** Waits until the demo page has rendered a result, and more than `after` renders in all. */
export async function demoReady(page, after = 0) {
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true', { timeout: 60_000 });
  if (after > 0) await expect.poll(() => renders(page), { timeout: 30_000 }).toBeGreaterThan(after);
}

/** Opens `url` (a page of the demo) in `page` and waits until it is ready (demoReady()). */
export async function openDemo(page, url) {
  await page.goto(url);
  await demoReady(page);
}

/** Waits until the demo's runner has nothing pending or in flight. */
export async function demoIdle(page) {
  await page.evaluate(() => window.headscopeDemo.idle());
}

// The demo's heatmap canvas against the engine's tile of what it covers (its data-rows, data-cols,
// data-bin): every pixel the colour of its block's weight, or the faint colour where the block lies
// wholly after its query. The colour of a weight w is the theme's table at round(255 sqrt(w)) (the
// scale's definition, theme.js heatIndex). Returns the view and the pixels that differ.
export async function heatmapAgainstEngine(page) {
  // the bitmap of a result without maps comes as the engine's tiles (heatmap-bitmap.js): until the
  // tile asked for last is painted the canvas says data-pending
  await page.waitForFunction(() => {
    const c = document.querySelector('#detail-view canvas.hs-heatmap-cells');
    return c && c.dataset.rows && !c.dataset.pending;
  });
  return page.evaluate(async () => {
    const demo = window.headscopeDemo;
    const r = demo.result;
    const canvas = document.querySelector('#detail-view canvas.hs-heatmap-cells');
    const [r0, r1] = canvas.dataset.rows.split(' ').map(Number);
    const [c0, c1] = canvas.dataset.cols.split(' ').map(Number);
    const bin = Number(canvas.dataset.bin);
    const tile = await demo.model.attentionTile(r.text, demo.state.layer, demo.state.head, {
      rows: [r0, r1],
      columns: [c0, c1],
      bin,
      ablate: r.ablate,
    });
    const { lut } = demo.theme.lut;
    const faint = [1, 3, 5].map((i) => parseInt(demo.theme.faint.slice(i, i + 2), 16));
    const index = (w) => (!(w > 0) ? 0 : w >= 1 ? 255 : Math.round(Math.sqrt(w) * 255));
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let wrong = 0;
    let first = null;
    let checked = 0;
    for (let y = 0; y < tile.nRows; y++)
      for (let x = 0; x < tile.nCols; x++) {
        checked++;
        // a block wholly after its query: its first key past its last query
        const masked = c0 + x * bin > Math.min(r1, r0 + (y + 1) * bin) - 1;
        const want = masked ? faint : [0, 1, 2].map((c) => lut[index(tile.values[y * tile.nCols + x]) * 3 + c]);
        const at = (y * canvas.width + x) * 4;
        if (want.some((v, c) => v !== px[at + c])) {
          wrong++;
          first ??= { x, y, want, got: [px[at], px[at + 1], px[at + 2]] };
        }
      }
    return {
      T: r.T,
      rows: [r0, r1],
      cols: [c0, c1],
      bin,
      size: canvas.dataset.shown.split(' ').map(Number), // its top left pixels show the cells (a whole map's canvas has room)
      cells: [tile.nCols, tile.nRows],
      checked,
      wrong,
      first,
    };
  });
}
