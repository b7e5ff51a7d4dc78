// The training page's charts as scenes (scene.js display lists), pure so they are tested in Node:
//   lossChartScene   the loss over steps (every step's loss, thinned to the chart's width)
//   scoreChartScene  one role score of every head over steps (one line per head, coloured by
//                    layer), with the role's threshold: an induction head's phase change shows as
//                    a line that jumps across it.
import { headColour } from '../runtime/theme.js';

const PAD = { left: 44, right: 18, top: 26, bottom: 30 };

/** Every `stride`-th point and the last, so a chart draws at most about `max` segments. */
export function thin(points, max) {
  if (points.length <= max) return points;
  const stride = Math.ceil(points.length / max);
  const out = [];
  for (let i = 0; i < points.length; i += stride) out.push(points[i]);
  if (out[out.length - 1] !== points[points.length - 1]) out.push(points[points.length - 1]);
  return out;
}

/** Round tick values covering [lo, hi]: about `count` of them at 1, 2 or 5 times a power of ten. */
export function ticks(lo, hi, count = 4) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function axes(items, theme, { width, height, x0, x1, y0, y1, title, yLabel, yFormat }) {
  const W = width - PAD.left - PAD.right;
  const H = height - PAD.top - PAD.bottom;
  const sx = (x) => PAD.left + (x1 > x0 ? ((x - x0) / (x1 - x0)) * W : 0);
  const sy = (y) => PAD.top + H - (y1 > y0 ? ((y - y0) / (y1 - y0)) * H : 0);
  items.push({ type: 'text', x: PAD.left, y: 16, text: title, size: 13, weight: 'bold', fill: theme.fg });
  for (const v of ticks(y0, y1)) {
    items.push({ type: 'line', x1: PAD.left, y1: sy(v), x2: PAD.left + W, y2: sy(v), stroke: theme.faint, width: 1 });
    items.push({
      type: 'text',
      x: PAD.left - 4,
      y: sy(v) + 4,
      text: yFormat(v),
      size: 10,
      fill: theme.muted,
      anchor: 'end',
    });
  }
  for (const v of ticks(x0, x1)) {
    items.push({
      type: 'text',
      x: sx(v),
      y: PAD.top + H + 14,
      text: String(v),
      size: 10,
      fill: theme.muted,
      anchor: 'middle',
    });
  }
  items.push({
    type: 'line',
    x1: PAD.left,
    y1: PAD.top + H,
    x2: PAD.left + W,
    y2: PAD.top + H,
    stroke: theme.muted,
    width: 1,
  });
  items.push({
    type: 'text',
    x: PAD.left + W,
    y: height - 4,
    text: 'step',
    size: 10,
    fill: theme.muted,
    anchor: 'end',
  });
  if (yLabel) items.push({ type: 'text', x: 4, y: PAD.top - 8, text: yLabel, size: 10, fill: theme.muted });
  return { sx, sy };
}

function polyline(items, points, sx, sy, stroke, width = 1.5, data = undefined) {
  for (let i = 1; i < points.length; i++) {
    const [xa, ya] = points[i - 1];
    const [xb, yb] = points[i];
    items.push({ type: 'line', x1: sx(xa), y1: sy(ya), x2: sx(xb), y2: sy(yb), stroke, width, data });
  }
}

/**
 * The loss curve. `losses`: one loss per step (step i + 1 has losses[i]); `steps`: the x range to
 * show (the run's planned steps, or more when it went on). A thin line shows every step (noisy: one
 * batch each), a thick one their running mean over about 2% of the steps.
 */
export function lossChartScene(
  losses,
  theme,
  { width = 360, height = 180, steps = losses.length, label = 'Loss' } = {},
) {
  const items = [];
  const n = losses.length;
  const finite = Array.from(losses).filter(Number.isFinite);
  const hi = finite.length ? Math.max(...finite) : 1;
  const lo = finite.length ? Math.min(0, Math.min(...finite)) : 0;
  const { sx, sy } = axes(items, theme, {
    width,
    height,
    x0: 0,
    x1: Math.max(steps, n, 1),
    y0: lo,
    y1: hi * 1.05 || 1,
    title: label,
    yLabel: 'nats',
    yFormat: (v) => v.toFixed(1),
  });
  const maxSegments = Math.max(2, width - PAD.left - PAD.right);
  const raw = thin(
    Array.from(losses, (y, i) => [i + 1, y]),
    maxSegments,
  );
  polyline(items, raw, sx, sy, theme.muted, 1);
  const window = Math.max(1, Math.round(n / 50));
  const smooth = [];
  let sum = 0;
  for (let i = 0; i < n; i++) {
    sum += losses[i];
    if (i >= window) sum -= losses[i - window];
    if (i >= window - 1) smooth.push([i + 1, sum / window]);
  }
  polyline(items, thin(smooth, maxSegments), sx, sy, theme.accent, 2.5);
  return { width, height, background: theme.bg, font: theme.font, items };
}

/**
 * One role's score for every head over steps. `history`: [{ step, scores: Float32Array(L*NH) }];
 * `threshold`: the role's threshold (roles.json), drawn as a dashed line with its value. Heads are
 * coloured by layer (a head's line is labelled at its end when it ends above the threshold).
 */
export function scoreChartScene(
  history,
  theme,
  { nLayer, nHead, threshold, title, steps, width = 360, height = 180 } = {},
) {
  const items = [];
  const last = history.length ? history[history.length - 1].step : 0;
  const { sx, sy } = axes(items, theme, {
    width,
    height,
    x0: 0,
    x1: Math.max(steps ?? last, last, 1),
    y0: 0,
    y1: 1,
    title,
    yLabel: 'score',
    yFormat: (v) => v.toFixed(1),
  });
  const W = width - PAD.left - PAD.right;
  for (let x = PAD.left; x < PAD.left + W; x += 8)
    items.push({
      type: 'line',
      x1: x,
      y1: sy(threshold),
      x2: Math.min(x + 4, PAD.left + W),
      y2: sy(threshold),
      stroke: theme.fg,
      width: 1,
      opacity: 0.6,
    });
  items.push({
    type: 'text',
    x: PAD.left + W,
    y: sy(threshold) - 4,
    text: `role at ${threshold}`,
    size: 10,
    fill: theme.fg,
    anchor: 'end',
  });
  const points = thin(history, Math.max(2, W / 4));
  for (let l = 0; l < nLayer; l++) {
    for (let h = 0; h < nHead; h++) {
      const i = l * nHead + h;
      const line = points.map((p) => [p.step, p.scores[i]]);
      polyline(items, line, sx, sy, headColour(theme, l), 1.5, { layer: l, head: h });
      const end = line[line.length - 1];
      if (end && end[1] >= threshold)
        items.push({
          type: 'text',
          x: sx(end[0]) - 2,
          y: sy(end[1]) - 4,
          text: `L${l}H${h}`,
          size: 10,
          fill: headColour(theme, l),
          anchor: 'end',
        });
    }
  }
  for (let l = 0; l < nLayer; l++) {
    const x = PAD.left + 4 + l * 52;
    items.push({
      type: 'line',
      x1: x,
      y1: height - 8,
      x2: x + 12,
      y2: height - 8,
      stroke: headColour(theme, l),
      width: 3,
    });
    items.push({ type: 'text', x: x + 16, y: height - 4, text: `layer ${l}`, size: 10, fill: theme.muted });
  }
  return { width, height, background: theme.bg, font: theme.font, items };
}
