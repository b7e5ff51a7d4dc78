// The training page's chart scenes (web/component/charts/training-charts.js) in Node: every point
// lands where its value says, thinning keeps the ends, ticks are round, thresholds are drawn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { themeFrom, headColour } from '../../../web/component/runtime/theme.js';
import { lossChartScene, scoreChartScene, thin, ticks } from '../../../web/component/charts/training-charts.js';

const theme = themeFrom(() => '');

test('thin keeps the first and last points and at most about max of them', () => {
  const pts = Array.from({ length: 1001 }, (_, i) => i);
  const t = thin(pts, 100);
  assert.equal(t[0], 0);
  assert.equal(t[t.length - 1], 1000);
  assert.ok(t.length <= 102, `${t.length} points`);
  assert.deepEqual(thin([1, 2, 3], 10), [1, 2, 3]);
});

test('ticks are round numbers inside the range', () => {
  assert.deepEqual(ticks(0, 1), [0, 0.5, 1]);
  assert.deepEqual(ticks(0, 4.2), [0, 2, 4]);
  assert.deepEqual(ticks(0, 1500), [0, 500, 1000, 1500]);
  assert.deepEqual(ticks(2, 2), [2]);
});

// the chart's data lines: segments whose stroke is `stroke`
const segments = (scene, stroke) => scene.items.filter((it) => it.type === 'line' && it.stroke === stroke);

test('loss chart: the raw curve passes through every loss; the smooth curve is their running mean', () => {
  const losses = Float32Array.from({ length: 200 }, (_, i) => 4 - 3 * (i / 199));
  const scene = lossChartScene(losses, theme, { width: 520, height: 200, steps: 400 });
  const raw = segments(scene, theme.muted).filter((s) => s.width === 1);
  // x maps steps 0..400 to the plot's width, y maps 0..max*1.05 to its height (top-down)
  const plotW = 520 - 44 - 18,
    plotH = 200 - 26 - 30;
  const sx = (step) => 44 + (step / 400) * plotW;
  const sy = (v) => 26 + plotH - (v / (4 * 1.05)) * plotH;
  const first = raw.find((s) => Math.abs(s.x1 - sx(1)) < 1e-6);
  assert.ok(first, 'a segment starts at step 1');
  assert.ok(Math.abs(first.y1 - sy(losses[0])) < 0.01);
  const last = raw.find((s) => Math.abs(s.x2 - sx(200)) < 1e-6);
  assert.ok(last && Math.abs(last.y2 - sy(losses[199])) < 0.01, 'a segment ends at the last loss');
  const smooth = segments(scene, theme.accent);
  assert.ok(smooth.length > 0);
  for (const s of smooth)
    assert.ok(s.y1 >= sy(4) - 0.01 && s.y1 <= sy(1) + 0.01, 'the running mean stays within the losses');
});

test('score chart: one line per head in its layer colour, the threshold drawn and labelled, roles labelled', () => {
  const nLayer = 2,
    nHead = 3;
  const history = [0, 25, 50, 75].map((step, k) => ({
    step,
    scores: Float32Array.from({ length: nLayer * nHead }, (_, i) => (i === 4 ? 0.2 * k + 0.1 : 0.05)),
  }));
  const scene = scoreChartScene(history, theme, {
    nLayer,
    nHead,
    threshold: 0.4,
    title: 'Induction',
    steps: 100,
    width: 400,
    height: 180,
  });
  for (let l = 0; l < nLayer; l++)
    for (let h = 0; h < nHead; h++) {
      const mine = scene.items.filter((it) => it.data?.layer === l && it.data?.head === h);
      assert.equal(mine.length, 3, `head L${l}H${h}: one segment between each pair of probes`);
      for (const s of mine) assert.equal(s.stroke, headColour(theme, l));
    }
  // head index 4 = L1H1 ends at 0.7 >= 0.4: labelled; the others are not
  const labels = scene.items.filter((it) => it.type === 'text' && /^L\dH\d$/.test(it.text)).map((it) => it.text);
  assert.deepEqual(labels, ['L1H1']);
  assert.ok(scene.items.some((it) => it.type === 'text' && it.text === 'role at 0.4'));
  // its last point sits at 0.7 on the 0..1 axis
  const plotH = 180 - 26 - 30;
  const end = scene.items.filter((it) => it.data?.layer === 1 && it.data?.head === 1).at(-1);
  assert.ok(Math.abs(end.y2 - (26 + plotH - 0.7 * plotH)) < 0.01);
});
