// "How many heads does this model need?" in Node (web/component/charts/pruning-curve.js): the numbers
// the page states against the model cards (which scripts/train/heads_card.py wrote from the CLI), and
// the chart's scene: every point, bar and level where its value puts it, inside the picture, the
// legend's entries apart, and what a report without random orders draws.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { themeFrom } from '../../../web/component/runtime/theme.js';
import { textWidth } from '../../../web/component/views/scene.js';
import {
  headsOffBefore,
  pruningSummary,
  pruningScene,
  pruningLayout,
  pruningLabel,
  headRoles,
  headTicks,
  RISES,
} from '../../../web/component/charts/pruning-curve.js';

const theme = themeFrom(() => '');
const dark = themeFrom((name) => (name === '--hs-scheme' ? 'dark' : ''));
const MODELS = new URL('../../../web/models/', import.meta.url);
const NAMES = ['headscope-base', 'heads-1', 'heads-2', 'heads-4', 'heads-8'];

/** A card's pruning section as a HeadsReport (the fields the page reads). */
function reportOf(p) {
  return {
    nLayer: 0,
    nHead: 0,
    loss: p.loss,
    order: p.order,
    prunedLoss: p.pruned_loss,
    randomOrders: p.random_orders,
    seed: 0,
    randomLossMean: p.random_loss_mean,
    randomLossLow: p.random_loss_band.map((b) => b[0]),
    randomLossHigh: p.random_loss_band.map((b) => b[1]),
  };
}
const cards = NAMES.map((name) => [name, new URL(`${name}/card.json`, MODELS)])
  .filter(([, url]) => existsSync(url))
  .map(([name, url]) => ({ name, card: JSON.parse(readFileSync(url, 'utf8')) }))
  .filter((c) => c.card.pruning);

// a synthetic report: 2 layers x 3 heads, the greedy curve dipping then rising past +10%
const synthetic = {
  nLayer: 2,
  nHead: 3,
  loss: 4,
  order: [
    [1, 2],
    [0, 1],
    [1, 0],
    [0, 0],
    [1, 1],
    [0, 2],
  ],
  prunedLoss: [4, 3.9, 3.95, 4.1, 4.3, 4.5, 5],
  randomOrders: 3,
  seed: 0,
  randomLossMean: [4, 4.1, 4.3, 4.5, 4.7, 4.9, 5],
  randomLossLow: [4, 3.95, 4.1, 4.3, 4.5, 4.8, 5],
  randomLossHigh: [4, 4.3, 4.5, 4.8, 4.9, 5, 5],
};

test('heads off before +5% and +10% count as the model cards count them', () => {
  assert.ok(cards.length > 0, "the shipped models' cards have a pruning section");
  for (const {
    name,
    card: { pruning: p },
  } of cards) {
    // the card rounds its losses to 4 decimals; the counts were made from the CLI's unrounded ones
    assert.equal(headsOffBefore(p.pruned_loss, p.loss, 0.05), p.heads_off_before_5pct, `${name} +5%`);
    assert.equal(headsOffBefore(p.pruned_loss, p.loss, 0.1), p.heads_off_before_10pct, `${name} +10%`);
    const s = pruningSummary(reportOf(p));
    assert.equal(s.n, p.heads);
    assert.deepEqual(s.survivors, p.last_heads, `${name}: the last three heads to go, the last first`);
    assert.equal(s.halfLoss, p.half_loss);
    assert.equal(s.halfRandomMean, p.half_random_mean);
  }
  // the definition: one less than the first k above the level; all of them when never above
  assert.equal(headsOffBefore([4, 3.9, 4.1, 4.3], 4, 0.05), 2);
  assert.equal(headsOffBefore([4, 4.1, 4.19], 4, 0.05), 2);
  assert.equal(headsOffBefore([4, 5], 4, 0.05), 0);
});

test('the summary: half the heads, both orders, the survivors; no random orders gives NaN', () => {
  const s = pruningSummary(synthetic);
  assert.deepEqual(s.offBefore, { 0.05: 3, 0.1: 4 });
  assert.equal(s.half, 3);
  assert.equal(s.halfLoss, 4.1);
  assert.equal(s.halfRandomMean, 4.5);
  assert.equal(s.halfRandomLow, 4.3);
  assert.equal(s.halfRandomHigh, 4.8);
  assert.equal(s.allOffLoss, 5);
  assert.deepEqual(s.survivors, [
    [0, 2],
    [1, 1],
    [0, 0],
  ]);
  const none = pruningSummary({ ...synthetic, randomLossMean: [], randomLossLow: [], randomLossHigh: [] });
  assert.ok(Number.isNaN(none.halfRandomMean));
  assert.match(
    pruningLabel(synthetic, 'tiny'),
    /^tiny: loss against heads switched off, from 4\.000 nats with all 6 heads to 5\.000 with none\. 3 heads can go before the loss rises 5%, 4 before 10%\./,
  );
});

const near = (a, b, what) => assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} vs ${b}`);

for (const [label, report, opts] of [
  ['synthetic', synthetic, { width: 420, height: 250 }],
  ...cards.map(({ name, card }) => [name, reportOf(card.pruning), { width: 360, height: 230 }]),
]) {
  test(`chart of ${label}: points, bars, levels and markers where the numbers put them, inside the picture`, () => {
    const scene = pruningScene(report, theme, opts);
    const { sx, sy, lo, hi, left, top, W, H } = pruningLayout(report, opts);
    const n = report.order.length;
    assert.equal(scene.width, opts.width);
    assert.equal(scene.height, opts.height);
    // the range holds every loss drawn
    for (const v of [...report.prunedLoss, ...report.randomLossLow, ...report.randomLossHigh])
      assert.ok(v > lo && v < hi);
    // a dot per point of the greedy curve, centred on (k, loss)
    const dots = scene.items.filter((it) => it.data?.series === 'greedy');
    assert.equal(dots.length, n + 1);
    for (const d of dots) {
      near(d.x + d.w / 2, sx(d.data.k), 'dot x');
      near(d.y + d.h / 2, sy(report.prunedLoss[d.data.k]), 'dot y');
    }
    // the line joins consecutive points
    const segs = scene.items.filter((it) => it.data?.series === 'greedy-line');
    assert.equal(segs.length, n);
    segs.forEach((s, i) => {
      near(s.x1, sx(i), 'segment start');
      near(s.y2, sy(report.prunedLoss[i + 1]), 'segment end');
    });
    // the band: one bar per k from the highest to the lowest random loss (at least 1 px)
    const bars = scene.items.filter((it) => it.data?.series === 'band');
    assert.equal(bars.length, n + 1);
    for (const b of bars) {
      near(b.x + b.w / 2, sx(b.data.k), 'bar x');
      near(b.y, sy(report.randomLossHigh[b.data.k]), 'bar top');
      near(b.y + b.h, Math.max(sy(report.randomLossLow[b.data.k]), b.y + 1), 'bar bottom');
    }
    // the mean's dashes lie on the segments between its points
    const mean = scene.items.filter((it) => it.data?.series === 'random-mean');
    assert.ok(mean.length >= n);
    for (const m of mean) {
      const k = Math.min(n, Math.max(1, Math.ceil((m.x2 - left) / (W / n) - 1e-9)));
      const [xa, ya, xb, yb] = [sx(k - 1), sy(report.randomLossMean[k - 1]), sx(k), sy(report.randomLossMean[k])];
      for (const [x, y] of [
        [m.x1, m.y1],
        [m.x2, m.y2],
      ]) {
        const cross = (xb - xa) * (y - ya) - (yb - ya) * (x - xa);
        assert.ok(
          Math.abs(cross) / Math.hypot(xb - xa, yb - ya) < 1e-6,
          `a dash of the mean leaves its segment near k = ${k}`,
        );
      }
    }
    // the levels: drawn at (1 + rise) x loss when the range reaches them, the crossing at k heads off
    for (const rise of RISES) {
      const level = (1 + rise) * report.loss;
      const mine = scene.items.filter((it) => it.data?.rise === rise);
      if (level > hi) {
        assert.equal(mine.length, 0, `+${rise}: not drawn`);
        continue;
      }
      const flat = mine.filter((it) => it.type === 'line' && it.data.k === undefined);
      assert.ok(flat.length > 0);
      for (const l of flat) {
        near(l.y1, sy(level), 'level');
        near(l.y2, sy(level), 'level');
      }
      const k = headsOffBefore(report.prunedLoss, report.loss, rise);
      const marks = mine.filter((it) => it.data.k !== undefined);
      if (k >= 0 && k < n) {
        const label = marks.find((it) => it.type === 'text' && it.text === `${k} off`);
        assert.ok(label);
        // drawn over the random orders' band: outlined in the background's colour to stay legible
        assert.equal(label.halo, scene.background);
        for (const m of marks.filter((it) => it.type === 'line')) {
          near(m.x1, sx(k), 'marker');
          near(m.x2, sx(k), 'marker');
        }
      }
    }
    // nothing outside the picture (texts by their estimated width)
    for (const it of scene.items) {
      if (it.type === 'rect')
        assert.ok(
          it.x >= 0 && it.y >= 0 && it.x + it.w <= scene.width && it.y + it.h <= scene.height,
          `rect at ${it.x},${it.y}`,
        );
      if (it.type === 'line')
        for (const [x, y] of [
          [it.x1, it.y1],
          [it.x2, it.y2],
        ])
          assert.ok(x >= 0 && x <= scene.width && y >= 0 && y <= scene.height, `line at ${x},${y}`);
      if (it.type === 'text') {
        const w = textWidth(it.text, it.size ?? 12);
        const x0 = it.anchor === 'end' ? it.x - w : it.anchor === 'middle' ? it.x - w / 2 : it.x;
        assert.ok(x0 >= 0 && x0 + w <= scene.width + 1, `text "${it.text}" from ${x0} to ${x0 + w} in ${scene.width}`);
        assert.ok(it.y >= 0 && it.y <= scene.height, `text "${it.text}" at y ${it.y}`);
      }
    }
    // the plot's box holds the data
    for (const d of dots) assert.ok(d.y >= top - 3 && d.y + d.h <= top + H + 3);
  });
}

test('the legend: its entries side by side without overlapping; without random orders only the greedy one', () => {
  const scene = pruningScene(synthetic, theme);
  const legend = scene.items.filter((it) => it.type === 'text' && it.data?.legend);
  assert.deepEqual(
    legend.map((t) => t.text),
    ['greedy order', '3 random orders: mean', 'lowest–highest'],
  );
  for (let i = 1; i < legend.length; i++)
    assert.ok(legend[i].x - 20 > legend[i - 1].x + textWidth(legend[i - 1].text, 11), `legend entry ${i} overlaps`);
  // a narrow chart puts what does not fit on a second row, and the plot moves down by a row
  const narrow = pruningScene({ ...synthetic, randomOrders: 8 }, theme, { width: 300 });
  const rows = narrow.items.filter((it) => it.type === 'text' && it.data?.legend);
  assert.ok(rows.every((t) => t.x + textWidth(t.text, 11) <= 300));
  assert.equal(new Set(rows.map((t) => t.y)).size, 2);
  assert.equal(
    pruningLayout({ ...synthetic, randomOrders: 8 }, { width: 300 }).top,
    pruningLayout(synthetic, { width: 420 }).top + 16,
  );
  const bare = pruningScene({ ...synthetic, randomLossMean: [], randomLossLow: [], randomLossHigh: [] }, theme);
  assert.deepEqual(
    bare.items.filter((it) => it.type === 'text' && it.data?.legend).map((t) => t.text),
    ['greedy order'],
  );
  assert.equal(bare.items.filter((it) => it.data?.series === 'band' || it.data?.series === 'random-mean').length, 0);
});

test("colours: the greedy curve and the random orders in the theme's first two Okabe-Ito colours, light and dark", () => {
  for (const t of [theme, dark]) {
    const scene = pruningScene(synthetic, t);
    assert.equal(scene.background, t.bg);
    for (const it of scene.items.filter((x) => x.data?.series === 'greedy' || x.data?.series === 'greedy-line'))
      assert.equal(it.fill ?? it.stroke, t.heads[0]);
    for (const it of scene.items.filter((x) => x.data?.series === 'band')) assert.equal(it.fill, t.heads[1]);
  }
  assert.notEqual(theme.heads[0], dark.heads[0]);
});

test('whole-number ticks for heads off', () => {
  assert.deepEqual(headTicks(2), [0, 1, 2]);
  assert.deepEqual(headTicks(8), [0, 2, 4, 6, 8]);
  assert.deepEqual(headTicks(32), [0, 10, 20, 30]);
  assert.deepEqual(headTicks(144), [0, 50, 100]);
  assert.deepEqual(headTicks(0), [0]);
});

test("role badges: the card's probe scores first, the live scores on the text for the rest", () => {
  const cardHeads = [
    { layer: 0, head: 1, prev_token: 0.9, induction: 0.05, verb_to_subject: 4.2 },
    { layer: 1, head: 0, prev_token: 0.1, induction: 0.7, verb_to_subject: 0.5 },
  ];
  const live = [
    [
      { previous: 0.2, first: 0.1, self: 0.0, duplicate: 0, broad: 0.1, induction: 0.9 },
      { previous: 0.1, first: 0.7, self: 0, duplicate: 0, broad: 0.2, induction: 0.9 },
    ],
    [
      { previous: 0.8, first: 0, self: 0, duplicate: 0, broad: 0.1, induction: 0 },
      { previous: 0.6, first: 0, self: 0, duplicate: 0, broad: 0, induction: 0.95 },
    ],
  ];
  // L0H1: the card's previous-token and verb-to-subject scores, and the live sink score
  assert.deepEqual(headRoles(0, 1, { live, cardHeads }).sort(), ['first', 'previous', 'verb_to_subject']);
  // L1H0: the card says induction and not previous token, whatever the live text says
  assert.deepEqual(headRoles(1, 0, { live, cardHeads }), ['induction']);
  // L1H1: no card entry; the live induction score is not used (plain text repeats too little)
  assert.deepEqual(headRoles(1, 1, { live, cardHeads }), ['previous']);
  // no card, no live scores: no badge
  assert.deepEqual(headRoles(0, 0), []);
});
