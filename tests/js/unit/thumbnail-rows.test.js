// withPreviousThumbnails (web/lib/reuse.js): a run's thumbnail cell rows from `thumbnailRowsFrom` on,
// put together with the rows before them from the earlier result: into its buffer when the cell count
// is the same or the buffer was made with room, else into a new one with room. Against a layout
// written out here cell by cell; refusals of rows that do not fit. Then the contribution norms' columns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeResult } from '../../../web/lib/result.js';
import { withPreviousThumbnails, withPrevious, reuseInfo, thumbnailRowsKept } from '../../../web/lib/reuse.js';

// heads x n x n cells, each value saying where it is: head * 1000 + row * 10 + column + offset
const cells = (heads, n, offset = 0, rows = [0, n]) => {
  const out = new Float32Array(heads * (rows[1] - rows[0]) * n);
  for (let h = 0, i = 0; h < heads; h++)
    for (let a = rows[0]; a < rows[1]; a++)
      for (let b = 0; b < n; b++, i++) out[i] = b <= a ? h * 1000 + a * 10 + b + offset : 0;
  return out;
};

const shape = { nLayer: 1, nHead: 2 };
const previousOf = (m) => ({
  ...shape,
  ablate: [],
  tokens: [{ id: 7 }],
  thumbnails: cells(2, m),
  thumbnailCells: m,
  thumbnailBin: 4,
});
const updateOf = (n, from) => ({
  ...shape,
  thumbnailRows: cells(2, n, 0.5, [from, n]),
  thumbnailRowsFrom: from,
  thumbnailCells: n,
  thumbnailBin: 4,
});

test('the earlier rows, then the new ones; in the earlier buffer unless the text grew or shrank a cell', () => {
  for (const [m, n, from] of [
    [5, 5, 3], // typing inside the last cell row
    [5, 6, 4], // a new cell row
    [6, 5, 2], // deleting
    [5, 5, 0], // nothing shared
  ]) {
    const previous = previousOf(m);
    assert.notEqual(reuseInfo(previous), null);
    const kept = previous.thumbnails.slice();
    const data = withPrevious(previous, updateOf(n, from));
    assert.equal(data.thumbnailRows, undefined);
    assert.equal(data.thumbnailRowsFrom, undefined);
    assert.equal(data.thumbnailCells, n);
    assert.equal(data.thumbnails.length, 2 * n * n);
    for (let h = 0; h < 2; h++)
      for (let a = 0; a < n; a++)
        for (let b = 0; b < n; b++) {
          const want = b > a ? 0 : h * 1000 + a * 10 + b + (a >= from ? 0.5 : 0);
          assert.equal(
            data.thumbnails[(h * n + a) * n + b],
            want,
            `m ${m} n ${n} from ${from}: head ${h} (${a}, ${b})`,
          );
        }
    // the rows kept from the earlier result, as the grid asks (paint.js paintThumbnails' knownRows):
    // of that result only
    assert.equal(thumbnailRowsKept(data.thumbnails, previous), from, `m ${m} n ${n}: rows kept`);
    assert.equal(thumbnailRowsKept(data.thumbnails, previousOf(m)), 0, 'of another result: none known');
    assert.equal(thumbnailRowsKept(previousOf(m).thumbnails, previous), 0, 'thumbnails not written over it');
    if (m === n) {
      assert.equal(data.thumbnails, previous.thumbnails, 'written into the earlier buffer');
      assert.equal(reuseInfo(previous), null, 'the earlier result is given up: no later run reuses it');
      assert.throws(() => withPrevious(previous, updateOf(n, from)), /already updated/);
    } else {
      assert.notEqual(data.thumbnails, previous.thumbnails);
      assert.deepEqual(previous.thumbnails, kept, 'the earlier result keeps its thumbnails');
    }
  }
});

test('the rows kept are those of the result written over, not of one before it in the same buffer', () => {
  // A, then B over A's buffer, then C over it again (the same cell count: one array throughout)
  const a = previousOf(5);
  const b = { ...a, ...withPrevious(a, updateOf(5, 3)) };
  const c = withPrevious(b, updateOf(5, 4));
  assert.equal(c.thumbnails, a.thumbnails, 'one buffer for all three');
  assert.equal(thumbnailRowsKept(c.thumbnails, b), 4, 'of B: the rows C kept');
  assert.equal(thumbnailRowsKept(c.thumbnails, a), 0, 'of A: none known (B changed rows 3 and 4)');
});

// Typing that adds and removes cell rows: the first new width goes into a new buffer made with room,
// the next ones into that buffer, moved in place (the earlier result superseded each time). Every cell
// is checked against the layout above, so a row moved over another one not yet moved, or a cell right
// of an old row's diagonal left holding an earlier width's value, fails.
test('cell rows added and removed: into a buffer with room, then moved in place', () => {
  let previous = previousOf(5);
  const first = previous.thumbnails;
  const buffers = [];
  for (const [n, from] of [
    [6, 4], // a new cell row: a new buffer, with room
    [7, 5], // another: in place
    [6, 3], // deleting: in place
    [8, 6], // two more: in place (row 6 of the earlier width held values: their cells past 6 must be 0)
    [8, 8], // nothing changed
  ]) {
    const data = withPrevious(previous, updateOf(n, from));
    assert.equal(data.thumbnails.length, 2 * n * n);
    for (let h = 0; h < 2; h++)
      for (let a = 0; a < n; a++)
        for (let b = 0; b < n; b++) {
          const want = b > a ? 0 : h * 1000 + a * 10 + b + (a >= from ? 0.5 : 0);
          assert.equal(data.thumbnails[(h * n + a) * n + b], want, `n ${n} from ${from}: head ${h} (${a}, ${b})`);
        }
    buffers.push(data.thumbnails.buffer);
    if (buffers.length > 1) {
      assert.equal(data.thumbnails.buffer, buffers[0], `n ${n}: in the buffer with room`);
      assert.throws(() => withPrevious(previous, updateOf(n, from)), /already updated/);
    }
    // the next update's earlier rows: what this one holds, in the layout's values (+0.5 rows rewritten)
    previous = {
      ...shape,
      ablate: [],
      tokens: [{ id: 7 }],
      thumbnailCells: n,
      thumbnailBin: 4,
      thumbnails: data.thumbnails,
    };
    data.thumbnails.set(cells(2, n));
  }
  assert.notEqual(buffers[0], first.buffer, 'the first earlier buffer, made by the engine, is not grown into');
});

test('rows that do not fit the earlier result are refused', () => {
  assert.throws(() => withPreviousThumbnails(null, updateOf(5, 2)), /do not fit the earlier result/);
  assert.throws(() => withPreviousThumbnails({ ...previousOf(5), thumbnailBin: 8 }, updateOf(5, 2)), /do not fit/);
  assert.throws(() => withPreviousThumbnails(previousOf(2), updateOf(5, 3)), /do not fit/); // rows it never had
  assert.throws(() => withPreviousThumbnails(previousOf(5), { ...updateOf(5, 2), thumbnailRowsFrom: 1 }), /do not fit/);
});

test('reuseInfo of a result without maps gives its ids, text, bin and cells; of a patched run nothing', () => {
  const result = { ...previousOf(3), ablate: [], text: 'ab', tokens: [{ id: 7 }, { id: 9 }] };
  assert.deepEqual(reuseInfo(result), {
    ids: Int32Array.from([7, 9]),
    text: 'ab',
    droppedTokens: 0,
    thumbnailBin: 4,
    thumbnailCells: 3,
  });
  assert.equal(reuseInfo({ ...result, patch: { from: [], head: [0, 0] } }), null);
  assert.equal(reuseInfo(result, [[0, 1]]), null, 'other heads switched off');
  assert.equal(reuseInfo({ ...result, thumbnails: new Float32Array(3) }), null, 'a buffer of another size');
});

// The contribution norms' columns from `contributionNormsFrom` on (typing that keeps the token count),
// written into the earlier result's [nLayer, nHead, T] buffer, beside thumbnail rows or alone.
test('withPrevious writes the contribution norms columns into the earlier result, which it supersedes', () => {
  const T = 5;
  // head h's norm at token t: h * 100 + t, and + 0.5 for the update's columns
  const norms = (from, offset) =>
    Float32Array.from(
      { length: 2 * (T - from) },
      (_, i) => Math.floor(i / (T - from)) * 100 + from + (i % (T - from)) + offset,
    );
  for (const thumbnails of [false, true]) {
    const previous = { ...previousOf(3), T, contributionNorms: norms(0, 0) };
    const buffer = previous.contributionNorms;
    const update = {
      ...shape,
      T,
      contributionNormRows: norms(3, 0.5),
      contributionNormsFrom: 3,
      ...(thumbnails ? updateOf(3, 1) : {}),
    };
    const data = withPrevious(previous, update);
    assert.equal(data.contributionNorms, buffer, 'into the earlier buffer');
    assert.deepEqual(Array.from(data.contributionNorms), [0, 1, 2, 3.5, 4.5, 100, 101, 102, 103.5, 104.5]);
    assert.equal(data.contributionNormRows, undefined);
    assert.equal(data.contributionNormsFrom, undefined);
    if (thumbnails) assert.equal(data.thumbnails.length, 2 * 9);
    assert.throws(() => withPrevious(previous, update), /already updated by a later run/);
  }
  const other = { ...previousOf(3), T: 4, contributionNorms: new Float32Array(7) };
  assert.throws(
    () => withPrevious(other, { ...shape, T, contributionNormRows: norms(3, 0.5), contributionNormsFrom: 3 }),
    /contribution norms do not fit the earlier result/,
  );
  const shorter = { ...previousOf(3), T: 2, contributionNorms: new Float32Array(4) };
  assert.throws(
    () => withPrevious(shorter, { ...shape, T, contributionNormRows: norms(3, 0.5), contributionNormsFrom: 3 }),
    /contribution norms do not fit/,
    'columns the earlier result never had',
  );
});

// Typing that adds and removes tokens: the earlier columns [0, from) of every head move to the new
// token count, first into a new buffer made with room (the earlier result keeps its own), then within
// it. Checked value by value against the layout, head h's norm at token t being h * 100 + t.
test('withPrevious moves the contribution norms to a new token count, in place once there is room', () => {
  const wide = { nLayer: 2, nHead: 2 }; // four heads: a move over the next head's columns shows
  const normsOf = (T, from, offset) =>
    Float32Array.from(
      { length: 4 * (T - from) },
      (_, i) => Math.floor(i / (T - from)) * 100 + from + (i % (T - from)) + offset,
    );
  let previous = makeResult({ ...wide, ablate: [], tokens: [], T: 5, contributionNorms: normsOf(5, 0, 0) });
  const first = previous.contributionNorms.slice();
  const buffers = [];
  for (const [T, from] of [
    [6, 4], // a typed word: the last token changed, one added
    [8, 6],
    [7, 7], // the last token deleted: every head's columns move down over the next head's
    [6, 5], // another, and the last left changed
    [6, 6], // nothing changed
    [40, 6], // past the room: into a new buffer again
  ]) {
    const before = previous.contributionNorms,
      kept = Array.from(before);
    const data = withPrevious(previous, {
      ...wide,
      T,
      contributionNormRows: normsOf(T, from, 0.5),
      contributionNormsFrom: from,
    });
    const want = Array.from({ length: 4 * T }, (_, i) => {
      const h = Math.floor(i / T),
        t = i % T;
      return h * 100 + t + (t >= from ? 0.5 : 0);
    });
    assert.deepEqual(Array.from(data.contributionNorms), want, `T ${previous.T} to ${T}, from ${from}`);
    const moved = data.contributionNorms.buffer === before.buffer;
    buffers.push(moved);
    if (moved)
      assert.throws(
        () =>
          withPrevious(previous, {
            ...wide,
            T,
            contributionNormRows: normsOf(T, from, 0.5),
            contributionNormsFrom: from,
          }),
        /already updated/,
      );
    if (moved) assert.throws(() => previous.headContribution(1, 0), /updated by a later run/, 'its accessors throw');
    else {
      assert.deepEqual(Array.from(before), kept, 'the earlier result keeps its norms');
      assert.deepEqual(Array.from(previous.headContribution(1, 0)), kept.slice(2 * previous.T, 3 * previous.T));
    }
    previous = makeResult({ ...wide, ablate: [], tokens: [], T, contributionNorms: data.contributionNorms });
    data.contributionNorms.set(normsOf(T, 0, 0)); // the next update's earlier columns, in the layout's values
  }
  assert.deepEqual(buffers, [false, true, true, true, true, false], 'new, in place four times, new past the room');
  assert.deepEqual(Array.from(first), Array.from(normsOf(5, 0, 0)));
});
