// Head detail as a heatmap: rows are query tokens, columns the key tokens they attend to.
// heatmapScene() (heatmap-scene.js) is the pure scene builder; HeatmapView shows it, with the cells
// painted on a canvas under the SVG labels (heatmap-bitmap.js), a tooltip and keyboard navigation.
import { heatmapScene, fitCell } from './heatmap-scene.js';
import { quoteToken } from '../runtime/theme.js';
import { attentionAt, holdsRow } from '../../lib/result.js';
import { focusToken, clamp } from '../model/describe.js';
import { MAX_BITMAP, bitmapView } from './paint.js';
import { HeatmapBitmap, cellsInView } from './heatmap-bitmap.js';
import { SceneView } from './scene-view.js';
import { el } from './dom.js';
import { HostWidth } from './host-width.js';
import { shownWeights, weightAt, valueNormsOf, byValue } from '../model/weighting.js';

export { heatmapScene, fitCell };

const fmt4 = (w) => w.toFixed(4);

/** Head detail: T x T heatmap with token labels and a tooltip with the exact weight. */
// Zoom factors over the fitted cell size; cells never grow beyond MAX_CELL px.
const ZOOMS = [1, 2, 4, 8, 16, 32];
const MAX_CELL = 26;
// A short text's smallest cell when fitted to a narrow panel: from 13 px the scene labels every
// token at 10 px (heatmap-scene.js picks the font from the cell, and thins labels below fs + 1 px)
const SHORT_MIN_CELL = 13;
// An export draws one SVG rectangle per cell: above this many, it keeps the rows around the focus.
const MAX_EXPORT_CELLS = 200_000;

export class HeatmapView extends SceneView {
  constructor(outer, { tooltip, onSelectToken, onSelectCell, onAnnounce } = {}) {
    const doc = outer.ownerDocument;
    // zoom controls, shown when the text is long enough for the fitted cells to be small
    const tools = el(doc, 'div', 'hs-zoom');
    tools.setAttribute('role', 'group');
    tools.setAttribute('aria-label', 'Heatmap zoom');
    const mkButton = (text, label, fn) => {
      const b = el(doc, 'button', 'hs-zoom-btn', text);
      b.type = 'button';
      b.setAttribute('aria-label', label);
      b.addEventListener('click', fn);
      return b;
    };
    const zoomOut = mkButton('−', 'Zoom out', () => this.setZoom(this.zoom / 2));
    const zoomIn = mkButton('+', 'Zoom in', () => this.setZoom(this.zoom * 2));
    const zoomText = el(doc, 'span', 'hs-zoom-text');
    tools.append(zoomOut, zoomIn, zoomText);
    tools.hidden = true;
    outer.appendChild(tools);
    const host = el(doc, 'div', 'hs-heatmap');
    outer.appendChild(host);
    super(host);
    Object.assign(this, {
      tools: { bar: tools, zoomOut, zoomIn, zoomText },
      zoom: 1,
      tooltip,
      onSelectToken,
      onSelectCell, // (q, k): a cell picked (click, Enter), after onSelectToken(q)
      onAnnounce,
      result: null,
      layout: null,
      hover: null,
    });
    // keyboard: the heatmap is one focusable element; arrows move a cursor cell
    host.tabIndex = 0;
    host.setAttribute('role', 'application');
    host.setAttribute('aria-roledescription', 'attention heatmap');
    host.setAttribute(
      'aria-label',
      "Attention heatmap. Arrow keys move between cells and read the weight; Enter focuses that row's token; + and − zoom.",
    );
    host.addEventListener('keydown', (e) => this.#key(e));
    host.addEventListener('blur', () => this.#clearHover());
    host.addEventListener('pointermove', (e) => this.#pointer(e));
    host.addEventListener('pointerdown', (e) => this.#pointer(e));
    host.addEventListener('pointerleave', () => this.#clearHover());
    host.addEventListener('click', (e) => {
      const c = this.#cellAt(e);
      if (c) this.onSelectToken?.(c.q);
      if (c && c.k <= c.q) this.onSelectCell?.(c.q, c.k);
    });
  }

  /**
   * Cell size at the current zoom. For long texts the fitted size comes from the panel's width
   * (fractional: the canvas scales one pixel per cell), so that the picture is drawn at its own size,
   * labels at their font size and thinned to fit, instead of being shrunk by the browser. A short
   * text's cells shrink to a narrow panel too (a phone's), down to SHORT_MIN_CELL, with every token
   * labelled: before, the browser shrank the whole picture to about 70%, its labels to 7-8 px.
   */
  #scrollerWidth() {
    const scroller = this.host.closest('.hs-scroll');
    if (!scroller) return 0;
    if (this.scroller?.el !== scroller) {
      this.scroller?.disconnect();
      // a resize redraws a long text's picture; a short text's takes the new width at its next
      // draw (redrawing it here could toggle the page's scrollbar, which resizes it again: a loop)
      this.scroller = new HostWidth(scroller, () => {
        if (this.result && this.result.T > 128) this.update(this.result, this.state, this.theme);
      });
    }
    return this.scroller.width;
  }

  #panelWidthOnce() {
    if (!this.shortWidth) this.shortWidth = this.host.closest('.hs-scroll')?.clientWidth ?? 0;
    return this.shortWidth;
  }

  #cell(result, state, theme) {
    const T = result.T;
    let fitted = fitCell(T);
    // the scroller's width: a long text's is kept by a ResizeObserver (no layout forced while the
    // page draws); a short text's is read once, at its first draw on a laid-out panel (an observer
    // would report every row that typing adds to the picture's height)
    const width = T > 128 ? this.#scrollerWidth() : fitted > SHORT_MIN_CELL ? this.#panelWidthOnce() : 0;
    if (width > 0 && T > 128) {
      const probe = heatmapScene(result, state, theme, { image: true, cell: 1 }).layout;
      const reserve = probe.width - T; // labels and margins around the grid
      fitted = Math.min(fitted, Math.max(0.25, (width - reserve - 4) / T));
    } else if (width > 0 && fitted > SHORT_MIN_CELL) {
      // the labels' and margins' width at the smallest cell (the labels' font is that cell's)
      const { reserve } = heatmapScene(result, state, theme, { image: true, cell: SHORT_MIN_CELL }).layout;
      fitted = Math.max(SHORT_MIN_CELL, Math.min(fitted, (width - reserve - 4) / T));
    }
    this.panelWidth = width;
    this.fitted = fitted;
    return Math.min(MAX_CELL, fitted * this.zoom);
  }

  /** Zooms to `zoom` x the fitted size (clamped to what makes sense for this text) and redraws. */
  setZoom(zoom) {
    const max = ZOOMS.filter((z) => (this.fitted ?? 1) * z <= MAX_CELL).pop() ?? 1;
    this.zoom = clamp(zoom, 1, max);
    this.followRow = null; // scroll to the focused row again
    if (this.result) this.update(this.result, this.state, this.theme);
  }

  /** Options for heatmapScene that export what the reader sees: the zoom, and the rows in view. */
  exportOptions() {
    const { result, layout } = this;
    if (!result || !layout) return {};
    let [from, to] = this.#visibleRows();
    // a long text's head holds the rows of the window around the focused token (pulled-maps.js)
    const held = shownWeights(result, this.state, this.state.layer, this.state.head)?.rows;
    if (held) [from, to] = [Math.max(from, held[0]), Math.min(to, held[1])];
    if (held && to <= from) [from, to] = held;
    const q0 = focusToken(result, this.state);
    // keep the export's rectangle count bounded: rows around the focus
    while ((to - from) * to > MAX_EXPORT_CELLS && to - from > 16) {
      if (q0 - from > to - q0) from++;
      else to--;
    }
    return { cell: layout.cell, rows: from === 0 && to === result.T ? null : [from, to] };
  }

  #visibleRows() {
    const { layout } = this;
    const scroller = this.host.closest('.hs-scroll');
    if (!scroller || !this.svg) return [0, layout.T];
    const view = scroller.getBoundingClientRect();
    const pic = this.svg.getBoundingClientRect();
    if (!pic.height) return [0, layout.T];
    const sy = pic.height / this.scene.height;
    const rowAt = (clientY) => Math.floor(((clientY - pic.top) / sy - layout.y0) / layout.cell);
    const from = clamp(rowAt(Math.max(view.top, pic.top)), 0, layout.T);
    const to = clamp(rowAt(Math.min(view.bottom, pic.bottom)) + 1, from, layout.T);
    return to > from ? [from, to] : [0, layout.T];
  }

  // Keeps the focused row in view when zoomed: typing at the end follows the new token.
  #follow(q0) {
    const scroller = this.host.closest('.hs-scroll');
    if (!scroller || this.zoom === 1 || this.followRow === q0) return;
    this.followRow = q0;
    const pic = this.svg.getBoundingClientRect();
    const view = scroller.getBoundingClientRect();
    if (!pic.height) return;
    const sy = pic.height / this.scene.height;
    const rowTop = pic.top + (this.layout.y0 + q0 * this.layout.cell) * sy;
    const rowBottom = rowTop + this.layout.cell * sy;
    if (rowTop < view.top || rowBottom > view.bottom) scroller.scrollTop += rowTop - (view.top + view.height / 2);
    const colRight = pic.left + (this.layout.x0 + (q0 + 1) * this.layout.cell) * sy;
    if (colRight > view.right || colRight < view.left) scroller.scrollLeft += colRight - (view.left + view.width * 0.8);
  }

  update(result, state, theme) {
    // a long text's result holds only the heads a page pulled for it: until this one's weights
    // arrive (result.js's headSource), the picture stays as it was
    if (!shownWeights(result, state, state.layer, state.head)) return;
    this.result = result;
    this.state = state;
    this.theme = theme;
    const { bar, zoomOut, zoomIn, zoomText } = this.tools;
    let cell = this.#cell(result, state, theme);
    const zoomable = this.fitted * 2 <= MAX_CELL && result.T > 64;
    if (bar.hidden === zoomable) bar.hidden = !zoomable;
    if (!zoomable && this.zoom !== 1) {
      this.zoom = 1;
      cell = this.#cell(result, state, theme);
    }
    const scroller = this.host.closest('.hs-scroll');
    if (scroller && scroller.classList.contains('hs-zoomed') !== this.zoom > 1)
      scroller.classList.toggle('hs-zoomed', this.zoom > 1);
    if (zoomable) {
      zoomOut.disabled = this.zoom <= 1;
      zoomIn.disabled = cell * 2 > MAX_CELL;
      const q0 = focusToken(result, state);
      const text =
        this.zoom === 1
          ? `all ${result.T} tokens`
          : `zoom ${this.zoom}× · following token ${q0} ${quoteToken(result.tokens[q0].text)}`;
      if (zoomText.textContent !== text) zoomText.textContent = text;
    }
    const { scene, layout } = heatmapScene(result, state, theme, { image: true, cell, maxWidth: this.panelWidth });
    this.layout = layout;
    this.show(scene, `Attention heatmap, layer ${state.layer}, head ${state.head}, ${result.T} tokens`);
    // the box the canvas is placed in (percentages) is as wide as the picture: at its smallest
    // (show()'s min-width) the picture is wider than a phone's panel, and the box would not follow it
    if (this.host.style.minWidth !== this.svg.style.minWidth) this.host.style.minWidth = this.svg.style.minWidth;
    if (!this.canvas) {
      this.canvas = this.doc.createElement('canvas');
      this.canvas.className = 'hs-heatmap-cells';
      this.canvas.setAttribute('aria-hidden', 'true');
      this.bitmap = new HeatmapBitmap(this.canvas);
    }
    if (this.canvas.nextSibling !== this.svg) this.host.insertBefore(this.canvas, this.svg);
    this.#paintCells();
    if (result.T > MAX_BITMAP && scroller && this.scrollWatch !== scroller) {
      // zoomed into a long text, the bitmap holds the cells in view: scrolling paints the next ones
      this.scrollWatch = scroller;
      scroller.addEventListener('scroll', () => this.#schedulePaint(), { passive: true });
    }
    // the hover outline is redrawn below (the SVG is reused, so drop the old one first)
    this.highlight?.remove();
    this.highlight = null;
    if (this.hover) this.#showHover(this.hover.q, this.hover.k, this.hover.event);
    this.#follow(focusToken(result, state));
  }

  // The cells' bitmap (heatmap-bitmap.js): the whole map, or past MAX_BITMAP tokens at a zoom the
  // part in view, in blocks while that is still larger
  #paintCells() {
    const { result, state, theme, layout } = this;
    // the boxes only where the view depends on them (zoomed into a long text): reading them lays the
    // page out at once, in the middle of a render whose next views change it again (6 ms a
    // keystroke at 1,000 tokens)
    let view = bitmapView(result.T);
    if (result.T > MAX_BITMAP && this.zoom > 1) {
      const scroller = this.host.closest('.hs-scroll');
      const pic = this.svg.getBoundingClientRect();
      view = cellsInView(
        result.T,
        true,
        scroller?.getBoundingClientRect(),
        pic,
        pic.height / this.scene.height,
        layout,
      );
    }
    this.painted = this.bitmap.paint(result, state, theme, layout, view);
  }

  #schedulePaint() {
    if (this.paintQueued) return;
    this.paintQueued = true;
    requestAnimationFrame(() => {
      this.paintQueued = false;
      if (this.result && this.result.T > MAX_BITMAP && this.zoom > 1 && this.canvas) this.#paintCells();
    });
  }

  #key(e) {
    if (!this.result) return;
    const T = this.result.T;
    let { q, k } = this.hover ?? { q: focusToken(this.result, this.state), k: 0 };
    switch (e.key) {
      case 'ArrowUp':
        q--;
        break;
      case 'ArrowDown':
        q++;
        break;
      case 'ArrowLeft':
        k--;
        break;
      case 'ArrowRight':
        k++;
        break;
      case 'Home':
        k = 0;
        break;
      case 'End':
        k = q;
        break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        if (this.hover) this.onSelectToken?.(this.hover.q);
        if (this.hover) this.onSelectCell?.(this.hover.q, this.hover.k);
        return;
      case 'Escape':
        this.#clearHover();
        return;
      case '+':
      case '=':
        e.preventDefault();
        this.setZoom(this.zoom * 2);
        return;
      case '-':
      case '_':
        e.preventDefault();
        this.setZoom(this.zoom / 2);
        return;
      default:
        return;
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
    if (!c) {
      this.#clearHover();
      return;
    }
    this.hover = { ...c, event: { clientX: event.clientX, clientY: event.clientY } };
    this.#showHover(c.q, c.k, this.hover.event);
  }

  #showHover(q, k, event) {
    const { result, state, layout } = this;
    if (!result || q >= result.T || k >= result.T || !shownWeights(result, state, state.layer, state.head)) {
      this.#clearHover();
      return;
    }
    const src = shownWeights(result, state, state.layer, state.head);
    const held = holdsRow(src, q);
    // a long text's row outside the window pulled: what the bitmap shows (the engine's tile)
    const tiled = held ? null : this.bitmap?.tiledCell(q, k);
    const w = k > q ? 0 : held ? attentionAt(result, state.layer, state.head, q, k) : tiled?.w;
    const from = quoteToken(result.tokens[q].text);
    const to = quoteToken(result.tokens[k].text);
    // value-weighted: the share shown, then the weight and the value size it comes from
    const norms = byValue(result, state) && held ? valueNormsOf(result, state.layer, state.head) : null;
    const shown =
      norms && k <= q
        ? `: ${fmt4(weightAt(src, q, k))} of what the head moves (weight ${fmt4(w)} × value size ${norms[k].toFixed(2)})`
        : null;
    const text =
      k > q
        ? `${from} cannot see the later token ${to} (0)`
        : shown
          ? `${from} → ${to}${shown}`
          : w === undefined
            ? `${from} → ${to}: on its way`
            : tiled && tiled.bin > 1
              ? `${from} → ${to}: at most ${fmt4(w)} (the largest weight of its ${tiled.bin} × ${tiled.bin} block; zoom in for each weight)`
              : `${from} → ${to}: ${fmt4(w)}`;
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
