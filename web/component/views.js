// The views: model overview grid, head detail heatmap, lines view, "how heads combine" bars and
// next-token predictions. Each view is a small class with update(result, state, theme); the
// scene-based ones (heatmap, lines, combine, and the grid's export) build a display list
// (scene.js) that is shown as SVG and exported as SVG or PNG.
//
// `state` is shared by all views of one page or widget:
//   { layer, head, heads: [head indices shown together in the lines view], token: selected query
//     token index or null for the last token, ablate: [[layer, head]...] (reserved for ablation) }
// Layers and heads are counted from 0, as in the engine's API and CLI.
import { LiveSvg, textWidth } from './scene.js';
import { heat, heatIndex, headColour, tokenLabel, tokenWords, quoteToken } from './theme.js';

const fmt2 = (w) => w.toFixed(2);
const fmt4 = (w) => w.toFixed(4);

export function clamp(v, lo, hi) { return Math.max(lo, Math.min(hi, v)); }

/** The query token index the views focus on (the selected one, or the last token). */
export function focusToken(result, state) {
  const t = state.token;
  return Number.isInteger(t) && t >= 0 && t < result.T ? t : result.T - 1;
}

function weightAt(result, layer, head, q, k) {
  const T = result.T;
  return result.attentionAll[((layer * result.nHead + head) * T + q) * T + k];
}

/** The key token that query `q` attends to most in one head: { k, w }. */
export function strongestKey(result, layer, head, q) {
  let best = 0;
  let bw = -1;
  for (let k = 0; k <= q; k++) {
    const w = weightAt(result, layer, head, q, k);
    if (w > bw) { bw = w; best = k; }
  }
  return { k: best, w: bw };
}

/** Screen-reader sentence for a head, e.g. "Layer 1, head 3: 'cooked' attends most to 'chef' (0.62)". */
export function describeHead(result, layer, head, q) {
  if (!result || result.T === 0) return `Layer ${layer}, head ${head}`;
  const { k, w } = strongestKey(result, layer, head, q);
  const from = quoteToken(result.tokens[q].text);
  const to = k === q ? 'itself' : quoteToken(result.tokens[k].text);
  return `Layer ${layer}, head ${head}: ${from} attends most to ${to} (${fmt2(w)})`;
}

// ---------------------------------------------------------------------------------------------
// Scenes

/** Heatmap of one head: rows are query tokens, columns are the key tokens they attend to. */
export function heatmapScene(result, state, theme, { image = false } = {}) {
  // image: leave the cells (and the background) out; the page paints them on a canvas underneath,
  // which is much cheaper than T*T SVG rectangles on every keystroke. Exports use the full scene.
  const { T, tokens } = result;
  const { layer, head } = state;
  const q0 = focusToken(result, state);
  const cell = T <= 16 ? 26 : T <= 32 ? 18 : T <= 64 ? 13 : T <= 100 ? 11 : 9;
  const fs = cell >= 18 ? 12 : cell >= 13 ? 10 : 9;
  const labels = tokens.map((t) => tokenLabel(t.text, 14));
  const labelW = Math.max(30, ...labels.map((s) => textWidth(s, fs))) + 8;
  const angle = -55;
  const sin = Math.sin((-angle * Math.PI) / 180);
  const cos = Math.cos((-angle * Math.PI) / 180);
  const titleH = 40;
  const x0 = labelW + 22;
  const y0 = titleH + labelW * sin + 12;
  const gridW = T * cell;
  const subtitle = 'row = a token; its row shows how much it looks at each earlier token (columns)';
  const width = Math.max(x0 + gridW + labelW * cos + 12, textWidth(subtitle, 11) + 24, 320);
  const legendH = 46;
  const height = y0 + gridW + legendH;
  const items = [];
  items.push({ type: 'text', x: 8, y: 12, text: `Layer ${layer}, head ${head}: attention weights`, size: 14, weight: 'bold', fill: theme.fg });
  items.push({ type: 'text', x: 8, y: 30, text: subtitle, size: 11, fill: theme.muted });
  // axis titles
  items.push({ type: 'text', x: 10, y: y0 + gridW / 2, text: '← token (query)', size: 10, fill: theme.muted, anchor: 'middle', rotate: -90 });
  if (!image) {
    items.push({ type: 'rect', x: x0, y: y0, w: gridW, h: gridW, fill: theme.faint });
    for (let q = 0; q < T; q++) {
      for (let k = 0; k <= q; k++) {
        const w = weightAt(result, layer, head, q, k);
        items.push({ type: 'rect', x: x0 + k * cell, y: y0 + q * cell, w: cell, h: cell, fill: heat(theme, w) });
      }
    }
  }
  items.push({ type: 'rect', x: x0 - 0.5, y: y0 + q0 * cell - 0.5, w: (q0 + 1) * cell + 1, h: cell + 1, fill: 'none', stroke: theme.accent, strokeWidth: 2 });
  for (let i = 0; i < T; i++) {
    const bold = i === q0 ? 'bold' : undefined;
    items.push({ type: 'text', x: x0 - 5, y: y0 + i * cell + cell / 2, text: labels[i], size: fs, fill: theme.fg, anchor: 'end', weight: bold, data: { row: i } });
    items.push({ type: 'text', x: x0 + i * cell + cell / 2, y: y0 - 5, text: labels[i], size: fs, fill: theme.fg, rotate: angle, weight: bold });
  }
  // colour legend
  const ly = y0 + gridW + 18;
  const lw = Math.min(200, width - x0 - 40);
  const steps = 40;
  for (let i = 0; i < steps; i++) {
    const p = i / (steps - 1);
    items.push({ type: 'rect', x: x0 + (i * lw) / steps, y: ly, w: lw / steps + 0.5, h: 10, fill: heat(theme, p * p) });
  }
  // square-root colour scale: weight 0.25 sits in the middle
  for (const [p, label] of [[0, '0'], [0.5, '0.25'], [1, '1']]) {
    items.push({ type: 'text', x: x0 + p * lw, y: ly + 20, text: label, size: 10, fill: theme.muted, anchor: 'middle' });
  }
  items.push({ type: 'text', x: x0 + lw + 12, y: ly + 5, text: 'attention weight (√ scale)', size: 10, fill: theme.muted });
  return { scene: { width, height, background: image ? null : theme.bg, font: theme.font, items }, layout: { x0, y0, cell, T, width, height } };
}

// Per canvas: its 2D context and a reusable ImageData (with a 32-bit view) of the current size.
const paintCache = new WeakMap();
// Per colour table: the 256 colours as 32-bit RGBA pixels in the platform's byte order (Int32:
// values that fit a small integer keep V8's pixel loop free of heap numbers).
const lut32Cache = new WeakMap();
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
function pixel32(r, g, b) {
  return LITTLE_ENDIAN ? (255 << 24) | (b << 16) | (g << 8) | r : (r << 24) | (g << 16) | (b << 8) | 255;
}
function lut32Of(lut) {
  let out = lut32Cache.get(lut);
  if (!out) {
    out = new Int32Array(256);
    for (let i = 0; i < 256; i++) out[i] = pixel32(lut[i * 3], lut[i * 3 + 1], lut[i * 3 + 2]);
    lut32Cache.set(lut, out);
  }
  return out;
}

/** Paints one head's T x T attention on a canvas, one pixel per cell (upper triangle: faint). */
export function paintAttention(canvas, result, layer, head, theme) {
  const T = result.T;
  const n = Math.max(1, T);
  let c = paintCache.get(canvas);
  if (!c) { c = { ctx: null, img: null, u32: null }; paintCache.set(canvas, c); }
  if (canvas.width !== n || canvas.height !== n) { canvas.width = n; canvas.height = n; }
  if (!c.ctx) c.ctx = canvas.getContext('2d');
  if (!c.img || c.img.width !== n) {
    c.img = c.ctx.createImageData(n, n);
    c.u32 = new Int32Array(c.img.data.buffer, c.img.data.byteOffset, n * n);
  }
  const px = c.u32;
  const lut = lut32Of(theme.lut.lut);
  const [fr, fg, fb] = parseCss(theme.faint);
  const faint = pixel32(fr, fg, fb);
  const base = (layer * result.nHead + head) * T * T;
  const A = result.attentionAll;
  for (let q = 0; q < T; q++) {
    const row = q * n;
    const src = base + q * T;
    for (let k = 0; k <= q; k++) px[row + k] = lut[heatIndex(A[src + k])];
    for (let k = q + 1; k < n; k++) px[row + k] = faint;
  }
  if (T === 0) px[0] = 0; // nothing to show: transparent
  c.ctx.putImageData(c.img, 0, 0);
}

/** Lines view: tokens in two columns, a line from each token to each earlier token it attends to. */
export function linesScene(result, state, theme, focus) {
  const { T, tokens } = result;
  const heads = state.heads && state.heads.length ? state.heads : [state.head];
  const fs = 12;
  const rowH = T <= 40 ? 20 : 16;
  const labels = tokens.map((t) => tokenLabel(t.text, 16));
  const labelW = Math.max(40, ...labels.map((s) => textWidth(s, fs))) + 12;
  const gap = 170;
  const contentW = 2 * labelW + gap + 16;
  const width = Math.max(contentW, 400);
  const xL = (width - contentW) / 2 + 8 + labelW; // the two columns, centred
  const xR = xL + gap;
  const y0 = 58;
  const legendRows = Math.ceil(heads.length / 4);
  const height = y0 + T * rowH + 14 + legendRows * 18;
  const items = [];
  const title = heads.length === 1 ? `Layer ${state.layer}, head ${heads[0]}` : `Layer ${state.layer}, heads ${heads.join(', ')}`;
  items.push({ type: 'text', x: 8, y: 12, text: title, size: 14, weight: 'bold', fill: theme.fg });
  items.push({ type: 'text', x: xL, y: 40, text: 'token', size: 11, fill: theme.muted, anchor: 'end' });
  items.push({ type: 'text', x: xR, y: 40, text: 'attends to', size: 11, fill: theme.muted });
  const fSide = focus?.side;
  const fIdx = focus?.index;
  items.push({
    type: 'text', x: 8, y: 28, size: 11, fill: theme.muted,
    text: fSide === 'q' ? `where ${quoteToken(tokens[fIdx].text)} looks (line opacity = weight)`
      : fSide === 'k' ? `which tokens look at ${quoteToken(tokens[fIdx].text)}`
        : 'line opacity = attention weight; hover or tap a token',
  });
  const yOf = (i) => y0 + i * rowH + rowH / 2;
  if (fSide) {
    const x = fSide === 'q' ? xL - labelW - 4 : xR + 2;
    items.push({ type: 'rect', x, y: y0 + fIdx * rowH + 1, w: labelW + 2, h: rowH - 2, fill: theme.faint, rx: 3 });
  }
  heads.forEach((h, i) => {
    const colour = headColour(theme, i);
    const dy = (i - (heads.length - 1) / 2) * 1.5;
    for (let q = 0; q < T; q++) {
      if (fSide === 'q' && q !== fIdx) continue;
      for (let k = 0; k <= q; k++) {
        if (fSide === 'k' && k !== fIdx) continue;
        const w = weightAt(result, state.layer, h, q, k);
        if (w < 0.01) continue;
        items.push({ type: 'line', x1: xL + 4, y1: yOf(q) + dy, x2: xR - 4, y2: yOf(k) + dy, stroke: colour, width: fSide ? 3 : 2, opacity: clamp(w, 0, 1) });
      }
    }
  });
  // per-token weights next to the other column when one token and one head are focused
  const single = heads.length === 1 ? heads[0] : null;
  for (let i = 0; i < T; i++) {
    const bold = fIdx === i ? 'bold' : undefined;
    items.push({ type: 'text', x: xL - 2, y: yOf(i), text: labels[i], size: fs, fill: theme.fg, anchor: 'end', weight: fSide === 'q' ? bold : undefined });
    items.push({ type: 'text', x: xR + 6, y: yOf(i), text: labels[i], size: fs, fill: theme.fg, weight: fSide === 'k' ? bold : undefined });
    items.push({ type: 'rect', x: xL - labelW - 4, y: y0 + i * rowH, w: labelW + 4, h: rowH, hit: true, data: { side: 'q', index: i }, attrs: { tabindex: i === 0 ? 0 : -1, role: 'button', 'aria-label': `token ${i} '${tokenWords(tokens[i].text)}': show where it looks` } });
    items.push({ type: 'rect', x: xR, y: y0 + i * rowH, w: labelW + 4, h: rowH, hit: true, data: { side: 'k', index: i }, attrs: { tabindex: -1, role: 'button', 'aria-label': `token ${i} '${tokenWords(tokens[i].text)}': show what looks at it` } });
    if (single !== null && fSide === 'q' && i <= fIdx) {
      const w = weightAt(result, state.layer, single, fIdx, i);
      if (w >= 0.005) items.push({ type: 'text', x: xR - 8, y: yOf(i) - 6, text: fmt2(w), size: 9, fill: theme.muted, anchor: 'end' });
    }
  }
  // legend: one colour per head
  heads.forEach((h, i) => {
    const lx = 8 + (i % 4) * 90;
    const ly = y0 + T * rowH + 14 + Math.floor(i / 4) * 18;
    items.push({ type: 'rect', x: lx, y: ly - 5, w: 18, h: 10, fill: headColour(theme, i), rx: 2 });
    items.push({ type: 'text', x: lx + 24, y: ly, text: `head ${h}`, size: 11, fill: theme.fg });
  });
  return { scene: { width, height, background: theme.bg, font: theme.font, items }, layout: { xL, xR, y0, rowH, T } };
}

/** "How heads combine": each head's contribution norm at the focused token in one layer. */
export function combineScene(result, state, theme) {
  const { T, nHead, tokens } = result;
  const layer = state.layer;
  const t = focusToken(result, state);
  const norms = [];
  for (let h = 0; h < nHead; h++) norms.push(result.contributionNorms[(layer * nHead + h) * T + t]);
  const max = Math.max(1e-9, ...norms);
  const rowH = 22;
  const labelW = 62;
  const barW = 230;
  const width = labelW + barW + 70;
  const items = [];
  items.push({ type: 'text', x: 8, y: 12, text: `Layer ${layer}, token ${t}: ${quoteToken(tokens[t].text)}`, size: 14, weight: 'bold', fill: theme.fg });
  // the combination step: head outputs side by side -> × W_O -> one update
  const dy = 40;
  items.push({ type: 'text', x: 8, y: dy, text: 'head outputs, side by side', size: 10, fill: theme.muted });
  const segW = Math.min(26, 170 / nHead);
  for (let h = 0; h < nHead; h++) {
    const x = 8 + h * segW;
    items.push({ type: 'rect', x, y: dy + 10, w: segW - 2, h: 18, fill: heat(theme, 0.15 + (0.85 * norms[h]) / max), rx: 2, data: { head: h } });
    if (segW >= 16) items.push({ type: 'text', x: x + (segW - 2) / 2, y: dy + 38, text: `h${h}`, size: 9, fill: theme.muted, anchor: 'middle' });
  }
  const ax = 8 + nHead * segW + 8;
  items.push({ type: 'text', x: ax, y: dy + 19, text: '× W_O →', size: 12, fill: theme.fg, weight: 'bold' });
  items.push({ type: 'rect', x: ax + 62, y: dy + 10, w: 70, h: 18, fill: theme.faint, stroke: theme.muted, strokeWidth: 1, rx: 3 });
  items.push({ type: 'text', x: ax + 97, y: dy + 19, text: 'one update', size: 10, fill: theme.fg, anchor: 'middle' });
  items.push({ type: 'text', x: ax + 62, y: dy + 38, text: 'added to the token', size: 9, fill: theme.muted });
  const y0 = dy + 72;
  items.push({ type: 'text', x: 8, y: y0 - 12, text: 'size of each head\'s share (its output × its rows of W_O)', size: 11, fill: theme.muted });
  const height = y0 + nHead * rowH + 8;
  for (let h = 0; h < nHead; h++) {
    const y = y0 + h * rowH;
    const sel = h === state.head;
    items.push({ type: 'text', x: labelW - 6, y: y + rowH / 2, text: `head ${h}`, size: 12, fill: theme.fg, anchor: 'end', weight: sel ? 'bold' : undefined });
    items.push({ type: 'rect', x: labelW, y: y + 3, w: barW, h: rowH - 6, fill: theme.faint, rx: 2 });
    items.push({ type: 'rect', x: labelW, y: y + 3, w: Math.max(1, (barW * norms[h]) / max), h: rowH - 6, fill: sel ? theme.accent : headColour(theme, 0), rx: 2, data: { head: h }, cls: 'hs-bar' });
    items.push({ type: 'text', x: labelW + barW + 6, y: y + rowH / 2, text: norms[h].toFixed(2), size: 11, fill: theme.muted });
  }
  return { scene: { width, height, background: theme.bg, font: theme.font, items }, norms };
}

/** The whole model as one picture (for export): layers down, heads across. */
export function gridScene(result, state, theme) {
  const { T, nLayer, nHead } = result;
  const px = clamp(Math.floor(72 / Math.max(1, T)), 1, 8);
  const size = px * T;
  const gap = 10;
  const x0 = 34;
  const y0 = 50;
  const width = x0 + nHead * (size + gap) + 4;
  const height = y0 + nLayer * (size + gap) + 4;
  const items = [];
  items.push({ type: 'text', x: 8, y: 12, text: `All ${nLayer * nHead} heads: layers down, heads across`, size: 14, weight: 'bold', fill: theme.fg });
  for (let h = 0; h < nHead; h++) items.push({ type: 'text', x: x0 + h * (size + gap) + size / 2, y: y0 - 10, text: `H${h}`, size: 11, fill: theme.muted, anchor: 'middle' });
  for (let l = 0; l < nLayer; l++) {
    items.push({ type: 'text', x: x0 - 6, y: y0 + l * (size + gap) + size / 2, text: `L${l}`, size: 11, fill: theme.muted, anchor: 'end' });
    for (let h = 0; h < nHead; h++) {
      const cx = x0 + h * (size + gap);
      const cy = y0 + l * (size + gap);
      items.push({ type: 'rect', x: cx, y: cy, w: size, h: size, fill: theme.faint });
      for (let q = 0; q < T; q++) {
        items.push({ type: 'rect', x: cx, y: cy + q * px, w: (q + 1) * px, h: px, fill: heat(theme, 0) });
        for (let k = 0; k <= q; k++) {
          const w = weightAt(result, l, h, q, k);
          if (w < 0.0005) continue;
          items.push({ type: 'rect', x: cx + k * px, y: cy + q * px, w: px, h: px, fill: heat(theme, w) });
        }
      }
      if (l === state.layer && h === state.head) items.push({ type: 'rect', x: cx - 2, y: cy - 2, w: size + 4, h: size + 4, fill: 'none', stroke: theme.accent, strokeWidth: 2 });
    }
  }
  return { scene: { width, height, background: theme.bg, font: theme.font, items } };
}

// ---------------------------------------------------------------------------------------------
// View classes

function el(doc, tag, cls, text) {
  const e = doc.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Shows a scene as SVG inside `host`; keeps the last scene for export. */
class SceneView {
  constructor(host, { title } = {}) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.title = title;
    this.scene = null;
    this.svg = null;
  }

  show(scene, label, role = 'img') {
    // one <svg> per view, updated in place (scene.js LiveSvg): typing changes a few attributes and
    // texts instead of rebuilding every node
    if (!this.live) {
      this.live = new LiveSvg(this.doc);
      this.live.svg.setAttribute('class', 'hs-svg');
      this.host.appendChild(this.live.svg);
    }
    const svg = this.live.update(scene, label);
    if (svg.getAttribute('role') !== role) svg.setAttribute('role', role); // 'group' when the picture holds focusable parts
    if (label) { if (svg.getAttribute('aria-label') !== label) svg.setAttribute('aria-label', label); } else svg.removeAttribute('aria-label');
    // shrink to the container, but not below ~70% of the natural size (then scroll sideways)
    const minWidth = `${Math.round(Math.min(scene.width, Math.max(300, scene.width * 0.7)))}px`;
    if (this.minWidth !== minWidth) { svg.style.minWidth = minWidth; this.minWidth = minWidth; }
    this.svg = svg;
    this.scene = scene;
    return svg;
  }

  /** Pointer position in scene coordinates. */
  toScene(event) {
    const r = this.svg.getBoundingClientRect();
    if (!r.width || !r.height) return null;
    return { x: ((event.clientX - r.left) * this.scene.width) / r.width, y: ((event.clientY - r.top) * this.scene.height) / r.height };
  }
}

/** Head detail: T x T heatmap with token labels and a tooltip with the exact weight. */
export class HeatmapView extends SceneView {
  constructor(outer, { tooltip, onSelectToken, onAnnounce } = {}) {
    const host = outer.ownerDocument.createElement('div');
    host.className = 'hs-heatmap';
    outer.appendChild(host);
    super(host);
    this.tooltip = tooltip;
    this.onSelectToken = onSelectToken;
    this.onAnnounce = onAnnounce;
    this.result = null;
    this.layout = null;
    this.hover = null;
    // keyboard: the heatmap is one focusable element; arrows move a cursor cell
    host.tabIndex = 0;
    host.setAttribute('role', 'application');
    host.setAttribute('aria-roledescription', 'attention heatmap');
    host.setAttribute('aria-label', 'Attention heatmap. Arrow keys move between cells and read the weight; Enter focuses that row\'s token.');
    host.addEventListener('keydown', (e) => this.#key(e));
    host.addEventListener('blur', () => this.#clearHover());
    host.addEventListener('pointermove', (e) => this.#pointer(e));
    host.addEventListener('pointerdown', (e) => this.#pointer(e));
    host.addEventListener('pointerleave', () => this.#clearHover());
    host.addEventListener('click', (e) => {
      const c = this.#cellAt(e);
      if (c) this.onSelectToken?.(c.q);
    });
  }

  update(result, state, theme) {
    this.result = result;
    this.state = state;
    this.theme = theme;
    const { scene, layout } = heatmapScene(result, state, theme, { image: true });
    this.layout = layout;
    this.show(scene, `Attention heatmap, layer ${state.layer}, head ${state.head}, ${result.T} tokens`);
    if (!this.canvas) {
      this.canvas = this.doc.createElement('canvas');
      this.canvas.className = 'hs-heatmap-cells';
      this.canvas.setAttribute('aria-hidden', 'true');
    }
    if (this.canvas.nextSibling !== this.svg) this.host.insertBefore(this.canvas, this.svg);
    paintAttention(this.canvas, result, state.layer, state.head, theme);
    // place the canvas over the grid area, in percentages of the picture (CSSOM: CSP-safe)
    const pct = (v, total) => `${((100 * v) / total).toFixed(4)}%`;
    const side = layout.T * layout.cell;
    const place = [pct(layout.x0, layout.width), pct(layout.y0, layout.height), pct(side, layout.width), pct(side, layout.height)];
    if (!this.place || place.some((v, i) => v !== this.place[i])) {
      [this.canvas.style.left, this.canvas.style.top, this.canvas.style.width, this.canvas.style.height] = place;
      this.place = place;
    }
    // the hover outline is redrawn below (the SVG is reused, so drop the old one first)
    this.highlight?.remove();
    this.highlight = null;
    if (this.hover) this.#showHover(this.hover.q, this.hover.k, this.hover.event);
  }

  #key(e) {
    if (!this.result) return;
    const T = this.result.T;
    let { q, k } = this.hover ?? { q: focusToken(this.result, this.state), k: 0 };
    switch (e.key) {
      case 'ArrowUp': q--; break;
      case 'ArrowDown': q++; break;
      case 'ArrowLeft': k--; break;
      case 'ArrowRight': k++; break;
      case 'Home': k = 0; break;
      case 'End': k = q; break;
      case 'Enter': case ' ':
        e.preventDefault();
        if (this.hover) this.onSelectToken?.(this.hover.q);
        return;
      case 'Escape': this.#clearHover(); return;
      default: return;
    }
    e.preventDefault();
    q = clamp(q, 0, T - 1);
    k = clamp(k, 0, q);
    const r = this.svg.getBoundingClientRect();
    const { x0, y0, cell } = this.layout;
    const sx = r.width / this.scene.width;
    const sy = r.height / this.scene.height;
    const event = { clientX: r.left + (x0 + (k + 1) * cell) * sx, clientY: r.top + (y0 + (q + 0.5) * cell) * sy };
    this.hover = { q, k, event };
    const text = this.#showHover(q, k, event);
    if (text) this.onAnnounce?.(text);
  }

  #cellAt(event) {
    if (!this.layout || !this.svg) return null;
    const p = this.toScene(event);
    if (!p) return null;
    const { x0, y0, cell, T } = this.layout;
    const k = Math.floor((p.x - x0) / cell);
    const q = Math.floor((p.y - y0) / cell);
    if (q < 0 || q >= T || k < 0 || k >= T) return null;
    return { q, k };
  }

  #pointer(event) {
    const c = this.#cellAt(event);
    if (!c) { this.#clearHover(); return; }
    this.hover = { ...c, event: { clientX: event.clientX, clientY: event.clientY } };
    this.#showHover(c.q, c.k, this.hover.event);
  }

  #showHover(q, k, event) {
    const { result, state, layout } = this;
    if (!result || q >= result.T || k >= result.T) { this.#clearHover(); return; }
    const w = k <= q ? weightAt(result, state.layer, state.head, q, k) : 0;
    const from = quoteToken(result.tokens[q].text);
    const to = quoteToken(result.tokens[k].text);
    const text = k <= q ? `${from} → ${to}: ${fmt4(w)}` : `${from} cannot see the later token ${to} (0)`;
    if (!this.highlight) {
      this.highlight = this.doc.createElementNS('http://www.w3.org/2000/svg', 'rect');
      this.highlight.setAttribute('fill', 'none');
      this.highlight.setAttribute('stroke', this.theme.fg);
      this.highlight.setAttribute('stroke-width', '2');
      this.highlight.setAttribute('pointer-events', 'none');
      this.svg.appendChild(this.highlight);
    }
    this.highlight.setAttribute('x', layout.x0 + k * layout.cell);
    this.highlight.setAttribute('y', layout.y0 + q * layout.cell);
    this.highlight.setAttribute('width', layout.cell);
    this.highlight.setAttribute('height', layout.cell);
    this.tooltip?.show(text, event.clientX, event.clientY);
    return text;
  }

  #clearHover() {
    this.hover = null;
    this.highlight?.remove();
    this.highlight = null;
    this.tooltip?.hide();
  }
}

/** Lines view: hover (or tap, or focus with the keyboard) a token to isolate its lines. */
export class LinesView extends SceneView {
  constructor(host, { onSelectToken } = {}) {
    super(host);
    this.onSelectToken = onSelectToken;
    this.focus = null;   // { side: 'q'|'k', index }
    this.pinned = false;
    host.addEventListener('pointerover', (e) => {
      if (this.pinned || e.pointerType === 'touch') return;
      const t = this.#target(e);
      if (t && !this.#same(t)) this.setFocus(t);
    });
    host.addEventListener('pointerleave', () => { if (!this.pinned) this.setFocus(null); });
    host.addEventListener('click', (e) => {
      const t = this.#target(e);
      if (!t) { this.pinned = false; this.setFocus(null); return; }
      const same = this.#same(t) && this.pinned;
      this.pinned = !same;
      this.setFocus(same ? null : t);
      if (t.side === 'q' && !same) this.onSelectToken?.(t.index);
    });
    host.addEventListener('focusin', (e) => {
      const t = this.#target(e);
      // keyboard focus only: a click focuses too, and the click handler deals with that
      if (t && !this.#same(t) && e.target.matches(':focus-visible')) { this.pinned = true; this.setFocus(t, true); }
    });
    host.addEventListener('keydown', (e) => {
      const t = this.#target(e);
      if (!t) return;
      let { side, index } = t;
      if (e.key === 'ArrowDown') index++;
      else if (e.key === 'ArrowUp') index--;
      else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') side = side === 'q' ? 'k' : 'q';
      else if (e.key === 'Escape') { this.pinned = false; this.setFocus(null); return; }
      else if (e.key === 'Enter' || e.key === ' ') { if (side === 'q') this.onSelectToken?.(index); e.preventDefault(); return; }
      else return;
      e.preventDefault();
      index = clamp(index, 0, (this.result?.T ?? 1) - 1);
      this.setFocus({ side, index }, true);
    });
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
    if (this.focus && this.focus.index >= result.T) { this.focus = null; this.pinned = false; }
    const hadFocus = this.svg && this.svg.contains(this.host.getRootNode().activeElement);
    this.#render();
    if (hadFocus && this.focus) this.setFocus(this.focus, true);
  }

  #render() {
    if (!this.result) return;
    const { scene } = linesScene(this.result, this.state, this.theme, this.focus);
    const heads = this.state.heads?.length ? this.state.heads : [this.state.head];
    this.show(scene, `Lines view, layer ${this.state.layer}, heads ${heads.join(', ')}`, 'group');
    this.svg.dataset.focus = this.focus ? `${this.focus.side}${this.focus.index}` : '';
  }
}

/** How heads combine: bars of each head's contribution norm at the focused token. */
export class CombineView extends SceneView {
  constructor(host, { onSelectHead } = {}) {
    super(host);
    host.addEventListener('click', (e) => {
      const node = e.target?.closest?.('[data-head]');
      if (node) onSelectHead?.(Number(node.dataset.head));
    });
  }

  update(result, state, theme) {
    const { scene } = combineScene(result, state, theme);
    this.show(scene, `How the heads of layer ${state.layer} combine at token ${focusToken(result, state)}`);
  }
}

/** Next-token predictions, top-k with probabilities (HTML list). */
export class TopKView {
  constructor(host) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.list = el(this.doc, 'ol', 'hs-topk');
    host.appendChild(this.list);
  }

  update(result) {
    // one row per prediction, reused: only changed texts and widths are written
    const rows = this.rows ?? (this.rows = []);
    const n = result.topNext.length;
    for (let i = 0; i < n; i++) {
      const p = result.topNext[i];
      let r = rows[i];
      if (!r) {
        const li = el(this.doc, 'li', 'hs-topk-item');
        const token = el(this.doc, 'span', 'hs-topk-token');
        const bar = el(this.doc, 'span', 'hs-topk-bar');
        const fill = el(this.doc, 'span', 'hs-topk-fill');
        bar.appendChild(fill);
        const prob = el(this.doc, 'span', 'hs-topk-prob');
        li.append(token, bar, prob);
        r = rows[i] = { li, token, fill, prob, text: null, width: null, pct: null };
      }
      if (r.li.parentNode !== this.list) this.list.appendChild(r.li);
      const text = tokenLabel(p.token, 20);
      if (r.text !== text) { r.token.textContent = text; r.text = text; } // text, never markup
      const width = `${(100 * p.prob).toFixed(2)}%`;
      if (r.width !== width) { r.fill.style.width = width; r.width = width; } // CSSOM: allowed under a strict CSP
      const pct = formatPercent(p.prob);
      if (r.pct !== pct) { r.prob.textContent = pct; r.pct = pct; }
    }
    for (let i = n; i < rows.length; i++) rows[i].li.remove();
  }
}

/**
 * Model overview: L x H small heatmaps; arrow keys move, Enter/click opens.
 *
 * The cells are DOM elements (focus, click, titles, badges), but their heatmaps are all painted on ONE
 * canvas under them, in device pixels. With one canvas per cell, each canvas was its own compositor
 * layer: a Chromium trace of typing showed the L x H texture uploads dominating the frame's commit
 * (13 ms of it per keystroke; 3.5 ms with the grid hidden). Painting here costs O(screen pixels of the
 * tiles), not O(T^2) per head, and each pixel shows the (query, key) cell under it (nearest).
 */
export class GridView {
  constructor(host, { onSelect, onOpen } = {}) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.onSelect = onSelect;
    this.onOpen = onOpen;
    this.shape = '';
    this.grid = el(this.doc, 'div', 'hs-grid');
    this.grid.setAttribute('role', 'grid');
    this.grid.setAttribute('aria-label', 'All attention heads: layers down, heads across. Arrow keys move, Enter opens.');
    host.appendChild(this.grid);
    this.grid.addEventListener('click', (e) => {
      const c = e.target.closest('[data-layer]');
      if (!c) return;
      this.onSelect?.(Number(c.dataset.layer), Number(c.dataset.head), { focus: true });
      this.onOpen?.(Number(c.dataset.layer), Number(c.dataset.head));
    });
    this.grid.addEventListener('keydown', (e) => this.#key(e));
    this.layout = null; // tile rectangles in device pixels, measured after layout changes
    // Resize (window, container, font, phone rotation) moves the cells: re-measure and repaint. The
    // observer runs after layout and before paint, so the new picture shows in the same frame.
    // (The canvas sits in a clipping layer sized by CSS to the grid, so it cannot itself change the
    // page's size: a canvas sized from this callback once made a scrollbar come and go every frame.)
    const RO = this.doc.defaultView?.ResizeObserver;
    if (RO) {
      new RO(([entry]) => {
        const { width, height } = entry.contentRect;
        if (width === this.observed?.width && height === this.observed?.height) return;
        this.observed = { width, height };
        this.layout = null;
        this.#paint();
      }).observe(this.grid);
    }
    // a new device pixel ratio (window moved to another screen) changes the canvas's pixel size only:
    // repaint when it changes (and #paint checks it on every update as well)
    const win = this.doc.defaultView;
    const watchPixelRatio = () => {
      const mq = win?.matchMedia?.(`(resolution: ${win.devicePixelRatio}dppx)`);
      mq?.addEventListener?.('change', () => { this.layout = null; this.#paint(); watchPixelRatio(); }, { once: true });
    };
    watchPixelRatio();
  }

  #key(e) {
    const c = e.target.closest('[data-layer]');
    if (!c || !this.result) return;
    let l = Number(c.dataset.layer);
    let h = Number(c.dataset.head);
    const { nLayer, nHead } = this.result;
    switch (e.key) {
      case 'ArrowRight': h++; break;
      case 'ArrowLeft': h--; break;
      case 'ArrowDown': l++; break;
      case 'ArrowUp': l--; break;
      case 'Home': h = 0; if (e.ctrlKey) l = 0; break;
      case 'End': h = nHead - 1; if (e.ctrlKey) l = nLayer - 1; break;
      case 'Enter': case ' ':
        e.preventDefault();
        this.onOpen?.(l, h);
        return;
      default: return;
    }
    e.preventDefault();
    l = clamp(l, 0, nLayer - 1);
    h = clamp(h, 0, nHead - 1);
    this.onSelect?.(l, h, { focus: true });
  }

  #build(nLayer, nHead) {
    const d = this.doc;
    this.grid.replaceChildren();
    this.grid.style.setProperty('--hs-cols', String(nHead));
    const layer = el(d, 'div', 'hs-grid-layer');
    layer.setAttribute('aria-hidden', 'true');
    this.canvas = d.createElement('canvas');
    this.canvas.className = 'hs-grid-canvas';
    // the layout that keeps the canvas out of the page's flow is set here, not only in views.css: a
    // canvas in the flow would grow the grid it is sized from (CSSOM: allowed under a strict CSP)
    Object.assign(layer.style, { position: 'absolute', inset: '0', overflow: 'hidden', pointerEvents: 'none' });
    Object.assign(this.canvas.style, { display: 'block', width: '100%', height: '100%' });
    this.grid.style.position = 'relative';
    layer.appendChild(this.canvas);
    this.grid.appendChild(layer); // first child: the positioned cells paint over it
    this.ctx = null;
    this.image = null;
    this.layout = null;
    this.cells = [];
    const header = el(d, 'div', 'hs-grid-row hs-grid-head');
    header.setAttribute('role', 'row');
    const corner = el(d, 'span', 'hs-grid-corner');
    corner.setAttribute('role', 'columnheader');
    corner.setAttribute('aria-label', 'layer');
    header.appendChild(corner);
    for (let h = 0; h < nHead; h++) {
      const ch = el(d, 'span', 'hs-grid-label', `H${h}`);
      ch.setAttribute('role', 'columnheader');
      ch.setAttribute('aria-label', `head ${h}`);
      header.appendChild(ch);
    }
    this.grid.appendChild(header);
    for (let l = 0; l < nLayer; l++) {
      const row = el(d, 'div', 'hs-grid-row');
      row.setAttribute('role', 'row');
      const rh = el(d, 'span', 'hs-grid-label', `L${l}`);
      rh.setAttribute('role', 'rowheader');
      rh.setAttribute('aria-label', `layer ${l}`);
      row.appendChild(rh);
      const cellsRow = [];
      for (let h = 0; h < nHead; h++) {
        const cell = el(d, 'div', 'hs-cell');
        cell.setAttribute('role', 'gridcell');
        cell.setAttribute('tabindex', '-1');
        cell.setAttribute('aria-label', `Layer ${l}, head ${h}`);
        cell.dataset.layer = String(l);
        cell.dataset.head = String(h);
        const badge = el(d, 'span', 'hs-cell-badge'); // reserved for head-role badges
        badge.setAttribute('aria-hidden', 'true');
        cell.appendChild(badge);
        row.appendChild(cell);
        cellsRow.push({ cell, badge });
      }
      this.cells.push(cellsRow);
      this.grid.appendChild(row);
    }
  }

  update(result, state, theme) {
    this.result = result;
    this.theme = theme;
    const { nLayer, nHead, T } = result;
    const shape = `${nLayer}x${nHead}`;
    if (shape !== this.shape) { this.#build(nLayer, nHead); this.shape = shape; }
    this.#paint();
    const q = T > 0 ? focusToken(result, state) : 0;
    for (let l = 0; l < nLayer; l++) {
      for (let h = 0; h < nHead; h++) {
        const entry = this.cells[l][h];
        this.#mark(entry, l === state.layer && h === state.head, false);
        // (the lab appends head roles to this title; it reads the base back from the element)
        const title = T > 0 ? describeHead(result, l, h, q) : `Layer ${l}, head ${h}`;
        if (entry.title !== title) { entry.cell.title = title; entry.title = title; }
      }
    }
  }

  /**
   * Where each cell's heatmap goes on the canvas, in device pixels: { width, height, cells: [[{ x, y, w, h,
   * box: [x, y, w, h] }]] } (box: the whole cell, tile: its content box). Null while the grid is not
   * laid out (hidden, or detached).
   */
  #measure() {
    const g = this.grid.getBoundingClientRect();
    if (g.width === 0 || g.height === 0) return null;
    const dpr = this.doc.defaultView?.devicePixelRatio || 1;
    const cs = this.doc.defaultView.getComputedStyle(this.cells[0][0].cell);
    const inset = (parseFloat(cs.borderLeftWidth) || 0) + (parseFloat(cs.paddingLeft) || 0);
    const px = (v) => Math.round(v * dpr);
    const cells = this.cells.map((row) => row.map(({ cell }) => {
      const r = cell.getBoundingClientRect();
      const x0 = px(r.left - g.left);
      const y0 = px(r.top - g.top);
      const x1 = px(r.right - g.left);
      const y1 = px(r.bottom - g.top);
      const tx = px(r.left - g.left + inset);
      const ty = px(r.top - g.top + inset);
      return {
        box: [x0, y0, x1 - x0, y1 - y0],
        x: tx, y: ty, w: Math.max(1, px(r.right - g.left - inset) - tx), h: Math.max(1, px(r.bottom - g.top - inset) - ty),
      };
    }));
    return { dpr, width: px(g.width), height: px(g.height), cells };
  }

  #paint() {
    const result = this.result;
    if (!result || !this.cells) return;
    if (this.layout && this.layout.dpr !== (this.doc.defaultView?.devicePixelRatio || 1)) this.layout = null;
    if (!this.layout) this.layout = this.#measure();
    const L = this.layout;
    if (!L) return; // not laid out; the resize observer paints once it is
    const canvas = this.canvas;
    if (canvas.width !== L.width || canvas.height !== L.height) {
      canvas.width = L.width;
      canvas.height = L.height;
      this.image = null;
    }
    if (!this.ctx) this.ctx = canvas.getContext('2d');
    if (!this.image) {
      this.image = this.ctx.createImageData(L.width, L.height);
      this.pixels = new Int32Array(this.image.data.buffer, this.image.data.byteOffset, L.width * L.height);
    }
    paintGrid(this.pixels, L, result, this.theme);
    this.ctx.putImageData(this.image, 0, 0);
  }

  /** Selected state of one cell, written only when it changes. */
  #mark(entry, selected, focus) {
    if (entry.selected !== selected) {
      const { cell } = entry;
      cell.setAttribute('aria-selected', selected ? 'true' : 'false');
      cell.setAttribute('tabindex', selected ? '0' : '-1');
      cell.classList.toggle('hs-selected', selected);
      entry.selected = selected;
    }
    if (selected && focus) entry.cell.focus();
  }

  select(layer, head, focus) {
    if (!this.cells) return;
    this.cells.forEach((row, l) => row.forEach((entry, h) => this.#mark(entry, l === layer && h === head, focus)));
  }
}

/**
 * Paints every head's T x T attention into its tile of a canvas-sized pixel buffer (Int32 RGBA,
 * layout from GridView#measure): the cell's box in the faint colour, then each tile pixel (x, y) shows
 * query floor(y * T / h), key floor(x * T / w) - the upper triangle (keys after the query) faint.
 * Pixels outside every cell are left as they are (transparent: the page shows through).
 */
export function paintGrid(px, layout, result, theme) {
  const { T, nHead } = result;
  const W = layout.width;
  const lut = lut32Of(theme.lut.lut);
  const [fr, fg, fb] = parseCss(theme.faint);
  const faint = pixel32(fr, fg, fb);
  const A = result.attentionAll;
  const rowColours = new Int32Array(Math.max(1, T)); // one query row, coloured once per tile row
  let colKey = new Int32Array(0);
  layout.cells.forEach((row, l) => row.forEach((t, h) => {
    const [bx, by, bw, bh] = t.box;
    for (let y = by; y < by + bh; y++) px.fill(faint, y * W + bx, y * W + bx + bw);
    if (T === 0) return;
    if (colKey.length < t.w) colKey = new Int32Array(t.w);
    for (let x = 0; x < t.w; x++) colKey[x] = Math.min(T - 1, Math.floor((x * T) / t.w));
    const base = (l * nHead + h) * T * T;
    let q = -1;
    for (let y = 0; y < t.h; y++) {
      const qy = Math.min(T - 1, Math.floor((y * T) / t.h));
      if (qy !== q) {
        q = qy;
        const src = base + q * T;
        for (let k = 0; k <= q; k++) rowColours[k] = lut[heatIndex(A[src + k])];
        for (let k = q + 1; k < T; k++) rowColours[k] = faint;
      }
      const o = (t.y + y) * W + t.x;
      for (let x = 0; x < t.w; x++) px[o + x] = rowColours[colKey[x]];
    }
  }));
}

/** 0.4213 -> "42.1%", 0.000123 -> "0.012%". */
export function formatPercent(p) {
  const v = 100 * p;
  if (v >= 0.1) return `${v.toFixed(1)}%`;
  if (v <= 0) return '0%';
  return `${v.toPrecision(2)}%`;
}

const cssCache = new Map();
function parseCss(c) {
  let v = cssCache.get(c);
  if (!v) {
    v = parseCssUncached(c);
    if (cssCache.size > 64) cssCache.clear();
    cssCache.set(c, v);
  }
  return v;
}
function parseCssUncached(c) {
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(c);
  if (m) return [Number(m[1]), Number(m[2]), Number(m[3])];
  const h = /^#([0-9a-f]{6})$/i.exec(c.trim());
  if (h) return [0, 2, 4].map((i) => parseInt(h[1].slice(i, i + 2), 16));
  return [200, 200, 200];
}

/** A tooltip that follows the pointer (text only). */
export class Tooltip {
  constructor(container) {
    this.container = container;
    this.el = el(container.ownerDocument, 'div', 'hs-tooltip');
    this.el.setAttribute('aria-hidden', 'true');
    this.el.hidden = true;
    container.appendChild(this.el);
  }

  show(text, clientX, clientY) {
    this.el.textContent = text;
    this.el.hidden = false;
    const box = this.container.getBoundingClientRect();
    const w = this.el.offsetWidth;
    let x = clientX - box.left + 12;
    if (x + w > box.width) x = Math.max(0, clientX - box.left - w - 12);
    this.el.style.left = `${x}px`;
    this.el.style.top = `${clientY - box.top + 14}px`;
  }

  hide() { this.el.hidden = true; }
}
