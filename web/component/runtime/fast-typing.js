// Every keystroke painted in the next frame: a small model runs twice on the page, once in its Web
// Worker and once on the page thread. Typing at the end of the text is an incremental update of a
// few tokens (the engine reuses its key/value cache), which costs well under a millisecond on the
// page thread for the shipped models; the worker's round trip costs a frame. So short incremental
// updates run here, where the result is painted in the same frame as the keystroke, and everything
// else (a changed start of the text, switched-off heads, all logits, long texts) in the worker.
// Both instances are the same engine on the same weights, so their results are the same numbers
// (an incremental update equals a full run bit for bit).

/** Runs on the page thread only when the last run here took less than this (ms). */
export const PAGE_THREAD_BUDGET_MS = 4;
/** Over budget, every this many keystrokes that could run here one does, to measure again. */
export const PAGE_THREAD_PROBE_EVERY = 8;

import { sameAblate } from '../../lib/result.js';

/**
 * The promise API of a worker model (run, inspectHead, logitAttribution, patch, tokenize, tokenText, info, dispose), with short
 * incremental runs on `pageModel` (a HeadscopeModel on the page thread, or a promise of one).
 * `ranOnPage` on a result says where it ran.
 */
export class FastTypingModel {
  #worker;
  #page = null;
  #last = null; // the page instance's last run: { text, ablate } (what its cache holds)
  #lastRun = null; // the last run() asked of this model, wherever it ran: { text, ablate }
  #costs = []; // the last few page-thread runs, in ms per keystroke-sized update
  #sentAway = 0; // keystrokes that could have run here but went to the worker (over budget)
  #probing = false; // this run is such a probe
  #primeTimer = 0;
  #primeWith = null; // the text the page instance should catch up with

  constructor(workerModel, pageModel) {
    this.#worker = workerModel;
    /** Settles when the page-thread instance has loaded (true) or failed to (false). */
    this.pageReady = Promise.resolve(pageModel).then(
      (m) => {
        this.#page = m;
        return !!m;
      },
      () => {
        this.#page = null;
        return false;
      },
    );
  }

  /** What a keystroke-sized update costs on the page thread, in ms (the median of the last runs; Infinity before any). */
  get pageThreadCostMs() {
    return this.#estimate();
  }

  get info() {
    return this.#worker.info;
  }
  get threads() {
    return this.#worker.threads;
  }
  get thread() {
    return this.#worker.thread;
  }
  get disposed() {
    return this.#worker.disposed;
  }
  /** True: short incremental runs may run on the page thread. */
  get fastTyping() {
    return true;
  }

  // The cost of a keystroke here: the median of the last runs (one slow run, a garbage collection
  // say, does not send typing to the worker), each scaled to four new tokens (a run that primed the
  // cache computed them all).
  static #perKeystroke(ms, computed) {
    return ms * Math.min(1, 4 / Math.max(1, computed));
  }
  #record(ms, computed) {
    this.#costs.push(FastTypingModel.#perKeystroke(ms, computed));
    if (this.#costs.length > 5) this.#costs.shift();
  }
  #estimate() {
    const sorted = [...this.#costs].sort((a, b) => a - b);
    return sorted.length ? sorted[sorted.length >> 1] : Infinity;
  }

  // An edit at the end of what the page instance's cache holds: the engine reuses every token before it.
  #extendsCache(text, ablate) {
    const last = this.#last;
    return (
      !!last &&
      sameAblate(ablate, last.ablate) &&
      text.startsWith(last.text.slice(0, Math.max(0, last.text.length - 24))) &&
      Math.abs(text.length - last.text.length) <= 24
    );
  }

  // True when `text` can run on the page thread within a frame (see the module comment). Over
  // budget, a keystroke now and then runs here anyway: the costs that sent typing away were measured
  // by catch-up runs in tasks of their own, which compete with the worker's run for the cores, and
  // a busy moment must not send typing to the worker for good. One such probe costs a few ms.
  #fitsHere(text, { ablate = [], allLogits = false, patch = null } = {}) {
    // a patched run computes every token: it is no keystroke's update, and runs in the worker
    if (!this.#page || allLogits || patch || !this.#extendsCache(text, ablate)) return false;
    if (this.#estimate() < PAGE_THREAD_BUDGET_MS) return true;
    if (++this.#sentAway < PAGE_THREAD_PROBE_EVERY) return false;
    this.#sentAway = 0;
    this.#probing = true;
    return true;
  }

  #runHere(text, options) {
    const t0 = performance.now();
    const result = this.#page.run(text, options);
    const ms = performance.now() - t0,
      computed = result.T - result.reusedTokens;
    // a probe under budget starts the history again (the median would need several)
    if (this.#probing && FastTypingModel.#perKeystroke(ms, computed) < PAGE_THREAD_BUDGET_MS) this.#costs = [];
    this.#probing = false;
    this.#record(ms, computed);
    this.#last = { text, ablate: options.ablate ?? [] };
    return result;
  }

  async run(text, options = {}) {
    this.#lastRun = { text, ablate: options.ablate ?? [] };
    if (this.#fitsHere(text, options)) {
      const result = this.#runHere(text, options);
      result.ranOnPage = true;
      return result;
    }
    const result = await this.#worker.run(text, options);
    result.ranOnPage = false;
    if (!options.allLogits && !options.patch) this.#prime(text, options);
    return result;
  }

  // After a worker run the page instance runs the same text, so that the next keystroke finds its
  // cache ready (and its time decides whether the page thread is fast enough for this model and
  // text): at once when that is a small update of what it holds, else in a task of its own after
  // this result is painted (one pending at a time, for the latest text: while the reader types, a
  // debounce would never fire).
  #prime(text, options) {
    // with the value sizes when the run asked for them: the next keystroke then computes only its tokens'
    this.#primeWith = { text, ablate: options.ablate ?? [], valueNorms: !!options.valueNorms };
    const prime = () => {
      this.#primeTimer = 0;
      const want = this.#primeWith;
      if (!this.#page || this.#page.disposed || !want) return;
      try {
        // thumbnails, not maps: the result is dropped, and every head's whole map of a long text
        // copied out on the page thread cost a reader 100-300 ms a keystroke (1,000 tokens, 8 heads)
        this.#runHere(want.text, {
          ablate: want.ablate,
          topK: 1,
          valueNorms: want.valueNorms,
          attention: 'thumbnails',
        });
      } catch {
        this.#last = null; // the worker already reported any problem with this text
      }
    };
    if (this.#page && this.#estimate() < PAGE_THREAD_BUDGET_MS && this.#extendsCache(text, options.ablate ?? [])) {
      clearTimeout(this.#primeTimer);
      this.#primeTimer = 0;
      prime();
    } else if (!this.#primeTimer) {
      this.#primeTimer = setTimeout(prime, 0);
    }
  }

  // The split of a logit of the last run(), or of `of` ({ text, ablate }): see
  // HeadscopeModel.logitAttribution. From the page instance when it holds that run (typing ran it
  // there, or a prime caught up with it): no run is needed. Else from the worker, which runs `of`'s
  // text first if it holds another.
  async logitAttribution(position, token, of = undefined) {
    const want = of ? { text: of.text, ablate: of.ablate ?? [] } : this.#lastRun;
    const here =
      this.#page &&
      !this.#page.disposed &&
      want &&
      this.#last &&
      this.#last.text === want.text &&
      sameAblate(this.#last.ablate, want.ablate);
    return here ? this.#page.logitAttribution(position, token, of) : this.#worker.logitAttribution(position, token, of);
  }

  // in the worker: the page instance's cache (what #last says it holds) stays the typed text's
  inspectHead(text, layer, head, options) {
    return this.#worker.inspectHead(text, layer, head, options);
  }
  // writing runs in the worker: each token is one incremental step there, with a result for the views
  generate(text, options) {
    return this.#worker.generate(text, options);
  }
  // patching runs hundreds of model runs: in the worker, with the page's runs answered between its chunks
  patch(options) {
    return this.#worker.patch(options);
  }
  explainScore(text, layer, head, query, key, options) {
    return this.#worker.explainScore(text, layer, head, query, key, options);
  }
  circuits(options) {
    return this.#worker.circuits(options);
  }
  // the parts of the maps a view pulls (a long text's heads: runtime/pulled-maps.js)
  attentionTile(text, layer, head, options) {
    return this.#worker.attentionTile(text, layer, head, options);
  }
  attentionThumbnails(text, options) {
    return this.#worker.attentionThumbnails(text, options);
  }
  memory() {
    return this.#worker.memory();
  }
  tokenize(text) {
    return this.#worker.tokenize(text);
  }
  tokenText(id) {
    return this.#worker.tokenText(id);
  }
  cacheState() {
    return this.#worker.cacheState();
  }

  dispose() {
    clearTimeout(this.#primeTimer);
    this.#page?.dispose();
    this.#page = null;
    this.#worker.dispose();
  }
}
