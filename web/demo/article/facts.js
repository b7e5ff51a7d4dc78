// The article's numbers, computed from the models' cards (models/NAME/card.json; the site's
// models/index.json names the models and their families), never typed into the page: a model given
// with ?model= changes them. Pure, so tests/js/unit/explainer.test.js runs them in Node.

/**
 * Published shapes of two models the article measures against (layers × heads per layer): GPT-2
 * small (Radford et al. 2019, the 124M model: 12 layers of 12 heads) and GPT-3 175B (Brown et al.
 * 2020, table 2.1: 96 layers of 96 heads).
 */
export const REFERENCE_MODELS = Object.freeze([
  Object.freeze({ name: 'GPT-2 small', nLayer: 12, nHead: 12 }),
  Object.freeze({ name: 'GPT-3', nLayer: 96, nHead: 96 }),
]);

// What the widgets fetch to run a model (its card lists every file's size; reference.json is the
// tests' and is never fetched by a page).
const MODEL_FILES = ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt', 'tokenizer.json'];

/**
 * A model's summary from its card (card.json, format headscope-card-1): { name, family, n_layer,
 * n_head, n_kv_head, n_embd, val_loss (nats per token on the validation split), folder_bytes (what a
 * page fetches to run it), kv_cache_bytes_per_token (keys and values of every layer, float32 as the
 * engine keeps them) }; null without an architecture.
 */
export function entryFromCard(name, card) {
  const a = card?.architecture;
  if (!a || !Number.isInteger(a.n_layer) || !Number.isInteger(a.n_head)) return null;
  const nKv = a.n_kv_head ?? a.n_head;
  const headSize = a.head_size ?? a.n_embd / a.n_head;
  const bytes = card.bytes ?? {};
  return {
    name,
    family: card.family ?? null,
    n_layer: a.n_layer,
    n_head: a.n_head,
    n_kv_head: nKv,
    n_embd: a.n_embd,
    val_loss: card.loss?.val,
    folder_bytes: MODEL_FILES.reduce((sum, f) => sum + (Number.isFinite(bytes[f]) ? bytes[f] : 0), 0),
    kv_cache_bytes_per_token: 2 * a.n_layer * nKv * headSize * 4,
  };
}

/** The entry named `name` in `entries` (null when absent). */
export function modelEntry(entries, name) {
  return (entries ?? []).find((m) => m?.name === name) ?? null;
}

/** A model's shape { name, nLayer, nHead, heads } from an entry or a Hugging Face config.json. */
export function shapeOf(name, entryOrConfig) {
  const c = entryOrConfig ?? {};
  const nLayer = c.n_layer ?? c.num_hidden_layers;
  const nHead = c.n_head ?? c.num_attention_heads;
  if (!Number.isInteger(nLayer) || !Number.isInteger(nHead)) return null;
  return { name, nLayer, nHead, heads: nLayer * nHead };
}

/**
 * The head-count family's two ends on held-out text: { fewer, more, diff (fewer's loss − more's),
 * lower (the entry with the lower loss), family (every member, by heads per layer), best (the lowest
 * loss) }. The family is the entries with `family: 'heads'`; null without two of them.
 */
export function headCountComparison(entries) {
  const family = (entries ?? [])
    .filter((m) => m.family === 'heads' && Number.isFinite(m.val_loss))
    .sort((a, b) => a.n_head - b.n_head);
  if (family.length < 2) return null;
  const fewer = family[0];
  const more = family[family.length - 1];
  return {
    fewer,
    more,
    diff: fewer.val_loss - more.val_loss,
    lower: fewer.val_loss <= more.val_loss ? fewer : more,
    family,
    best: family.reduce((b, m) => (m.val_loss < b.val_loss ? m : b)),
  };
}

/**
 * The key/value-head family: [{ name, nHead, nKvHead, cacheBytesPerToken, loss }], most key/value
 * heads first (the entries with `family: 'kv'`).
 */
export function kvTradeoff(entries) {
  return (entries ?? [])
    .filter((m) => m.family === 'kv' && Number.isFinite(m.val_loss) && Number.isFinite(m.kv_cache_bytes_per_token))
    .map((m) => ({
      name: m.name,
      nHead: m.n_head,
      nKvHead: m.n_kv_head,
      cacheBytesPerToken: m.kv_cache_bytes_per_token,
      loss: m.val_loss,
    }))
    .sort((a, b) => b.nKvHead - a.nKvHead);
}

/** The bytes the page's widgets fetch for their models: each distinct model's folder once. */
export function modelBytes(entries, names) {
  let bytes = 0;
  const missing = [];
  for (const name of new Set(names)) {
    const m = modelEntry(entries, name);
    if (m && Number.isFinite(m.folder_bytes)) bytes += m.folder_bytes;
    else missing.push(name);
  }
  return { bytes, missing };
}

/** "9.3 MB", "512 kB", "256 bytes" (decimal units, as download sizes are usually stated). */
export function formatBytes(n) {
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${Math.round(n / 1e3)} kB`;
  return `${n} bytes`;
}

/** A whole number with thousands separators: 9216 -> "9,216". */
export function formatCount(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * A model card's head measurement (card.pruning: the loss as heads are switched off, greedily and in
 * random orders, measured by the CLI's `headscope heads`) as the report pruning-curve.js draws (the
 * shape of measureHeads()'s); null when the card has none.
 */
export function cardPruningReport(card) {
  const p = card?.pruning;
  if (!p || !Array.isArray(p.order) || !Array.isArray(p.pruned_loss)) return null;
  const band = Array.isArray(p.random_loss_band) ? p.random_loss_band : [];
  return {
    loss: p.loss,
    order: p.order.map(([l, h]) => [l, h]),
    prunedLoss: Float64Array.from(p.pruned_loss),
    randomOrders: p.random_orders ?? 0,
    randomLossMean: Float64Array.from(p.random_loss_mean ?? []),
    randomLossLow: Float64Array.from(band.map((b) => b[0])),
    randomLossHigh: Float64Array.from(band.map((b) => b[1])),
    tokens: p.tokens,
  };
}

/**
 * The first question's verdict: which model predicts unseen text better (the lower loss). A guess of
 * 'same' counts as right when the two losses are within `close` of each other (relative).
 * guess: 'fewer' | 'more' | 'same'. Returns { right, lower: 'fewer' | 'more', relative }.
 */
export function judgeHeadsGuess(cmp, guess, { close = 0.01 } = {}) {
  const lower = cmp.fewer.val_loss <= cmp.more.val_loss ? 'fewer' : 'more';
  const relative = Math.abs(cmp.diff) / Math.max(cmp.fewer.val_loss, cmp.more.val_loss);
  const right = guess === lower || (guess === 'same' && relative < close);
  return { right, lower, relative };
}
