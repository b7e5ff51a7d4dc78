// One head's insides (the model's inspectHead()) for the text on screen, fetched as the views ask
// for them: the full insides of one head for the "Inside this head" view, and the value sizes
// (valueNorm) of the heads that "weight × value size" colours. One inspect run at a time, the
// latest wish next (intermediate texts are skipped), like the Runner does for runs.
//
// An inspect run is a full forward pass of the text with every head on (it cannot reuse a cache
// made without inspecting that head), and it takes the engine's cache, which the next keystroke then
// reuses. So it runs only once the page's runs are done (`idle`), and when the last one took long (a
// big model on a long text) only after the wish has stayed the same for a moment: typing is never
// queued behind it.

/** An inspect run that took longer than this (ms) makes the next wait for a quiet moment. */
export const SLOW_INSPECT_MS = 40;
/** How long the wish must stay the same before a slow inspect run starts (ms). */
export const QUIET_MS = 350;

const keyOf = (layer, head) => `${layer}:${head}`;

export class InsideSource {
  #model;
  #onUpdate;
  #idle;
  #want = null;      // { text, panel: [l, h] | null, norms: [[l, h], ...] }
  #full = null;      // { text, key, inside }: the panel head's insides (the latest fetched)
  #norms = new Map(); // key -> { text, valueNorm }
  #failed = null;    // { text, key, message }: not asked again for the same text and head
  #busy = false;
  #lastMs = 0;
  #wantedAt = 0;
  #quiet = null;     // { timer, resolve } while waiting for a quiet moment

  /** model: a page or worker model (inspectHead); onUpdate() after each arrival; idle(): the page's runs are done. */
  constructor(model, { onUpdate, idle } = {}) {
    this.#model = model;
    this.#onUpdate = onUpdate;
    this.#idle = idle;
  }

  /**
   * What the views want for `text`: the full insides of head `panel` ([layer, head] or null) and the
   * value sizes of `norms` heads. Fetches what is missing, one inspect run at a time.
   */
  want(text, { panel = null, norms = [] } = {}) {
    const same = this.#want && this.#want.text === text && keyOf(...(this.#want.panel ?? [])) === keyOf(...(panel ?? []))
      && this.#want.norms.map((p) => keyOf(...p)).join() === norms.map((p) => keyOf(...p)).join();
    if (same) return;
    this.#want = { text, panel, norms };
    this.#wantedAt = performance.now();
    // value sizes of another text are of no use: forget them (the full insides stay, shown as stale)
    for (const [key, entry] of this.#norms) if (entry.text !== text) this.#norms.delete(key);
    if (this.#quiet) this.#restartQuiet();
    if (!this.#busy) this.#pump();
  }

  /** The latest insides fetched for the panel (of the text wanted, or an earlier one), or null. */
  get inside() { return this.#full?.inside ?? null; }

  /** True while something wanted is still missing. */
  get pending() { return !!this.#next(); }

  /** The error of the last failed inspect run for what is wanted now, or ''. */
  get error() {
    const w = this.#want;
    const f = this.#failed;
    return w && f && f.text === w.text && (f.key === keyOf(...(w.panel ?? [])) || w.norms.some((p) => keyOf(...p) === f.key)) ? f.message : '';
  }

  /** Head (layer, head)'s value sizes for `text` (Float32Array T), or null. */
  valueNorm(text, layer, head) {
    const e = this.#norms.get(keyOf(layer, head));
    if (e && e.text === text) return e.valueNorm;
    const f = this.#full;
    return f && f.text === text && f.key === keyOf(layer, head) ? f.inside.valueNorm : null;
  }

  // What to fetch next for the wish: the panel's head first, then the missing value sizes.
  #next() {
    const w = this.#want;
    if (!w) return null;
    const failed = (key) => this.#failed && this.#failed.text === w.text && this.#failed.key === key;
    if (w.panel) {
      const key = keyOf(...w.panel);
      if (!(this.#full && this.#full.text === w.text && this.#full.key === key) && !failed(key)) return { pair: w.panel, full: true };
    }
    for (const pair of w.norms) if (!this.valueNorm(w.text, ...pair) && !failed(keyOf(...pair))) return { pair, full: false };
    return null;
  }

  #restartQuiet() {
    clearTimeout(this.#quiet.timer);
    this.#quiet.timer = setTimeout(this.#quiet.resolve, QUIET_MS);
  }

  // Resolves once the wish has not changed for QUIET_MS.
  #quietMoment() {
    if (performance.now() - this.#wantedAt >= QUIET_MS) return Promise.resolve();
    return new Promise((resolve) => {
      this.#quiet = { resolve, timer: 0 };
      this.#restartQuiet();
    }).finally(() => { this.#quiet = null; });
  }

  async #pump() {
    this.#busy = true;
    try {
      for (;;) {
        await this.#idle?.();
        if (this.#lastMs > SLOW_INSPECT_MS) await this.#quietMoment();
        if (this.#model.disposed) return;
        const job = this.#next();
        if (!job) return;
        const text = this.#want.text;
        const [layer, head] = job.pair;
        const key = keyOf(layer, head);
        const t0 = performance.now();
        try {
          const inside = await this.#model.inspectHead(text, layer, head);
          if (job.full) this.#full = { text, key, inside };
          else this.#norms.set(key, { text, valueNorm: inside.valueNorm }); // the rest is not kept
        } catch (e) {
          if (this.#model.disposed) return;
          this.#failed = { text, key, message: e?.message ?? String(e) };
        }
        this.#lastMs = performance.now() - t0;
        this.#onUpdate?.();
      }
    } finally {
      this.#busy = false;
    }
  }
}
