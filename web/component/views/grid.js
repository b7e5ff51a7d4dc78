// The model overview: every head of every layer as a small heatmap. gridScene() is the pure scene
// builder for export; GridView is the live grid (DOM cells over one canvas, keyboard navigation).
// Both colour by state.by, as the other views do (weighting.js).
import { heat } from '../runtime/theme.js';
import { clamp, describeHead, focusToken } from '../model/describe.js';
import { paintGrid, copyChangedRows } from './paint.js';
import { el } from './dom.js';
import { byValue, shownWeightAt } from '../model/weighting.js';
import { kvGroups, headSharing } from '../model/kv-groups.js';
import { thumbnailRowsKept } from '../../lib/reuse.js';

// Query heads that share a key/value head are drawn as one group: a bracket over their columns
// named "key/value head g" (only when some heads share: GPT-2's heads each have their own).
const sharing = (result) => (result.nKvHead ?? result.nHead) < result.nHead;

/** The whole model as one picture (for export): layers down, heads across; weighted: by weight × value size. */
export function gridScene(result, state, theme) {
  const { T, nLayer, nHead } = result;
  const px = clamp(Math.floor(72 / Math.max(1, T)), 1, 8);
  const size = px * T;
  const gap = 10;
  const x0 = 34;
  const y0 = sharing(result) ? 74 : 50;
  const width = x0 + nHead * (size + gap) + 4;
  const height = y0 + nLayer * (size + gap) + 4;
  const items = [];
  const weighted = byValue(result, state);
  const what = weighted ? ', by weight × value size' : '';
  items.push({
    type: 'text',
    x: 8,
    y: 12,
    text: `All ${nLayer * nHead} heads${what}: layers down, heads across`,
    size: 14,
    weight: 'bold',
    fill: theme.fg,
  });
  for (let h = 0; h < nHead; h++)
    items.push({
      type: 'text',
      x: x0 + h * (size + gap) + size / 2,
      y: y0 - 10,
      text: `H${h}`,
      size: 11,
      fill: theme.muted,
      anchor: 'middle',
    });
  if (sharing(result)) {
    for (const g of kvGroups(nHead, result.nKvHead)) {
      const left = x0 + g.first * (size + gap),
        right = x0 + g.last * (size + gap) + size;
      items.push({ type: 'rect', x: left, y: y0 - 30, w: right - left, h: 2, fill: theme.muted });
      items.push({
        type: 'text',
        x: (left + right) / 2,
        y: y0 - 36,
        text: `key/value head ${g.kv}`,
        size: 10,
        fill: theme.muted,
        anchor: 'middle',
      });
    }
  }
  for (let l = 0; l < nLayer; l++) {
    items.push({
      type: 'text',
      x: x0 - 6,
      y: y0 + l * (size + gap) + size / 2,
      text: `L${l}`,
      size: 11,
      fill: theme.muted,
      anchor: 'end',
    });
    for (let h = 0; h < nHead; h++) {
      const cx = x0 + h * (size + gap);
      const cy = y0 + l * (size + gap);
      items.push({ type: 'rect', x: cx, y: cy, w: size, h: size, fill: theme.faint });
      for (let q = 0; q < T; q++) {
        items.push({ type: 'rect', x: cx, y: cy + q * px, w: (q + 1) * px, h: px, fill: heat(theme, 0) });
        for (let k = 0; k <= q; k++) {
          const w = shownWeightAt(result, state, l, h, q, k);
          if (w < 0.0005) continue;
          items.push({ type: 'rect', x: cx + k * px, y: cy + q * px, w: px, h: px, fill: heat(theme, w) });
        }
      }
      if (l === state.layer && h === state.head)
        items.push({
          type: 'rect',
          x: cx - 2,
          y: cy - 2,
          w: size + 4,
          h: size + 4,
          fill: 'none',
          stroke: theme.accent,
          strokeWidth: 2,
        });
    }
  }
  return { scene: { width, height, background: theme.bg, font: theme.font, items }, weighted };
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
    this.grid.setAttribute(
      'aria-label',
      'All attention heads: layers down, heads across. Arrow keys move, Enter opens.',
    );
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
      mq?.addEventListener?.(
        'change',
        () => {
          this.layout = null;
          this.#paint();
          watchPixelRatio();
        },
        { once: true },
      );
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
      case 'ArrowRight':
        h++;
        break;
      case 'ArrowLeft':
        h--;
        break;
      case 'ArrowDown':
        l++;
        break;
      case 'ArrowUp':
        l--;
        break;
      case 'Home':
        h = 0;
        if (e.ctrlKey) l = 0;
        break;
      case 'End':
        h = nHead - 1;
        if (e.ctrlKey) l = nLayer - 1;
        break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        this.onOpen?.(l, h);
        return;
      default:
        return;
    }
    e.preventDefault();
    l = clamp(l, 0, nLayer - 1);
    h = clamp(h, 0, nHead - 1);
    this.onSelect?.(l, h, { focus: true });
  }

  #build(nLayer, nHead, nKvHead) {
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
    corner.appendChild(el(d, 'span', 'hs-sr', 'layer')); // read, not shown
    header.appendChild(corner);
    for (let h = 0; h < nHead; h++) {
      const ch = el(d, 'span', 'hs-grid-label', `H${h}`);
      ch.setAttribute('role', 'columnheader');
      ch.setAttribute('aria-label', `head ${h}`);
      header.appendChild(ch);
    }
    if (nKvHead < nHead) {
      // the groups of query heads that read one key/value head, as brackets over their columns
      const groups = el(d, 'div', 'hs-grid-row hs-grid-groups');
      groups.setAttribute('aria-hidden', 'true'); // each cell's label says its group
      groups.appendChild(el(d, 'span', 'hs-grid-corner'));
      for (const g of kvGroups(nHead, nKvHead)) {
        const bracket = el(d, 'span', 'hs-grid-group', `key/value head ${g.kv}`);
        bracket.style.gridColumn = `span ${g.last - g.first + 1}`; // CSSOM: allowed under a strict CSP
        bracket.dataset.kv = String(g.kv);
        groups.appendChild(bracket);
      }
      this.grid.appendChild(groups);
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
        const shared = headSharing(nHead, nKvHead, h);
        cell.setAttribute('aria-label', `Layer ${l}, head ${h}${shared ? ` (${shared})` : ''}`);
        cell.dataset.layer = String(l);
        cell.dataset.head = String(h);
        if (shared) cell.dataset.kv = String(Math.floor(h / (nHead / nKvHead)));
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
    this.state = state;
    this.theme = theme;
    const { nLayer, nHead, T } = result;
    const nKvHead = result.nKvHead ?? nHead;
    const shape = `${nLayer}x${nHead}/${nKvHead}`;
    if (shape !== this.shape) {
      this.#build(nLayer, nHead, nKvHead);
      this.shape = shape;
    }
    this.#paint();
    const q = T > 0 ? focusToken(result, state) : 0;
    for (let l = 0; l < nLayer; l++) {
      for (let h = 0; h < nHead; h++) {
        const entry = this.cells[l][h];
        this.#mark(entry, l === state.layer && h === state.head, false);
        // (the lab appends head roles to this title; it reads the base back from the element)
        const shared = headSharing(nHead, nKvHead, h);
        const title = (T > 0 ? describeHead(result, l, h, q) : `Layer ${l}, head ${h}`) + (shared ? `; ${shared}` : '');
        if (entry.title !== title) {
          entry.cell.title = title;
          entry.title = title;
        }
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
    const cells = this.cells.map((row) =>
      row.map(({ cell }) => {
        const r = cell.getBoundingClientRect();
        const x0 = px(r.left - g.left);
        const y0 = px(r.top - g.top);
        const x1 = px(r.right - g.left);
        const y1 = px(r.bottom - g.top);
        const tx = px(r.left - g.left + inset);
        const ty = px(r.top - g.top + inset);
        return {
          box: [x0, y0, x1 - x0, y1 - y0],
          x: tx,
          y: ty,
          w: Math.max(1, px(r.right - g.left - inset) - tx),
          h: Math.max(1, px(r.bottom - g.top - inset) - ty),
        };
      }),
    );
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
    // a long text's thumbnails: typing changes their last cell rows only, so a paint on the same
    // pixels, layout, colours and cell count repaints the rows that differ from the last thumbnails
    const t = !result.attentionAll && result.thumbnails ? result.thumbnails : null;
    const last = this.lastThumbnails;
    const previous =
      t &&
      last &&
      last.pixels === this.pixels &&
      last.layout === L &&
      last.lut === this.theme.lut &&
      last.n === result.thumbnailCells &&
      last.data.length === t.length
        ? last.data
        : null;
    // the cell rows this result kept unchanged from the one painted last, when it was written over it
    const known = previous ? thumbnailRowsKept(t, last.result) : 0;
    /** The cell rows of every head the last paint took as painted without comparing them (the tests read it). */
    this.knownRows = known;
    const changed = paintGrid(this.pixels, L, result, this.theme, this.state, previous, known);
    // what was painted, in the view's own buffer (reused while the size holds): a run that reuses
    // this result writes its new rows into the result's buffer (reuse.js, withPreviousThumbnails)
    let painted = null;
    if (t) {
      painted = last?.data.length === t.length ? last.data : new Float32Array(t.length);
      if (changed && painted === previous) copyChangedRows(painted, t, changed.rowsFrom, result.thumbnailCells);
      else painted.set(t);
    }
    this.lastThumbnails = t
      ? { data: painted, pixels: this.pixels, layout: L, lut: this.theme.lut, n: result.thumbnailCells, result }
      : null;
    // the canvas is given the pixels that changed alone (a typed token: a strip at the foot of each
    // tile), not the whole image again
    if (changed) for (const [x, y, w, h] of changed.rects) this.ctx.putImageData(this.image, 0, 0, x, y, w, h);
    else this.ctx.putImageData(this.image, 0, 0);
    // what the canvas shows, for the tests: the result and weighting painted (weightAt() reads them)
    const by = byValue(result, this.state) ? 'value' : 'weight';
    this.shown = { result, by };
    if (this.grid.dataset.weighting !== by) this.grid.dataset.weighting = by;
  }

  /** The weight the canvas shows for head (layer, head), query q, key k <= q; null before a paint. */
  weightAt(layer, head, q, k) {
    return this.shown ? shownWeightAt(this.shown.result, this.shown, layer, head, q, k) : null;
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
