// The heatmap's cells as a bitmap on a canvas under its SVG labels (paint.js paints the pixels).
// One rule for where the cells come from: a result with every map (attentionAll) is painted from it,
// at once; a result without maps ({ attention: 'thumbnails' }: a long text) is painted from tiles
// the engine pools to the bitmap (result.tiles: model.attentionTile with the bitmap's rows, columns
// and bin, or the same cut from rows the run brought, runtime/pulled-maps.js), so that no T x T map
// is made anywhere: the whole map pooled to
// at most MAX_BITMAP pixels a side (each pixel its block's largest weight, as paint.js poolView),
// zoomed in the cells in view. The pixels are the same either way. Typing at the end asks only for
// the block rows from the first changed token; until a tile arrives the bitmap shows what it showed.
import { bitmapView, paintAttention, cellsToPixels, faintPixel, lut32Of, MAX_BITMAP } from './paint.js';
import { sharedPrefixLength } from '../../lib/result.js';
import { shownWeights } from '../model/weighting.js';

/**
 * What to ask the engine for to paint `want` ({ key, ids, view }: what the weights depend on besides
 * the tokens, the token ids, bitmapView()) over `shown` (the same, with `cells`, as last painted, or
 * null): { rows: [begin, end), keep } where keep is the block rows of shown's cells still right
 * (rows before the first changed token, when both are the whole map in blocks of the same bin);
 * rows empty when nothing needs to come (the same view of the same tokens).
 */
export function tilePlan(shown, want, T) {
  const { view } = want;
  const same = shown && shown.key === want.key;
  const sameView = (a, b) => a.r0 === b.r0 && a.r1 === b.r1 && a.c0 === b.c0 && a.c1 === b.c1 && a.bin === b.bin;
  const kept = same ? sharedPrefixLength(shown.ids, want.ids) : 0;
  if (same && sameView(shown.view, view) && kept === want.ids.length && kept === shown.ids.length)
    return { rows: [view.r1, view.r1], keep: view.h };
  if (same && wholeMap(shown.view, shown.ids.length) && wholeMap(view, T) && shown.view.bin === view.bin) {
    const keep = Math.floor(kept / view.bin);
    return { rows: [Math.min(view.r1, keep * view.bin), view.r1], keep };
  }
  return { rows: [view.r0, view.r1], keep: 0 };
}

const wholeMap = (view, T) => view.r0 === 0 && view.c0 === 0 && view.r1 === T && view.c1 === T;

// Cells (and the bitmap's pixels) a side for n, with room for the tokens typed next: n plus an
// eighth, at least 16, in steps of 32 (as reuse.js's roomyStride), so that typing at the end of a
// long text writes its new cells in place instead of allocating the T x T cells again at every token.
const roomy = (n) => Math.ceil((n + Math.max(16, n / 8)) / 32) * 32;

/**
 * The cells of `view` after a tile of its rows [rows[0], r1) arrived (`tile`: attentionTile's
 * { nRows, nCols, values }, in the view's columns and bin), over the first `keep` block rows of
 * `old` ({ view, cells, stride }, null for none): -1 where a block lies wholly after its query (its
 * first key past its last query: the engine's 0 there is no weight), as paint.js poolView writes
 * them. Returns { cells, stride }: row y's cells at y * stride. With rows to keep from a buffer with
 * room for the view (typing at the end of a whole map, the same bin), in that buffer, else in a new
 * one with room. No cell after its query is ever written, so such cells keep the buffer's first -1.
 */
export function mergeTile(old, view, keep, rows, tile) {
  const { w, h, r0, r1, c0, bin } = view;
  let cells, stride;
  if (old && keep > 0 && old.stride >= w && old.cells.length >= h * old.stride) ({ cells, stride } = old);
  else {
    stride = roomy(w);
    cells = new Float32Array(stride * roomy(h)).fill(-1);
    if (old && keep > 0)
      for (let y = 0; y < Math.min(keep, old.view.h, h); y++)
        cells.set(old.cells.subarray(y * old.stride, y * old.stride + Math.min(old.view.w, w)), y * stride);
  }
  const y0 = (rows[0] - r0) / bin;
  for (let y = 0; y < tile.nRows; y++) {
    const lastQuery = Math.min(r1, rows[0] + (y + 1) * bin) - 1;
    const o = (y0 + y) * stride;
    for (let x = 0; x < tile.nCols; x++) if (c0 + x * bin <= lastQuery) cells[o + x] = tile.values[y * tile.nCols + x];
  }
  return { cells, stride };
}

export class HeatmapBitmap {
  constructor(canvas) {
    this.canvas = canvas;
    this.shown = null; // a tiled paint: { key, ids, view, cells }
    this.latest = null; // the tiled paint asked for last
    this.flying = null; // the tile request in flight
    this.place = null;
  }

  /**
   * Paints `view` (bitmapView) of the head `state` selects in `result`, placed over its cells of
   * `layout` (heatmapScene's). Resolves when the bitmap shows it (at once for a result with its maps).
   */
  paint(result, state, theme, layout, view) {
    this.layout = layout;
    if (result.attentionAll || !result.tiles) {
      this.shown = this.latest = null;
      const src = shownWeights(result, state, state.layer, state.head);
      // what the weights depend on besides the tokens: typing at the end repaints only the new rows' blocks
      const same = {
        key: `${state.layer}:${state.head}:${JSON.stringify(result.ablate ?? [])}:${src.weighted}:${src.offset}:${src.stride}`,
        data: src.data,
        lut: theme.lut,
        ids: result.tokens.map((t) => t.id),
      };
      paintAttention(this.canvas, result, state.layer, state.head, theme, src, view, same);
      this.#shows(view);
      return Promise.resolve();
    }
    const want = {
      result,
      theme,
      key: `${state.layer}:${state.head}:${JSON.stringify(result.ablate ?? [])}`,
      ids: Int32Array.from(result.tokens, (t) => t.id),
      view,
    };
    want.done = new Promise((resolve) => (want.resolve = resolve));
    this.latest = want;
    if (this.shown) this.#shows(this.shown.view); // the picture shown, placed in the new layout meanwhile
    if (!this.flying) this.#fetch();
    return want.done;
  }

  // Asks for the latest paint's tile (only its rows that changed), paints it when it comes unless a
  // later paint was asked for meanwhile, then goes on with that one.
  async #fetch() {
    const want = this.latest;
    const { result, view } = want;
    const T = result.T;
    const plan = tilePlan(this.shown, want, T);
    this.flying = want;
    this.canvas.dataset.pending = '1';
    let tile = { nRows: 0, nCols: 0, values: new Float32Array(0) };
    try {
      if (plan.rows[1] > plan.rows[0]) {
        const [layer, head] = want.key.split(':').map(Number);
        tile = await result.tiles(layer, head, { rows: plan.rows, columns: [view.c0, view.c1], bin: view.bin });
      }
    } catch (e) {
      // a tile of a text the engine no longer runs (a newer one was asked for): the next paint asks again
      if (this.latest === want) console.warn('headscope: the heatmap tile failed:', e.message);
      tile = null;
    }
    this.flying = null;
    // (a tile of an older text is painted too: it is right for its tokens, and the next plan knows
    // them; not once a result with its maps was painted meanwhile: latest is then null)
    if (tile && this.latest) {
      const unchanged = plan.rows[1] === plan.rows[0] && plan.keep === view.h && this.shown?.view.w === view.w;
      const { cells, stride } = unchanged ? this.shown : mergeTile(this.shown, view, plan.keep, plan.rows, tile);
      this.#draw(want, cells, stride, plan);
      this.shown = { key: want.key, ids: want.ids, view, cells, stride, lut: want.theme.lut };
    }
    want.resolve();
    if (this.latest !== want && this.latest) this.#fetch();
    else delete this.canvas.dataset.pending;
  }

  // The pixels of `cells` (rows `stride` apart): the block rows that changed alone, in an image with
  // the cells' room (kept while it fits, so that the pixels of the rows before them stay converted);
  // the canvas shows the view's w x h of it, all of it again after a resize (which clears the canvas)
  #draw(want, cells, stride, plan) {
    const { view, theme } = want;
    const { canvas } = this;
    const w = Math.max(1, view.w),
      h = Math.max(1, view.h);
    const rows = cells.length / stride;
    // A whole map grows a row and a column (of blocks) as tokens are typed: its canvas takes the
    // cells' room, as the image does, and shows w x h of it (#shows), so that a typed token's rows
    // are put into it. Resizing a canvas makes a new one, cleared, and every pixel is put again: at
    // 1,000 tokens that was 13 ms of the page's thread a keystroke, while the engine ran the next.
    const withRoom = wholeMap(view, want.result.T);
    const resized = canvas.width !== (withRoom ? stride : w) || canvas.height !== (withRoom ? rows : h);
    if (resized) {
      canvas.width = withRoom ? stride : w;
      canvas.height = withRoom ? rows : h;
    }
    const ctx = (this.ctx ??= canvas.getContext('2d'));
    const same = this.img && this.img.width === stride && this.img.height === rows;
    if (!same) {
      this.img = ctx.createImageData(stride, rows);
      this.u32 = new Int32Array(this.img.data.buffer, this.img.data.byteOffset, stride * rows);
    }
    const kept = same && this.shown && this.shown.cells === cells && this.shown.lut === theme.lut && plan.keep > 0;
    const first = kept ? Math.min(plan.keep, h) : 0;
    cellsToPixels(this.u32, cells, first * stride, h * stride, lut32Of(theme.lut.lut), faintPixel(theme));
    if (!resized && first >= h) return this.#shows(view);
    const from = resized ? 0 : first;
    // whole rows, room included: a column the canvas shows later (the text grew) holds its cells' pixels
    ctx.putImageData(this.img, 0, 0, 0, from, stride, h - from);
    this.#shows(view);
  }

  // Places the bitmap over the cells of `view` in percentages of the picture (CSSOM: CSP-safe), and
  // says what it covers, for a reader's tools and the tests: rows, columns, cells per pixel, and the
  // canvas's pixels that show them (its top left w x h; a whole map's canvas has room past them,
  // clipped: the picture's box hides the overflow, views.css)
  #shows(view) {
    const { layout, canvas } = this;
    const pct = (v, total) => `${((100 * v) / total).toFixed(4)}%`;
    const { cell } = layout;
    const w = Math.max(1, view.w),
      h = Math.max(1, view.h);
    const sx = canvas.width / w,
      sy = canvas.height / h;
    const place = [
      pct(layout.x0 + view.c0 * cell, layout.width),
      pct(layout.y0 + view.r0 * cell, layout.height),
      pct((view.c1 - view.c0) * cell * sx, layout.width),
      pct((view.r1 - view.r0) * cell * sy, layout.height),
      sx === 1 && sy === 1
        ? ''
        : `inset(0 ${pct(canvas.width - w, canvas.width)} ${pct(canvas.height - h, canvas.height)} 0)`,
    ];
    if (!this.place || place.some((v, i) => v !== this.place[i])) {
      [canvas.style.left, canvas.style.top, canvas.style.width, canvas.style.height, canvas.style.clipPath] = place;
      this.place = place;
    }
    canvas.dataset.rows = `${view.r0} ${view.r1}`;
    canvas.dataset.cols = `${view.c0} ${view.c1}`;
    canvas.dataset.bin = String(view.bin);
    canvas.dataset.shown = `${w} ${h}`;
  }

  /**
   * What the tiled bitmap shows of cell (q, k): { w, bin } (bin 1: the weight itself, bit for bit;
   * else the largest weight of the bin x bin block holding it), or null when it does not show it.
   */
  tiledCell(q, k) {
    const s = this.shown;
    if (!s || q < s.view.r0 || q >= s.view.r1 || k < s.view.c0 || k >= s.view.c1) return null;
    const { r0, c0, bin } = s.view;
    const v = s.cells[Math.floor((q - r0) / bin) * s.stride + Math.floor((k - c0) / bin)];
    return v < 0 ? null : { w: v, bin };
  }
}

/**
 * The bitmap's view of a T x T map in a scroller: the whole map (bitmapView), or past MAX_BITMAP
 * tokens at a zoom the rows and columns in the scroller's view, with half a view more on every side
 * (a short scroll shows painted cells while the next paint comes). `pic`: the picture's client box,
 * `scale` its client pixels per scene unit, `box` the scroller's client box; layout: heatmapScene's.
 */
export function cellsInView(T, zoomed, box, pic, scale, layout) {
  if (T <= MAX_BITMAP || !zoomed || !box || !pic.height) return bitmapView(T);
  const { x0, y0, cell } = layout;
  const at = (client, origin, o) => ((client - origin) / scale - o) / cell;
  const pad = (a, b) => [a - (b - a) / 2, b + (b - a) / 2 + 1];
  return bitmapView(
    T,
    pad(at(box.top, pic.top, y0), at(box.bottom, pic.top, y0)),
    pad(at(box.left, pic.left, x0), at(box.right, pic.left, x0)),
  );
}
