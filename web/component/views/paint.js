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
function lut32Of(lut) {
  let out = lut32Cache.get(lut);
  if (!out) {
    out = new Int32Array(256);
    for (let i = 0; i < 256; i++) out[i] = pixel32(lut[i * 3], lut[i * 3 + 1], lut[i * 3 + 2]);
    lut32Cache.set(lut, out);
  }
  return out;
}

/**
 * Paints one head's T x T attention on a canvas, one pixel per cell (upper triangle: faint).
 * `src` (weighting.js shownWeights()) says where the weights shown are; default: the result's own.
 */
export function paintAttention(canvas, result, layer, head, theme, src = null) {
  const T = result.T;
  const n = Math.max(1, T);
  let c = paintCache.get(canvas);
  if (!c) {
    c = { ctx: null, img: null, u32: null };
    paintCache.set(canvas, c);
  }
  if (canvas.width !== n || canvas.height !== n) {
    canvas.width = n;
    canvas.height = n;
  }
  if (!c.ctx) c.ctx = canvas.getContext('2d');
  if (!c.img || c.img.width !== n) {
    c.img = c.ctx.createImageData(n, n);
    c.u32 = new Int32Array(c.img.data.buffer, c.img.data.byteOffset, n * n);
  }
  const px = c.u32;
  const lut = lut32Of(theme.lut.lut);
  const [fr, fg, fb] = parseCss(theme.faint);
  const faint = pixel32(fr, fg, fb);
  src ??= headSource(result, layer, head);
  const base = src.offset;
  const S = src.stride;
  const A = src.data;
  for (let q = 0; q < T; q++) {
    const row = q * n;
    const src = base + q * S;
    for (let k = 0; k <= q; k++) px[row + k] = lut[heatIndex(A[src + k])];
    for (let k = q + 1; k < n; k++) px[row + k] = faint;
  }
  if (T === 0) px[0] = 0; // nothing to show: transparent
  c.ctx.putImageData(c.img, 0, 0);
}

/**
 * Paints every head's T x T attention into its tile of a canvas-sized pixel buffer (Int32 RGBA,
 * layout from GridView#measure): the cell's box in the faint colour, then each tile pixel (x, y) shows
 * query floor(y * T / h), key floor(x * T / w) - the upper triangle (keys after the query) faint.
 * Pixels outside every cell are left as they are (transparent: the page shows through).
 * With state.by 'value' (and the result's value sizes) each cell shows weight × value size
 * (weighting.js), from row sums made only for the rows painted and kept with the result.
 */
export function paintGrid(px, layout, result, theme, state = null) {
  if (!result.attentionAll && result.thumbnails) return paintThumbnails(px, layout, result, theme);
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

// The cells [from[i], to[i]) that pixel i of `size` pixels covers along a side of n cells (at least one)
function cellSpans(n, size) {
  const from = new Int32Array(size),
    to = new Int32Array(size);
  for (let i = 0; i < size; i++) {
    from[i] = Math.min(n - 1, Math.floor((i * n) / size));
    to[i] = Math.max(from[i] + 1, Math.min(n, Math.floor(((i + 1) * n) / size)));
  }
  return { from, to };
}

/**
 * paintGrid() for a result without maps ({ attention: 'thumbnails' }): each tile pixel shows the
 * largest of the thumbnail cells it covers (cells are maxima already: a sharp head stays sharp at any
 * size), faint where every cell it covers is above the diagonal (keys after the query).
 */
export function paintThumbnails(px, layout, result, theme) {
  const { T, nHead, thumbnails: C, thumbnailCells: n } = result;
  const W = layout.width;
  const lut = lut32Of(theme.lut.lut);
  const [fr, fg, fb] = parseCss(theme.faint);
  const faint = pixel32(fr, fg, fb);
  layout.cells.forEach((row, l) =>
    row.forEach((t, h) => {
      const [bx, by, bw, bh] = t.box;
      for (let y = by; y < by + bh; y++) px.fill(faint, y * W + bx, y * W + bx + bw);
      if (T === 0) return;
      const cols = cellSpans(n, t.w),
        rows = cellSpans(n, t.h);
      const base = (l * nHead + h) * n * n;
      for (let y = 0; y < t.h; y++) {
        const a0 = rows.from[y],
          a1 = rows.to[y];
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
    }),
  );
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
