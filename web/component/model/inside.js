// "Inside this head"'s numbers and sentences, pure (no DOM): the six steps, the keys drawn for a
// query, a score's products, the size of the head's write, one sentence per step. The view and its
// scene are views/inside.js; the numbers are HeadscopeModel.inspectHead()'s.
import { quoteToken } from '../runtime/theme.js';
import { clamp } from './describe.js';

export const INSIDE_STEPS = Object.freeze([
  { id: 'query', name: 'Query' },
  { id: 'keys', name: 'Keys' },
  { id: 'scores', name: 'Scores' },
  { id: 'weights', name: 'Weights' },
  { id: 'values', name: 'Values' },
  { id: 'write', name: 'Write' },
]);
/** Steps are counted from 1 (URL `step=`). */
export const clampStep = (s) => (Number.isInteger(s) ? clamp(s, 1, INSIDE_STEPS.length) : 1);

/** At most this many key rows are drawn; beyond, the keys with the most weight (and the one picked). */
export const MAX_KEY_ROWS = 14;

export const f2 = (x) => (x === -Infinity ? '−∞' : x.toFixed(2));
export const f3 = (x) => (x === -Infinity ? '−∞' : x.toFixed(3));
export const f4 = (x) => x.toFixed(4);
export const signed = (x, d = 3) => (x < 0 ? `−${(-x).toFixed(d)}` : x.toFixed(d));

// ---- the numbers ----------------------------------------------------------------------------------

/** Row i of a T x n matrix (a view, not a copy). */
export const rowOf = (m, i, n) => m.subarray(i * n, (i + 1) * n);

/** The key a step points at by default: the one the query gives the most weight (ties: the first). */
export function strongestInsideKey(inside, i) {
  let best = 0;
  for (let j = 1; j <= i; j++) if (inside.attention[i * inside.T + j] > inside.attention[i * inside.T + best]) best = j;
  return best;
}

/**
 * The key rows drawn for query i: every token 0..i when they fit in `max` rows, else the max - 1 with
 * the most weight plus the picked key, in text order. `hidden`: how many earlier tokens are left out.
 */
export function shownKeys(inside, i, key, max = MAX_KEY_ROWS) {
  const all = Array.from({ length: i + 1 }, (_, j) => j);
  if (all.length <= max) return { keys: all, hidden: 0 };
  const T = inside.T;
  const byWeight = [...all].sort((a, b) => inside.attention[i * T + b] - inside.attention[i * T + a] || a - b);
  const keep = new Set(byWeight.slice(0, max - 1));
  // the picked key, or (when it is among them already, or none is picked) the next strongest
  keep.add(Number.isInteger(key) && key <= i && !keep.has(key) ? key : byWeight[max - 1]);
  return { keys: [...keep].sort((a, b) => a - b), hidden: i + 1 - keep.size };
}

/** q_i . k_j in float64 from the float32 vectors, and its d_head products. */
export function dotProducts(inside, i, j) {
  const HS = inside.headSize;
  const products = new Float64Array(HS);
  let dot = 0;
  for (let d = 0; d < HS; d++) {
    products[d] = inside.q[i * HS + d] * inside.k[j * HS + d];
    dot += products[d];
  }
  return { products, dot };
}

/** ||out_i||: the size of the head's write at token i (float64 sum of the float32 entries). */
export function writeNorm(inside, i) {
  let s = 0;
  for (let c = 0; c < inside.nEmbd; c++) s += inside.out[i * inside.nEmbd + c] ** 2;
  return Math.sqrt(s);
}

/** One plain sentence per step, for query token i (and the picked key, for the scores step). */
export function insideSentence(inside, i, step, key = strongestInsideKey(inside, i)) {
  const { T, headSize: HS, nEmbd } = inside;
  const tok = quoteToken(inside.tokens[i].text);
  const later = T - 1 - i;
  const sq = Math.sqrt(HS);
  switch (clampStep(step)) {
    case 1:
      return `${tok} reads its input, the ${nEmbd} numbers of the residual stream after ${inside.norm ?? 'layer norm'}, through this head's query weights W_Q: the result is its query q, ${HS} numbers that say what it looks for${inside.rotary ? ', turned by an angle that grows with its position (rotary positions: q · k then depends on how far apart two tokens are)' : ''}.`;
    case 2:
      return `Every token up to ${tok} also gets a key k through W_K${inside.rotary ? ', turned by its own position' : ''}, ${HS} numbers that say what it offers; ${later === 0 ? 'no token comes after it' : `the ${later} later token${later === 1 ? ' is' : 's are'} masked, because ${tok} cannot see ${later === 1 ? 'it' : 'them'}`}.`;
    case 3: {
      const { dot } = dotProducts(inside, i, key);
      return `A key's score is q · k, the sum of the ${HS} products of their numbers, divided by √${HS} = ${sq.toFixed(2)}: for ${quoteToken(inside.tokens[key].text)} that is ${signed(dot, 2)} ÷ ${sq.toFixed(2)} = ${signed(inside.scores[i * T + key])}.`;
    }
    case 4: {
      const top = strongestInsideKey(inside, i);
      return `The softmax turns the scores into weights that are positive and add up to 1, the larger scores getting much more, so ${tok} gives ${f2(inside.attention[i * T + top])} to ${top === i ? 'itself' : quoteToken(inside.tokens[top].text)}: this is row ${i} of the heatmap.`;
    }
    case 5:
      return `Each token's value v (${HS} numbers, through W_V) is scaled by its weight, and the scaled values add up to z, what the head reads out for ${tok}.`;
    default:
      return `z times this head's ${HS} rows of W_O gives the head's share of the update added to ${tok}: ${nEmbd} numbers of size ${writeNorm(inside, i).toFixed(2)}, its bar in "How the heads combine".`;
  }
}
