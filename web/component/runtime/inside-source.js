// One head's insides (the model's inspectHead()) for the text on screen, fetched as the "Inside
// this head" view asks for them. One inspect run at a time, the latest wish next (intermediate
// texts are skipped), like the Runner does for runs. (The value sizes "weight × value size"
// colours by come with the page's own runs: run(text, { valueNorms: true }).)
//
// The head is read with the page's switched-off heads off (panelAblate()), so its numbers are those
// of the views above; the head itself stays on, so that its last step shows what it would write.
//
// An inspect run reuses the engine's key/value cache like any run (the engine reads a head's insides
// from it), so on the text on screen it computes only new tokens; on another text it is a full
// forward pass and takes the cache. So it runs only once the page's runs are done (`idle`), and when
// the last one took long (a big model on a long text) only after the wish has stayed the same for a
// moment: typing is never queued behind it.

/** An inspect run that took longer than this (ms) makes the next wait for a quiet moment. */
export const SLOW_INSPECT_MS = 40;
/** How long the wish must stay the same before a slow inspect run starts (ms). */
export const QUIET_MS = 350;

const keyOf = (panel, ablate) => (panel ? `${panel[0]}:${panel[1]} ${JSON.stringify(ablate)}` : '');

/**
 * The heads an inspect run of head (layer, head) switches off: the page's `ablate` ([[l, h], ...])
 * without that head, sorted (so that one set is one key).
 */
export function panelAblate(ablate, layer, head) {
  return ablate
    .filter(([l, h]) => l !== layer || h !== head)
    .map(([l, h]) => [l, h])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

export class InsideSource {
  #model;
  #onUpdate;
  #idle;
  #want = null; // { text, panel: [l, h] | null, ablate: panelAblate()'s, key }
  #full = null; // { text, key, inside }: the panel head's insides (the latest fetched)
  #failed = null; // { text, key, message }: not asked again for the same text and head
  #busy = false;
  #lastMs = 0;
  #wantedAt = 0;
  #quiet = null; // { timer, resolve } while waiting for a quiet moment

  /** model: a page or worker model (inspectHead); onUpdate() after each arrival; idle(): the page's runs are done. */
  constructor(model, { onUpdate, idle } = {}) {
    this.#model = model;
    this.#onUpdate = onUpdate;
    this.#idle = idle;
  }

  /**
   * What the view wants for `text`: the full insides of head `panel` ([layer, head], or null for
   * nothing) with the heads of `ablate` switched off (the page's set: the panel's head itself stays
   * on). Fetches it unless it is there; the insides of an earlier text or set stay, shown as stale.
   */
  want(text, { panel = null, ablate = [] } = {}) {
    const off = panel ? panelAblate(ablate, panel[0], panel[1]) : [];
    const key = keyOf(panel, off);
    if (this.#want && this.#want.text === text && this.#want.key === key) return;
    this.#want = { text, panel, ablate: off, key };
    this.#wantedAt = performance.now();
    if (this.#quiet) this.#restartQuiet();
    if (!this.#busy) this.#pump();
  }

  /** The latest insides fetched for the panel (of the text wanted, or an earlier one), or null. */
  get inside() {
    return this.#full?.inside ?? null;
  }

  /** True while the insides wanted are still missing. */
  get pending() {
    return !!this.#next();
  }

  /** True when inside() is what was wanted last: its text, head and switched-off heads. */
  get fresh() {
    return !!this.#full && !!this.#want && this.#full.text === this.#want.text && this.#full.key === this.#want.key;
  }

  /** The error of the last failed inspect run for what is wanted now, or ''. */
  get error() {
    const w = this.#want;
    const f = this.#failed;
    return w && f && f.text === w.text && f.key === w.key ? f.message : '';
  }

  // The head to fetch for the wish, or null: it is there, or failed for this text already.
  #next() {
    const w = this.#want;
    if (!w?.panel) return null;
    if (this.#full && this.#full.text === w.text && this.#full.key === w.key) return null;
    if (this.#failed && this.#failed.text === w.text && this.#failed.key === w.key) return null;
    return w;
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
    }).finally(() => {
      this.#quiet = null;
    });
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
        const {
          text,
          key,
          ablate,
          panel: [layer, head],
        } = job;
        const t0 = performance.now();
        try {
          this.#full = { text, key, inside: await this.#model.inspectHead(text, layer, head, { ablate }) };
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
