// "How the heads combine" with its direct logit attribution on the demo page: after typing the
// article's sentence, each head's signed bar holds the number the page's own model API gives for the
// same position and token (logitAttribution(), asked from the page as an API user would), the
// sentence states the API's total, and at the last token that total meets the model's logit within
// the float32 bound derived below. While typing, the view never shows the split of another text,
// position or token. The PNG and SVG exports carry it. Screenshots at desktop and phone size:
// build/e2e-artifacts/attribution-*.png.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  test as base,
  expect,
  shot,
  demoReady,
  demoIdle,
  ROOT,
  SITE,
  ARTIFACTS,
  usingDefaultModel,
  randomModelSite,
  openDemo,
} from './fixtures.mjs';
import { tensorsOf } from '../../scripts/common/safetensors.mjs';

const SENTENCE = 'The chef, who trained in Paris, cooked the meal quickly.';
const MODEL_DIR = usingDefaultModel
  ? path.join(SITE, 'models/headscope-base')
  : path.join(ROOT, 'tests/fixtures/models/odd-hs12');

// the tensors `names` of a .safetensors file (a path or a file: URL)
const readTensors = (file, names) => tensorsOf(new Uint8Array(readFileSync(file)), names);

// How far the float64 sum of the parts may be from the model's float32 logit (the bound of
// tests/js/package/heads.test.js): the parts add up to LayerNorm(x) . (gamma * wte[token]) in float64; the
// logit is the same C-term dot product after a float32 LayerNorm, so the two differ by at most
// (C + 8) u times the sum of |terms|, twice for the two sides, u = 2^-24. That sum is at most
// ||xhat|| ||gamma * w|| <= sqrt(C) ||gamma * w|| (a normalised row has ||xhat||^2 <= C); + 1 for the
// bias term, + 1e-6 for the float64 sums themselves.
const weightsOf = new Map();
function logitBound(token, modelDir = MODEL_DIR) {
  if (!weightsOf.has(modelDir))
    weightsOf.set(modelDir, readTensors(path.join(modelDir, 'model.safetensors'), ['wte.weight', 'ln_f.weight']));
  const tensors = weightsOf.get(modelDir);
  const gamma = tensors['ln_f.weight'];
  const C = gamma.length;
  let gw = 0;
  for (let i = 0; i < C; i++) gw += (gamma[i] * tensors['wte.weight'][token * C + i]) ** 2;
  return 2 * (C + 8) * 2 ** -24 * (Math.sqrt(C) * Math.sqrt(gw) + 1) + 1e-6;
}

const test = base.extend({
  // a random model with GPT-2 small's 12 heads per layer (2 layers, n_embd 192), under /heads12/
  heads12Site: randomModelSite('heads12', 'gpt-h12', { n_layer: 2, n_head: 12, n_embd: 192, n_positions: 64 }),
});

const combine = (page) => page.locator('#combine');

/** The split the view should show now: the focused token and the token explained, from the page's result. */
const expectedTarget = (page) =>
  page.evaluate(() => {
    const { result: r, state } = window.headscopeDemo;
    const t = Number.isInteger(state.token) && state.token < r.T ? state.token : r.T - 1;
    return t < r.T - 1
      ? {
          position: t,
          token: r.tokens[t + 1].id,
          text: r.tokens[t + 1].text,
          last: false,
          layer: state.layer,
          nHead: r.nHead,
        }
      : {
          position: t,
          token: r.topNext[0].id,
          text: r.topNext[0].token,
          last: true,
          layer: state.layer,
          nHead: r.nHead,
        };
  });

/**
 * The page's model asked directly (the API the page uses), for that position and token of the
 * text on screen: named with `of`, since the page's other parts (the lab's head-role probes) run
 * texts of their own, and its last run may be one of them.
 */
const apiAttribution = (page, position, token) =>
  page.evaluate(
    async ([p, k]) => {
      const { model, result } = window.headscopeDemo;
      const a = await model.logitAttribution(p, k, { text: result.text, ablate: result.ablate });
      return { ...a, heads: Array.from(a.heads), attnBias: Array.from(a.attnBias), mlp: Array.from(a.mlp) };
    },
    [position, token],
  );

/** What the combine view draws: each head's bar (head, value, side of the axis) and the check sentence. */
const shownAttribution = (page) =>
  page.evaluate(() => {
    const svg = document.querySelector('#combine svg');
    const axis = svg.querySelector('line');
    const zero = axis ? Number(axis.getAttribute('x1')) : NaN;
    const bars = [...svg.querySelectorAll('rect.hs-dla-bar')].map((b) => ({
      head: Number(b.dataset.head),
      value: Number(b.dataset.dla),
      side: Number(b.getAttribute('x')) < zero - 0.01 ? 'left' : 'right',
    }));
    const labels = [...svg.querySelectorAll('text[data-dla-text]')].map((t) => t.textContent);
    const check = svg.querySelector('text[data-total]');
    const texts = [...svg.querySelectorAll('text')].map((t) => t.textContent).join(' ');
    return {
      bars,
      labels,
      texts,
      total: check ? Number(check.dataset.total) : null,
      logit: check ? Number(check.dataset.logit) : null,
      checkText: check?.textContent ?? '',
    };
  });

// the view's numbers against the API's for the layer shown
function expectSame(shown, api, { layer, nHead }) {
  expect(
    shown.bars.map((b) => b.head),
    'one bar per head',
  ).toEqual(Array.from({ length: nHead }, (_, h) => h));
  for (const b of shown.bars) {
    const v = api.heads[layer * nHead + b.head];
    // the same engine on the same run: the numbers are identical, so compare exactly
    expect(b.value, `layer ${layer} head ${b.head}`).toBe(v);
    if (v !== 0) expect(b.side, `head ${b.head} (${v}) on its side of the zero axis`).toBe(v < 0 ? 'left' : 'right');
    expect(shown.labels[b.head]).toBe(
      (v < 0 && Math.abs(v).toFixed(2) !== '0.00' ? '−' : '+') + Math.abs(v).toFixed(2),
    );
  }
  expect(shown.total, "the sentence's sum is the API's total").toBe(api.total);
  expect(shown.checkText).toContain(`All parts sum to ${api.total.toFixed(3)}`);
}

async function typeSentence(page) {
  await page.click('#text');
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.type(SENTENCE);
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result?.text), { timeout: 30_000 }).toBe(SENTENCE);
  await demoIdle(page);
}

/** Waits until the view shows the split for the page's current focus; returns that target. */
async function attributionShown(page) {
  // the panel is drawn, and its split asked for, while it is on screen (as a reader looks at it)
  await combine(page).scrollIntoViewIfNeeded();
  const target = await expectedTarget(page);
  await expect(combine(page)).toHaveAttribute('data-attribution', `${target.position}:${target.token}`, {
    timeout: 30_000,
  });
  return target;
}

test("after typing the article's sentence, each head's bar is the API's attribution and the sum is the logit", async ({
  page,
  site,
}) => {
  await openDemo(page, site.url(`index.html?text=${encodeURIComponent('Hello')}`));
  // every change of what the view shows is checked against the result on screen at that moment
  await page.evaluate(() => {
    window.__dlaSeen = [];
    const host = document.getElementById('combine');
    new MutationObserver(() => {
      const { result: r, state } = window.headscopeDemo;
      const t = Number.isInteger(state.token) && state.token < r.T ? state.token : r.T - 1;
      const token = t < r.T - 1 ? r.tokens[t + 1].id : r.topNext[0].id;
      window.__dlaSeen.push({ shown: host.dataset.attribution, expected: `${t}:${token}`, text: r.text });
    }).observe(host, { attributes: true, attributeFilter: ['data-attribution'] });
  });
  await typeSentence(page);

  // the last token: the model's prediction for the next token
  let target = await attributionShown(page);
  expect(target.last).toBe(true);
  let api = await apiAttribution(page, target.position, target.token);
  expect(api.text, 'the API split the text on screen').toBe(SENTENCE);
  let shown = await shownAttribution(page);
  expectSame(shown, api, target);
  expect(shown.logit, "the model's logit as the API gives it").toBe(api.logit);
  expect(shown.texts).toContain(`Pushing '${target.text.trim()}' (the model's prediction for the next token)`);
  expect(shown.texts).toContain(`the model's logit is ${api.logit.toFixed(3)}.`);
  const bound = logitBound(target.token);
  expect(
    Math.abs(api.total - api.logit),
    `total ${api.total} against logit ${api.logit} (bound ${bound})`,
  ).toBeLessThanOrEqual(bound);
  const parts = [...api.heads, ...api.attnBias, ...api.mlp, api.embedding, api.lnBias];
  expect(Math.abs(parts.reduce((s, v) => s + v, 0) - api.total), 'total is the sum of the parts').toBeLessThanOrEqual(
    1e-9 * (1 + parts.reduce((s, v) => s + Math.abs(v), 0)),
  );
  const seen = await page.evaluate(() => window.__dlaSeen);
  expect(seen.length, 'the view changed while typing').toBeGreaterThan(1);
  expect(
    seen.filter((s) => s.shown !== 'none' && s.shown !== s.expected),
    'never the split of another text, position or token',
  ).toEqual([]);
  await shot(page, 'attribution-desktop-page', { fullPage: true });
  await page.locator('.panel-combine').screenshot({ path: path.join(ARTIFACTS, 'attribution-desktop-last.png') });

  // another layer: the same split, that layer's heads
  const nLayer = await page.evaluate(() => window.headscopeDemo.result.nLayer);
  const other = (target.layer + 1) % nLayer;
  await page.selectOption('#layer-select', String(other));
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.state.layer)).toBe(other);
  await expect
    .poll(async () => (await shownAttribution(page)).bars.map((b) => b.value))
    .toEqual(api.heads.slice(other * target.nHead, (other + 1) * target.nHead));
  expect((await shownAttribution(page)).texts).toContain(`Layer ${other}'s heads together`);

  // an earlier token, 'the' before 'meal': the text's own next token
  const theIndex = await page.evaluate(() => {
    const toks = window.headscopeDemo.result.tokens;
    return toks.findIndex((t, i) => t.text.trim() === 'the' && toks[i + 1]?.text.trim() === 'meal');
  });
  expect(theIndex, "the sentence has 'the meal'").toBeGreaterThan(0);
  // the model runs another text first (as the lab's probes do): the view still splits the text on screen
  await page.evaluate(() => window.headscopeDemo.model.run('Something else entirely.', { topK: 1 }));
  await page.click(`#tokens .token[data-index="${theIndex}"]`);
  target = await attributionShown(page);
  expect(target).toMatchObject({ position: theIndex, last: false });
  expect(target.text.trim()).toBe('meal');
  api = await apiAttribution(page, target.position, target.token);
  shown = await shownAttribution(page);
  expectSame(shown, api, target);
  expect(shown.texts).toContain("Pushing 'meal' (the next token of the text)");
  // run() computes logits at the last token only: here the engine's logit is the sum itself, and
  // the sentence says there is none to check against
  expect(api.logit).toBe(api.total);
  expect(shown.texts).toContain('there is none to check it against here');
  await page.locator('.panel-combine').screenshot({ path: path.join(ARTIFACTS, 'attribution-desktop-meal.png') });

  // the exports draw what the page shows
  const [svgDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="combine"][data-format="svg"]'),
  ]);
  const svgText = await readFile(await svgDl.path(), 'utf8');
  await svgDl.saveAs(path.join(ARTIFACTS, 'attribution-export.svg'));
  expect(svgText).toContain(`All parts sum to ${api.total.toFixed(3)}`);
  expect(svgText).toContain("Pushing 'meal'");
  const [pngDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="combine"][data-format="png"]'),
  ]);
  const png = await readFile(await pngDl.path());
  await pngDl.saveAs(path.join(ARTIFACTS, 'attribution-export.png'));
  const svgHeight = Number(/<svg[^>]* height="([\d.]+)"/.exec(svgText)[1]);
  expect(png.readUInt32BE(20), 'the PNG is the SVG (with the sentences) at 2x').toBe(Math.round(svgHeight * 2));
});

test("12 heads per layer (GPT-2 small's count): one bar per head, the API's numbers, readable on a desktop and a phone", async ({
  page,
  heads12Site,
}) => {
  await page.goto(
    `${heads12Site.base}index.html?model=${encodeURIComponent('/heads12/gpt-h12/')}&text=${encodeURIComponent(SENTENCE)}&layer=1&head=11`,
  );
  await demoReady(page);
  await expect(page.locator('#tagline')).toContainText(/12 heads/);
  await demoIdle(page);
  const target = await attributionShown(page);
  expect(target.nHead).toBe(12);
  const api = await apiAttribution(page, target.position, target.token);
  expectSame(await shownAttribution(page), api, target);
  const bound = logitBound(target.token, heads12Site.modelDir);
  expect(
    Math.abs(api.total - api.logit),
    `total ${api.total} against logit ${api.logit} (bound ${bound})`,
  ).toBeLessThanOrEqual(bound);
  await page.locator('.panel-combine').screenshot({ path: path.join(ARTIFACTS, 'attribution-12-heads-desktop.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  // the page lays the picture out for its new width at its next render: a click on a head
  await page.click('#combine svg rect.hs-bar[data-head="3"]');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.state.head)).toBe(3);
  await expect
    .poll(() => page.evaluate(() => Number(document.querySelector('#combine svg').getAttribute('width'))))
    .toBeLessThan(390);
  expectSame(await shownAttribution(page), api, target);
  await page.locator('.panel-combine').screenshot({ path: path.join(ARTIFACTS, 'attribution-12-heads-phone.png') });
});

test.describe('on a phone', () => {
  test.use({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });

  test('the attribution column and its sentences fit the phone layout', async ({ page, site }) => {
    await openDemo(page, site.url(`index.html?text=${encodeURIComponent('Hello')}`));
    await typeSentence(page);
    const target = await attributionShown(page);
    const api = await apiAttribution(page, target.position, target.token);
    expectSame(await shownAttribution(page), api, target);
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow, 'no sideways page scroll').toBeLessThanOrEqual(0);
    // the picture is laid out for the panel's width: drawn at (nearly) its own size, not shrunk
    const { drawn, natural } = await page.evaluate(() => {
      const svg = document.querySelector('#combine svg');
      return { drawn: svg.getBoundingClientRect().width, natural: Number(svg.getAttribute('width')) };
    });
    expect(drawn / natural, `drawn ${drawn} px of ${natural}`).toBeGreaterThan(0.95);
    await page.locator('.panel-combine').evaluate((e) => e.scrollIntoView());
    await shot(page, 'attribution-phone');
    await page.locator('.panel-combine').screenshot({ path: path.join(ARTIFACTS, 'attribution-phone-panel.png') });
  });
});
