// Long use: the demo page typing for a minute keeps its memory steady and keeps
// answering. The page's JavaScript heap is read through the Chrome DevTools Protocol after a
// forced garbage collection. (The wasm heap inside the worker is checked over 100,000 runs in
// tests/js/package/heap.test.js.)
import { test, expect, demoReady, demoIdle, renders, shot, openDemo } from './fixtures.mjs';

const SECONDS = Number(process.env.HEADSCOPE_LONGUSE_SECONDS || 60);

async function heapAfterGc(cdp) {
  await cdp.send('HeapProfiler.collectGarbage');
  const { usedSize } = await cdp.send('Runtime.getHeapUsage');
  return usedSize;
}

test(`typing for ${SECONDS} s keeps the page's memory steady`, async ({ page, context, site }) => {
  test.setTimeout((SECONDS + 90) * 1000);
  await openDemo(page, site.url('index.html'));
  const cdp = await context.newCDPSession(page);
  await cdp.send('HeapProfiler.enable');
  await page.locator('#text').click();
  await page.keyboard.press('End');
  // a reader typing: 28 characters at 15 ms a keystroke, then deleting them again
  const typeRound = async () => {
    await page.keyboard.type(' and then the cook served it', { delay: 15 });
    for (let i = 0; i < 28; i++) await page.keyboard.press('Backspace', { delay: 10 });
  };
  for (let i = 0; i < 3; i++) await typeRound(); // warm-up: caches, glyphs, pools reach their size
  await demoIdle(page);
  const rendersBefore = await renders(page);
  const before = await heapAfterGc(cdp);
  const start = Date.now();
  let rounds = 0;
  while (Date.now() - start < SECONDS * 1000) {
    await typeRound();
    rounds++;
  }
  await demoReady(page, rendersBefore);
  await demoIdle(page);
  const afterHeap = await heapAfterGc(cdp);
  const rendersAfter = await renders(page);
  console.log(
    `# ${rounds} rounds (${rounds * 56} keystrokes), ${rendersAfter - rendersBefore} renders; page JS heap ${(before / 1e6).toFixed(2)} -> ${(afterHeap / 1e6).toFixed(2)} MB`,
  );
  expect(rendersAfter - rendersBefore, 'the page kept re-running the model while typing').toBeGreaterThanOrEqual(
    rounds,
  );
  // A leak of even 1 KB per keystroke would add several MB over this run; allow 2 MB for
  // V8's own caches (compiled code, inline caches) settling.
  expect(afterHeap - before, `page JS heap grew by ${((afterHeap - before) / 1e6).toFixed(2)} MB`).toBeLessThan(2e6);
  await expect(page.locator('#text')).toHaveValue('The chef, who trained in Paris, cooked the meal quickly.');
  await shot(page, 'long-use-end');
});
