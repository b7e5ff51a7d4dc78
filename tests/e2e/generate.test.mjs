// "Let the model write" on the demo page: Continue writes the tokens the API
// writes with the same settings, every view follows each token, the strip marks the written tokens,
// the next-token panel shows the distribution the last token was drawn from; Stop and editing stop it
// and leave a page whose state equals a fresh run; all of it with the keyboard. Screenshots
// generate-*.png in build/e2e-artifacts/.
import path from 'node:path';
import { test, expect, shot, demoIdle, ARTIFACTS, openDemo } from './fixtures.mjs';

const PROMPT = 'The chef, who trained in Paris, cooked';

/** Sets the writing controls (values as the reader types them). */
async function settings(page, { tokens, temperature, topK, topP, seed }) {
  for (const [id, v] of [
    ['write-tokens', tokens],
    ['write-temperature', temperature],
    ['write-topk', topK],
    ['write-topp', topP],
    ['write-seed', seed],
  ])
    if (v !== undefined) await page.fill(`#${id}`, String(v));
}

async function openPrompt(page, site, text = PROMPT) {
  await openDemo(page, site.url(`index.html?text=${encodeURIComponent(text)}`));
  await demoIdle(page);
}

const writing = (page) => page.locator('body').getAttribute('data-writing');
const writtenCount = (page) => page.locator('#tokens .token-written').count();

/**
 * The API's continuation with the same settings: generate() on a model of its own, loaded in this
 * browser through the package's Worker API (the same engine build as the page's), and the fresh
 * run's numbers of `runText` (the page's text at the end) on that model.
 */
function apiInPage(page, prompt, options, runText = null) {
  return page.evaluate(
    async ({ prompt, options, runText }) => {
      const { loadModelInWorker } = await import(new URL('headscope-worker.js', location.href).href);
      const source = new URLSearchParams(location.search).get('model') ?? undefined;
      const model = await loadModelInWorker(source ? new URL(source, location.href).href : undefined);
      try {
        const value = await model.generate(prompt, options);
        let run = null;
        if (runText !== null) {
          const r = await model.run(runText);
          run = {
            ids: r.tokens.map((t) => t.id),
            attention: Array.from(r.attention(r.nLayer - 1, r.nHead - 1)),
            logits: Array.from(r.logitsLast),
          };
        }
        return { ids: value.ids, generatedIds: value.generatedIds, text: value.text, run };
      } finally {
        model.dispose();
      }
    },
    { prompt, options, runText },
  );
}

/** The page's result on screen, as apiInPage reads a fresh run. */
const shownRun = (page) =>
  page.evaluate(() => {
    const r = window.headscopeDemo.result;
    return {
      ids: r.tokens.map((t) => t.id),
      attention: Array.from(r.attention(r.nLayer - 1, r.nHead - 1)),
      logits: Array.from(r.logitsLast),
      text: r.text,
      T: r.T,
      rowsFrom: r.rowsFrom,
    };
  });

test("Continue writes the API's tokens, every view follows each one, the strip marks them and the panel shows the draw", async ({
  page,
  site,
}) => {
  // every panel on screen at once: panels off screen are drawn only when they come into view
  await page.setViewportSize({ width: 1280, height: 3200 });
  await openPrompt(page, site);
  const s = { tokens: 12, temperature: 0.8, topK: 40, topP: 0.95, seed: 4 };
  await settings(page, s);
  const promptIds = await page.evaluate(() => window.headscopeDemo.result.tokens.map((t) => t.id));
  const rendersBefore = Number(await page.locator('body').getAttribute('data-renders'));
  // record each token as the page shows it: the text box, the strip's length and its rows
  await page.evaluate(() => {
    window.__seen = [];
    const box = document.getElementById('text');
    const watch = () => {
      const r = window.headscopeDemo.result;
      const last = window.__seen.at(-1);
      if (r && (!last || last.T !== r.T))
        window.__seen.push({
          T: r.T,
          rowsFrom: r.rowsFrom,
          text: box.value,
          resultText: r.text,
          strip: document.querySelectorAll('#tokens .token').length,
        });
      if (document.body.dataset.writing !== 'false' || !last) requestAnimationFrame(watch);
    };
    requestAnimationFrame(watch);
  });
  await page.click('#write-continue');
  await expect(page.locator('#write-status')).toHaveText('Wrote 12 tokens (marked in the token strip).', {
    timeout: 60_000,
  });
  expect(await writing(page)).toBe('false');
  const want = await apiInPage(page, PROMPT, { maxTokens: 12, temperature: 0.8, topK: 40, topP: 0.95, seed: 4 });
  const shown = await shownRun(page);
  expect(shown.ids, "the written ids are the API's").toEqual(want.ids);
  expect(shown.ids.slice(0, promptIds.length)).toEqual(promptIds);
  await expect(page.locator('#text')).toHaveValue(want.text);
  expect(shown.text).toBe(want.text);
  // each token went on screen with its own result: one new attention row per head (row updates)
  const seen = await page.evaluate(() => window.__seen);
  const steps = seen.filter((x) => x.T > promptIds.length);
  expect(steps.length, 'tokens painted one by one').toBeGreaterThanOrEqual(6);
  for (const x of steps) {
    // the first token may find the blocks of the result on screen full (then it copies them whole, wider)
    if (x.T > promptIds.length + 1) expect(x.rowsFrom, `token ${x.T}: only its row moved`).toBe(x.T - 1);
    expect(x.text, 'the text box follows each token').toBe(x.resultText);
    expect(x.strip, 'the strip follows each token').toBe(x.T);
  }
  expect(Number(await page.locator('body').getAttribute('data-renders')) - rendersBefore).toBeGreaterThanOrEqual(12);
  // the strip marks exactly the written tokens, in words too
  const tokens = page.locator('#tokens .token');
  await expect(tokens).toHaveCount(want.ids.length);
  expect(await writtenCount(page)).toBe(12);
  for (let i = 0; i < want.ids.length; i++) {
    const written = i >= promptIds.length;
    await expect(tokens.nth(i)).toHaveClass(written ? /token-written/ : /^token$/);
    if (written) await expect(tokens.nth(i)).toHaveAttribute('aria-label', /written by the model/);
  }
  // the next-token panel: the distribution the last token was drawn from, that token marked
  const lastId = want.generatedIds.at(-1);
  const drawn = page.locator('#topk .hs-topk-drawn');
  await expect(drawn).toHaveCount(1);
  await expect(drawn.locator('.hs-topk-mark')).toHaveText(/^drawn/);
  const lastText = await page.evaluate((id) => window.headscopeDemo.result.tokens.at(-1).text, lastId);
  await expect(page.locator('#next-drawn')).toBeVisible();
  await expect(page.locator('#next-drawn')).toContainText('temperature 0.8, top-k 40, top-p 0.95');
  const named = lastText.trim() ? `'${lastText.replace(/\s+/g, ' ').trim()}'` : /a space|a line break/;
  await expect(page.locator('#next-drawn')).toContainText(named);
  // top-k 40: at most 40 tokens could be drawn; at most 10 shown, plus the drawn one if beyond them
  const kept = Number(/\((\d+) tokens? could be drawn\)/.exec(await page.locator('#next-drawn').textContent())[1]);
  expect(kept).toBeLessThanOrEqual(40);
  expect(await page.locator('#topk li').count()).toBeLessThanOrEqual(11);
  await shot(page, 'generate-written', { fullPage: true });
  await page.locator('.panel-input').screenshot({ path: path.join(ARTIFACTS, 'generate-strip.png') });
  await page.locator('.panel-next').screenshot({ path: path.join(ARTIFACTS, 'generate-next.png') });
  await page.click('#theme-toggle');
  await page.locator('.panel-next').screenshot({ path: path.join(ARTIFACTS, 'generate-next-dark.png') });
  await page.locator('.panel-input').screenshot({ path: path.join(ARTIFACTS, 'generate-strip-dark.png') });
  await page.click('#theme-toggle');
  // typing at the end: a normal run again (its predictions, no draw), the written marks stay
  await page.locator('#text').press('End');
  await page.locator('#text').pressSequentially(' and');
  await demoIdle(page);
  await expect(page.locator('#next-drawn')).toBeHidden();
  await expect(page.locator('#topk .hs-topk-drawn')).toHaveCount(0);
  expect(await writtenCount(page)).toBeGreaterThanOrEqual(11);
});

test('Stop stops the writing before the next token; the page then equals a fresh run of its text', async ({
  page,
  site,
}) => {
  await openPrompt(page, site);
  await settings(page, { tokens: 1000, temperature: 1, topK: 0, topP: 1, seed: 2 });
  await page.click('#write-continue');
  await expect(page.locator('#write-stop')).toBeEnabled();
  await expect.poll(() => writtenCount(page), { timeout: 60_000 }).toBeGreaterThanOrEqual(5);
  await shot(page, 'generate-writing');
  await page.click('#write-stop');
  await expect(page.locator('#write-status')).toHaveText(/^Stopped after \d+ tokens\.$/);
  expect(await writing(page)).toBe('false');
  await expect(page.locator('#write-continue')).toBeEnabled();
  await expect(page.locator('#write-stop')).toBeDisabled();
  const n = Number(/after (\d+) token/.exec(await page.locator('#write-status').textContent())[1]);
  expect(n).toBeGreaterThanOrEqual(5);
  expect(n).toBeLessThan(1000);
  // nothing moves after Stop: the text, the strip and the result stay
  // (the status is set once generate() resolved: no token can arrive after it)
  const text = await page.locator('#text').inputValue();
  await demoIdle(page);
  await expect(page.locator('#text')).toHaveValue(text);
  const shown = await shownRun(page);
  expect(shown.text).toBe(text);
  // the tokens are the API's first n with the same seed (the context is longer than what was written)
  const want = await apiInPage(page, PROMPT, { maxTokens: n, temperature: 1, seed: 2 }, text);
  expect(want.text).toBe(text);
  expect(shown.ids).toEqual(want.ids.slice(-shown.T));
  // and the numbers on screen are a fresh run's of the same ids (when the text tokenizes back to them)
  if (want.run.ids.join() === shown.ids.join()) {
    expect(shown.attention).toEqual(want.run.attention);
    expect(shown.logits).toEqual(want.run.logits);
  }
  // Continue again goes on from there
  await settings(page, { tokens: 3 });
  await page.click('#write-continue');
  await expect(page.locator('#write-status')).toHaveText('Wrote 3 tokens (marked in the token strip).', {
    timeout: 60_000,
  });
  expect((await page.locator('#text').inputValue()).startsWith(text)).toBe(true);
});

test('editing the text while the model writes stops it and leaves a consistent page', async ({ page, site }) => {
  await openPrompt(page, site);
  await settings(page, { tokens: 1000, temperature: 0.9, topK: 20, seed: 5 });
  await page.click('#write-continue');
  await expect.poll(() => writtenCount(page), { timeout: 60_000 }).toBeGreaterThanOrEqual(4);
  // the reader types at the start of the text while tokens arrive at its end
  await page.locator('#text').focus();
  await page.locator('#text').press('Control+Home');
  await page.locator('#text').pressSequentially('Yes. ');
  await expect(page.locator('#write-status')).toHaveText(
    /^Stopped after \d+ tokens? when the text or the heads changed\.$/,
  );
  expect(await writing(page)).toBe('false');
  await demoIdle(page);
  const text = await page.locator('#text').inputValue();
  expect(text.startsWith('Yes. The chef')).toBe(true);
  // the typed letters landed where the reader typed them: the caret stayed
  expect(await page.locator('#text').evaluate((t) => t.selectionStart)).toBe(5);
  // the result on screen is the edited text's, equal to a fresh run of it
  const shown = await shownRun(page);
  expect(shown.text).toBe(text);
  const fresh = await apiInPage(page, 'x', { maxTokens: 1 }, text);
  expect(shown.ids).toEqual(fresh.run.ids);
  expect(shown.attention).toEqual(fresh.run.attention);
  expect(shown.logits).toEqual(fresh.run.logits);
  // the written part moved with the edit: its tokens are still marked, the typed ones are not
  expect(await writtenCount(page)).toBeGreaterThanOrEqual(3);
  await expect(page.locator('#tokens .token').first()).not.toHaveClass(/token-written/);
  expect(
    await page
      .locator('#tokens .token-written')
      .evaluateAll((all, from) => all.every((b) => Number(b.dataset.index) >= from), 5),
  ).toBe(true);
  await shot(page, 'generate-edited');
});

test('by weight × value size: each written token brings its value sizes; the mode picked while writing takes effect when it ends', async ({
  page,
  site,
}) => {
  await openDemo(page, site.url(`index.html?by=value&text=${encodeURIComponent(PROMPT)}`));
  await demoIdle(page);
  await settings(page, { tokens: 3, temperature: 0 });
  await page.click('#write-continue');
  await expect(page.locator('#write-status')).toHaveText('Wrote 3 tokens (marked in the token strip).', {
    timeout: 60_000,
  });
  // the last token's result carries every head's value sizes, a fresh run's, and the grid shows them
  const sizes = () =>
    page.evaluate(async () => {
      const d = window.headscopeDemo;
      const r = d.result;
      const fresh = await d.model.run(r.text, { valueNorms: true });
      return {
        shown: r.valueNorms ? Array.from(r.valueNorms) : null,
        fresh: Array.from(fresh.valueNorms),
        sameIds: fresh.tokens.map((t) => t.id).join() === r.tokens.map((t) => t.id).join(),
      };
    });
  const written = await sizes();
  expect(written.shown, 'the written result has value sizes').not.toBeNull();
  if (written.sameIds) expect(written.shown).toEqual(written.fresh);
  await expect(page.locator('#grid .hs-grid')).toHaveAttribute('data-weighting', 'value');

  // by weight, writing; value picked meanwhile: the writing goes on, and its end brings the sizes
  await page.selectOption('#by-select', 'weight');
  await settings(page, { tokens: 1000, temperature: 1, seed: 3 });
  await page.click('#write-continue');
  await expect.poll(() => writtenCount(page), { timeout: 60_000 }).toBeGreaterThanOrEqual(6);
  await page.selectOption('#by-select', 'value');
  await expect(page.locator('#by-explain')).toHaveText('Reading the value sizes…');
  const before = await writtenCount(page);
  await expect.poll(() => writtenCount(page), { message: 'the writing goes on' }).toBeGreaterThan(before);
  expect(await writing(page)).toBe('true');
  await page.click('#write-stop');
  await expect(page.locator('#write-status')).toHaveText(/^Stopped after \d+ tokens\.$/);
  await expect(page.locator('#grid .hs-grid')).toHaveAttribute('data-weighting', 'value');
  await expect(page.locator('#by-explain')).toHaveText(/^Weight × value size: /);
  await demoIdle(page);
  const after = await sizes();
  expect(after.shown).not.toBeNull();
  expect(after.shown).toEqual(after.fresh); // the run after the writing is a run of the text itself
});

test('the writing controls work with the keyboard alone', async ({ page, site }) => {
  await openPrompt(page, site);
  const focused = () => page.evaluate(() => document.activeElement?.id);
  // from the text box, Tab reaches the settings (past the token buttons), then Continue
  await page.locator('#text').focus();
  for (let i = 0; i < 200 && (await focused()) !== 'write-tokens'; i++) await page.keyboard.press('Tab');
  expect(await focused()).toBe('write-tokens');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('1000');
  for (const id of ['write-temperature', 'write-topk', 'write-topp', 'write-seed', 'write-continue']) {
    await page.keyboard.press('Tab');
    expect(await focused()).toBe(id);
  }
  await page.keyboard.press('Enter');
  // writing: the focus moves to Stop, which Space presses
  await expect.poll(focused).toBe('write-stop');
  await expect.poll(() => writtenCount(page), { timeout: 60_000 }).toBeGreaterThanOrEqual(3);
  await page.keyboard.press('Space');
  await expect(page.locator('#write-status')).toHaveText(/^Stopped after \d+ tokens\.$/);
  // and back on Continue, for the next round
  await expect.poll(focused).toBe('write-continue');
  // Stop is disabled again: Tab goes past it
  await page.keyboard.press('Tab');
  expect(await focused()).not.toBe('write-stop');
  await shot(page, 'generate-keyboard');
});

test('a setting the API refuses is said in words, and nothing is written', async ({ page, site }) => {
  await openPrompt(page, site);
  await settings(page, { topP: 1.5 });
  await page.click('#write-continue');
  await expect(page.locator('#write-status')).toHaveText(
    /^The model could not write: topP must be a number within \(0, 1\]/,
  );
  await expect(page.locator('#text')).toHaveValue(PROMPT);
  expect(await writtenCount(page)).toBe(0);
  await expect(page.locator('#write-continue')).toBeEnabled();
});

test('on a phone the writing controls wrap and stay usable', async ({ page, site }) => {
  await page.setViewportSize({ width: 375, height: 800 });
  await openPrompt(page, site);
  await settings(page, { tokens: 6, temperature: 0 });
  await page.click('#write-continue');
  await expect(page.locator('#write-status')).toHaveText('Wrote 6 tokens (marked in the token strip).', {
    timeout: 60_000,
  });
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow, 'no sideways scrolling').toBeLessThanOrEqual(0);
  await page.locator('.panel-input').screenshot({ path: path.join(ARTIFACTS, 'generate-phone.png') });
});

test("<headscope-view editable>: Continue writes the API's tokens into its text box, Stop and typing stop it", async ({
  page,
  site,
}) => {
  await page.goto(site.url('component.html'));
  const widget = page.locator('#w-grid');
  await expect.poll(() => widget.evaluate((w) => w.result?.T ?? 0), { timeout: 60_000 }).toBeGreaterThan(0);
  const box = widget.locator('textarea');
  const prompt = await box.inputValue();
  const bar = widget.locator('.hs-write');
  await bar.getByLabel('Tokens').fill('8');
  await bar.getByLabel('Temperature').fill('0.7');
  await bar.getByLabel('Top-k').fill('30');
  await bar.getByLabel('Seed').fill('3');
  // count the widget's renders while it writes: one per token shown
  await widget.evaluate((w) => {
    w.__renders = 0;
    w.addEventListener('headscope-render', () => {
      w.__renders++;
    });
  });
  await bar.getByRole('button', { name: 'Continue' }).click();
  await expect(bar.locator('.hs-write-status')).toHaveText('Wrote 8 tokens.', { timeout: 60_000 });
  const want = await apiInPage(page, prompt, { maxTokens: 8, temperature: 0.7, topK: 30, seed: 3 });
  await expect(box).toHaveValue(want.text);
  const shown = await widget.evaluate((w) => ({
    ids: w.result.tokens.map((t) => t.id),
    rowsFrom: w.result.rowsFrom,
    T: w.result.T,
    renders: w.__renders,
  }));
  expect(shown.ids).toEqual(want.ids);
  expect(shown.rowsFrom, 'the last token moved only its row').toBe(shown.T - 1);
  expect(shown.renders).toBeGreaterThanOrEqual(8);
  await widget.screenshot({ path: path.join(ARTIFACTS, 'generate-component.png') });
  // Stop, with the keyboard: Continue, then Enter on the focused Stop
  await bar.getByLabel('Tokens').fill('1000');
  await bar.getByRole('button', { name: 'Continue' }).focus();
  await page.keyboard.press('Enter');
  await expect(bar.getByRole('button', { name: 'Stop' })).toBeFocused();
  await expect
    .poll(() => widget.evaluate((w, n) => w.result.T - n, want.ids.length), { timeout: 60_000 })
    .toBeGreaterThanOrEqual(3);
  await page.keyboard.press('Enter');
  await expect(bar.locator('.hs-write-status')).toHaveText(/^Stopped after \d+ tokens?\.$/);
  const stopped = await box.inputValue();
  expect(await widget.evaluate((w) => w.result.text)).toBe(stopped);
  // typing while it writes stops it; the view then shows the typed text's run
  await bar.getByRole('button', { name: 'Continue' }).click();
  await expect
    .poll(() => widget.evaluate((w, t) => w.result.text.length > t.length, stopped), { timeout: 60_000 })
    .toBe(true);
  await box.press('End');
  await box.pressSequentially('!');
  await expect(bar.locator('.hs-write-status')).toHaveText(/^Stopped after \d+ tokens?\.$/);
  await expect.poll(() => widget.evaluate((w) => w.result.text)).toBe(await box.inputValue());
  expect((await box.inputValue()).endsWith('!')).toBe(true);
});
