// Training from JavaScript: adapts the engine's TrainingRun (cpp/include/headscope/training_run.hpp,
// bound in cpp/bindings/embind.cpp) to the API in headscope.d.ts. headscope.js's createTrainer()
// hands it the loaded module; the Worker's host trains in chunks with trainInChunks(). All numerics
// happen in C++; this layer maps option names, checks their shape and copies arrays.

import { checked } from './wasm.js';
import { tokenizerKind } from './files.js';
import { CHUNK_MS, performanceNow, yieldToEventLoop } from './generation.js';

// option name here -> RunSpec JSON key (training_run.hpp)
const SPEC_KEYS = {
  task: 'task',
  batchSize: 'batch_size',
  seqLen: 'seq_len',
  steps: 'steps',
  optimizer: 'optimizer',
  lr: 'lr',
  weightDecay: 'weight_decay',
  clip: 'clip',
  warmup: 'warmup',
  schedule: 'schedule',
  seed: 'seed',
  minPeriod: 'min_period',
  maxPeriod: 'max_period',
  probePeriod: 'probe_period',
};
const SHAPE_KEYS = {
  nLayer: 'n_layer',
  nHead: 'n_head',
  nEmbd: 'n_embd',
  nPositions: 'n_positions',
  vocabSize: 'vocab_size',
};
const OTHER_KEYS = new Set(['preset', 'config', 'init', 'text', 'threads']);

function invert(map) {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [v, k]));
}

/** A RunSpec's JSON (snake_case) as the options createTrainer() takes (camelCase). */
export function specFromJson(json) {
  const raw = typeof json === 'string' ? JSON.parse(json) : json;
  const keys = invert(SPEC_KEYS);
  const shapeKeys = invert(SHAPE_KEYS);
  const spec = {};
  for (const [k, v] of Object.entries(raw)) {
    if (k === 'shape') spec.config = Object.fromEntries(Object.entries(v).map(([sk, sv]) => [shapeKeys[sk] ?? sk, sv]));
    else spec[keys[k] ?? k] = v;
  }
  return spec;
}

/** createTrainer()'s options as RunSpec JSON (the preset is applied in C++, under these). */
export function specToJson(options) {
  const out = {};
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined) continue;
    if (k in SPEC_KEYS) out[SPEC_KEYS[k]] = v;
    else if (k === 'config') {
      if (typeof v !== 'object' || v === null)
        throw new Error('config must be an object { nLayer, nHead, nEmbd, nPositions, vocabSize }');
      out.shape = {};
      for (const [sk, sv] of Object.entries(v)) {
        if (!(sk in SHAPE_KEYS))
          throw new Error(`unknown config key "${sk}" (expected ${Object.keys(SHAPE_KEYS).join(', ')})`);
        out.shape[SHAPE_KEYS[sk]] = sv;
      }
    } else if (!OTHER_KEYS.has(k)) {
      throw new Error(
        `unknown trainer option "${k}" (expected ${[...OTHER_KEYS, ...Object.keys(SPEC_KEYS)].join(', ')})`,
      );
    }
  }
  return JSON.stringify(out);
}

/** The page's presets: [{ name, label, description, spec }] with spec in createTrainer()'s option names. */
export function presetsFromCore(core) {
  return JSON.parse(core.trainingPresets()).map((p) => ({ ...p, spec: specFromJson(p.spec) }));
}

function initFiles(init) {
  if (init === undefined || init === null) return null;
  if (typeof init !== 'object')
    throw new Error(
      'init must be { config, weights, vocab, merges } or { config, weights, tokenizer } (what export() returns)',
    );
  const text = (v, what) => {
    if (typeof v === 'string') return v;
    if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return new TextDecoder().decode(v);
    throw new Error(`init.${what} must be a string or bytes`);
  };
  const w = init.weights;
  if (!(w instanceof ArrayBuffer || ArrayBuffer.isView(w)))
    throw new Error('init.weights must be an ArrayBuffer or typed array');
  const weights =
    w instanceof Uint8Array
      ? w
      : ArrayBuffer.isView(w)
        ? new Uint8Array(w.buffer, w.byteOffset, w.byteLength)
        : new Uint8Array(w);
  const config = text(init.config, 'config');
  // a Llama-family checkpoint carries tokenizer.json (config.json's model_type says which the engine reads)
  if (tokenizerKind(config) === 'tokenizer') {
    if (!('tokenizer' in init))
      throw new Error('init: a Llama-family model needs its tokenizer ({ config, weights, tokenizer })');
    return { config, weights, tokenizer: text(init.tokenizer, 'tokenizer') };
  }
  return { config, weights, vocab: text(init.vocab, 'vocab'), merges: text(init.merges, 'merges') };
}

export class HeadscopeTrainer {
  #core;
  #run;
  #wrapModel;
  #spec;
  #threads = 1;

  /**
   * Use createTrainer() from headscope.js. wrapModel(handle) turns an engine Model into a
   * HeadscopeModel; threads: the engine's threads for forward and backward.
   */
  constructor(core, options, wrapModel, threads = 1) {
    if (options === null || typeof options !== 'object') throw new Error('createTrainer() takes an options object');
    const { preset = 'induction', text } = options;
    if (typeof preset !== 'string') throw new Error('preset must be a preset name');
    this.#core = core;
    this.#wrapModel = wrapModel;
    this.#run = checked(core, core.createTrainingRun(preset, specToJson(options), initFiles(options.init)));
    this.#spec = Object.freeze(specFromJson(this.#run.spec()));
    try {
      this.#threads = checked(core, this.#run.setThreads(threads));
      if (text !== undefined) checked(core, this.#run.setText(text));
    } catch (e) {
      this.dispose();
      throw e;
    }
  }

  #live() {
    if (!this.#run) throw new Error('this trainer was disposed');
    return this.#run;
  }

  /** The run's options after the preset and the given options were applied. */
  get spec() {
    this.#live();
    return this.#spec;
  }
  /** The threads forward and backward run on. */
  get threads() {
    this.#live();
    return this.#threads;
  }
  /** Optimizer steps taken so far. */
  get stepsDone() {
    return this.#live().stepsDone();
  }
  /** Bytes the engine holds for this run (weights, gradients, optimizer state, activations). */
  get bytes() {
    return this.#live().bytes();
  }

  /**
   * step(n): n optimizer steps on the task's batches; step({ ids }): one step on an explicit batch of
   * rows of T+1 token ids (predicting ids[1..T] from ids[0..T-1]). Returns the losses, one per step,
   * each the mean cross-entropy the step's gradients came from.
   */
  step(arg = 1) {
    const run = this.#live();
    if (typeof arg === 'number') {
      if (!Number.isInteger(arg) || arg < 1) throw new Error(`step(n) needs a whole number n >= 1, got ${arg}`);
      return checked(this.#core, run.steps(arg));
    }
    const rows = arg?.ids;
    if (!Array.isArray(rows) || rows.length === 0 || !rows.every((r) => Array.isArray(r) || ArrayBuffer.isView(r)))
      throw new Error('step({ ids }) needs ids as a non-empty array of rows of token ids');
    const n = rows[0].length;
    for (let r = 0; r < rows.length; r++)
      if (rows[r].length !== n) throw new Error(`ragged batch: row ${r} has ${rows[r].length} ids, row 0 has ${n}`);
    const flat = new Int32Array(rows.length * n);
    rows.forEach((r, i) => {
      for (let t = 0; t < n; t++) {
        const id = r[t];
        if (!Number.isInteger(id)) throw new Error(`row ${i}, position ${t}: ${id} is not a token id`);
        flat[i * n + t] = id;
      }
    });
    return Float32Array.of(checked(this.#core, run.stepOn(flat, rows.length)));
  }

  /** The learning rate of 0-based step `step` under the run's schedule. */
  learningRate(step) {
    return this.#live().learningRate(step);
  }

  /**
   * Every head's previous-token and induction scores on the probe (sequences of distinct random
   * tokens repeated twice, at a period the task never trains on), and the probe's first sequence
   * with its attention (nLayer x nHead x T x T), for drawing the heads.
   */
  probe() {
    const p = checked(this.#core, this.#live().probe());
    const { nLayer, nHead } = this.#spec.config;
    return { ...p, nLayer, nHead, T: p.ids.length };
  }

  /** A model with the current weights, for run() between steps (dispose it when done). */
  model() {
    return this.#wrapModel(checked(this.#core, this.#live().model()), 'trained');
  }

  /** The files of a Hugging Face folder with the current weights (F32), GPT-2's four or a Llama-family
   *  model's { config, weights, tokenizer }: loadModel() accepts them. */
  export() {
    return checked(this.#core, this.#live().exportFiles());
  }

  /** Frees the run's memory. Later calls throw. Safe to call twice. */
  dispose() {
    if (this.#run) {
      this.#run.delete();
      this.#run = null;
    }
  }
}

// The head measurement (HeadscopeModel.measureHeads()) runs on the engine's training side (a
// training engine holding a copy of the weights); these set its defaults and shape its ends.

// The greedy search's defaults in the browser: exact up to 16 heads (the head-count family), above
// it 4 candidates a step by gate gradients. On headscope-base's heldout.txt in Chromium here that
// took 29 s against 45 s exact (a machine shared with other work), half the heads off +0.047 nats
// against +0.032 exact and +0.350 in random orders (compare.html's "How many heads")
export const MEASURE_DEFAULTS = Object.freeze({ exactLimit: 16, candidates: 4 });

/**
 * HeadscopeModel.measureHeads()'s work on the engine's HeadsMeasurement for the model handle `h`
 * and the well-formed `text`, in chunks of about `chunkMs` (see measureHeads() in headscope.js).
 * `model` is what it needs of the model: live() (its handle; throws once disposed) and take()
 * (before each chunk: the measurement's runs replace the engine's last run).
 */
export async function measureHeadsOf(core, h, text, options, model) {
  const {
    randomOrders = 8,
    seed = 0,
    exactLimit = MEASURE_DEFAULTS.exactLimit,
    candidates = MEASURE_DEFAULTS.candidates,
    onProgress,
    signal,
    chunkMs = CHUNK_MS,
  } = options;
  // embind would truncate 2.5 or refuse '2' with a TypeError of its own: a message naming the option instead
  for (const [name, v] of [
    ['randomOrders', randomOrders],
    ['seed', seed],
    ['exactLimit', exactLimit],
    ['candidates', candidates],
  ])
    if (!Number.isInteger(v) || v < 0)
      throw new Error(`${name} must be a whole number >= 0, got ${typeof v === 'number' ? v : typeof v}`);
  if (signal?.aborted) throw cancelledMeasurement();
  const measurement = checked(core, core.measureHeads(h, text, randomOrders, seed, exactLimit, candidates));
  try {
    for (;;) {
      const t0 = performanceNow();
      let done;
      model.take();
      // one unit of work at a time (a model run, or a gradient: 3), until the chunk's time is up
      do done = checked(core, measurement.step(1));
      while (!done && performanceNow() - t0 < chunkMs);
      await onProgress?.({ fraction: done ? 1 : measurement.progress() });
      // disposed meanwhile (in onProgress, or between chunks): the measurement and the report's
      // token count refer to the model, so it stops here
      model.live();
      if (done) break;
      await yieldToEventLoop();
      if (signal?.aborted) throw cancelledMeasurement();
      model.live();
    }
    const report = measurement.report();
    // a text longer than the context is cut at the start as run() cuts it (in steps)
    const droppedTokens = checked(core, h.tokenize(text)).tokenIds.length - report.tokens;
    return headsReport(report, { randomOrders, seed, exactLimit, candidates, droppedTokens });
  } finally {
    measurement.delete();
  }
}

/** The Error a cancelled head measurement rejects with (name 'AbortError'). */
export function cancelledMeasurement() {
  const e = new Error('the head measurement was cancelled');
  e.name = 'AbortError';
  return e;
}

// The engine's report as the API's: the order as [layer, head] pairs, the options it ran with
export function headsReport(r, extra) {
  const order = [];
  for (let i = 0; i < r.order.length; i += 2) order.push([r.order[i], r.order[i + 1]]);
  return {
    nLayer: r.nLayer,
    nHead: r.nHead,
    tokens: r.tokens,
    method: r.method,
    loss: r.loss,
    gateGrad: r.gateGrad,
    ablationDelta: r.ablationDelta,
    order,
    prunedLoss: r.prunedLoss,
    randomLossMean: r.randomLossMean,
    randomLossLow: r.randomLossLow,
    randomLossHigh: r.randomLossHigh,
    ...extra,
  };
}

/** A training probe's value and its typed arrays, moved to the page, not copied. */
export function probeForTransfer(p) {
  return { value: p, transfer: [p.previous.buffer, p.induction.buffer, p.attention.buffer, p.ids.buffer] };
}

/**
 * The Worker's train({ steps, probeEvery }) of `trainer`: chunks of steps of about CHUNK_MS each,
 * `progress(progress, transfer)` after each (its losses, learning rate and speed; a probe every
 * probeEvery steps and at the end), and `await stop()` between chunks, which ends it early when true
 * (the page's pause). Resolves to { stepsDone, stopped }.
 */
export async function trainInChunks(trainer, { steps, probeEvery }, { progress: post, stop }) {
  const target = trainer.stepsDone + steps;
  let lastProbe = trainer.stepsDone;
  const tokensPerStep = trainer.spec.batchSize * trainer.spec.seqLen;
  let stopped = false;
  while (trainer.stepsDone < target) {
    const t0 = performanceNow();
    const losses = [];
    do {
      losses.push(trainer.step(1)[0]);
    } while (trainer.stepsDone < target && performanceNow() - t0 < CHUNK_MS);
    const seconds = (performanceNow() - t0) / 1000;
    const progress = {
      stepsDone: trainer.stepsDone,
      losses: Float32Array.from(losses),
      lr: trainer.learningRate(trainer.stepsDone - 1),
      tokensPerSecond: seconds > 0 ? (losses.length * tokensPerStep) / seconds : 0,
    };
    const transfer = [progress.losses.buffer];
    if (trainer.stepsDone - lastProbe >= probeEvery || trainer.stepsDone >= target) {
      const { value, transfer: t } = probeForTransfer(trainer.probe());
      progress.probe = value;
      transfer.push(...t);
      lastProbe = trainer.stepsDone;
    }
    post(progress, transfer);
    if (await stop()) {
      stopped = true;
      break;
    }
  }
  return { stepsDone: trainer.stepsDone, stopped };
}
