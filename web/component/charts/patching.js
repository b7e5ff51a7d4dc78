// "Which heads carry the answer?" (the demo's patching panel): a patching report (model.patch(), the
// CLI's `headscope patch`; scores defined in cpp/include/headscope/patching.hpp) as chart scenes
// (scene.js display lists) and the numbers the page states. Pure, so they are tested in Node
// (tests/js/unit/patching-charts.test.js).
//   alignTokens        the two texts' tokens side by side, the differing ones marked
//   headScore          a head's score: the exact one once computed, else the attribution estimate
//   patchHeadsScene    the layer x head map of scores in a diverging palette, estimates marked
//   patchResidScene    the residual stream's layer x position map
//   patchPositionScene one head's scores at each position (a by-position report)
//   patchScatterScene  the attribution estimate against the exact score, one dot per head
//   patchSummary, patchLabel   what the page says about a report
import { signedColour, parseRgb, inkOn, tokenLabel, tokenWords } from '../runtime/theme.js';
import { textWidth } from '../views/scene.js';
import { ticks } from './training-charts.js';

/** A score with a real minus sign: '0.41', '−0.05' (2 digits). */
export function scoreText(v, digits = 2) {
  if (!Number.isFinite(v)) return '…';
  const s = Math.abs(v).toFixed(digits);
  return v < 0 && Number(s) !== 0 ? `−${s}` : s;
}

/**
 * The two texts' tokens (Token[] of each) column by column: [{ clean, corrupted, differs }] (a text's
 * token missing past its end is null), and whether the counts are equal. The page draws it above the
 * panel's maps, so that a reader sees what was swapped before anything runs.
 */
export function alignTokens(clean, corrupted) {
  const n = Math.max(clean.length, corrupted.length);
  const columns = [];
  for (let i = 0; i < n; i++) {
    const a = clean[i] ?? null;
    const b = corrupted[i] ?? null;
    columns.push({ clean: a, corrupted: b, differs: !a || !b || a.id !== b.id });
  }
  return {
    columns,
    sameLength: clean.length === corrupted.length,
    differing: columns.filter((c) => c.differs).length,
    first: columns.findIndex((c) => c.differs),
  };
}

/** Head (l, h)'s score: { value, exact } (the exact score once in, else the attribution estimate). */
export function headScore(report, l, h) {
  const i = l * report.nHead + h;
  const exact = report.heads[i];
  return Number.isFinite(exact) ? { value: exact, exact: true } : { value: report.headsAttribution[i], exact: false };
}

// The colour scale's largest size: every value the map may show (exact and estimate alike, so that
// the colours do not jump as exact scores replace estimates), at least 0.1 so that a map of zeros stays pale
function scaleOf(values) {
  let m = 0.1;
  for (const v of values) if (Number.isFinite(v)) m = Math.max(m, Math.abs(v));
  return m;
}

const cellInk = (fill) => inkOn(...parseRgb(fill));

// a legend: the diverging scale from -max to +max, its ends labelled, under a title
function legend(items, theme, x, y, max, title) {
  const steps = 11;
  const w = 14;
  items.push({ type: 'text', x, y, text: title, size: 11, fill: theme.muted });
  const x0 = x + textWidth(title, 11) + 10;
  items.push({ type: 'text', x: x0, y, text: `−${max.toFixed(2)}`, size: 10, fill: theme.muted });
  const bx = x0 + textWidth(`−${max.toFixed(2)}`, 10) + 4;
  for (let s = 0; s < steps; s++) {
    const v = ((s - (steps - 1) / 2) / ((steps - 1) / 2)) * max;
    items.push({ type: 'rect', x: bx + s * w, y: y - 5, w, h: 10, fill: signedColour(theme, v, max) });
  }
  items.push({ type: 'text', x: bx + steps * w + 4, y, text: `+${max.toFixed(2)}`, size: 10, fill: theme.muted });
  return bx + steps * w + 4 + textWidth(`+${max.toFixed(2)}`, 10);
}

/**
 * The layer x head map: each cell the head's score (headScore), coloured on one diverging scale
 * (blue: brings the clean answer back; orange: pushes towards the distractor), its value written in
 * it; a cell still showing its attribution estimate is paler and its number starts with '≈'.
 * `selected`: [layer, head] outlined. Each cell has a focusable hit target ({ layer, head } data;
 * the selected one, else the first, in the tab order). Returns { scene, max, cell(l, h) -> box }.
 */
export function patchHeadsScene(report, theme, { selected = null, width = 420 } = {}) {
  const { nLayer: L, nHead: NH } = report;
  const left = 34;
  const top = 48;
  const c = Math.max(16, Math.min(54, Math.floor((width - left - 8) / NH)));
  const ch = Math.max(16, Math.min(30, Math.round(c * 0.62)));
  const max = scaleOf([...report.heads, ...report.headsAttribution]);
  const items = [];
  items.push({
    type: 'text',
    x: 4,
    y: 12,
    text: width >= 400 ? 'Score by head (1: brings the answer back alone)' : 'Score by head',
    size: 12,
    weight: 'bold',
    fill: theme.fg,
  });
  legend(items, theme, 4, 30, max, 'scale');
  const cell = (l, h) => ({ x: left + h * c, y: top + 14 + l * ch, w: c - 2, h: ch - 2 });
  for (let h = 0; h < NH; h++)
    if (c >= 22 || h % 2 === 0)
      items.push({
        type: 'text',
        x: left + h * c + (c - 2) / 2,
        y: top + 4,
        text: `H${h}`,
        size: 10,
        fill: theme.muted,
        anchor: 'middle',
      });
  const [sl, sh] = selected ?? [-1, -1];
  const focusable = sl >= 0 && sl < L && sh >= 0 && sh < NH ? [sl, sh] : [0, 0];
  for (let l = 0; l < L; l++) {
    const b = cell(l, 0);
    items.push({
      type: 'text',
      x: left - 5,
      y: b.y + b.h / 2,
      text: `L${l}`,
      size: 10,
      fill: theme.muted,
      anchor: 'end',
    });
    for (let h = 0; h < NH; h++) {
      const box = cell(l, h);
      const { value, exact } = headScore(report, l, h);
      const fill = signedColour(theme, value, max);
      items.push({
        type: 'rect',
        ...box,
        fill,
        opacity: exact ? 1 : 0.55,
        data: { layer: l, head: h, exact: exact ? 1 : 0 },
      });
      if (c >= 34 && ch >= 16)
        items.push({
          type: 'text',
          x: box.x + box.w / 2,
          y: box.y + box.h / 2,
          text: `${exact ? '' : '≈'}${scoreText(value)}`,
          size: c >= 44 ? 11 : 9,
          fill: exact ? cellInk(fill) : theme.fg,
          anchor: 'middle',
        });
      const on = l === sl && h === sh;
      if (on)
        items.push({
          type: 'rect',
          x: box.x - 1,
          y: box.y - 1,
          w: box.w + 2,
          h: box.h + 2,
          fill: 'none',
          stroke: theme.accent,
          strokeWidth: 2.5,
        });
      items.push({
        type: 'rect',
        ...box,
        hit: true,
        data: { layer: l, head: h },
        cls: 'hs-patch-cell',
        attrs: {
          tabindex: l === focusable[0] && h === focusable[1] ? 0 : -1,
          role: 'button',
          'aria-pressed': on ? 'true' : 'false',
          'aria-label': `Layer ${l} head ${h}: ${exact ? 'score' : 'estimated score'} ${scoreText(value)}`,
        },
      });
    }
  }
  const bottom = cell(L - 1, 0).y + ch + 4;
  return {
    scene: { width: Math.max(width, left + NH * c + 8), height: bottom, background: theme.bg, font: theme.font, items },
    max,
    cell,
  };
}

/**
 * The residual stream map: row l is the stream entering layer l (row 0: the embeddings), column p a
 * position; each cell the score of putting the clean run's stream there into the corrupted run.
 * Columns are labelled with the clean text's tokens, the differing ones as 'clean/corrupted' in the
 * accent colour. A cell not computed yet is faint with '…'.
 */
export function patchResidScene(report, theme, { width = 420 } = {}) {
  const { nLayer: L, tokens: T } = report;
  const left = 58;
  const c = Math.max(12, Math.min(46, Math.floor((width - left - 8) / T)));
  const ch = 20;
  const labelRoom = c >= 40 ? 18 : 72; // narrow columns: labels turned
  const top = 26 + labelRoom;
  const max = scaleOf(report.resid);
  const items = [];
  items.push({
    type: 'text',
    x: 4,
    y: 12,
    text: 'The residual stream, by layer and position',
    size: 12,
    weight: 'bold',
    fill: theme.fg,
  });
  for (let p = 0; p < T; p++) {
    const a = report.tokensClean[p];
    const b = report.tokensCorrupted[p];
    const differs = a.id !== b.id;
    const text = differs ? `${tokenLabel(a.text, 8)}/${tokenLabel(b.text, 8)}` : tokenLabel(a.text, 10);
    const x = left + p * c + (c - 2) / 2;
    items.push({
      type: 'text',
      x,
      y: top - 6,
      text,
      size: 10,
      fill: differs ? theme.accent : theme.muted,
      weight: differs ? 'bold' : undefined,
      anchor: c >= 40 ? 'middle' : 'start',
      rotate: c >= 40 ? undefined : -55,
      data: { position: p, differs: differs ? 1 : 0 },
    });
  }
  for (let l = 0; l < L; l++) {
    const y = top + l * ch;
    items.push({
      type: 'text',
      x: left - 5,
      y: y + (ch - 2) / 2,
      text: l === 0 ? 'embed' : `→L${l}`,
      size: 10,
      fill: theme.muted,
      anchor: 'end',
    });
    for (let p = 0; p < T; p++) {
      const v = report.resid[l * T + p];
      const known = Number.isFinite(v);
      const fill = known ? signedColour(theme, v, max) : theme.faint;
      items.push({ type: 'rect', x: left + p * c, y, w: c - 2, h: ch - 2, fill, data: { layer: l, position: p } });
      if (!known || c >= 30)
        items.push({
          type: 'text',
          x: left + p * c + (c - 2) / 2,
          y: y + (ch - 2) / 2,
          text: scoreText(v, c >= 40 ? 2 : 1),
          size: 9,
          fill: known ? cellInk(fill) : theme.muted,
          anchor: 'middle',
        });
    }
  }
  const bottom = top + L * ch + 18;
  legend(items, theme, 4, bottom - 6, max, 'scale');
  return {
    scene: {
      width: Math.max(width, left + T * c + 8),
      height: bottom + 4,
      background: theme.bg,
      font: theme.font,
      items,
    },
    max,
  };
}

/**
 * Head (layer, head)'s scores position by position (a report with headsByPosition), exact where
 * computed, else the estimate (paler, '≈'); positions labelled with the clean text's tokens. null
 * for a report without positions.
 */
export function patchPositionScene(report, theme, { layer, head, width = 420 } = {}) {
  if (!report.headsByPosition) return null;
  const { nHead: NH, tokens: T } = report;
  const left = 8;
  const c = Math.max(12, Math.min(46, Math.floor((width - left - 8) / T)));
  const top = 28;
  const ch = 24;
  const base = (layer * NH + head) * T;
  const values = [];
  for (let p = 0; p < T; p++)
    values.push(report.headsByPosition[base + p], report.headsByPositionAttribution[base + p]);
  const max = scaleOf(values);
  const items = [
    {
      type: 'text',
      x: 4,
      y: 12,
      text: `L${layer}H${head}, patched at one position at a time`,
      size: 12,
      weight: 'bold',
      fill: theme.fg,
    },
  ];
  for (let p = 0; p < T; p++) {
    const exact = report.headsByPosition[base + p];
    const isExact = Number.isFinite(exact);
    const v = isExact ? exact : report.headsByPositionAttribution[base + p];
    const fill = signedColour(theme, v, max);
    const x = left + p * c;
    items.push({
      type: 'rect',
      x,
      y: top,
      w: c - 2,
      h: ch,
      fill,
      opacity: isExact ? 1 : 0.55,
      data: { position: p, exact: isExact ? 1 : 0 },
    });
    if (c >= 30)
      items.push({
        type: 'text',
        x: x + (c - 2) / 2,
        y: top + ch / 2,
        text: `${isExact ? '' : '≈'}${scoreText(v, c >= 40 ? 2 : 1)}`,
        size: 9,
        fill: isExact ? cellInk(fill) : theme.fg,
        anchor: 'middle',
      });
    const a = report.tokensClean[p];
    const differs = a.id !== report.tokensCorrupted[p].id;
    items.push({
      type: 'text',
      x: x + (c - 2) / 2,
      y: top + ch + 8,
      text: tokenLabel(a.text, 10),
      size: 10,
      fill: differs ? theme.accent : theme.muted,
      weight: differs ? 'bold' : undefined,
      anchor: 'start',
      rotate: 55,
    });
  }
  return {
    scene: {
      width: Math.max(width, left + T * c + 8),
      height: top + ch + 62,
      background: theme.bg,
      font: theme.font,
      items,
    },
    max,
  };
}

/**
 * The attribution estimate (x) against the exact score (y), one dot per head whose exact score is
 * in, the diagonal where they agree, and the `label` heads furthest from it named. Returns { scene,
 * sx, sy, outliers: [[l, h], ...] }.
 */
export function patchScatterScene(report, theme, { width = 320, height = 260, selected = null, label = 3 } = {}) {
  const { nLayer: L, nHead: NH } = report;
  const pad = { left: 44, right: 40, top: 42, bottom: 34 };
  const points = [];
  for (let l = 0; l < L; l++)
    for (let h = 0; h < NH; h++) {
      const i = l * NH + h;
      if (Number.isFinite(report.heads[i])) points.push({ l, h, x: report.headsAttribution[i], y: report.heads[i] });
    }
  let lo = 0;
  let hi = 0;
  for (const p of points) ((lo = Math.min(lo, p.x, p.y)), (hi = Math.max(hi, p.x, p.y)));
  const room = (hi - lo) * 0.08 || 0.1;
  lo -= room;
  hi += room;
  const W = width - pad.left - pad.right;
  const H = height - pad.top - pad.bottom;
  const sx = (v) => pad.left + ((v - lo) / (hi - lo)) * W;
  const sy = (v) => pad.top + H - ((v - lo) / (hi - lo)) * H;
  const items = [
    { type: 'text', x: 4, y: 12, text: 'Estimate against exact score', size: 12, weight: 'bold', fill: theme.fg },
  ];
  for (const v of ticks(lo, hi, 4)) {
    if (v < lo || v > hi) continue;
    items.push({ type: 'line', x1: pad.left, y1: sy(v), x2: pad.left + W, y2: sy(v), stroke: theme.faint, width: 1 });
    items.push({
      type: 'text',
      x: pad.left - 4,
      y: sy(v),
      text: scoreText(v, 1),
      size: 10,
      fill: theme.muted,
      anchor: 'end',
    });
    items.push({
      type: 'text',
      x: sx(v),
      y: pad.top + H + 12,
      text: scoreText(v, 1),
      size: 10,
      fill: theme.muted,
      anchor: 'middle',
    });
  }
  items.push({
    type: 'line',
    x1: sx(lo),
    y1: sy(lo),
    x2: sx(hi),
    y2: sy(hi),
    stroke: theme.muted,
    width: 1,
    opacity: 0.8,
    data: { series: 'diagonal' },
  });
  items.push({
    type: 'line',
    x1: pad.left,
    y1: pad.top + H,
    x2: pad.left + W,
    y2: pad.top + H,
    stroke: theme.muted,
    width: 1,
  });
  items.push({ type: 'line', x1: pad.left, y1: pad.top, x2: pad.left, y2: pad.top + H, stroke: theme.muted, width: 1 });
  items.push({
    type: 'text',
    x: pad.left + W,
    y: height - 6,
    text: 'attribution estimate',
    size: 10,
    fill: theme.muted,
    anchor: 'end',
  });
  items.push({ type: 'text', x: 4, y: pad.top - 14, text: 'exact score', size: 10, fill: theme.muted });
  const [sl, sh] = selected ?? [-1, -1];
  const outliers = [...points]
    .sort((a, b) => Math.abs(b.y - b.x) - Math.abs(a.y - a.x))
    .slice(0, label)
    .filter((p) => Math.abs(p.y - p.x) > 0.02 * (hi - lo));
  for (const p of points) {
    const on = p.l === sl && p.h === sh;
    items.push({
      type: 'rect',
      x: sx(p.x) - (on ? 5 : 3.5),
      y: sy(p.y) - (on ? 5 : 3.5),
      w: on ? 10 : 7,
      h: on ? 10 : 7,
      rx: on ? 5 : 3.5,
      fill: on ? theme.accent : theme.heads[0],
      opacity: on ? 1 : 0.8,
      data: { layer: p.l, head: p.h },
    });
  }
  // a name beside its dot, on the side with room
  for (const p of outliers) {
    const right = sx(p.x) + 6 + textWidth(`L${p.l}H${p.h}`, 10) <= width - 2;
    items.push({
      type: 'text',
      x: right ? sx(p.x) + 6 : sx(p.x) - 6,
      y: sy(p.y) - 7,
      text: `L${p.l}H${p.h}`,
      size: 10,
      fill: theme.fg,
      anchor: right ? 'start' : 'end',
      data: { outlier: `${p.l}:${p.h}` },
    });
  }
  return {
    scene: { width, height, background: theme.bg, font: theme.font, items },
    sx,
    sy,
    outliers: outliers.map((p) => [p.l, p.h]),
  };
}

/**
 * What the page says about a report: the exact runs done, the heads with the largest scores
 * (exact, else estimated), the head whose estimate is furthest from its exact score, and how well
 * the estimate ranks the heads (how many of the `top` heads by exact score are also the top by estimate).
 */
export function patchSummary(report, { top = 3 } = {}) {
  const { nLayer: L, nHead: NH } = report;
  const heads = [];
  for (let l = 0; l < L; l++) for (let h = 0; h < NH; h++) heads.push({ l, h, ...headScore(report, l, h) });
  const best = [...heads].sort((a, b) => b.value - a.value).slice(0, top);
  let worst = null;
  for (let i = 0; i < L * NH; i++) {
    const e = report.heads[i];
    if (!Number.isFinite(e)) continue;
    const gap = Math.abs(e - report.headsAttribution[i]);
    if (!worst || gap > worst.gap)
      worst = { l: Math.floor(i / NH), h: i % NH, exact: e, attribution: report.headsAttribution[i], gap };
  }
  return { complete: report.complete, done: report.exactRunsDone, total: report.exactRunsTotal, best, worst };
}

/** The map's accessible name: what it shows and its largest scores. */
export function patchLabel(report) {
  const s = patchSummary(report);
  const best = s.best.map((b) => `layer ${b.l} head ${b.h} ${b.exact ? '' : 'about '}${scoreText(b.value)}`).join(', ');
  return (
    `Activation patching from ${JSON.stringify(tokenWords(report.answer.text))} against ${JSON.stringify(tokenWords(report.distractor.text))}: ` +
    `logit difference ${report.ldClean.toFixed(2)} on the clean text, ${report.ldCorrupted.toFixed(2)} on the corrupted one. ` +
    `Highest scores: ${best}. ${s.complete ? 'Every score is exact.' : `${s.done} of ${s.total} exact runs done; the rest are estimates.`}`
  );
}
