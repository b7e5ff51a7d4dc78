// "How heads combine": what each head of a layer writes into the residual stream through its rows
// of W_O, as the norm of its contribution at the focused token, and beside it that write's push on
// the next token's logit (direct logit attribution, the model's logitAttribution()). combineScene()
// is the pure scene builder; CombineView shows it and picks a head on click.
import { heat, headColour, signedColour, quoteToken } from '../runtime/theme.js';
import { contributionIndex, sameAblate } from '../../lib/result.js';
import { wrap } from './scene.js';
import { focusToken, clamp } from '../model/describe.js';
import { SceneView } from './scene-view.js';
import { HostWidth } from './host-width.js';

/** A signed number with a real minus sign, and + for the rest: '+1.234', '−0.501'. */
export function signedText(v, digits) {
  const s = Math.abs(v).toFixed(digits);
  return v < 0 && Number(s) !== 0 ? `−${s}` : `+${s}`;
}

/**
 * The logit the view splits at the focused token t: at the last token, the model's prediction for
 * the next token (topNext[0]); earlier, the text's own next token (tokens[t + 1]).
 * { position, token (vocabulary id), text, predicted } or null (a result without predictions).
 */
export function attributionTarget(result, state) {
  const t = focusToken(result, state);
  if (t < result.T - 1)
    return { position: t, token: result.tokens[t + 1].id, text: result.tokens[t + 1].text, predicted: false };
  const top = result.topNext?.[0];
  return top ? { position: t, token: top.id, text: top.token, predicted: true } : null;
}

// The attribution given, if it is the one for this result and focus: the same position and token
// and, when it says so, the same text and switched-off heads (an answer about another text is
// dropped, never drawn).
function matchingAttribution(result, target, a) {
  if (!a || !target || !a.heads || a.heads.length !== result.nLayer * result.nHead) return null;
  if (a.position !== target.position || a.token !== target.token) return null;
  if (a.text !== undefined && a.text !== result.text) return null;
  if (a.ablate !== undefined && !sameAblate(a.ablate, result.ablate ?? [])) return null;
  return a;
}

/**
 * "How heads combine": each head's contribution norm at the focused token in one layer and, with
 * `attribution` (logitAttribution() of this result's text at attributionTarget()'s position and
 * token), each head's direct logit attribution as a signed bar. Without one, or with one of
 * another text, position or token, the bars' place says why: `attribution.note` when it is
 * { note } instead, else 'reading…'.
 *   width: the room the picture should fit (px); the bars share what is left beside the labels.
 * Returns { scene, norms, target, attribution } (attribution: the one drawn, or null).
 */
export function combineScene(result, state, theme, attribution = null, { width: room = 460 } = {}) {
  const { nHead, tokens } = result;
  const layer = state.layer;
  const t = focusToken(result, state);
  const target = attributionTarget(result, state);
  const a = matchingAttribution(result, target, attribution);
  const note = !a && typeof attribution?.note === 'string' ? attribution.note : 'reading…';
  const norms = [];
  for (let h = 0; h < nHead; h++) norms.push(result.contributionNorms[contributionIndex(result, layer, h, t)]);
  const max = Math.max(1e-9, ...norms);
  const rowH = 22;
  const labelW = 62;
  const width = clamp(Math.round(room), 330, 600);
  const normTextW = 36;
  const gap = 14;
  const dlaTextW = 50;
  const bars = width - 8 - labelW - normTextW - gap - dlaTextW - 8;
  const barW = Math.round(bars * 0.45);
  const dlaW = bars - barW;
  const dlaX = labelW + barW + normTextW + gap;
  const zeroX = dlaX + dlaW / 2;
  const items = [];
  items.push({
    type: 'text',
    x: 8,
    y: 12,
    text: `Layer ${layer}, token ${t}: ${quoteToken(tokens[t].text)}`,
    size: 14,
    weight: 'bold',
    fill: theme.fg,
  });
  // the combination step: head outputs side by side -> × W_O -> one update
  const dy = 40;
  items.push({ type: 'text', x: 8, y: dy, text: 'head outputs, side by side', size: 10, fill: theme.muted });
  const segW = Math.min(26, 170 / nHead);
  for (let h = 0; h < nHead; h++) {
    const x = 8 + h * segW;
    items.push({
      type: 'rect',
      x,
      y: dy + 10,
      w: segW - 2,
      h: 18,
      fill: heat(theme, 0.15 + (0.85 * norms[h]) / max),
      rx: 2,
      data: { head: h },
    });
    if (segW >= 16)
      items.push({
        type: 'text',
        x: x + (segW - 2) / 2,
        y: dy + 38,
        text: `h${h}`,
        size: 9,
        fill: theme.muted,
        anchor: 'middle',
      });
  }
  const ax = 8 + nHead * segW + 8;
  items.push({ type: 'text', x: ax, y: dy + 19, text: '× W_O →', size: 12, fill: theme.fg, weight: 'bold' });
  items.push({
    type: 'rect',
    x: ax + 62,
    y: dy + 10,
    w: 70,
    h: 18,
    fill: theme.faint,
    stroke: theme.muted,
    strokeWidth: 1,
    rx: 3,
  });
  items.push({ type: 'text', x: ax + 97, y: dy + 19, text: 'one update', size: 10, fill: theme.fg, anchor: 'middle' });
  items.push({ type: 'text', x: ax + 62, y: dy + 38, text: 'added to the token', size: 9, fill: theme.muted });
  // two columns of bars, each under its heading (wrapped to the column: on a phone each has about
  // 120 px): the size of each head's share, and its push on the explained logit, whose two sides
  // are named at the column's ends
  const tokenName = target ? quoteToken(target.text) : 'the next token';
  const headings = [
    {
      x: labelW,
      w: dlaX - labelW - 10,
      lines: [
        ["size of each head's share", 11],
        ['(its output × its rows of W_O)', 10],
      ],
    },
    { x: dlaX, w: width - dlaX - 8, lines: [[`its push on ${tokenName}`, 11]] },
  ].map((c) => ({ ...c, lines: c.lines.flatMap(([text, size]) => wrap(text, size, c.w).map((line) => [line, size])) }));
  headings[1].lines.push(['', 10]); // the line of the sides' names
  const top = dy + 62;
  const y0 = top + Math.max(...headings.map((c) => c.lines.length)) * 13 + 2;
  for (const c of headings) {
    c.lines.forEach(([text, size], i) => {
      if (text) items.push({ type: 'text', x: c.x, y: top + i * 13, text, size, fill: theme.muted });
    });
  }
  const sidesY = top + (headings[1].lines.length - 1) * 13;
  items.push({ type: 'text', x: dlaX, y: sidesY, text: '− against', size: 10, fill: theme.muted });
  items.push({ type: 'text', x: dlaX + dlaW, y: sidesY, text: 'for +', size: 10, fill: theme.muted, anchor: 'end' });
  if (!a) {
    // no bars yet: the column says why, in the rows' place
    wrap(note, 11, dlaW + dlaTextW).forEach((line, i) => {
      items.push({
        type: 'text',
        x: dlaX,
        y: y0 + rowH / 2 + i * 15,
        text: line,
        size: 11,
        fill: theme.muted,
        data: i === 0 ? { attributionNote: note } : undefined,
      });
    });
  }
  const headsHere = a ? a.heads.slice(layer * nHead, (layer + 1) * nHead) : null;
  const dlaMax = headsHere ? Math.max(1e-9, ...headsHere.map(Math.abs)) : 1;
  for (let h = 0; h < nHead; h++) {
    const y = y0 + h * rowH;
    const sel = h === state.head;
    items.push({
      type: 'text',
      x: labelW - 6,
      y: y + rowH / 2,
      text: `head ${h}`,
      size: 12,
      fill: theme.fg,
      anchor: 'end',
      weight: sel ? 'bold' : undefined,
    });
    items.push({ type: 'rect', x: labelW, y: y + 3, w: barW, h: rowH - 6, fill: theme.faint, rx: 2 });
    items.push({
      type: 'rect',
      x: labelW,
      y: y + 3,
      w: Math.max(1, (barW * norms[h]) / max),
      h: rowH - 6,
      fill: sel ? theme.accent : headColour(theme, 0),
      rx: 2,
      data: { head: h },
      cls: 'hs-bar',
    });
    items.push({
      type: 'text',
      x: labelW + barW + 6,
      y: y + rowH / 2,
      text: norms[h].toFixed(2),
      size: 11,
      fill: theme.muted,
    });
    if (headsHere) {
      items.push({ type: 'rect', x: dlaX, y: y + 3, w: dlaW, h: rowH - 6, fill: theme.faint, rx: 2 });
      const v = headsHere[h];
      const w = Math.max(1, ((dlaW / 2) * Math.abs(v)) / dlaMax);
      items.push({
        type: 'rect',
        x: v < 0 ? zeroX - w : zeroX,
        y: y + 3,
        w,
        h: rowH - 6,
        fill: signedColour(theme, v, Math.abs(v)),
        rx: 2,
        data: { head: h, dla: v },
        cls: 'hs-dla-bar',
      });
      items.push({
        type: 'text',
        x: dlaX + dlaW + 6,
        y: y + rowH / 2,
        text: signedText(v, 2),
        size: 11,
        fill: theme.muted,
        data: { dlaText: h },
      });
    }
  }
  const yEnd = y0 + nHead * rowH;
  if (a) items.push({ type: 'line', x1: zeroX, y1: y0, x2: zeroX, y2: yEnd, stroke: theme.muted, width: 1 });
  // The sentences under the bars: the token explained and the check of the sum against the logit.
  // Without an attribution their room is kept (placeholder numbers), so that the page below does
  // not move at every keystroke while the next one is read.
  let y = yEnd + 16;
  if (target) {
    const word = quoteToken(target.text);
    const which = target.predicted ? "the model's prediction for the next token" : 'the next token of the text';
    const layerSum = a ? headsHere.reduce((s, v) => s + v, 0) : 0;
    const num = (v) => (a ? signedText(v, 3) : '+00.000');
    const total = a ? a.total.toFixed(3) : '00.000';
    const check =
      target.position === result.T - 1
        ? `All parts sum to ${total}; the model's logit is ${a ? a.logit.toFixed(3) : '00.000'}.`
        : `All parts sum to ${total}, the logit (the run computes logits at the last token only, so there is none to check it against here).`;
    const sentences = [
      {
        text: `Pushing ${word} (${which}): each head's write through the final ${a?.norm ?? 'LayerNorm'} at this token onto the unembedding of ${word}.`,
        fill: theme.fg,
        always: true,
      },
      {
        text: `Layer ${layer}'s heads together: ${num(layerSum)}. Every other part (the other layers' heads, the MLPs, ${a?.norm === 'RMSNorm' ? 'the embeddings' : "W_O's biases, the embeddings, the LayerNorm's bias"}): ${num(a ? a.total - layerSum : 0)}.`,
        fill: theme.muted,
      },
      {
        text: check,
        fill: theme.fg,
        data: a ? { total: a.total, logit: a.logit, layerSum, position: a.position, token: a.token } : undefined,
      },
    ];
    for (const s of sentences) {
      wrap(s.text, 11, width - 16).forEach((line, i) => {
        if (a || s.always)
          items.push({ type: 'text', x: 8, y, text: line, size: 11, fill: s.fill, data: i === 0 ? s.data : undefined });
        y += 15;
      });
      y += 3;
    }
  }
  const height = y - 4;
  return { scene: { width, height, background: theme.bg, font: theme.font, items }, norms, target, attribution: a };
}

/** How heads combine: bars of each head's contribution norm at the focused token, and its push on the next token. */
export class CombineView extends SceneView {
  constructor(host, { onSelectHead } = {}) {
    super(host);
    this.hostWidth = new HostWidth(host, () => {
      if (this.last) this.update(...this.last);
    });
    host.addEventListener('click', (e) => {
      const node = e.target?.closest?.('[data-head]');
      if (node) onSelectHead?.(Number(node.dataset.head));
    });
  }

  /** The room the picture has: the host's width, as the scene lays itself out for it. */
  get width() {
    return this.hostWidth.width || 460;
  }

  /** `attribution`: a LogitAttribution, or { note } saying why there is none (see combineScene). */
  update(result, state, theme, attribution = null) {
    this.last = [result, state, theme, attribution];
    const {
      scene,
      target,
      attribution: shown,
    } = combineScene(result, state, theme, attribution, { width: this.width });
    // the picture is one image to a screen reader: its name carries the split's sum
    const pushes = shown
      ? `, and how much each pushes ${quoteToken(target.text)} (all parts sum to ${shown.total.toFixed(3)})`
      : '';
    this.show(scene, `How the heads of layer ${state.layer} combine at token ${focusToken(result, state)}${pushes}`);
    // for tests and scripts: what the bars show (the token split, or why nothing is)
    const d = this.host.dataset;
    const status = shown ? `${shown.position}:${shown.token}` : 'none';
    if (d.attribution !== status) d.attribution = status;
  }
}
