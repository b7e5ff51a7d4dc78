// What the attention views colour by: the attention weights, or the weights times
// the size of what each token's value moves through the head (Kobayashi et al. 2020, "Attention is
// Not Only a Weight"): alpha_ij * ||v_j W_O^h||, rescaled so each row sums to 1 for display. A head
// that puts most of its weight on a token with a tiny value vector (a first-token "sink") then shows
// where its write really comes from. Head-role badges and scores stay on the weights.
//
// state.by: 'weight' (default) or 'value'. state.valueNorms: Map 'layer:head' -> Float32Array(T) of
// ||v_j W_O^h|| for the result on screen (from inspectHead().valueNorm); a head without one is shown
// by its weights. Pure: the scene builders and painters read weights through shownWeights().
import { headOffset, strideOf } from '../../lib/result.js';

export const WEIGHINGS = ['weight', 'value'];

/** The sentence that says what "weight × value size" shows (the views' legends and the page). */
export const VALUE_WEIGHTING_SENTENCE = 'Weight × value size: each weight times the size of what that token\'s value '
  + 'vector writes through this head (‖v W_O‖), rescaled so that each row sums to 1; a token that gets much '
  + 'weight but carries a small value moves little.';

const cache = new WeakMap(); // result -> Map(key -> matrix): one computation per result and head

/**
 * Row-normalised alpha_qk * n_k of one head, T x T row-major: the weights of `result` times
 * `valueNorm` (T sizes), each row divided by its sum (a row whose products are all 0 stays 0).
 */
export function valueWeighted(result, layer, head, valueNorm) {
  const { T } = result;
  let perResult = cache.get(result);
  if (!perResult) { perResult = new Map(); cache.set(result, perResult); }
  const key = `${layer}:${head}`;
  const hit = perResult.get(key);
  if (hit && hit.norms === valueNorm) return hit.matrix;
  const S = strideOf(result);
  const A = result.attentionAll;
  const base = headOffset(result, layer, head);
  const out = new Float32Array(T * T);
  for (let q = 0; q < T; q++) {
    let sum = 0;
    for (let k = 0; k <= q; k++) sum += A[base + q * S + k] * valueNorm[k];
    if (!(sum > 0)) continue;
    for (let k = 0; k <= q; k++) out[q * T + k] = (A[base + q * S + k] * valueNorm[k]) / sum;
  }
  perResult.set(key, { norms: valueNorm, matrix: out });
  return out;
}

/** The value sizes of one head for this result, when state asks for them and has them; else null. */
export function valueNormsOf(result, state, layer, head) {
  if (state?.by !== 'value') return null;
  const norms = state.valueNorms?.get(`${layer}:${head}`);
  return norms && norms.length === result.T ? norms : null;
}

/**
 * Where a view reads the weights it shows for one head: { data, offset, stride, weighted }, so that
 * weight (q, k) is data[offset + q * stride + k]. The result's own attention, or the value-weighted
 * matrix when state.by is 'value' and the head's value sizes are known (weighted: true).
 */
export function shownWeights(result, state, layer, head) {
  const norms = valueNormsOf(result, state, layer, head);
  if (norms) return { data: valueWeighted(result, layer, head, norms), offset: 0, stride: result.T, weighted: true };
  return { data: result.attentionAll, offset: headOffset(result, layer, head), stride: strideOf(result), weighted: false };
}

/**
 * True when value sizes measured with every head on (inspectHead() runs so) are those of a run
 * with `ablate` switched off, for heads of `layer`: no switched-off head sits in an earlier layer
 * (a head's values depend on the layers before it only).
 */
export const valueSizesValid = (ablate = [], layer) => ablate.every(([l]) => l >= layer);

/** Weight (q, k) from shownWeights()'s source. */
export const weightAt = (src, q, k) => src.data[src.offset + q * src.stride + k];
