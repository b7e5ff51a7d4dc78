// The threaded engine in the demo: served cross-origin isolated (COOP + COEP, as `npm start` and
// scripts/run.sh serve it), the page's model runs on min(cores, 8) threads in its Web Worker and says
// so in its info line.
// - Between thread counts of the threaded build, results are compared bit for bit (tolerance 0): the
//   engine splits work by outputs only, so every number is computed by the same instructions in the
//   same order on any number of threads (1 thread of that build: tests/cpp/kernels/test_threads.cpp, run in
//   the wasm-threads suite).
// - ?threads=1 loads the single-threaded build, which in Chromium is the relaxed-SIMD one, and so is
//   the threaded build there (headscope_wasm_threads_relaxed): the same kernels' instructions in the
//   same order, so the page on 2 threads and on 1 show the same bits (tolerance 0). A browser without
//   relaxed SIMD runs both SIMD128 builds, equal the same way.
import { test as base, expect, startServer, withModel, demoReady, demoIdle, shot, openDemo } from './fixtures.mjs';
import { ISOLATION_HEADERS } from '../../web/server/static-server.mjs';

const test = base.extend({
  isolatedSite: [
    async ({}, use) => {
      const server = await startServer({ headers: ISOLATION_HEADERS });
      await use({ ...server, url: (p) => withModel(server.base + p) });
      await server.close();
    },
    { scope: 'worker' },
  ],
});

// A text long enough that every product of the model is split over the threads (the engine runs a
// product inline below about a million multiply-adds).
const LONG = Array.from(
  { length: 30 },
  (_, i) => `The chef, who trained in Paris, cooked meal number ${i} quickly.`,
).join(' ');

/** The page's result on screen: every attention weight and the last position's logits. */
const shown = (page) =>
  page.evaluate(() => {
    const r = window.headscopeDemo.result;
    return { T: r.T, attention: Array.from(r.attentionAll), logits: Array.from(r.logitsLast) };
  });

/** The same text through the package's Worker API on this page, at `threads` threads. */
const apiRun = (page, threads, text) =>
  page.evaluate(
    async ({ threads, text }) => {
      const { loadModelInWorker } = await import(new URL('headscope-worker.js', location.href).href);
      const source = new URLSearchParams(location.search).get('model');
      const model = await loadModelInWorker(source ? new URL(source, location.href).href : undefined, { threads });
      try {
        const r = await model.run(text);
        return {
          threads: model.threads,
          T: r.T,
          attention: Array.from(r.attentionAll),
          logits: Array.from(r.logitsLast),
        };
      } finally {
        model.dispose();
      }
    },
    { threads, text },
  );

test("the isolated demo runs on 2 threads and shows what ?threads=1 shows, within the builds' rounding", async ({
  page,
  isolatedSite,
}) => {
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  expect(cores, 'this test needs more than one core').toBeGreaterThan(1);
  const expected = Math.min(cores, 8);
  await page.goto(isolatedSite.url('index.html'));
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
  await demoReady(page);
  await expect(page.locator('#model-info')).toContainText(`in a Web Worker, ${expected} threads`);
  await demoIdle(page);
  const threaded = await shown(page);
  // Chromium validates relaxed SIMD: the threaded build with its multiply-add
  expect(await page.evaluate(() => window.headscopeDemo.model.info.simd.relaxedMadd)).toBe(true);
  await shot(page, 'threads-demo');

  await page.goto(isolatedSite.url('index.html?threads=1'));
  await demoReady(page);
  await expect(page.locator('#model-info')).toContainText('in a Web Worker, 1 thread');
  await demoIdle(page);
  const single = await shown(page);
  expect(await page.evaluate(() => window.headscopeDemo.model.info.simd.relaxedMadd)).toBe(true);
  expect(single.T).toBe(threaded.T);
  const differing = (a, b) => a.reduce((n, x, i) => n + (Object.is(x, b[i]) ? 0 : 1), 0);
  expect(single.attention.length).toBe(threaded.attention.length);
  expect(differing(threaded.attention, single.attention), 'attention weights differing, 2 threads vs 1').toBe(0);
  expect(differing(threaded.logits, single.logits), 'logits differing, 2 threads vs 1').toBe(0);
});

test('a long text through the Worker API: 2 and 3 threads give the same bits', async ({ page, isolatedSite }) => {
  await page.goto(isolatedSite.url('index.html'));
  await demoReady(page);
  const two = await apiRun(page, 2, LONG);
  expect(two.threads).toBe(2);
  expect(two.T, 'the text fills the context: every product is split').toBeGreaterThanOrEqual(100);
  for (const threads of [3]) {
    const r = await apiRun(page, threads, LONG);
    expect(r.threads, 'the worker runs the threads asked for').toBe(threads);
    expect(r.attention, `attention, ${threads} threads vs 2`).toEqual(two.attention);
    expect(r.logits, `logits, ${threads} threads vs 2`).toEqual(two.logits);
  }
});

test('bad ?threads values are named on the page', async ({ page, isolatedSite }) => {
  for (const bad of ['0', '65', 'two']) {
    await page.goto(isolatedSite.url(`index.html?threads=${bad}`));
    await expect(page.locator('#loading-text')).toContainText(
      `threads must be a whole number from 1 to 64, got ${bad === 'two' ? '"two"' : bad}`,
    );
  }
});

test('without isolation the demo runs single-threaded and says why once', async ({ page, site }) => {
  const infos = [];
  page.on('console', (msg) => {
    if (msg.type() === 'info') infos.push(msg.text());
  });
  await openDemo(page, site.url('index.html'));
  await expect(page.locator('#model-info')).toContainText('in a Web Worker, 1 thread');
  expect(
    infos.filter((m) => m.startsWith('headscope: single-threaded engine: the page is not cross-origin isolated')),
  ).toHaveLength(1);
});
