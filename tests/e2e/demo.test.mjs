// End-to-end tests of the demo page, the web component, the iframe mode and the strict-CSP page,
// in Debian's headless Chromium driven by playwright-core. Run with tests/e2e/run.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startServer, launch, openPage, shot, withModel, demoReady, cspViolations, ARTIFACTS, usingDefaultModel } from './helpers.mjs';

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launch();
  console.log(`# model: ${usingDefaultModel ? 'headscope-base (default)' : 'fixture odd-hs12'}; server ${server.base}`);
});

after(async () => {
  await browser?.close();
  server?.close();
});

const url = (p) => withModel(server.base + p);

async function noProblems(page, problems) {
  assert.deepEqual(await cspViolations(page), [], 'CSP violations');
  assert.deepEqual(problems, [], 'console errors, page errors or dialogs');
}

async function renders(page) {
  return Number(await page.evaluate(() => document.body.dataset.renders || 0));
}

async function widgetsReady(page, selector = 'headscope-view') {
  await page.waitForFunction((sel) => {
    const all = [...document.querySelectorAll(sel)];
    return all.length > 0 && all.every((w) => Number(w.dataset.tokens) > 0);
  }, selector, { timeout: 30000 });
}

test('page loads the model with a progress bar and shows the grid of all heads', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  assert.equal(await page.locator('#progress').count(), 1);
  await demoReady(page);
  const { nLayer, nHead, T } = await page.evaluate(() => {
    const r = window.headscopeDemo.result;
    return { nLayer: r.nLayer, nHead: r.nHead, T: r.T };
  });
  assert.equal(await page.locator('#grid [role="gridcell"]').count(), nLayer * nHead);
  // the cells' heatmaps are painted on one canvas under them (one compositor layer, not L x H)
  assert.equal(await page.locator('#grid canvas').count(), 1);
  assert.equal(await page.locator('#tokens .token').count(), T);
  assert.equal(await page.inputValue('#text'), 'The chef, who trained in Paris, cooked the meal quickly.');
  // every cell's part of the grid canvas has content (not one flat colour)
  const blank = await page.evaluate(() => {
    const canvas = document.querySelector('#grid canvas');
    const box = canvas.getBoundingClientRect();
    const ctx = canvas.getContext('2d');
    return [...document.querySelectorAll('#grid [role="gridcell"]')].filter((cell) => {
      const r = cell.getBoundingClientRect();
      const x = Math.round(((r.left - box.left + 3) * canvas.width) / box.width);
      const y = Math.round(((r.top - box.top + 3) * canvas.height) / box.height);
      const w = Math.round(((r.width - 6) * canvas.width) / box.width);
      const h = Math.round(((r.height - 6) * canvas.height) / box.height);
      const d = ctx.getImageData(x, y, w, h).data;
      for (let i = 4; i < d.length; i += 4) if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) return false;
      return true;
    }).length;
  });
  assert.equal(blank, 0, 'blank grid cells');
  assert.ok(await page.locator('#combine svg rect.hs-bar').count() === nHead, 'one bar per head');
  assert.ok(await page.locator('#topk li').count() >= 5, 'top-k predictions');
  await page.waitForTimeout(100);
  await shot(page, 'demo-light', { fullPage: true });
  await noProblems(page, problems);
  await context.close();
});

test('the page opens on the head its model card finds most telling in the article\'s sentence', { skip: usingDefaultModel ? false : 'needs the default model and its card' }, async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  const card = await page.evaluate(async () => (await fetch('models/headscope-base/card.json')).json());
  // The rule (web/demo/demo.js, openingHead): the link to 'chef' whose best head is furthest above
  // uniform attention, if at least 1.5x; otherwise the strongest previous-token head (score >= 0.5),
  // focused on the last token of 'cooked'.
  let want = null;
  for (const link of Object.values(card.chef_sentence.links)) {
    const ratio = link.top[0].weight / link.uniform_baseline;
    if (ratio >= 1.5 && (!want || ratio > want.ratio)) want = { layer: link.top[0].layer, head: link.top[0].head, token: link.query_token, ratio };
  }
  if (!want) {
    const prev = [...card.heads].sort((a, b) => b.prev_token - a.prev_token)[0];
    assert.ok(prev.prev_token >= 0.5, 'the default model has a clear previous-token head');
    want = { layer: prev.layer, head: prev.head, token: card.chef_sentence.links['cooked->chef'].query_token };
  }
  const got = await page.evaluate(() => {
    const s = window.headscopeDemo.state;
    return { layer: s.layer, head: s.head, token: s.token };
  });
  assert.deepEqual(got, { layer: want.layer, head: want.head, token: want.token });
  // the detail view says so in words
  assert.match(await page.locator('#detail-caption').textContent(), new RegExp(`^Layer ${want.layer}, head ${want.head}: `));
  await noProblems(page, problems);
  await context.close();
});

test('typing re-runs the model and updates tokens, heatmaps and the grid', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  const gridPixels = () => page.evaluate(() => document.querySelector('#grid canvas').toDataURL());
  const before = { tokens: await page.locator('#tokens .token').allTextContents(), grid: await gridPixels() };
  await page.fill('#text', '');
  await page.locator('#text').pressSequentially('Hello there', { delay: 15 });
  await page.waitForFunction(() => window.headscopeDemo.result.text === 'Hello there');
  await page.waitForTimeout(100);
  const tokens = await page.locator('#tokens .token').allTextContents();
  assert.notDeepEqual(tokens, before.tokens);
  assert.equal(tokens.join('').replace(/·/g, ' '), 'Hello there');
  assert.notEqual(await gridPixels(), before.grid, 'grid heatmaps changed');
  const T = tokens.length;
  assert.equal(await page.locator('#detail-view svg text[data-row]').count(), T, 'heatmap has a row label per token');
  // fast typing: at most one run in flight, and the last text always runs
  await page.locator('#text').pressSequentially(' and a quick brown fox', { delay: 0 });
  await page.waitForFunction(() => window.headscopeDemo.result.text === 'Hello there and a quick brown fox');
  await page.waitForTimeout(150);
  assert.equal(await page.evaluate(() => window.headscopeDemo.result.text), 'Hello there and a quick brown fox');
  // a long text is cut to the context, and the page says so
  const ctx = await page.evaluate(() => window.headscopeDemo.result.T);
  await page.fill('#text', 'word '.repeat(400));
  await page.waitForFunction(() => window.headscopeDemo.result.droppedTokens > 0);
  await page.waitForTimeout(100);
  assert.match(await page.textContent('#notice'), /tokens were cut/);
  assert.ok(ctx > 0);
  await shot(page, 'demo-truncated');
  await noProblems(page, problems);
  await context.close();
});

test('the grid canvas never resizes the page it is measured from (no resize loop, even without the stylesheets)', async () => {
  // The grid's heatmaps are painted on one canvas sized from the grid's box. If that canvas took part
  // in layout, sizing it could change the grid (or the page's scrollbars) and so size it again, every
  // frame. Without the pages' CSS the canvas's own inline layout must still keep it out of the flow.
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  await context.route('**/*.css', (r) => r.abort());
  const page = await context.newPage();
  await page.addInitScript(() => {
    const RO = window.ResizeObserver;
    window.__resizeCallbacks = 0;
    window.ResizeObserver = class extends RO { constructor(cb) { super((...a) => { window.__resizeCallbacks++; cb(...a); }); } };
  });
  await page.goto(url('index.html'));
  await demoReady(page);
  await page.waitForTimeout(300);
  const atStart = await page.evaluate(() => window.__resizeCallbacks);
  const n = await renders(page);
  await page.focus('#text');
  await page.keyboard.press('End');
  await page.keyboard.type(' and then the waiter, who was new, dropped the plates', { delay: 20 });
  await page.waitForFunction((k) => Number(document.body.dataset.renders) > k, n);
  await page.waitForTimeout(500);
  const callbacks = (await page.evaluate(() => window.__resizeCallbacks)) - atStart;
  const layer = await page.evaluate(() => getComputedStyle(document.querySelector('#grid canvas').parentElement).position);
  assert.equal(layer, 'absolute');
  // Typing may wrap the text box or the token strip and so resize things now and then (the count is
  // over every ResizeObserver on the page: 11 here without CSS), never on every frame (the loop this
  // guards against gave about 4 per keystroke): fewer callbacks than typed characters.
  assert.ok(callbacks < 53, `${callbacks} resize callbacks while typing 53 characters`);
  await context.close();
});

// What every view of the demo shows, read from the DOM, next to what the latest result says it
// should show. The views are updated in place while typing (no rebuild), so this checks that no view
// keeps stale parts: labels, pixels, bars, predictions and the screen-reader text.
async function viewsAgreeWithResult(page) {
  return page.evaluate(() => {
    const r = window.headscopeDemo.result;
    const st = window.headscopeDemo.state;
    const q = Number.isInteger(st.token) && st.token < r.T ? st.token : r.T - 1;
    const label = (t, max) => {
      let s = String(t).replace(/\r\n|\n|\r/g, '↵').replace(/\t/g, '⇥').replace(/ /g, '·');
      if (s === '') s = '∅';
      return [...s].length > max ? [...s].slice(0, max - 1).join('') + '…' : s;
    };
    const problems = [];
    const tokens = [...document.querySelectorAll('#tokens .token')];
    if (tokens.length !== r.T) problems.push(`token strip: ${tokens.length} buttons for ${r.T} tokens`);
    tokens.forEach((b, i) => {
      if (b.textContent !== label(r.tokens[i].text, 24)) problems.push(`token ${i}: '${b.textContent}'`);
      if (b.dataset.index !== String(i)) problems.push(`token ${i}: data-index ${b.dataset.index}`);
      if (!b.getAttribute('aria-label').startsWith(`token ${i}: `)) problems.push(`token ${i}: aria-label ${b.getAttribute('aria-label')}`);
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
          if (selected && hpx && got !== heatAt(k, q)) { problems.push(`grid cell L${st.layer}H${st.head} (${q}, ${k}): ${got} vs heatmap ${heatAt(k, q)}`); q = r.T; break; }
          if (k > q && faint && got !== faint) { problems.push(`grid cell L${cell.dataset.layer}H${cell.dataset.head} (${q}, ${k}) not faint: ${got}`); q = r.T; break; }
        }
      }
    }
    const sel = [...document.querySelectorAll('#grid [aria-selected="true"]')];
    if (sel.length !== 1 || sel[0].dataset.layer !== String(st.layer) || sel[0].dataset.head !== String(st.head)) problems.push('grid selection');
    const caption = document.getElementById('detail-caption').textContent;
    if (!caption.startsWith(`Layer ${st.layer}, head ${st.head}: `)) problems.push(`caption: ${caption}`);
    const cellTitle = document.querySelector(`#grid [data-layer="${st.layer}"][data-head="${st.head}"]`).title;
    if (!cellTitle.startsWith(caption)) problems.push(`grid cell title '${cellTitle}' vs caption '${caption}'`);
    if (st.view === 'heatmap') {
      const rows = [...document.querySelectorAll('#detail-view svg text[data-row]')];
      if (rows.length !== r.T) problems.push(`heatmap: ${rows.length} row labels for ${r.T} tokens`);
      rows.forEach((t, i) => { if (t.textContent !== label(r.tokens[i].text, 14) || t.dataset.row !== String(i)) problems.push(`heatmap row ${i}: '${t.textContent}'`); });
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
    const norms = [...document.querySelectorAll('#combine svg text')].map((t) => t.textContent).filter((s) => /^\d+\.\d\d$/.test(s));
    const want = Array.from({ length: r.nHead }, (_, h) => r.contributionNorms[(st.layer * r.nHead + h) * r.T + q].toFixed(2));
    if (norms.join(' ') !== want.join(' ')) problems.push(`combine norms ${norms} vs ${want}`);
    const topk = [...document.querySelectorAll('#topk li .hs-topk-token')].map((x) => x.textContent);
    const wantTop = r.topNext.map((p) => label(p.token, 20));
    if (topk.join('|') !== wantTop.join('|')) problems.push(`top-k ${topk} vs ${wantTop}`);
    if (!document.getElementById('stats').textContent.startsWith(`${r.T} tokens`)) problems.push('stats');
    return problems;
  });
}

test('while typing, every view keeps showing the latest result (tokens, grid, detail, combine, predictions)', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  assert.deepEqual(await viewsAgreeWithResult(page), [], 'after loading');
  const snapshot = () => page.evaluate(() => ({
    combine: document.querySelector('#combine svg').outerHTML,
    topk: document.getElementById('topk').textContent,
    heatmap: document.querySelector('#detail-view canvas.hs-heatmap-cells').toDataURL(),
    caption: document.getElementById('detail-caption').textContent,
  }));
  // shorter, then longer text: views shrink and grow in place
  await page.fill('#text', 'A');
  await page.waitForFunction(() => window.headscopeDemo.result.text === 'A');
  await page.waitForTimeout(50);
  assert.deepEqual(await viewsAgreeWithResult(page), [], 'one token');
  const short = await snapshot();
  await page.locator('#text').pressSequentially(' cat sat on the mat, and the dog <b>barked</b>', { delay: 10 });
  await page.waitForFunction(() => window.headscopeDemo.result.text.endsWith('barked</b>'));
  await page.waitForTimeout(100);
  assert.deepEqual(await viewsAgreeWithResult(page), [], 'after typing');
  const long = await snapshot();
  for (const k of Object.keys(short)) assert.notEqual(long[k], short[k], `${k} changed`);
  assert.equal(await page.evaluate(() => document.querySelectorAll('#tokens b, #detail-view b, #combine b').length), 0, 'typed markup stays text');
  // a token focused, another head, then the lines view, and typing again
  await page.click('#tokens [data-index="2"]');
  await page.click('#grid [data-layer="1"][data-head="2"]');
  await page.waitForFunction(() => document.getElementById('detail-caption').textContent.startsWith('Layer 1, head 2:'));
  await page.waitForTimeout(50);
  assert.deepEqual(await viewsAgreeWithResult(page), [], 'token 2, layer 1 head 2');
  await page.click('#tab-lines');
  await page.waitForSelector('#detail-view svg [data-side="q"]');
  await page.focus('#text');
  await page.keyboard.press('End');
  await page.locator('#text').pressSequentially(' again', { delay: 10 });
  await page.waitForFunction(() => window.headscopeDemo.result.text.endsWith(' again'));
  await page.waitForTimeout(100);
  assert.deepEqual(await viewsAgreeWithResult(page), [], 'lines view after typing');
  // deleting text: views shrink
  for (let i = 0; i < 12; i++) await page.keyboard.press('Backspace');
  await page.waitForFunction(() => !window.headscopeDemo.result.text.endsWith(' again') && window.headscopeDemo.result.text === document.getElementById('text').value);
  await page.waitForTimeout(100);
  assert.deepEqual(await viewsAgreeWithResult(page), [], 'after deleting');
  await noProblems(page, problems);
  await context.close();
});

test('clicking a head opens its detail; arrow keys move across the grid; screen-reader text follows', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  const { nLayer, nHead } = await page.evaluate(() => window.headscopeDemo.result);
  const l = nLayer - 1;
  const h = Math.min(2, nHead - 1);
  await page.click(`#grid [data-layer="${l}"][data-head="${h}"]`);
  await page.waitForFunction(([l2, h2]) => document.getElementById('detail-caption').textContent.startsWith(`Layer ${l2}, head ${h2}:`), [l, h]);
  assert.equal(await page.getAttribute(`#grid [data-layer="${l}"][data-head="${h}"]`, 'aria-selected'), 'true');
  assert.match(await page.textContent('#live'), new RegExp(`^Layer ${l}, head ${h}: ('.+'|a space|a line break) attends most to ('.+'|itself|a space|a line break) \\(\\d\\.\\d\\d\\)$`));
  const detailTitle = await page.textContent('#detail-view svg text');
  assert.equal(detailTitle, `Layer ${l}, head ${h}: attention weights`);
  // keyboard: the focused cell moves with the arrows
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('ArrowLeft');
  const focused = await page.evaluate(() => ({ l: document.activeElement.dataset.layer, h: document.activeElement.dataset.head }));
  assert.deepEqual(focused, { l: String(l - 1), h: String(h - 1) });
  await page.waitForFunction(([l2, h2]) => document.getElementById('live').textContent.startsWith(`Layer ${l2}, head ${h2}:`), [l - 1, h - 1]);
  await page.keyboard.press('Enter');
  // hovering a heatmap cell shows the exact weight
  const cells = page.locator('#detail-view canvas.hs-heatmap-cells');
  await cells.scrollIntoViewIfNeeded(); // clicking the grid's last row may have scrolled it away
  const box = await cells.boundingBox();
  const T = await page.evaluate(() => window.headscopeDemo.result.T);
  await page.mouse.move(box.x + (box.width * 1.5) / T, box.y + (box.height * 2.5) / T); // query 2, key 1
  const tip = page.locator('.hs-tooltip');
  await tip.waitFor({ state: 'visible' });
  assert.match(await tip.textContent(), /('.*'|a space|a line break) → ('.*'|a space|a line break): \d\.\d{4}/);
  await shot(page, 'demo-head-detail');
  // keyboard on the heatmap: arrows move a cursor cell and read its weight
  await page.mouse.move(0, 0);
  await page.focus('#detail-view .hs-heatmap');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Home');
  await page.waitForFunction(() => / → .*: \d\.\d{4}$/.test(document.getElementById('live').textContent));
  await tip.waitFor({ state: 'visible' });
  await noProblems(page, problems);
  await context.close();
});

test('lines view responds to hover and shows several heads in distinct colours', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  await page.click('#tab-lines');
  await page.waitForSelector('#detail-view svg [data-side="q"]');
  const allLines = await page.locator('#detail-view svg line').count();
  assert.ok(allLines > 0);
  const T = await page.evaluate(() => window.headscopeDemo.result.T);
  const q = Math.min(8, T - 1);
  await page.hover(`#detail-view svg [data-side="q"][data-index="${q}"]`);
  await page.waitForFunction((i) => document.querySelector('#detail-view svg').dataset.focus === `q${i}`, q);
  const focusedLines = await page.locator('#detail-view svg line').count();
  assert.ok(focusedLines > 0 && focusedLines < allLines, `hover isolates one token's lines (${focusedLines} of ${allLines})`);
  assert.ok(focusedLines <= q + 1);
  await shot(page, 'demo-lines-hover');
  // what attends to a token
  await page.hover('#detail-view svg [data-side="k"][data-index="0"]');
  await page.waitForFunction(() => document.querySelector('#detail-view svg').dataset.focus === 'k0');
  // several heads at once
  await page.mouse.move(0, 0);
  const chips = page.locator('#head-chips .head-chip');
  const primary = await page.evaluate(() => window.headscopeDemo.state.head);
  const others = [0, 1, 2, 3].filter((h) => h !== primary).slice(0, 2);
  await chips.nth(others[0]).click();
  await chips.nth(others[1]).click();
  await page.waitForFunction(() => window.headscopeDemo.state.heads.length === 3);
  await page.waitForTimeout(100);
  const colours = await page.evaluate(() => [...new Set([...document.querySelectorAll('#detail-view svg line')].map((l) => l.getAttribute('stroke')))]);
  assert.equal(colours.length, 3, `three heads in three colours: ${colours}`);
  await shot(page, 'demo-lines-3-heads');
  await noProblems(page, problems);
  await context.close();
});

test('export produces a valid PNG and a parseable SVG', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  for (const which of ['detail', 'grid']) {
    const [pngDl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-export="${which}"][data-format="png"]`)]);
    const png = await readFile(await pngDl.path());
    const pngFile = path.join(ARTIFACTS, `export-${which}.png`);
    await pngDl.saveAs(pngFile);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
    assert.equal(png.toString('latin1', 12, 16), 'IHDR');
    const width = png.readUInt32BE(16);
    const height = png.readUInt32BE(20);
    const [svgDl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-export="${which}"][data-format="svg"]`)]);
    const svgText = await readFile(await svgDl.path(), 'utf8');
    await svgDl.saveAs(path.join(ARTIFACTS, `export-${which}.svg`));
    const parsed = await page.evaluate((text) => {
      const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
      const root = doc.documentElement;
      return { error: doc.getElementsByTagName('parsererror').length, name: root.localName, ns: root.namespaceURI, w: Number(root.getAttribute('width')), h: Number(root.getAttribute('height')), texts: doc.getElementsByTagName('text').length };
    }, svgText);
    assert.equal(parsed.error, 0, 'SVG parses');
    assert.equal(parsed.name, 'svg');
    assert.equal(parsed.ns, 'http://www.w3.org/2000/svg');
    assert.ok(parsed.texts > 3, 'SVG has text labels');
    assert.equal(width, Math.round(parsed.w * 2), 'PNG is the SVG at 2x');
    assert.equal(height, Math.round(parsed.h * 2));
  }
  await noProblems(page, problems);
  await context.close();
});

test('hostile text renders inertly (no dialog, no <img>)', async () => {
  const hostile = '<img src=x onerror=alert(1)>';
  const { page, context, problems } = await openPage(browser, url('index.html'));
  await demoReady(page);
  await page.fill('#text', hostile);
  await page.waitForFunction((t) => window.headscopeDemo.result?.text === t, hostile);
  await page.waitForTimeout(200);
  await page.click('#tab-lines');
  await page.waitForTimeout(100);
  const imgs = await page.evaluate(() => document.querySelectorAll('img, image').length);
  assert.equal(imgs, 0, 'no image element was created');
  const strip = (await page.locator('#tokens .token').allTextContents()).join('').replace(/·/g, ' ');
  assert.equal(strip, hostile, 'tokens are shown as text');
  const labels = await page.evaluate(() => [...document.querySelectorAll('#detail-view svg text')].map((t) => t.textContent));
  assert.ok(labels.some((t) => t.includes('<')) && labels.some((t) => t.includes('>')), 'token labels are text nodes');
  await shot(page, 'demo-hostile');
  // the web component and the iframe state too
  await page.goto(url(`embed.html?text=${encodeURIComponent(hostile)}&view=lines`));
  await widgetsReady(page);
  await page.waitForTimeout(100);
  assert.equal(await page.evaluate(() => document.querySelectorAll('img').length + document.querySelector('headscope-view').shadowRoot.querySelectorAll('img, image').length), 0);
  await noProblems(page, problems);
  await context.close();
});

test('web component: several widgets on one page share one model load', async () => {
  const { page, context, problems } = await openPage(browser, 'about:blank');
  const weights = [];
  page.on('request', (r) => { if (r.url().endsWith('model.safetensors')) weights.push(r.url()); });
  await page.goto(url('component.html'));
  await widgetsReady(page);
  assert.equal(weights.length, 1, `one weights download for three widgets: ${weights}`);
  assert.equal(await page.locator('headscope-view').count(), 3);
  // lines widget: layer 1 head 3 clamped to the model's size; caption in the shadow DOM
  const caption = await page.locator('#w-heatmap .hs-caption').textContent();
  assert.match(caption, /^Layer \d+, head \d+: .+ attends most to .+ \(\d\.\d\d\)$/);
  assert.ok(await page.locator('#w-lines svg line').count() > 0);
  assert.ok(await page.locator('#w-heatmap svg rect').count() > 10);
  assert.equal(await page.locator('#w-grid canvas').count(), 1, 'one canvas holds all the cells');
  assert.ok(await page.locator('#w-grid [role="gridcell"]').count() >= 4);
  // attributes drive the widget
  await page.evaluate(() => document.getElementById('w-heatmap').setAttribute('head', '0'));
  await page.waitForFunction(() => document.getElementById('w-heatmap').shadowRoot.querySelector('.hs-caption').textContent.includes('head 0:'));
  // editable widget: typing re-runs
  const before = await page.evaluate(() => document.getElementById('w-grid').result.T);
  await page.locator('#w-grid textarea').fill('Short.');
  await page.waitForFunction((b) => document.getElementById('w-grid').result.T !== b, before);
  // hover in the lines widget
  await page.hover('#w-lines svg [data-side="q"][data-index="3"]');
  await page.waitForFunction(() => document.getElementById('w-lines').shadowRoot.querySelector('svg').dataset.focus === 'q3');
  // component export API
  const svg = await page.evaluate(() => document.getElementById('w-lines').exportSvg());
  assert.match(svg, /^<\?xml[^]*<svg[^]*<\/svg>$/);
  const pngSize = await page.evaluate(async () => (await document.getElementById('w-heatmap').exportPng()).size);
  assert.ok(pngSize > 1000);
  await page.waitForTimeout(100);
  await shot(page, 'component-page', { fullPage: true });
  await noProblems(page, problems);
  await context.close();
});

test('iframe mode: the URL holds the state; "copy embed code" makes a working snippet', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html?layer=1&head=2&view=lines'));
  await demoReady(page);
  assert.equal(await page.getAttribute('#tab-lines', 'aria-selected'), 'true', 'view from the URL');
  assert.match(await page.textContent('#detail-caption'), /^Layer 1, head 2:/);
  await page.fill('#text', 'The cat sat on the mat.');
  await page.waitForFunction(() => window.headscopeDemo.result.text === 'The cat sat on the mat.');
  await page.click('#embed-button');
  const snippet = await page.inputValue('#embed-code');
  assert.match(snippet, /^<iframe src="[^"]+embed\.html\?[^"]+" width="\d+" height="\d+" title="[^"]+"/);
  const src = /src="([^"]+)"/.exec(snippet)[1].replace(/&amp;/g, '&');
  const q = new URL(src).searchParams;
  assert.equal(q.get('text'), 'The cat sat on the mat.');
  assert.equal(q.get('layer'), '1');
  assert.equal(q.get('head'), '2');
  assert.equal(q.get('view'), 'lines');
  // a plain article page holding only the snippet
  const host = await context.newPage();
  host.on('console', (m) => { if (m.type() === 'error') problems.push(`iframe host console: ${m.text()}`); });
  await host.setContent(`<!doctype html><html><body><h1>An article</h1>${snippet}</body></html>`);
  const frame = host.frameLocator('iframe');
  await frame.locator('headscope-view svg [data-side="q"]').first().waitFor({ timeout: 30000 });
  assert.ok(await frame.locator('headscope-view svg line').count() > 0);
  assert.match(await frame.locator('headscope-view .hs-caption').textContent(), /^Layer 1, head 2: .+ attends most to/);
  await host.waitForTimeout(100);
  await shot(host, 'iframe-embed');
  // the embed page alone, heatmap state
  await page.goto(url('embed.html?text=Hello%20world%2C%20hello%20again.&layer=0&head=1&view=heatmap&theme=dark'));
  await widgetsReady(page);
  assert.match(await page.locator('headscope-view .hs-caption').textContent(), /^Layer 0, head 1:/);
  await page.waitForTimeout(100);
  await shot(page, 'embed-heatmap-dark');
  await noProblems(page, problems);
  await context.close();
});

test('strict CSP page works with no violations', async () => {
  const { page, context, problems } = await openPage(browser, 'about:blank');
  const response = await page.goto(url('csp.html'));
  assert.match(response.headers()['content-security-policy'], /script-src 'self' 'wasm-unsafe-eval'/);
  await widgetsReady(page);
  await page.locator('#csp-heatmap textarea').fill('Typing under a strict policy.');
  await page.waitForFunction(() => document.getElementById('csp-heatmap').result.text === 'Typing under a strict policy.');
  await page.waitForTimeout(150);
  assert.ok(await page.locator('#csp-lines svg line').count() > 0);
  await shot(page, 'csp-page', { fullPage: true });
  await noProblems(page, problems);
  await context.close();
});

test('phone width with touch, dark theme and reduced motion', async () => {
  const { page, context, problems } = await openPage(browser, url('index.html'), {
    viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, colorScheme: 'dark', reducedMotion: 'reduce',
  });
  await demoReady(page);
  await page.waitForTimeout(100);
  await shot(page, 'phone-dark-top');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `no horizontal page scroll at phone width (${overflow}px)`);
  assert.equal(await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--hs-scheme').trim()), 'dark');
  await page.tap('#grid [data-layer="1"][data-head="1"]');
  await page.waitForFunction(() => document.getElementById('detail-caption').textContent.startsWith('Layer 1, head 1:'));
  await page.click('#tab-lines');
  await page.tap('#detail-view svg [data-side="q"][data-index="4"]');
  await page.waitForFunction(() => document.querySelector('#detail-view svg').dataset.focus === 'q4');
  await page.waitForTimeout(100);
  await shot(page, 'phone-dark-full', { fullPage: true });
  await page.locator('#detail').scrollIntoViewIfNeeded();
  await page.evaluate(() => document.getElementById('detail').scrollIntoView());
  await shot(page, 'phone-dark-detail');
  await page.evaluate(() => document.querySelector('.panel-combine').scrollIntoView());
  await shot(page, 'phone-dark-combine');
  // theme toggle back to light
  await page.click('#theme-toggle');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
  await page.waitForTimeout(100);
  await shot(page, 'phone-light-toggled');
  await noProblems(page, problems);
  await context.close();
});
