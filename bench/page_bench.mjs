// Page-level figures in headless Chromium (playwright-core driving /usr/bin/chromium):
//   cold load to first attention (fresh browser context, nothing cached), and keystroke-to-paint while
//   typing, with the model on the page's thread (mode main) and in a Web Worker (mode worker).
// Serves bench/page/ (a minimal page of our own), the npm package's payload (--pkg) and the model.
// Usage: node bench/page_bench.mjs --model DIR --pkg DIR --out FILE [--quick]
import { createServer } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { ROOT, stats } from './lib.mjs';

const args = process.argv.slice(2);
const arg = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
const quick = args.includes('--quick');
const modelDir = path.resolve(arg('--model'));
const pkgDir = path.resolve(arg('--pkg'));
const outFile = arg('--out');
const log = (...a) => console.error('[page]', ...a);

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json',
  '.wasm': 'application/wasm', '.txt': 'text/plain', '.safetensors': 'application/octet-stream' };
const mounts = [['/pkg/', pkgDir], ['/model/', modelDir], ['/', path.join(ROOT, 'bench', 'page')]];
const server = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  let p = decodeURIComponent(url.pathname);
  if (p === '/') p = '/index.html';
  const m = mounts.find(([prefix]) => p.startsWith(prefix));
  const file = path.join(m[1], p.slice(m[0].length));
  if (!file.startsWith(m[1])) { res.writeHead(403).end(); return; }
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream', 'cache-control': 'no-store',
      'content-security-policy': "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'" });
    res.end(body);
  } catch { res.writeHead(404).end(); }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const version = browser.version();

// Prose to type: at this tokenizer's ~4 characters per token, it carries T past 64.
const TEXT = ' quick brown fox jumps over the lazy dog near the river bank, while the old farmer watches from his porch '
  + 'and thinks about the harvest, the weather and the long winter that will come after the autumn rains. '
  + 'In the evening the children return from school and tell him what they have learned about the history of the country, '
  + 'about kings and presidents and the wars they fought.';

async function openPage(mode) {
  const context = await browser.newContext();  // fresh: no HTTP or compiled-code cache
  const page = await context.newPage();
  page.on('pageerror', (e) => log('page error:', e.message));
  await page.goto(`${base}?mode=${mode}&text=The`);
  await page.waitForFunction(() => window.__bench.ready || window.__bench.error, null, { timeout: 120000 });
  const err = await page.evaluate(() => window.__bench.error);
  if (err) throw new Error(err);
  return { context, page };
}

const results = { chromium: version, modes: {} };
for (const mode of ['main', 'worker']) {
  // cold loads
  const cold = [];
  for (let i = 0; i < (quick ? 2 : 3); i++) {
    const { context, page } = await openPage(mode);
    cold.push(await page.evaluate(() => window.__bench.cold));
    await context.close();
  }
  // typing
  const { context, page } = await openPage(mode);
  await page.focus('#text');
  await page.keyboard.press('End');
  const chars = quick ? TEXT.slice(0, 240) : TEXT;
  for (let i = 0; i < chars.length; i++) {
    const n = i + 1;
    await page.keyboard.type(chars[i]);
    await page.waitForFunction((k) => window.__bench.keys.length >= k, n, { timeout: 30000 });
  }
  const keys = await page.evaluate(() => window.__bench.keys);
  await context.close();
  const upTo64 = keys.filter((k) => k.T <= 64);
  const summary = (ks, f) => (ks.length ? stats(ks.map(f)) : null);
  results.modes[mode] = {
    cold_runs: cold,
    cold_to_first_attention_painted: stats(cold.map((c) => c.navigation_to_first_attention_painted_ms)),
    keystrokes: keys.length,
    max_T: Math.max(...keys.map((k) => k.T)),
    keystroke_to_paint_T_le_64: summary(upTo64, (k) => k.to_paint_ms),
    keystroke_to_frame_T_le_64: summary(upTo64, (k) => k.to_frame_ms),
    run_T_le_64: summary(upTo64, (k) => k.run_ms),
    draw_T_le_64: summary(upTo64, (k) => k.draw_ms),
    keystroke_to_paint_T_gt_64: summary(keys.filter((k) => k.T > 64), (k) => k.to_paint_ms),
    keys,
  };
  const r = results.modes[mode];
  log(`${mode}: cold load to first attention ${r.cold_to_first_attention_painted.median_ms.toFixed(0)} ms (median of ${cold.length}); `
    + `keystroke-to-paint T<=64 median ${r.keystroke_to_paint_T_le_64.median_ms.toFixed(1)} p95 ${r.keystroke_to_paint_T_le_64.p95_ms.toFixed(1)} ms `
    + `(run ${r.run_T_le_64.median_ms.toFixed(1)}, draw ${r.draw_T_le_64.median_ms.toFixed(1)}), ${keys.length} keys, T up to ${r.max_T}`);
}
await browser.close();
server.close();
await writeFile(outFile, JSON.stringify(results, null, 1));
log('wrote', outFile);
