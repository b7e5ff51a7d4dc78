// The parts of the attention maps a view pulls from the engine, through the JavaScript API:
// attentionTile() and attentionThumbnails() on the page thread and in the Worker (the real protocol in
// a worker_threads thread) against run()'s full maps from the same wasm: a tile at bin 1 is the
// map's weights bit for bit, a pooled tile and the thumbnails the stated max-pooling of the map,
// computed here (maxima of the same floats: exact). Bad input refused with its message, and the model
// still runs. The engine's side is tested in tests/cpp/model/test_tiles.cpp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { testModelUrl } from './helpers.js';
import { nodeWorker } from './node-worker.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeRandomModel } from '../../e2e/random-model.mjs';
import { allHeadScores } from '../../../dist/analysis.js';
import { PulledMaps, tileFromPulled } from '../../../web/component/runtime/pulled-maps.js';

const fixture = (name) => new URL(`../../fixtures/models/${name}/`, import.meta.url);

// cell (a, b): the largest weight of rows [r0 + a bin, ...) x columns [c0 + b bin, ...), clipped to the ranges
function pooled(map, T, [r0, r1], [c0, c1], bin) {
  const rows = Math.ceil((r1 - r0) / bin),
    cols = Math.ceil((c1 - c0) / bin);
  const out = new Float32Array(rows * cols);
  for (let r = r0; r < r1; r++)
    for (let j = c0; j < c1; j++) {
      const i = Math.floor((r - r0) / bin) * cols + Math.floor((j - c0) / bin);
      out[i] = Math.max(out[i], map[r * T + j]);
    }
  return out;
}

// the thumbnails' bin, from its definition: the smallest power of two that fits T in `size` cells
function thumbnailBin(T, size) {
  let bin = 1;
  while (Math.ceil(T / bin) > size) bin *= 2;
  return bin;
}

const cases = [
  { name: 'odd-hs12 (GPT-2)', url: fixture('odd-hs12'), text: 'The chef, who trained in Paris, cooked' },
  { name: 'llama-gqa (grouped-query)', url: fixture('llama-gqa'), text: 'one two three one two three' },
  { name: 'the default model', url: testModelUrl, text: 'The chef, who trained in Paris, cooked the meal quickly.' },
];

for (const c of cases) {
  test(`${c.name}: tiles and thumbnails equal run()'s maps and their max-pooling, on both threads`, async () => {
    const page = await loadModel(c.url, { threads: 1 });
    const worker = await loadModelInWorker(c.url, { worker: nodeWorker(), threads: 1 });
    try {
      const result = page.run(c.text);
      const { T, nLayer, nHead } = result;
      for (let layer = 0; layer < nLayer; layer++)
        for (let head = 0; head < nHead; head++) {
          const map = result.attention(layer, head);
          const all = page.attentionTile(c.text, layer, head);
          assert.equal(all.T, T);
          assert.deepEqual([all.nRows, all.nCols], [T, T]);
          assert.deepEqual(all.values, map, `L${layer}H${head}: the whole map at bin 1, bit for bit`);
          const rows = [Math.floor(T / 3), T],
            columns = [1, Math.max(2, Math.floor(T / 2))],
            bin = 3;
          const tile = page.attentionTile(c.text, layer, head, { rows, columns, bin });
          assert.deepEqual([tile.rows, tile.columns, tile.bin], [rows, columns, bin]);
          assert.deepEqual(tile.values, pooled(map, T, rows, columns, bin), `L${layer}H${head}: a pooled tile`);
          assert.deepEqual(await worker.attentionTile(c.text, layer, head, { rows, columns, bin }), tile);
        }
      for (const size of [4, 128]) {
        const th = page.attentionThumbnails(c.text, { size });
        assert.equal(th.bin, thumbnailBin(T, size));
        assert.equal(th.n, Math.ceil(T / th.bin));
        assert.equal(th.values.length, nLayer * nHead * th.n * th.n);
        for (let lh = 0; lh < nLayer * nHead; lh++) {
          const want = pooled(result.attention(Math.floor(lh / nHead), lh % nHead), T, [0, T], [0, T], th.bin);
          assert.deepEqual(th.values.slice(lh * th.n * th.n, (lh + 1) * th.n * th.n), want, `head ${lh}, size ${size}`);
        }
        assert.deepEqual(await worker.attentionThumbnails(c.text, { size }), th);
      }
    } finally {
      page.dispose();
      worker.dispose();
    }
  });
}

test("run(text, { attention: 'thumbnails' }) returns every head's thumbnail and no map, while typing, on both threads", async () => {
  // The pooled thumbnails are carried from run to run in the engine (a doubled bin, deleted tokens):
  // each result's must equal the max-pooling of the full maps of the same text from a model kept
  // apart (exact: maxima of the same floats). A random model with a context of 640 tokens, so that
  // the texts cross bins of 1, 4 and 8: typing doubles the bin, deleting shrinks it.
  const dir = mkdtempSync(path.join(tmpdir(), 'headscope-thumbnails-'));
  const tokenizerDir = new URL('../../fixtures/models/odd-hs12/', import.meta.url).pathname;
  writeRandomModel(dir, { n_layer: 2, n_head: 3, n_embd: 24, n_positions: 640, tokenizerDir, attnScale: 0.5 });
  const url = pathToFileURL(dir + '/');
  const page = await loadModel(url, { threads: 1 });
  const worker = await loadModelInWorker(url, { worker: nodeWorker(), threads: 1 });
  const reference = await loadModel(url, { threads: 1 });
  try {
    const words = 'the chef who trained in paris cooked the meal quickly while the guests waited'.split(' ');
    const long = (n) => Array.from({ length: n }, (_, i) => words[i % words.length]).join(' ');
    const texts = [long(20), long(300), long(520), long(500), long(60), 'The chef'];
    const bins = new Set();
    for (const text of texts) {
      const full = reference.run(text);
      const { T, nLayer, nHead } = full;
      for (const result of [
        page.run(text, { attention: 'thumbnails' }),
        await worker.run(text, { attention: 'thumbnails' }),
      ]) {
        assert.equal(result.T, T);
        assert.equal(result.attentionAll, undefined, 'no map is copied out');
        assert.throws(() => result.attention(0, 0), /keeps no attention maps/);
        assert.deepEqual(result.logitsLast, full.logitsLast);
        assert.equal(result.thumbnailBin, thumbnailBin(T, 128), `T ${T}`);
        bins.add(result.thumbnailBin);
        // the role scores the forward pass counted, against analysis.js's definitions on the full maps:
        // the same weights, row values in float32 against float64 (1e-5: far below a badge's threshold)
        const want = allHeadScores(full);
        for (let l = 0; l < nLayer; l++)
          for (let h = 0; h < nHead; h++)
            ['previous', 'first', 'self', 'duplicate', 'induction', 'broad'].forEach((name, i) => {
              const got = result.roleScores[(l * nHead + h) * 6 + i];
              const w = want[l][h][name];
              assert.ok(
                Number.isNaN(w) ? Number.isNaN(got) : Math.abs(got - w) < 1e-5,
                `T ${T}, L${l}H${h} ${name}: ${got} vs ${w}`,
              );
            });
        const n = result.thumbnailCells;
        assert.equal(n, Math.ceil(T / result.thumbnailBin));
        assert.equal(result.thumbnails.length, nLayer * nHead * n * n);
        for (let l = 0; l < nLayer; l++)
          for (let h = 0; h < nHead; h++)
            assert.deepEqual(
              result.thumbnail(l, h),
              pooled(full.attention(l, h), T, [0, T], [0, T], result.thumbnailBin),
              `T ${T}, L${l}H${h}`,
            );
      }
    }
    assert.deepEqual(
      [...bins].sort((a, b) => a - b),
      [1, 4, 8],
      'the texts cross the bins they were made for',
    );
    // typing with `reuse` (as the demo's runner passes the result on screen): only each head's cell rows
    // from the first changed token's on leave the engine (runData() says from where, against the
    // earlier result's ids and bin), and the result equals a run without reuse, bit for bit; with as
    // many cells as before, they are written into the earlier result's buffer, which the new one owns
    const typing = [
      long(300),
      `${long(300)} and`,
      `${long(300)} and th`,
      `${long(300)} and ti`, // as many tokens as the text before: its last one changed
      `${long(300)} and the`,
      long(520),
      long(500),
      long(20),
    ];
    let shownPage = null,
      shownWorker = null;
    const froms = [],
      inPlace = [];
    const normsPartial = [],
      normsMoved = [];
    for (const text of typing) {
      let from = 0;
      const want = reference.run(text, { attention: 'thumbnails' });
      if (shownPage) {
        const held = {
          ids: Int32Array.from(shownPage.tokens, (t) => t.id),
          thumbnailBin: shownPage.thumbnailBin,
          thumbnailCells: shownPage.thumbnailCells,
        };
        const data = page.runData(
          text,
          { attention: 'thumbnails' },
          { ...held, text: shownPage.text, droppedTokens: shownPage.droppedTokens },
        );
        const ids = want.tokens.map((t) => t.id);
        let shared = 0;
        while (shared < Math.min(ids.length, held.ids.length) && ids[shared] === held.ids[shared]) shared++;
        // only the tokens after the ones held are sent (typing at the end: the last one or two), when
        // as many were dropped before them (a text past the context)
        const tokensHeld = want.droppedTokens === shownPage.droppedTokens ? shared : 0;
        assert.equal(data.tokensFrom ?? 0, tokensHeld, text.slice(-20));
        assert.deepEqual(data.tokens, want.tokens.slice(tokensHeld));
        // only the contribution norms' columns from the first changed token on
        const partial = shared > 0;
        assert.equal(data.contributionNormsFrom, partial ? shared : undefined, text.slice(-20));
        const L = want.nLayer * want.nHead;
        assert.equal(
          (partial ? data.contributionNormRows : data.contributionNorms).length,
          L * (want.T - (partial ? shared : 0)),
        );
        if (partial) normsPartial.push(held.ids.length === want.T ? 'same' : 'other');
        from = held.thumbnailBin === want.thumbnailBin ? Math.floor(shared / want.thumbnailBin) : 0;
        froms.push(from);
        const n = want.thumbnailCells;
        if (from > 0) {
          assert.equal(data.thumbnailRowsFrom, from, text.slice(-20));
          assert.equal(data.thumbnails, undefined, 'no row before it is copied out');
          assert.equal(data.thumbnailRows.length, want.nLayer * want.nHead * (n - from) * n);
        } else {
          assert.equal(data.thumbnailRows, undefined);
          assert.equal(data.thumbnails.length, want.nLayer * want.nHead * n * n);
        }
      }
      const before = shownPage
        ? { buffer: shownPage.thumbnails, n: shownPage.thumbnailCells, norms: shownPage.contributionNorms.buffer }
        : null;
      const p = page.run(text, { attention: 'thumbnails', reuse: shownPage });
      const w = await worker.run(text, { attention: 'thumbnails', reuse: shownWorker });
      for (const r of [p, w]) {
        assert.equal(r.thumbnailCells, want.thumbnailCells);
        assert.equal(r.thumbnailRows, undefined);
        assert.deepEqual(r.thumbnails, want.thumbnails, `typing: T ${want.T}`);
        assert.deepEqual(r.tokens, want.tokens, `typing: the tokens, T ${want.T}`);
        assert.deepEqual(r.contributionNorms, want.contributionNorms, `typing: the contribution norms, T ${want.T}`);
        assert.equal(r.contributionNormRows, undefined);
      }
      if (before) {
        const same = from > 0 && before.n === want.thumbnailCells;
        inPlace.push(same);
        assert.equal(p.thumbnails === before.buffer, same, `the earlier result's buffer taken over: T ${want.T}`);
        // a buffer made with room (the first token count changed) grows in place from then on
        if (p.contributionNorms.buffer === before.norms) normsMoved.push(shownPage.T !== want.T);
      }
      shownPage = p;
      shownWorker = w;
    }
    assert.ok(
      froms.filter((f) => f > 0).length >= 2 && froms.includes(0),
      `typing at the end sends its last rows, a new bin everything: ${froms}`,
    );
    assert.ok(inPlace.includes(true) && inPlace.includes(false), `in place and into a new buffer: ${inPlace}`);
    assert.ok(
      normsPartial.includes('same') && normsPartial.includes('other'),
      `keystrokes that keep and that change the token count send only the changed norms: ${normsPartial}`,
    );
    assert.ok(normsMoved.includes(true), `norms moved to a new token count in place: ${normsMoved}`);
    // pull: the rows of the heads asked for, from the first token that differs from the ids given
    const text = long(300);
    const full = reference.run(text);
    const ids = full.tokens.map((t) => t.id);
    for (const [given, from] of [
      [ids.slice(0, 200), 200],
      [[...ids.slice(0, 150), -1], 150],
      [[], 0],
    ]) {
      const heads = [
        [1, 2],
        [0, 0],
      ];
      const asked = { attention: 'thumbnails', pull: { heads, ids: given } };
      for (const r of [
        page.run(text, asked),
        await worker.run(text, { ...asked, pull: { heads, ids: Int32Array.from(given) } }),
      ]) {
        assert.equal(r.pulledFrom, from);
        assert.equal(r.pulledTo, r.T, 'without a window every row to the last');
        assert.deepEqual(r.pulledHeads, heads);
        const T = r.T;
        const rows = (l, h) => full.attention(l, h).slice(from * T, T * T);
        const want = new Float32Array(2 * (T - from) * T);
        want.set(rows(1, 2), 0);
        want.set(rows(0, 0), (T - from) * T);
        assert.deepEqual(r.pulledRows, want, `pulled rows from ${from}`);
      }
    }
    // pull.window: only the rows of the window around a token (null: the last), those from the first
    // token that differs; window [w0, w1) written out here for T = full.T, size 16
    const T = full.T;
    for (const [around, given, window, from] of [
      [null, [], [T - 16, T], T - 16],
      [null, ids.slice(0, T - 3), [T - 16, T], T - 3],
      [10 ** 6, ids.slice(0, 100), [T - 16, T], T - 16],
      [40, ids.slice(0, 45), [32, 48], 45],
      [3, [], [0, 16], 0],
      [40, ids, [32, 48], 48],
    ]) {
      const pull = { heads: [[1, 2]], ids: given, window: { around, size: 16 } };
      for (const r of [
        page.run(text, { attention: 'thumbnails', pull }),
        await worker.run(text, { attention: 'thumbnails', pull: { ...pull, ids: Int32Array.from(given) } }),
      ]) {
        assert.deepEqual([r.pulledFrom, r.pulledTo], [from, window[1]], `around ${around}, ${given.length} ids`);
        assert.deepEqual(r.pulledRows, full.attention(1, 2).slice(from * T, window[1] * T));
      }
    }
    assert.throws(
      () => page.run(text, { attention: 'thumbnails', pull: { heads: [[0, 0]], ids: [], window: { size: 0 } } }),
      /pull.window.size must be a whole number >= 1, got 0/,
    );
    assert.throws(
      () => page.run(text, { attention: 'thumbnails', pull: { heads: [[0]], ids: [] } }),
      /pull.heads entries must be \[layer, head\] pairs/,
    );
    assert.throws(
      () => page.run('The chef', { attention: 'some' }),
      /attention must be 'all' or 'thumbnails', got "some"/,
    );
    assert.throws(() => page.run('The chef').thumbnail(0, 0), /no thumbnails: run with/);
  } finally {
    page.dispose();
    worker.dispose();
    reference.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad ranges, heads and bins are refused with their message on both threads, and the model still runs', async () => {
  const url = fixture('odd-hs12');
  const page = await loadModel(url, { threads: 1 });
  const worker = await loadModelInWorker(url, { worker: nodeWorker(), threads: 1 });
  try {
    const text = 'The chef cooked';
    const T = page.tokenize(text).length;
    const { nLayer } = page.info.config;
    const bad = [
      [[nLayer, 0, {}], /layer .* is outside/],
      [[0, 0, { rows: [0, T + 1] }], new RegExp(`rows \\[0, ${T + 1}\\) must be a non-empty range`)],
      [[0, 0, { columns: [2, 2] }], /columns \[2, 2\) must be a non-empty range/],
      [[0, 0, { bin: 0 }], /bin must be a whole number >= 1/],
      [[0, 0, { rows: [1] }], /rows must be \[begin, end\]/],
    ];
    for (const [args, message] of bad) {
      assert.throws(() => page.attentionTile(text, ...args), message);
      await assert.rejects(worker.attentionTile(text, ...args), message);
    }
    assert.throws(() => page.attentionThumbnails(text, { size: 0 }), /size must be a whole number >= 1/);
    await assert.rejects(worker.attentionThumbnails(42), /text must be a string/);
    assert.equal(page.run(text).T, T);
    assert.equal((await worker.run(text)).T, T);
  } finally {
    page.dispose();
    worker.dispose();
  }
});

test('attentionMaps: false keeps no map in the engine: run(), tiles and the memory it reports, on both threads', async () => {
  const url = fixture('llama-gqa');
  const kept = await loadModel(url, { threads: 1 });
  const page = await loadModel(url, { threads: 1, attentionMaps: false });
  const worker = await loadModelInWorker(url, { worker: nodeWorker(), threads: 1, attentionMaps: false });
  try {
    assert.equal(kept.info.attentionMaps, true);
    assert.equal(page.info.attentionMaps, false);
    assert.equal(worker.info.attentionMaps, false);
    const text = 'one two three one two three four';
    const a = kept.run(text);
    const b = page.run(text);
    // every map recomputed from the key cache by the same kernel: the same floats
    assert.deepEqual(b.attentionAll, a.attentionAll);
    assert.deepEqual(b.logitsLast, a.logitsLast);
    assert.deepEqual((await worker.run(text)).attentionAll, a.attentionAll);
    assert.deepEqual(page.attentionTile(text, 1, 2, { bin: 2 }), kept.attentionTile(text, 1, 2, { bin: 2 }));
    // the maps' memory, by their definition: L x NH x n² floats kept at the context n, against one
    // block of at most 12 rows per head (the attention kernel's query block), when both contexts are n
    const mk = kept.memory(),
      mb = page.memory();
    assert.equal(mb.attentionMaps, false);
    assert.equal(mk.weightBytes, kept.info.weightBytes);
    assert.ok(mb.bytesAtContext <= mb.activationBudgetBytes && mk.bytesAtContext <= mk.activationBudgetBytes);
    assert.ok(mb.capacityTokens >= b.T && mb.activationBytes > 0);
    const { nLayer, nHead, nPositions } = kept.info.config;
    if (page.info.config.nPositions === nPositions)
      assert.ok(mk.bytesAtContext - mb.bytesAtContext >= 4 * nHead * nPositions * (nLayer * nPositions - 12));
    else assert.ok(page.info.config.nPositions > nPositions, 'without the maps a longer context fits');
    // the worker ran the same text on the same model: the same memory (but for what each engine held
    // before the weights: this one also holds `kept`, so its budget is smaller by as much)
    const { inUseAtLoadBytes: wi, activationBudgetBytes: wb, ...w } = await worker.memory();
    const { inUseAtLoadBytes: pi, activationBudgetBytes: pb, ...p } = page.memory();
    assert.deepEqual(w, p);
    assert.equal(wi + wb, pi + pb);
    await assert.rejects(loadModel(url, { attentionMaps: 'no' }), /attentionMaps must be true or false/);
  } finally {
    kept.dispose();
    page.dispose();
    worker.dispose();
  }
});

test("a page's tiles cut from the rows a run pulled (runtime/pulled-maps.js) equal the engine's attentionTile, bit for bit", async () => {
  // The heatmap paints a typed token's new block rows from the rows that came with the run
  // (tileFromPulled) instead of asking the engine again: both must be the same floats, at bin 1 and
  // pooled, edge blocks clipped. A random model with a context of 640 tokens, a text of 400.
  const dir = mkdtempSync(path.join(tmpdir(), 'headscope-pulled-tiles-'));
  const tokenizerDir = new URL('../../fixtures/models/odd-hs12/', import.meta.url).pathname;
  writeRandomModel(dir, { n_layer: 2, n_head: 3, n_embd: 24, n_positions: 640, tokenizerDir, attnScale: 0.5 });
  const page = await loadModel(pathToFileURL(dir + '/'), { threads: 1 });
  try {
    const words = 'the chef who trained in paris cooked the meal quickly while guests waited'.split(' ');
    const text = (n) => Array.from({ length: n }, (_, i) => words[(i * 5) % words.length]).join(' ');
    const pulled = new PulledMaps(() => page);
    for (const t of [text(400), text(401)]) {
      const r = page.run(t, { attention: 'thumbnails', pull: pulled.request([[1, 2]], []) });
      pulled.absorb(r);
      const { T } = r;
      const [w0] = r.pulled.get(1 * r.nHead + 2).rows;
      for (const [rows, columns, bin] of [
        [[T - 1, T], [0, T], 1],
        [[T - 3, T], [0, T], 2],
        [[w0, T], [0, T], 4],
        [[w0 + 5, T - 2], [7, T - 11], 3],
      ]) {
        const held = tileFromPulled(r, 1, 2, { rows, columns, bin });
        assert.ok(held, `rows ${rows}: held`);
        const engine = page.attentionTile(t, 1, 2, { rows, columns, bin });
        assert.deepEqual(held, engine, `T ${T}, rows ${rows}, columns ${columns}, bin ${bin}`);
      }
    }
  } finally {
    page.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
