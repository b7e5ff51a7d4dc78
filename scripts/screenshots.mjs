// The README's picture of the demo page, taken from a real run in headless Chromium: the built site
// served under the demo's strict CSP, the default model on the article's sentence, light theme.
//
//   node scripts/screenshots.mjs [--site DIR] [--out FILE] [--timeout SECONDS]
//     --site DIR    the built demo site (default build/web, built first with scripts/build-package.sh
//                   and web/demo/build.sh when it is missing)
//     --out FILE    the PNG to write (default web/demo/screenshot.png, the tracked picture)
//     --timeout S   the longest the page may take, from launch to picture (default 90)
//   CHROMIUM=/path/to/chromium overrides /usr/bin/chromium.
//
// It waits for the page to report its views drawn (no fixed delays), checks the picture it took, and
// exits non-zero with one line naming the cause on any page error, console error, CSP violation,
// failed request or timeout. FILE is replaced only by a picture that passed every check.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import zlib from 'node:zlib';
import { startStaticServer, DEMO_CSP } from '../web/server/static-server.mjs';
import { chromiumLaunchOptions } from './common/chromium.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_SITE = path.join(ROOT, 'build/web');
const DEFAULT_OUT = path.join(ROOT, 'web/demo/screenshot.png');
const MODEL = 'headscope-base'; // the page's default model
const SENTENCE = 'The chef, who trained in Paris, cooked the meal quickly.'; // the article's sentence
// 1280 CSS px at scale 1: wide enough for the page's two columns, narrow enough for a README
const VIEWPORT = { width: 1280, height: 1500 };
// a model load and one run take a few seconds here; the timeout bounds a hang, not a normal run
const DEFAULT_TIMEOUT_S = 90;
// what a picture of the page may be: its size; enough colours to be the views, not a blank page; and
// small enough for a README tracked in git (Chromium's PNG of this page is about 200 KB)
const LIMITS = {
  minWidth: 1200,
  maxWidth: 1400,
  minHeight: 600,
  maxHeight: VIEWPORT.height,
  minColours: 200,
  maxBytes: 500 * 1024,
};

const rel = (p) => {
  const r = path.relative(process.cwd(), p);
  return r.startsWith('..') ? p : r || '.';
};
function fail(message) {
  console.error(`screenshots.mjs: ${message}`);
  process.exit(1);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      site: { type: 'string' },
      out: { type: 'string' },
      timeout: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  }));
} catch (e) {
  console.error(`screenshots.mjs: ${e.message}`);
  process.exit(2);
}
if (values.help) {
  console.log(
    'usage: node scripts/screenshots.mjs [--site DIR (default build/web)] [--out FILE (default web/demo/screenshot.png)] [--timeout SECONDS (default 90)]',
  );
  process.exit(0);
}
const TIMEOUT_MS = 1000 * Number(values.timeout ?? DEFAULT_TIMEOUT_S);
if (!(TIMEOUT_MS > 0)) {
  console.error(`screenshots.mjs: --timeout takes a number of seconds, got ${values.timeout}`);
  process.exit(2);
}
const site = values.site ? path.resolve(values.site) : DEFAULT_SITE;
const out = values.out ? path.resolve(values.out) : DEFAULT_OUT;

// ---- the site -------------------------------------------------------------------------------
function run(cmd, args) {
  console.log(`screenshots.mjs: ${[cmd, ...args].map(rel).join(' ')}`);
  const r = spawnSync(cmd, args, {
    cwd: ROOT,
    stdio: 'inherit',
    env: { NODE_PATH: '/usr/share/nodejs', ...process.env },
  });
  if (r.status !== 0) fail(`${rel(cmd)} failed (exit ${r.status ?? r.signal})`);
}
if (!existsSync(path.join(site, 'index.html'))) {
  // only the default site is built here; another folder is someone else's build, named in the error
  if (values.site)
    fail(`no built site in ${rel(site)}: build it with scripts/build-package.sh && web/demo/build.sh ${rel(site)}`);
  console.log(`screenshots.mjs: no built site in ${rel(site)}; building it`);
  if (!existsSync(path.join(ROOT, 'dist/headscope-worker.js'))) run(path.join(ROOT, 'scripts/build-package.sh'), []);
  run(path.join(ROOT, 'web/demo/build.sh'), [site]);
}
if (!existsSync(path.join(site, 'models', MODEL, 'model.safetensors'))) {
  fail(
    `the site ${rel(site)} has no default model (models/${MODEL}/model.safetensors): rebuild it with scripts/build-package.sh && web/demo/build.sh ${rel(site)}`,
  );
}

let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch {
  fail('playwright-core is not installed: run npm ci');
}

// ---- the run ----------------------------------------------------------------------------------
const t0 = performance.now();
const problems = [];
let reportProblem;
// settles (rejects) at the first problem, so a broken page fails at once instead of at the timeout
const problem = new Promise((_, reject) => {
  reportProblem = (p) => {
    problems.push(p);
    reject(new Error(p));
  };
});
problem.catch(() => {});

let step = 'starting';
const server = await startStaticServer({ root: site, csp: DEMO_CSP });
const browser = await chromium
  .launch(chromiumLaunchOptions())
  .catch((e) => fail(`could not start Chromium: ${e.message.split('\n')[0]}`));
const timer = setTimeout(() => reportProblem(`timed out after ${TIMEOUT_MS / 1000} s while ${step}`), TIMEOUT_MS);

async function take() {
  // reducedMotion: no transition may be caught half way in the picture
  const context = await browser.newContext({
    viewport: VIEWPORT,
    deviceScaleFactor: 1,
    colorScheme: 'light',
    reducedMotion: 'reduce',
  });
  const onConsole = (where) => (msg) => {
    if (msg.type() === 'error') reportProblem(`${where}console error: ${msg.text()}`);
  };
  context.on('console', onConsole(''));
  context.on('weberror', (e) => reportProblem(`page error: ${e.error().message}`));
  // Chromium reports a no-store fetch whose stream was read to its end as net::ERR_ABORTED
  // (microsoft/playwright#42742), and the site's files are served no-store: the model's files show up
  // so on every good run. A file that really is missing still fails, by its HTTP status (below) or
  // by the page's own error; any other network failure is a broken site.
  context.on('requestfailed', (r) => {
    const why = r.failure()?.errorText;
    if (why !== 'net::ERR_ABORTED') reportProblem(`request failed: ${r.url()} (${why})`);
  });
  context.on('response', (r) => {
    if (r.status() >= 400) reportProblem(`HTTP ${r.status()} for ${r.url()}`);
  });
  await context.exposeBinding('__screenshotCsp', (source, text) => reportProblem(`CSP violation: ${text}`));
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__screenshotCsp(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  const page = await context.newPage();
  // the model runs in a Web Worker: its console counts too
  page.on('worker', (w) => w.on('console', onConsole('worker ')));
  page.on('crash', () => reportProblem('the page crashed'));

  step = 'loading the page';
  await page.goto(`${server.url}index.html?text=${encodeURIComponent(SENTENCE)}`);
  step = 'waiting for the model to load and run';
  await page.waitForFunction(
    () => document.body.dataset.ready === 'true' || document.body.dataset.error === 'true',
    null,
    { timeout: 0 },
  );
  if (await page.evaluate(() => document.body.dataset.error === 'true')) {
    throw new Error(`the page could not load the model: ${await page.textContent('#loading-text')}`);
  }
  await page.evaluate(() => window.headscopeDemo.idle());
  step = 'waiting for the views to be drawn';
  // what "drawn" means: every view holds the result on screen (the checks of tests/e2e/demo.test.mjs)
  const missing = () =>
    page.evaluate(
      ({ model, sentence }) => {
        const r = window.headscopeDemo.result;
        const body = document.body.dataset;
        const count = (sel) => document.querySelectorAll(sel).length;
        const m = [];
        if (!r) return ['a result'];
        if (body.model !== model) m.push(`the default model (page shows ${body.model})`);
        if (document.querySelector('#text').value !== sentence) m.push("the article's sentence in the text box");
        if (document.querySelector('#theme-toggle').getAttribute('aria-pressed') !== 'false') m.push('the light theme');
        if (body.tokens !== String(r.T) || !(Number(body.renders) >= 1))
          m.push('a render of the result (body data-tokens, data-renders)');
        if (count('#tokens .token') !== r.T) m.push(`${r.T} tokens in the token strip`);
        if (count('#grid [role="gridcell"]') !== r.nLayer * r.nHead) m.push(`${r.nLayer * r.nHead} cells in the grid`);
        const canvas = document.querySelector('#grid canvas');
        if (!canvas || canvas.width === 0) m.push('the grid canvas');
        else {
          // every cell's part of the grid's canvas has content (not one flat colour)
          const box = canvas.getBoundingClientRect();
          const ctx = canvas.getContext('2d');
          const blank = [...document.querySelectorAll('#grid [role="gridcell"]')].filter((cell) => {
            const c = cell.getBoundingClientRect();
            const sx = canvas.width / box.width;
            const sy = canvas.height / box.height;
            const d = ctx.getImageData(
              Math.round((c.left - box.left + 3) * sx),
              Math.round((c.top - box.top + 3) * sy),
              Math.max(1, Math.round((c.width - 6) * sx)),
              Math.max(1, Math.round((c.height - 6) * sy)),
            ).data;
            for (let i = 4; i < d.length; i += 4)
              if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) return false;
            return true;
          });
          if (blank.length) m.push(`content in ${blank.length} blank grid cells`);
        }
        const detail = document.querySelector('#detail-view');
        if (!detail.querySelector('svg, canvas') || detail.getBoundingClientRect().height < 100)
          m.push('the heatmap of the selected head');
        if (!document.querySelector('#detail-caption').textContent.trim()) m.push('the detail caption');
        // the panels below: drawn once on screen (the page draws no panel out of view)
        const onScreen = (sel) => {
          const b = document.querySelector(sel).getBoundingClientRect();
          return b.top < innerHeight && b.bottom > 0;
        };
        if (onScreen('#combine') && count('#combine svg rect.hs-bar') !== r.nHead)
          m.push(`${r.nHead} bars in the combine view`);
        if (onScreen('#topk') && count('#topk li') < 1) m.push('the top-k predictions');
        return m;
      },
      { model: MODEL, sentence: SENTENCE },
    );
  // polled each animation frame until nothing is missing; the watchdog bounds it
  for (let m = await missing(); m.length; m = await missing()) {
    step = `waiting for the views to be drawn (missing: ${m.join('; ')})`;
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(resolve)));
  }
  step = 'taking the picture';
  await page.evaluate(() => document.fonts.ready);
  // two painted frames: what was checked is on screen
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  // the page's top: the header, the text and its tokens, the grid of every head and one head up close
  const clip = await page.evaluate(() => {
    const bottom = Math.max(
      ...['.panel-grid', '#detail'].map((s) => document.querySelector(s).getBoundingClientRect().bottom),
    );
    return { x: 0, y: 0, width: document.documentElement.clientWidth, height: Math.ceil(bottom + 16) };
  });
  if (clip.height > VIEWPORT.height)
    throw new Error(
      `the heads' panels end at ${clip.height} px, below the ${VIEWPORT.height} px viewport: raise VIEWPORT.height`,
    );
  const png = await page.screenshot({ clip, animations: 'disabled', caret: 'hide' });
  const drawn = await page.evaluate(() => Number(document.body.dataset.renders));
  await context.close();
  return { png, drawn };
}

let shot;
try {
  shot = await Promise.race([take(), problem]);
  if (problems.length) throw new Error(problems[0]);
} catch (e) {
  clearTimeout(timer);
  await browser.close().catch(() => {});
  await server.close();
  fail(problems[0] ?? e.message.split('\n')[0]);
}
clearTimeout(timer);
await browser.close();
await server.close();

// ---- the picture: checked, then stored -------------------------------------------------------
const image = decodePng(shot.png);
const colours = countColours(image, LIMITS.minColours);
const complaints = [];
if (image.width < LIMITS.minWidth || image.width > LIMITS.maxWidth)
  complaints.push(`width ${image.width} px is outside ${LIMITS.minWidth}-${LIMITS.maxWidth}`);
if (image.height < LIMITS.minHeight || image.height > LIMITS.maxHeight)
  complaints.push(`height ${image.height} px is outside ${LIMITS.minHeight}-${LIMITS.maxHeight}`);
if (colours < LIMITS.minColours) complaints.push(`only ${colours} colours (a blank or unstyled page?)`);
if (shot.png.length > LIMITS.maxBytes)
  complaints.push(`${(shot.png.length / 1024).toFixed(0)} KB, more than ${LIMITS.maxBytes / 1024} KB`);
if (complaints.length) fail(`the picture is wrong: ${complaints.join('; ')}`);
const png = shot.png;
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(`${out}.tmp`, png);
renameSync(`${out}.tmp`, out);
const seconds = ((performance.now() - t0) / 1000).toFixed(1);
console.log(
  `screenshots.mjs: wrote ${rel(out)} (${image.width}x${image.height} px, ${(png.length / 1024).toFixed(0)} KB; the page rendered ${shot.drawn}x) in ${seconds} s`,
);

// ---- PNG, as far as checking this picture needs it ------------------------------------------------
// Chromium writes 8-bit RGB(A) PNGs; decoding them (node's zlib, no dependency) lets the script
// check the pixels. Its compression is already good: a re-encoding with a filter chosen per row and
// deflate level 9 came out 3% larger, so the file is stored as Chromium wrote it.

/** { width, height, channels (3|4), pixels: Buffer of width*height*channels bytes } of an 8-bit RGB/RGBA PNG. */
function decodePng(buf) {
  if (!buf.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]))) fail('the screenshot is not a PNG');
  let width = 0,
    height = 0,
    depth = 0,
    type = 0,
    interlace = 0;
  const idat = [];
  for (let at = 8; at < buf.length;) {
    const len = buf.readUInt32BE(at);
    const kind = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + len);
    if (kind === 'IHDR')
      ({ width, height, depth, type, interlace } = {
        width: data.readUInt32BE(0),
        height: data.readUInt32BE(4),
        depth: data[8],
        type: data[9],
        interlace: data[12],
      });
    if (kind === 'IDAT') idat.push(data);
    at += 12 + len;
  }
  if (depth !== 8 || (type !== 2 && type !== 6) || interlace !== 0)
    fail(
      `the screenshot is a PNG this script cannot read (bit depth ${depth}, colour type ${type}, interlace ${interlace})`,
    );
  const channels = type === 6 ? 4 : 3;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = pixels.subarray(y * stride, (y + 1) * stride);
    const up = y > 0 ? pixels.subarray((y - 1) * stride, y * stride) : Buffer.alloc(stride);
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? row[i - channels] : 0;
      const b = up[i];
      const c = i >= channels ? up[i - channels] : 0;
      const pred =
        filter === 0 ? 0 : filter === 1 ? a : filter === 2 ? b : filter === 3 ? (a + b) >> 1 : paeth(a, b, c);
      row[i] = (line[i] + pred) & 255;
    }
  }
  return { width, height, channels, pixels };
}

function paeth(a, b, c) {
  const p = a + b - c;
  const pa = Math.abs(p - a),
    pb = Math.abs(p - b),
    pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** The number of distinct colours, counting stops at `enough`. */
function countColours({ pixels, channels }, enough) {
  const seen = new Set();
  for (let i = 0; i < pixels.length && seen.size < enough; i += channels)
    seen.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
  return seen.size;
}
