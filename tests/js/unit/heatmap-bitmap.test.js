// The heatmap's bitmap of a result without maps (views/heatmap-bitmap.js): painted from tiles the
// engine pools, never from a T x T map. Against the definition, pixel for pixel: paintAttention
// (paint.js) of the whole map made here, the bitmap a result with its maps gets. The fake engine's
// tiles pool as Model::attention_tile does (cpp/src/model/model_results.cpp: each cell starts at 0 and
// takes the largest weight of its block, the masked keys' zeros included), not as poolView does (-1,
// keys <= query only): the two agree only if heatmap-bitmap.js masks the blocks after their query as
// paint.js does. Which rows each paint asks for is checked against a brute-force reference: the first
// block row whose rows hold a token that changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { themeFrom } from '../../../web/component/runtime/theme.js';
import { paintAttention, bitmapView, MAX_BITMAP } from '../../../web/component/views/paint.js';
import { HeatmapBitmap, tilePlan, cellsInView } from '../../../web/component/views/heatmap-bitmap.js';

const theme = themeFrom(() => '');

// weight (q, k <= q) of a text with token ids `ids`: depends on ids[0..q] only, as attention does
// (through a running hash of the prefix); rows sum to anything (the painter does not care), and a few
// are one-hot, the sharp rows a mean would fade
function mapOf(ids) {
  const T = ids.length;
  const m = new Float32Array(T * T);
  let h = 7;
  for (let q = 0; q < T; q++) {
    h = (h * 31 + ids[q] + 1) % 1000003;
    if (q % 97 === 5) m[q * T + (h % (q + 1))] = 1;
    else for (let k = 0; k <= q; k++) m[q * T + k] = (((h + k * 104729) % 1009) / 1009) ** 3;
  }
  return m;
}

// Model::attention_tile's pooling, written as the C++ writes it
function engineTile(map, T, rows, columns, bin) {
  const nRows = Math.ceil((rows[1] - rows[0]) / bin),
    nCols = Math.ceil((columns[1] - columns[0]) / bin);
  const values = new Float32Array(nRows * nCols);
  for (let a = 0; a < nRows; a++)
    for (let r = rows[0] + a * bin; r < Math.min(rows[1], rows[0] + (a + 1) * bin); r++)
      for (let b = 0; b < nCols; b++) {
        const j0 = columns[0] + b * bin,
          j1 = Math.min(columns[1], j0 + bin);
        for (let j = j0; j < j1; j++)
          values[a * nCols + b] = Math.max(values[a * nCols + b], j <= r ? map[r * T + j] : 0);
      }
  return { nRows, nCols, values };
}

// a canvas whose 2D context keeps what putImageData puts, as a browser does: its pixels are width x
// height (setting either clears them), and the image's dirty rectangle is copied from the image's
// rows (img.width apart) to the canvas's (width apart), clipped to the canvas
function fakeCanvas() {
  let width = 0,
    height = 0;
  const canvas = { shown: null, dataset: {}, style: {} };
  const clear = () => (canvas.shown = new Uint8ClampedArray(width * height * 4));
  Object.defineProperty(canvas, 'width', { get: () => width, set: (v) => ((width = v), clear()) });
  Object.defineProperty(canvas, 'height', { get: () => height, set: (v) => ((height = v), clear()) });
  const ctx = {
    createImageData: (w, h) => ({ width: w, height: h, data: new Uint8ClampedArray(w * h * 4) }),
    putImageData(img, dx, dy, x0 = 0, y0 = 0, w = img.width, h = img.height) {
      const x1 = Math.min(x0 + w, width - dx),
        y1 = Math.min(y0 + h, height - dy);
      for (let y = y0; y < y1; y++)
        canvas.shown.set(
          img.data.subarray((y * img.width + x0) * 4, (y * img.width + x1) * 4),
          ((y + dy) * width + x0 + dx) * 4,
        );
      canvas.lastRows = [y0, y0 + h];
    },
  };
  canvas.getContext = () => ctx;
  return canvas;
}

const layout = { x0: 10, y0: 10, cell: 1, width: 5000, height: 5000 };

// a result without maps over `ids`, whose tiles the fake engine cuts; `asked` records each tile's rows
function tiledResult(ids, asked) {
  const T = ids.length;
  const map = mapOf(ids);
  return {
    T,
    nHead: 1,
    tokens: ids.map((id) => ({ id })),
    ablate: [],
    // the head is pulled (its rows of a window; the bitmap does not read them)
    pulled: new Map([[0, { data: new Float32Array(0), stride: T, rows: [T, T] }]]),
    tiles: async (layer, head, { rows, columns, bin }) => {
      asked.push({ rows, columns, bin });
      return engineTile(map, T, rows, columns, bin);
    },
    map,
  };
}

// the definition: paintAttention of the whole map, as a result with its maps is painted
function reference(result, view) {
  const canvas = fakeCanvas();
  const src = { data: result.map, offset: 0, stride: result.T };
  paintAttention(canvas, { T: result.T }, 0, 0, theme, src, view);
  return canvas;
}

// The canvas shows its top left w x h pixels (dataset.shown), stretched over the view's cells and the
// rest clipped (a whole map's canvas has room for the rows and columns typed next): those pixels
// equal the reference's, and the placement maps them onto the reference's box
const sameAs = (canvas, want, what) => {
  assert.equal(canvas.dataset.shown, `${want.width} ${want.height}`, `${what}: the pixels shown`);
  assert.ok(canvas.width >= want.width && canvas.height >= want.height, `${what}: ${canvas.width} x ${canvas.height}`);
  for (let y = 0; y < want.height; y++) {
    const row = canvas.shown.subarray(y * canvas.width * 4, (y * canvas.width + want.width) * 4);
    const i = row.findIndex((v, j) => v !== want.shown[y * want.width * 4 + j]);
    assert.equal(i, -1, `${what}: pixel (${Math.floor(i / 4)}, ${y}) differs`);
  }
  const pct = (v) => Number.parseFloat(v);
  // the canvas's CSS box is its pixels at the size the shown ones get (the view's cells)
  const { cell, width: W, height: H } = layout;
  const [r0, r1] = canvas.dataset.rows.split(' ').map(Number);
  const [c0, c1] = canvas.dataset.cols.split(' ').map(Number);
  const close = (a, b, m) => assert.ok(Math.abs(a - b) < 1e-3, `${what}: ${m} ${a} against ${b}`);
  close(pct(canvas.style.width), (100 * (c1 - c0) * cell * canvas.width) / want.width / W, 'width');
  close(pct(canvas.style.height), (100 * (r1 - r0) * cell * canvas.height) / want.height / H, 'height');
  if (canvas.width === want.width && canvas.height === want.height) assert.equal(canvas.style.clipPath, '');
  else {
    const inset = canvas.style.clipPath.match(/^inset\(0 ([\d.]+)% ([\d.]+)% 0\)$/);
    assert.ok(inset, `${what}: clip ${canvas.style.clipPath}`);
    close(Number(inset[1]), (100 * (canvas.width - want.width)) / canvas.width, 'clipped right');
    close(Number(inset[2]), (100 * (canvas.height - want.height)) / canvas.height, 'clipped bottom');
  }
};

test('a tiled bitmap equals the whole map painted, zoomed out and in; typing asks only for the block rows from the first changed token', async () => {
  const canvas = fakeCanvas();
  const bitmap = new HeatmapBitmap(canvas);
  const state = { layer: 0, head: 0 };
  const asked = [];
  let ids = Array.from({ length: MAX_BITMAP + 150 }, (_, i) => (i * 13) % 101); // bin 2
  let r = tiledResult(ids, asked);
  let view = bitmapView(r.T);
  assert.equal(view.bin, 2);
  await bitmap.paint(r, state, theme, layout, view);
  sameAs(canvas, reference(r, view), 'the whole map in blocks of 2');
  assert.deepEqual(asked.pop(), { rows: [0, r.T], columns: [0, r.T], bin: 2 });
  assert.equal(canvas.dataset.bin, '2');
  assert.equal(canvas.dataset.rows, `0 ${r.T}`);
  assert.equal(canvas.dataset.pending, undefined);

  // typing at the end (one token, a token that rewrites the last one, then past the next block; then
  // deleting, so that cells the last block row held fall after its last query, and typing again:
  // the bitmap writes these in its buffer's room, in place)
  for (const edit of [[1], [-1, 2], [3, 4, 5], [-3], [-1], [6], [7]]) {
    const before = ids;
    ids = edit[0] < 0 ? ids.slice(0, edit[0]).concat(edit.slice(1)) : ids.concat(edit);
    r = tiledResult(ids, asked);
    view = bitmapView(r.T);
    await bitmap.paint(r, state, theme, layout, view);
    sameAs(canvas, reference(r, view), `typed ${JSON.stringify(edit)}`);
    let changed = 0; // brute force: the first token that differs
    while (changed < Math.min(before.length, ids.length) && before[changed] === ids[changed]) changed++;
    const from = changed - (changed % 2); // a deletion to a block's edge leaves no row to ask for
    assert.deepEqual(asked.pop(), from < r.T ? { rows: [from, r.T], columns: [0, r.T], bin: 2 } : undefined);
  }

  // the same result again (a re-render): nothing asked, nothing changes
  await bitmap.paint(r, state, theme, layout, view);
  assert.equal(asked.length, 0);
  sameAs(canvas, reference(r, view), 'painted again');

  // zoomed in: the cells in view, one pixel each
  view = bitmapView(r.T, [900, 1300], [700, 1250]);
  assert.equal(view.bin, 1);
  await bitmap.paint(r, state, theme, layout, view);
  sameAs(canvas, reference(r, view), 'zoomed in');
  assert.deepEqual(asked.pop(), { rows: [900, 1300], columns: [700, 1250], bin: 1 });
  assert.deepEqual(bitmap.tiledCell(1000, 800), { w: r.map[1000 * r.T + 800], bin: 1 }, 'a cell in view, exact');
  assert.equal(bitmap.tiledCell(1000, 1100), null, 'a cell after its query');
  assert.equal(bitmap.tiledCell(10, 800), null, 'a cell out of view');

  // another head: everything again
  await bitmap.paint(r, { layer: 0, head: 1 }, theme, layout, bitmapView(r.T));
  assert.deepEqual(asked.pop().rows, [0, r.T]);
  // another theme: the same cells, every pixel in its colours, and no tile asked for
  const dark = themeFrom((name) => (name === '--hs-scheme' ? 'dark' : ''));
  await bitmap.paint(r, { layer: 0, head: 1 }, dark, layout, bitmapView(r.T));
  assert.equal(asked.length, 0, 'no tile for a theme');
  const want = fakeCanvas();
  paintAttention(want, { T: r.T }, 0, 0, dark, { data: r.map, offset: 0, stride: r.T }, bitmapView(r.T));
  sameAs(canvas, want, 'the dark theme');
});

test('while a tile is on its way the later paints wait, and the last one asked is painted', async () => {
  const canvas = fakeCanvas();
  const bitmap = new HeatmapBitmap(canvas);
  const asked = [];
  const ids = Array.from({ length: 300 }, (_, i) => i % 17);
  const r = tiledResult(ids, asked);
  const slow = { ...r, tiles: (...a) => new Promise((resolve) => setImmediate(() => resolve(r.tiles(...a)))) };
  const first = bitmap.paint(slow, { layer: 0, head: 0 }, theme, layout, bitmapView(r.T));
  assert.equal(canvas.dataset.pending, '1');
  bitmap.paint(slow, { layer: 0, head: 0 }, theme, layout, bitmapView(r.T, [0, 50], [0, 50]));
  const last = bitmap.paint(slow, { layer: 0, head: 0 }, theme, layout, bitmapView(r.T, [100, 200], [20, 120]));
  await first;
  await last;
  assert.equal(canvas.dataset.pending, undefined);
  assert.deepEqual(
    asked.map((a) => a.rows),
    [
      [0, 300],
      [100, 200],
    ],
    'the paint in between was never asked for',
  );
  sameAs(canvas, reference(r, bitmapView(r.T, [100, 200], [20, 120])), 'the last view');
  assert.equal(canvas.dataset.rows, '100 200');
});

test('a tile that arrives after a result with its maps was painted leaves that paint as it is', async () => {
  const canvas = fakeCanvas();
  const bitmap = new HeatmapBitmap(canvas);
  const asked = [];
  const ids = Array.from({ length: 300 }, (_, i) => i % 17);
  const r = tiledResult(ids, asked);
  let open;
  const gate = new Promise((resolve) => (open = resolve));
  const slow = { ...r, tiles: async (...a) => (await gate, r.tiles(...a)) };
  const tiled = bitmap.paint(slow, { layer: 0, head: 0 }, theme, layout, bitmapView(r.T));
  // a shorter text, below the page's budget: its result has every map (another head's weights)
  const short = ids.slice(0, 200);
  const full = {
    T: 200,
    nHead: 1,
    tokens: short.map((id) => ({ id })),
    ablate: [],
    attentionAll: mapOf(short.map((v) => v + 1)),
  };
  await bitmap.paint(full, { layer: 0, head: 0 }, theme, layout, bitmapView(200));
  open();
  await tiled;
  const want = fakeCanvas();
  paintAttention(want, full, 0, 0, theme, { data: full.attentionAll, offset: 0, stride: 200 }, bitmapView(200));
  sameAs(canvas, want, 'the paint from the maps');
  assert.equal(canvas.dataset.rows, '0 200');
});

test('tilePlan against a brute-force reference: the rows to ask for and the block rows to keep', () => {
  const T = 50;
  for (const bin of [1, 3]) {
    for (let changed = 0; changed <= T; changed += 7) {
      const old = Array.from({ length: T }, (_, i) => i);
      const ids = Int32Array.from(old.map((v, i) => (i >= changed ? v + 100 : v)).concat([9]));
      const view = { ...bitmapView(T + 1), bin, w: Math.ceil((T + 1) / bin), h: Math.ceil((T + 1) / bin) };
      const shown = { key: 'k', ids: Int32Array.from(old), view: { ...bitmapView(T), bin } };
      const plan = tilePlan(shown, { key: 'k', ids, view }, T + 1);
      // brute force: block row a is kept when every row in it is before the first changed token
      let keep = 0;
      while (keep * bin + bin <= changed) keep++;
      assert.equal(plan.keep, keep, `bin ${bin}, changed ${changed}`);
      assert.deepEqual(plan.rows, [keep * bin, T + 1]);
      assert.deepEqual(tilePlan({ ...shown, key: 'other' }, { key: 'k', ids, view }, T + 1).rows, [0, T + 1]);
    }
  }
});

test('cellsInView: the whole map up to MAX_BITMAP tokens or zoomed out; zoomed in, the view and half a view around it', () => {
  const lay = { x0: 20, y0: 30, cell: 4 };
  const box = { top: 100, bottom: 500, left: 0, right: 800 };
  const pic = { top: 100 - 30 - 4 * 3000, left: -20 - 4 * 1000, height: 4 * 5000 };
  assert.deepEqual(cellsInView(1000, true, box, pic, 1, lay), bitmapView(1000));
  assert.deepEqual(cellsInView(5000, false, box, pic, 1, lay), bitmapView(5000));
  const v = cellsInView(5000, true, box, pic, 1, lay);
  // rows 3000..3100 in view (400 px of 4 px cells), 50 more above and 51 below; columns 1000..1200
  assert.deepEqual([v.r0, v.r1, v.c0, v.c1, v.bin], [2950, 3151, 900, 1301, 1]);
});
