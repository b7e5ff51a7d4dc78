// The lines view: tokens in two columns and a line from each token to each earlier token it
// attends to (opacity = weight), for one head or several in colours. linesScene() is the pure scene
// builder; LinesView adds hover, tap and keyboard focus on a token.
import { textWidth } from './scene.js';
import { headColour, tokenLabel, tokenWords, quoteToken } from '../runtime/theme.js';
import { clamp, focusToken, windowAround } from '../model/describe.js';
import { SceneView } from './scene-view.js';
import { shownWeights, weightAt } from '../model/weighting.js';

const fmt2 = (w) => w.toFixed(2);

/** How many links per token the lines view draws by default: the strongest three. */
export const DEFAULT_LINKS = 3;

/**
 * The keys of row q with the k largest weights shown (src: shownWeights()) (k <= 0: all keys 0..q),
 * as a Set; ties go to the earlier key. One pass keeping the k best so far: O(q k), where sorting
 * the row cost O(q log q) for each of thousands of rows.
 */
function strongestKeys(src, q, k) {
  if (k <= 0 || k > q) return null; // every key
  const best = []; // [weight, key], strongest first
  for (let j = 0; j <= q; j++) {
    const w = weightAt(src, q, j);
    if (best.length === k && !(w > best[k - 1][0])) continue; // an equal weight keeps the earlier key
    let at = best.length === k ? k - 1 : best.length;
    while (at > 0 && w > best[at - 1][0]) at--;
    best.splice(at, 0, [w, j]);
    if (best.length > k) best.pop();
  }
  return new Set(best.map(([, j]) => j));
}

/** A long text's lines view shows this many tokens around the focused one. */
export const LINES_WINDOW = 128;

/** The tokens [from, to) the lines view shows of T around token `around`: all, or a window. */
export const linesWindow = (T, around) => windowAround(T, around, LINES_WINDOW);

/**
 * Lines view: tokens in two columns, a line from each token to the earlier tokens it attends to
 * most: the strongest `state.links` per token and head (default DEFAULT_LINKS; 0 = every pair), and
 * every link of a focused query token. Weights below 0.01 are never drawn. A text longer than
 * LINES_WINDOW shows the window of tokens around the focused one (linesWindow), with a row for the
 * tokens before it: each token's links to those are one line there, its opacity their sum.
 */
export function linesScene(result, state, theme, focus) {
  const { T, tokens } = result;
  const heads = state.heads && state.heads.length ? state.heads : [state.head];
  // per head: its weights, or weight × value size (state.by) when the result has the value sizes
  const sources = heads.map((h) => shownWeights(result, state, state.layer, h));
  // a long text's heads hold the rows of the window around the page's focused token (pulled-maps.js):
  // the window stays there, where a hovered token would move it
  const whole = sources.every((s) => !s.rows);
  const [from, to] = linesWindow(T, (whole ? focus?.index : null) ?? focusToken(result, state));
  const lead = from > 0 ? 1 : 0; // the row of the tokens before the window
  const links = Number.isInteger(state.links) && state.links >= 0 ? state.links : DEFAULT_LINKS;
  const weighted = sources.some((s) => s.weighted);
  const fs = 12;
  const rowH = T <= 40 ? 20 : 16;
  const labels = [];
  for (let i = from; i < to; i++) labels[i] = tokenLabel(tokens[i].text, 16);
  const earlier = `… ${from.toLocaleString('en-US')} before`;
  const later = `… ${(T - to).toLocaleString('en-US')} after`;
  const labelW =
    Math.max(
      40,
      ...labels.slice(from).map((s) => textWidth(s, fs)),
      ...(from || to < T ? [textWidth(earlier, fs)] : []),
    ) + 12;
  const gap = 170;
  const contentW = 2 * labelW + gap + 16;
  const width = Math.max(contentW, 400);
  const xL = (width - contentW) / 2 + 8 + labelW; // the two columns, centred
  const xR = xL + gap;
  const y0 = 58;
  const legendRows = Math.ceil(heads.length / 4);
  const rows = lead + (to - from) + (to < T ? 1 : 0);
  const height = y0 + rows * rowH + 14 + legendRows * 18;
  const items = [];
  const title =
    heads.length === 1 ? `Layer ${state.layer}, head ${heads[0]}` : `Layer ${state.layer}, heads ${heads.join(', ')}`;
  items.push({ type: 'text', x: 8, y: 12, text: title, size: 14, weight: 'bold', fill: theme.fg });
  items.push({ type: 'text', x: xL, y: 40, text: 'token', size: 11, fill: theme.muted, anchor: 'end' });
  items.push({ type: 'text', x: xR, y: 40, text: 'attends to', size: 11, fill: theme.muted });
  const fSide = focus?.side;
  const fIdx = focus?.index;
  items.push({
    type: 'text',
    x: 8,
    y: 28,
    size: 11,
    fill: theme.muted,
    text:
      fSide === 'q'
        ? `where ${quoteToken(tokens[fIdx].text)} looks (line opacity = ${weighted ? 'weight × value size' : 'weight'})`
        : fSide === 'k'
          ? `which tokens look at ${quoteToken(tokens[fIdx].text)}${links ? ` (among their ${links} strongest links)` : ''}`
          : `opacity = ${weighted ? 'weight × value size' : 'weight'}; ${links ? `${links} strongest link${links === 1 ? '' : 's'} per token; ` : ''}hover or tap a token`,
  });
  const rowTop = (i) => y0 + (i < from ? 0 : i - from + lead) * rowH; // every token before the window: its row
  const yOf = (i) => rowTop(i) + rowH / 2;
  // the focused token's highlight, under its target; always one item (empty without a focus), so
  // the targets after it keep their positions
  if (fSide) {
    const x = fSide === 'q' ? xL - labelW - 4 : xR + 2;
    items.push({ type: 'rect', x, y: rowTop(fIdx) + 1, w: labelW + 2, h: rowH - 2, fill: theme.faint, rx: 3 });
  } else {
    items.push({ type: 'rect', x: 0, y: 0, w: 0, h: 0, fill: 'none' });
  }
  // The pointer and keyboard targets come first, two a token shown after a fixed number of items: the live
  // SVG reuses elements by position, so each target stays the same element (under the pointer, with
  // the keyboard focus) when the focus changes how many lines follow. Texts let the pointer through.
  const hitRow = (side, x, i, tabindex, what) => ({
    type: 'rect',
    x,
    y: rowTop(i),
    w: labelW + 4,
    h: rowH,
    hit: true,
    data: { side, index: i },
    attrs: { tabindex, role: 'button', 'aria-label': `token ${i} '${tokenWords(tokens[i].text)}': ${what}` },
  });
  for (let i = from; i < to; i++) {
    items.push(hitRow('q', xL - labelW - 4, i, i === from ? 0 : -1, 'show where it looks'));
    items.push(hitRow('k', xR, i, -1, 'show what looks at it'));
  }
  heads.forEach((h, i) => {
    const colour = headColour(theme, i);
    const dy = (i - (heads.length - 1) / 2) * 1.5;
    const src = sources[i];
    for (let q = from; q < to; q++) {
      if (fSide === 'q' && q !== fIdx) continue;
      const keep = fSide === 'q' ? null : strongestKeys(src, q, links);
      let before = 0; // the weight of the links drawn to tokens before the window: one line
      for (let k = 0; k <= q; k++) {
        if (fSide === 'k' && k !== fIdx) continue;
        if (keep && !keep.has(k)) continue;
        const w = weightAt(src, q, k);
        if (w < 0.01) continue;
        if (k < from) {
          before += w;
          continue;
        }
        items.push({
          type: 'line',
          x1: xL + 4,
          y1: yOf(q) + dy,
          x2: xR - 4,
          y2: yOf(k) + dy,
          stroke: colour,
          width: fSide ? 3 : 2,
          opacity: clamp(w, 0, 1),
        });
      }
      if (before >= 0.01)
        items.push({
          type: 'line',
          x1: xL + 4,
          y1: yOf(q) + dy,
          x2: xR - 4,
          y2: yOf(from - 1) + dy,
          stroke: colour,
          width: fSide ? 3 : 2,
          opacity: clamp(before, 0, 1),
        });
    }
  });
  // per-token weights next to the other column when one token and one head are focused
  const single = heads.length === 1 ? heads[0] : null;
  const muted = (i, text) => {
    items.push({ type: 'text', x: xL - 2, y: yOf(i), text, size: fs, fill: theme.muted, anchor: 'end' });
    items.push({ type: 'text', x: xR + 6, y: yOf(i), text, size: fs, fill: theme.muted });
  };
  if (lead) {
    muted(from - 1, earlier);
    if (single !== null && fSide === 'q') {
      let sum = 0;
      for (let k = 0; k < from; k++) sum += weightAt(sources[0], fIdx, k);
      if (sum >= 0.005)
        items.push({
          type: 'text',
          x: xR - 8,
          y: yOf(from - 1) - 6,
          text: fmt2(sum),
          size: 9,
          fill: theme.muted,
          anchor: 'end',
        });
    }
  }
  if (to < T) muted(to, later);
  for (let i = from; i < to; i++) {
    const bold = fIdx === i ? 'bold' : undefined;
    items.push({
      type: 'text',
      x: xL - 2,
      y: yOf(i),
      text: labels[i],
      size: fs,
      fill: theme.fg,
      anchor: 'end',
      weight: fSide === 'q' ? bold : undefined,
    });
    items.push({
      type: 'text',
      x: xR + 6,
      y: yOf(i),
      text: labels[i],
      size: fs,
      fill: theme.fg,
      weight: fSide === 'k' ? bold : undefined,
    });
    if (single !== null && fSide === 'q' && i <= fIdx) {
      const w = weightAt(sources[0], fIdx, i);
      if (w >= 0.005)
        items.push({
          type: 'text',
          x: xR - 8,
          y: yOf(i) - 6,
          text: fmt2(w),
          size: 9,
          fill: theme.muted,
          anchor: 'end',
        });
    }
  }
  // legend: one colour per head
  heads.forEach((h, i) => {
    const lx = 8 + (i % 4) * 90;
    const ly = y0 + rows * rowH + 14 + Math.floor(i / 4) * 18;
    items.push({ type: 'rect', x: lx, y: ly - 5, w: 18, h: 10, fill: headColour(theme, i), rx: 2 });
    items.push({ type: 'text', x: lx + 24, y: ly, text: `head ${h}`, size: 11, fill: theme.fg });
  });
  return {
    scene: { width, height, background: theme.bg, font: theme.font, items },
    layout: { xL, xR, y0, rowH, T, from, to },
  };
}

/**
 * Lines view: hover (or tap, or focus with the keyboard) a token to isolate its lines. With a query
 * token pinned, picking a key token at or before it picks that line: onSelectCell(query, key).
 */
export class LinesView extends SceneView {
  constructor(host, { onSelectToken, onSelectCell } = {}) {
    super(host);
    this.onSelectToken = onSelectToken;
    this.onSelectCell = onSelectCell;
    this.query = null; // the query token last pinned
    this.focus = null; // { side: 'q'|'k', index }
    this.pinned = false;
    host.addEventListener('pointerover', (e) => {
      if (this.pinned || e.pointerType === 'touch') return;
      const t = this.#target(e);
      if (t && !this.#same(t)) this.setFocus(t);
    });
    host.addEventListener('pointerleave', () => {
      if (!this.pinned) this.setFocus(null);
    });
    host.addEventListener('click', (e) => {
      const t = this.#target(e);
      if (!t) {
        this.pinned = false;
        this.setFocus(null);
        return;
      }
      const same = this.#same(t) && this.pinned;
      this.pinned = !same;
      this.setFocus(same ? null : t);
      if (t.side === 'q' && !same) this.onSelectToken?.(t.index);
      this.#pick(t, same);
    });
    host.addEventListener('focusin', (e) => {
      const t = this.#target(e);
      // keyboard focus only: a click focuses too, and the click handler deals with that
      if (t && !this.#same(t) && e.target.matches(':focus-visible')) {
        this.pinned = true;
        this.setFocus(t, true);
      }
    });
    host.addEventListener('keydown', (e) => {
      const t = this.#target(e);
      if (!t) return;
      let { side, index } = t;
      if (e.key === 'ArrowDown') index++;
      else if (e.key === 'ArrowUp') index--;
      else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') side = side === 'q' ? 'k' : 'q';
      else if (e.key === 'Escape') {
        this.pinned = false;
        this.setFocus(null);
        return;
      } else if (e.key === 'Enter' || e.key === ' ') {
        if (side === 'q') this.onSelectToken?.(index);
        this.#pick({ side, index }, false);
        e.preventDefault();
        return;
      } else return;
      e.preventDefault();
      index = clamp(index, 0, (this.result?.T ?? 1) - 1);
      this.setFocus({ side, index }, true);
    });
  }

  // a query token remembered; a key token at or before it then picks their line
  #pick(t, unpinned) {
    if (t.side === 'q') this.query = unpinned ? null : t.index;
    else if (this.query !== null && t.index <= this.query) this.onSelectCell?.(this.query, t.index);
  }

  #same(t) {
    return !!this.focus && this.focus.side === t.side && this.focus.index === t.index;
  }

  #target(e) {
    const node = e.target?.closest?.('[data-side]');
    if (!node) return null;
    return { side: node.dataset.side, index: Number(node.dataset.index) };
  }

  setFocus(focus, moveKeyboardFocus = false) {
    this.focus = focus;
    this.#render();
    if (moveKeyboardFocus && focus && this.svg) {
      const node = this.svg.querySelector(`[data-side="${focus.side}"][data-index="${focus.index}"]`);
      if (node) {
        for (const n of this.svg.querySelectorAll('[tabindex="0"]')) n.setAttribute('tabindex', '-1');
        node.setAttribute('tabindex', '0');
        if (node.getRootNode().activeElement !== node) node.focus({ preventScroll: true });
      }
    }
  }

  update(result, state, theme) {
    this.result = result;
    this.state = state;
    this.theme = theme;
    if (this.focus && this.focus.index >= result.T) {
      this.focus = null;
      this.pinned = false;
    }
    const hadFocus = this.svg && this.svg.contains(this.host.getRootNode().activeElement);
    this.#render();
    if (hadFocus && this.focus) this.setFocus(this.focus, true);
  }

  #render() {
    if (!this.result) return;
    // a long text's result holds only the heads a page pulled: until they arrive the picture stays
    const heads = this.state.heads?.length ? this.state.heads : [this.state.head];
    // (and of a focus moved, until the rows of its window arrive)
    const [from, to] = linesWindow(this.result.T, focusToken(this.result, this.state));
    const held = (s) => s && (!s.rows || (s.rows[0] <= from && to <= s.rows[1]));
    if (heads.some((h) => !held(shownWeights(this.result, this.state, this.state.layer, h)))) return;
    const { scene } = linesScene(this.result, this.state, this.theme, this.focus);
    this.show(scene, `Lines view, layer ${this.state.layer}, heads ${heads.join(', ')}`, 'group');
    this.svg.dataset.focus = this.focus ? `${this.focus.side}${this.focus.index}` : '';
  }
}
