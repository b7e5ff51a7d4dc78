// How closely the engine's role numbers must match a model card's (scripts/train/head_metrics.py,
// PyTorch on the exported F16 weights). The engine reads the same F16 weights, widened to float32,
// and computes in float32 WebAssembly; PyTorch computes in float32 on the CPU. So on the SAME input
// the two differ only by float32 summation order (attention weights differ by ~1e-6) and by the
// card's rounding. Where the inputs differ (the induction lists are drawn by different generators,
// the previous-token text differs), the tolerance is the sampling error, stated beside each check.

/** verb to subject: the same 24 probe sentences and weights. The card rounds each ratio to 0.001
 *  (+-0.0005); float32 arithmetic adds < 1e-4 on ratios up to ~10. Measured: at most 0.0005 on the
 *  five gen-2 sample models. */
export const V2S_TOL = 0.002;

/** induction: the card averages `cardLists` lists drawn by numpy, the engine `engineLists` lists
 *  drawn by its own generator from the same words. Each head's difference is a difference of two
 *  independent means; its standard error is sd * sqrt(1/cardLists + 1/engineLists), with sd the
 *  head's spread from list to list (measured by the engine). 5 standard errors (the max over up to
 *  32 heads of |z| stays below 4 in practice; measured up to 3.3 at 16 lists each), plus 0.002 for
 *  the card's rounding to 1e-4 and arithmetic. */
export function inductionTol(sd, cardLists, engineLists) {
  return 5 * sd * Math.sqrt(1 / cardLists + 1 / engineLists) + 0.002;
}

/** copy accuracy: a share of n = lists x 19 repeat positions on each side; binomial standard error
 *  at the pooled share, 5 of them, plus one position's worth on the engine side for argmax ties. */
export function copyTol(pCard, pEngine, cardLists, engineLists, listLength = 20) {
  const p = (pCard + pEngine) / 2;
  const nc = cardLists * (listLength - 1),
    ne = engineLists * (listLength - 1);
  return 5 * Math.sqrt(p * (1 - p) * (1 / nc + 1 / ne)) + 1 / ne;
}

/** previous token: different text (the card's validation text is not shipped). Measured on the
 *  built-in paragraph: 0.016-0.061 on the gen-2 samples, while heads range over 0.01-0.62. */
export const PREV_TOL = 0.1;
