// What the attention views colour by: the attention weights, or the weights times
// the size of what each token's value moves through the head (Kobayashi et al. 2020, "Attention is
// Not Only a Weight"): alpha_ij * ||v_j W_O^h||, rescaled so each row sums to 1 for display. A head
// that puts most of its weight on a token with a tiny value vector (a first-token "sink") then shows
// where its write really comes from. Head-role badges and scores stay on the weights.
//
// state.by: 'weight' (default) or 'value'. The value sizes are the result's own: result.valueNorms
// ([nLayer, nHead, T], a run with { valueNorms: true }), so they are those of the run on screen,
// switched-off heads included. A result without them (the mode was just switched, its run is in
// flight) is shown by its weights. Pure: the scene builders and painters read weights through here.
import { headSource } from '../../lib/result.js';

export const WEIGHINGS = ['weight', 'value'];

/** The sentence that says what "weight × value size" shows (the views' legends and the page). */
export const VALUE_WEIGHTING_SENTENCE =
  "Weight × value size: each weight times the size of what that token's value " +
  'vector writes through the head (‖v W_O‖), rescaled so that each row sums to 1; a token that gets much ' +
  'weight but carries a small value moves little.';

/** The same, and with heads switched off (`ablate`, [[layer, head], ...]) whose run the sizes are of. */
export function valueWeightingSentence(ablate = []) {
  if (!ablate.length) return VALUE_WEIGHTING_SENTENCE;
  const n = ablate.length;
  return `${VALUE_WEIGHTING_SENTENCE} The value sizes are this run's, with the ${n === 1 ? 'switched-off head' : `${n} switched-off heads`} off.`;
}

/** True when `result` holds every head's value sizes. */
export const hasValueNorms = (result) =>
  !!result?.valueNorms && result.valueNorms.length === result.nLayer * result.nHead * result.T;

/** True when the views show `result` by weight × value size (state asks, and the result has the sizes). */
export const byValue = (result, state) => state?.by === 'value' && hasValueNorms(result);

/** One head's value sizes in `result` (T values, a view of result.valueNorms), or null without them. */
export function valueNormsOf(result, layer, head) {
  if (!hasValueNorms(result)) return null;
  const o = (layer * result.nHead + head) * result.T;
  return result.valueNorms.subarray(o, o + result.T);
}

// result -> Float64Array(nLayer * nHead * T): each row's 1 / sum_k alpha_qk n_k (0 for a row whose
// products are all 0), NaN until a view asks for that row. The grid paints only the rows its tiles
// show (a few dozen of 1,024 at long texts), so they are made row by row; the heatmap's matrices and
// the grid read the same ones.
const rowScales = new WeakMap();

/** The row-scale table of `result` (see rowScales), for valueRowScale(). */
export function valueRowScales(result) {
  let scales = rowScales.get(result);
  if (!scales) {
    scales = new Float64Array(result.nLayer * result.nHead * result.T).fill(NaN);
    rowScales.set(result, scales);
  }
  return scales;
}

/**
 * 1 / sum_{k <= q} alpha_qk * n_k of head lh (= layer * nHead + head), row q (0 when the sum is
 * not > 0), from `scales` (valueRowScales(result)), computed and kept on first use. The sum runs
 * over keys 0..q in order, in float64.
 */
export function valueRowScale(result, scales, lh, q) {
  const i = lh * result.T + q;
  let s = scales[i];
  if (s === s) return s; // not NaN: known
  const src = headSource(result, Math.floor(lh / result.nHead), lh % result.nHead);
  if (!src) return 0;
  const A = src.data;
  const N = result.valueNorms;
  const a = src.offset + q * src.stride;
  const n = lh * result.T;
  let sum = 0;
  for (let k = 0; k <= q; k++) sum += A[a + k] * N[n + k];
  s = sum > 0 ? 1 / sum : 0;
  scales[i] = s;
  return s;
}

/**
 * Value-weighted weight (q, k <= q) from its row's scale (valueRowScale): alpha_qk n_k / sum, as a
 * product with 1 / sum (the grid's pixel loop multiplies, it does not divide), rounded to float32 as
 * valueWeighted() stores it: the grid and the heatmap show the same numbers.
 */
export const valueShare = (alpha, norm, scale) => Math.fround(alpha * norm * scale);

const matrices = new WeakMap(); // result -> Map(layer * nHead + head -> T x T matrix)

/**
 * Row-normalised alpha_qk * n_k of one head, from the result's own attention and value sizes
 * (hasValueNorms(result) must hold), as shownWeights()'s source: every row T x T row-major (upper
 * triangle 0), or for a head whose rows a page pulled (headSource's rows) those rows alone; one
 * computation per result and head.
 */
function valueWeightedSource(result, layer, head) {
  const { T } = result;
  let perResult = matrices.get(result);
  if (!perResult) {
    perResult = new Map();
    matrices.set(result, perResult);
  }
  const lh = layer * result.nHead + head;
  const src = headSource(result, layer, head);
  if (!src) return null;
  const hit = perResult.get(lh);
  if (hit && hit.from === src.data) return hit.source;
  const { data: A, offset: base, stride: S } = src;
  const [r0, r1] = src.rows ?? [0, T];
  const N = result.valueNorms;
  const n = lh * T;
  const scales = valueRowScales(result);
  const out = new Float32Array((r1 - r0) * T);
  for (let q = r0; q < r1; q++) {
    const scale = valueRowScale(result, scales, lh, q);
    for (let k = 0; k <= q; k++) out[(q - r0) * T + k] = valueShare(A[base + q * S + k], N[n + k], scale);
  }
  const source = { data: out, offset: -r0 * T, stride: T, weighted: true, ...(src.rows ? { rows: src.rows } : {}) };
  perResult.set(lh, { from: src.data, source });
  return source;
}

/** Row-normalised alpha_qk * n_k of one head, T x T row-major (upper triangle 0), for a result with every map. */
export function valueWeighted(result, layer, head) {
  return valueWeightedSource(result, layer, head)?.data ?? null;
}

/**
 * Where a view reads the weights it shows for one head: { data, offset, stride, weighted, rows }, so
 * that weight (q, k) is data[offset + q * stride + k] (for q in rows, when given: headSource). The
 * result's own attention, or the value-weighted matrix when state.by is 'value' and the result has
 * the value sizes (weighted: true). Null when the result holds no weights of the head (result.js's
 * headSource: a result without maps, head not pulled).
 */
export function shownWeights(result, state, layer, head) {
  const src = headSource(result, layer, head);
  if (!src) return null;
  if (byValue(result, state)) return valueWeightedSource(result, layer, head);
  return { ...src, weighted: false };
}

/** Weight (q, k) from shownWeights()'s source. */
export const weightAt = (src, q, k) => src.data[src.offset + q * src.stride + k];

/**
 * One weight as the views show it, without building a head's matrix (the grid): head (layer, head),
 * query q, key k <= q; by weight × value size when byValue(result, state).
 */
export function shownWeightAt(result, state, layer, head, q, k) {
  const src = headSource(result, layer, head);
  if (!src) return NaN;
  const lh = layer * result.nHead + head;
  const alpha = src.data[src.offset + q * src.stride + k];
  if (!byValue(result, state)) return alpha;
  return valueShare(alpha, result.valueNorms[lh * result.T + k], valueRowScale(result, valueRowScales(result), lh, q));
}
