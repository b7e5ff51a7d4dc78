// compare.html's "Sharing keys and values": the key/value-head family (Llama-architecture models
// whose layers have the same query heads over fewer and fewer key/value heads) as a table and a
// sentence, from each model's card and what the page measured. Pure: no DOM; unit-tested in
// tests/js/unit/compare-kv.test.js.
//
// An entry (one model): { label, card, config, parameterCount, status, typedMs, typedComputed }
//   card           card.json; null: the model has none; undefined: not read yet
//   config         the engine's model.info.config (nLayer, nHead, nKvHead, headSize, nPositions,
//                  kvCacheBytesPerToken); null until the model has loaded
//   parameterCount model.info.parameterCount
//   status         'loading' | 'ready' | 'error'
//   typedMs        median wall time of run() on the text plus one token (the typed token)
//   typedComputed  how many tokens that run computed (T - reusedTokens: 1 when the cache was reused)
import { sharingName, cacheBytes } from '../../component/model/kv-groups.js';
import { fmtBest, roleCounts } from './compare-roles.js';
import { fmtParams } from './tradeoff.js';

const DASH = '–';

/**
 * The family's models in a site's models/index.json ([{ name, family, n_kv_head }]): those of
 * family "kv", most key/value heads first (ties by name).
 */
export function kvFamilyNames(indexModels) {
  return (indexModels || [])
    .filter((m) => m && m.family === 'kv' && typeof m.name === 'string')
    .map((m) => ({ name: m.name, kv: Number.isFinite(m.n_kv_head) ? m.n_kv_head : -1 }))
    .sort((a, b) => b.kv - a.kv || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((m) => m.name);
}

/** True when `after` (tokens, [{ id }]) is `before` and one token more: a run of it computes one token. */
export function extendsByOne(before, after) {
  return after.length === before.length + 1 && before.every((t, i) => t.id === after[i].id);
}

// compare.js times typing in bursts of this many tokens, one run per token
export const TYPED_BURST = 4;

const TYPED_SUFFIXES = [' the', '.', ' a', ',', ' '];
/** The first of TYPED_SUFFIXES that every key/value-head model (`models`, loaded) reads as one
 *  token more each time it is typed after the text, TYPED_BURST times in a row. */
export async function typedSuffix(text, models) {
  const base = await Promise.all(models.map((m) => m.tokenize(text)));
  for (const s of TYPED_SUFFIXES) {
    let before = base;
    let ok = true;
    for (let k = 1; k <= TYPED_BURST && ok; k++) {
      const after = await Promise.all(models.map((m) => m.tokenize(text + s.repeat(k))));
      ok = after.every((a, i) => extendsByOne(before[i], a));
      before = after;
    }
    if (ok) return s;
  }
  return TYPED_SUFFIXES[0]; // the text fills the context: the table notes how many tokens were computed
}

/** "2,048 bytes". */
export function fmtBytes(n) {
  return `${String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')} bytes`;
}

/** "1/8" when `part` divides `whole`, else a percentage ("37%"). */
export function fraction(part, whole) {
  if (part === whole) return 'all';
  return whole % part === 0 ? `1/${whole / part}` : `${Math.round((100 * part) / whole)}%`;
}

const num = (...xs) => xs.find((x) => Number.isFinite(x));

/**
 * One model's numbers, each from the engine when it has loaded, else from its card (NaN when
 * neither has it): shape, key/value cache, parameters, loss, bits per byte, role counts and best heads.
 */
export function kvFacts(entry) {
  const c = entry.config || {};
  const a = entry.card?.architecture || {};
  const nHead = num(c.nHead, a.n_head, NaN);
  const nLayer = num(c.nLayer, a.n_layer, NaN);
  const headSize = num(c.headSize, a.head_size, NaN);
  const roles = entry.card?.roles;
  return {
    nLayer,
    nHead,
    nKvHead: num(c.nKvHead, a.n_kv_head, NaN),
    headSize,
    nPositions: num(c.nPositions, a.n_positions, NaN),
    cacheBytes: num(c.kvCacheBytesPerToken, a.kv_cache_bytes_per_token, NaN),
    cardCacheBytes: num(a.kv_cache_bytes_per_token, NaN),
    engineCacheBytes: num(c.kvCacheBytesPerToken, NaN),
    params: num(entry.card?.parameters, entry.parameterCount, NaN),
    valLoss: num(entry.card?.loss?.val, NaN),
    bitsPerByte: num(entry.card?.loss?.heldout_bits_per_byte, entry.card?.heldout?.bits_per_byte, NaN),
    counts: roles ? roleCounts(entry.card) : null,
    best: roles?.best || {},
    thresholds: roles?.thresholds || {},
    // the card's head measurement (scripts/train/heads_card.py) and its native timing (measure_speed.py)
    offBefore5: num(entry.card?.pruning?.heads_off_before_5pct, NaN),
    prunedHeads: num(entry.card?.pruning?.heads, NaN),
    nativeTypedMs: num(entry.card?.speed?.engine_typed_token_ms_T128_1thread, NaN),
  };
}

/** The entries in column order: most key/value heads first (the multi-head model is the baseline); unknown last. */
export function kvOrder(entries) {
  const kv = (e) => kvFacts(e).nKvHead;
  return entries
    .map((e, i) => ({ e, i, k: kv(e) }))
    .sort((x, y) => (Number.isFinite(y.k) ? y.k : -1) - (Number.isFinite(x.k) ? x.k : -1) || x.i - y.i)
    .map((x) => x.e);
}

/**
 * The table: { columns: [label per model], rows: [{ label, cells: [string per column] }], notes: [string] },
 * columns ordered by key/value heads, most first. A cell the engine gives reads '…' while its model
 * loads; a cell from the card reads 'no card' when the model has none and a dash when the card lacks it.
 */
export function kvFamilyTable(entries) {
  const ordered = kvOrder(entries);
  const facts = ordered.map(kvFacts);
  const th = facts.find((f) => f.counts)?.thresholds || {};
  const rows = [];
  // from the engine (or the card while the model loads)
  const live = (label, f) =>
    rows.push({
      label,
      cells: ordered.map((e, i) => {
        const v = f(facts[i], e);
        return v ?? (e.status === 'loading' || e.card === undefined ? '…' : DASH);
      }),
    });
  const known = (x) => Number.isFinite(x);
  live('Query heads per layer', (f) => (known(f.nHead) ? String(f.nHead) : null));
  live('Key/value heads per layer', (f) => (known(f.nKvHead) ? String(f.nKvHead) : null));
  live('Sharing', (f) => {
    if (!known(f.nHead) || !known(f.nKvHead)) return null;
    const kind = sharingName(f.nHead, f.nKvHead);
    return kind === 'grouped-query' ? `grouped-query, ${f.nHead / f.nKvHead} query heads per key/value head` : kind;
  });
  live('Key/value cache per token', (f) => (known(f.cacheBytes) ? fmtBytes(f.cacheBytes) : null));
  live('Key/value cache for the whole context', (f) =>
    known(f.cacheBytes) && known(f.nPositions)
      ? `${cacheBytes(f.cacheBytes * f.nPositions)} (${f.nPositions} tokens)`
      : null,
  );
  live('Parameters', (f) => (known(f.params) ? fmtParams(f.params) : null));
  // from the card
  const card = (label, f) =>
    rows.push({
      label,
      cells: ordered.map((e, i) => {
        if (e.card === undefined) return '…';
        if (e.card === null) return 'no card';
        return f(facts[i]) ?? DASH;
      }),
    });
  card('Validation loss (nats/token)', (f) => (known(f.valLoss) ? f.valLoss.toFixed(3) : null));
  card('Held-out bits per byte', (f) => (known(f.bitsPerByte) ? f.bitsPerByte.toFixed(3) : null));
  const roles = [
    ['prev_token', 'Previous-token'],
    ['induction', 'Induction'],
  ];
  for (const [key, name] of roles) {
    card(known(th[key]) ? `${name} heads (score ≥ ${th[key]})` : `${name} heads`, (f) =>
      f.counts && known(f.counts[key]) ? String(f.counts[key]) : null,
    );
    card(`Strongest ${name.toLowerCase()} head`, (f) => (f.counts ? fmtBest(f.best[key], 2, '') : null));
  }
  card('Heads that can be switched off before the held-out loss rises 5%', (f) =>
    known(f.offBefore5) && known(f.prunedHeads) ? `${f.offBefore5} of ${f.prunedHeads}` : null,
  );
  card('Natively, a typed token (after 128 tokens, 1 thread)', (f) =>
    known(f.nativeTypedMs) ? `${f.nativeTypedMs.toFixed(3)} ms` : null,
  );
  // measured in this browser
  rows.push({
    label: 'A typed token (one run per token), median',
    cells: ordered.map((e) => {
      if (known(e.typedMs))
        return `${e.typedMs.toFixed(2)} ms${e.typedComputed > 1 ? ` (${e.typedComputed} tokens computed)` : ''}`;
      if (e.status === 'error') return DASH;
      return e.status === 'ready' ? 'measuring…' : '…';
    }),
  });

  const notes = [];
  const none = ordered.filter((e) => e.card === null).map((e) => e.label);
  if (none.length)
    notes.push(
      `no card: ${none.join(', ')} ${none.length > 1 ? 'come' : 'comes'} without a model card; the shape, the cache and the parameters are the engine's.`,
    );
  ordered.forEach((e, i) => {
    const f = facts[i];
    if (known(f.cardCacheBytes) && known(f.engineCacheBytes) && f.cardCacheBytes !== f.engineCacheBytes) {
      notes.push(
        `${e.label}: the card says ${fmtBytes(f.cardCacheBytes)} of key/value cache per token, the engine ${fmtBytes(f.engineCacheBytes)}; the table shows the engine's.`,
      );
    }
    if (known(e.typedMs) && e.typedComputed > 1) {
      notes.push(
        `${e.label}: the typed token's run computed ${e.typedComputed} tokens, not 1: the text with one more token no longer starts with the tokens the cache holds (past the context the start is cut).`,
      );
    }
  });
  const withRoles = facts.filter((f) => f.counts);
  for (const [key, name] of roles) {
    if (withRoles.length && withRoles.every((f) => f.counts[key] === 0) && known(th[key])) {
      notes.push(
        `No model here has ${name === 'Induction' ? 'an induction' : 'a previous-token'} head at the threshold (score ≥ ${th[key]}): compare their strongest heads' scores instead.`,
      );
    }
  }
  return { columns: ordered.map((e) => e.label), rows, notes };
}

/** Whether two models have the same layers, query heads and head size (they may differ in key/value heads). */
const sameShape = (a, b) => a.nLayer === b.nLayer && a.nHead === b.nHead && a.headSize === b.headSize;

/**
 * What sharing keys and values costs and saves, from the numbers on the page: each model with fewer
 * key/value heads against the one with the most (its cache, parameters and validation loss), then the
 * typed token's time in the one with the fewest against the one with the most. Only models of the
 * baseline's shape (layers, query heads, head size) are set against it; the others are named.
 */
export function kvTradeoffSentence(entries) {
  const ordered = kvOrder(entries).map((e) => ({ e, f: kvFacts(e) }));
  const sized = ordered.filter(({ f }) => Number.isFinite(f.nKvHead) && Number.isFinite(f.cacheBytes));
  const parts = [];
  const base = sized[0];
  const others = sized.slice(1).filter((o) => !sameShape(o.f, base.f));
  if (sized.length >= 2) {
    for (const o of sized.slice(1)) {
      if (!(o.f.nKvHead < base.f.nKvHead) || !sameShape(o.f, base.f)) continue;
      let s = `${o.e.label} keeps ${fraction(o.f.cacheBytes, base.f.cacheBytes)} of ${base.e.label}'s key/value cache per token (${fmtBytes(o.f.cacheBytes)} against ${fmtBytes(base.f.cacheBytes)})`;
      if (Number.isFinite(o.f.params) && Number.isFinite(base.f.params)) {
        const fewer = (base.f.params - o.f.params) / base.f.params;
        s +=
          fewer > 0.0005
            ? ` with ${(100 * fewer).toFixed(1)}% fewer parameters (${fmtParams(o.f.params)} against ${fmtParams(base.f.params)})`
            : ' with as many parameters';
      }
      if (Number.isFinite(o.f.valLoss) && Number.isFinite(base.f.valLoss)) {
        const d = o.f.valLoss - base.f.valLoss;
        const how =
          Math.abs(d) < 0.01
            ? 'about as well'
            : `${Math.abs(d).toFixed(3)} nats per token ${d > 0 ? 'worse' : 'better'}`;
        s += `, and it predicts ${how} on the validation text (loss ${o.f.valLoss.toFixed(3)} against ${base.f.valLoss.toFixed(3)})`;
      }
      parts.push(`${s}.`);
    }
  }
  if (others.length) {
    parts.push(
      `${others.map((o) => o.e.label).join(', ')} ${others.length > 1 ? 'differ' : 'differs'} from ${base.e.label} in more than ${others.length > 1 ? 'their' : 'its'} key/value heads (layers, query heads or head size), so ${others.length > 1 ? 'they are' : 'it is'} not set against it.`,
    );
  }
  const timed = ordered.filter(
    ({ e, f }) => Number.isFinite(e.typedMs) && Number.isFinite(f.nKvHead) && base && sameShape(f, base.f),
  );
  if (timed.length >= 2) {
    const most = timed[0];
    const fewest = timed[timed.length - 1];
    if (fewest.f.nKvHead < most.f.nKvHead) {
      const ratio = fewest.e.typedMs / most.e.typedMs;
      const cmp = Math.abs(ratio - 1) < 0.15 ? 'about as long as in' : `${ratio.toFixed(2)}× the time it takes in`;
      parts.push(
        `In this browser a typed token takes ${fewest.e.typedMs.toFixed(2)} ms in ${fewest.e.label}, ${cmp} ${most.e.label} (${most.e.typedMs.toFixed(2)} ms).`,
      );
    }
  }
  return parts.join(' ') || 'Waiting for the models and their cards…';
}

/**
 * The chart above the table (web/component/charts/bars.js's data): one row per model, most key/value
 * heads first, its key/value cache per token and its validation loss as bars from zero (NaN: not
 * known yet). Null without a model.
 */
export function kvFamilyChart(entries) {
  const ordered = kvOrder(entries);
  if (!ordered.length) return null;
  const facts = ordered.map(kvFacts);
  return {
    rows: ordered.map((e, i) => ({
      label: Number.isFinite(facts[i].nKvHead) ? `${e.label} (${facts[i].nKvHead} key/value)` : e.label,
    })),
    columns: [
      { title: 'cache per token', values: facts.map((f) => f.cacheBytes ?? NaN), format: fmtBytes },
      { title: 'validation loss', values: facts.map((f) => f.valLoss ?? NaN), format: (v) => v.toFixed(3) },
    ],
  };
}
