// "How many heads does this model need?" (compare.html): a head measurement (measureHeads(), the
// CLI's `headscope heads`) as a chart scene (scene.js display list) and the numbers the page states,
// pure so they are tested in Node (tests/js/unit/pruning-curve.test.js).
//   pruningScene    the loss against heads switched off: greedily in the measurement's order (a
//                   line with a dot per step), beside random orders (their mean dashed, their lowest
//                   and highest loss as a band of one bar per step), the levels 5% and 10% above the
//                   full model's loss, and where the greedy curve crosses them
//   pruningSummary  heads off before +5% / +10% (the model cards' definition), the loss at half the
//                   heads off in either order, the heads that survive longest
//   headRoles       a head's role badges (roles.json's thresholds, headBadges of analysis.js) from
//                   the model card's probe scores and the live scores on the measured text
import { ticks } from './training-charts.js';
import { textWidth } from '../views/scene.js';
import { headBadges, ROLES_TABLE } from '../../lib/analysis.js';

/** The rises the page marks: 5% and 10% above the loss with every head on. */
export const RISES = Object.freeze([0.05, 0.1]);

const PAD = { left: 50, right: 46, top: 58, bottom: 36 };
const LEGEND_Y = 32;
const LEGEND_ROW = 16;
const LEGEND_SIZE = 11;

// The legend's entries, placed left to right and onto a new row where the next would not fit:
// [{ text, sample ('line' | 'dashed' | 'box'), sampleWidth, x, y }], and the rows it takes.
function legendLayout(report, width) {
  const entries = [{ text: 'greedy order', sample: 'line', sampleWidth: 18 }];
  if (hasRandom(report)) {
    entries.push({
      text: `${report.randomOrders ? `${report.randomOrders} random orders` : 'random orders'}: mean`,
      sample: 'dashed',
      sampleWidth: 18,
    });
    entries.push({ text: 'lowest–highest', sample: 'box', sampleWidth: 12 });
  }
  let x = 4;
  let row = 0;
  for (const e of entries) {
    const w = e.sampleWidth + 4 + textWidth(e.text, LEGEND_SIZE);
    if (x > 4 && x + w > width - 4) {
      row++;
      x = 4;
    }
    Object.assign(e, { x, y: LEGEND_Y + row * LEGEND_ROW });
    x += w + 14;
  }
  return { entries, rows: row + 1 };
}

/**
 * Heads that can be switched off, in the curve's order, before the loss exceeds (1 + rise) x loss:
 * one less than the first k whose loss is above it (scripts/train/heads_card.py's definition, so the
 * page and the model cards count alike); every head when the curve never gets there.
 */
export function headsOffBefore(curve, loss, rise) {
  for (let k = 0; k < curve.length; k++) if (curve[k] > (1 + rise) * loss) return k - 1;
  return curve.length - 1;
}

/** Whether the report has random orders (their curves hold n + 1 losses; none: empty). */
function hasRandom(report) {
  return report.randomLossMean.length === report.order.length + 1;
}

/**
 * The numbers the page states about a report: n heads, the loss with all of them, heads off before
 * +5% and +10% (`offBefore[rise]`), at half the heads off (floor(n / 2)) the greedy loss and the
 * random orders' mean, lowest and highest (NaN without random orders), the loss with every head off,
 * and the `survivors` heads switched off last, the last one first.
 */
export function pruningSummary(report, { survivors = 3 } = {}) {
  const n = report.order.length;
  const half = Math.floor(n / 2);
  const random = hasRandom(report);
  return {
    n,
    loss: report.loss,
    offBefore: Object.fromEntries(RISES.map((r) => [r, headsOffBefore(report.prunedLoss, report.loss, r)])),
    half,
    halfLoss: report.prunedLoss[half],
    halfRandomMean: random ? report.randomLossMean[half] : NaN,
    halfRandomLow: random ? report.randomLossLow[half] : NaN,
    halfRandomHigh: random ? report.randomLossHigh[half] : NaN,
    allOffLoss: report.prunedLoss[n],
    survivors: report.order
      .slice(n - Math.min(survivors, n))
      .reverse()
      .map(([l, h]) => [l, h]),
  };
}

// every role's threshold (live and probe roles alike): a head earns a badge at its role's threshold
const THRESHOLDS = Object.freeze(Object.fromEntries(ROLES_TABLE.map((r) => [r.name, r.threshold])));
/** A role's short badge text (roles.json). */
export const ROLE_BADGE = Object.freeze(Object.fromEntries(ROLES_TABLE.map((r) => [r.name, r.short])));

/**
 * The role badges of head (layer, head), strongest first (headBadges). `live`: allHeadScores() of a
 * run of the measured text ([layer][head] of HeadScores; its induction score is left out: ordinary
 * text repeats too little to decide it), `cardHeads`: the model card's `heads` (probe scores:
 * prev_token on held-out windows, induction on repeated word lists, verb_to_subject on the card's
 * sentences), which take precedence where a card has them. Either may be missing.
 */
export function headRoles(layer, head, { live = null, cardHeads = null } = {}) {
  const s = { ...(live?.[layer]?.[head] ?? {}), induction: NaN, verb_to_subject: NaN };
  const c = cardHeads?.find((x) => x.layer === layer && x.head === head);
  if (c) {
    if (Number.isFinite(c.prev_token)) s.previous = c.prev_token;
    if (Number.isFinite(c.induction)) s.induction = c.induction;
    if (Number.isFinite(c.verb_to_subject)) s.verb_to_subject = c.verb_to_subject;
  }
  return headBadges(s, THRESHOLDS);
}

/** The accessible name of a chart: what it shows, in one sentence with its key numbers. */
export function pruningLabel(report, name) {
  const s = pruningSummary(report);
  const random = hasRandom(report) ? `; in random orders ${s.halfRandomMean.toFixed(3)} on average` : '';
  return (
    `${name}: loss against heads switched off, from ${s.loss.toFixed(3)} nats with all ${s.n} heads to ${s.allOffLoss.toFixed(3)} with none. ` +
    `${s.offBefore[0.05]} heads can go before the loss rises 5%, ${s.offBefore[0.1]} before 10%. ` +
    `Half the heads off: ${s.halfLoss.toFixed(3)} nats in the greedy order${random}.`
  );
}

/** Whole-number ticks from 0 to n, about `count` of them (1, 2 or 5 times a power of ten apart). */
export function headTicks(n, count = 6) {
  if (n <= 0) return [0];
  const raw = Math.max(1, n / count);
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((x) => x >= raw);
  const out = [];
  for (let k = 0; k <= n; k += step) out.push(k);
  return out;
}

// a dashed line as short segments (scenes have no dash pattern): `on` px drawn, `off` px skipped
function dashed(items, x1, y1, x2, y2, style, on = 5, off = 4) {
  const len = Math.hypot(x2 - x1, y2 - y1);
  if (!(len > 0)) return;
  for (let a = 0; a < len; a += on + off) {
    const b = Math.min(len, a + on);
    items.push({
      type: 'line',
      x1: x1 + ((x2 - x1) * a) / len,
      y1: y1 + ((y2 - y1) * a) / len,
      x2: x1 + ((x2 - x1) * b) / len,
      y2: y1 + ((y2 - y1) * b) / len,
      ...style,
    });
  }
}

/** Digits that tell ticks `step` apart. */
function digitsFor(step) {
  return Math.max(0, Math.min(4, -Math.floor(Math.log10(step) + 1e-9)));
}

/**
 * The chart of a report (HeadsReport): x = heads switched off (0..n), y = loss in nats. Items carry
 * `data` naming what they draw: { series: 'greedy', k } (the dots), { series: 'greedy-line' },
 * { series: 'random-mean' }, { series: 'band', k } (the bar from the lowest to the highest random
 * loss with k heads off), { rise } (a level's line, its label and the crossing marker).
 */
/**
 * Where the chart puts things: the plot's box, the loss range shown (every curve and band value,
 * with 6% of room), and sx(k) / sy(loss) in scene pixels.
 */
export function pruningLayout(report, { width = 420, height = 250 } = {}) {
  const n = report.order.length;
  const values = Array.from(report.prunedLoss);
  if (hasRandom(report)) values.push(...report.randomLossLow, ...report.randomLossHigh);
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  // a level the curve crosses is inside the range already; one it never reaches is not drawn
  const pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.02 || 0.1;
  lo -= pad;
  hi += pad;
  // a legend on two rows (a narrow chart) moves the plot down
  const top = PAD.top + (legendLayout(report, width).rows - 1) * LEGEND_ROW;
  const W = width - PAD.left - PAD.right;
  const H = height - top - PAD.bottom;
  return {
    n,
    lo,
    hi,
    W,
    H,
    left: PAD.left,
    top,
    sx: (k) => PAD.left + (n > 0 ? (k / n) * W : W / 2),
    sy: (y) => top + H - ((y - lo) / (hi - lo)) * H,
  };
}

export function pruningScene(
  report,
  theme,
  { width = 420, height = 250, title = 'Loss as heads are switched off' } = {},
) {
  const items = [];
  const random = hasRandom(report);
  const greedy = Array.from(report.prunedLoss);
  const levels = RISES.map((r) => ({
    rise: r,
    level: (1 + r) * report.loss,
    k: headsOffBefore(greedy, report.loss, r),
  }));
  const { n, lo, hi, W, H, top, sx, sy } = pruningLayout(report, { width, height });
  const greedyColour = theme.heads[0];
  const randomColour = theme.heads[1];

  // title and legend
  items.push({ type: 'text', x: 4, y: 12, text: title, size: 13, weight: 'bold', fill: theme.fg });
  for (const e of legendLayout(report, width).entries) {
    if (e.sample === 'line')
      items.push({
        type: 'line',
        x1: e.x,
        y1: e.y,
        x2: e.x + e.sampleWidth,
        y2: e.y,
        stroke: greedyColour,
        width: 2.5,
      });
    else if (e.sample === 'dashed')
      dashed(items, e.x, e.y, e.x + e.sampleWidth, e.y, { stroke: randomColour, width: 2 }, 4, 3);
    else items.push({ type: 'rect', x: e.x, y: e.y - 5, w: e.sampleWidth, h: 10, fill: randomColour, opacity: 0.25 });
    items.push({
      type: 'text',
      x: e.x + e.sampleWidth + 4,
      y: e.y,
      text: e.text,
      size: LEGEND_SIZE,
      fill: theme.fg,
      data: { legend: e.sample },
    });
  }

  // axes: loss ticks with grid lines, heads-off ticks
  const yt = ticks(lo, hi, 4);
  const yDigits = digitsFor(yt.length > 1 ? yt[1] - yt[0] : 0.1);
  for (const v of yt) {
    if (v < lo || v > hi) continue;
    items.push({ type: 'line', x1: PAD.left, y1: sy(v), x2: PAD.left + W, y2: sy(v), stroke: theme.faint, width: 1 });
    items.push({
      type: 'text',
      x: PAD.left - 5,
      y: sy(v),
      text: v.toFixed(yDigits),
      size: 10,
      fill: theme.muted,
      anchor: 'end',
    });
  }
  for (const k of headTicks(n)) {
    items.push({ type: 'line', x1: sx(k), y1: top + H, x2: sx(k), y2: top + H + 4, stroke: theme.muted, width: 1 });
    items.push({
      type: 'text',
      x: sx(k),
      y: top + H + 13,
      text: String(k),
      size: 10,
      fill: theme.muted,
      anchor: 'middle',
    });
  }
  items.push({ type: 'line', x1: PAD.left, y1: top + H, x2: PAD.left + W, y2: top + H, stroke: theme.muted, width: 1 });
  items.push({ type: 'line', x1: PAD.left, y1: top, x2: PAD.left, y2: top + H, stroke: theme.muted, width: 1 });
  items.push({
    type: 'text',
    x: PAD.left + W,
    y: height - 6,
    text: `heads switched off (of ${n})`,
    size: 10,
    fill: theme.muted,
    anchor: 'end',
  });
  items.push({ type: 'text', x: 4, y: top - 10, text: 'loss (nats)', size: 10, fill: theme.muted });

  // random orders: a bar per step from the lowest to the highest loss, their mean dashed
  if (random) {
    const bw = Math.max(2, Math.min(18, (n > 0 ? W / n : W) * 0.7));
    for (let k = 0; k <= n; k++) {
      const barTop = sy(report.randomLossHigh[k]);
      const h = Math.max(1, sy(report.randomLossLow[k]) - barTop);
      items.push({
        type: 'rect',
        x: sx(k) - bw / 2,
        y: barTop,
        w: bw,
        h,
        fill: randomColour,
        opacity: 0.25,
        data: { series: 'band', k },
      });
    }
    for (let k = 1; k <= n; k++)
      dashed(
        items,
        sx(k - 1),
        sy(report.randomLossMean[k - 1]),
        sx(k),
        sy(report.randomLossMean[k]),
        { stroke: randomColour, width: 2, data: { series: 'random-mean' } },
        4,
        3,
      );
  }

  // the levels +5% and +10%, and where the greedy curve last stays under each
  for (const { rise, level, k } of levels) {
    if (level > hi) continue; // never reached: the summary says so
    const label = `+${Math.round(rise * 100)}%`;
    dashed(
      items,
      PAD.left,
      sy(level),
      PAD.left + W,
      sy(level),
      { stroke: theme.muted, width: 1, data: { rise } },
      3,
      3,
    );
    items.push({
      type: 'text',
      x: PAD.left + W + 4,
      y: sy(level),
      text: label,
      size: 10,
      fill: theme.muted,
      data: { rise },
    });
    if (k >= 0 && k < n) {
      dashed(
        items,
        sx(k),
        sy(level),
        sx(k),
        top + H,
        { stroke: theme.fg, width: 1, opacity: 0.7, data: { rise, k } },
        2,
        3,
      );
      items.push({
        type: 'text',
        x: sx(k) - 3,
        y: sy(level) - 7,
        text: `${k} off`,
        size: 10,
        fill: theme.fg,
        halo: theme.bg, // it often sits on the random orders' band
        anchor: 'end',
        data: { rise, k },
      });
    }
  }

  // the greedy curve on top, a dot per step
  for (let k = 1; k <= n; k++)
    items.push({
      type: 'line',
      x1: sx(k - 1),
      y1: sy(greedy[k - 1]),
      x2: sx(k),
      y2: sy(greedy[k]),
      stroke: greedyColour,
      width: 2.5,
      data: { series: 'greedy-line' },
    });
  const dot = n > 48 ? 3 : 5;
  for (let k = 0; k <= n; k++)
    items.push({
      type: 'rect',
      x: sx(k) - dot / 2,
      y: sy(greedy[k]) - dot / 2,
      w: dot,
      h: dot,
      rx: dot / 2,
      fill: greedyColour,
      data: { series: 'greedy', k },
    });
  return { width, height, background: theme.bg, font: theme.font, items };
}
