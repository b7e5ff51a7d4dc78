// The page of bench/harness/browser-gpt2-small.mjs: one module Worker per subject (worker.js), all on this
// cross-origin-isolated page, driven one at a time through window.__bench. What is timed is timed
// inside the workers, so messaging is not part of it.
import { subjectPool } from '/common/subjects.js';

const subjects = subjectPool(new URL('./worker.js', import.meta.url));
const { call } = subjects;

function maxAbsDiff(a, b) {
  if (a.length !== b.length) throw new Error(`lengths differ: ${a.length} and ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// log-softmax in double
function logSoftmax(z) {
  let m = -Infinity,
    s = 0;
  for (const v of z) m = Math.max(m, v);
  for (const v of z) s += Math.exp(v - m);
  return Array.from(z, (v) => v - m - Math.log(s));
}

// KL(p || q) of two log-distributions, in nats
function kl(lp, lq) {
  let d = 0;
  for (let i = 0; i < lp.length; i++) d += Math.exp(lp[i]) * (lp[i] - lq[i]);
  return d;
}

function argmax(z) {
  let best = 0;
  for (let i = 1; i < z.length; i++) if (z[i] > z[best]) best = i;
  return best;
}

window.__bench = {
  isolated: self.crossOriginIsolated,
  cores: navigator.hardwareConcurrency,
  /** Starts subject `name`: kind 'ours' (the package), 'ours-lean' (the same without full maps),
   *  'ours-q8' (the package with weights: 'q8'), 'ours-q8-lean', 'ort' (onnxruntime-web), 'ort-logits'
   *  (the same graph, fetching the last logits alone) or 'tjs' (transformers.js), with `threads`
   *  (null: its default). */
  start: (name, kind, threads) => subjects.start(name, { kind, threads }),
  call,
  /** Both subjects' outputs on one input, compared here: the largest differences. */
  async agreement(a, b, input) {
    const [x, y] = [await call(a, 'outputs', input), await call(b, 'outputs', input)];
    let logitMax = 0;
    for (const v of y.logitsLast) logitMax = Math.max(logitMax, Math.abs(v));
    // kl: KL(p_b || p_a) of the last position's next-token distributions, in double
    return {
      // null when either returns no maps (a lean subject, onnxruntime-web fetching the logits alone)
      attention: x.attention && y.attention ? maxAbsDiff(x.attention, y.attention) : null,
      logits: maxAbsDiff(x.logitsLast, y.logitsLast),
      logitMax,
      kl: kl(logSoftmax(y.logitsLast), logSoftmax(x.logitsLast)),
    };
  },
  /** The next-token distributions of several subjects at the last position of one input: for each
   *  pair [a, b] of `pairs`, KL(p_a || p_b) in nats, the largest logit difference, and whether the
   *  most likely tokens agree. */
  async distributions(names, pairs, input) {
    const logits = {};
    for (const name of names) logits[name] = (await call(name, 'outputs', input)).logitsLast;
    const logp = Object.fromEntries(names.map((n) => [n, logSoftmax(logits[n])]));
    return pairs.map(([a, b]) => ({
      a,
      b,
      kl: kl(logp[a], logp[b]),
      logits: maxAbsDiff(logits[a], logits[b]),
      top1: [argmax(logits[a]), argmax(logits[b])],
    }));
  },
};
