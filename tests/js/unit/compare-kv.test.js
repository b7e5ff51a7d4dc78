// compare.html's "Sharing keys and values" (web/demo/compare/compare-kv.js): the table's cells come from the
// cards and the engine's numbers given, in key/value-head order; missing cards read "no card"; the
// trade-off sentence is computed from the same numbers; the shipped family's cards (whatever their
// numbers) give a cache of 2 x layers x key/value heads x head size x 4 bytes per token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import {
  kvFamilyNames,
  kvFamilyTable,
  kvFamilyChart,
  kvTradeoffSentence,
  kvOrder,
  typedSuffix,
  TYPED_BURST,
  extendsByOne,
  fmtBytes,
  fraction,
} from '../../../web/demo/compare/compare-kv.js';

const TH = { prev_token: 0.5, induction: 0.4, verb_to_subject: 3.0 };
/** A card of an nLayer x 8-query-head model over nKvHead key/value heads of head size 16. */
function card({
  nKvHead,
  nLayer = 2,
  params = 900000,
  val = 5.8,
  bpb = 2.25,
  counts = { prev_token: 0, induction: 0, verb_to_subject: 0 },
  prev = 0.3,
  ind = 0.04,
}) {
  return {
    architecture: {
      n_layer: nLayer,
      n_head: 8,
      n_kv_head: nKvHead,
      head_size: 16,
      n_positions: 128,
      kv_cache_bytes_per_token: 2 * nLayer * nKvHead * 16 * 4,
    },
    parameters: params,
    loss: { val, heldout_bits_per_byte: bpb },
    roles: {
      thresholds: TH,
      counts,
      best: { prev_token: { layer: 1, head: nKvHead % 8, score: prev }, induction: { layer: 0, head: 3, score: ind } },
    },
  };
}
/** The engine's info.config of the same shape. */
const config = (nKvHead, nLayer = 2) => ({
  nLayer,
  nHead: 8,
  nKvHead,
  headSize: 16,
  nPositions: 128,
  kvCacheBytesPerToken: 2 * nLayer * nKvHead * 16 * 4,
});
const ready = (label, nKvHead, c, more = {}) => ({
  label,
  card: c,
  config: config(nKvHead),
  parameterCount: c?.parameters ?? 123456,
  status: 'ready',
  ...more,
});
const cells = (t, label) => {
  const row = t.rows.find((r) => r.label.startsWith(label));
  assert.ok(row, `a row "${label}"`);
  return row.cells;
};

test('formatting: bytes with thousands separators, fractions of the baseline, one token more', () => {
  assert.equal(fmtBytes(256), '256 bytes');
  assert.equal(fmtBytes(2048), '2,048 bytes');
  assert.equal(fmtBytes(1234567), '1,234,567 bytes');
  assert.equal(fraction(256, 2048), '1/8');
  assert.equal(fraction(512, 2048), '1/4');
  assert.equal(fraction(768, 2048), '38%');
  assert.equal(fraction(2048, 2048), 'all');
  const ids = (...xs) => xs.map((id) => ({ id }));
  assert.equal(extendsByOne(ids(1, 2, 3), ids(1, 2, 3, 4)), true);
  assert.equal(extendsByOne(ids(1, 2, 3), ids(1, 2, 5, 4)), false, 'the last token merged with the new one');
  assert.equal(extendsByOne(ids(1, 2, 3), ids(1, 2, 3, 4, 5)), false, 'two tokens more');
});

test('the models of family "kv" in the site index, most key/value heads first', () => {
  const index = [
    { name: 'headscope-base', family: null, n_kv_head: 8 },
    { name: 'kv-1', family: 'kv', n_kv_head: 1 },
    { name: 'heads-8', family: 'heads', n_kv_head: 8 },
    { name: 'kv-8', family: 'kv', n_kv_head: 8 },
    { name: 'kv-2', family: 'kv', n_kv_head: 2 },
    { name: 'kv-x', family: 'kv' },
  ];
  assert.deepEqual(kvFamilyNames(index), ['kv-8', 'kv-2', 'kv-1', 'kv-x']);
  assert.deepEqual(kvFamilyNames([{ name: 'heads-1', family: 'heads' }]), []);
  assert.deepEqual(kvFamilyNames(undefined), []);
});

test('columns in key/value-head order, every cell from the card or the engine given', () => {
  const c8 = card({
    nKvHead: 8,
    params: 920192,
    val: 5.8029,
    bpb: 2.2817,
    prev: 0.266,
    counts: { prev_token: 0, induction: 0 },
  });
  const c2 = card({
    nKvHead: 2,
    params: 871040,
    val: 5.7451,
    bpb: 2.259,
    prev: 0.61,
    ind: 0.45,
    counts: { prev_token: 1, induction: 2 },
  });
  const c1 = card({
    nKvHead: 1,
    params: 862848,
    val: 5.7802,
    bpb: 2.2728,
    prev: 0.3805,
    counts: { prev_token: 0, induction: 0 },
  });
  // given out of order: the table orders by key/value heads
  const t = kvFamilyTable([ready('kv-1', 1, c1), ready('kv-8', 8, c8), ready('kv-2', 2, c2)]);
  assert.deepEqual(t.columns, ['kv-8', 'kv-2', 'kv-1']);
  for (const r of t.rows) assert.equal(r.cells.length, 3, r.label);
  assert.deepEqual(cells(t, 'Query heads per layer'), ['8', '8', '8']);
  assert.deepEqual(cells(t, 'Key/value heads per layer'), ['8', '2', '1']);
  assert.deepEqual(cells(t, 'Sharing'), [
    'multi-head',
    'grouped-query, 4 query heads per key/value head',
    'multi-query',
  ]);
  assert.deepEqual(cells(t, 'Key/value cache per token'), ['2,048 bytes', '512 bytes', '256 bytes']);
  assert.deepEqual(cells(t, 'Key/value cache for the whole context'), [
    '262.1 KB (128 tokens)',
    '65.5 KB (128 tokens)',
    '32.8 KB (128 tokens)',
  ]);
  assert.deepEqual(cells(t, 'Parameters'), ['920.2 k', '871.0 k', '862.8 k']);
  assert.deepEqual(cells(t, 'Validation loss'), ['5.803', '5.745', '5.780']);
  assert.deepEqual(cells(t, 'Held-out bits per byte'), ['2.282', '2.259', '2.273']);
  assert.deepEqual(cells(t, 'Previous-token heads (score ≥ 0.5)'), ['0', '1', '0']);
  assert.deepEqual(cells(t, 'Strongest previous-token head'), ['L1H0 · 0.27', 'L1H2 · 0.61', 'L1H1 · 0.38']);
  assert.deepEqual(cells(t, 'Induction heads (score ≥ 0.4)'), ['0', '2', '0']);
  assert.deepEqual(cells(t, 'Strongest induction head'), ['L0H3 · 0.04', 'L0H3 · 0.45', 'L0H3 · 0.04']);
  assert.deepEqual(cells(t, 'A typed token'), ['measuring…', 'measuring…', 'measuring…']);
  // the head measurement and the native timing: a dash where a card has neither
  assert.deepEqual(cells(t, 'Heads that can be switched off'), ['–', '–', '–']);
  assert.deepEqual(cells(t, 'Natively, a typed token'), ['–', '–', '–']);
  const measured = kvFamilyTable([
    ready('kv-2', 2, {
      ...c2,
      pruning: { heads: 16, heads_off_before_5pct: 11 },
      speed: { engine_typed_token_ms_T128_1thread: 0.0412 },
    }),
    ready('kv-8', 8, c8),
  ]);
  assert.deepEqual(cells(measured, 'Heads that can be switched off'), ['–', '11 of 16']);
  assert.deepEqual(cells(measured, 'Natively, a typed token'), ['–', '0.041 ms']);
  assert.deepEqual(t.notes, [], 'no card missing, no disagreement, roles held by one model');
  // another card, another cell: the numbers are read, not fixed
  const other = kvFamilyTable([
    ready('kv-8', 8, { ...c8, loss: { val: 4.5, heldout_bits_per_byte: 1.75 }, parameters: 1e6 }),
  ]);
  assert.deepEqual(cells(other, 'Validation loss'), ['4.500']);
  assert.deepEqual(cells(other, 'Held-out bits per byte'), ['1.750']);
  assert.deepEqual(cells(other, 'Parameters'), ['1.000 M']);
  // bits per byte from an older card's heldout section
  const older = kvFamilyTable([ready('kv-8', 8, { ...c8, loss: { val: 5.8 }, heldout: { bits_per_byte: 2.5 } })]);
  assert.deepEqual(cells(older, 'Held-out bits per byte'), ['2.500']);
});

test('missing cards: "no card" for the card\'s rows, the engine\'s numbers for the rest, and a note', () => {
  const t = kvFamilyTable([ready('llama-mqa', 1, null), ready('kv-8', 8, card({ nKvHead: 8 }))]);
  assert.deepEqual(t.columns, ['kv-8', 'llama-mqa']);
  assert.deepEqual(cells(t, 'Validation loss'), ['5.800', 'no card']);
  assert.deepEqual(cells(t, 'Induction heads'), ['0', 'no card']);
  assert.deepEqual(cells(t, 'Strongest induction head'), ['L0H3 · 0.04', 'no card']);
  assert.deepEqual(cells(t, 'Key/value cache per token'), ['2,048 bytes', '256 bytes']);
  assert.deepEqual(cells(t, 'Parameters'), ['900.0 k', '123.5 k'], "the engine's count without a card");
  assert.ok(
    t.notes.includes(
      "no card: llama-mqa comes without a model card; the shape, the cache and the parameters are the engine's.",
    ),
  );
  // a card without roles: dashes, not zeros
  const bare = kvFamilyTable([ready('kv-2', 2, { ...card({ nKvHead: 2 }), roles: undefined })]);
  assert.deepEqual(cells(bare, 'Previous-token heads'), ['–']);
  assert.deepEqual(cells(bare, 'Strongest previous-token head'), ['–']);
});

test('while loading: the card\'s numbers where it has them, "…" elsewhere; a failed model a dash', () => {
  const loading = { label: 'kv-2', card: card({ nKvHead: 2 }), config: null, status: 'loading' };
  const unread = { label: 'kv-1', card: undefined, config: null, status: 'loading' };
  const failed = { label: 'kv-8', card: null, config: null, status: 'error' };
  const t = kvFamilyTable([failed, loading, unread]);
  assert.deepEqual(t.columns, ['kv-2', 'kv-8', 'kv-1'], 'unknown key/value heads go last, in the order given');
  assert.deepEqual(cells(t, 'Key/value cache per token'), ['512 bytes', '–', '…']);
  assert.deepEqual(cells(t, 'Validation loss'), ['5.800', 'no card', '…']);
  assert.deepEqual(cells(t, 'A typed token'), ['…', '–', '…']);
});

test("the engine's numbers win over the card's, and a disagreement is noted", () => {
  const c = card({ nKvHead: 2 });
  const t = kvFamilyTable([{ ...ready('kv-2', 2, c), config: { ...config(2), kvCacheBytesPerToken: 1024 } }]);
  assert.deepEqual(cells(t, 'Key/value cache per token'), ['1,024 bytes']);
  assert.equal(
    t.notes[0],
    "kv-2: the card says 512 bytes of key/value cache per token, the engine 1,024 bytes; the table shows the engine's.",
  );
});

test('the typed token: milliseconds, and a note when the run could not reuse the cache', () => {
  const c = card({ nKvHead: 8 });
  const t = kvFamilyTable([
    ready('kv-8', 8, c, { typedMs: 0.4567, typedComputed: 1 }),
    ready('kv-1', 1, card({ nKvHead: 1 }), { typedMs: 3.2, typedComputed: 14 }),
  ]);
  assert.deepEqual(cells(t, 'A typed token'), ['0.46 ms', '3.20 ms (14 tokens computed)']);
  assert.ok(t.notes.some((n) => n.startsWith("kv-1: the typed token's run computed 14 tokens, not 1")));
});

test('roles that no model holds are said so', () => {
  const t = kvFamilyTable([ready('kv-8', 8, card({ nKvHead: 8 })), ready('kv-1', 1, card({ nKvHead: 1 }))]);
  assert.ok(
    t.notes.includes(
      "No model here has a previous-token head at the threshold (score ≥ 0.5): compare their strongest heads' scores instead.",
    ),
  );
  assert.ok(
    t.notes.includes(
      "No model here has an induction head at the threshold (score ≥ 0.4): compare their strongest heads' scores instead.",
    ),
  );
});

test('the sentence: each model against the one with the most key/value heads, computed from the numbers', () => {
  const e8 = ready('kv-8', 8, card({ nKvHead: 8, params: 920192, val: 5.8029 }), { typedMs: 0.5 });
  const e2 = ready('kv-2', 2, card({ nKvHead: 2, params: 871040, val: 5.8051 }), { typedMs: 0.45 });
  const e1 = ready('kv-1', 1, card({ nKvHead: 1, params: 862848, val: 5.8802 }), { typedMs: 0.3 });
  const s = kvTradeoffSentence([e1, e2, e8]);
  assert.equal(
    s,
    "kv-2 keeps 1/4 of kv-8's key/value cache per token (512 bytes against 2,048 bytes) with 5.3% fewer parameters (871.0 k against 920.2 k), and it predicts about as well on the validation text (loss 5.805 against 5.803)." +
      " kv-1 keeps 1/8 of kv-8's key/value cache per token (256 bytes against 2,048 bytes) with 6.2% fewer parameters (862.8 k against 920.2 k), and it predicts 0.077 nats per token worse on the validation text (loss 5.880 against 5.803)." +
      ' In this browser a typed token takes 0.30 ms in kv-1, 0.60× the time it takes in kv-8 (0.50 ms).',
  );
  // a better loss is called better; similar times are about as long
  const better = kvTradeoffSentence([
    { ...e8, typedMs: 0.5 },
    { ...e1, card: card({ nKvHead: 1, params: 862848, val: 5.78 }), typedMs: 0.52 },
  ]);
  assert.match(
    better,
    /kv-1 keeps 1\/8 .* and it predicts 0\.023 nats per token better on the validation text \(loss 5\.780 against 5\.803\)\./,
  );
  assert.match(better, /a typed token takes 0\.52 ms in kv-1, about as long as in kv-8 \(0\.50 ms\)\.$/);
  // without cards: the cache and the engine's parameter count, no loss
  const bare = kvTradeoffSentence([ready('a', 4, null), ready('b', 1, null)]);
  assert.equal(
    bare,
    "b keeps 1/4 of a's key/value cache per token (256 bytes against 1,024 bytes) with as many parameters.",
  );
  // other shapes are not set against the baseline (the Llama-family fixtures: 1 layer of 3 heads, 2 of 4)
  const odd = {
    ...ready('llama-mha', 3, null),
    config: { nLayer: 1, nHead: 3, nKvHead: 3, headSize: 4, nPositions: 32, kvCacheBytesPerToken: 96 },
    typedMs: 0.5,
  };
  const gqa = {
    ...ready('llama-gqa', 2, null),
    config: { nLayer: 2, nHead: 4, nKvHead: 2, headSize: 6, nPositions: 32, kvCacheBytesPerToken: 192 },
    typedMs: 0.6,
  };
  assert.equal(
    kvTradeoffSentence([odd, gqa]),
    'llama-gqa differs from llama-mha in more than its key/value heads (layers, query heads or head size), so it is not set against it.',
  );
  assert.equal(kvTradeoffSentence([]), 'Waiting for the models and their cards…');
  assert.equal(kvTradeoffSentence([e8]), 'Waiting for the models and their cards…');
  assert.deepEqual(
    kvOrder([e1, e8, e2]).map((e) => e.label),
    ['kv-8', 'kv-2', 'kv-1'],
  );
});

test("the shipped family's cards: a column per model, the cache = 2 x layers x key/value heads x head size x 4 bytes", () => {
  const root = new URL('../../../web/models/', import.meta.url);
  const index = existsSync(new URL('index.json', root))
    ? JSON.parse(readFileSync(new URL('index.json', root), 'utf8')).models
    : [];
  const names = kvFamilyNames(index).filter((n) => existsSync(new URL(`${n}/card.json`, root)));
  // the repository ships the family: its index must list it (an empty list would check nothing)
  assert.ok(
    names.length >= 3 || !existsSync(new URL('kv-8/card.json', root)),
    `web/models holds kv-8 but the index lists ${names}`,
  );
  if (!names.length) return;
  const entries = names.map((name) => ({
    label: name,
    card: JSON.parse(readFileSync(new URL(`${name}/card.json`, root), 'utf8')),
    config: null,
    status: 'ready',
  }));
  const t = kvFamilyTable(entries);
  assert.deepEqual(t.columns, names, "the index order is the table's: most key/value heads first");
  const kvs = entries.map((e) => e.card.architecture.n_kv_head);
  assert.deepEqual(
    kvs,
    [...kvs].sort((a, b) => b - a),
  );
  entries.forEach((e, i) => {
    const a = e.card.architecture;
    assert.equal(a.kv_cache_bytes_per_token, 2 * a.n_layer * a.n_kv_head * a.head_size * 4, e.label);
    assert.equal(cells(t, 'Key/value cache per token')[i], fmtBytes(a.kv_cache_bytes_per_token));
    assert.equal(cells(t, 'Validation loss')[i], e.card.loss.val.toFixed(3));
    assert.equal(cells(t, 'Induction heads')[i], String(e.card.roles.counts.induction));
  });
  console.log(`# ${kvTradeoffSentence(entries)}`);
});

test('typedSuffix: the first suffix every model reads as one more token at each of TYPED_BURST repeats', async () => {
  // a model that splits on spaces and on '.': ' the' repeated adds one word each time; one that
  // splits into characters: only the one-character suffixes add one token
  const words = { tokenize: async (t) => t.split(/(?= )|(?<=\.)|(?=\.)/).map((w) => ({ id: w })) };
  const chars = { tokenize: async (t) => [...t].map((c) => ({ id: c })) };
  assert.equal(await typedSuffix('Hello', [words]), ' the');
  assert.equal(await typedSuffix('Hello', [words, chars]), '.');
  // a model whose context is full (the same number of tokens whatever is typed): the first suffix
  const full = { tokenize: async () => Array.from({ length: 4 }, (_, i) => ({ id: i })) };
  assert.equal(await typedSuffix('Hello', [chars, full]), ' the');
  assert.ok(Number.isInteger(TYPED_BURST) && TYPED_BURST > 1);
});

test('the chart above the table: most key/value heads first, cache per token and loss as bars, unknown as NaN', () => {
  const entries = [
    ready('kv-1', 1, card({ nKvHead: 1, val: 5.9 })),
    ready('kv-8', 8, card({ nKvHead: 8, val: 5.8 })),
    { label: 'kv-2', card: null, config: null, status: 'loading' },
  ];
  const chart = kvFamilyChart(entries);
  assert.deepEqual(
    chart.rows.map((r) => r.label),
    ['kv-8 (8 key/value)', 'kv-1 (1 key/value)', 'kv-2'],
  );
  assert.deepEqual(chart.columns[0].values, [2048, 256, NaN]);
  assert.deepEqual(chart.columns[1].values, [5.8, 5.9, NaN]);
  assert.equal(chart.columns[0].format(2048), '2,048 bytes');
  assert.equal(kvFamilyChart([]), null);
});
