// Canvas painting of attention: one head into its own canvas (the detail heatmap), every head into
// its tile of one shared canvas (the grid). Pixels are written through a 32-bit view of ImageData
// with the theme's 256-colour table, which is far cheaper than a fillRect per cell.
import { heatIndex, parseRgb } from '../runtime/theme.js';
import { headOffset, headSource, strideOf } from '../../lib/result.js';
import { byValue, valueRowScales, valueRowScale, valueShare } from '../model/weighting.js';

// Per canvas: its 2D context and a reusable ImageData (with a 32-bit view) of the current size.
const paintCache = new WeakMap();
// Per colour table: the 256 colours as 32-bit RGBA pixels in the platform's byte order (Int32:
// values that fit a small integer keep V8's pixel loop free of heap numbers).
const lut32Cache = new WeakMap();
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
function pixel32(r, g, b) {
  return LITTLE_ENDIAN ? (255 << 24) | (b << 16) | (g << 8) | r : (r << 24) | (g << 16) | (b << 8) | 255;
}
export function lut32Of(lut) {
  let out = lut32Cache.get(lut);
  if (!out) {
    out = new Int32Array(256);
    for (let i = 0; i < 256; i++) out[i] = pixel32(lut[i * 3], lut[i * 3 + 1], lut[i * 3 + 2]);
    lut32Cache.set(lut, out);
  }
  return out;
}

// A heatmap's bitmap is at most this many pixels a side: a long text's map (8,192 tokens: 67 M
// cells, a 268 MB bitmap) is painted as the part in view, in blocks when that is still larger
export const MAX_BITMAP = 2048;

/**
 * What a heatmap's bitmap covers of a T x T map: rows [r0, r1) and columns [c0, c1) (default the
 * whole map), in blocks of bin x bin cells, bin the smallest whole number that keeps both sides
 * within MAX_BITMAP pixels. w x h pixels; the last block of a row or column may be narrower.
 */
export function bitmapView(T, rows = [0, T], cols = [0, T]) {
  const r0 = clampInt(rows[0], 0, T),
    r1 = clampInt(rows[1], r0, T),
    c0 = clampInt(cols[0], 0, T),
    c1 = clampInt(cols[1], c0, T);
  const bin = Math.max(1, Math.ceil(Math.max(r1 - r0, c1 - c0) / MAX_BITMAP));
  return { r0, r1, c0, c1, bin, w: Math.ceil((c1 - c0) / bin), h: Math.ceil((r1 - r0) / bin) };
}
const clampInt = (v, lo, hi) => Math.min(hi, Math.max(lo, Math.floor(v)));

/**
 * The pixels of `view` (bitmapView) of one head's map at src ({ data, offset, stride }: row q at
 * offset + q * stride): each the largest weight of its block, as the engine's tiles and thumbnails
 * pool (a head that puts a whole row on one token stays a full-strength pixel at any bin, where a
 * mean would fade it by bin²), and -1 where the whole block lies after its query (the upper
 * triangle, which no weight reaches). Into `out` (w * h floats) when given.
 */
export function poolView(src, view, out = new Float32Array(view.w * view.h), fromRow = view.r0) {
  const { r0, r1, c0, c1, bin, w, h } = view;
  const { data: A, offset: base, stride: S } = src;
  // with fromRow, only the blocks of rows [fromRow, r1) (from the block holding fromRow) are pooled
  // again: the rows above are the caller's, as it last pooled them
  const first = r0 + Math.floor((Math.max(r0, fromRow) - r0) / bin) * bin;
  out.fill(-1, ((first - r0) / bin) * w, w * h);
  for (let q = first; q < r1; q++) {
    const py = ((q - r0) / bin) | 0;
    const row = base + q * S;
    const end = Math.min(c1, q + 1); // keys after the query hold nothing
    // block by block, the largest in a local: no division or write per cell
    for (let x = 0, k = c0; k < end; x++) {
      const stop = Math.min(end, k + bin);
      let m = A[row + k++];
      while (k < stop) {
        const v = A[row + k++];
        if (v > m) m = v;
      }
      const i = py * w + x;
      if (m > out[i]) out[i] = m;
    }
  }
  return out;
}

/**
 * Paints one head's attention on a canvas: `view` (bitmapView; default the whole map) one pixel per
 * block, masked blocks faint. `src` (weighting.js shownWeights()) says where the weights shown are;
 * default: the result's own.
 */
export function paintAttention(canvas, result, layer, head, theme, src = null, view = null, same = null) {
  const T = result.T;
  view ??= bitmapView(T);
  const w = Math.max(1, view.w),
    h = Math.max(1, view.h);
  let c = paintCache.get(canvas);
  if (!c) {
    c = { ctx: null, img: null, u32: null, cells: null, last: null };
    paintCache.set(canvas, c);
  }
  // Typing at the end of a long text changes the map's last rows only: a row depends on its token and
  // those before it. With `same` ({ key, data, lut, ids }: what else the weights depend on as a string,
  // the array they are read from and the colour table, compared by identity, and the token ids), the
  // blocks of rows before the first token that differs from the last paint's are kept, when the last
  // paint was of the whole map in blocks of the same bin (w may have grown: the new columns' cells
  // lie after every earlier query, masked).
  const kept = keptRows(c.last, same, view, T);
  c.last = same && view.bin > 1 && wholeMap(view, T) ? { ...same, bin: view.bin, w, h } : null;
  if (kept > 0 && view.bin > 1)
    return repaintFrom(canvas, c, src ?? headSource(result, layer, head), view, theme, kept);
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  if (!c.ctx) c.ctx = canvas.getContext('2d');
  if (!c.img || c.img.width !== w || c.img.height !== h) {
    c.img = c.ctx.createImageData(w, h);
    c.u32 = new Int32Array(c.img.data.buffer, c.img.data.byteOffset, w * h);
  }
  const px = c.u32;
  const lut = lut32Of(theme.lut.lut);
  const [fr, fg, fb] = parseCss(theme.faint);
  const faint = pixel32(fr, fg, fb);
  src ??= headSource(result, layer, head);
  if (T === 0) {
    px[0] = 0; // nothing to show: transparent
  } else if (view.bin === 1) {
    // one pixel per cell: straight from the weights (no pooled copy)
    const { r0, r1, c0, c1 } = view;
    const A = src.data;
    for (let q = r0; q < r1; q++) {
      const row = (q - r0) * w - c0;
      const at = src.offset + q * src.stride;
      const last = Math.min(c1 - 1, q);
      for (let k = c0; k <= last; k++) px[row + k] = lut[heatIndex(A[at + k])];
      for (let k = Math.max(c0, last + 1); k < c1; k++) px[row + k] = faint;
    }
  } else {
    if (!c.cells || c.cells.length < w * h) c.cells = new Float32Array(w * h);
    cellsToPixels(px, poolView(src, view, c.cells), 0, w * h, lut, faint);
  }
  c.ctx.putImageData(c.img, 0, 0);
}

const wholeMap = (view, T) => view.r0 === 0 && view.c0 === 0 && view.r1 === T && view.c1 === T;

/** The theme's faint colour (blocks after their query) as a 32-bit pixel. */
export function faintPixel(theme) {
  const [r, g, b] = parseCss(theme.faint);
  return pixel32(r, g, b);
}

/** Pixels [from, to) from pooled cells: -1 (a block wholly after its query) faint, else the colour table's. */
export function cellsToPixels(px, cells, from, to, lut, faint) {
  for (let i = from; i < to; i++) px[i] = cells[i] < 0 ? faint : lut[heatIndex(cells[i])];
}

// The rows of a whole-map bitmap that a paint of `view` may keep from the last one (0: paint it all)
function keptRows(last, same, view, T) {
  if (!last || !same || last.key !== same.key || last.data !== same.data || last.lut !== same.lut) return 0;
  if (last.bin !== view.bin) return 0;
  if (!wholeMap(view, T)) return 0;
  const a = last.ids,
    b = same.ids;
  const n = Math.min(a.length, b.length);
  let k = 0;
  while (k < n && a[k] === b[k]) k++;
  return k;
}

// The whole-map bitmap again from token `from` on: the cells of the blocks before it moved to the
// new width when it grew, those from it pooled again, and their pixels alone written
function repaintFrom(canvas, c, src, view, theme, from) {
  const { w, h, bin } = view;
  const lut = lut32Of(theme.lut.lut);
  const [fr, fg, fb] = parseCss(theme.faint);
  const faint = pixel32(fr, fg, fb);
  const pw = canvas.width,
    ph = canvas.height;
  const firstBlock = Math.floor(from / bin);
  const resized = pw !== w || ph !== h;
  if (resized) {
    // the earlier block rows' cells at the new width (the new columns masked), and the image anew
    const cells = new Float32Array(w * h).fill(-1);
    for (let y = 0; y < Math.min(firstBlock, ph); y++)
      cells.set(c.cells.subarray(y * pw, y * pw + Math.min(pw, w)), y * w);
    c.cells = cells;
    canvas.width = w;
    canvas.height = h;
    c.img = c.ctx.createImageData(w, h);
    c.u32 = new Int32Array(c.img.data.buffer, c.img.data.byteOffset, w * h);
  }
  poolView(src, view, c.cells, from);
  // a new image is written whole; else the rows that changed alone
  const firstPixel = resized ? 0 : firstBlock * w;
  cellsToPixels(c.u32, c.cells, firstPixel, w * h, lut, faint);
  if (resized) c.ctx.putImageData(c.img, 0, 0);
  else c.ctx.putImageData(c.img, 0, 0, 0, firstBlock, w, h - firstBlock);
}

/**
 * Paints every head's T x T attention into its tile of a canvas-sized pixel buffer (Int32 RGBA,
 * layout from GridView#measure): the cell's box in the faint colour, then each tile pixel (x, y) shows
 * query floor(y * T / h), key floor(x * T / w) - the upper triangle (keys after the query) faint.
 * Pixels outside every cell are left as they are (transparent: the page shows through).
 * With state.by 'value' (and the result's value sizes) each cell shows weight × value size
 * (weighting.js), from row sums made only for the rows painted and kept with the result.
 * Returns what paintThumbnails() returns for a result without maps (null: everything was painted).
 */
export function paintGrid(px, layout, result, theme, state = null, previousThumbnails = null, knownRows = 0) {
  if (!result.attentionAll && result.thumbnails)
    return paintThumbnails(px, layout, result, theme, previousThumbnails, knownRows);
  paintMaps(px, layout, result, theme, state);
  return null;
}

// paintGrid() from every full map
function paintMaps(px, layout, result, theme, state) {
  const { T, nHead } = result;
  const W = layout.width;
  const lut = lut32Of(theme.lut.lut);
  const [fr, fg, fb] = parseCss(theme.faint);
  const faint = pixel32(fr, fg, fb);
  const A = result.attentionAll;
  const S = strideOf(result);
  const N = byValue(result, state) ? result.valueNorms : null;
  const scales = N ? valueRowScales(result) : null;
  const rowColours = new Int32Array(Math.max(1, T)); // one query row, coloured once per tile row
  let colKey = new Int32Array(0);
  let keys = new Int32Array(0); // the keys the tile's columns show, each once (all T when T <= w)
  layout.cells.forEach((row, l) =>
    row.forEach((t, h) => {
      const [bx, by, bw, bh] = t.box;
      for (let y = by; y < by + bh; y++) px.fill(faint, y * W + bx, y * W + bx + bw);
      if (T === 0) return;
      if (colKey.length < t.w) {
        colKey = new Int32Array(t.w);
        keys = new Int32Array(t.w);
      }
      let nKeys = 0;
      for (let x = 0; x < t.w; x++) {
        const k = Math.min(T - 1, Math.floor((x * T) / t.w));
        colKey[x] = k;
        if (nKeys === 0 || keys[nKeys - 1] !== k) keys[nKeys++] = k;
      }
      const base = headOffset(result, l, h);
      const lh = l * nHead + h;
      let q = -1;
      for (let y = 0; y < t.h; y++) {
        const qy = Math.min(T - 1, Math.floor((y * T) / t.h));
        if (qy !== q) {
          q = qy;
          // only the keys shown: a long text's row has far more keys than the tile has pixels
          const src = base + q * S;
          if (N) {
            const scale = valueRowScale(result, scales, lh, q);
            const n = lh * T;
            for (let i = 0; i < nKeys; i++) {
              const k = keys[i];
              rowColours[k] = k > q ? faint : lut[heatIndex(valueShare(A[src + k], N[n + k], scale))];
            }
          } else {
            for (let i = 0; i < nKeys; i++) {
              const k = keys[i];
              rowColours[k] = k > q ? faint : lut[heatIndex(A[src + k])];
            }
          }
        }
        const o = (t.y + y) * W + t.x;
        for (let x = 0; x < t.w; x++) px[o + x] = rowColours[colKey[x]];
      }
    }),
  );
}

// The cells [from[i], to[i]) that pixel i of `size` pixels covers along a side of n cells (at least
// one); the same few sizes at every paint (a grid's tiles share theirs), so kept
const spansMemo = new Map();
function cellSpans(n, size) {
  const key = `${n}:${size}`;
  let spans = spansMemo.get(key);
  if (spans) return spans;
  const from = new Int32Array(size),
    to = new Int32Array(size);
  for (let i = 0; i < size; i++) {
    from[i] = Math.min(n - 1, Math.floor((i * n) / size));
    to[i] = Math.max(from[i] + 1, Math.min(n, Math.floor(((i + 1) * n) / size)));
  }
  if (spansMemo.size >= 16) spansMemo.clear();
  spans = { from, to };
  spansMemo.set(key, spans);
  return spans;
}

/**
 * paintGrid() for a result without maps ({ attention: 'thumbnails' }): each tile pixel shows the
 * largest of the thumbnail cells it covers (cells are maxima already: a sharp head stays sharp at any
 * size), faint where every cell it covers is above the diagonal (keys after the query).
 * With `previous` (the thumbnails px shows, as painted by this function on this layout and theme, n
 * the same), only the pixel rows over cell rows from each head's first that differs are painted, and
 * it returns what changed: { rects: [x, y, w, h] per layer row of tiles, bounding the pixels painted
 * (what a canvas must be given again: typing changes a strip at the foot of each tile), rowsFrom: each
 * head's first changed cell row, in the cells a paint reads (n: none; layer * nHead + head) }.
 * Without it, null: all was painted. `knownRows`: how many leading cell rows of every head are known
 * to equal previous's (reuse.js thumbnailRowsKept: a typed token's result keeps the rows before its
 * first changed token), which are then not compared: at 1,000 tokens of GPT-2 small's 144 heads the
 * comparison read about a million cells a keystroke, where the rows that can differ are the last.
 */
export function paintThumbnails(px, layout, result, theme, previous = null, knownRows = 0) {
  const { T, nHead, thumbnails: C, thumbnailCells: n } = result;
  const W = layout.width;
  const lut = lut32Of(theme.lut.lut);
  const [fr, fg, fb] = parseCss(theme.faint);
  const faint = pixel32(fr, fg, fb);
  const rects = [];
  const rowsFrom = previous ? new Int32Array(layout.cells.length * nHead).fill(n) : null;
  layout.cells.forEach((row, l) => {
    let x0 = Infinity,
      y0 = Infinity,
      x1 = -Infinity,
      y1 = -Infinity;
    row.forEach((t, h) => {
      const base = (l * nHead + h) * n * n;
      // with `previous`: only the pixel rows over cell rows from the first that differs, in the cells
      // a paint reads (row a's first a + 1: those right of the diagonal are never painted)
      let changed = 0;
      if (previous) {
        changed = n;
        const known = Math.min(knownRows, n);
        for (let a = known, r = base + known * n; a < n && changed === n; a++, r += n)
          for (let b = 0; b <= a; b++)
            if (previous[r + b] !== C[r + b]) {
              changed = a;
              break;
            }
        rowsFrom[l * nHead + h] = changed;
        if (changed === n) return; // this head's thumbnail is as painted
      } else {
        const [bx, by, bw, bh] = t.box;
        for (let y = by; y < by + bh; y++) px.fill(faint, y * W + bx, y * W + bx + bw);
      }
      if (T === 0) return;
      const cols = cellSpans(n, t.w),
        rows = cellSpans(n, t.h);
      let first = t.h;
      for (let y = 0; y < t.h; y++) {
        const a0 = rows.from[y],
          a1 = rows.to[y];
        if (a1 <= changed) continue; // every cell this pixel row covers is as painted
        first = Math.min(first, y);
        const o = (t.y + y) * W + t.x;
        for (let x = 0; x < t.w; x++) {
          const b0 = cols.from[x],
            b1 = Math.min(cols.to[x], a1); // cells right of the last row's diagonal are 0
          if (b0 >= a1) {
            px[o + x] = faint;
            continue;
          }
          let m = 0;
          for (let a = a0; a < a1; a++)
            for (let b = b0, r = base + a * n; b < Math.min(b1, a + 1); b++) if (C[r + b] > m) m = C[r + b];
          px[o + x] = lut[heatIndex(m)];
        }
      }
      if (first < t.h) {
        x0 = Math.min(x0, t.x);
        y0 = Math.min(y0, t.y + first);
        x1 = Math.max(x1, t.x + t.w);
        y1 = Math.max(y1, t.y + t.h);
      }
    });
    if (x1 > x0) rects.push([x0, y0, x1 - x0, y1 - y0]);
  });
  return previous ? { rects, rowsFrom } : null;
}

/**
 * Copies into `painted` (the thumbnails a view last painted, n x n cells a head) each head's cell rows
 * from rowsFrom[head] on from `thumbnails`, as paintThumbnails() returned them: the rest are equal.
 */
export function copyChangedRows(painted, thumbnails, rowsFrom, n) {
  for (let head = 0; head < rowsFrom.length; head++) {
    if (rowsFrom[head] >= n) continue;
    const from = (head * n + rowsFrom[head]) * n,
      to = (head + 1) * n * n;
    painted.set(thumbnails.subarray(from, to), from);
  }
}

const cssCache = new Map();
function parseCss(c) {
  let v = cssCache.get(c);
  if (!v) {
    v = parseRgb(c, [200, 200, 200]);
    if (cssCache.size > 64) cssCache.clear();
    cssCache.set(c, v);
  }
  return v;
}
