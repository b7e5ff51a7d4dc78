// "Which heads carry the answer?" on the demo page (web/demo/index/patch-panel.js): every preset is
// one the default model gets right (the answer ahead of the distractor by more than a nat on the
// clean text, from the page's own model API); the panel's map is the API's patch() of the same
// texts, the estimate drawn first and the exact scores replacing it; keyboard only: a head picked,
// its positions, its attention on the clean text, switched off in the other views; the URL reopens
// the experiment; texts of different token counts and an answer of two tokens are refused with
// their messages; the exports; axe; screenshots at desktop and phone size
// (build/e2e-artifacts/patching-*.png).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test, expect, ARTIFACTS, usingDefaultModel, openDemo, nextFrames } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';

const panel = (page) => page.locator('#patch');
const done = (page) => expect(page.locator('body')).toHaveAttribute('data-patching', 'done', { timeout: 120_000 });

// the panel's report and the API's patch() of the same texts, as plain numbers (NaN as null)
async function panelAndApi(page) {
  return page.evaluate(async () => {
    const p = window.headscopeDemo.patching;
    const plain = (r) =>
      JSON.parse(
        JSON.stringify({
          ...r,
          heads: [...r.heads],
          headsAttribution: [...r.headsAttribution],
          resid: [...r.resid],
          headsByPosition: r.headsByPosition && [...r.headsByPosition],
          headsByPositionAttribution: r.headsByPositionAttribution && [...r.headsByPositionAttribution],
        }),
      );
    const shown = plain(p.report);
    const options = {
      clean: document.getElementById('patch-clean').value,
      corrupted: document.getElementById('patch-corrupted').value,
      byPosition: document.getElementById('patch-by-position').checked,
    };
    const answer = document.getElementById('patch-answer').value;
    const distractor = document.getElementById('patch-distractor').value;
    if (answer) options.answer = answer;
    if (distractor) options.distractor = distractor;
    const api = plain(await window.headscopeDemo.model.patch(options));
    const cells = [...document.querySelectorAll('#patch-heads .hs-patch-cell')].map((c) =>
      c.getAttribute('aria-label'),
    );
    return { shown, api, cells, history: p.history };
  });
}

test('every preset is one the default model gets right, and the map is the API patch() of its texts, estimate first', async ({
  page,
  site,
}) => {
  expect(usingDefaultModel, 'the site holds the shipped default model (web/models/headscope-base)').toBe(true);
  await page.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(page, site.url('index.html'));
  // every preset: LD_clean > 1 nat, from the page's model API
  const lds = await page.evaluate(async () => {
    const out = [];
    for (const p of window.headscopeDemo.patching.presets) {
      const r = await window.headscopeDemo.model.patch({
        clean: p.clean,
        corrupted: p.corrupted,
        answer: p.answer,
        distractor: p.distractor,
      });
      out.push({ name: p.name, ldClean: r.ldClean, ldCorrupted: r.ldCorrupted, answer: r.answer.text });
    }
    return out;
  });
  expect(lds.length).toBeGreaterThanOrEqual(3);
  expect(lds.some((l) => /induction/.test(l.name))).toBe(true);
  for (const l of lds) {
    expect(l.ldClean, `${l.name}: the clean text's answer leads by more than a nat`).toBeGreaterThan(1);
    expect(l.ldCorrupted, `${l.name}: less so on the corrupted text`).toBeLessThan(l.ldClean);
  }

  // on screen, the first preset runs by itself
  await panel(page).scrollIntoViewIfNeeded();
  await done(page);
  const { shown, api, cells, history } = await panelAndApi(page);
  expect(shown).toEqual(api);
  expect(shown.complete).toBe(true);
  // the estimate came first (no exact score yet), then the exact scores in chunks
  expect(history[0]).toEqual({ done: 0, estimated: api.nLayer * api.nHead });
  expect(history.at(-1)).toEqual({ done: api.exactRunsTotal, estimated: 0 });
  for (let i = 1; i < history.length; i++) expect(history[i].done).toBeGreaterThanOrEqual(history[i - 1].done);
  expect(history.length).toBeGreaterThan(2);
  // every cell says its exact score as the API gives it
  const fmt = (v) =>
    Math.abs(v).toFixed(2) === '0.00' || v >= 0 ? Math.abs(v).toFixed(2) : `−${Math.abs(v).toFixed(2)}`;
  expect(cells).toEqual(
    api.heads.map((v, i) => `Layer ${Math.floor(i / api.nHead)} head ${i % api.nHead}: score ${fmt(v)}`),
  );
  await expect(page.locator('#patch-align')).toHaveText('11 tokens each; 1 token differs: Smith → Jones.');
  await expect(page.locator('#patch-status')).toContainText(`Every score is exact: ${api.exactRunsTotal} patched runs`);
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'patching-desktop.png') });

  // another preset from the list runs at once, and equals the API too
  await page.selectOption('#patch-preset', '1');
  await expect(page.locator('#patch-clean')).toHaveValue('red green blue yellow red green blue');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.patching.report?.tokensClean.length)).toBe(7);
  await done(page);
  const second = await panelAndApi(page);
  expect(second.shown).toEqual(second.api);
  expect(second.shown.answer.text).toBe(' yellow');
});

test('keyboard only: a head picked, its positions, its attention on the clean text, switched off in the other views; the URL reopens it', async ({
  page,
  site,
  context,
}) => {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(page, site.url('index.html'));
  await panel(page).scrollIntoViewIfNeeded();
  await done(page);
  const first = page.locator('#patch-heads .hs-patch-cell[tabindex="0"]');
  await expect(first).toHaveCount(1);
  await first.focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Enter');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.patching.selected)).toEqual([1, 2]);
  await expect(page.locator('#patch-head-text')).toContainText('Layer 1, head 2');
  await expect(page.locator('#patch-position svg')).toHaveAttribute(
    'aria-label',
    'Layer 1 head 2 patched at each position in turn.',
  );
  await expect(page.locator('#patch-heads .hs-patch-cell[data-layer="1"][data-head="2"]')).toHaveAttribute(
    'aria-pressed',
    'true',
  );
  await expect(page.locator('#patch-heads .hs-patch-cell[data-layer="1"][data-head="2"]')).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(page.locator('#patch-show')).toBeFocused();
  await page.keyboard.press('Enter');
  const clean = await page.locator('#patch-clean').inputValue();
  await expect(page.locator('#text')).toHaveValue(clean);
  await expect
    .poll(() =>
      page.evaluate(() => [
        window.headscopeDemo.state.layer,
        window.headscopeDemo.state.head,
        window.headscopeDemo.result?.text,
      ]),
    )
    .toEqual([1, 2, clean]);
  await page.locator('#patch-off').focus();
  await page.keyboard.press('Enter');
  await expect.poll(() => page.evaluate(() => window.headscopeLab.ablate)).toEqual([[1, 2]]);
  await expect(page.locator('#patch-off')).toHaveAttribute('aria-pressed', 'true');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result?.ablate)).toEqual([[1, 2]]);

  // the URL holds the experiment and the head; a new page opens it, scrolled there, run
  await expect
    .poll(() => ['patched', 'off'].map((k) => new URL(page.url()).searchParams.get(k)))
    .toEqual(['1:2', '1:2']);
  const url = page.url();
  const q = new URL(url).searchParams;
  expect([q.get('clean'), q.get('corrupted'), q.get('answer'), q.get('distractor'), q.get('off')]).toEqual([
    clean,
    await page.locator('#patch-corrupted').inputValue(),
    ' Smith',
    ' Jones',
    '1:2',
  ]);
  const again = await context.newPage();
  await again.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(again, url);
  await done(again);
  await expect.poll(() => again.evaluate(() => window.headscopeDemo.patching.selected)).toEqual([1, 2]);
  const reopened = await panelAndApi(again);
  expect(reopened.shown).toEqual(reopened.api);
  expect(
    await again.evaluate(() => {
      const r = document.getElementById('patch').getBoundingClientRect();
      return r.top < innerHeight && r.bottom > 0;
    }),
  ).toBe(true);
});

test('texts of different token counts and an answer of two tokens are refused with their messages; exports; axe; a phone', async ({
  page,
  site,
  problems,
}) => {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(page, site.url('index.html'));
  await panel(page).scrollIntoViewIfNeeded();
  await done(page);
  // the exports draw the map
  const [svgDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="patch"][data-format="svg"]'),
  ]);
  const svg = await readFile(await svgDl.path(), 'utf8');
  expect(svgDl.suggestedFilename()).toBe('headscope-patching.svg');
  expect(svg).toContain('Score by head');
  const [pngDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="patch"][data-format="png"]'),
  ]);
  const png = await readFile(await pngDl.path());
  const svgWidth = Number(/<svg[^>]* width="([\d.]+)"/.exec(svg)[1]);
  expect(png.readUInt32BE(16), 'the PNG is the SVG at 2x').toBe(Math.round(svgWidth * 2));

  expect(await seriousViolations(page, problems, '#patch')).toEqual([]);

  // one token more in the corrupted text: the counts and where they differ, and no run
  await page.fill('#patch-corrupted', 'Mr. Jones left the big room. Later, Mr.');
  await expect(page.locator('#patch-align')).toHaveText(
    /the clean one has 11, the corrupted one 12; they first differ at token 2\./,
  );
  await expect(page.locator('#patch-run')).toBeDisabled();
  await expect(page.locator('#patch-preset')).toHaveValue('own');
  // the engine's refusal of an answer that is not one token reaches the status line
  await page.fill('#patch-corrupted', 'Mr. Jones left the room. Later, Mr.');
  await expect(page.locator('#patch-run')).toBeEnabled();
  await page.fill('#patch-answer', ' Smith left');
  await page.click('#patch-run');
  await expect(page.locator('body')).toHaveAttribute('data-patching', 'error');
  await expect(page.locator('#patch-status')).toHaveText(
    /^The patching could not run: answer: " Smith left" is 2 tokens/,
  );

  // a phone: the panel fits the width, its maps drawn
  await page.fill('#patch-answer', ' Smith');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.click('#patch-run');
  await done(page);
  await nextFrames(page);
  const overflow = await page.evaluate(() => {
    const p = document.getElementById('patch').getBoundingClientRect();
    return {
      right: p.right,
      width: document.documentElement.clientWidth,
      scroll: document.documentElement.scrollWidth,
    };
  });
  expect(overflow.right).toBeLessThanOrEqual(overflow.width);
  expect(overflow.scroll).toBeLessThanOrEqual(overflow.width);
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'patching-phone.png') });
});

test('"patch only this head in the other views": the views show the corrupted text with that head patched, as the API runs it, until stopped or edited', async ({
  page,
  site,
}) => {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(page, site.url('index.html'));
  await panel(page).scrollIntoViewIfNeeded();
  await done(page);
  await page.click('#patch-heads .hs-patch-cell[data-layer="1"][data-head="2"]');
  await page.click('#patch-only');
  const clean = await page.locator('#patch-clean').inputValue();
  const corrupted = await page.locator('#patch-corrupted').inputValue();
  await expect(page.locator('#text')).toHaveValue(corrupted);
  await expect(page.locator('#patch-only')).toHaveAttribute('aria-pressed', 'true');
  await expect(page.locator('#patched')).toBeVisible();
  await expect(page.locator('#patched-text')).toContainText("layer 1, head 2's output taken from the clean text");
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.result?.patch))
    .toEqual({ from: clean, layer: 1, head: 2 });
  // the page's result is the API's patched run of the same texts, bit for bit
  const same = await page.evaluate(
    async ({ clean, corrupted }) => {
      const shown = window.headscopeDemo.result;
      const api = await window.headscopeDemo.model.run(corrupted, { patch: { from: clean, layer: 1, head: 2 } });
      const plain = await window.headscopeDemo.model.run(corrupted);
      const eq = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
      return {
        logits: eq([...shown.logitsLast], [...api.logitsLast]),
        attention: eq([...shown.attentionAll], [...api.attentionAll]),
        differsFromPlain: !eq([...shown.logitsLast], [...plain.logitsLast]),
      };
    },
    { clean, corrupted },
  );
  expect(same).toEqual({ logits: true, attention: true, differsFromPlain: true });
  // the combine view does not split a patched run; "Inside this head" says it reads the text unpatched
  await page.locator('#combine').scrollIntoViewIfNeeded();
  await expect(page.locator('#combine')).toContainText('not split for a patched run');
  await expect(page.locator('#inside-note')).toContainText('this panel reads the text without the patch');
  // Stop patching: the plain run
  await page.click('#patched-stop');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result?.patch)).toBe(null);
  await expect(page.locator('#patched')).toBeHidden();
  // patched again, then an edit of the text ends it
  await panel(page).scrollIntoViewIfNeeded();
  await page.click('#patch-only');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result?.patch?.layer)).toBe(1);
  await page.locator('#text').press('End');
  await page.keyboard.type(' The');
  await expect
    .poll(() => page.evaluate(() => [window.headscopeDemo.result?.patch, window.headscopeDemo.result?.text]))
    .toEqual([null, `${corrupted} The`]);
  await expect(page.locator('#patched')).toBeHidden();
});
