// The runner between a widget and its model: at most one run in flight, the latest request next.

/**
 * Runs the model for the latest request only: at most one run in flight; when it finishes, the
 * newest text (if it changed meanwhile) runs next. Intermediate texts are skipped.
 * `requestOptions(text)` (optional) returns run options added to every request of `text`, such as the page's
 * switched-off heads; options given to request() take precedence.
 * A long run (one that reports progress: a big model on a long text) is cancelled when a newer
 * request arrives, since its result would be stale; `onProgress({ tokens, total })` follows it,
 * `cancel()` stops it, and `onCancel(request)` hears that it stopped.
 * With `reuseResults`, each run is given the previous result as `reuse`: typing at the end of a
 * long text then moves only the new attention rows, and the previous result must not be read once
 * onResult has the new one (keep the latest result only).
 * `onRequest(text)`, a property, hears every request before it is queued.
 */
export class Runner {
  #abort = null;
  #long = false;

  #last = null; // the latest result delivered (with reuseResults, the next run updates it)

  constructor(model, { onResult, onError, requestOptions, onProgress, onCancel, reuseResults = false } = {}) {
    Object.assign(this, {
      model,
      reuseResults,
      onResult,
      onError,
      onProgress,
      onCancel,
      requestOptions,
      pending: null,
      busy: false,
      runs: 0,
    });
  }

  request(text, options = {}) {
    this.onRequest?.(text); // a page stops the model's writing when the text or the heads change
    this.pending = { text, options: { ...this.requestOptions?.(text), ...options } };
    if (this.busy && this.#long) this.#abort?.abort();
    if (!this.busy) this.#pump();
  }

  /**
   * Makes `result`, made elsewhere for this model (a token the model wrote), the one the next run
   * updates with `reuseResults`, as if this runner had delivered it.
   */
  adopt(result) {
    this.#last = result;
  }

  /** Stops the run in flight (between its steps, if it is long) and drops any pending request. */
  cancel() {
    this.pending = null;
    this.#abort?.abort();
  }

  async #pump() {
    this.busy = true;
    while (this.pending) {
      const req = this.pending;
      this.pending = null;
      const abort = new AbortController();
      this.#abort = abort;
      this.#long = false;
      try {
        const t0 = performance.now();
        const result = await this.model.run(req.text, {
          topK: 10,
          ...req.options,
          signal: abort.signal,
          reuse: this.reuseResults ? this.#last : null,
          onProgress: (p) => {
            this.#long = true;
            this.onProgress?.(p, req);
          },
        });
        this.runs++;
        result.runMs = performance.now() - t0;
        this.#last = result;
        this.onResult?.(result, req);
      } catch (e) {
        if (e?.name === 'AbortError') this.onCancel?.(req);
        else this.onError?.(e, req);
      }
    }
    this.#abort = null;
    this.busy = false;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #idleWaiters = [];

  /** Resolves once nothing is pending or running. */
  idle() {
    if (!this.busy && !this.pending) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}
