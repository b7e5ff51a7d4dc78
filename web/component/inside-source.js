// One head's insides (the model's inspectHead()) for the text on screen, fetched as the "Inside
// this head" view asks for them. One inspect run at a time, the latest wish next (intermediate
// texts are skipped), like the Runner does for runs. (The value sizes "weight × value size"
// colours by come with the page's own runs: run(text, { valueNorms: true }).)
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
  #want = null;      // { text, panel: [l, h] | null }
  #full = null;      // { text, key, inside }: the panel head's insides (the latest fetched)
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
   * What the view wants for `text`: the full insides of head `panel` ([layer, head], or null for
   * nothing). Fetches it unless it is there; the insides of an earlier text stay, shown as stale.
   */
  want(text, { panel = null } = {}) {
    if (this.#want && this.#want.text === text && keyOf(...(this.#want.panel ?? [])) === keyOf(...(panel ?? []))) return;
    this.#want = { text, panel };
    this.#wantedAt = performance.now();
    if (this.#quiet) this.#restartQuiet();
    if (!this.#busy) this.#pump();
  }

  /** The latest insides fetched for the panel (of the text wanted, or an earlier one), or null. */
  get inside() { return this.#full?.inside ?? null; }

  /** True while the insides wanted are still missing. */
  get pending() { return !!this.#next(); }

  /** The error of the last failed inspect run for what is wanted now, or ''. */
  get error() {
    const w = this.#want;
    const f = this.#failed;
    return w && f && f.text === w.text && f.key === keyOf(...(w.panel ?? [])) ? f.message : '';
  }

  // The head to fetch for the wish, or null: it is there, or failed for this text already.
  #next() {
    const w = this.#want;
    if (!w?.panel) return null;
    const key = keyOf(...w.panel);
    if (this.#full && this.#full.text === w.text && this.#full.key === key) return null;
    if (this.#failed && this.#failed.text === w.text && this.#failed.key === key) return null;
    return w.panel;
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
        const [layer, head] = job;
        const key = keyOf(layer, head);
        const t0 = performance.now();
        try {
          this.#full = { text, key, inside: await this.#model.inspectHead(text, layer, head) };
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
