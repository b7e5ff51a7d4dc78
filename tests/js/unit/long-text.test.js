// A long text's result without maps, on the page's side: the grid painted from thumbnails
// (paintThumbnails) and the heads a page shows pulled and carried across typing (PulledMaps), with a
// fake model whose tiles are cut from full maps made here. Every pixel and weight is checked
// against the definition (a pixel: the largest of the cells it covers; a pulled row: the map's row).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { themeFrom, heatIndex } from '../../../web/component/runtime/theme.js';
import {
  paintThumbnails,
  copyChangedRows,
  paintAttention,
  bitmapView,
  poolView,
  MAX_BITMAP,
} from '../../../web/component/views/paint.js';
import { PulledMaps } from '../../../web/component/runtime/pulled-maps.js';
import { headSource, makeResult } from '../../../web/lib/result.js';

const theme = themeFrom(() => '');
const lutRgb = (w) => {
  const i = heatIndex(w);
  return Array.from(theme.lut.lut.subarray(i * 3, i * 3 + 3));
};
const faintRgb = [0, 2, 4].map((i) => parseInt(theme.faint.slice(1 + i, 3 + i), 16));

test('paintThumbnails: each pixel the largest cell it covers, faint above the diagonal, at any tile size', () => {
  const nLayer = 1,
    nHead = 2,
    n = 6;
  // head 0: one sharp cell (4, 1); head 1: a ramp on and below the diagonal
  const thumbnails = new Float32Array(nLayer * nHead * n * n);
  thumbnails[4 * n + 1] = 0.9;
  for (let a = 0; a < n; a++) for (let b = 0; b <= a; b++) thumbnails[n * n + a * n + b] = (a + b + 1) / (2 * n);
  const result = { T: 40, nLayer, nHead, thumbnails, thumbnailCells: n, thumbnailBin: 8 };
  for (const [tw, th] of [
    [6, 6],
    [3, 2],
    [13, 9],
  ]) {
    const bw = tw + 2,
      bh = th + 2;
    const layout = {
      width: nHead * bw,
      height: nLayer * bh,
      cells: [
        Array.from({ length: nHead }, (_, h) => ({ box: [h * bw, 0, bw, bh], x: h * bw + 1, y: 1, w: tw, h: th })),
      ],
    };
    const pixels = new Int32Array(layout.width * layout.height);
    paintThumbnails(pixels, layout, result, theme);
    const at = (x, y) => Array.from(new Uint8Array(pixels.buffer, (y * layout.width + x) * 4, 3));
    for (let h = 0; h < nHead; h++) {
      assert.deepEqual(at(h * bw, 0), faintRgb, 'the box around the tile');
      for (let y = 0; y < th; y++)
        for (let x = 0; x < tw; x++) {
          // the cells this pixel covers, from the definition
          const a0 = Math.min(n - 1, Math.floor((y * n) / th)),
            a1 = Math.max(a0 + 1, Math.min(n, Math.floor(((y + 1) * n) / th)));
          const b0 = Math.min(n - 1, Math.floor((x * n) / tw)),
            b1 = Math.max(b0 + 1, Math.min(n, Math.floor(((x + 1) * n) / tw)));
          let m = -1;
          for (let a = a0; a < a1; a++)
            for (let b = b0; b < b1; b++) if (b <= a) m = Math.max(m, thumbnails[h * n * n + a * n + b]);
          assert.deepEqual(
            at(h * bw + 1 + x, 1 + y),
            m < 0 ? faintRgb : lutRgb(m),
            `${tw}x${th}: head ${h} pixel (${x}, ${y})`,
          );
        }
    }
  }
  // the sharp cell stays at full strength however small the tile
  const tiny = {
    width: 4,
    height: 4,
    cells: [
      [
        { box: [0, 0, 2, 2], x: 0, y: 0, w: 2, h: 2 },
        { box: [2, 2, 2, 2], x: 2, y: 2, w: 2, h: 2 },
      ],
    ],
  };
  const px = new Int32Array(16);
  paintThumbnails(px, tiny, result, theme);
  assert.deepEqual(
    Array.from(new Uint8Array(px.buffer, (1 * 4 + 0) * 4, 3)),
    lutRgb(0.9),
    'the sharp cell at 2 x 2 pixels',
  );
});

// a model of nLayer x nHead heads whose map of a text is known: weight (q, k) = f(layer, head, ids[q], k)
function fakeModel(nLayer, nHead, nPositions) {
  const maps = (ids, layer, head) => {
    const T = ids.length;
    const m = new Float32Array(T * T);
    for (let q = 0; q < T; q++)
      for (let k = 0; k <= q; k++) m[q * T + k] = ((ids[q] * 31 + k * 7 + layer * 5 + head) % 97) / 97;
    return m;
  };
  const model = {
    info: { config: { nLayer, nHead, nPositions } },
    calls: 0,
    ids: null,
    async attentionTile(text, layer, head, { rows }) {
      this.calls++;
      const ids = this.ids;
      const T = ids.length;
      const map = maps(ids, layer, head);
      return { T, values: map.slice(rows[0] * T, rows[1] * T) };
    },
  };
  const resultOf = (ids, extra = {}) =>
    makeResult({
      text: String(ids.length),
      tokens: [...ids].map((id) => ({ id })),
      T: ids.length,
      nLayer,
      nHead,
      ablate: [],
      ...extra,
    });
  return { model, maps, resultOf };
}

test('PulledMaps: a pulled head equals its map; typing brings only the new rows, with the run', async () => {
  const { model, maps, resultOf } = fakeModel(2, 3, 64);
  const pulled = new PulledMaps(() => model);
  const check = (r, layer, head) => {
    const src = headSource(r, layer, head);
    assert.ok(src, `head ${layer}:${head} is held`);
    const want = maps(
      Int32Array.from(r.tokens, (t) => t.id),
      layer,
      head,
    );
    for (let q = 0; q < r.T; q++)
      for (let k = 0; k <= q; k++)
        assert.equal(src.data[src.offset + q * src.stride + k], want[q * r.T + k], `(${q}, ${k})`);
  };
  // a first result: nothing held, the page pulls the selected head
  let ids = [5, 6, 7, 8, 9, 10];
  model.ids = ids;
  let r = resultOf(ids);
  assert.deepEqual(pulled.missing(r, [[1, 2]]), [[1, 2]]);
  await pulled.pull(r, [[1, 2]]);
  assert.deepEqual(pulled.missing(r, [[1, 2]]), []);
  check(r, 1, 2);
  assert.equal(pulled.rowsPulled, 6);

  // typing: the next run is asked for the rows after the tokens held, and brings them
  const req = pulled.request([[1, 2]], []);
  assert.deepEqual(req.heads, [[1, 2]]);
  assert.deepEqual([...req.ids], ids);
  ids = [...ids, 11, 12];
  const T = ids.length;
  const rows = maps(ids, 1, 2).slice(6 * T, T * T); // what the engine returns: rows [6, T)
  r = resultOf(ids, { pulledHeads: [[1, 2]], pulledFrom: 6, pulledRows: rows });
  const calls = model.calls;
  pulled.absorb(r);
  assert.deepEqual(pulled.missing(r, [[1, 2]]), [], 'the run brought the head');
  check(r, 1, 2);
  assert.equal(pulled.rowsPulled, 8, 'two rows more, not the whole map');
  assert.equal(model.calls, calls, 'no second call to the engine');

  // an edit in the middle: the rows from it on; another head: the whole map
  ids = [5, 6, 99, 8, 9, 10, 11, 12, 13];
  model.ids = ids;
  r = resultOf(ids);
  await pulled.pull(r, [
    [1, 2],
    [0, 0],
  ]);
  check(r, 1, 2);
  check(r, 0, 0);
  assert.equal(pulled.rowsPulled, 8 + (9 - 2) + 9);
  // switched-off heads change every row: nothing is asked to come with the run for them
  assert.deepEqual(pulled.request([[1, 2]], [[0, 1]]).ids.length, 0, 'another ablation starts from row 0');
  // a result with its full maps needs no pull
  assert.deepEqual(pulled.missing(resultOf(ids, { attentionAll: new Float32Array(2 * 3 * 81) }), [[1, 2]]), []);
});

test("role scores of a result without maps are the engine's, in analysis.js's order", async () => {
  const { HeadScoreRows, headScores } = await import('../../../web/lib/analysis.js');
  // a result with its maps: the scores from the maps; the same result as the engine would send it
  // without maps (roleScores in SCORE_NAMES order, computed here by headScores): the same objects
  const T = 7,
    nLayer = 2,
    nHead = 2;
  const ids = [3, 4, 3, 5, 4, 3, 6];
  const attentionAll = new Float32Array(nLayer * nHead * T * T);
  for (let lh = 0; lh < nLayer * nHead; lh++)
    for (let q = 0; q < T; q++) {
      let s = 0;
      for (let k = 0; k <= q; k++) s += attentionAll[(lh * T + q) * T + k] = 1 + ((lh * 5 + q * 3 + k) % 4);
      for (let k = 0; k <= q; k++) attentionAll[(lh * T + q) * T + k] /= s;
    }
  const base = { text: '', tokens: ids.map((id) => ({ id })), T, nLayer, nHead, ablate: [] };
  const withMaps = new HeadScoreRows().scores(makeResult({ ...base, attentionAll }));
  const names = ['previous', 'first', 'self', 'duplicate', 'induction', 'broad'];
  const roleScores = new Float64Array(nLayer * nHead * 6);
  for (let lh = 0; lh < nLayer * nHead; lh++) {
    const s = headScores(attentionAll.slice(lh * T * T, (lh + 1) * T * T), ids);
    names.forEach((n, i) => (roleScores[lh * 6 + i] = s[n]));
  }
  const without = new HeadScoreRows().scores(makeResult({ ...base, thumbnails: new Float32Array(0), roleScores }));
  assert.deepEqual(without, withMaps);
});

// The heatmap's bitmap of a long text (paint.js bitmapView, poolView): the part of the map it covers,
// in blocks no larger than MAX_BITMAP pixels a side need, each pixel the largest weight of its block
// and -1 where the block lies wholly after its query. Checked against the definition, cell by cell,
// on a map with a distinct weight in every cell, so a pixel that read a wrong cell cannot match.
test("bitmapView and poolView: the cells in view, in blocks of the smallest bin that fits, each its block's maximum", () => {
  const T = 2 * MAX_BITMAP + 37;
  const S = T + 5; // a roomy stride, as the pulled maps have
  const cellsOf = (q, k) => ((q * 7919 + k * 104729) % 1000003) / 1000003; // distinct, in [0, 1)
  // the lower triangle filled, NaN above it: a pixel that read a masked cell shows as NaN
  const data = new Float32Array(7 + T * S).fill(NaN);
  for (let q = 0; q < T; q++) for (let k = 0; k <= q; k++) data[7 + q * S + k] = cellsOf(q, k);
  const views = [
    [undefined, undefined], // the whole map: bin 3
    [
      [100, 400],
      [50, 350],
    ], // a window within the bitmap's limit: bin 1
    [
      [3000, 7000],
      [-20, 5000],
    ], // clamped to the map: bin 3 (4,133 columns)
    [
      [4000, 4100],
      [4050, 4150],
    ], // across the diagonal
    [
      [2001.5, 2002.5],
      [0, 4133],
    ], // one row, fractional bounds (floored): bin 3
  ];
  for (const [rows, cols] of views) {
    const v = bitmapView(T, rows, cols);
    const extent = Math.max(v.r1 - v.r0, v.c1 - v.c0);
    assert.equal(v.bin, Math.max(1, Math.ceil(extent / MAX_BITMAP)), 'the smallest bin that fits');
    assert.ok(v.w <= MAX_BITMAP && v.h <= MAX_BITMAP);
    assert.equal(v.w, Math.ceil((v.c1 - v.c0) / v.bin));
    assert.equal(v.h, Math.ceil((v.r1 - v.r0) / v.bin));
    assert.ok(v.r0 >= 0 && v.r1 <= T && v.c0 >= 0 && v.c1 <= T);
    const px = poolView({ data, offset: 7, stride: S }, v);
    // every pixel of a small view; 3,000 spread over a large one
    const all = v.w * v.h <= 400 * 400;
    const picks = all ? v.w * v.h : 3000;
    for (let i = 0; i < picks; i++) {
      const at = all ? i : Math.floor((((i * 2654435761) % 4294967296) / 4294967296) * v.w * v.h);
      const x = at % v.w,
        y = Math.floor(at / v.w);
      let want = -1;
      for (let q = v.r0 + y * v.bin; q < Math.min(v.r1, v.r0 + (y + 1) * v.bin); q++)
        for (let k = v.c0 + x * v.bin; k < Math.min(v.c1, v.c0 + (x + 1) * v.bin); k++)
          if (k <= q) want = Math.max(want, Math.fround(cellsOf(q, k)));
      assert.equal(px[y * v.w + x], want, `pixel (${x}, ${y})`);
    }
  }
});

test('PulledMaps keeps at most 8 heads not shown, and no more floats of them than it is given', async () => {
  const { model, resultOf } = fakeModel(4, 4, 64);
  const ids = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20];
  model.ids = ids;
  const r = resultOf(ids);
  // the maps' stride is roomy (more than T), so one head's floats are read from the first pull
  const probe = new PulledMaps(() => model);
  await probe.pull(r, [[0, 0]]);
  const floats = headSource(r, 0, 0).data.length;
  // room for 3 spare heads' floats: after pulling heads one at a time, the shown one and the 3 most
  // recent others are held, in that order
  const pulled = new PulledMaps(() => model, { spareFloats: 3 * floats });
  const order = [];
  for (let h = 0; h < 10; h++) {
    const head = [h >> 2, h & 3];
    order.push(`${head[0]}:${head[1]}`);
    await pulled.pull(resultOf(ids), [head]);
  }
  assert.deepEqual(pulled.held(), order.slice(-4));
  // a roomy float budget: the count limit, 8 spares and the shown head
  const roomy = new PulledMaps(() => model, { spareFloats: 1e9 });
  for (let h = 0; h < 12; h++) await roomy.pull(resultOf(ids), [[h >> 2, h & 3]]);
  assert.equal(roomy.held().length, 9);
});

// Typing at the end of a long text: paintAttention with `same` repaints only the blocks from the
// first token that differs, on a canvas whose bitmap it keeps. Against a fresh canvas painted whole
// (the definition, as tested above), pixel for pixel, through a fake 2D context that applies
// putImageData's dirty rectangle as a browser does: a block left stale, or a row written outside the
// rectangle, shows as a difference.
function fakeCanvas() {
  const canvas = { width: 0, height: 0, shown: null, puts: 0 };
  const ctx = {
    createImageData: (w, h) => ({ width: w, height: h, data: new Uint8ClampedArray(w * h * 4) }),
    putImageData(img, dx, dy, x0 = 0, y0 = 0, w = img.width, h = img.height) {
      if (!canvas.shown || canvas.shown.length !== img.data.length)
        canvas.shown = new Uint8ClampedArray(img.data.length);
      for (let y = y0; y < y0 + h; y++)
        canvas.shown.set(
          img.data.subarray((y * img.width + x0) * 4, (y * img.width + x0 + w) * 4),
          (y * img.width + x0) * 4,
        );
      canvas.puts++;
      canvas.lastRows = [y0, y0 + h];
    },
  };
  canvas.getContext = () => ctx;
  return canvas;
}

test('paintAttention repaints only the blocks typing changed, and equals a whole paint', () => {
  const S = 2 * MAX_BITMAP + 200; // the pulled map's roomy stride
  const data = new Float32Array(S * S);
  const fill = (q0, q1, salt) => {
    for (let q = q0; q < q1; q++)
      for (let k = 0; k <= q; k++) data[q * S + k] = (((q * 7919 + k * 104729 + salt) % 1000003) / 1000003) ** 4;
  };
  const src = { data, offset: 0, stride: S };
  const canvas = fakeCanvas();
  let ids = Array.from({ length: 2 * MAX_BITMAP + 90 }, (_, i) => i % 50);
  fill(0, ids.length, 0);
  const paint = (target, withSame) =>
    paintAttention(
      target,
      { T: ids.length },
      0,
      0,
      theme,
      src,
      bitmapView(ids.length),
      withSame ? { key: 'h', data, lut: theme.lut, ids: [...ids] } : null,
    );
  const check = (what) => {
    const whole = fakeCanvas();
    paint(whole, false);
    assert.equal(canvas.width, whole.width, what);
    assert.equal(canvas.height, whole.height, what);
    assert.ok(
      canvas.shown.every((v, i) => v === whole.shown[i]),
      `${what}: every pixel as a whole paint`,
    );
  };
  paint(canvas, true);
  check('the first paint');
  // typing: one token (the bitmap keeps its width), then tokens past the next block (it grows)
  for (const added of [1, 2, 7]) {
    const T0 = ids.length;
    ids = ids.concat(Array.from({ length: added }, (_, i) => 60 + i));
    fill(T0, ids.length, 1);
    const height = canvas.height;
    paint(canvas, true);
    check(`${added} tokens typed at ${T0}`);
    // the same height: only the last block rows were put (the rest kept); a taller bitmap: all of it
    if (canvas.height === height) assert.ok(canvas.lastRows[0] >= height - 2, `rows put: ${canvas.lastRows}`);
  }
  // a change in the middle: the rows from it change
  const at = 1000;
  ids[at] = 99;
  fill(at, ids.length, 2);
  paint(canvas, true);
  check('a token changed in the middle');
  // another head's weights in the same array: everything again (the key differs)
  fill(0, ids.length, 3);
  paintAttention(canvas, { T: ids.length }, 0, 1, theme, src, bitmapView(ids.length), {
    key: 'other',
    data,
    lut: theme.lut,
    ids: [...ids],
  });
  check('another head');
});

// The grid after a keystroke: paintThumbnails with the thumbnails it last painted repaints only the
// pixel rows over cell rows that differ, and equals a whole paint of the new thumbnails
test('paintThumbnails with the previous thumbnails repaints the rows that changed, and equals a whole paint', () => {
  const nLayer = 2,
    nHead = 3,
    n = 16,
    tile = 11; // fewer pixels than cells: a pixel row covers one or two cell rows
  const layout = {
    width: nHead * (tile + 2),
    cells: Array.from({ length: nLayer }, (_, l) =>
      Array.from({ length: nHead }, (_, h) => {
        const x = h * (tile + 2),
          y = l * (tile + 2);
        return { box: [x, y, tile + 2, tile + 2], x: x + 1, y: y + 1, w: tile, h: tile };
      }),
    ),
  };
  const px0 = () => new Int32Array(layout.width * nLayer * (tile + 2));
  const thumbsOf = (salt, changedFrom) => {
    const t = new Float32Array(nLayer * nHead * n * n);
    for (let i = 0; i < t.length; i++) {
      const a = Math.floor(i / n) % n,
        b = i % n;
      if (b <= a) t[i] = (((i * 7919 + (a >= changedFrom ? salt : 0)) % 1009) / 1009) ** 2;
    }
    return t;
  };
  const before = { T: 1000, nLayer, nHead, thumbnails: thumbsOf(0, n), thumbnailCells: n, thumbnailBin: 64 };
  const px = px0();
  assert.equal(paintThumbnails(px, layout, before, theme), null, 'a whole paint');
  // what the grid keeps of what it painted, updated from rowsFrom alone
  const painted = Float32Array.from(before.thumbnails);
  for (const from of [15, 9, 0]) {
    // the cell rows from `from` on changed in every head but the second (the same there)
    const after = { ...before, thumbnails: thumbsOf(from + 1, from) };
    after.thumbnails.set(before.thumbnails.subarray(n * n, 2 * n * n), n * n);
    const shown = Int32Array.from(px);
    // the rows before `from` known equal (a typed token's result kept them) are not compared: a copy
    // whose head 0 is wrong there is taken as it is, head 0's first changed row still `from`
    const stale = Float32Array.from(before.thumbnails).fill(0.5, 0, from * n);
    const known = paintThumbnails(Int32Array.from(px), layout, after, theme, stale, from);
    assert.equal(known.rowsFrom[0], from, `rows before ${from} known: not compared`);
    const changed = paintThumbnails(px, layout, after, theme, before.thumbnails, from);
    const whole = px0();
    paintThumbnails(whole, layout, after, theme);
    assert.deepEqual(px, whole, `cell rows from ${from} changed`);
    // each head's first changed row: from, but the second head's none (n)
    const want = Int32Array.from({ length: nLayer * nHead }, (_, i) => (i === 1 ? n : from));
    assert.deepEqual(changed.rowsFrom, want, `rowsFrom after rows from ${from} changed`);
    copyChangedRows(painted, after.thumbnails, changed.rowsFrom, n);
    assert.deepEqual(painted, after.thumbnails, 'the changed rows copied give the new thumbnails');
    // a canvas given only the rects shows the whole paint: every pixel that differs lies in one, and
    // they are no bigger than the strips over the changed rows (the layer row's bounding box)
    const canvas = Int32Array.from(shown);
    for (const [x, y, w, h] of changed.rects)
      for (let yy = y; yy < y + h; yy++)
        canvas.set(whole.subarray(yy * layout.width + x, yy * layout.width + x + w), yy * layout.width + x);
    assert.deepEqual(canvas, whole, `the rects hold every changed pixel (rows from ${from})`);
    assert.equal(changed.rects.length, nLayer, 'one rect per layer row');
    const firstPixelRow = Math.floor((from * tile) / n); // the first pixel row over cell row `from`
    for (const [l, [x, y, w, h]] of changed.rects.entries()) {
      const top = layout.cells[l][0].y;
      assert.ok(y >= top + firstPixelRow - 1 && y + h === top + tile, `layer ${l}: rows ${y}..${y + h}`);
      assert.ok(x === layout.cells[l][0].x && x + w === layout.cells[l][nHead - 1].x + tile, `layer ${l}: columns`);
    }
    before.thumbnails = after.thumbnails;
  }
  // nothing changed: no rect, every head's rowsFrom n
  const same = paintThumbnails(px, layout, before, theme, Float32Array.from(before.thumbnails));
  assert.deepEqual(same.rects, []);
  assert.ok(same.rowsFrom.every((r) => r === n));
  // a cell right of its row's diagonal is never painted: a change there changes nothing shown
  const upper = { ...before, thumbnails: Float32Array.from(before.thumbnails) };
  upper.thumbnails[3 * n + 10] = 0.9; // head 0, row 3, column 10
  const none = paintThumbnails(px, layout, upper, theme, before.thumbnails);
  assert.deepEqual(none.rects, []);
  assert.equal(none.rowsFrom[0], n);
  const wholeUpper = px0();
  paintThumbnails(wholeUpper, layout, upper, theme);
  assert.deepEqual(px, wholeUpper, 'the upper cell is not painted');
});
