// headscope's JavaScript API: adapts the embind module (cpp/bindings/embind.cpp) to the public
// interface documented in headscope.d.ts. Works in browsers, Web Workers and Node 20 (ES module).
//
// This layer only adapts: it loads the .wasm (wasm.js) and the model files (files.js), converts
// UTF-8 byte spans into string indices, turns results into plain objects and typed-array copies
// (result.js), and guards against use after dispose(). All numerics happen in C++.
import { loadEngine, currentCore, checked } from './wasm.js';
import { modelFiles, asText, weightSource } from './files.js';
import { makeResult, flatAblate, engineTokens, tokenArrays, plainData } from './result.js';
import { reuseInfo, firstChangedRow, roomyStride, withPreviousRows, withPrevious, claimForUpdate } from './reuse.js';
import { generateOptions, WrittenText, toWellFormed, byteToIndexMaps, writeTokens } from './generation.js';
import { HeadscopeTrainer, presetsFromCore, measureHeadsOf } from './trainer.js';
import { patchOf, runPatch } from './patching.js';
import { explainOf, circuitsOf, inspectOf, attributionOf, integers } from './explain.js';
import { tileOf, thumbnailsOf } from './maps.js';
import { runDataOf } from './run-data.js';

export { shippedModels, defaultModelName } from './files.js';
export { wasmHeapUsedBytes, wasmMemoryBytes } from './wasm.js';
// where a weight sits in a result's attentionAll, whatever its block width (see RunOptions.reuse)
export { attentionIndex, strideOf } from './result.js';

/**
 * Loads a model: a shipped model's name (default: headscope-base), the URL of a folder in the
 * Hugging Face GPT-2 layout, or the four files as buffers. `weights: 'f16'` holds the large weight
 * matrices in half precision (about half the memory), 'q8' the blocks' linear layers in 8 bits (about a
 * quarter), 'auto' as the checkpoint stores them; the default is 'f32'. `threads` (1 to 64):
 * the engine's threads where it can have them (wasm.js, loadEngine()), by default min(cores, 8).
 */
export async function loadModel(source, options = {}) {
  const { onProgress, signal, weights = 'f32', attentionMaps = true, memoryLimit = 0, activations = 'all' } = options;
  if (typeof attentionMaps !== 'boolean')
    throw new Error(`attentionMaps must be true or false, got ${typeof attentionMaps}`);
  if (!Number.isSafeInteger(memoryLimit) || memoryLimit < 0)
    throw new Error(`memoryLimit must be a whole number of bytes (0: all there is), got ${String(memoryLimit)}`);
  if (activations !== 'all' && activations !== 'views' && activations !== 'auto')
    throw new Error(
      `activations must be 'all', 'views' or 'auto', got ${typeof activations === 'string' ? `'${activations}'` : String(activations)}`,
    );

  if (weights !== 'f32' && weights !== 'f16' && weights !== 'q8' && weights !== 'auto')
    throw new Error(
      `weights must be 'f32', 'f16', 'q8' or 'auto', got ${typeof weights === 'string' ? `'${weights}'` : String(weights)}`,
    );
  const { core, threads } = await loadEngine(options.threads);
  const { files, name } = await modelFiles(source, { onProgress, signal });
  // GPT-2's vocab.json + merges.txt, or the Llama family's tokenizer.json; the rest is the same
  const config = asText(files.config, 'config');
  const bytes = await weightSource(files.weights);
  const rest = [weights, threads, attentionMaps, memoryLimit, activations];
  const handle = checked(
    core,
    'vocab' in files
      ? core.load(config, bytes, asText(files.vocab, 'vocab'), asText(files.merges, 'merges'), ...rest)
      : core.loadTokenizerJson(config, bytes, asText(files.tokenizer, 'tokenizer'), ...rest),
  );
  return new HeadscopeModel(core, handle, name);
}

export class HeadscopeModel {
  #core;
  #handle;
  #info;
  #tokenTextCache = new Map();
  // the last run(): what logitAttribution() splits up. The engine keeps only its latest run, so
  // once it ran anything else (inspectHead, prefill, a head measurement's runs) the run is repeated
  #lastRun = null;
  #engineHoldsLastRun = false;
  // the generation whose sequence the engine holds; every other run clears it, and the generation
  // then runs its sequence again before drawing (it draws from the engine's last run)
  #generating = null;

  constructor(core, handle, name) {
    this.#core = core;
    this.#handle = handle;
    const config = handle.config();
    this.#info = Object.freeze({
      name,
      config: Object.freeze(config),
      parameterCount: handle.parameterCount(),
      weightBytes: handle.weightBytes(),
      weights: handle.weightStorage(),
      simd: Object.freeze(core.simdInfo()),
      threads: handle.threads(),
      attentionMaps: handle.memory().attentionMaps,
    });
  }

  /** How the engine's memory is spent now (ModelMemory in headscope.d.ts): it changes as texts grow. */
  memory() {
    return checked(this.#core, this.#live().memory());
  }

  #live() {
    if (!this.#handle) throw new Error('this headscope model was disposed; load it again with loadModel()');
    return this.#handle;
  }

  get info() {
    this.#live();
    return this.#info;
  }
  /** The threads the engine splits this model's runs over (1 in the single-threaded build). */
  get threads() {
    return this.info.threads;
  }
  get disposed() {
    return this.#handle === null;
  }

  /** Text of one vocabulary entry, for display. */
  tokenText(id) {
    const h = this.#live();
    let s = this.#tokenTextCache.get(id);
    if (s === undefined) {
      if (!Number.isInteger(id)) throw new Error(`token id must be an integer, got ${id}`);
      s = checked(this.#core, h.tokenText(id));
      if (this.#tokenTextCache.size < 100000) this.#tokenTextCache.set(id, s);
    }
    return s;
  }

  /** Tokens of `text` without running the model. */
  tokenize(text) {
    const h = this.#live();
    const wellFormed = toWellFormed(text);
    const map = byteToIndexMaps(wellFormed);
    const out = checked(this.#core, h.tokenize(wellFormed));
    return engineTokens(out, out.tokenIds.length, map);
  }

  /**
   * Runs the model on `text`. Two calls into the engine return everything: the run, then tokens,
   * attention, contribution norms, the last logits, the top-k next tokens and (with allLogits) the
   * loss, all computed in C++ (with valueNorms, every head's value sizes: a third call); this layer
   * maps byte spans to string indices and adds the accessors.
   * With `reuse` (an earlier result of this model, given up by the caller), only the attention rows
   * from the first changed token on are copied out of the engine, into reuse's buffer (of a result
   * without maps, the thumbnails' cell rows from that token's on, into reuse's thumbnails).
   */
  run(text, options = {}) {
    const { reuse = null, ...rest } = options;
    const data = this.runData(text, rest, reuse ? reuseInfo(reuse, rest.ablate ?? []) : null);
    return makeResult(withPrevious(reuse, data));
  }

  /**
   * The plain data of a run (what run() adds accessors to). With `previous` (reuseInfo() of an
   * earlier result), attention comes as `attentionRows`: only rows [rowsFrom, T) of every head, in
   * blocks `stride` wide, for reuse.js's withPreviousRows(); when no row is shared it is a full
   * attentionAll with room to spare (stride > T). Without maps, thumbnails may come as
   * `thumbnailRows` from cell row `thumbnailRowsFrom` on (withPreviousThumbnails()), and `tokens` may
   * hold only the tokens from `tokensFrom` on (reuse.js's tokensAfter()). The worker sends this
   * across, and the page merges (withPrevious()).
   */
  runData(text, options = {}, previous = null) {
    const h = this.#live();
    const wellFormed = toWellFormed(text);
    const { ablate = [], topK: k = 10, allLogits = false, valueNorms = false, attention = 'all' } = options;
    const flat = flatAblate(ablate);
    if (!Number.isInteger(k) || k < 0) throw new Error(`topK must be a non-negative integer, got ${k}`);
    if (attention !== 'all' && attention !== 'thumbnails')
      throw new Error(`attention must be 'all' or 'thumbnails', got ${JSON.stringify(attention)}`);
    const maps = attention === 'all';
    const patch = runPatch(options.patch);
    this.#engineHoldsLastRun = false;
    this.#generating = null;
    const run = checked(this.#core, h.run(wellFormed, flat, !!allLogits, patch));
    this.#lastRun = patch ? null : { text: wellFormed, flat, allLogits: !!allLogits };
    this.#engineHoldsLastRun = !patch;
    const request = { maps, patch, topK: k, allLogits: !!allLogits, valueNorms, ablate, pull: options.pull };
    return runDataOf(this.#core, h, this.#info.config, wellFormed, run, request, previous);
  }

  /**
   * One head's computation on `text`, from the forward pass itself (the engine's Model.inspect):
   * { layer, head, text, T, headSize, nEmbd, tokens, q, k, v, scores, attention, z, out, valueNorm }
   * (plain data: the worker sends it across as it is), every
   * array a Float32Array, row-major: q, k, v and z are T x headSize, scores and attention T x T
   * (scores are q_i . k_j / sqrt(headSize), -Infinity where j > i), out is T x nEmbd (the head's
   * write z_i W_O^h), valueNorm T values (the size of v_j W_O^h). The text runs with the heads of
   * `ablate` switched off ([[layer, head], ...], as run()'s; none by default): heads off in earlier
   * layers change this head's input, and a switched-off head's `out` is 0 (it writes nothing).
   * Like run(), it leaves the text in the engine's cache, which a later run() of it with the same
   * ablate reuses. A layer or head out of range, or an empty text, throws the engine's Error naming
   * the range.
   */
  inspectHead(text, layer, head, { ablate = [] } = {}) {
    const h = this.#live();
    return inspectOf(this.#core, h, toWellFormed(text), layer, head, ablate, this.#info.config, () => {
      this.#engineHoldsLastRun = false; // the inspect run takes the engine's cache
      this.#generating = null;
    });
  }

  /**
   * Runs the model on `text` without building a result: the engine's key/value cache then holds
   * the text, and a later run() of a text that extends it only computes the new tokens (the result
   * equals a full run). For long texts run in steps, with progress and a chance to cancel in
   * between. Give it the ablate and allLogits options of that later run. Returns
   * { tokens, reusedTokens, droppedTokens }.
   */
  prefill(text, { ablate = [], allLogits = false } = {}) {
    const h = this.#live();
    // the same options as the run that follows: the engine reuses a cache made with the same ones
    this.#engineHoldsLastRun = false;
    this.#generating = null;
    return checked(this.#core, h.run(toWellFormed(text), ablate.flat(), !!allLogits, null));
  }

  /**
   * Allocates the engine's activations for `tokens` positions (at most the context) now, so that a
   * long text run in steps with prefill() never reallocates between steps (which drops the cache).
   * Returns true when it reallocated: the engine's cache is then empty.
   */
  reserve(tokens) {
    const h = this.#live();
    if (!Number.isInteger(tokens) || tokens < 1) throw new Error(`tokens must be a positive integer, got ${tokens}`);
    this.#generating = null; // a reallocation empties the cache
    return checked(this.#core, h.reserve(tokens));
  }

  /**
   * The model writes (see headscope.d.ts, GenerateOptions): `text`, then up to `maxTokens` tokens,
   * each drawn by the engine's sampling rules (cpp/include/headscope/generate.hpp) with its specified
   * random source, each one incremental step of the model on its cache. onToken hears each token with
   * the run result of the text so far; each such result takes the previous one's attention buffer
   * (only the new rows are copied out), so only the latest may be read. `signal` stops it before the
   * next token: it resolves with the tokens onToken heard, `stopped: true`.
   */
  async generate(text, options = {}) {
    const { onToken = null, reuse = null, signal = null } = options;
    const { ablate } = generateOptions(options);
    const previous = reuse ? reuseInfo(reuse, ablate) : null;
    let shown = previous ? reuse : null;
    // the result a token's rows go into is claimed: a run given it as `reuse` meanwhile copies its own
    let release = shown ? claimForUpdate(shown) : () => {};
    try {
      const value = await this.generateData(
        text,
        options,
        previous,
        onToken &&
          (async (step) => {
            if (signal?.aborted) return false; // stopped before onToken heard of it: not part of the value
            const result = makeResult(step.data.attentionRows ? withPreviousRows(shown, step.data) : step.data);
            release();
            shown = result;
            release = claimForUpdate(result);
            const { index, id, token, prob, distribution, ms } = step;
            await onToken({ index, id, token, prob, distribution, ms, result });
            return true;
          }),
      );
      delete value.cachedIds;
      return value;
    } finally {
      release();
    }
  }

  /**
   * generate()'s work, as plain data (what the Worker sends across): `onStep(step)` after each token
   * with { index, id, token, prob, distribution, data }, data a runData()-like result of the text so
   * far (attentionRows from the first row `previous`, a reuseInfo(), lacks); onStep returning false
   * drops that token from the value and stops. The value also holds `cachedIds`, the engine's last run.
   * `options.between()`, if given, is awaited at each pause between tokens.
   */
  async generateData(text, options = {}, previous = null, onStep = null) {
    const h = this.#live();
    const wellFormed = toWellFormed(text);
    const o = generateOptions(options);
    const core = this.#core;
    const gen = checked(core, core.generation(h, wellFormed, o.temperature, o.topK, o.topP, o.seed, o.ablate.flat()));
    this.#engineHoldsLastRun = false;
    this.#generating = gen;
    try {
      // the prompt's tokens as the generation's engine run split them (the same tokenizer)
      const prompt = tokenArrays(checked(core, h.tokenize(wellFormed)));
      const written = new WrittenText(
        new TextEncoder().encode(wellFormed),
        prompt.map((t) => ({ id: t.id, text: t.text, byteEnd: t.byteEnd })),
      );
      const { stopped, windowIds } = await writeTokens(core, gen, written, o, options, previous, onStep, {
        live: () => this.#live(),
        // another run took the engine since the last token: the generation restores its sequence
        take: (restore) => {
          if (this.#generating !== gen) {
            restore();
            this.#generating = gen;
          }
          this.#engineHoldsLastRun = false;
        },
        stepData: (h, ids, reusedTokens, previous) => this.#writtenData(h, written, ids, reusedTokens, previous, o),
        tokenText: (id) => this.tokenText(id),
      });
      const ids = written.ids.slice();
      return {
        text: written.text,
        ids,
        generatedIds: ids.slice(written.promptTokens),
        tokens: written.tokens(),
        promptTokens: written.promptTokens,
        stopped,
        cachedIds: Array.from(windowIds),
      };
    } finally {
      gen.delete();
      if (this.#generating === gen) this.#generating = null;
    }
  }

  // A generation step's result data, as runData() builds a run's: the engine holds the sequence's
  // window (`ids`); spans come from the written bytes; the rows before the first that `previous`
  // lacks are left out. Blocks always have room for more rows: the next token adds one.
  #writtenData(h, written, ids, reusedTokens, previous, { ablate, valueNorms }) {
    const T = ids.length;
    const { nPositions } = this.#info.config;
    const rowsFrom = previous ? firstChangedRow(previous, ids) : 0;
    const stride = rowsFrom > 0 ? previous.stride : roomyStride(T, nPositions);
    const out = checked(this.#core, h.results(10, false, rowsFrom, rowsFrom > 0 ? T - rowsFrom : stride, stride, 0));
    const droppedTokens = written.length - T;
    // past the context the window keeps the tokenizer's leading tokens (a BOS) and is cut after them,
    // unless the context is too small to hold them and a token of text (Model::Impl::cut)
    const prefix = this.#info.config.prefixTokens ?? 0;
    const keep = droppedTokens && prefix + 1 < nPositions ? Math.min(prefix, T) : 0;
    const tokens = keep
      ? [...written.tokens(0, keep), ...written.tokens(keep + droppedTokens)]
      : written.tokens(droppedTokens);
    const fields = { text: written.text, tokens, T, ablate, droppedTokens, reusedTokens, stride, rowsFrom };
    return plainData(out, fields, this.#info.config, {
      valueNorms: valueNorms ? checked(this.#core, h.valueNorms()) : null,
    });
  }

  /**
   * Which heads the model needs on `text` (the engine's HeadsMeasurement, heads.hpp; options and
   * report in headscope.d.ts), in chunks of about CHUNK_MS with a yield between them (awaiting what
   * onProgress returns), so a page can paint and `signal` can stop it (an AbortError). Other runs may
   * come between chunks. The engine's measurement is freed however it ends.
   */
  async measureHeads(text, options = {}) {
    const h = this.#live();
    return measureHeadsOf(this.#core, h, toWellFormed(text), options, {
      live: () => this.#live(),
      take: () => {
        this.#engineHoldsLastRun = false;
        this.#generating = null;
      },
    });
  }

  /** Which heads carry the answer between two texts (patching.js; the options and report in headscope.d.ts). */
  async patch(options) {
    return patchOf(this.#core, this.#live(), options, {
      live: () => this.#live(),
      take: () => {
        this.#engineHoldsLastRun = false;
        this.#generating = null;
      },
      tokenText: (id) => this.tokenText(id),
    });
  }

  /**
   * Direct logit attribution of the last run() at `position` for vocabulary entry `token` (the
   * engine's Model::logit_attribution; headscope.d.ts). A last run the engine no longer holds is
   * repeated first; with `of` ({ text, ablate }) that text's run is split (run first if needed).
   */
  logitAttribution(position, token, of = undefined) {
    const h = this.#live();
    integers([
      ['position', position],
      ['token', token],
    ]);
    if (of !== undefined) {
      if (typeof of?.text !== 'string')
        throw new Error('logitAttribution(position, token, { text, ablate }): text must be a string');
      const text = toWellFormed(of.text);
      const flat = flatAblate(of.ablate ?? []);
      const last = this.#lastRun;
      if (!last || last.text !== text || last.flat.length !== flat.length || last.flat.some((v, i) => v !== flat[i]))
        this.#runPlain(h, text, flat, false);
    }
    if (!this.#lastRun) throw new Error('logitAttribution() splits up the last run(): run a text first');
    if (!this.#engineHoldsLastRun) this.#runPlain(h, this.#lastRun.text, this.#lastRun.flat, this.#lastRun.allLogits);
    return attributionOf(this.#core, h, position, token, this.#info.config, this.#lastRun);
  }

  /** Why head (layer, head) gives query token `query` its score on `key` (explain.js; types in headscope.d.ts). */
  explainScore(text, layer, head, query, key, options = {}) {
    const h = this.#live();
    return explainOf(this.#core, h, toWellFormed(text), layer, head, query, key, options, {
      run: (t, flat) => (this.#runPlain(h, t, flat, false), h.tokenIds()),
      tokenText: (id) => this.tokenText(id),
    });
  }

  /** A tile of head (layer, head)'s attention map on `text`, pulled from the engine (maps.js; types in headscope.d.ts). */
  attentionTile(text, layer, head, options = {}) {
    const h = this.#live();
    return tileOf(this.#core, h, toWellFormed(text), layer, head, options, this.#plainRunner(h));
  }

  /** Every head's attention map on `text` as a max-pooled thumbnail (maps.js; types in headscope.d.ts). */
  attentionThumbnails(text, options = {}) {
    const h = this.#live();
    return thumbnailsOf(this.#core, h, toWellFormed(text), options, this.#plainRunner(h));
  }

  // runs a text as run() does, without a result, and gives its token count
  #plainRunner(h) {
    return { run: (t, flat) => (this.#runPlain(h, t, flat, false), h.tokenIds().length) };
  }

  // a run without a result (the engine's buffers only) that becomes the last run
  #runPlain(h, text, flat, allLogits) {
    this.#generating = null;
    this.#engineHoldsLastRun = false;
    checked(this.#core, h.run(text, flat, allLogits, null));
    this.#lastRun = { text, flat, allLogits };
    this.#engineHoldsLastRun = true;
  }

  /** Which heads work together, from the weights alone (explain.js; types in headscope.d.ts). */
  circuits(options) {
    return circuitsOf(this.#core, this.#live(), options);
  }

  /** Frees the model's wasm memory. Any later call throws. Safe to call twice. */
  dispose() {
    if (this.#handle) {
      this.#handle.delete();
      this.#handle = null;
    }
  }
}

/**
 * Starts a training run in the engine: a fresh model (a preset's shape, or `config`) or `init`'s
 * weights, on a task (`induction`, `text` with `text`), with the preset's recipe (default preset:
 * 'induction', the training page's default) under any option given. See headscope.d.ts.
 */
export async function createTrainer(options = {}) {
  // trainer.js is imported statically: a dynamic import would make bundlers split chunks, which
  // Vite's default (iife) worker format refuses
  const { core, threads } = await loadEngine(options?.threads);
  return new HeadscopeTrainer(core, options, (handle, name) => new HeadscopeModel(core, handle, name), threads);
}

/** The training page's presets: [{ name, label, description, spec }]. */
export async function trainingPresets() {
  return presetsFromCore(await currentCore());
}
