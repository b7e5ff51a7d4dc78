// The rows a page pulls of a long text's heads (runtime/pulled-maps.js): those of the lines view's
// window around the focused token (pulledWindow), never a whole map, carried across typing (the new
// rows come with the run) and pulled again when the focus moves. A fake engine cuts tiles and run()'s
// `pull` rows from maps made here, as lib/maps.js's pulledRowsOf defines them (written out again
// below, brute force); every row held is checked against its map's row, every column.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PulledMaps, pulledWindow, askedWindow, tileFromPulled } from '../../../web/component/runtime/pulled-maps.js';
import { LINES_WINDOW } from '../../../web/component/views/lines.js';
import { headSource, makeResult } from '../../../web/lib/result.js';

// weight (q, k) of head (layer, head) depends on the tokens 0..q, as attention does
const mapRow = (ids, layer, head, q) => {
  let h = layer * 7 + head + 1;
  for (let i = 0; i <= q; i++) h = (h * 31 + ids[i] + 1) % 10007;
  return Float32Array.from({ length: ids.length }, (_, k) => (k <= q ? ((h + k * 13) % 101) / 101 : 0));
};

function fakeEngine(nPositions) {
  const model = {
    info: { config: { nLayer: 2, nHead: 3, nPositions } },
    ids: [],
    rowsAsked: 0,
    async attentionTile(text, layer, head, { rows }) {
      this.rowsAsked += rows[1] - rows[0];
      const T = this.ids.length;
      const values = new Float32Array((rows[1] - rows[0]) * T);
      for (let q = rows[0]; q < rows[1]; q++) values.set(mapRow(this.ids, layer, head, q), (q - rows[0]) * T);
      return { T, values };
    },
  };
  // run(text, { pull }): the rows of the window from the first token that differs from pull.ids
  const run = (ids, pull) => {
    model.ids = ids;
    const T = ids.length;
    const around = pull?.window?.around ?? T - 1;
    const size = pull?.window?.size ?? T;
    let w0 = Math.min(Math.max(0, Math.floor(Math.min(around, T - 1) - size / 2)), Math.max(0, T - size));
    const w1 = Math.min(T, w0 + size);
    let shared = 0;
    while (pull && shared < Math.min(T, pull.ids.length) && pull.ids[shared] === ids[shared]) shared++;
    const from = Math.min(w1, Math.max(w0, shared));
    const extra = {};
    if (pull) {
      const rows = new Float32Array(pull.heads.length * (w1 - from) * T);
      pull.heads.forEach(([l, h], i) => {
        for (let q = from; q < w1; q++) rows.set(mapRow(ids, l, h, q), (i * (w1 - from) + q - from) * T);
      });
      Object.assign(extra, { pulledHeads: pull.heads, pulledFrom: from, pulledTo: w1, pulledRows: rows });
      model.rowsAsked += (w1 - from) * pull.heads.length;
    }
    return makeResult({
      text: ids.join(' '),
      tokens: ids.map((id) => ({ id })),
      T,
      nLayer: 2,
      nHead: 3,
      ablate: [],
      ...extra,
    });
  };
  return { model, run };
}

// every row `r` holds of head (layer, head) is its map's row; the rows cover the focus's window and
// lie within the window asked for
function check(r, layer, head, focus, what) {
  const src = headSource(r, layer, head);
  assert.ok(src, `${what}: head ${layer}:${head} held`);
  const [a, b] = pulledWindow(r.T, focus),
    [c, d] = askedWindow(r.T, focus);
  assert.ok(c <= src.rows[0] && src.rows[0] <= a && b <= src.rows[1] && src.rows[1] <= d, `${what}: rows ${src.rows}`);
  assert.equal(src.data.length, (src.rows[1] - src.rows[0]) * src.stride, `${what}: those rows alone`);
  const ids = r.tokens.map((t) => t.id);
  for (let q = src.rows[0]; q < src.rows[1]; q++) {
    const want = mapRow(ids, layer, head, q);
    const got = src.data.subarray(src.offset + q * src.stride, src.offset + q * src.stride + r.T);
    assert.deepEqual(got, want, `${what}: row ${q}`);
  }
}

test('pulledWindow: the lines view window around the focus, the last token without one; askedWindow holds it', () => {
  assert.deepEqual(pulledWindow(1000, null), [1000 - LINES_WINDOW, 1000]);
  assert.deepEqual(pulledWindow(1000, 5000), [1000 - LINES_WINDOW, 1000], 'a focus past the text: the last');
  assert.deepEqual(pulledWindow(1000, 500), [500 - LINES_WINDOW / 2, 500 + LINES_WINDOW / 2]);
  assert.deepEqual(pulledWindow(1000, 3), [0, LINES_WINDOW]);
  assert.deepEqual(pulledWindow(40, 3), [0, 40]);
  // the window asked for holds the one read, whatever the focus (brute force over every focus)
  for (const T of [100, 130, 160, 161, 1000])
    for (let f = -1; f <= T; f++) {
      const [a, b] = pulledWindow(T, f),
        [c, d] = askedWindow(T, f);
      assert.ok(c <= a && b <= d && d - c === Math.min(T, LINES_WINDOW + 32), `T ${T}, focus ${f}`);
    }
});

test('PulledMaps holds the rows of the focused window: typing brings its new rows with the run, a moved focus pulls its window', async () => {
  const { model, run } = fakeEngine(4096);
  let focus = null;
  const pulled = new PulledMaps(() => model, { focus: () => focus });
  let ids = Array.from({ length: 700 }, (_, i) => (i * 7) % 53);
  // the first result: the head shown comes with the run as its window, not its map
  let req = pulled.request([[1, 2]], []);
  assert.deepEqual(req.window, { around: null, size: LINES_WINDOW + 32 });
  let r = run(ids, req);
  pulled.absorb(r);
  assert.deepEqual(pulled.missing(r, [[1, 2]]), []);
  check(r, 1, 2, focus, 'the first run');
  assert.equal(pulled.rowsPulled, LINES_WINDOW + 32);
  assert.equal(typeof r.tiles, 'function', "the heatmap's tiles come through the result");

  // typing at the end: the window moves with the last token, and only the new rows come; a keystroke
  // that merges the last two tokens (one token fewer) too
  for (const typed of [[1], [2, 3], [4], [-2, 5], [6]]) {
    req = pulled.request([[1, 2]], []);
    ids = typed[0] < 0 ? ids.slice(0, typed[0]).concat(typed.slice(1)) : ids.concat(typed);
    const asked = model.rowsAsked;
    r = run(ids, req);
    pulled.absorb(r);
    assert.deepEqual(pulled.missing(r, [[1, 2]]), [], `typed ${typed}`);
    check(r, 1, 2, focus, `typed ${typed}`);
    assert.equal(model.rowsAsked - asked, typed[0] < 0 ? 1 : typed.length, 'the new rows alone');
  }

  // the focus moves: the head lacks the rows of its window, and pull() brings them, the whole window
  focus = 200;
  assert.deepEqual(pulled.missing(r, [[1, 2]]), [[1, 2]]);
  let asked = model.rowsAsked;
  await pulled.pull(r, [[1, 2]]);
  check(r, 1, 2, focus, 'the focus moved');
  assert.equal(model.rowsAsked - asked, LINES_WINDOW + 32);
  // typing at the end now changes no row of that window: nothing comes, the rows are kept
  req = pulled.request([[1, 2]], []);
  ids = ids.concat([9]);
  asked = model.rowsAsked;
  r = run(ids, req);
  pulled.absorb(r);
  assert.deepEqual(pulled.missing(r, [[1, 2]]), []);
  check(r, 1, 2, focus, 'typed with the focus inside');
  assert.equal(model.rowsAsked, asked);
  // an edit inside the window: the rows from it on
  ids = ids.slice();
  ids[230] = 99;
  r = run(ids, null);
  asked = model.rowsAsked;
  await pulled.pull(r, [[1, 2]]);
  check(r, 1, 2, focus, 'an edit inside the window');
  assert.equal(model.rowsAsked - asked, askedWindow(r.T, focus)[1] - 230);
  // a run whose rows are of another window (the focus moved while it ran): left for pull()
  req = pulled.request([[1, 2]], []);
  focus = 600;
  r = run(ids.concat([5]), req);
  pulled.absorb(r);
  assert.deepEqual(pulled.missing(r, [[1, 2]]), [[1, 2]]);
  await pulled.pull(r, [[1, 2]]);
  check(r, 1, 2, focus, 'pulled after a run of another window');
});

// cell (a, b): the largest weight of rows [r0 + a bin, ...) x columns [c0 + b bin, ...) of the map, clipped
// to the ranges: AttentionTile's definition (headscope.d.ts), brute force over every weight
function pooledRows(ids, layer, head, [r0, r1], [c0, c1], bin) {
  const nCols = Math.ceil((c1 - c0) / bin);
  const out = new Float32Array(Math.ceil((r1 - r0) / bin) * nCols);
  for (let q = r0; q < r1; q++) {
    const row = mapRow(ids, layer, head, q);
    for (let k = c0; k < c1; k++) {
      const i = Math.floor((q - r0) / bin) * nCols + Math.floor((k - c0) / bin);
      out[i] = Math.max(out[i], row[k]);
    }
  }
  return out;
}

test("the heatmap's tiles of rows the result holds are cut from them, with no call to the engine; others are asked for", async () => {
  const { model, run } = fakeEngine(4096);
  const pulled = new PulledMaps(() => model);
  let ids = Array.from({ length: 700 }, (_, i) => (i * 11) % 61);
  pulled.absorb(run(ids, pulled.request([[1, 2]], [])));
  ids = ids.concat([3, 4]);
  const r = run(ids, pulled.request([[1, 2]], []));
  pulled.absorb(r);
  const [w0, w1] = headSource(r, 1, 2).rows;
  const T = r.T;
  // a typed token's new block rows at the bins the heatmap paints whole maps with (1 up to 1,024
  // tokens, then powers of two), edge blocks clipped, and inner ranges of rows and columns
  for (const [rows, columns, bin] of [
    [[T - 1, T], [0, T], 1],
    [[T - 2, T], [0, T], 1],
    [[T - 2, T], [0, T], 2],
    [[w0, T], [0, T], 4],
    [[w0 + 3, T - 5], [17, 400], 3],
    [[T - 7, T], [T - 9, T], 8],
  ]) {
    const asked = model.rowsAsked;
    const tile = await r.tiles(1, 2, { rows, columns, bin });
    assert.equal(model.rowsAsked, asked, `rows ${rows}, bin ${bin}: cut from the rows held`);
    assert.deepEqual([tile.rows, tile.columns, tile.bin, tile.T, tile.layer, tile.head], [rows, columns, bin, T, 1, 2]);
    assert.deepEqual(
      [tile.nRows, tile.nCols],
      [Math.ceil((rows[1] - rows[0]) / bin), Math.ceil((columns[1] - columns[0]) / bin)],
    );
    assert.deepEqual(
      tile.values,
      pooledRows(ids, 1, 2, rows, columns, bin),
      `rows ${rows}, columns ${columns}, bin ${bin}`,
    );
  }
  // rows before the window, a head not held, and ranges the engine would refuse go to the engine
  for (const [head, options] of [
    [[1, 2], { rows: [w0 - 1, T], columns: [0, T], bin: 1 }],
    [[0, 1], { rows: [T - 1, T], columns: [0, T], bin: 1 }],
    [[1, 2], { rows: [T - 1, T], columns: [0, T + 1], bin: 1 }],
    [[1, 2], { rows: [T - 1, T], columns: [0, T], bin: 0 }],
    [[1, 2], { rows: [T - 1, T], columns: [0, T], bin: T + 1 }],
  ]) {
    assert.equal(tileFromPulled(r, ...head, options), null, `${head} ${JSON.stringify(options)}: not cut here`);
    const asked = model.rowsAsked;
    await r.tiles(...head, options);
    assert.ok(model.rowsAsked > asked, `${head} ${JSON.stringify(options)}: asked of the engine`);
  }
  assert.equal(tileFromPulled(r, 1, 2, { rows: [T - 1, T - 1], columns: [0, T] }), null, 'no rows: not cut here');
});

test('a pull still waiting on the engine when the page clears the rows (another model) keeps nothing', async () => {
  const { model, run } = fakeEngine(4096);
  const pulled = new PulledMaps(() => model);
  const ids = Array.from({ length: 700 }, (_, i) => (i * 3) % 41);
  const r = run(ids, null);
  const pulling = pulled.pull(r, [[0, 1]]);
  pulled.clear(); // while attentionTile's answer is on its way
  await pulling;
  assert.deepEqual(pulled.held(), [], 'no entry from the old model');
  assert.equal(r.pulled?.get(1), undefined, 'nothing attached to the result');
  // without a clear, the same pull keeps and attaches the head
  await pulled.pull(r, [[0, 1]]);
  assert.deepEqual(pulled.held(), ['0:1']);
  assert.ok(r.pulled.get(1));
});

test("the demo's long-text pulls: a pull of an older result that ends after a newer result came is not drawn", async () => {
  const { installLongText } = await import('../../../web/demo/index/long-text.js');
  const { model, run } = fakeEngine(4096);
  const state = { layer: 1, head: 2, heads: [], view: 'heatmap', token: null, ablate: [] };
  const page = { state, info: model.info, model, result: null };
  const longText = installLongText(page);
  // the engine answers tiles only when let through (a pull in flight while the next result comes)
  let open;
  const gate = new Promise((resolve) => (open = resolve));
  const tile = model.attentionTile.bind(model);
  model.attentionTile = async (...a) => (await gate, tile(...a));
  const ids = Array.from({ length: 700 }, (_, i) => (i * 7) % 53);
  // an older result without rows: the page pulls its heads
  const older = run(ids, null);
  longText.absorb(older);
  assert.equal(longText.ready(older), false);
  const olderDrawn = longText.pull(older);
  // a newer result brings its rows with the run and is drawn at once
  const newer = run(ids.concat([1]), longText.runOptions('x'.repeat(10000)).pull);
  longText.absorb(newer);
  assert.equal(longText.ready(newer), true);
  open();
  assert.equal(await olderDrawn, false, 'the older result is not drawn over the newer one');
});
