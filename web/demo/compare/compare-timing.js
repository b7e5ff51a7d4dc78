// compare.html's speed measurements, in each model's worker on the current text: the time of a
// whole run, and the time of a typed token (a run whose other tokens' keys and values come from the
// engine's cache). Round-robin over the models, one run in flight at a time, so that a busy moment
// on the machine hits every model alike; each figure is a median over repetitions. A measurement
// stops as soon as `stale()` says a newer one has begun.
import { typedSuffix, TYPED_BURST } from './compare-kv.js';

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN;
}

/**
 * The median wall time of `reps` run() calls of `text` per entry of `live` ({ model, times: [] }):
 * each entry's times and speedMs. A run that fails leaves the rest unmeasured. Resolves false when
 * stale, else true.
 */
export async function timeRuns(live, text, reps, stale) {
  try {
    for (const e of live) await e.model.run(text, { topK: 1 }); // warm up
    for (let i = 0; i < reps; i++) {
      for (const e of live) {
        await e.model.run('.', { topK: 1 }); // a different text, so the timed run cannot reuse its cache
        const t0 = performance.now();
        await e.model.run(text, { topK: 1 });
        e.times.push(performance.now() - t0);
        if (stale()) return false;
      }
    }
  } catch {
    /* leave unmeasured */
  }
  if (stale()) return false;
  for (const e of live) e.speedMs = median(e.times);
  return true;
}

/**
 * What typing one token costs, per entry of `live` ({ model, typedTimes: [] }): run(text) leaves the
 * text in the engine's cache, then the runs of the text and one more token, two more, ...
 * (TYPED_BURST) are timed; each computes its new token only (its reusedTokens is T - 1). Per token,
 * the median over `reps` bursts: each entry's typedTimes, typedComputed and typedMs, and `kv.suffix`
 * the token typed. Resolves false when stale or when a run failed (nothing measured), else true.
 */
export async function timeTypedTokens(kv, live, text, reps, stale) {
  try {
    const suffix = await typedSuffix(
      text,
      live.map((e) => e.model),
    );
    if (stale()) return false;
    kv.suffix = suffix;
    for (const e of live) {
      await e.model.run(text, { topK: 1 });
      await e.model.run(text + suffix, { topK: 1 });
    } // warm up
    for (let i = 0; i < reps; i++) {
      for (const e of live) {
        await e.model.run(text, { topK: 1 });
        let computed = 0;
        const t0 = performance.now();
        for (let k = 1; k <= TYPED_BURST; k++) {
          const r = await e.model.run(text + suffix.repeat(k), { topK: 1 });
          computed = Math.max(computed, r.T - r.reusedTokens);
        }
        e.typedTimes.push((performance.now() - t0) / TYPED_BURST);
        e.typedComputed = computed;
        if (stale()) return false;
      }
    }
  } catch {
    return false; /* leave unmeasured */
  }
  for (const e of live) e.typedMs = median(e.typedTimes);
  return true;
}
