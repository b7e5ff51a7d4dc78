// "Heads working together" on the demo page (web/demo/index/circuits-panel.js): the edges drawn and
// the copying badges are the page API's circuits() numbers, the threshold slider and the kinds change
// which edges are drawn (and the URL keeps them); the selected head's upstream heads are the API's
// explainScore() table summed per head, and on the default model's induction texts the previous-token
// head L0H3 feeds the induction head L1H2's key; keyboard only; the exports; axe; screenshots at
// desktop and phone size (build/e2e-artifacts/circuits-*.png).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test, expect, ARTIFACTS, usingDefaultModel, openDemo, nextFrames } from './fixtures.mjs';
import { seriousViolations } from './axe.mjs';

const panel = (page) => page.locator('#circuits');
const computed = (page) => expect(panel(page)).toHaveAttribute('data-circuits', 'done', { timeout: 60_000 });

// The panel on screen, as a reader looks at it. Panels above it grow when their results arrive (the
// patching panel's maps, later on a busy machine), which can push it out of view, and a panel off
// screen does not draw: every read of what it shows brings it back first.
async function lookAt(page) {
  await panel(page).scrollIntoViewIfNeeded();
  await nextFrames(page);
}
// the selected head's upstream heads on the text, once drawn for `want` (layer:head:query:key)
const upstreamShown = (page, want) =>
  expect
    .poll(
      async () => {
        await lookAt(page);
        return (await panel(page).getAttribute('data-upstream')) ?? '';
      },
      { timeout: 30_000 },
    )
    .toMatch(want);

// what the chart draws: its edges and badges, from the DOM
async function drawn(page) {
  await lookAt(page);
  return page.evaluate(() => ({
    edges: [...document.querySelectorAll('#circuits-view line[data-kind]')].map((l) => ({
      kind: l.dataset.kind,
      from: l.dataset.from,
      to: l.dataset.to,
      score: Number(l.dataset.score),
    })),
    badges: [...document.querySelectorAll('#circuits-view text[data-badge]')].map((t) => ({
      layer: Number(t.dataset.layer),
      head: Number(t.dataset.head),
      copying: Number(t.dataset.copying),
      text: t.textContent,
    })),
  }));
}

// the API's circuits() of the page's model, as plain numbers (NaN as null), and the panel's own copy
async function apiCircuits(page) {
  return page.evaluate(async () => {
    const plain = (c) =>
      JSON.parse(
        JSON.stringify({
          ...c,
          copying: [...c.copying],
          composition: { q: [...c.composition.q], k: [...c.composition.k], v: [...c.composition.v] },
        }),
      );
    return {
      api: plain(await window.headscopeDemo.model.circuits()),
      shown: plain(window.headscopeDemo.circuits.circuits),
    };
  });
}

// the edges the API's numbers give at a threshold: every head a to head b in a later layer, strongest first
function expectedEdges(c, threshold, kinds = ['q', 'k', 'v'], max = 120) {
  const N = c.nLayer * c.nHead;
  const name = (i) => `L${Math.floor(i / c.nHead)}H${i % c.nHead}`;
  const out = [];
  for (const kind of kinds)
    for (let a = 0; a < N; a++)
      for (let b = 0; b < N; b++) {
        const v = c.composition[kind][a * N + b];
        if (v !== null && v >= threshold && Math.floor(a / c.nHead) < Math.floor(b / c.nHead))
          out.push({ kind, from: name(a), to: name(b), score: v });
      }
  return out.sort((x, y) => y.score - x.score).slice(0, max);
}
const key = (e) => `${e.kind} ${e.from} ${e.to} ${e.score}`;
const fmt = (v, d = 2) => (v < 0 && Number(Math.abs(v).toFixed(d)) !== 0 ? '−' : '') + Math.abs(v).toFixed(d);

test('the edges and badges drawn are the API circuits(); the threshold and the kinds change the edges; the URL keeps them', async ({
  page,
  site,
}) => {
  expect(usingDefaultModel, 'the site holds the shipped default model (web/models/headscope-base)').toBe(true);
  await page.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(page, site.url('index.html'));
  await expect(panel(page)).not.toHaveAttribute('data-circuits', 'done'); // not computed off screen
  await panel(page).scrollIntoViewIfNeeded();
  await computed(page);
  const { api, shown } = await apiCircuits(page);
  expect(shown).toEqual(api);
  const threshold = await page.evaluate(() => window.headscopeDemo.circuits.threshold);
  const base = Math.max(api.baseline.q, api.baseline.k, api.baseline.v);
  expect(threshold, 'the slider starts at twice the baseline').toBeCloseTo(Math.ceil(200 * base) / 100, 10);
  await nextFrames(page);
  let d = await drawn(page);
  // every head's badge is its copying score
  expect(d.badges).toEqual(
    api.copying.map((v, i) => ({
      layer: Math.floor(i / api.nHead),
      head: i % api.nHead,
      copying: v,
      text: fmt(v),
    })),
  );
  // the edges: exactly those at or above the threshold, from a head to a head in a later layer
  const first = expectedEdges(api, threshold);
  expect(first.length).toBeGreaterThan(0);
  expect(d.edges.map(key).sort()).toEqual(first.map(key).sort());
  for (const e of d.edges)
    expect(Number(e.from.slice(1).split('H')[0])).toBeLessThan(Number(e.to.slice(1).split('H')[0]));
  // the baseline is marked on the slider (a tick) and in words beside it
  await expect(page.locator('#circuits-ticks option')).toHaveAttribute('value', base.toFixed(2));
  await expect(page.locator('#circuits-baseline')).toHaveText(`random matrices: ${fmt(base)}`);
  await expect(page.locator('#circuits-threshold-value')).toHaveText(fmt(threshold));
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'circuits-desktop.png') });

  // the slider, by keyboard: ten steps up draws the edges at the higher threshold, fewer of them
  await page.locator('#circuits-threshold').focus();
  for (let i = 0; i < 10; i++) await page.keyboard.press('ArrowRight');
  const higher = Math.round(100 * (threshold + 0.1)) / 100;
  await expect(page.locator('#circuits-threshold-value')).toHaveText(fmt(higher));
  await nextFrames(page);
  d = await drawn(page);
  const second = expectedEdges(api, higher);
  expect(second.length).toBeLessThan(first.length);
  expect(d.edges.map(key).sort()).toEqual(second.map(key).sort());
  // a kind switched off: its edges go
  await page.locator('#circuits-q').uncheck();
  await nextFrames(page);
  d = await drawn(page);
  expect(d.edges.map(key).sort()).toEqual(expectedEdges(api, higher, ['k', 'v']).map(key).sort());
  expect(d.edges.some((e) => e.kind === 'q')).toBe(false);
  // the URL keeps both, and reopens them
  await expect.poll(() => new URL(page.url()).searchParams.get('circuit')).toBe('k,v');
  await expect.poll(() => new URL(page.url()).searchParams.get('threshold')).toBe(String(higher));
  await page.reload();
  await panel(page).scrollIntoViewIfNeeded();
  await computed(page);
  await expect(page.locator('#circuits-q')).not.toBeChecked();
  await expect(page.locator('#circuits-threshold')).toHaveValue(String(higher));
  await nextFrames(page);
  d = await drawn(page);
  expect(d.edges.map(key).sort()).toEqual(expectedEdges(api, higher, ['k', 'v']).map(key).sort());
});

// the API's explainScore() for the page's selected head at the focused token and its strongest key,
// its table summed per upstream head (rows: query side, columns: key side); and the panel's buttons
async function upstreamAndApi(page) {
  return page.evaluate(async () => {
    const demo = window.headscopeDemo;
    const r = demo.result;
    const { layer, head } = demo.state;
    const t = Number.isInteger(demo.state.token) ? demo.state.token : r.T - 1;
    const row = r.attention(layer, head).subarray(t * r.T, t * r.T + t + 1);
    let s = 0;
    for (let k = 1; k <= t; k++) if (row[k] > row[s]) s = k;
    const split = await demo.model.explainScore(r.text, layer, head, t, s, { ablate: demo.state.ablate });
    const P = split.components.length;
    const sums = (side) =>
      split.components
        .map((name, i) => {
          let v = 0;
          for (let j = 0; j < P; j++) v += side === 'query' ? split.table[i * P + j] : split.table[j * P + i];
          return { name, value: v };
        })
        .filter((x) => /^L\d+H\d+$/.test(x.name))
        .sort((a, b) => Math.abs(b.value) - Math.abs(a.value));
    const buttons = (id) =>
      [...document.querySelectorAll(`#${id} button`)].map((b) => ({
        name: `L${b.dataset.layer}H${b.dataset.head}`,
        value: Number(b.dataset.value),
        text: b.textContent,
      }));
    return {
      t,
      s,
      tokens: [r.tokens[t].text, r.tokens[s].text],
      api: { query: sums('query'), key: sums('key') },
      shown: { query: buttons('circuits-query'), key: buttons('circuits-key') },
    };
  });
}

test('keyboard only: the induction head selected on the grid; its upstream heads are the API table summed per head, L0H3 on the key side', async ({
  page,
  site,
}) => {
  await page.setViewportSize({ width: 1280, height: 1000 });
  const text = 'Mr. Smith left the room. Later, Mr. Smith';
  await openDemo(page, site.url(`index.html?text=${encodeURIComponent(text)}`));
  await panel(page).scrollIntoViewIfNeeded();
  await computed(page);
  // the selected head is the one in the tab order; arrows move to layer 1 head 2, Enter selects it
  const start = page.locator('#circuits-view .hs-circuit-node[tabindex="0"]');
  // drawn while on screen: brought back before each look (see lookAt)
  await expect
    .poll(
      async () => {
        await lookAt(page);
        return start.count();
      },
      { timeout: 30_000 },
    )
    .toBe(1);
  const [l0, h0] = [Number(await start.getAttribute('data-layer')), Number(await start.getAttribute('data-head'))];
  expect([l0, h0]).toEqual(
    await page.evaluate(() => [window.headscopeDemo.state.layer, window.headscopeDemo.state.head]),
  );
  await start.focus();
  for (let i = 0; i < Math.abs(1 - l0); i++) await page.keyboard.press(l0 < 1 ? 'ArrowDown' : 'ArrowUp');
  for (let i = 0; i < Math.abs(2 - h0); i++) await page.keyboard.press(h0 < 2 ? 'ArrowRight' : 'ArrowLeft');
  await expect(page.locator('#circuits-view .hs-circuit-node[data-layer="1"][data-head="2"]')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect
    .poll(() => page.evaluate(() => [window.headscopeDemo.state.layer, window.headscopeDemo.state.head]))
    .toEqual([1, 2]);
  await expect(page.locator('#circuits-view .hs-circuit-node[data-layer="1"][data-head="2"]')).toHaveAttribute(
    'aria-pressed',
    'true',
  );
  await expect(page.locator('#circuits-view .hs-circuit-node[data-layer="1"][data-head="2"]')).toBeFocused();
  // the upstream heads of L1H2 at the last "Smith", on the key it weighs most ("left": induction)
  await upstreamShown(page, /^1:2:/);
  let u = await upstreamAndApi(page);
  expect(u.tokens).toEqual([' Smith', ' left']);
  await upstreamShown(page, new RegExp(`^1:2:${u.t}:${u.s}$`));
  u = await upstreamAndApi(page);
  for (const side of ['query', 'key']) {
    expect(u.shown[side].map((b) => b.name)).toEqual(u.api[side].slice(0, 3).map((x) => x.name));
    u.shown[side].forEach((b, i) => expect(b.value).toBeCloseTo(u.api[side][i].value, 12));
  }
  // the previous-token head feeds the induction head's key: the strongest head on the key side
  expect(u.shown.key[0].name).toBe('L0H3');
  expect(u.shown.key[0].value).toBeGreaterThan(0);
  expect(u.shown.key[0].text).toBe(`L0H3 +${u.api.key[0].value.toFixed(2)}`);
  await expect(page.locator('#circuits-on-text')).toContainText(
    'layer 1, head 2 at "Smith" (token 11) weighs "left" (token 3) most',
  );
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'circuits-induction.png') });

  // a repeated list: L0H3 again leads the key side
  await page.fill('#text', 'red green blue yellow red green blue yellow');
  await panel(page).scrollIntoViewIfNeeded(); // the panel reads the text when it is on screen
  await upstreamShown(page, /^1:2:7:4$/);
  u = await upstreamAndApi(page);
  expect(u.tokens).toEqual([' yellow', ' red']);
  expect(u.shown.key.map((b) => b.name)).toEqual(u.api.key.slice(0, 3).map((x) => x.name));
  expect(u.shown.key[0].name).toBe('L0H3');

  // a button selects its head, in every view; layer 0 has no heads upstream
  await page.locator('#circuits-key button').first().focus();
  await page.keyboard.press('Enter');
  await expect
    .poll(() => page.evaluate(() => [window.headscopeDemo.state.layer, window.headscopeDemo.state.head]))
    .toEqual([0, 3]);
  await expect(page.locator('#layer-select')).toHaveValue('0');
  await expect(page.locator('#head-select')).toHaveValue('3');
  await upstreamShown(page, /^0:3:/);
  await expect(page.locator('#circuits-on-text')).toContainText('Layer 0, head 3 reads only the embeddings');
  await expect(page.locator('#circuits-on')).toBeHidden();
});

test('exports, axe, dark theme, a phone', async ({ page, site, problems }) => {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await openDemo(page, site.url('index.html?layer=1&head=2'));
  await panel(page).scrollIntoViewIfNeeded();
  await computed(page);
  await upstreamShown(page, /^1:2:/);
  const [svgDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="circuits"][data-format="svg"]'),
  ]);
  const svg = await readFile(await svgDl.path(), 'utf8');
  expect(svgDl.suggestedFilename()).toBe('headscope-circuits.svg');
  expect(svg).toContain('Composition from the weights, and copying');
  expect(svg).toContain('stroke-dasharray');
  expect(svg).not.toContain('tabindex');
  const [pngDl] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-export="circuits"][data-format="png"]'),
  ]);
  expect(pngDl.suggestedFilename()).toBe('headscope-circuits.png');
  const png = await readFile(await pngDl.path());
  const svgWidth = Number(/<svg[^>]* width="([\d.]+)"/.exec(svg)[1]);
  expect(png.readUInt32BE(16), 'the PNG is the SVG at 2x').toBe(Math.round(svgWidth * 2));

  // dark theme: redrawn in its colours (once back on screen: the toggle's click scrolls to the header,
  // and a panel off screen does not draw)
  await page.click('#theme-toggle');
  await panel(page).scrollIntoViewIfNeeded();
  await expect
    .poll(() => page.evaluate(() => document.querySelector('#circuits-view svg > rect')?.getAttribute('fill')))
    .toBe('#16181d');
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'circuits-dark.png') });
  expect(await seriousViolations(page, problems, '#circuits')).toEqual([]);
  await page.click('#theme-toggle');

  // a phone: the page does not overflow sideways, the chart is drawn
  await page.setViewportSize({ width: 390, height: 844 });
  await panel(page).scrollIntoViewIfNeeded();
  await nextFrames(page);
  await nextFrames(page);
  const overflow = await page.evaluate(() => ({
    right: document.getElementById('circuits').getBoundingClientRect().right,
    width: document.documentElement.clientWidth,
    scroll: document.documentElement.scrollWidth,
  }));
  expect(overflow.right).toBeLessThanOrEqual(overflow.width);
  expect(overflow.scroll).toBeLessThanOrEqual(overflow.width);
  expect(await page.locator('#circuits-view .hs-circuit-node').count()).toBeGreaterThan(0);
  await panel(page).screenshot({ path: path.join(ARTIFACTS, 'circuits-phone.png') });
});
