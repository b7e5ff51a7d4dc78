// The grouping of query heads over key/value heads (web/component/model/kv-groups.js): groups that
// tile the heads in order, as the engine's rule makes them (cpp/src/kernels/kernels.hpp: query head h
// reads key/value head h / (NH / KV); that the engine follows it is tests/js/package/llama.test.js's
// inspectHead check, where the heads of a group have the same k and v), and the sentences.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  kvHeadOf,
  kvGroups,
  headSharing,
  sharingName,
  sharingSentence,
  cacheBytes,
} from '../../../web/component/model/kv-groups.js';

test('groups tile the heads in order, each read by nHead / nKvHead query heads', () => {
  for (const [NH, KV] of [
    [8, 8],
    [8, 2],
    [8, 1],
    [9, 3],
    [32, 8],
    [16, 8],
  ]) {
    const groups = kvGroups(NH, KV);
    assert.equal(groups.length, KV);
    let next = 0;
    for (const g of groups) {
      assert.equal(g.first, next);
      assert.equal(g.last - g.first + 1, NH / KV);
      for (let h = g.first; h <= g.last; h++) assert.equal(kvHeadOf(NH, KV, h), g.kv);
      next = g.last + 1;
    }
    assert.equal(next, NH);
  }
});

test('the sentences name the groups', () => {
  assert.equal(headSharing(9, 3, 4), 'heads 3-5 share key/value head 1');
  assert.equal(headSharing(8, 8, 4), '');
  assert.equal(headSharing(4, 4 / 1, 0), '');
  assert.equal(headSharing(4, 1, 3), 'heads 0-3 share key/value head 0');
  assert.equal(sharingSentence(8, 8), 'each of the 8 heads has its own keys and values');
  assert.equal(sharingSentence(8, 1), 'all 8 heads share one key/value head (multi-query attention)');
  assert.equal(
    sharingSentence(8, 2),
    'heads 0-3 share key/value head 0, heads 4-7 share key/value head 1 (grouped-query attention)',
  );
  assert.match(
    sharingSentence(32, 8),
    /^heads 0-3 share key\/value head 0, .*heads 12-15 share key\/value head 3, … \(8 key\/value heads, 4 query heads each\)/,
  );
  assert.deepEqual(
    [
      [8, 8],
      [8, 2],
      [8, 1],
      [1, 1],
      [32, 8],
    ].map(([NH, KV]) => sharingName(NH, KV)),
    ['multi-head', 'grouped-query', 'multi-query', 'multi-head', 'grouped-query'],
  );
  assert.equal(cacheBytes(96), '96 bytes');
  assert.equal(cacheBytes(6144), '6.1 KB');
  assert.equal(cacheBytes(36864 * 30), '1.11 MB');
});
