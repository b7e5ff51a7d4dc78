// Long use: the demo page typing for a minute keeps its memory steady and keeps
// answering. The page's JavaScript heap is read through the Chrome DevTools Protocol after a
// forced garbage collection. (The wasm heap inside the worker is checked over 100,000 runs in
// tests/js/heap.test.js.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, openPage, withModel, demoReady, shot } from './helpers.mjs';

const SECONDS = Number(process.env.HEADSCOPE_LONGUSE_SECONDS || 60);
let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

async function heapAfterGc(cdp) {
  await cdp.send('HeapProfiler.collectGarbage');
  const { usedSize } = await cdp.send('Runtime.getHeapUsage');
  return usedSize;
}

test(`typing for ${SECONDS} s keeps the page's memory steady`, { timeout: (SECONDS + 90) * 1000 }, async () => {
  const { page, problems } = await openPage(browser, withModel(server.base + 'index.html'));
  await demoReady(page);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('HeapProfiler.enable');
  const box = page.locator('#text');
  await box.click();
  await page.keyboard.press('End');
  const typeRound = async () => {
    await page.keyboard.type(' and then the cook served it', { delay: 15 });
    for (let i = 0; i < 28; i++) await page.keyboard.press('Backspace', { delay: 10 });
  };
  for (let i = 0; i < 3; i++) await typeRound(); // warm-up: caches, glyphs, pools reach their size
  const rendersBefore = Number(await page.evaluate(() => document.body.dataset.renders));
  const before = await heapAfterGc(cdp);
  const start = Date.now();
  let rounds = 0;
  while (Date.now() - start < SECONDS * 1000) {
    await typeRound();
    rounds++;
  }
  await demoReady(page, rendersBefore);
  const afterHeap = await heapAfterGc(cdp);
  const rendersAfter = Number(await page.evaluate(() => document.body.dataset.renders));
  console.log(`# ${rounds} rounds (${rounds * 56} keystrokes), ${rendersAfter - rendersBefore} renders; page JS heap ${(before / 1e6).toFixed(2)} -> ${(afterHeap / 1e6).toFixed(2)} MB`);
  assert.ok(rendersAfter - rendersBefore >= rounds, 'the page kept re-running the model while typing');
  // A leak of even 1 KB per keystroke would add several MB over this run; allow 2 MB for
  // V8's own caches (compiled code, inline caches) settling.
  assert.ok(afterHeap - before < 2e6, `page JS heap grew by ${((afterHeap - before) / 1e6).toFixed(2)} MB`);
  assert.equal(await page.inputValue('#text'), 'The chef, who trained in Paris, cooked the meal quickly.');
  await shot(page, 'long-use-end');
  assert.deepEqual(problems, []);
});
