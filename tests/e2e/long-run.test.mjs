// Long runs on the demo page: a random model wide enough (6 layers x 12 heads, width 384, context
// 1024; written by random-model.mjs) that a full text is seconds of work in wasm. The run shows its
// progress in steps of tokens, the page keeps answering meanwhile, Cancel stops it and keeps the
// previous result, and a run to the end gives the same numbers as a run in one go.
import { test as base, expect, shot, wideModelSite, longText } from './fixtures.mjs';

// a server for the wide random model under /long/gpt-wide/ (written once per worker)
const test = base.extend({ longSite: wideModelSite() });
const resultText = (page) => page.evaluate(() => window.headscopeDemo.result?.text);

test('a long run shows its progress, leaves the page responsive, can be cancelled, and completes with the same numbers as one run', async ({
  page,
  longSite,
}) => {
  test.setTimeout(240_000);
  await page.goto(`${longSite.base}index.html?model=${encodeURIComponent('/long/gpt-wide/')}&text=Short.`);
  await expect.poll(() => resultText(page), { timeout: 120_000 }).toBe('Short.');

  // a long text: the run goes in steps and says how far it is
  const text = longText(600); // about 800 tokens: within the context, so the run goes in steps
  await page.fill('#text', text);
  const progress = page.locator('#run-progress');
  await expect(progress).toBeVisible({ timeout: 60_000 });
  await expect(page.locator('#run-progress-text')).toHaveText(/^Running the model: \d+ of \d+ tokens…$/);
  // the page answers while the worker runs: switching the detail view is immediate
  await page.click('#tab-lines');
  expect(await page.getAttribute('#tab-lines', 'aria-selected')).toBe('true');
  expect(await progress.isVisible(), 'still running').toBe(true);
  // Cancel: the progress goes, the previous result stays. Right away: the run takes a few seconds
  // (a screenshot first once let it finish before the click)
  await page.click('#run-cancel');
  await expect(progress).toBeHidden();
  await expect(page.locator('#stats')).toContainText('cancelled');
  expect(await resultText(page)).toBe('Short.');
  await shot(page, 'long-run-cancelled');

  // run to the end (typing one more word starts it again), then compare with a run in one go
  await page.locator('#text').press('End');
  await page.keyboard.type(' end');
  if (await progress.isVisible()) await shot(page, 'long-run-progress'); // a picture only: the rest may be quick now
  await expect.poll(() => resultText(page), { timeout: 120_000 }).toBe(`${text} end`);
  await expect(progress).toBeHidden();
  const same = await page.evaluate(async () => {
    const stepped = window.headscopeDemo.result;
    // the same text in one go, by a fresh instance of the package's API on this page
    const { loadModel } = await import('./headscope.js');
    const fresh = await loadModel('/long/gpt-wide/');
    // the page keeps no full map of a text this long: every head's thumbnail (long-text.js)
    const again = fresh.run(stepped.text, { attention: 'thumbnails' });
    fresh.dispose();
    const eq = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
    const attention = stepped.T === again.T && !stepped.attentionAll && eq(stepped.thumbnails, again.thumbnails);
    return { T: stepped.T, attention, logits: eq(stepped.logitsLast, again.logitsLast) };
  });
  expect(same.T, `T = ${same.T}`).toBeGreaterThan(600);
  expect(same.T, `T = ${same.T}`).toBeLessThanOrEqual(1024);
  expect({ attention: same.attention, logits: same.logits }).toEqual({ attention: true, logits: true });
});

test('after a side run takes the engine cache, the idle worker gives it back to the text on screen: the next keystroke runs in one go', async ({
  page,
  longSite,
}) => {
  test.setTimeout(240_000);
  await page.goto(`${longSite.base}index.html?text=Short.`);
  await expect.poll(() => resultText(page), { timeout: 120_000 }).toBe('Short.');
  const text = longText(600); // about 800 tokens: a run from scratch goes in steps (progress)
  const T = await page.evaluate(async (text) => {
    const { loadModelInWorker } = await import('./headscope-worker.js');
    const m = await loadModelInWorker('/long/gpt-wide/');
    window.restoreTest = { m, shown: await m.run(text, { reuse: await m.run('Short.') }) };
    return window.restoreTest.shown.T;
  }, text);
  expect(T).toBeGreaterThan(600);

  // Control: a keystroke queued right behind a side run (no idle moment between them) finds the
  // side run's tokens in the cache, so it computes the whole text again, in steps.
  const control = await page.evaluate(async (text) => {
    const t = window.restoreTest;
    let steps = 0;
    const side = t.m.run('A side run, as the lab probes a head.');
    const typed = t.m.run(`${text} again`, {
      reuse: t.shown,
      onProgress: () => {
        steps++;
      },
    });
    await side;
    t.shown = await typed;
    return { steps };
  }, text);
  expect(control.steps, 'without a restore the keystroke recomputes in steps').toBeGreaterThan(0);

  // A side run, then quiet: the worker restores the text on screen on its own.
  const taken = await page.evaluate(async () => {
    await window.restoreTest.m.run('Another side run.');
    return window.restoreTest.m.cacheState(); // answered at once: the restore waits 250 ms
  });
  expect(taken.onScreenCached, 'the side run took the cache').toBeLessThan(taken.onScreenTokens);
  await expect
    .poll(
      async () => {
        const s = await page.evaluate(() => window.restoreTest.m.cacheState());
        return s.onScreenTokens > 0 && s.onScreenCached === s.onScreenTokens;
      },
      { timeout: 90_000, intervals: [1_000] },
    )
    .toBe(true);
  const typed = await page.evaluate(async (text) => {
    const t = window.restoreTest;
    let steps = 0;
    const r = await t.m.run(`${text} again more`, {
      reuse: t.shown,
      onProgress: () => {
        steps++;
      },
    });
    // the restored cache gives the numbers of a run in one go
    const { loadModel } = await import('./headscope.js');
    const fresh = await loadModel('/long/gpt-wide/');
    const again = fresh.run(r.text);
    fresh.dispose();
    t.m.dispose();
    const eq = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
    let attention = r.T === again.T;
    for (let l = 0; l < r.nLayer; l++)
      for (let h = 0; h < r.nHead; h++) attention &&= eq(r.attention(l, h), again.attention(l, h));
    return { steps, attention, logits: eq(r.logitsLast, again.logitsLast) };
  }, text);
  expect(typed.steps, 'after the restore the keystroke runs in one go').toBe(0);
  expect({ attention: typed.attention, logits: typed.logits }).toEqual({ attention: true, logits: true });
});
