// "Inside this head" and "weight × value size" in the demo page, the iframe mode and the
// component: the panel's numbers are the API's (inspectHead() on the page's own worker model), its
// softmax step is the heatmap's row, it works by keyboard alone, follows prefers-reduced-motion,
// keeps its step in the URL, exports, and works at d_head 64 (a random GPT-2-small-shaped model
// written by random-model.mjs) and at phone width; "weight × value size" in every attention view,
// grid included, equals the API's run(text, { valueNorms: true }). Screenshots:
// build/e2e-artifacts/inside-*.png, value-*.png.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  test as base,
  expect,
  ARTIFACTS,
  demoReady,
  shot,
  nextFrames,
  randomModelSite,
  openDemo,
} from './fixtures.mjs';

const test = base.extend({
  // a random model with GPT-2 small's heads (12 of d_head 64, n_embd 768) in 2 layers, under /dh64/
  dh64Site: randomModelSite('dh64', 'gpt-dh64', {
    n_layer: 2,
    n_head: 12,
    n_embd: 768,
    n_positions: 128,
    attnScale: 0.05,
  }),
});

const panel = (page) => page.locator('#inside');

/** A screenshot of one element (all of it, however tall) in build/e2e-artifacts/, after the next painted frames. */
async function shotOf(page, locator, name) {
  await nextFrames(page);
  await locator.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), animations: 'disabled' }); // a step's slide-in, finished
}

// Opens the demo with the panel linked (inside=, step=) and waits until it shows the text on screen.
async function openInside(page, url, { layer, head, query }) {
  await page.goto(url);
  await demoReady(page);
  await expect(panel(page)).toHaveAttribute('data-ready', new RegExp(`^${layer}:${head}:${query}:\\d+$`), {
    timeout: 60_000,
  });
}

// The page's own model (its worker) asked directly, as an API user would: the numbers to compare with.
const apiInside = (page, layer, head) =>
  page.evaluate(
    async ([l, h]) => {
      const d = window.headscopeDemo;
      const ins = await d.model.inspectHead(d.result.text, l, h);
      return {
        T: ins.T,
        headSize: ins.headSize,
        scores: Array.from(ins.scores),
        attention: Array.from(ins.attention),
        valueNorm: Array.from(ins.valueNorm),
        tokens: ins.tokens.map((t) => t.text),
      };
    },
    [layer, head],
  );

const signed = (x, d) => (x < 0 ? `−${(-x).toFixed(d)}` : x.toFixed(d));

// A fresh run of the text on screen with every head's value sizes, as an API user would ask the page's model.
const apiValueSizes = (page, layer, head, ablate = []) =>
  page.evaluate(
    async ([l, h, off]) => {
      const d = window.headscopeDemo;
      const r = await d.model.run(d.result.text, { valueNorms: true, ablate: off });
      return { T: r.T, sizes: Array.from(r.headValueNorms(l, h)) };
    },
    [layer, head, ablate],
  );

/**
 * What the grid shows for heads `heads` ([[layer, head], ...]) next to the value-weighted attention
 * computed here from a fresh API run of the text on screen, run(text, { valueNorms: true, ablate }):
 * alpha_qk ||v_k W_O^h|| / sum_j alpha_qj ||v_j W_O^h||, in float64, keys in order. Returns, per head,
 * the largest relative difference from the grid's numbers (grid.weightAt), how far the shares are
 * from the plain weights, and the grid canvas's pixels that are not the colour of the share (read at
 * the centre of each (query, key) block of at least 3 device pixels).
 */
const gridAgainstApi = (page, heads, ablate = []) =>
  page.evaluate(
    async ([heads, off]) => {
      const { readTheme, heat } = await import('./headscope-view.js');
      const d = window.headscopeDemo;
      const shown = d.result;
      const r = await d.model.run(shown.text, { valueNorms: true, ablate: off });
      const T = r.T;
      const canvas = document.querySelector('#grid canvas');
      const box = canvas.getBoundingClientRect();
      const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      const theme = readTheme(document.getElementById('grid'));
      const sx = canvas.width / box.width;
      return heads.map(([l, h]) => {
        const a = r.attention(l, h);
        const n = r.headValueNorms(l, h);
        const cell = document.querySelector(`#grid [data-layer="${l}"][data-head="${h}"]`).getBoundingClientRect();
        const bw = ((cell.width - 6) * sx) / T;
        const bh = ((cell.height - 6) * sx) / T;
        let worst = 0;
        let moved = 0;
        let pixelsRead = 0;
        const wrongPixels = [];
        for (let q = 0; q < T; q++) {
          let sum = 0;
          for (let k = 0; k <= q; k++) sum += a[q * T + k] * n[k];
          for (let k = 0; k <= q; k++) {
            const want = (a[q * T + k] * n[k]) / sum;
            const got = d.grid.weightAt(l, h, q, k);
            worst = Math.max(worst, want === 0 ? (got === 0 ? 0 : Infinity) : Math.abs(got - want) / want);
            moved = Math.max(moved, Math.abs(want - a[q * T + k]));
            if (bw < 3 || bh < 3) continue;
            const x = Math.floor((cell.left - box.left + 3) * sx + (k + 0.5) * bw);
            const y = Math.floor((cell.top - box.top + 3) * sx + (q + 0.5) * bh);
            const i = (y * canvas.width + x) * 4;
            const colour = `rgb(${px[i]},${px[i + 1]},${px[i + 2]})`;
            pixelsRead++;
            // the share's colour, or its neighbour's when float32 rounding moves it across a colour step
            if (![want, want * (1 - 2 ** -23), want * (1 + 2 ** -23)].some((w) => heat(theme, w) === colour))
              wrongPixels.push(`(${q}, ${k}) ${colour} vs ${heat(theme, want)}`);
          }
        }
        return {
          head: `L${l}H${h}`,
          worst,
          moved,
          pixelsRead,
          wrongPixels: wrongPixels.slice(0, 5),
          sameText: r.text === shown.text,
        };
      });
    },
    [heads, ablate],
  );

// The grid shows what its canvas was painted from (grid.shown): the result on screen, by `by`.
async function gridShowsResult(page, by) {
  await expect(page.locator('#grid .hs-grid')).toHaveAttribute('data-weighting', by);
  await expect
    .poll(() => page.evaluate(() => window.headscopeDemo.grid.shown?.result === window.headscopeDemo.result))
    .toBe(true);
}

// The page and the API run the same wasm build on the same text: the attention and value sizes
// are the same floats (tests/js/package/inspect.test.js), and the row sums run over the same keys in the same
// order in float64. The page keeps each share as float32 (weighting.js valueShare: alpha * n * (1 / sum)
// in float64, then rounded), so a share differs from the float64 quotient here by the float32
// rounding, at most half an ulp (2^-24 relative), plus the float64 roundings of 1 / sum and of the
// product (2^-53 each): 2^-24 + 2^-50 covers both.
const FLOAT32_ROUNDING = 2 ** -24 + 2 ** -50;

test("the panel's score for each (query, key) pair is the API's; its softmax step is the heatmap's row", async ({
  page,
  site,
}) => {
  const [layer, head, query] = [1, 1, 6];
  await openInside(page, site.url(`index.html?layer=${layer}&head=${head}&inside=${query}&step=3`), {
    layer,
    head,
    query,
  });
  await expect(page.locator('#inside .hs-inside-step[aria-selected="true"]')).toHaveText('3Scores');
  const api = await apiInside(page, layer, head);
  const T = api.T;
  // the same worker engine on the same text: the numbers are identical, so compare exactly (the
  // panel keeps the full float32 value in data-score and shows it to 3 decimals)
  const scores = await panel(page)
    .locator('[data-score]')
    .evaluateAll((els) =>
      els.map((e) => ({ key: Number(e.dataset.key), score: Number(e.dataset.score), text: e.textContent })),
    );
  expect(
    scores.map((s) => s.key),
    'a score for every key up to the query',
  ).toEqual(Array.from({ length: query + 1 }, (_, j) => j));
  for (const s of scores) {
    expect(s.score, `score of key ${s.key}`).toBe(api.scores[query * T + s.key]);
    expect(s.text).toBe(signed(api.scores[query * T + s.key], 3));
  }
  for (let j = query + 1; j < T; j++) expect(api.scores[query * T + j], 'later tokens are masked').toBe(-Infinity);
  // the key under the pointer: its products are shown, and the sentence gives its score
  const key = 2;
  const row = panel(page).locator(`.hs-inside-figure rect[data-key="${key}"]`);
  const box = await row.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await expect(panel(page).locator('.hs-inside-figure')).toHaveAttribute('data-key', String(key));
  await expect(panel(page).locator('.hs-inside-sentence')).toContainText(
    `= ${signed(api.scores[query * T + key], 3)}.`,
  );
  await expect(panel(page).locator('.hs-inside-figure [data-tip^="q["][data-tip*="×"]')).toHaveCount(api.headSize);
  await shot(page, 'inside-scores-hover', { animations: 'disabled' });

  // step 4: the weights are the heatmap's row, exactly (the same engine computes both: see
  // tests/js/package/inspect.test.js, which finds inspect's attention bit-identical to run()'s)
  await page.click('#inside .hs-inside-next');
  await expect(page.locator('#inside .hs-inside-figure')).toHaveAttribute('data-step', '4');
  const weights = await panel(page)
    .locator('[data-weight]')
    .evaluateAll((els) =>
      els.map((e) => ({ key: Number(e.dataset.key), weight: Number(e.dataset.weight), text: e.textContent })),
    );
  const heatmapRow = await page.evaluate(
    ([l, h, q]) => {
      const r = window.headscopeDemo.result;
      return Array.from(r.attention(l, h).subarray(q * r.T, (q + 1) * r.T));
    },
    [layer, head, query],
  );
  expect(weights.map((w) => w.key)).toEqual(Array.from({ length: query + 1 }, (_, j) => j));
  for (const w of weights) expect(w.weight, `weight on key ${w.key}`).toBe(heatmapRow[w.key]);
  expect(heatmapRow.slice(query + 1).every((w) => w === 0)).toBe(true);
  // and as the heatmap reads it out: its cell (query, key) says the panel's number
  await page.focus('#detail-view .hs-heatmap');
  const focused = await page.evaluate(() => window.headscopeDemo.state.token);
  expect(focused).toBe(query);
  await page.keyboard.press('ArrowRight'); // the cursor starts on the focused row, key 0; one right: key 1
  await expect(page.locator('#live')).toHaveText(new RegExp(`: ${weights[1].text}$`));
  await expect(page).toHaveURL(/[?&]inside=6&step=4(&|$)/);
});

test("with heads switched off below it, the panel is the model the views show: its softmax step is the heatmap's row", async ({
  page,
  site,
}) => {
  const [layer, head, query] = [1, 1, 6];
  // every head of layer 0 off (they feed layer 1), and the panel's own head too: it stays on in the panel
  const { nHead } = await (async () => {
    await openDemo(page, site.url('index.html'));
    return page.evaluate(() => window.headscopeDemo.model.info.config);
  })();
  const off = [...Array.from({ length: nHead }, (_, h) => [0, h]), [layer, head]];
  await openInside(
    page,
    site.url(
      `index.html?layer=${layer}&head=${head}&inside=${query}&step=4&off=${off.map(([l, h]) => `${l}:${h}`).join(',')}`,
    ),
    { layer, head, query },
  );
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result.ablate.length)).toBe(off.length);
  await expect(page.locator('#inside-note')).toContainText('This head is switched off');
  const weights = await panel(page)
    .locator('[data-weight]')
    .evaluateAll((els) => els.map((e) => Number(e.dataset.weight)));
  const [heatmapRow, allOn] = await page.evaluate(
    async ([l, h, q]) => {
      const d = window.headscopeDemo;
      const r = d.result;
      const on = await d.model.inspectHead(r.text, l, h);
      return [
        Array.from(r.attention(l, h).subarray(q * r.T, q * r.T + q + 1)),
        Array.from(on.attention.subarray(q * on.T, q * on.T + q + 1)),
      ];
    },
    [layer, head, query],
  );
  // the same worker engine and the same switched-off heads: the same floats (tests/js/package/inspect.test.js)
  expect(weights).toEqual(heatmapRow);
  // and heads off below really moved them: every head on gives other weights
  expect(
    allOn.some((w, k) => w !== heatmapRow[k]),
    "layer 0 off changes layer 1's weights",
  ).toBe(true);
  // step 6 shows what the head would write (it is on in the panel), not nothing
  await page.click('#inside .hs-inside-step:nth-child(6)');
  await expect(page.locator('#inside .hs-inside-figure')).toHaveAttribute('data-step', '6');
  await shot(page, 'inside-heads-off', { animations: 'disabled' });
});

test('keyboard only: the steps, Back and Next, the key and the numbers; the URL keeps the step', async ({
  page,
  site,
}) => {
  await openInside(page, site.url('index.html?layer=0&head=1&inside=5'), { layer: 0, head: 1, query: 5 });
  const tabs = page.locator('#inside [role="tab"]');
  const figure = page.locator('#inside .hs-inside-figure');
  // Tab reaches the selected step: the step tabs keep one tab stop (roving tabindex)
  await page.locator('#inside [data-export="inside"][data-format="svg"]').focus();
  await page.keyboard.press('Tab');
  await expect(tabs.nth(0)).toBeFocused();
  await page.keyboard.press('ArrowRight');
  await expect(tabs.nth(1)).toBeFocused();
  await expect(tabs.nth(1)).toHaveAttribute('aria-selected', 'true');
  await expect(figure).toHaveAttribute('data-step', '2');
  await page.keyboard.press('End');
  await expect(figure).toHaveAttribute('data-step', '6');
  await page.keyboard.press('Home');
  await expect(figure).toHaveAttribute('data-step', '1');
  // into the picture: ↓ picks the next key, → walks its numbers, PageDown steps on
  await page.keyboard.press('Tab');
  await expect(figure).toBeFocused();
  await page.keyboard.press('PageDown');
  await expect(figure).toHaveAttribute('data-step', '2');
  const key0 = Number(await figure.getAttribute('data-key'));
  await page.keyboard.press(key0 === 0 ? 'ArrowDown' : 'ArrowUp');
  await expect(figure).not.toHaveAttribute('data-key', String(key0));
  await expect(page.locator('#live')).toHaveText(
    /^key .+: score −?\d+\.\d{3}, weight \d\.\d{4}, value size \d+\.\d\d$/,
  );
  await page.keyboard.press('ArrowRight');
  await expect(page.locator('#live')).toHaveText(/^k\[0\] of .+ = −?\d+\.\d{4}$/);
  await page.keyboard.press('ArrowRight');
  await expect(page.locator('#live')).toHaveText(/^k\[1\] of /);
  await expect(page.locator('#inside .hs-tooltip')).toBeVisible();
  // Back and Next are buttons after the picture
  await page.keyboard.press('Tab');
  await expect(page.locator('#inside .hs-inside-back')).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(page.locator('#inside .hs-inside-next')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(figure).toHaveAttribute('data-step', '3');
  await page.keyboard.press('Space');
  await expect(figure).toHaveAttribute('data-step', '4');
  await expect(page.locator('#inside .hs-inside-sentence')).toHaveText(/^The softmax turns the scores into weights/);
  await expect(page).toHaveURL(/[?&]inside=5&step=4(&|$)/);
  // a link to this step opens on it
  await openInside(page, page.url(), { layer: 0, head: 1, query: 5 });
  await expect(figure).toHaveAttribute('data-step', '4');
});

test('motion: a new step slides in, and not for a reader who asks for reduced motion', async ({ page, site }) => {
  await openInside(page, site.url('index.html?layer=0&head=0&inside=3'), { layer: 0, head: 0, query: 3 });
  const figure = page.locator('#inside .hs-inside-figure');
  await page.click('#inside .hs-inside-next');
  await expect(figure).toHaveClass(/hs-inside-enter/);
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await page.evaluate(() => document.querySelector('#inside .hs-inside-figure').classList.remove('hs-inside-enter'));
  await page.click('#inside .hs-inside-next');
  await expect(figure).toHaveAttribute('data-step', '3');
  await expect(figure).not.toHaveClass(/hs-inside-enter/);
  // nor does the CSS animate anything there
  expect(await figure.evaluate((f) => getComputedStyle(f.querySelector('svg')).animationName)).toBe('none');
});

test('the panel follows the focused token and the head, exports PNG and SVG, and shows each step (screenshots)', async ({
  page,
  site,
}) => {
  await openInside(page, site.url('index.html?layer=1&head=3&inside=9&step=1'), { layer: 1, head: 3, query: 9 });
  // a token picked in the strip is the panel's query; another head in the grid is the panel's head
  await page.click('#tokens [data-index="4"]');
  await expect(panel(page)).toHaveAttribute('data-ready', /^1:3:4:/);
  await page.click('#grid [data-layer="0"][data-head="2"]');
  await expect(panel(page)).toHaveAttribute('data-ready', /^0:2:4:/);
  await page.click('#tokens [data-index="9"]');
  await page.click('#grid [data-layer="1"][data-head="3"]');
  await expect(panel(page)).toHaveAttribute('data-ready', /^1:3:9:/);
  // typing at the end after inspect runs took the worker's cache: the result on screen, patched
  // row by row (run({ reuse })), equals a run of the whole text (exactly: the same engine)
  const typed = `${await page.inputValue('#text')} Then`;
  await page.locator('#text').press('Control+End');
  await page.keyboard.type(' Then');
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result.text)).toBe(typed);
  await expect(panel(page)).toHaveAttribute('data-ready', /^1:3:9:/);
  const agree = await page.evaluate(async () => {
    const d = window.headscopeDemo;
    await d.idle();
    const shown = d.result;
    const fresh = await d.model.run(shown.text, { allLogits: true }); // all logits: always the worker
    let same = shown.T === fresh.T;
    for (let l = 0; l < shown.nLayer && same; l++)
      for (let h = 0; h < shown.nHead && same; h++) {
        const a = shown.attention(l, h);
        const b = fresh.attention(l, h);
        same = a.every((x, i) => x === b[i]);
      }
    return { same, rowsFrom: shown.rowsFrom };
  });
  expect(agree.rowsFrom, 'the result on screen was patched from its first changed row').toBeGreaterThan(0);
  expect(agree.same, 'the patched result equals a fresh run').toBe(true);
  for (let step = 1; step <= 6; step++) {
    if (step > 1) await page.click('#inside .hs-inside-next');
    await expect(page.locator('#inside .hs-inside-figure')).toHaveAttribute('data-step', String(step));
    await shotOf(page, panel(page), `inside-desktop-step${step}`);
  }
  await expect(page.locator('#inside .hs-inside-combine')).toBeVisible();
  await page.click('#inside .hs-inside-combine');
  await expect(page.locator('.panel-combine')).toBeInViewport();
  await shot(page, 'inside-desktop-page', { fullPage: true });
  // exports: the step's picture with its sentence
  const [pngDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="inside"][data-format="png"]'),
  ]);
  const png = await readFile(await pngDl.path());
  await pngDl.saveAs(path.join(ARTIFACTS, 'export-inside.png'));
  expect([...png.subarray(0, 8)], 'PNG signature').toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect(pngDl.suggestedFilename()).toBe('headscope-inside-L1H3-step6.png');
  const [svgDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="inside"][data-format="svg"]'),
  ]);
  const svgText = await readFile(await svgDl.path(), 'utf8');
  await svgDl.saveAs(path.join(ARTIFACTS, 'export-inside.svg'));
  const parsed = await page.evaluate((text) => {
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    return {
      error: doc.getElementsByTagName('parsererror').length,
      texts: [...doc.getElementsByTagName('text')].map((t) => t.textContent).join(' '),
      w: Number(doc.documentElement.getAttribute('width')),
    };
  }, svgText);
  expect(parsed.error).toBe(0);
  expect(parsed.texts).toContain('step 6 of 6: Write');
  expect(parsed.texts).toContain('How the heads combine');
  expect(png.readUInt32BE(16), 'PNG is the SVG at 2x').toBe(Math.round(parsed.w * 2));
});

test("weight × value size: the heatmap and lines say α·‖v W_O‖ per row, from the API's value sizes; badges stay on the weights", async ({
  page,
  site,
}) => {
  const [layer, head, query] = [1, 3, 9];
  await openDemo(page, site.url(`index.html?layer=${layer}&head=${head}&token=${query}`));
  await expect(page.locator('#grid .hs-grid')).toHaveAttribute('data-weighting', 'weight');
  expect(
    await page.evaluate(() => window.headscopeDemo.result.valueNorms),
    'runs by weight ask for no value sizes',
  ).toBeUndefined();
  const runs = await page.evaluate(() => window.headscopeDemo.runs);
  await page.selectOption('#by-select', 'value');
  // picking the mode runs the text again, for its value sizes
  await expect(page.locator('#detail-view svg text').first()).toHaveText(
    `Layer ${layer}, head ${head}: weight × value size`,
  );
  expect(await page.evaluate(() => window.headscopeDemo.runs)).toBe(runs + 1);
  await expect(page.locator('#by-explain')).toHaveText(
    /^Weight × value size: each weight times the size of what that token's value vector writes/,
  );
  await expect(page.locator('#by-explain')).not.toContainText('grid');
  await expect(page.locator('#grid .hs-grid')).toHaveAttribute('data-weighting', 'value');
  await expect(page.locator('#grid-by')).toBeVisible();
  const api = await apiValueSizes(page, layer, head);
  // the page's own run and a fresh API run of the same text: the same engine, so the same floats
  expect(api.sizes).toEqual(
    await page.evaluate(([l, h]) => Array.from(window.headscopeDemo.result.headValueNorms(l, h)), [layer, head]),
  );
  // ...and inspectHead's, which the panel shows (tests/js/package/inspect.test.js: bit for bit)
  expect(api.sizes).toEqual((await apiInside(page, layer, head)).valueNorm);
  const row = await page.evaluate(
    ([l, h, q]) => {
      const r = window.headscopeDemo.result;
      return Array.from(r.attention(l, h).subarray(q * r.T, (q + 1) * r.T));
    },
    [layer, head, query],
  );
  const products = row.slice(0, query + 1).map((w, k) => w * api.sizes[k]);
  const sum = products.reduce((a, b) => a + b, 0);
  // the heatmap's cursor on (query, key 0) reads the share, the weight and the value size
  await page.focus('#detail-view .hs-heatmap');
  await page.keyboard.press('Home');
  const said = await page.locator('#live').textContent();
  const m = /: (\d\.\d{4}) of what the head moves \(weight (\d\.\d{4}) × value size (\d+\.\d\d)\)$/.exec(said);
  expect(m, said).not.toBeNull();
  // the page computes the share in float32 from the same numbers: equal at the 4 decimals shown
  expect(m[1]).toBe((products[0] / sum).toFixed(4));
  expect(m[2]).toBe(row[0].toFixed(4));
  expect(m[3]).toBe(api.sizes[0].toFixed(2));
  await shotOf(page, page.locator('#detail'), 'inside-value-weighted-heatmap');
  // the lines view: the focused token's lines are the shares, per row summing to 1
  await page.click('#tab-lines');
  await page.hover(`#detail-view svg [data-side="q"][data-index="${query}"]`);
  await expect(page.locator('#detail-view svg')).toHaveAttribute('data-focus', `q${query}`);
  const opacities = await page
    .locator('#detail-view svg line')
    .evaluateAll((ls) => ls.map((l) => Number(l.getAttribute('stroke-opacity'))));
  const expected = products
    .map((p) => p / sum)
    .filter((w) => w >= 0.01)
    .map((w) => Math.round(w * 100) / 100);
  expect(opacities.sort()).toEqual(expected.sort()); // scene.js writes opacities to 2 decimals
  await expect(page).toHaveURL(/[?&]by=value(&|$)/);
  // the badges are the package's headBadges on the result's weights, not on what the views draw
  // (the probe roles, induction and verb to subject, come from probe texts: left out, as in lab.test.mjs)
  await expect
    .poll(() => page.evaluate(() => window.headscopeLab.scoresResult === window.headscopeDemo.result))
    .toBe(true);
  const check = await page.evaluate(async () => {
    const { allHeadScores, headBadges } = await import('./analysis.js');
    const s = allHeadScores(window.headscopeDemo.result);
    return [...document.querySelectorAll('#grid [data-layer]')].map((c) => {
      const l = +c.dataset.layer,
        h = +c.dataset.head;
      const shown = (c.dataset.roles || '')
        .split(' ')
        .filter((x) => x && x !== 'induction' && x !== 'verb_to_subject')
        .join(' ');
      return {
        head: `L${l}H${h}`,
        shown,
        expected: headBadges({ ...s[l][h], induction: 0, verb_to_subject: 0 }).join(' '),
      };
    });
  });
  for (const { head: hd, shown, expected: e } of check) expect(shown, hd).toBe(e);
});

test("weight × value size in the grid: every cell is α·‖v_j W_O^h‖ over its row's sum, with heads off and while typing (screenshots)", async ({
  page,
  site,
}) => {
  await openDemo(page, site.url('index.html?by=value'));
  await gridShowsResult(page, 'value');
  const { nLayer, nHead } = await page.evaluate(() => window.headscopeDemo.result);
  const heads = [
    [0, 0],
    [nLayer - 1, nHead - 1],
    [Math.min(1, nLayer - 1), Math.min(2, nHead - 1)],
  ];
  const check = async (label, ablate = []) => {
    const got = await gridAgainstApi(page, heads, ablate);
    for (const g of got) {
      expect(g.sameText, `${label}: ${g.head}, the API ran the text on screen`).toBe(true);
      expect(g.worst, `${label}: ${g.head}, largest relative difference from the API's`).toBeLessThanOrEqual(
        FLOAT32_ROUNDING,
      );
      expect(g.wrongPixels, `${label}: ${g.head}, grid pixels in the share's colour`).toEqual([]);
      expect(g.pixelsRead, `${label}: ${g.head}, pixels read`).toBeGreaterThan(0);
    }
    return got;
  };
  const on = await check('every head on');
  // the shares are not the weights (else this would check nothing new): the default model's heads
  // move at least 0.01 of some row's weight
  for (const g of on) expect(g.moved, `${g.head}: how far the shares are from the weights`).toBeGreaterThan(0.01);
  await shotOf(page, page.locator('.panel-grid'), 'value-grid-desktop');
  await shotOf(page, page.locator('#detail'), 'value-heatmap-desktop');

  // a head of layer 0 switched off: later layers' value sizes are the ablated run's own
  await openDemo(page, site.url('index.html?by=value&off=0:0'));
  await expect.poll(() => page.evaluate(() => JSON.stringify(window.headscopeDemo.result.ablate))).toBe('[[0,0]]');
  await gridShowsResult(page, 'value');
  await expect(page.locator('#by-explain')).toContainText(
    "The value sizes are this run's, with the switched-off head off.",
  );
  const last = [nLayer - 1, nHead - 1];
  const sizesOn = await apiValueSizes(page, ...last);
  const sizesOff = await apiValueSizes(page, ...last, [[0, 0]]);
  expect(sizesOff.sizes, "switching off L0H0 changes the last layer's value sizes").not.toEqual(sizesOn.sizes);
  await check('L0H0 switched off', [[0, 0]]);

  // typing in value mode: each keystroke's result brings its own value sizes
  await openDemo(page, site.url('index.html?by=value'));
  await gridShowsResult(page, 'value');
  await page.focus('#text');
  await page.keyboard.press('Control+End');
  await page.keyboard.type(' The waiter', { delay: 30 });
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result.text)).toMatch(/ The waiter$/);
  await gridShowsResult(page, 'value');
  await check('after typing');

  // on a phone
  await page.setViewportSize({ width: 390, height: 844 });
  await openDemo(page, site.url('index.html?by=value'));
  await gridShowsResult(page, 'value');
  await shotOf(page, page.locator('.panel-grid'), 'value-grid-phone');
  await shotOf(page, page.locator('#detail'), 'value-heatmap-phone');
  // the heatmap's cells stay square and inside the picture when it is wider than the phone's panel
  const fit = await page.evaluate(() => {
    const c = document.querySelector('#detail-view canvas.hs-heatmap-cells').getBoundingClientRect();
    const svg = document.querySelector('#detail-view svg').getBoundingClientRect();
    return { w: c.width, h: c.height, right: c.right, svgRight: svg.right };
  });
  expect(Math.abs(fit.w - fit.h), `cells ${fit.w} x ${fit.h}`).toBeLessThanOrEqual(1);
  expect(fit.right).toBeLessThanOrEqual(fit.svgRight);
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow, 'no horizontal page scroll').toBeLessThanOrEqual(0);
});

test("d_head 64 (GPT-2 small's heads): 64 numbers per vector, the API's scores, on a desktop and on a phone", async ({
  page,
  dh64Site,
}) => {
  test.setTimeout(180_000);
  const url = (q) =>
    `${dh64Site.base}index.html?model=${encodeURIComponent('/dh64/gpt-dh64/')}&text=${encodeURIComponent('The chef, who trained in Paris, cooked the meal quickly.')}&${q}`;
  await openInside(page, url('layer=1&head=11&inside=8&step=1'), { layer: 1, head: 11, query: 8 });
  await expect(page.locator('#tagline')).toContainText(/12 heads/);
  await expect(panel(page).locator('[data-tip^="q["]')).toHaveCount(64);
  await page.click('#inside .hs-inside-next');
  await page.click('#inside .hs-inside-next');
  await expect(panel(page).locator('[data-tip^="q["][data-tip*="×"]')).toHaveCount(64);
  const api = await apiInside(page, 1, 11);
  expect(api.headSize).toBe(64);
  const scores = await panel(page)
    .locator('[data-score]')
    .evaluateAll((els) => els.map((e) => [Number(e.dataset.key), Number(e.dataset.score)]));
  expect(scores).toHaveLength(9);
  for (const [k, s] of scores) expect(s).toBe(api.scores[8 * api.T + k]);
  await shotOf(page, panel(page), 'inside-dh64-desktop-step3');
  await page.click('#inside .hs-inside-next');
  await page.click('#inside .hs-inside-next');
  await page.click('#inside .hs-inside-next');
  await expect(panel(page).locator('[data-tip^="write["]')).toHaveCount(768);
  await shotOf(page, panel(page), 'inside-dh64-desktop-step6');
  // on a phone: the 64 cells fit the panel; the page does not scroll sideways
  await page.setViewportSize({ width: 390, height: 844 });
  await openInside(page, url('layer=1&head=11&inside=8&step=3'), { layer: 1, head: 11, query: 8 });
  const fits = await panel(page).evaluate((p) => {
    const fig = p.querySelector('.hs-inside-figure');
    return {
      scroll: fig.scrollWidth - fig.clientWidth,
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    };
  });
  expect(fits.page, 'no horizontal page scroll').toBeLessThanOrEqual(0);
  expect(fits.scroll, 'the picture fits the panel').toBeLessThanOrEqual(1);
  await panel(page).scrollIntoViewIfNeeded();
  await shot(page, 'inside-dh64-phone-step3');
  await shotOf(page, panel(page), 'inside-dh64-phone-panel');
});

test.describe('on a phone', () => {
  test.use({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });

  test('the panel at phone width: steps by tap, cells by tap, nothing wider than the screen (screenshots)', async ({
    page,
    site,
  }) => {
    await openInside(page, site.url('index.html?layer=1&head=3&inside=9&step=2'), { layer: 1, head: 3, query: 9 });
    await panel(page).scrollIntoViewIfNeeded();
    await shot(page, 'inside-phone-step2', { animations: 'disabled' });
    await page.tap('#inside [role="tab"][data-step="5"]');
    await expect(page.locator('#inside .hs-inside-figure')).toHaveAttribute('data-step', '5');
    const cell = panel(page).locator('[data-tip^="z["]').first();
    await cell.tap();
    await expect(page.locator('#inside .hs-tooltip')).toHaveText(/^z\[0\] = −?\d\.\d{4}$/);
    await expect(page.locator('#inside .hs-tooltip'), "a tap's tooltip stays after the finger lifts").toBeVisible();
    await shotOf(page, panel(page), 'inside-phone-step5');
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow, `no horizontal page scroll (${overflow}px)`).toBeLessThanOrEqual(0);
    await page.tap('#inside [role="tab"][data-step="4"]');
    await shot(page, 'inside-phone-step4', { animations: 'disabled' });
  });
});

test('the component and the iframe mode: view="inside" with its step, and by="value"', async ({ page, site }) => {
  await page.goto(site.url('embed.html?layer=1&head=3&inside=6&step=4'));
  const view = page.locator('headscope-view');
  const figure = view.locator('.hs-inside-figure');
  await expect(figure).toHaveAttribute('data-step', '4', { timeout: 60_000 });
  await expect(figure).toHaveAttribute('data-query', '6');
  await expect(view.locator('[data-weight]')).toHaveCount(7);
  const weights = await view.locator('[data-weight]').evaluateAll((els) => els.map((e) => Number(e.dataset.weight)));
  const row = await view.evaluate((w) => Array.from(w.result.attention(1, 3).subarray(6 * w.result.T, 7 * w.result.T)));
  expect(weights).toEqual(row.slice(0, 7));
  await view.locator('.hs-inside-next').click();
  await expect(view).toHaveAttribute('step', '5');
  const svg = await view.evaluate((w) => w.exportSvg());
  expect(svg).toContain('step 5 of 6: Values');
  await shot(page, 'inside-embed', { animations: 'disabled' });
  // by="value" on a heatmap widget
  await view.evaluate((w) => {
    w.setAttribute('view', 'heatmap');
    w.setAttribute('by', 'value');
  });
  await expect(view.locator('svg text').first()).toHaveText('Layer 1, head 3: weight × value size');
  await expect(view.locator('.hs-caption')).toContainText('Weight × value size:');
  // the grid of every head follows by="value" too
  await view.evaluate((w) => w.setAttribute('view', 'grid'));
  await expect(view.locator('.hs-grid')).toHaveAttribute('data-weighting', 'value');
  await expect(view.locator('.hs-caption')).toContainText('Weight × value size:');
  await view.evaluate((w) => w.setAttribute('by', 'weight'));
  await expect(view.locator('.hs-grid')).toHaveAttribute('data-weighting', 'weight');
  await expect(view.locator('.hs-caption')).not.toContainText('Weight × value size:');
});
