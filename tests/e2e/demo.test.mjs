// End-to-end tests of the demo page, the web component, the iframe mode and the strict-CSP page,
// in Debian's headless Chromium (@playwright/test). Run with tests/e2e/run.sh.
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  test,
  expect,
  shot,
  demoReady,
  demoIdle,
  renders,
  ARTIFACTS,
  SITE,
  usingDefaultModel,
  openDemo,
} from './fixtures.mjs';
import { openingHead, verbSubjectHeads } from '../../web/demo/common/models.js';

test.beforeAll(() => {
  console.log(`# model: ${usingDefaultModel ? 'headscope-base (default)' : 'fixture odd-hs12'}`);
});

/** Waits until every widget matching `selector` has rendered a result. */
async function widgetsReady(page, selector = 'headscope-view') {
  await expect(page.locator(selector).first()).toBeAttached();
  await expect
    .poll(() => page.locator(selector).evaluateAll((all) => all.every((w) => Number(w.dataset.tokens) > 0)), {
      timeout: 60_000,
    })
    .toBe(true);
}

/** The demo's latest result text. */
const resultText = (page) => page.evaluate(() => window.headscopeDemo.result?.text);

/** The token strip's text, with the visible-space marks back to spaces. */
const stripText = async (page) => (await page.locator('#tokens .token').allTextContents()).join('').replace(/·/g, ' ');

test('page loads the model with a progress bar and shows the grid of all heads', async ({ page, site }) => {
  // every panel on screen at once: panels off screen are drawn only when they come into view
  await page.setViewportSize({ width: 1280, height: 3200 });
  await page.goto(site.url('index.html'));
  await expect(page.locator('#progress')).toHaveCount(1);
  await demoReady(page);
  const { nLayer, nHead, T } = await page.evaluate(() => {
    const r = window.headscopeDemo.result;
    return { nLayer: r.nLayer, nHead: r.nHead, T: r.T };
  });
  await expect(page.locator('#grid [role="gridcell"]')).toHaveCount(nLayer * nHead);
  // the cells' heatmaps are painted on one canvas under them (one compositor layer, not L x H)
  await expect(page.locator('#grid canvas')).toHaveCount(1);
  await expect(page.locator('#tokens .token')).toHaveCount(T);
  await expect(page.locator('#text')).toHaveValue('The chef, who trained in Paris, cooked the meal quickly.');
  // every cell's part of the grid canvas has content (not one flat colour)
  const blankCells = () =>
    page.evaluate(() => {
      const canvas = document.querySelector('#grid canvas');
      const box = canvas.getBoundingClientRect();
      const ctx = canvas.getContext('2d');
      return [...document.querySelectorAll('#grid [role="gridcell"]')]
        .filter((cell) => {
          const r = cell.getBoundingClientRect();
          const x = Math.round(((r.left - box.left + 3) * canvas.width) / box.width);
          const y = Math.round(((r.top - box.top + 3) * canvas.height) / box.height);
          const w = Math.round(((r.width - 6) * canvas.width) / box.width);
          const h = Math.round(((r.height - 6) * canvas.height) / box.height);
          const d = ctx.getImageData(x, y, w, h).data;
          for (let i = 4; i < d.length; i += 4)
            if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) return false;
          return true;
        })
        .map((cell) => `L${cell.dataset.layer}H${cell.dataset.head}`);
    });
  await expect.poll(blankCells, { message: 'blank grid cells' }).toEqual([]);
  await expect(page.locator('#combine svg rect.hs-bar'), 'one bar per head').toHaveCount(nHead);
  await expect.poll(() => page.locator('#topk li').count(), { message: 'top-k predictions' }).toBeGreaterThanOrEqual(5);
  await shot(page, 'demo-light', { fullPage: true });
});

test("the page opens on the head its model card finds most telling in the article's sentence", async ({
  page,
  site,
}) => {
  test.skip(!usingDefaultModel, 'needs the default model and its card');
  await openDemo(page, site.url('index.html'));
  // the rule is the page's own (web/demo/common/models.js, unit-tested in tests/js/unit/opening-head.test.js),
  // applied to the card the site serves
  const card = JSON.parse(readFileSync(path.join(SITE, 'models/headscope-base/card.json'), 'utf8'));
  // a new-format card names a verb-to-subject head; its link on this sentence is read from the
  // page's own result (the engine's attention from the query token to the key tokens)
  const v2sHeads = verbSubjectHeads(card);
  const link = card.chef_sentence?.links?.['cooked->chef'];
  // every verb-to-subject head's weight from "cooked" on "chef", read from the page's own result
  const live = link
    ? await page.evaluate(
        ({ heads, q, keys }) => {
          const r = window.headscopeDemo.result;
          return Object.fromEntries(
            heads.map(({ layer, head }) => {
              const a = r.attention(layer, head);
              return [`${layer}:${head}`, keys.reduce((s, k) => s + a[q * r.T + k], 0)];
            }),
          );
        },
        { heads: v2sHeads, q: link.query_token, keys: link.key_tokens },
      )
    : {};
  const want = openingHead(card, { linkWeight: (l, h) => live[`${l}:${h}`] });
  console.log(
    `# opening head: L${want?.layer}H${want?.head} at token ${want?.token}${want?.role ? ` (verb to subject, ${want.ratio.toFixed(2)}x uniform)` : ''}; verb-to-subject heads on chef here: ${v2sHeads.map((v) => `L${v.layer}H${v.head} ${live[`${v.layer}:${v.head}`]?.toFixed(3)}`).join(', ') || 'none'}`,
  );
  expect(want, "the default model's card names an opening head").not.toBeNull();
  if (want.role === 'verb_to_subject') {
    // on the verb-to-subject head, focused on "cooked", and clearly above chance
    expect(card.chef_sentence.tokens[want.token].trim()).toBe('cooked');
    expect(want.ratio).toBeGreaterThanOrEqual(1.5);
  }
  const got = await page.evaluate(() => {
    const s = window.headscopeDemo.state;
    return { layer: s.layer, head: s.head, token: s.token };
  });
  expect(got).toEqual({ layer: want.layer, head: want.head, token: want.token });
  // the detail view says so in words
  await expect(page.locator('#detail-caption')).toHaveText(new RegExp(`^Layer ${want.layer}, head ${want.head}: `));
});

test('typing re-runs the model and updates tokens, heatmaps and the grid', async ({ page, site }) => {
  await openDemo(page, site.url('index.html'));
  const gridPixels = () => page.evaluate(() => document.querySelector('#grid canvas').toDataURL());
  const before = { tokens: await page.locator('#tokens .token').allTextContents(), grid: await gridPixels() };
  await page.fill('#text', '');
  await page.locator('#text').pressSequentially('Hello there', { delay: 15 });
  await expect.poll(() => resultText(page)).toBe('Hello there');
  await expect.poll(() => stripText(page)).toBe('Hello there');
  expect(await page.locator('#tokens .token').allTextContents()).not.toEqual(before.tokens);
  await expect.poll(gridPixels, { message: 'grid heatmaps changed' }).not.toBe(before.grid);
  const T = await page.locator('#tokens .token').count();
  await expect(page.locator('#detail-view svg text[data-row]'), 'heatmap has a row label per token').toHaveCount(T);
  // fast typing: at most one run in flight, and the last text always runs and stays
  await page.locator('#text').pressSequentially(' and a quick brown fox', { delay: 0 });
  await expect.poll(() => resultText(page)).toBe('Hello there and a quick brown fox');
  await demoIdle(page);
  expect(await resultText(page)).toBe('Hello there and a quick brown fox');
  // a long text is cut to the context, and the page says so
  await page.fill('#text', 'word '.repeat(400));
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.result.droppedTokens)).toBeGreaterThan(0);
  await expect(page.locator('#notice')).toBeVisible();
  await expect(page.locator('#notice')).toContainText('tokens were cut');
  await shot(page, 'demo-truncated');
});

test.describe('without the stylesheets', () => {
  test.use({ viewport: { width: 1280, height: 720 } });

  test('the grid canvas never resizes the page it is measured from (no resize loop)', async ({
    page,
    site,
    problems,
  }) => {
    // The grid's heatmaps are painted on one canvas sized from the grid's box. If that canvas took part
    // in layout, sizing it could change the grid (or the page's scrollbars) and so size it again, every
    // frame. Without the pages' CSS the canvas's own inline layout must still keep it out of the flow.
    await page.route('**/*.css', (r) => r.abort());
    problems.allow(/^console error: Failed to load resource: net::ERR_FAILED$/);
    await page.addInitScript(() => {
      const RO = window.ResizeObserver;
      window.__resizeCallbacks = 0;
      window.ResizeObserver = class extends RO {
        constructor(cb) {
          super((...a) => {
            window.__resizeCallbacks++;
            cb(...a);
          });
        }
      };
    });
    // The number of resize callbacks once they stop: ResizeObserver delivers once per frame, so
    // 10 frames without a callback means layout has settled. A resize loop never goes quiet: after
    // 300 frames or 10 s the count so far is returned (and fails the check below).
    const settledCallbacks = () =>
      page.evaluate(
        () =>
          new Promise((resolve) => {
            let last = window.__resizeCallbacks;
            let quiet = 0;
            let frames = 0;
            const t0 = performance.now();
            const tick = () => {
              const now = window.__resizeCallbacks;
              quiet = now === last ? quiet + 1 : 0;
              last = now;
              if (quiet >= 10 || ++frames >= 300 || performance.now() - t0 > 10_000) resolve(now);
              else requestAnimationFrame(tick);
            };
            requestAnimationFrame(tick);
          }),
      );
    await openDemo(page, site.url('index.html'));
    // the canvas's layer is out of the flow, by its own inline style
    expect(await page.locator('#grid canvas').evaluate((c) => getComputedStyle(c.parentElement).position)).toBe(
      'absolute',
    );
    const atStart = await settledCallbacks();
    const n = await renders(page);
    const typed = ' and then the waiter, who was new, dropped the plates';
    await page.focus('#text');
    await page.keyboard.press('End');
    await page.keyboard.type(typed, { delay: 20 });
    await demoReady(page, n);
    await demoIdle(page);
    const callbacks = (await settledCallbacks()) - atStart;
    // Typing may wrap the text box or the token strip and so resize things now and then (the count is
    // over every ResizeObserver on the page: 11 here without CSS), never on every frame (the loop this
    // guards against gave about 4 per keystroke): fewer callbacks than typed characters.
    expect(callbacks, `${callbacks} resize callbacks while typing ${typed.length} characters`).toBeLessThan(
      typed.length,
    );
  });
});

// What every view of the demo shows, read from the DOM, next to what the latest result says it
// should show. The views are updated in place while typing (no rebuild), so this checks that no view
// keeps stale parts: labels, pixels, bars, predictions and the screen-reader text. Token labels and
// the result's layout come from the page's own modules (tokenLabel, contributionIndex).
async function viewsAgreeWithResult(page) {
  return page.evaluate(async () => {
    const { tokenLabel: label } = await import('./headscope-view.js');
    const { contributionIndex } = await import('./result.js');
    const r = window.headscopeDemo.result;
    const st = window.headscopeDemo.state;
    const q = Number.isInteger(st.token) && st.token < r.T ? st.token : r.T - 1;
    const problems = [];
    const tokens = [...document.querySelectorAll('#tokens .token')];
    if (tokens.length !== r.T) problems.push(`token strip: ${tokens.length} buttons for ${r.T} tokens`);
    tokens.forEach((b, i) => {
      if (b.textContent !== label(r.tokens[i].text, 24)) problems.push(`token ${i}: '${b.textContent}'`);
      if (b.dataset.index !== String(i)) problems.push(`token ${i}: data-index ${b.dataset.index}`);
      if (!b.getAttribute('aria-label').startsWith(`token ${i}: `))
        problems.push(`token ${i}: aria-label ${b.getAttribute('aria-label')}`);
      if ((b.getAttribute('aria-pressed') === 'true') !== (i === q)) problems.push(`token ${i}: aria-pressed`);
    });
    // The grid canvas: every cell's tile shows its head's T x T cells, read at the centre of each
    // (query, key) block. The selected head's blocks must have the detail heatmap's exact colours
    // (same colour table) and, in every head, keys after the query the faint colour. Blocks of fewer
    // than 3 device pixels are not read: the tile edges measured here from CSS may be off by one pixel.
    const gridCanvas = document.querySelectorAll('#grid canvas');
    if (gridCanvas.length !== 1) problems.push(`${gridCanvas.length} grid canvases`);
    const gc = gridCanvas[0];
    const gbox = gc.getBoundingClientRect();
    const gpx = gc.getContext('2d').getImageData(0, 0, gc.width, gc.height).data;
    const gridAt = (x, y) => [...gpx.slice((y * gc.width + x) * 4, (y * gc.width + x) * 4 + 4)].join(',');
    const heat = st.view === 'heatmap' ? document.querySelector('#detail-view canvas.hs-heatmap-cells') : null;
    const hpx = heat && r.T > 0 ? heat.getContext('2d').getImageData(0, 0, heat.width, heat.height).data : null;
    const heatAt = (k, q) => [...hpx.slice((q * heat.width + k) * 4, (q * heat.width + k) * 4 + 4)].join(',');
    let faint = null;
    if (hpx && r.T > 1) faint = heatAt(r.T - 1, 0);
    for (const cell of document.querySelectorAll('#grid [role="gridcell"]')) {
      const cr = cell.getBoundingClientRect();
      const sx = gc.width / gbox.width;
      const x0 = (cr.left - gbox.left + 3) * sx;
      const y0 = (cr.top - gbox.top + 3) * sx;
      const bw = ((cr.width - 6) * sx) / r.T;
      const bh = ((cr.height - 6) * sx) / r.T;
      if (r.T === 0 || bw < 3 || bh < 3) continue;
      const at = (q, k) => gridAt(Math.floor(x0 + (k + 0.5) * bw), Math.floor(y0 + (q + 0.5) * bh));
      const selected = cell.dataset.layer === String(st.layer) && cell.dataset.head === String(st.head);
      for (let q = 0; q < r.T; q++) {
        for (let k = 0; k < r.T; k++) {
          const got = at(q, k);
          if (selected && hpx && got !== heatAt(k, q)) {
            problems.push(`grid cell L${st.layer}H${st.head} (${q}, ${k}): ${got} vs heatmap ${heatAt(k, q)}`);
            q = r.T;
            break;
          }
          if (k > q && faint && got !== faint) {
            problems.push(`grid cell L${cell.dataset.layer}H${cell.dataset.head} (${q}, ${k}) not faint: ${got}`);
            q = r.T;
            break;
          }
        }
      }
    }
    const sel = [...document.querySelectorAll('#grid [aria-selected="true"]')];
    if (sel.length !== 1 || sel[0].dataset.layer !== String(st.layer) || sel[0].dataset.head !== String(st.head))
      problems.push('grid selection');
    const caption = document.getElementById('detail-caption').textContent;
    if (!caption.startsWith(`Layer ${st.layer}, head ${st.head}: `)) problems.push(`caption: ${caption}`);
    const cellTitle = document.querySelector(`#grid [data-layer="${st.layer}"][data-head="${st.head}"]`).title;
    if (!cellTitle.startsWith(caption)) problems.push(`grid cell title '${cellTitle}' vs caption '${caption}'`);
    if (st.view === 'heatmap') {
      const rows = [...document.querySelectorAll('#detail-view svg text[data-row]')];
      if (rows.length !== r.T) problems.push(`heatmap: ${rows.length} row labels for ${r.T} tokens`);
      rows.forEach((t, i) => {
        if (t.textContent !== label(r.tokens[i].text, 14) || t.dataset.row !== String(i))
          problems.push(`heatmap row ${i}: '${t.textContent}'`);
      });
      const cv = document.querySelector('#detail-view canvas.hs-heatmap-cells');
      if (cv.width !== r.T) problems.push(`heatmap canvas ${cv.width}`);
      const title = document.querySelector('#detail-view svg text').textContent;
      if (title !== `Layer ${st.layer}, head ${st.head}: attention weights`) problems.push(`heatmap title ${title}`);
      if (document.querySelectorAll('#detail-view svg > title').length !== 1) problems.push('heatmap: one <title>');
    } else {
      const left = [...document.querySelectorAll('#detail-view svg [data-side="q"]')];
      if (left.length !== r.T) problems.push(`lines: ${left.length} tokens for ${r.T}`);
      const texts = [...document.querySelectorAll('#detail-view svg text')].map((t) => t.textContent);
      for (const t of r.tokens) if (!texts.includes(label(t.text, 16))) problems.push(`lines: no label '${t.text}'`);
    }
    const bars = document.querySelectorAll('#combine svg rect.hs-bar');
    if (bars.length !== r.nHead) problems.push(`combine: ${bars.length} bars`);
    const combineTitle = document.querySelector('#combine svg text').textContent;
    if (!combineTitle.startsWith(`Layer ${st.layer}, token ${q}: `)) problems.push(`combine title ${combineTitle}`);
    const norms = [...document.querySelectorAll('#combine svg text')]
      .map((t) => t.textContent)
      .filter((s) => /^\d+\.\d\d$/.test(s));
    const want = Array.from({ length: r.nHead }, (_, h) =>
      r.contributionNorms[contributionIndex(r, st.layer, h, q)].toFixed(2),
    );
    if (norms.join(' ') !== want.join(' ')) problems.push(`combine norms ${norms} vs ${want}`);
    const topk = [...document.querySelectorAll('#topk li .hs-topk-token')].map((x) => x.textContent);
    const wantTop = r.topNext.map((p) => label(p.token, 20));
    if (topk.join('|') !== wantTop.join('|')) problems.push(`top-k ${topk} vs ${wantTop}`);
    // each bar shows its probability: the scale the page set (the drawn one may be mid-transition);
    // setFill() writes 4 decimals of a probability rounded to 1e-4, so 1e-4 apart at most
    const fills = [...document.querySelectorAll('#topk li .hs-topk-fill')].map((f) =>
      Number(/^scaleX\(([0-9.]+)\)$/.exec(f.style.transform)?.[1]),
    );
    r.topNext.forEach((p, i) => {
      if (!(Math.abs(fills[i] - p.prob) <= 1e-4)) problems.push(`top-k bar ${i}: ${fills[i]} for ${p.prob}`);
    });
    if (!document.getElementById('stats').textContent.startsWith(`${r.T} tokens`)) problems.push('stats');
    return problems;
  });
}

test('while typing, every view keeps showing the latest result (tokens, grid, detail, combine, predictions)', async ({
  page,
  site,
}) => {
  // every panel on screen at once: panels off screen are drawn only when they come into view
  await page.setViewportSize({ width: 1280, height: 3200 });
  await openDemo(page, site.url('index.html'));
  const agree = (message) => expect.poll(() => viewsAgreeWithResult(page), { message }).toEqual([]);
  await agree('after loading');
  const snapshot = () =>
    page.evaluate(() => ({
      combine: document.querySelector('#combine svg').outerHTML,
      topk: document.getElementById('topk').textContent,
      heatmap: document.querySelector('#detail-view canvas.hs-heatmap-cells').toDataURL(),
      caption: document.getElementById('detail-caption').textContent,
    }));
  // shorter, then longer text: views shrink and grow in place
  await page.fill('#text', 'A');
  await expect.poll(() => resultText(page)).toBe('A');
  await agree('one token');
  const short = await snapshot();
  await page.locator('#text').pressSequentially(' cat sat on the mat, and the dog <b>barked</b>', { delay: 10 });
  await expect.poll(() => resultText(page)).toBe('A cat sat on the mat, and the dog <b>barked</b>');
  await agree('after typing');
  const long = await snapshot();
  for (const k of Object.keys(short)) expect(long[k], `${k} changed`).not.toBe(short[k]);
  await expect(page.locator('#tokens b, #detail-view b, #combine b'), 'typed markup stays text').toHaveCount(0);
  // a token focused, another head, then the lines view, and typing again
  await page.click('#tokens [data-index="2"]');
  await page.click('#grid [data-layer="1"][data-head="2"]');
  await expect(page.locator('#detail-caption')).toHaveText(/^Layer 1, head 2:/);
  await agree('token 2, layer 1 head 2');
  await page.click('#tab-lines');
  await expect(page.locator('#detail-view svg [data-side="q"]').first()).toBeAttached();
  await page.focus('#text');
  await page.keyboard.press('End');
  await page.locator('#text').pressSequentially(' again', { delay: 10 });
  await expect.poll(() => resultText(page)).toMatch(/ again$/);
  await agree('lines view after typing');
  // deleting text: views shrink
  for (let i = 0; i < 12; i++) await page.keyboard.press('Backspace');
  const typedText = await page.inputValue('#text');
  expect(typedText).not.toMatch(/ again$/);
  await expect.poll(() => resultText(page)).toBe(typedText);
  await agree('after deleting');
});

test('clicking a head opens its detail; arrow keys move across the grid; screen-reader text follows', async ({
  page,
  site,
}) => {
  await openDemo(page, site.url('index.html'));
  const { nLayer, nHead, T } = await page.evaluate(() => window.headscopeDemo.result);
  const l = nLayer - 1;
  const h = Math.min(2, nHead - 1);
  const cell = (layer, head) => page.locator(`#grid [data-layer="${layer}"][data-head="${head}"]`);
  await cell(l, h).click();
  await expect(page.locator('#detail-caption')).toHaveText(new RegExp(`^Layer ${l}, head ${h}:`));
  await expect(cell(l, h)).toHaveAttribute('aria-selected', 'true');
  await expect(page.locator('#live')).toHaveText(
    new RegExp(
      `^Layer ${l}, head ${h}: ('.+'|a space|a line break) attends most to ('.+'|itself|a space|a line break) \\(\\d\\.\\d\\d\\)$`,
    ),
  );
  await expect(page.locator('#detail-view svg text').first()).toHaveText(`Layer ${l}, head ${h}: attention weights`);
  // keyboard: the focused cell moves with the arrows
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('ArrowLeft');
  await expect(cell(l - 1, h - 1)).toBeFocused();
  await expect(page.locator('#live')).toHaveText(new RegExp(`^Layer ${l - 1}, head ${h - 1}:`));
  await page.keyboard.press('Enter');
  // hovering a heatmap cell shows the exact weight
  const cells = page.locator('#detail-view canvas.hs-heatmap-cells');
  await cells.scrollIntoViewIfNeeded(); // clicking the grid's last row may have scrolled it away
  const box = await cells.boundingBox();
  await page.mouse.move(box.x + (box.width * 1.5) / T, box.y + (box.height * 2.5) / T); // query 2, key 1
  const tip = page.locator('#detail-scroll .hs-tooltip'); // the heatmap's ("Inside this head" has its own)
  await expect(tip).toBeVisible();
  await expect(tip).toHaveText(/('.*'|a space|a line break) → ('.*'|a space|a line break): \d\.\d{4}/);
  await shot(page, 'demo-head-detail');
  // keyboard on the heatmap: arrows move a cursor cell and read its weight
  await page.mouse.move(0, 0);
  await page.focus('#detail-view .hs-heatmap');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Home');
  await expect(page.locator('#live')).toHaveText(/ → .*: \d\.\d{4}$/);
  await expect(tip).toBeVisible();
});

test('lines view responds to hover and shows several heads in distinct colours', async ({ page, site }) => {
  await openDemo(page, site.url('index.html'));
  await page.click('#tab-lines');
  const svg = page.locator('#detail-view svg');
  await expect(svg.locator('[data-side="q"]').first()).toBeAttached();
  const allLines = await svg.locator('line').count();
  expect(allLines).toBeGreaterThan(0);
  const T = await page.evaluate(() => window.headscopeDemo.result.T);
  const q = Math.min(8, T - 1);
  await page.hover(`#detail-view svg [data-side="q"][data-index="${q}"]`);
  await expect(svg).toHaveAttribute('data-focus', `q${q}`);
  const focusedLines = await svg.locator('line').count();
  expect(focusedLines, `hover isolates one token's lines (${focusedLines} of ${allLines})`).toBeGreaterThan(0);
  expect(focusedLines).toBeLessThan(allLines);
  expect(focusedLines).toBeLessThanOrEqual(q + 1);
  await shot(page, 'demo-lines-hover');
  // what attends to a token
  await page.hover('#detail-view svg [data-side="k"][data-index="0"]');
  await expect(svg).toHaveAttribute('data-focus', 'k0');
  // several heads at once
  await page.mouse.move(0, 0);
  const chips = page.locator('#head-chips .head-chip');
  const primary = await page.evaluate(() => window.headscopeDemo.state.head);
  const others = [0, 1, 2, 3].filter((h) => h !== primary).slice(0, 2);
  await chips.nth(others[0]).click();
  await chips.nth(others[1]).click();
  await expect.poll(() => page.evaluate(() => window.headscopeDemo.state.heads.length)).toBe(3);
  const colours = () =>
    svg.locator('line').evaluateAll((lines) => [...new Set(lines.map((l) => l.getAttribute('stroke')))]);
  await expect.poll(colours, { message: 'three heads in three colours' }).toHaveLength(3);
  await shot(page, 'demo-lines-3-heads');
});

test('export produces a valid PNG and a parseable SVG', async ({ page, site }) => {
  await openDemo(page, site.url('index.html'));
  for (const which of ['detail', 'grid']) {
    const [pngDl] = await Promise.all([
      page.waitForEvent('download'),
      page.click(`[data-export="${which}"][data-format="png"]`),
    ]);
    const png = await readFile(await pngDl.path());
    await pngDl.saveAs(path.join(ARTIFACTS, `export-${which}.png`));
    expect([...png.subarray(0, 8)], 'PNG signature').toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(png.toString('latin1', 12, 16)).toBe('IHDR');
    const width = png.readUInt32BE(16);
    const height = png.readUInt32BE(20);
    const [svgDl] = await Promise.all([
      page.waitForEvent('download'),
      page.click(`[data-export="${which}"][data-format="svg"]`),
    ]);
    const svgText = await readFile(await svgDl.path(), 'utf8');
    await svgDl.saveAs(path.join(ARTIFACTS, `export-${which}.svg`));
    const parsed = await page.evaluate((text) => {
      const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
      const root = doc.documentElement;
      return {
        error: doc.getElementsByTagName('parsererror').length,
        name: root.localName,
        ns: root.namespaceURI,
        w: Number(root.getAttribute('width')),
        h: Number(root.getAttribute('height')),
        texts: doc.getElementsByTagName('text').length,
      };
    }, svgText);
    expect(parsed.error, 'SVG parses').toBe(0);
    expect(parsed.name).toBe('svg');
    expect(parsed.ns).toBe('http://www.w3.org/2000/svg');
    expect(parsed.texts, 'SVG has text labels').toBeGreaterThan(3);
    expect(width, 'PNG is the SVG at 2x').toBe(Math.round(parsed.w * 2));
    expect(height).toBe(Math.round(parsed.h * 2));
  }
});

test('hostile text renders inertly (no dialog, no <img>)', async ({ page, site }) => {
  // a dialog or an error would be reported by the page fixture
  const hostile = '<img src=x onerror=alert(1)>';
  await openDemo(page, site.url('index.html'));
  await page.fill('#text', hostile);
  await expect.poll(() => resultText(page)).toBe(hostile);
  await expect.poll(() => stripText(page), { message: 'tokens are shown as text' }).toBe(hostile);
  await page.click('#tab-lines');
  await expect(page.locator('#detail-view svg [data-side="q"]')).toHaveCount(
    await page.evaluate(() => window.headscopeDemo.result.T),
  );
  await expect(page.locator('img, image'), 'no image element was created').toHaveCount(0);
  const labels = await page.locator('#detail-view svg text').allTextContents();
  expect(
    labels.some((t) => t.includes('<')) && labels.some((t) => t.includes('>')),
    'token labels are text nodes',
  ).toBe(true);
  await shot(page, 'demo-hostile');
  // the web component and the iframe state too (locators pierce the open shadow root)
  await page.goto(site.url(`embed.html?text=${encodeURIComponent(hostile)}&view=lines`));
  await widgetsReady(page);
  await expect(page.locator('headscope-view svg [data-side="q"]').first()).toBeAttached();
  await expect(page.locator('img, image')).toHaveCount(0);
});

test('web component: several widgets on one page share one model load', async ({ page, site }) => {
  const weights = [];
  page.on('request', (r) => {
    if (r.url().endsWith('model.safetensors')) weights.push(r.url());
  });
  await page.goto(site.url('component.html'));
  await widgetsReady(page);
  expect(weights, 'one weights download for three widgets').toHaveLength(1);
  await expect(page.locator('headscope-view')).toHaveCount(3);
  // lines widget: layer 1 head 3 clamped to the model's size; caption in the shadow DOM
  await expect(page.locator('#w-heatmap .hs-caption')).toHaveText(
    /^Layer \d+, head \d+: .+ attends most to .+ \(\d\.\d\d\)$/,
  );
  await expect(page.locator('#w-lines svg line').first()).toBeAttached();
  expect(await page.locator('#w-heatmap svg rect').count()).toBeGreaterThan(10);
  await expect(page.locator('#w-grid canvas'), 'one canvas holds all the cells').toHaveCount(1);
  expect(await page.locator('#w-grid [role="gridcell"]').count()).toBeGreaterThanOrEqual(4);
  // attributes drive the widget
  await page.locator('#w-heatmap').evaluate((w) => w.setAttribute('head', '0'));
  await expect(page.locator('#w-heatmap .hs-caption')).toContainText('head 0:');
  // editable widget: typing re-runs
  const before = await page.locator('#w-grid').evaluate((w) => w.result.T);
  await page.locator('#w-grid textarea').fill('Short.');
  await expect.poll(() => page.locator('#w-grid').evaluate((w) => w.result.T)).not.toBe(before);
  // hover in the lines widget
  await page.hover('#w-lines svg [data-side="q"][data-index="3"]');
  await expect(page.locator('#w-lines svg')).toHaveAttribute('data-focus', 'q3');
  // component export API
  const svg = await page.locator('#w-lines').evaluate((w) => w.exportSvg());
  expect(svg).toMatch(/^<\?xml[^]*<svg[^]*<\/svg>$/);
  const pngSize = await page.locator('#w-heatmap').evaluate(async (w) => (await w.exportPng()).size);
  expect(pngSize).toBeGreaterThan(1000);
  await shot(page, 'component-page', { fullPage: true });
});

test('iframe mode: the URL holds the state; "copy embed code" makes a working snippet', async ({
  page,
  context,
  site,
}) => {
  await openDemo(page, site.url('index.html?layer=1&head=2&view=lines'));
  await expect(page.locator('#tab-lines'), 'view from the URL').toHaveAttribute('aria-selected', 'true');
  await expect(page.locator('#detail-caption')).toHaveText(/^Layer 1, head 2:/);
  await page.fill('#text', 'The cat sat on the mat.');
  await expect.poll(() => resultText(page)).toBe('The cat sat on the mat.');
  await page.click('#embed-button');
  await expect(page.locator('#embed-code')).toHaveValue(
    /^<iframe src="[^"]+embed\.html\?[^"]+" width="\d+" height="\d+" title="[^"]+"/,
  );
  const snippet = await page.inputValue('#embed-code');
  const src = /src="([^"]+)"/.exec(snippet)[1].replace(/&amp;/g, '&');
  const q = new URL(src).searchParams;
  expect(q.get('text')).toBe('The cat sat on the mat.');
  expect(q.get('layer')).toBe('1');
  expect(q.get('head')).toBe('2');
  expect(q.get('view')).toBe('lines');
  // a plain article page holding only the snippet (a page of the same context: its problems are watched too)
  const host = await context.newPage();
  await host.setContent(`<!doctype html><html><body><h1>An article</h1>${snippet}</body></html>`);
  const frame = host.frameLocator('iframe');
  await expect(frame.locator('headscope-view svg [data-side="q"]').first()).toBeAttached({ timeout: 60_000 });
  await expect(frame.locator('headscope-view svg line').first()).toBeAttached();
  await expect(frame.locator('headscope-view .hs-caption')).toHaveText(/^Layer 1, head 2: .+ attends most to/);
  await shot(host, 'iframe-embed');
  // the embed page alone, heatmap state
  await page.goto(site.url('embed.html?text=Hello%20world%2C%20hello%20again.&layer=0&head=1&view=heatmap&theme=dark'));
  await widgetsReady(page);
  await expect(page.locator('headscope-view .hs-caption')).toHaveText(/^Layer 0, head 1:/);
  await shot(page, 'embed-heatmap-dark');
});

test('strict CSP page works with no violations', async ({ page, site }) => {
  // CSP violations would be reported by the page fixture
  const response = await page.goto(site.url('csp.html'));
  expect(response.headers()['content-security-policy']).toMatch(/script-src 'self' 'wasm-unsafe-eval'/);
  await widgetsReady(page);
  await page.locator('#csp-heatmap textarea').fill('Typing under a strict policy.');
  await expect
    .poll(() => page.locator('#csp-heatmap').evaluate((w) => w.result.text))
    .toBe('Typing under a strict policy.');
  await expect(page.locator('#csp-lines svg line').first()).toBeAttached();
  await shot(page, 'csp-page', { fullPage: true });
});

test.describe('on a phone', () => {
  test.use({
    viewport: { width: 390, height: 844 },
    hasTouch: true,
    isMobile: true,
    colorScheme: 'dark',
    reducedMotion: 'reduce',
  });

  test('phone width with touch, dark theme and reduced motion', async ({ page, site }) => {
    await openDemo(page, site.url('index.html'));
    await shot(page, 'phone-dark-top');
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow, `no horizontal page scroll at phone width (${overflow}px)`).toBeLessThanOrEqual(0);
    expect(
      await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--hs-scheme').trim()),
    ).toBe('dark');
    await page.tap('#grid [data-layer="1"][data-head="1"]');
    await expect(page.locator('#detail-caption')).toHaveText(/^Layer 1, head 1:/);
    await page.click('#tab-lines');
    await page.tap('#detail-view svg [data-side="q"][data-index="4"]');
    await expect(page.locator('#detail-view svg')).toHaveAttribute('data-focus', 'q4');
    await shot(page, 'phone-dark-full', { fullPage: true });
    await page.locator('#detail').evaluate((e) => e.scrollIntoView());
    await shot(page, 'phone-dark-detail');
    await page.locator('.panel-combine').evaluate((e) => e.scrollIntoView());
    await shot(page, 'phone-dark-combine');
    // theme toggle back to light
    await page.click('#theme-toggle');
    await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
    await expect
      .poll(() =>
        page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--hs-scheme').trim()),
      )
      .toBe('light');
    await shot(page, 'phone-light-toggled');
  });
});

test("a desktop page narrowed to a phone's width lays itself out again: no sideways page scroll", async ({
  page,
  site,
}) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await openDemo(page, site.url('index.html'));
  await demoIdle(page);
  // what a rotated tablet or a narrowed window does: the same page, now 390 px wide; a picture wider
  // than its panel scrolls inside the panel, never the page
  await page.setViewportSize({ width: 390, height: 844 });
  const overflow = () =>
    page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await expect.poll(overflow, { message: 'no horizontal page scroll after narrowing' }).toBeLessThanOrEqual(0);
  await page.locator('#detail').evaluate((e) => e.scrollIntoView());
  await shot(page, 'narrowed-detail');
  await page.setViewportSize({ width: 1280, height: 900 });
  await expect.poll(overflow).toBeLessThanOrEqual(0);
});

test('panels off screen do no work while the reader types, and show the latest result when they come into view', async ({
  page,
  site,
}) => {
  await page.setViewportSize({ width: 1280, height: 520 });
  await openDemo(page, site.url(`index.html?text=${encodeURIComponent('The chef cooked')}`));
  await demoIdle(page);
  // the text box at the top: "How the heads combine" and the inside panel's figure are below the window
  await page.evaluate(() => window.scrollTo(0, 0));
  const below = await page.evaluate(() =>
    ['#combine', '#inside-view'].map((s) => document.querySelector(s).getBoundingClientRect().top > innerHeight),
  );
  expect(below, 'both panels start below the window').toEqual([true, true]);
  const combineLabel = () =>
    page.evaluate(() => document.querySelector('#combine svg')?.getAttribute('aria-label') ?? null);
  const before = await combineLabel();
  const inspects = await page.evaluate(() => {
    window.__inspects = 0;
    const model = window.headscopeDemo.model;
    const inspect = model.inspectHead.bind(model);
    model.inspectHead = (...a) => {
      window.__inspects++;
      return inspect(...a);
    };
    return window.__inspects;
  });
  await page.focus('#text');
  await page.keyboard.press('End');
  await page.keyboard.type(' the meal');
  await expect.poll(() => resultText(page)).toBe('The chef cooked the meal');
  await demoIdle(page);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  // off screen: the combine view still shows the text it last drew there, and no head was inspected
  expect(await combineLabel(), 'the combine view was not drawn off screen').toBe(before);
  expect(await page.evaluate(() => window.__inspects), 'no inspect run for a panel off screen').toBe(inspects);
  // in view: it catches up with the result on screen (its focused token is the last one, now 5)
  await page.locator('#combine').scrollIntoViewIfNeeded();
  await expect.poll(combineLabel).not.toBe(before);
  expect(await combineLabel()).toContain(`token ${(await page.evaluate(() => window.headscopeDemo.result.T)) - 1}`);
  await page.locator('#inside-view').scrollIntoViewIfNeeded();
  await expect
    .poll(() => page.evaluate(() => window.__inspects), { message: 'the inside panel reads its head once in view' })
    .toBeGreaterThan(inspects);
});

test('a long explanation shows its first sentence and "more", which shows the rest and back', async ({
  page,
  site,
}) => {
  await openDemo(page, site.url('index.html'));
  const p = page.locator('p.explain').first();
  const whole = await p.evaluate((e) => e.textContent);
  const button = p.locator('.explain-more-btn');
  await expect(button).toHaveText('more');
  await expect(button).toHaveAttribute('aria-expanded', 'false');
  const rest = p.locator('.explain-more');
  await expect(rest).toBeHidden();
  // what a reader sees: one sentence, then "more"
  const shown = (await p.innerText()).replace(/\s*more$/, '');
  expect(shown.match(/[.!?](\s|$)/g)).toHaveLength(1);
  expect(whole.startsWith(shown)).toBe(true);
  await button.click();
  await expect(rest).toBeVisible();
  await expect(button).toHaveAttribute('aria-expanded', 'true');
  await expect(button).toHaveText('less');
  // the whole paragraph, as written (the rest's nodes moved, not re-parsed)
  expect((await p.evaluate((e) => e.textContent)).replace(/\s*less$/, '')).toBe(whole.replace(/\s*more$/, ''));
  await button.click();
  await expect(rest).toBeHidden();
});
