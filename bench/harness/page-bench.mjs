// Page-level figures in headless Chromium (playwright-core driving /usr/bin/chromium):
//   cold load to first attention (fresh browser context, nothing cached), and keystroke-to-paint while
//   typing, with the model on the page's thread (mode main) and in a Web Worker (mode worker).
// Serves bench/harness/page/ (a minimal page of our own), the npm package's payload (--pkg) and the model.
// Usage: node bench/harness/page-bench.mjs --model DIR --pkg DIR --out FILE [--quick] [--demo SITE]
//   PAGE_BENCH_DEMO_ONLY=1: only the demo page (skips the minimal page's main and worker modes)
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { launchChromium } from '../../scripts/common/chromium.mjs';
import { benchArgs, machineInfo, ROOT, stats } from './lib.mjs';
import { DEMO_PROBE } from './demo-probe.mjs';
import { startStaticServer } from '../../web/server/static-server.mjs';

const opt = benchArgs(
  { required: ['model', 'pkg', 'out'], strings: ['demo'], flags: ['quick'] },
  'node bench/harness/page-bench.mjs --model DIR --pkg DIR --out FILE [--quick] [--demo SITE]',
);
const quick = opt.quick;
const modelDir = path.resolve(opt.model);
const pkgDir = path.resolve(opt.pkg);
const outFile = opt.out;
const demoDir = opt.demo ? path.resolve(opt.demo) : null; // the built demo site (web/demo/build.sh), if any
const log = (...a) => console.error('[page]', ...a);
// an uncaught exception on a measured page fails the bench (after the run, with every message)
const pageErrors = [];
const onPageError = (where) => (e) => {
  log(`${where} error:`, e.message);
  pageErrors.push(`${where}: ${e.message}`);
};

const server = await startStaticServer({
  root: path.join(ROOT, 'bench', 'harness', 'page'),
  mounts: [['/pkg/', pkgDir], ['/model/', modelDir], ...(demoDir ? [['/demo/', demoDir]] : [])],
  csp: "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'",
});
const base = server.url;

const browser = await launchChromium();
const version = browser.version();

// Prose to type: at this tokenizer's ~4 characters per token, it carries T past 64.
const TEXT =
  ' quick brown fox jumps over the lazy dog near the river bank, while the old farmer watches from his porch ' +
  'and thinks about the harvest, the weather and the long winter that will come after the autumn rains. ' +
  'In the evening the children return from school and tell him what they have learned about the history of the country, ' +
  'about kings and presidents and the wars they fought.';

// the quick run types only the start of it: enough for every figure at T <= 64 but one from each
// phase, not for the T > 64 rows
const QUICK_CHARS = 120;

async function openPage(mode) {
  const context = await browser.newContext(); // fresh: no HTTP or compiled-code cache
  const page = await context.newPage();
  page.on('pageerror', onPageError(`bench/harness/page (${mode})`));
  await page.goto(`${base}?mode=${mode}&text=The`);
  await page.waitForFunction(() => window.__bench.ready || window.__bench.error, null, { timeout: 120000 });
  const err = await page.evaluate(() => window.__bench.error);
  if (err) throw new Error(err);
  return { context, page };
}

const results = { chromium: version, machine: machineInfo(), modes: {} };
for (const mode of process.env.PAGE_BENCH_DEMO_ONLY ? [] : ['main', 'worker']) {
  // cold loads
  const cold = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    const { context, page } = await openPage(mode);
    cold.push(await page.evaluate(() => window.__bench.cold));
    await context.close();
  }
  // typing
  const { context, page } = await openPage(mode);
  await page.focus('#text');
  await page.keyboard.press('End');
  const chars = quick ? TEXT.slice(0, QUICK_CHARS) : TEXT;
  for (let i = 0; i < chars.length; i++) {
    const n = i + 1;
    await page.keyboard.type(chars[i]);
    await page.waitForFunction((k) => window.__bench.keys.length >= k, n, { timeout: 30000 });
  }
  const keys = await page.evaluate(() => window.__bench.keys);
  // the build the package chose in Chromium: the relaxed-SIMD one, which a reader's Chromium loads
  const simd = await page.evaluate(() => window.__benchModel.info.simd);
  if (!simd?.relaxedMadd)
    throw new Error(
      `bench/harness/page (${mode}) runs ${JSON.stringify(simd)}, not the relaxed-SIMD build Chromium validates`,
    );
  let inWorker = null,
    onPage = null;
  if (mode === 'main') {
    // the same incremental run timed inside a worker and on the page, no messaging in the timed part
    const t =
      'The quick brown fox jumps over the lazy dog near the river bank, while the old farmer watches from his porch and thinks about';
    inWorker = stats(await page.evaluate(([x, n]) => window.__runInWorker(x, n), [t, quick ? 30 : 80]));
    onPage = stats(await page.evaluate(([x, n]) => window.__runHere(x, n), [t, quick ? 30 : 80]));
    log(
      `incremental run inside a worker: median ${inWorker.median_ms.toFixed(2)} ms; on the page: ${onPage.median_ms.toFixed(2)} ms`,
    );
  }
  const ping = mode === 'worker' ? await page.evaluate((n) => window.__pingWorker(n), quick ? 40 : 100) : null;
  // the same empty round trip, sent from an input handler right after a keystroke
  let pingAfterKey = null;
  if (mode === 'worker') {
    await page.evaluate(() => {
      const w = new Worker('./ping-worker.js');
      window.__rtt = [];
      const box = document.createElement('input');
      box.id = 'pingbox';
      document.body.appendChild(box);
      box.addEventListener('input', () => {
        const t0 = performance.now();
        w.onmessage = () => window.__rtt.push(performance.now() - t0);
        w.postMessage(0);
      });
    });
    await page.focus('#pingbox');
    const n = quick ? 30 : 60;
    for (let i = 0; i < n; i++) {
      await page.keyboard.type('a');
      await page.waitForFunction((k) => window.__rtt.length >= k, i + 1);
    }
    pingAfterKey = stats(await page.evaluate(() => window.__rtt));
    log(
      `empty round trip sent right after a keystroke: median ${pingAfterKey.median_ms.toFixed(2)} ms, p95 ${pingAfterKey.p95_ms.toFixed(2)} ms`,
    );
  }
  await context.close();
  const upTo64 = keys.filter((k) => k.T <= 64);
  const summary = (ks, f) => (ks.length ? stats(ks.map(f)) : null);
  results.modes[mode] = {
    simd,
    cold_runs: cold,
    cold_to_first_attention_painted: stats(cold.map((c) => c.navigation_to_first_attention_painted_ms)),
    keystrokes: keys.length,
    max_T: Math.max(...keys.map((k) => k.T)),
    keystroke_to_paint_T_le_64: summary(upTo64, (k) => k.to_paint_ms),
    keystroke_to_frame_T_le_64: summary(upTo64, (k) => k.to_frame_ms),
    run_T_le_64: summary(upTo64, (k) => k.run_ms),
    work_T_le_64: summary(upTo64, (k) => k.work_ms),
    next_frame_fraction_T_le_64: upTo64.filter((k) => k.frames <= 1).length / Math.max(1, upTo64.length),
    frames_late_T_le_64: summary(upTo64, (k) => k.frames),
    draw_T_le_64: summary(upTo64, (k) => k.draw_ms),
    keystroke_to_paint_T_gt_64: summary(
      keys.filter((k) => k.T > 64),
      (k) => k.to_paint_ms,
    ),
    worker_round_trip: ping && stats(ping),
    worker_round_trip_after_keystroke: pingAfterKey,
    incremental_run_inside_worker: inWorker,
    incremental_run_on_page: onPage,
    keys,
  };
  const r = results.modes[mode];
  if (ping)
    log(
      `empty message round trip page -> worker -> page: median ${r.worker_round_trip.median_ms.toFixed(2)} ms, p95 ${r.worker_round_trip.p95_ms.toFixed(2)} ms`,
    );
  log(
    `${mode}: cold load to first attention ${r.cold_to_first_attention_painted.median_ms.toFixed(0)} ms (median of ${cold.length}); ` +
      `keystroke-to-paint T<=64 median ${r.keystroke_to_paint_T_le_64.median_ms.toFixed(1)} p95 ${r.keystroke_to_paint_T_le_64.p95_ms.toFixed(1)} ms ` +
      `(work ${r.work_T_le_64.median_ms.toFixed(1)}/${r.work_T_le_64.p95_ms.toFixed(1)}, in the next frame ${(100 * r.next_frame_fraction_T_le_64).toFixed(0)}%; run ${r.run_T_le_64.median_ms.toFixed(1)}, draw ${r.draw_T_le_64.median_ms.toFixed(1)}), ${keys.length} keys, T up to ${r.max_T}`,
  );
}
// ---- the project's demo page (web/demo, model in a Web Worker), measured from outside -------------
if (demoDir) {
  const cold = [];
  let keys = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.addInitScript(DEMO_PROBE);
    page.on('pageerror', onPageError('web/demo'));
    await page.goto(`${base}demo/index.html?model=${encodeURIComponent('/model/')}&text=The`);
    await page.waitForFunction(() => window.__demoBench && window.__demoBench.firstRender, null, { timeout: 120000 });
    cold.push(await page.evaluate(() => window.__demoBench.firstRender.painted));
    if (i === 0) {
      await page.focus('#text');
      await page.keyboard.press('End');
      const chars = quick ? TEXT.slice(0, QUICK_CHARS) : TEXT;
      for (let k = 0; k < chars.length; k++) {
        await page.keyboard.type(chars[k]);
        await page.waitForFunction((n) => window.__demoBench.keys.length >= n, k + 1, { timeout: 30000 });
      }
      keys = await page.evaluate(() => window.__demoBench.keys);
    }
    await context.close();
  }
  // what bench/harness/demo-probe.mjs reads from the demo (its run time in #stats, headscopeDemo.renderMs and
  // result.ranOnPage): if the demo stops publishing one, its rows would silently go empty
  for (const [field, what] of [
    ['run_ms', '"ran in N ms" in #stats'],
    ['render_ms', 'window.headscopeDemo.renderMs'],
    ['on_page', 'window.headscopeDemo.result.ranOnPage'],
  ])
    if (!keys.some((k) => k[field] !== null && k[field] !== undefined))
      throw new Error(`web/demo no longer publishes ${what} (bench/harness/demo-probe.mjs reads it)`);
  const upTo64 = keys.filter((k) => k.T <= 64);
  results.demo = {
    page: 'web/demo (built by web/demo/build.sh), model in a Web Worker, short typing updates on the page thread',
    cold_runs_ms: cold,
    cold_to_first_attention_painted: stats(cold),
    keystrokes: keys.length,
    max_T: keys.length ? Math.max(...keys.map((k) => k.T)) : 0,
    keystroke_to_paint_T_le_64: upTo64.length ? stats(upTo64.map((k) => k.to_paint_ms)) : null,
    keystroke_to_render_T_le_64: upTo64.length ? stats(upTo64.map((k) => k.to_render_ms)) : null,
    run_T_le_64: upTo64.some((k) => k.run_ms !== null)
      ? stats(upTo64.filter((k) => k.run_ms !== null).map((k) => k.run_ms))
      : null,
    render_T_le_64: upTo64.some((k) => k.render_ms != null)
      ? stats(upTo64.filter((k) => k.render_ms != null).map((k) => k.render_ms))
      : null,
    next_frame_fraction_T_le_64: upTo64.filter((k) => k.frames <= 1).length / Math.max(1, upTo64.length),
    page_thread_fraction_T_le_64: upTo64.filter((k) => k.on_page).length / Math.max(1, upTo64.length),
    keystroke_to_paint_T_gt_64: keys.some((k) => k.T > 64)
      ? stats(keys.filter((k) => k.T > 64).map((k) => k.to_paint_ms))
      : null,
    keys,
  };
  const d = results.demo;
  log(
    `demo: cold load to first attention ${d.cold_to_first_attention_painted.median_ms.toFixed(0)} ms; keystroke-to-paint T<=64 ` +
      (d.keystroke_to_paint_T_le_64
        ? `median ${d.keystroke_to_paint_T_le_64.median_ms.toFixed(1)} p95 ${d.keystroke_to_paint_T_le_64.p95_ms.toFixed(1)} ms, next frame ${(100 * d.next_frame_fraction_T_le_64).toFixed(0)}%, on the page thread ${(100 * d.page_thread_fraction_T_le_64).toFixed(0)}%`
        : 'no data'),
  );
}
await browser.close();
await server.close();
if (pageErrors.length) throw new Error(`uncaught exceptions on the measured pages:\n${pageErrors.join('\n')}`);
await writeFile(outFile, JSON.stringify(results, null, 1));
log('wrote', outFile);
