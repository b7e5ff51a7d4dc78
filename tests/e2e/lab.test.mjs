// End-to-end tests of the lab in headless Chromium: switching heads off (page and component),
// head-role badges and their legend, knock-out ranking, predict-then-reveal, and the head-count
// comparison page. Screenshots in build/e2e-artifacts/lab-*.png. Run with tests/e2e/run.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { startServer, launch, openPage, shot, withModel, demoReady, cspViolations, SITE, usingDefaultModel } from './helpers.mjs';

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

const url = (p) => withModel(server.base + p);
const HOSTILE = '<img src=x onerror=alert(1)> <img src=x onerror=alert(1)>';

async function noProblems(page, problems) {
  assert.deepEqual(await cspViolations(page), [], 'CSP violations');
  assert.deepEqual(problems, [], 'console errors, page errors or dialogs');
}

test('page: switch heads off by click and keyboard; later layers, predictions and loss change', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  await page.waitForSelector('#lab .hs-lab-mode');
  const { nLayer, nHead } = await page.evaluate(() => window.headscopeDemo.result);
  const lastLayerAtt = () => page.evaluate(() => {
    const r = window.headscopeDemo.result;
    return Array.from(r.attention(r.nLayer - 1, 0).slice(0, 40));
  });
  const before = { att: await lastLayerAtt(), top: await page.evaluate(() => window.headscopeDemo.result.topNext[0].prob) };
  const firstLayerBefore = await page.evaluate(() => Array.from(window.headscopeDemo.result.attention(0, 0)));
  // switch-off mode by keyboard, then click two heads of layer 0
  await page.focus('#lab .hs-lab-mode');
  await page.keyboard.press('Enter');
  assert.equal(await page.getAttribute('#lab .hs-lab-mode', 'aria-pressed'), 'true');
  let runs = await page.evaluate(() => window.headscopeDemo.runs);
  await page.click('#grid [data-layer="0"][data-head="0"]');
  await page.waitForFunction((n) => window.headscopeDemo.runs > n, runs);
  // keyboard: arrow to the next head and press X
  runs = await page.evaluate(() => window.headscopeDemo.runs);
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('x');
  await page.waitForFunction((n) => window.headscopeDemo.runs > n, runs);
  await page.waitForFunction(() => document.querySelectorAll('#grid .hs-ablated').length === 2);
  assert.deepEqual(await page.evaluate(() => window.headscopeDemo.state.ablate), [[0, 0], [0, 1]]);
  assert.match(await page.getAttribute('#grid [data-layer="0"][data-head="0"]', 'aria-label'), /switched off/);
  assert.equal(await page.evaluate(() => window.headscopeDemo.result.text), await page.inputValue('#text'));
  // layer 0's own attention is unchanged; the last layer's and the predictions changed
  const firstLayerAfter = await page.evaluate(() => Array.from(window.headscopeDemo.result.attention(0, 0)));
  assert.deepEqual(firstLayerAfter, firstLayerBefore, 'switching off a head does not change its own layer\'s attention');
  if (nLayer > 1) assert.notDeepEqual(await lastLayerAtt(), before.att, 'later layers\' attention changed');
  assert.notEqual(await page.evaluate(() => window.headscopeDemo.result.topNext[0].prob), before.top);
  // the loss with and without, and the next-token table
  await page.waitForSelector('#lab .hs-lab-loss[data-ablate="0:0,0:1"] .hs-lab-next tbody tr');
  const line = page.locator('#lab .hs-lab-lossline');
  const base = Number(await line.getAttribute('data-base'));
  const abl = Number(await line.getAttribute('data-ablated'));
  assert.ok(Number.isFinite(base) && Number.isFinite(abl) && base !== abl, `loss ${base} vs ${abl}`);
  assert.match(await line.textContent(), /switched off/);
  // the page's numbers are the engine's: a direct run with the same heads off gives the same loss
  const direct = await page.evaluate(async () => {
    const model = await window.headscopeLab.o.getModel();
    const text = window.headscopeDemo.state.text;
    return (await model.run(text, { allLogits: true, ablate: [[0, 0], [0, 1]] })).loss;
  });
  assert.ok(Math.abs(direct - abl) < 1e-6, `direct ${direct} vs page ${abl}`);
  await page.locator('#lab').scrollIntoViewIfNeeded();
  await shot(page, 'lab-ablation', { fullPage: true });
  // switch one back on by clicking again; "switch all back on" clears
  await page.click('#grid [data-layer="0"][data-head="0"]');
  await page.waitForFunction(() => document.querySelectorAll('#grid .hs-ablated').length === 1);
  await page.click('#lab .hs-lab-reset');
  await page.waitForFunction(() => document.querySelectorAll('#grid .hs-ablated').length === 0 && window.headscopeDemo.state.ablate.length === 0);
  // with switch-off mode off, a click selects the head again
  await page.click('#lab .hs-lab-mode');
  await page.click(`#grid [data-layer="${nLayer - 1}"][data-head="${nHead - 1}"]`);
  await page.waitForFunction(([l, h]) => window.headscopeDemo.state.layer === l && window.headscopeDemo.state.head === h, [nLayer - 1, nHead - 1]);
  assert.equal(await page.locator('#grid .hs-ablated').count(), 0);
  await noProblems(page, problems);
  await context.close();
});

test('page: role badges, legend with formulas and thresholds, knock-out ranking', async () => {
  const { page, context, problems } = await openPage(browser, url(`index.html?off=0:1`));
  await demoReady(page);
  // the induction probe needs whole-word tokens: the shipped model has them, the byte-level fixture not
  if (usingDefaultModel) await page.waitForFunction(() => /Induction measured on/.test(document.querySelector('#lab .hs-lab-roles-status')?.textContent || ''), null, { timeout: 30000 });
  // ?off= restores switched-off heads
  await page.waitForFunction(() => document.querySelectorAll('#grid .hs-ablated').length === 1);
  // badges match the package's headBadges on the displayed result (computed in the page)
  await page.waitForFunction(() => window.headscopeLab.scoresResult === window.headscopeDemo.result);
  const check = await page.evaluate(async () => {
    const { allHeadScores, headBadges } = await import('./analysis.js');
    const r = window.headscopeDemo.result;
    const s = allHeadScores(r);
    const out = [];
    document.querySelectorAll('#grid [data-layer]').forEach((c) => {
      const l = +c.dataset.layer, h = +c.dataset.head;
      const expected = headBadges({ ...s[l][h], induction: 0 }).join(' ');
      const shown = (c.dataset.roles || '').split(' ').filter((x) => x && x !== 'induction').join(' ');
      out.push([expected, shown]);
    });
    return out;
  });
  for (const [expected, shown] of check) assert.equal(shown, expected);
  // the formulas open from the keyboard
  await page.focus('#lab .hs-lab-formulas summary');
  await page.keyboard.press('Enter');
  assert.ok(await page.locator('#lab .hs-lab-legend').isVisible());
  const legend = await page.locator('#lab .hs-lab-legend').textContent();
  for (const word of ['previous', 'first token', 'self', 'duplicate', 'induction', 'broad', 'A[t][t−1]', '≥ 0.5', 'ln(t+1)']) {
    assert.ok(legend.includes(word), `legend mentions ${word}`);
  }
  assert.match(await page.locator('#lab .hs-lab-roles').textContent(), /found after training/);
  assert.doesNotMatch(await page.locator('#lab .hs-lab-roles').textContent(), /assigned to|is responsible for/);
  // knock-out
  await page.click('#lab .hs-lab-ko-run');
  await page.waitForSelector('#lab .hs-lab-ko-list[data-ready="true"]', { timeout: 60000 });
  const { nLayer, nHead } = await page.evaluate(() => window.headscopeDemo.result);
  const deltas = await page.locator('#lab .hs-lab-ko-item').evaluateAll((li) => li.map((x) => Number(x.dataset.delta)));
  assert.equal(deltas.length, nLayer * nHead - 1, 'every head but the one already off');
  for (let i = 1; i < deltas.length; i++) assert.ok(deltas[i] <= deltas[i - 1], 'ranked by loss increase');
  assert.match(await page.locator('#lab .hs-lab-ko-status').textContent(), /Most needed: layer \d+ head \d+/);
  const redundant = await page.locator('#lab .hs-redundant').count();
  if (redundant) assert.match(await page.locator('#lab .hs-lab-ko-status').textContent(), /redundant/);
  // a ranked head's button selects it
  const firstBtn = page.locator('#lab .hs-lab-ko-head').first();
  const [l, h] = await page.locator('#lab .hs-lab-ko-item').first().evaluate((x) => [+x.dataset.layer, +x.dataset.head]);
  await firstBtn.click();
  await page.waitForFunction(([l, h]) => window.headscopeDemo.state.layer === l && window.headscopeDemo.state.head === h, [l, h]);
  await page.locator('#lab .hs-lab-ko').scrollIntoViewIfNeeded();
  await shot(page, 'lab-knockout-badges', { fullPage: true });
  await noProblems(page, problems);
  await context.close();
});

test('page: predict, then reveal hides the head, asks with token buttons, reveals', async () => {
  const { page, context, problems } = await openPage(browser, url(`index.html?text=${encodeURIComponent(HOSTILE)}`), { colorScheme: 'dark' });
  await demoReady(page);
  await page.click('#lab .hs-lab-quiz-start');
  await page.waitForSelector('#lab .hs-lab-quiz-body[data-state="asking"]');
  assert.ok(await page.evaluate(() => document.body.classList.contains('lab-quiz-asking')));
  assert.equal(await page.locator('#grid .hs-pattern-hidden').count(), 1);
  assert.equal(await page.evaluate(() => getComputedStyle(document.getElementById('detail-view')).visibility), 'hidden');
  const T = await page.evaluate(() => window.headscopeDemo.result.T);
  assert.equal(await page.locator('#lab .hs-lab-choice').count(), T, 'one button per earlier token (and itself)');
  // tokens are text: the hostile input created no element
  assert.equal(await page.locator('#lab img').count(), 0);
  assert.match(await page.locator('#lab .hs-lab-quiz-q').textContent(), /attend to most/);
  await shot(page, 'lab-quiz-asking', { fullPage: true });
  // keyboard: the first choice has focus; Tab to the next and answer with Enter
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#lab .hs-lab-quiz-body[data-state="revealed"]');
  assert.ok(!(await page.evaluate(() => document.body.classList.contains('lab-quiz-asking'))));
  assert.equal(await page.locator('#grid .hs-pattern-hidden').count(), 0);
  assert.equal(await page.locator('#lab .hs-lab-choice.hs-answer').count(), 1);
  assert.match(await page.locator('#lab .hs-lab-quiz-result').textContent(), /attends most to/);
  await shot(page, 'lab-quiz-revealed', { fullPage: true });
  // a "surprising" question picks a head itself
  await page.click('#lab .hs-lab-quiz-next');
  await page.waitForSelector('#lab .hs-lab-quiz-body[data-state="asking"]');
  await noProblems(page, problems);
  await context.close();
});

test('component: <headscope-lab> switches heads off and shares the model with <headscope-view>', async () => {
  const { page, context, problems } = await openPage(browser, url('lab-component.html?ablate=0:0'));
  await page.waitForFunction(() => {
    const lab = document.querySelector('headscope-lab');
    const view = document.querySelector('headscope-view');
    return Number(lab?.dataset.tokens) > 0 && Number(view?.dataset.tokens) > 0;
  }, null, { timeout: 30000 });
  const shadow = (sel) => page.locator(`headscope-lab >> ${sel}`);
  await page.waitForFunction(() => document.querySelector('headscope-lab').shadowRoot.querySelectorAll('.hs-ablated').length === 1);
  const loaded = await page.evaluate(async () => (await import('./headscope-view.js')).modelLoadCount());
  assert.equal(loaded, 1, 'one model load for both widgets');
  // click-to-switch-off inside the shadow root
  await shadow('.hs-lab-mode').click();
  const top0 = await page.evaluate(() => document.querySelector('headscope-lab').result.topNext[0].prob);
  await shadow('[data-layer="0"][data-head="1"]').click();
  await page.waitForFunction(() => document.querySelector('headscope-lab').shadowRoot.querySelectorAll('.hs-ablated').length === 2);
  await page.waitForFunction((p) => document.querySelector('headscope-lab').result.topNext[0].prob !== p, top0);
  await page.waitForFunction(() => document.querySelector('headscope-lab').shadowRoot.querySelector('.hs-lab-next tbody tr'));
  // keyboard: X on a focused cell switches it back on
  await shadow('[data-layer="0"][data-head="1"]').focus();
  await page.keyboard.press('x');
  await page.waitForFunction(() => document.querySelector('headscope-lab').shadowRoot.querySelectorAll('.hs-ablated').length === 1);
  // <headscope-view ablate="..."> runs with those heads off too: layer 1's attention changes
  const viewAtt = () => page.evaluate(() => Array.from(document.querySelector('#w-lines').result.attention(1, 0)));
  const attBefore = await viewAtt();
  await page.evaluate(() => document.querySelector('#w-lines').setAttribute('ablate', '0:0,0:1'));
  await page.waitForFunction((b) => {
    const a = document.querySelector('#w-lines').result.attention(1, 0);
    return a.some((x, i) => Math.abs(x - b[i]) > 1e-6);
  }, attBefore);
  await page.evaluate(() => document.querySelector('#w-lines').removeAttribute('ablate'));
  await page.waitForFunction((b) => {
    const a = document.querySelector('#w-lines').result.attention(1, 0);
    return a.every((x, i) => Math.abs(x - b[i]) <= 1e-6);
  }, attBefore);
  // the quiz works inside the component
  await shadow('.hs-lab-quiz-start').click();
  await page.waitForFunction(() => document.querySelector('headscope-lab').shadowRoot.querySelector('.hs-lab-quiz-body[data-state="asking"]'));
  await shot(page, 'lab-component', { fullPage: true });
  await shadow('.hs-lab-choice').first().click();
  await page.waitForFunction(() => document.querySelector('headscope-lab').shadowRoot.querySelector('.hs-lab-quiz-body[data-state="revealed"]'));
  await noProblems(page, problems);
  await context.close();
});

// the head-count family when the site holds it; else fixtures with 2, 3 and 4 heads (no cards)
const FAMILY = ['heads-1', 'heads-2', 'heads-4', 'heads-8'];
const haveFamily = FAMILY.every((n) => existsSync(path.join(SITE, 'models', n, 'model.safetensors')));
const compareQuery = haveFamily ? '' : `?models=${['/fixtures/hs5/', '/fixtures/odd-hs12/', '/fixtures/tiny-hs4/'].join(',')}`;

test('compare.html: the head-count family side by side with loss, parameters, speed and a computed sentence', async () => {
  const { page, context, problems } = await openPage(browser, `${server.base}compare.html${compareQuery}${compareQuery ? '&' : '?'}reps=3`, { viewport: { width: 1400, height: 1000 } });
  await page.waitForFunction(() => Number(document.body.dataset.timed || 0) > 0, null, { timeout: 60000 });
  const cols = await page.locator('.compare-col').count();
  assert.equal(cols, haveFamily ? 4 : 3);
  const cells = await page.locator('.compare-col').evaluateAll((secs) => secs.map((s) => s.querySelectorAll('[role="gridcell"]').length));
  const heads = await page.evaluate(() => window.headscopeCompare.entries.map((e) => e.info.config.nHead * e.info.config.nLayer));
  assert.deepEqual(cells, heads, 'one grid cell per head in each model');
  const table = await page.locator('#cmp-table').textContent();
  assert.match(table, /ms/);
  const summary = await page.locator('#cmp-summary').textContent();
  assert.match(summary, /takes .* the \d+-head model on this text \(\d/);
  if (haveFamily) {
    assert.match(table, /Validation loss/);
    assert.match(summary, /predicts best \(loss \d/);
    // the sentence is computed: it names the model with the lowest validation loss in the cards
    const best = await page.evaluate(() => {
      const e = window.headscopeCompare.entries.reduce((a, b) => (b.valLoss < a.valLoss ? b : a));
      return e.info.config.nHead;
    });
    assert.ok(summary.includes(`the ${best}-head model predicts best`));
  }
  // typing re-runs every model
  await page.fill('#cmp-text', 'One two three, one two three.');
  await page.waitForFunction(() => window.headscopeCompare.entries.every((e) => e.result?.text === 'One two three, one two three.'));
  // keyboard in a grid
  await page.locator('.compare-col [role="gridcell"]').first().click();
  await page.keyboard.press('ArrowRight');
  await page.waitForTimeout(100);
  await shot(page, 'lab-compare', { fullPage: true });
  await noProblems(page, problems);
  await context.close();
});

test('page links to the comparison', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  assert.equal(await page.getAttribute('#compare-link', 'href'), 'compare.html');
  await noProblems(page, problems);
  await context.close();
  if (!usingDefaultModel) console.log('# lab: ran on the fixture model (the default model is not built yet)');
});
