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

// The roles, their formulas and thresholds live in roles.json, which the model cards' Python code
// reads too. The page badges the roles measured live.
const LIVE_ROLES = ROLES.roles.filter((r) => r.where.includes('live'));

/** Threshold per live role: a head earns the badge when its score reaches it. */
export const ROLE_THRESHOLDS = Object.freeze(Object.fromEntries(LIVE_ROLES.map((r) => [r.name, r.threshold])));

/** What each live role means, in words. */
export const ROLE_DESCRIPTIONS = Object.freeze(Object.fromEntries(LIVE_ROLES.map((r) => [r.name, r.description])));

/** Every role of roles.json: { name, short, label, formula, threshold, description, where }. */
export const ROLES_TABLE = Object.freeze(ROLES.roles.map((r) => Object.freeze({ ...r })));

function mean(values) {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

/**
 * Scores of one head. `att` is T*T (row-major), `ids` the T token ids.
 * Returns { previous, first, self, duplicate, induction, broad }; a score with no qualifying rows
 * (e.g. duplicate on a text without repeated tokens) is NaN.
 */
export function headScores(att, ids, T = ids.length) {
  if (att.length !== T * T) throw new Error(`attention has ${att.length} entries, expected ${T}x${T}`);
  const previous = [], first = [], self = [], duplicate = [], induction = [], broad = [];
  const lastSeen = new Map();
  for (let t = 0; t < T; t++) {
    const row = att.subarray ? att.subarray(t * T, t * T + T) : att.slice(t * T, t * T + T);
    if (t >= 1) {
      previous.push(row[t - 1]);
      first.push(row[0]);
      self.push(row[t]);
      let h = 0;
      for (let j = 0; j <= t; j++) if (row[j] > 0) h -= row[j] * Math.log(row[j]);
      broad.push(Math.min(1, h / Math.log(t + 1)));
      let dup = 0, any = false;
      for (let j = 0; j < t; j++) if (ids[j] === ids[t]) { dup += row[j]; any = true; }
      if (any) duplicate.push(dup);
      const j = lastSeen.get(ids[t]);
      if (j !== undefined && j + 1 < t) induction.push(row[j + 1]);
    }
    lastSeen.set(ids[t], t);
  }
  return {
    previous: mean(previous), first: mean(first), self: mean(self),
    duplicate: mean(duplicate), induction: mean(induction), broad: mean(broad),
  };
}

/** Scores for every head of a run result: an array [layer][head] of headScores(). */
export function allHeadScores(result) {
  const ids = result.tokens.map((t) => t.id);
  const out = [];
  for (let l = 0; l < result.nLayer; l++) {
    const row = [];
    for (let h = 0; h < result.nHead; h++) row.push(headScores(result.attention(l, h), ids, result.T));
    out.push(row);
  }
  return out;
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
    seed |= 0; seed = (seed + 0x6D2B79F5) | 0;
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
