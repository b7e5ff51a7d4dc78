// compare.html's "what more heads buy" table (web/demo/compare/compare-roles.js), from model cards: new-format
// cards give counts, best heads, copy accuracy and loss; old-format cards a dash with a note; the page
// says when 1 head per layer does not hold both a previous-token and an induction role.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { familyRoleTable, familyRoleChart, oneHeadNote, roleCounts } from '../../../web/demo/compare/compare-roles.js';

const TH = { prev_token: 0.5, induction: 0.4, verb_to_subject: 3.0 };
function newCard({ nHead, prev = 0.1, ind = 0.03, v2s = 1.2, counts, copy = 0.0, val = 5.1, bpb = 2.02 }) {
  const heads = [];
  for (let l = 0; l < 2; l++)
    for (let h = 0; h < nHead; h++)
      heads.push({
        layer: l,
        head: h,
        prev_token: l === 0 && h === 0 ? prev : 0.05,
        induction: l === 1 && h === 0 ? ind : 0.01,
        verb_to_subject: l === 1 && h === nHead - 1 ? v2s : 0.9,
      });
  return {
    architecture: { n_layer: 2, n_head: nHead },
    heads,
    loss: { val, heldout_bits_per_byte: bpb },
    heldout: { bits_per_byte: bpb },
    roles: {
      thresholds: TH,
      counts,
      best: {
        prev_token: { layer: 0, head: 0, score: prev },
        induction: { layer: 1, head: 0, score: ind },
        verb_to_subject: { layer: 1, head: nHead - 1, score: v2s },
      },
      copy_accuracy: copy,
    },
  };
}
const cellOf = (table, label) => table.rows.find((r) => r.label.startsWith(label)).cells;

test('new-format cards: counts, best heads, copy accuracy, bits per byte and loss per model', () => {
  const entries = [
    {
      label: '1 head',
      nHead: 1,
      card: newCard({ nHead: 1, prev: 0.62, counts: { prev_token: 1, induction: 0, verb_to_subject: 0 } }),
    },
    {
      label: '8 heads',
      nHead: 8,
      card: newCard({
        nHead: 8,
        prev: 0.71,
        ind: 0.55,
        v2s: 8.88,
        copy: 0.4125,
        val: 5.0,
        bpb: 1.9,
        counts: { prev_token: 2, induction: 1, verb_to_subject: 1 },
      }),
    },
  ];
  const t = familyRoleTable(entries);
  assert.deepEqual(cellOf(t, 'Previous-token heads'), ['1', '2']);
  assert.deepEqual(cellOf(t, 'Induction heads'), ['0', '1']);
  assert.deepEqual(cellOf(t, 'Verb-to-subject heads'), ['0', '1']);
  assert.ok(cellOf(t, 'Induction heads (score ≥ 0.4)'), 'the threshold is in the row label, from the cards');
  assert.deepEqual(cellOf(t, 'Strongest verb-to-subject head'), ['L1H0 · 1.2 × uniform', 'L1H7 · 8.9 × uniform']);
  assert.deepEqual(cellOf(t, 'Strongest induction head'), ['L1H0 · 0.03', 'L1H0 · 0.55']);
  assert.deepEqual(cellOf(t, 'Copy accuracy'), ['0.0 %', '41.3 %']);
  assert.deepEqual(cellOf(t, 'Held-out bits per byte'), ['2.020', '1.900']);
  assert.deepEqual(cellOf(t, 'Validation loss'), ['5.100', '5.000']);
  // 1 head per layer holds a previous-token head but no induction head; 8 heads hold both
  const note = t.notes.find((n) => n.startsWith('With 1 head per layer'));
  assert.ok(note, 'the page says 1 head per layer does not hold both');
  assert.match(note, /no induction head \(score ≥ 0\.4[;)]/);
  assert.doesNotMatch(note, /no previous-token head/);
  assert.match(note, /8 heads holds both/);
});

test('no note when the 1-head model holds both roles; counts fall back to the heads when a card has none', () => {
  const card = newCard({ nHead: 1, prev: 0.6, ind: 0.45, counts: undefined });
  assert.deepEqual(roleCounts(card), { prev_token: 1, induction: 1, verb_to_subject: 0 });
  assert.equal(oneHeadNote([{ label: '1 head', nHead: 1, card }]), null);
  // neither role, and no other model holds both
  const weak = newCard({ nHead: 1, counts: { prev_token: 0, induction: 0, verb_to_subject: 0 } });
  const n = oneHeadNote([
    { label: '1 head', nHead: 1, card: weak },
    {
      label: '2 heads',
      nHead: 2,
      card: newCard({ nHead: 2, counts: { prev_token: 1, induction: 0, verb_to_subject: 0 } }),
    },
  ]);
  assert.match(n, /no previous-token head .* and no induction head/);
  assert.match(n, /No model of this family holds both/);
});

test('old-format cards and missing cards degrade to a dash or "no card", with a note', () => {
  const old = { loss: { val: 5.17 }, heads: [{ layer: 0, head: 0, prev_token: 0.07 }] };
  const t = familyRoleTable([
    { label: '1 head', nHead: 1, card: old },
    { label: 'x', nHead: 2, card: null },
  ]);
  assert.deepEqual(cellOf(t, 'Previous-token heads'), ['–', 'no card']);
  assert.deepEqual(cellOf(t, 'Copy accuracy'), ['–', 'no card']);
  assert.deepEqual(cellOf(t, 'Validation loss'), ['5.170', 'no card']);
  assert.ok(t.notes.some((n) => n.includes('1 head has an older model card without role measurements')));
  assert.ok(t.notes.some((n) => n.startsWith('no card: x')));
  assert.ok(!t.notes.some((n) => n.startsWith('With 1 head per layer')), 'no claim from an old card');
});

test("the shipped family's cards build a table with a cell per model and row", () => {
  const root = new URL('../../../web/models/', import.meta.url);
  const entries = ['heads-1', 'heads-2', 'heads-4', 'heads-8']
    .filter((n) => existsSync(new URL(`${n}/card.json`, root)))
    .map((n) => ({
      label: n,
      nHead: Number(n.slice(6)),
      card: JSON.parse(readFileSync(new URL(`${n}/card.json`, root), 'utf8')),
    }));
  if (!entries.length) return;
  const t = familyRoleTable(entries);
  for (const r of t.rows) assert.equal(r.cells.length, entries.length);
  for (const e of entries) {
    const i = entries.indexOf(e);
    if (e.card.roles) assert.equal(cellOf(t, 'Induction heads')[i], String(e.card.roles.counts.induction));
    else assert.equal(cellOf(t, 'Induction heads')[i], '–');
  }
  console.log(`# ${t.notes.join(' | ') || 'no notes'}`);
});

test('the chart above the table: the heads of each role and the loss, for the models whose cards measured roles', () => {
  const entries = [
    {
      label: '1 head',
      card: newCard({ nHead: 1, counts: { prev_token: 0, induction: 1, verb_to_subject: 0 }, val: 4.6 }),
    },
    { label: 'old', card: { architecture: { n_layer: 2, n_head: 2 }, loss: { val: 4.7 } } },
    {
      label: '8 heads',
      card: newCard({ nHead: 8, counts: { prev_token: 2, induction: 5, verb_to_subject: 1 }, val: 4.5 }),
    },
  ];
  const chart = familyRoleChart(entries);
  assert.deepEqual(
    chart.rows.map((r) => r.label),
    ['1 head', '8 heads'],
  );
  assert.deepEqual(
    chart.columns.map((c) => c.title),
    ['previous token heads', 'induction heads', 'verb to subject heads', 'validation loss'],
  );
  assert.deepEqual(
    chart.columns.map((c) => c.values),
    [
      [0, 2],
      [1, 5],
      [0, 1],
      [4.6, 4.5],
    ],
  );
  assert.equal(familyRoleChart([{ label: 'old', card: { loss: { val: 1 } } }]), null);
});
