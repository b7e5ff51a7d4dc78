// compare.html's "what more heads buy" table, built from the family's model cards (pure functions:
// no DOM, unit-tested in tests/js/unit/compare-roles.test.js). A new-format card has a "roles" section
// (scripts/train/head_metrics.py: role counts at roles.json's thresholds, best scores, copy
// accuracy); an old-format card lacks it, and its cells are a dash with a note.

const DASH = '–';

function roleKinds(thresholds = {}) {
  return [
    { key: 'prev_token', name: 'Previous-token heads', th: thresholds.prev_token, digits: 2, unit: '' },
    { key: 'induction', name: 'Induction heads', th: thresholds.induction, digits: 2, unit: '' },
    {
      key: 'verb_to_subject',
      name: 'Verb-to-subject heads',
      th: thresholds.verb_to_subject,
      digits: 1,
      unit: '× uniform',
    },
  ];
}

/** The thresholds of the first new-format card (they are roles.json's, the same on every card). */
function familyThresholds(entries) {
  return entries.find((e) => e.card?.roles?.thresholds)?.card.roles.thresholds || {};
}

/** "L1H4 · 0.27" (a card's roles.best entry), or a dash when it has none. */
export function fmtBest(b, digits, unit) {
  if (!b || !Number.isFinite(b.score)) return DASH;
  return `L${b.layer}H${b.head} · ${b.score.toFixed(digits)}${unit ? ` ${unit}` : ''}`;
}

/** How many heads hold each role, from a new-format card: its counts, else counted from its heads. */
export function roleCounts(card) {
  const r = card?.roles;
  if (!r) return null;
  const out = {};
  for (const { key } of roleKinds(r.thresholds)) {
    const th = r.thresholds?.[key];
    out[key] = Number.isFinite(r.counts?.[key])
      ? r.counts[key]
      : Array.isArray(card.heads) && Number.isFinite(th)
        ? card.heads.filter((h) => h[key] >= th).length
        : NaN;
  }
  return out;
}

/**
 * The table's rows: [{ label, cells: [string per entry] }], and notes (strings) under it.
 * `entries`: [{ label, card }] in column order (card null when the model has none).
 */
export function familyRoleTable(entries) {
  const th = familyThresholds(entries);
  const kinds = roleKinds(th);
  const cell = (e, f) => {
    if (!e.card) return 'no card';
    if (!e.card.roles) return DASH;
    return f(e.card);
  };
  const rows = [];
  for (const k of kinds) {
    const label = Number.isFinite(k.th) ? `${k.name} (score ≥ ${k.th}${k.unit ? `${k.unit}` : ''})` : k.name;
    rows.push({
      label,
      cells: entries.map((e) =>
        cell(e, (c) => {
          const n = roleCounts(c)[k.key];
          return Number.isFinite(n) ? String(n) : DASH;
        }),
      ),
    });
  }
  for (const k of kinds) {
    rows.push({
      label: `Strongest ${k.name.toLowerCase().replace(/ heads$/, '')} head`,
      cells: entries.map((e) => cell(e, (c) => fmtBest(c.roles.best?.[k.key], k.digits, k.unit))),
    });
  }
  rows.push({
    label: 'Copy accuracy on repeated word lists',
    cells: entries.map((e) =>
      cell(e, (c) => (Number.isFinite(c.roles.copy_accuracy) ? `${(100 * c.roles.copy_accuracy).toFixed(1)} %` : DASH)),
    ),
  });
  rows.push({
    label: 'Held-out bits per byte',
    cells: entries.map((e) =>
      cell(e, (c) => {
        const v = c.heldout?.bits_per_byte ?? c.loss?.heldout_bits_per_byte;
        return Number.isFinite(v) ? v.toFixed(3) : DASH;
      }),
    ),
  });
  rows.push({
    label: 'Validation loss (nats/token)',
    cells: entries.map((e) =>
      Number.isFinite(e.card?.loss?.val) ? e.card.loss.val.toFixed(3) : e.card ? DASH : 'no card',
    ),
  });
  const notes = [];
  const old = entries.filter((e) => e.card && !e.card.roles).map((e) => e.label);
  if (old.length)
    notes.push(
      `${DASH}: ${old.join(', ')} ${old.length > 1 ? 'have' : 'has'} an older model card without role measurements (no "roles" section); only the loss can be compared.`,
    );
  const none = entries.filter((e) => !e.card).map((e) => e.label);
  if (none.length)
    notes.push(`no card: ${none.join(', ')} ${none.length > 1 ? 'come' : 'comes'} without a model card.`);
  const one = oneHeadNote(entries);
  if (one) notes.push(one);
  return { rows, notes };
}

/** Whether a new-format card's model holds a head of each role: { prev_token, induction } booleans. */
function holds(card) {
  const c = roleCounts(card);
  return { prev_token: c.prev_token > 0, induction: c.induction > 0 };
}

/**
 * The sentence on the 1-head-per-layer model, when its card shows it does not hold both a
 * previous-token role and an induction role (an induction circuit needs both); else null.
 * `entries`: [{ label, card, nHead }].
 */
export function oneHeadNote(entries) {
  const one = entries.find((e) => e.nHead === 1 && e.card?.roles);
  if (!one) return null;
  const h = holds(one.card);
  if (h.prev_token && h.induction) return null;
  const th = one.card.roles.thresholds || {};
  const c = roleCounts(one.card);
  const nLayer = one.card.architecture?.n_layer;
  const both = entries
    .filter((e) => e !== one && e.card?.roles && holds(e.card).prev_token && holds(e.card).induction)
    .map((e) => e.label);
  const best = one.card.roles.best || {};
  const bestOf = (k) =>
    Number.isFinite(best[k]?.score)
      ? `; the strongest, L${best[k].layer}H${best[k].head}, scores ${best[k].score.toFixed(2)}`
      : '';
  const missing = [
    !h.prev_token && `no previous-token head (score ≥ ${th.prev_token}${bestOf('prev_token')})`,
    !h.induction && `no induction head (score ≥ ${th.induction}${bestOf('induction')})`,
  ]
    .filter(Boolean)
    .join(' and ');
  // copying a repeated list is what the two roles do together; a high copy accuracy says the
  // circuit works with the weaker pattern
  const copy = Number.isFinite(one.card.roles.copy_accuracy)
    ? ` It still copies ${(100 * one.card.roles.copy_accuracy).toFixed(0)}% of repeated word lists${h.induction && !h.prev_token ? ', so its induction head makes do with the weaker previous-token pattern' : ''}.`
    : '';
  return (
    `With 1 head per layer${Number.isInteger(nLayer) ? ` (${nLayer} heads in all)` : ''}, ${one.label} does not hold both a previous-token role and an induction role, the two halves of copying from context: its card shows ${missing}, with ${c.prev_token} previous-token and ${c.induction} induction ${c.induction === 1 ? 'head' : 'heads'}.${copy} ` +
    (both.length
      ? `With more heads per layer, ${both.join(', ')} ${both.length > 1 ? 'hold' : 'holds'} both.`
      : 'No model of this family holds both on its card.')
  );
}

/**
 * The chart above the table (web/component/charts/bars.js's data): one row per model with a card
 * that has role measurements, and the heads of each role and the validation loss as bars from zero.
 * `entries`: [{ label, card }]. Null when no model has them.
 */
export function familyRoleChart(entries) {
  const measured = entries.filter((e) => e.card?.roles);
  if (!measured.length) return null;
  const th = familyThresholds(entries);
  const counts = measured.map((e) => roleCounts(e.card));
  const columns = roleKinds(th).map((k) => ({
    // spaces, not hyphens: a title wraps at them in a narrow column
    title: `${k.name
      .replace(/ heads$/, '')
      .toLowerCase()
      .replaceAll('-', ' ')} heads`,
    values: counts.map((c) => c[k.key]),
    format: (v) => String(v),
  }));
  columns.push({
    title: 'validation loss',
    values: measured.map((e) => e.card.loss?.val ?? NaN),
    format: (v) => v.toFixed(3),
  });
  return { rows: measured.map((e) => ({ label: e.label })), columns };
}
