// article.html, the explainer as a live article (web/demo/article/): every widget renders from its
// attributes; the numbers the text states are computed (from the models' cards and live runs: a
// ?model= changes them); no model is fetched before its widget comes near the viewport; the two
// predict-then-reveal points answer; the page reads on a phone without sideways scrolling and passes
// axe there, in the light and the dark scheme (desktop: tests/e2e/a11y.test.mjs). Screenshots of the
// whole page, to look at: build/e2e-artifacts/article-{desktop,phone,phone-dark}.png.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test, expect, ROOT, shot } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';

const card = (name) => JSON.parse(readFileSync(path.join(ROOT, 'web/models', name, 'card.json'), 'utf8'));
// the files a widget fetches to run a model (not its card, which the text's numbers come from)
const MODEL_FILE = /\/models\/([\w.-]+)\/(model\.safetensors|vocab\.json|merges\.txt|tokenizer\.json|config\.json)$/;

/** The models whose files the page has asked for so far, by name. */
function watchModels(page) {
  const asked = new Set();
  page.on('request', (r) => {
    const m = MODEL_FILE.exec(new URL(r.url()).pathname);
    if (m) asked.add(m[1]);
  });
  return asked;
}

/** Scrolls every widget and figure into view in turn, waiting for each to render. */
async function readWholePage(page) {
  for (const id of ['w-grid', 'w-one', 'w-eight', 'w-combine']) {
    await page.locator(`#${id}`).scrollIntoViewIfNeeded();
    await expect(page.locator(`#${id}`)).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
  }
  await page.locator('#chef-links').scrollIntoViewIfNeeded();
  await expect(page.locator('#chef-links')).toHaveAttribute('data-ready', 'true', { timeout: 60_000 });
  for (const w of await page.locator('#chef-links headscope-view').all())
    await expect(w).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
  for (const id of ['scale', 'pruning', 'kv']) {
    await page.locator(`#${id}`).scrollIntoViewIfNeeded();
    await expect(page.locator(`#${id}`)).toHaveAttribute('data-ready', 'true');
  }
  await page.locator('#w-lab').scrollIntoViewIfNeeded();
  await expect
    .poll(() => page.locator('#w-lab').evaluate((e) => e.result?.T ?? 0), { timeout: 60_000 })
    .toBeGreaterThan(0);
}

test('no model is fetched before its widget comes near the viewport; the first screen reads without one', async ({
  page,
  site,
}) => {
  const asked = watchModels(page);
  await page.setViewportSize({ width: 1280, height: 600 });
  await page.goto(site.url('article.html'));
  // the first screen: the title, the lede and the download stated, from the cards, before any model runs
  await expect(page.locator('h1')).toHaveText('Many heads, one sentence');
  await expect(page.locator('[data-fact="download"]')).toHaveText(
    /^\d+\.\d MB of models \(headscope-base, heads-1, heads-8\), plus the engine \(\d+\.\d MB\), once$/,
  );
  // the first widget, near the first screen, loads and renders; those further down have not asked yet
  await expect(page.locator('#w-grid')).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
  expect([...asked]).toEqual(['headscope-base']);
  await expect(page.locator('#w-one')).not.toHaveAttribute('data-tokens', /./);
  await expect(page.locator('#w-one').locator('.hs-status-text')).toHaveText('The model loads when you scroll here.');
  // scrolled to: the one-head model loads, and renders
  await page.locator('#w-one').scrollIntoViewIfNeeded();
  await expect(page.locator('#w-one')).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
  expect(asked.has('heads-1')).toBe(true);
});

test("every widget renders from its attributes, the figures draw, and the numbers are the cards'", async ({
  page,
  site,
}) => {
  test.setTimeout(240_000);
  await page.goto(site.url('article.html'));
  await readWholePage(page);
  const base = card('headscope-base').architecture;
  const heads = base.n_layer * base.n_head;
  await expect(page.locator('[data-fact="own-shape"]').first()).toHaveText(
    `${base.n_layer} layers × ${base.n_head} heads = ${heads} heads`,
  );
  // the attributes decide what each widget shows
  const state = (id) =>
    page.locator(`#${id}`).evaluate((e) => ({ ...e.state, nHead: e.result.nHead, nLayer: e.result.nLayer }));
  expect(await state('w-grid')).toMatchObject({ view: 'grid', nHead: base.n_head, nLayer: base.n_layer });
  expect(await state('w-one')).toMatchObject({ view: 'heatmap', model: 'heads-1', layer: 1, nHead: 1 });
  expect(await state('w-eight')).toMatchObject({ view: 'grid', model: 'heads-8', nHead: 8 });
  expect(await state('w-combine')).toMatchObject({ view: 'combine', layer: 2 });
  // the combine view draws one bar per head of the layer, and its logit split arrives
  await expect(page.locator('#w-combine .hs-view')).toHaveAttribute('data-attribution', /^\d+:\d+$/, {
    timeout: 60_000,
  });
  // the worked example's widgets carry the heads the page found, on the words it names
  for (const f of await page.locator('#chef-links figure').all()) {
    const [from] = (await f.getAttribute('data-link')).split(' ');
    const w = f.locator('headscope-view');
    const s = await w.evaluate((e) => ({ ...e.state, token: e.result.tokens[e.state.token].text }));
    expect(s.view).toBe('lines');
    expect(s.token.trim()).toBe(from);
    expect(String(s.layer)).toBe(await f.getAttribute('data-layer'));
    expect(String(s.head)).toBe(await f.getAttribute('data-head'));
    await expect(f.locator('figcaption')).toContainText(`Layer ${s.layer}, head ${s.head}: from`);
    await expect(f.locator('pre')).toContainText(`layer="${s.layer}" head="${s.head}"`);
  }
  // the scale: one square per head of each model
  const squares = await page.locator('#scale-chart svg rect').count();
  expect(squares).toBe(heads + 144 + 9216);
  await expect(page.locator('#scale-caption')).toContainText(`headscope-base: ${heads} heads.`);
  // the pruning curve and its sentence, from the card's measurement
  const p = card('headscope-base').pruning;
  await expect(page.locator('#pruning-chart svg')).toHaveCount(1);
  await expect(page.locator('#pruning-caption')).toContainText(
    `${p.heads_off_before_5pct} of its ${p.heads} heads can be switched off before the loss rises 5%`,
  );
  // the key/value family's bars and sentence
  const kv = ['kv-8', 'kv-1'].map((n) => card(n).loss.val);
  await expect(page.locator('#kv-chart svg')).toHaveCount(1);
  await expect(page.locator('#kv-caption')).toContainText(`${Math.abs(kv[1] - kv[0]).toFixed(3)} nats`);
  await shot(page, 'article-desktop', { fullPage: true });
});

test('predict, then reveal: the head-count question answers from the cards, and the lab quizzes', async ({
  page,
  site,
}) => {
  await page.goto(site.url('article.html'));
  const box = page.locator('#predict-heads');
  await box.scrollIntoViewIfNeeded();
  await expect(box).toHaveAttribute('data-ready', 'true');
  const one = card('heads-1').loss.val;
  const eight = card('heads-8').loss.val;
  const right = one <= eight ? 'fewer' : 'more';
  const wrong = right === 'fewer' ? 'more' : 'fewer';
  await box.locator(`button[data-guess="${wrong}"]`).click();
  await expect(box).toHaveAttribute('data-answered', 'wrong');
  await expect(box.locator(`button[data-guess="${wrong}"]`)).toHaveAttribute('aria-pressed', 'true');
  await expect(page.locator('#predict-heads-reveal')).toContainText(`a gap of ${Math.abs(one - eight).toFixed(3)}`);
  await box.locator(`button[data-guess="${right}"]`).click();
  await expect(box).toHaveAttribute('data-answered', 'right');
  await expect(page.locator('#predict-heads-reveal')).toHaveText(/^Right: /);
  // the second point: the lab's quiz
  const lab = page.locator('#w-lab');
  await lab.scrollIntoViewIfNeeded();
  await expect.poll(() => lab.evaluate((e) => e.result?.T ?? 0), { timeout: 60_000 }).toBeGreaterThan(0);
  await lab.locator('.hs-lab-quiz-start').click();
  await expect(lab.locator('.hs-lab-quiz-body')).toHaveAttribute('data-state', 'asking');
  await lab.locator('.hs-lab-choice').first().click();
  await expect(lab.locator('.hs-lab-quiz-body')).toHaveAttribute('data-state', 'revealed');
});

test("?model= changes the article's numbers and every widget without a model of its own", async ({ page, site }) => {
  test.setTimeout(180_000);
  const asked = watchModels(page);
  await page.goto(site.url('article.html?model=heads-4'));
  const a = card('heads-4').architecture;
  const heads = a.n_layer * a.n_head;
  await expect(page.locator('[data-fact="own-shape"]').first()).toHaveText(
    `${a.n_layer} layers × ${a.n_head} heads = ${heads} heads`,
  );
  await expect(page.locator('[data-fact="download"]')).toHaveText(/ of models \(heads-4, heads-1, heads-8\)/);
  await expect(page.locator('#w-grid')).toHaveAttribute('data-tokens', /^[1-9]\d*$/, { timeout: 60_000 });
  expect(await page.locator('#w-grid').evaluate((e) => e.result.nHead)).toBe(a.n_head);
  expect(asked.has('headscope-base'), 'the default model is never fetched').toBe(false);
  await page.locator('#scale').scrollIntoViewIfNeeded();
  await expect(page.locator('#scale-caption')).toContainText(`heads-4: ${heads} heads.`);
  expect(await page.locator('#scale-chart svg rect').count()).toBe(heads + 144 + 9216);
  const p = card('heads-4').pruning;
  await page.locator('#pruning').scrollIntoViewIfNeeded();
  await expect(page.locator('#pruning-caption')).toContainText(
    `${p.heads_off_before_5pct} of its ${p.heads} heads can be switched off`,
  );
  await page.locator('#chef-links').scrollIntoViewIfNeeded();
  await expect(page.locator('#chef-links')).toHaveAttribute('data-ready', 'true', { timeout: 60_000 });
  for (const w of await page.locator('#chef-links headscope-view').all())
    await expect(w).toHaveAttribute('model', 'heads-4');
  expect(asked.has('headscope-base'), 'the default model is never fetched').toBe(false);
});

test('on a phone: no sideways scrolling, and axe finds no serious or critical violation', async ({
  page,
  site,
  problems,
}) => {
  test.setTimeout(240_000);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(site.url('article.html'));
  await readWholePage(page);
  expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(
    0,
  );
  await shot(page, 'article-phone', { fullPage: true });
  expect(await seriousViolations(page, problems)).toEqual([]);
  // the reader's dark scheme, switched while the page is open: the page follows it, and still passes
  await page.emulateMedia({ colorScheme: 'dark' });
  const background = () =>
    page.evaluate(() => {
      const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
      return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
    });
  await expect.poll(background).toBeLessThan(0.2);
  await shot(page, 'article-phone-dark', { fullPage: true });
  expect(await seriousViolations(page, problems)).toEqual([]);
});

test('the training run: nothing starts until asked; then the heads are drawn from step 0 as it trains, and it pauses', async ({
  page,
  site,
}) => {
  const asked = watchModels(page);
  await page.goto(site.url('article.html'));
  const figure = page.locator('#train');
  await figure.scrollIntoViewIfNeeded();
  await expect(page.locator('#train-status')).toHaveText(/^Not started/);
  await expect(page.locator('#train-chart svg')).toHaveCount(0);
  await page.click('#train-start');
  await expect(figure).toHaveAttribute('data-state', 'running');
  // the probe's heads are drawn (at step 0, then every 25 steps), and the status names the step
  await expect(page.locator('#train-chart svg')).toHaveCount(1, { timeout: 60_000 });
  await expect
    .poll(async () => Number((await figure.getAttribute('data-steps')) || 0), { timeout: 60_000 })
    .toBeGreaterThan(50);
  await expect(page.locator('#train-status')).toHaveText(/^2 layers × 4 heads, step \d+ of \d+, loss \d+\.\d\d: /);
  await page.click('#train-start');
  await expect(figure).toHaveAttribute('data-state', 'paused');
  await expect(page.locator('#train-start')).toHaveText('Continue');
  // training needs no shipped model: only the widgets' models were fetched
  expect([...asked].filter((m) => !['headscope-base', 'heads-1', 'heads-8'].includes(m))).toEqual([]);
});
