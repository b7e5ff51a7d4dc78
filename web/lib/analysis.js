// What heads turned out to do: scores computed from a run's attention, and head knock-out.
//
// Nobody assigns a head its job. These scores describe patterns found AFTER training, on the text
// given; a head can score on several, and its behaviour on other text may differ.
//
// Every score is in [0, 1] and is computed from one head's attention A (T x T, row = query t,
// column = key j, causal, rows summing to 1). Rows with no choice (t = 0, which can only attend to
// itself) are left out of every mean.
//
//   previous   mean over t >= 1 of A[t][t-1]                 attention to the token just before
//   first      mean over t >= 1 of A[t][0]                   attention to the first token ("sink")
//   self       mean over t >= 1 of A[t][t]                   attention to the token itself
//   duplicate  mean over t with an earlier j < t, id_j = id_t, of sum_{j<t, id_j = id_t} A[t][j]
//                                                            attention to earlier copies of the same token
//   induction  mean over t whose token appeared before (last at j, j+1 < t) of A[t][j+1]
//                                                            attention to what followed the token last time;
//                                                            best measured on a repeated random sequence (inductionProbe)
//   broad      mean over t >= 1 of H(A[t]) / ln(t+1)         normalized entropy: 1 = uniform over the past,
//                                                            0 = all weight on one token
// A badge is shown when a score reaches its threshold (ROLE_THRESHOLDS, from roles.json); thresholds
// are chosen so a uniform head earns no pattern badge (its previous/first/self scores are about ln(T)/T).
import ROLES from './roles.json' with { type: 'json' };
import { strideOf, headOffset, sharedPrefixLength } from './result.js';

// The roles, their formulas and thresholds live in roles.json, which the model cards' Python code
// reads too. The page badges the roles measured live.
const LIVE_ROLES = ROLES.roles.filter((r) => r.where.includes('live'));

/** Threshold per live role: a head earns the badge when its score reaches it. */
export const ROLE_THRESHOLDS = Object.freeze(Object.fromEntries(LIVE_ROLES.map((r) => [r.name, r.threshold])));

/** What each live role means, in words. */
export const ROLE_DESCRIPTIONS = Object.freeze(Object.fromEntries(LIVE_ROLES.map((r) => [r.name, r.description])));

/** Every role of roles.json: { name, short, label, formula, threshold, description, where }. */
export const ROLES_TABLE = Object.freeze(ROLES.roles.map((r) => Object.freeze({ ...r })));

const SCORE_NAMES = ['previous', 'first', 'self', 'duplicate', 'induction', 'broad'];

// Where each token's copies are: before[t], the last earlier position with the same id (-1 if none:
// where induction looks, after it); first[t], that id's first position; next[j], the id's next
// position after j (T if none). Walking first -> next visits every earlier copy in order.
function copiesOf(ids, T) {
  const before = new Int32Array(T),
    first = new Int32Array(T),
    next = new Int32Array(T).fill(T);
  const lastSeen = new Map(),
    firstSeen = new Map();
  for (let t = 0; t < T; t++) {
    const j = lastSeen.get(ids[t]);
    before[t] = j === undefined ? -1 : j;
    if (j !== undefined) next[j] = t;
    if (!firstSeen.has(ids[t])) firstSeen.set(ids[t], t);
    first[t] = firstSeen.get(ids[t]);
    lastSeen.set(ids[t], t);
  }
  return { before, first, next };
}

// Row t's share of every score, into rows[name][t] (NaN where the row does not count): A[o + j] is
// the head's weight of query t on key j.
function scoreRow(rows, A, o, t, { before, first, next }) {
  if (t === 0) {
    for (const name of SCORE_NAMES) rows[name][0] = NaN;
    return;
  }
  rows.previous[t] = A[o + t - 1];
  rows.first[t] = A[o];
  rows.self[t] = A[o + t];
  let h = 0;
  for (let j = 0; j <= t; j++) if (A[o + j] > 0) h -= A[o + j] * Math.log(A[o + j]);
  rows.broad[t] = Math.min(1, h / Math.log(t + 1));
  // duplicate: the earlier copies summed in increasing order (as a plain loop over j would)
  if (before[t] >= 0) {
    let dup = 0;
    for (let j = first[t]; j < t; j = next[j]) dup += A[o + j];
    rows.duplicate[t] = dup;
  } else {
    rows.duplicate[t] = NaN;
  }
  const j = before[t];
  rows.induction[t] = j >= 0 && j + 1 < t ? A[o + j + 1] : NaN;
}

// Mean of the rows that count (not NaN), in row order; NaN when none does.
function meanOfRows(values, T) {
  let sum = 0,
    n = 0;
  for (let t = 0; t < T; t++)
    if (!Number.isNaN(values[t])) {
      sum += values[t];
      n++;
    }
  return n ? sum / n : NaN;
}

const meansOf = (rows, T) => Object.fromEntries(SCORE_NAMES.map((name) => [name, meanOfRows(rows[name], T)]));
const emptyRows = (T) => Object.fromEntries(SCORE_NAMES.map((name) => [name, new Float64Array(T)]));

/**
 * Scores of one head. `att` is T*T (row-major), `ids` the T token ids.
 * Returns { previous, first, self, duplicate, induction, broad }; a score with no qualifying rows
 * (e.g. duplicate on a text without repeated tokens) is NaN.
 */
export function headScores(att, ids, T = ids.length) {
  if (att.length !== T * T) throw new Error(`attention has ${att.length} entries, expected ${T}x${T}`);
  const copies = copiesOf(ids, T);
  const rows = emptyRows(T);
  for (let t = 0; t < T; t++) scoreRow(rows, att, t * T, t, copies);
  return meansOf(rows, T);
}

/**
 * Every head's scores for run results, row by row, keeping each row's share: every score is a mean
 * over rows, and row t depends only on tokens 0..t, so a later result that begins with the same
 * tokens (typing at the end) computes only the rows from the first changed token. At 1,000 tokens
 * and 144 heads that is a few rows per keystroke instead of a second of the page's thread.
 */
export class HeadScoreRows {
  #ids = new Int32Array(0);
  #ablate = '';
  #heads = []; // [layer * nHead + head]: { score name: Float64Array } of each row's share

  /** An array [layer][head] of headScores() for `result`. */
  scores(result) {
    const { T, nLayer, nHead } = result;
    if (!result.attentionAll && result.roleScores) return engineScores(result);
    const ids = Int32Array.from(result.tokens, (t) => t.id);
    const ablate = JSON.stringify(result.ablate ?? []);
    let from = 0;
    if (ablate === this.#ablate && this.#heads.length === nLayer * nHead) from = sharedPrefixLength(this.#ids, ids);
    if (this.#heads.length !== nLayer * nHead) {
      this.#heads = Array.from({ length: nLayer * nHead }, () => emptyRows(T));
      from = 0;
    } else if (this.#heads[0].previous.length < T) {
      const capacity = Math.max(T, 2 * this.#heads[0].previous.length);
      this.#heads = this.#heads.map((old) => {
        const rows = emptyRows(capacity);
        for (const name of SCORE_NAMES) rows[name].set(old[name]);
        return rows;
      });
    }
    const copies = copiesOf(ids, T);
    const S = strideOf(result);
    const out = [];
    for (let l = 0; l < nLayer; l++) {
      const row = [];
      for (let h = 0; h < nHead; h++) {
        const rows = this.#heads[l * nHead + h];
        const base = headOffset(result, l, h);
        for (let t = from; t < T; t++) scoreRow(rows, result.attentionAll, base + t * S, t, copies);
        row.push(meansOf(rows, T));
      }
      out.push(row);
    }
    this.#ids = ids;
    this.#ablate = ablate;
    return out;
  }
}

// A result without maps ({ attention: 'thumbnails' }): the same scores, counted by the engine's forward
// pass row by row (Model::head_role_scores, tested against this file's definitions)
function engineScores({ nLayer, nHead, roleScores }) {
  const K = SCORE_NAMES.length;
  return Array.from({ length: nLayer }, (_, l) =>
    Array.from({ length: nHead }, (_, h) =>
      Object.fromEntries(SCORE_NAMES.map((name, i) => [name, roleScores[(l * nHead + h) * K + i]])),
    ),
  );
}

/** Scores for every head of a run result: an array [layer][head] of headScores(). */
export function allHeadScores(result) {
  return new HeadScoreRows().scores(result);
}

/** The badges a head earns: role names whose score reaches its threshold, strongest first. */
export function headBadges(scores, thresholds = ROLE_THRESHOLDS) {
  return Object.keys(thresholds)
    .filter((k) => scores[k] >= thresholds[k])
    .sort((a, b) => scores[b] / thresholds[b] - scores[a] / thresholds[a]);
}

// A small seeded generator, so a probe is the same on every load.
function mulberry32(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Builds the induction probe: `length` random whole words from the model's vocabulary, repeated
 * twice (" w1 w2 ... wn w1 w2 ... wn"). In the second copy an induction head attends to the word
 * after the current word's first occurrence. Works with sync (HeadscopeModel) or async (worker) models.
 */
export async function inductionProbeText(model, { length = 16, seed = 1 } = {}) {
  const random = mulberry32(seed);
  const V = model.info.config.vocabSize;
  const words = [];
  const seen = new Set();
  for (let tries = 0; words.length < length && tries < 20000; tries++) {
    const id = Math.floor(random() * V);
    if (seen.has(id)) continue;
    const text = await model.tokenText(id);
    // a whole word with its leading space, so the sequence tokenizes back into these tokens
    if (!/^ [a-z]{3,}$/.test(text)) continue;
    const check = await model.tokenize(text);
    if (check.length !== 1) continue;
    seen.add(id);
    words.push(text);
  }
  if (words.length < 4) throw new Error('could not find enough whole-word tokens for an induction probe');
  const once = words.join('');
  return once + once;
}

/**
 * Knocks out each head in turn on `text` and ranks heads by how much the mean next-token loss
 * rises without them. Returns { baseLoss, heads: [{ layer, head, loss, delta }] } sorted by delta,
 * largest first. Heads near the end with delta close to 0 are the ones this text does not need.
 */
export async function knockoutRanking(model, text, { ablate = [] } = {}) {
  const base = await model.run(text, { allLogits: true, ablate, topK: 1 });
  if (!(base.T > 1)) throw new Error('knock-out needs at least two tokens of text');
  const { nLayer, nHead } = model.info.config;
  const heads = [];
  for (let layer = 0; layer < nLayer; layer++) {
    for (let head = 0; head < nHead; head++) {
      if (ablate.some(([l, h]) => l === layer && h === head)) continue;
      const r = await model.run(text, { allLogits: true, ablate: [...ablate, [layer, head]], topK: 1 });
      heads.push({ layer, head, loss: r.loss, delta: r.loss - base.loss });
    }
  }
  heads.sort((a, b) => b.delta - a.delta);
  return { baseLoss: base.loss, heads };
}

// ---- the cards' probes, through the engine --------------------------------------------------------
// The model cards (scripts/train/head_metrics.py, PyTorch) measure induction and verb-to-subject on
// probe texts, not on the reader's text. These functions measure the same quantities through the
// engine, on the same word list (roles.json induction_probe) and on the card's probe sentences.

/** The induction probe of roles.json: { words, listLength, lists }. */
export const INDUCTION_PROBE = Object.freeze({
  words: Object.freeze([...ROLES.induction_probe.words]),
  listLength: ROLES.induction_probe.list_length,
  lists: ROLES.induction_probe.lists,
});

/**
 * Seeded lists of `length` distinct words of INDUCTION_PROBE.words that are one token (with a
 * leading space) in the model's vocabulary, each as { ids, text } where text is the list followed
 * by itself (" w1 ... wn w1 ... wn", 2n tokens). The same seed gives the same lists. Throws when
 * fewer than `length` of the words are single tokens (a byte-level vocabulary).
 */
export async function inductionWordLists(
  model,
  { lists = INDUCTION_PROBE.lists, length = INDUCTION_PROBE.listLength, seed = 1 } = {},
) {
  const pool = [];
  const seen = new Set();
  for (const w of INDUCTION_PROBE.words) {
    const toks = await model.tokenize(` ${w}`);
    if (toks.length === 1 && !seen.has(toks[0].id)) {
      seen.add(toks[0].id);
      pool.push({ word: ` ${w}`, id: toks[0].id });
    }
  }
  if (pool.length < length)
    throw new Error(
      `only ${pool.length} of the probe's common words are single tokens; the induction probe needs ${length}`,
    );
  const random = mulberry32(seed);
  const out = [];
  for (let i = 0; i < lists; i++) {
    const p = pool.slice();
    for (let k = 0; k < length; k++) {
      // partial Fisher-Yates: `length` distinct words
      const j = k + Math.floor(random() * (p.length - k));
      [p[k], p[j]] = [p[j], p[k]];
    }
    const pick = p.slice(0, length);
    const once = pick.map((x) => x.word).join('');
    out.push({ ids: [...pick.map((x) => x.id), ...pick.map((x) => x.id)], text: once + once });
  }
  return out;
}

/**
 * Prefix-matching scores [layer][head] of a run on a list of n tokens followed by itself (T = 2n):
 * mean over the repeat's tokens q = n..2n-1 of A[q][q-n+1], the token after the first occurrence.
 */
export function prefixMatchingScores(result, n = result.T / 2) {
  if (!(Number.isInteger(n) && n >= 2 && result.T === 2 * n))
    throw new Error(`prefix matching needs a list followed by itself (T = ${result.T})`);
  const T = result.T;
  const out = [];
  for (let l = 0; l < result.nLayer; l++) {
    const row = [];
    for (let h = 0; h < result.nHead; h++) {
      const a = result.attention(l, h);
      let s = 0;
      for (let q = n; q < 2 * n; q++) s += a[q * T + (q - n + 1)];
      row.push(s / n);
    }
    out.push(row);
  }
  return out;
}

function meanGrid(grids) {
  return grids[0].map((row, l) => row.map((_, h) => grids.reduce((s, g) => s + g[l][h], 0) / grids.length));
}

/**
 * The card's induction measure through the engine: prefix-matching scores [layer][head] averaged
 * over seeded common-word lists (inductionWordLists). With `copy: true`, also the copy accuracy: the
 * share of repeat positions 0..n-2 whose most likely next token is the word that followed in the
 * first copy (one extra run per position; each extends the last text, so the engine reuses its cache).
 * Returns { scores, copyAccuracy (NaN without copy), lists }; with `perList: true` also perList (each
 * list's [layer][head] scores) and listSd (each head's standard deviation across the lists).
 */
export async function inductionScores(
  model,
  { lists, length = INDUCTION_PROBE.listLength, seed = 1, copy = false, perList = false } = {},
) {
  const probes = await inductionWordLists(model, { lists, length, seed });
  const grids = [];
  let hits = 0,
    total = 0;
  for (const p of probes) {
    const r = await model.run(p.text, { topK: 1 });
    if (r.T !== 2 * length || r.tokens.some((t, i) => t.id !== p.ids[i]))
      throw new Error(`the probe "${p.text}" did not tokenize into its ${2 * length} words`);
    grids.push(prefixMatchingScores(r, length));
    if (copy) {
      for (let q = length; q < 2 * length - 1; q++) {
        const prefix = await model.run(p.text.slice(0, r.tokens[q].end), { topK: 1 });
        hits += prefix.topNext[0]?.id === p.ids[q + 1] ? 1 : 0;
        total++;
      }
    }
  }
  const scores = meanGrid(grids);
  const out = { scores, copyAccuracy: copy ? hits / total : NaN, lists: probes };
  if (perList) {
    out.perList = grids;
    // sample standard deviation of each head's score across the lists
    out.listSd = scores.map((row, l) =>
      row.map((m, h) =>
        grids.length > 1 ? Math.sqrt(grids.reduce((s, g) => s + (g[l][h] - m) ** 2, 0) / (grids.length - 1)) : NaN,
      ),
    );
  }
  return out;
}

/**
 * The subject and main verb of a sentence built like the article's, "The chef, who trained in
 * Paris, cooked the meal quickly.": { subject: 'chef', verb: 'cooked' }; null for other sentences.
 */
export function verbSubjectParts(sentence) {
  const m = /^The ([A-Za-z]+), who [^,]+, ([A-Za-z]+)\b/.exec(sentence);
  return m ? { subject: m[1], verb: m[2] } : null;
}

/**
 * Where a verb-to-subject probe looks, from a run's tokens (as the card: the subject's tokens are the
 * keys; the query is the last token of the main verb, the first occurrence of the verb's word that
 * starts more than 3 tokens after the subject). null when the sentence is not of that shape.
 */
export function verbSubjectPositions(tokens, text) {
  const parts = verbSubjectParts(text);
  if (!parts) return null;
  const words = [...text.matchAll(/[A-Za-z]+/g)].map((m) => ({
    word: m[0],
    start: m.index,
    end: m.index + m[0].length,
  }));
  const tokensOf = (w) => tokens.map((t, i) => (t.start < w.end && t.end > w.start ? i : -1)).filter((i) => i >= 0);
  let keys = null,
    query = null;
  for (const w of words) {
    if (!keys && w.word === parts.subject) keys = tokensOf(w);
    else if (keys && query === null && w.word === parts.verb) {
      const q = tokensOf(w);
      if (q.length && q[0] > keys[keys.length - 1] + 3) query = q[q.length - 1];
    }
  }
  return keys?.length && query !== null ? { query, keys, ...parts } : null;
}

/**
 * Verb-to-subject score of every head on one run: attention from the verb's last token to the
 * subject's tokens, divided by the uniform share keys / (query + 1) (1.0 = chance).
 * Returns { ratio: [layer][head], weight: [layer][head], query, keys }, or null for other sentences.
 */
export function verbSubjectRatios(result) {
  const pos = verbSubjectPositions(result.tokens, result.text);
  if (!pos) return null;
  const T = result.T;
  const uniform = pos.keys.length / (pos.query + 1);
  const ratio = [],
    weight = [];
  for (let l = 0; l < result.nLayer; l++) {
    const rr = [],
      ww = [];
    for (let h = 0; h < result.nHead; h++) {
      const a = result.attention(l, h);
      let w = 0;
      for (const k of pos.keys) w += a[pos.query * T + k];
      ww.push(w);
      rr.push(w / uniform);
    }
    ratio.push(rr);
    weight.push(ww);
  }
  return { ratio, weight, query: pos.query, keys: pos.keys };
}

/**
 * The card's verb-to-subject measure through the engine: verbSubjectRatios averaged over the probe
 * sentences (a card's roles.probe_sentences). Sentences not of the article's shape are skipped.
 * Returns { scores: [layer][head] mean ratio, weights: mean raw attention, sentences: how many counted }.
 */
export async function verbSubjectScores(model, sentences) {
  const ratios = [],
    weights = [];
  for (const s of sentences || []) {
    const r = verbSubjectRatios(await model.run(s, { topK: 1 }));
    if (r) {
      ratios.push(r.ratio);
      weights.push(r.weight);
    }
  }
  if (!ratios.length) return { scores: null, weights: null, sentences: 0 };
  return { scores: meanGrid(ratios), weights: meanGrid(weights), sentences: ratios.length };
}
