// What every view says about a head in words, and which token it focuses on.
// `state` is shared by all views of one page or widget:
//   { layer, head, heads: [head indices shown together in the lines view], token: selected query
//     token index or null for the last token, ablate: [[layer, head]...] }
// Layers and heads are counted from 0, as in the engine's API and CLI.
import { attentionAt, headSource, windowAround } from '../../lib/result.js';
import { quoteToken } from '../runtime/theme.js';

const fmt2 = (w) => w.toFixed(2);

// the window rule (the lines view, the token strip, a long text's pulled rows) lives with a result's layout
export { windowAround };

export function clamp(v, lo, hi) {
  return Math.max(lo, Math.min(hi, v));
}

/** The query token index the views focus on (the selected one, or the last token). */
export function focusToken(result, state) {
  const t = state.token;
  return Number.isInteger(t) && t >= 0 && t < result.T ? t : result.T - 1;
}

/** The key token that query `q` attends to most in one head: { k, w }. */
export function strongestKey(result, layer, head, q) {
  let best = 0;
  let bw = -1;
  for (let k = 0; k <= q; k++) {
    const w = attentionAt(result, layer, head, q, k);
    if (w > bw) {
      bw = w;
      best = k;
    }
  }
  return { k: best, w: bw };
}

/** Screen-reader sentence for a head, e.g. "Layer 1, head 3: 'cooked' attends most to 'chef' (0.62)". */
export function describeHead(result, layer, head, q) {
  // (a long text's result holds only the heads the page pulled: the others are named alone)
  if (!result || result.T === 0 || !headSource(result, layer, head)) return `Layer ${layer}, head ${head}`;
  const { k, w } = strongestKey(result, layer, head, q);
  const from = quoteToken(result.tokens[q].text);
  const to = k === q ? 'itself' : quoteToken(result.tokens[k].text);
  return `Layer ${layer}, head ${head}: ${from} attends most to ${to} (${fmt2(w)})`;
}
