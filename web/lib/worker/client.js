// Runs on the page (the main thread): the client of the Web Worker that host.js runs in. Published
// as headscope-worker.js (the package's `headscope/worker` export), beside worker-thread.js (host.js)
// and worker-protocol.js (protocol.js): web/bundle.mjs, PUBLISHED. URLs below use those names.
// The same API as headscope.js, with the model in a Web Worker so the page stays smooth: every
// method returns a promise. Result buffers are transferred from the worker, not copied. The
// messages it sends are the table in protocol.js.
//
// Browsers start a Worker only from a same-origin URL. When this file comes from another origin
// (a CDN), the worker is started from a same-origin `blob:` module that imports worker-thread.js by
// its absolute URL; worker-thread.js then resolves the .wasm and the shipped models from its own URL.
import { shippedModels } from '../headscope.js';
import { engineThreads } from '../wasm.js';
import { makeResult } from '../result.js';
import { reuseInfo, claimForUpdate, withPreviousRows, withPrevious } from '../reuse.js';
import { WorkerChannel, WorkerStartError } from './protocol.js';
import { generateOptions } from '../generation.js';
import { loadOnPageThread } from './page-thread.js';

export { WorkerStartError } from './protocol.js';

function abortError(message = 'the run was cancelled') {
  const e = new Error(message);
  e.name = 'AbortError';
  return e;
}

class WorkerModel {
  #channel;
  #info = null;

  constructor(worker, startRequirement) {
    this.#channel = new WorkerChannel(worker, startRequirement);
  }

  started() {
    return this.#channel.started();
  }
  call(...args) {
    return this.#channel.call(...args);
  }

  async _load(source, { onProgress, transferBuffers, weights, threads, attentionMaps, memoryLimit, activations }) {
    await this.started();
    // buffers given as the model source are copied to the worker, or with transferBuffers moved
    // (no second copy of a checkpoint of hundreds of MB; the caller's buffers become empty)
    const transfer =
      transferBuffers && source && typeof source === 'object' && !(source instanceof URL)
        ? [
            ...new Set(
              Object.values(source)
                .map((v) => (ArrayBuffer.isView(v) ? v.buffer : v))
                .filter((v) => v instanceof ArrayBuffer),
            ),
          ]
        : [];
    this.#info = await this.call(
      'load',
      { source: absoluteSource(source), weights, threads, attentionMaps, memoryLimit, activations },
      onProgress,
      transfer,
    );
    return this;
  }

  /** Where the model runs: 'worker'. */
  get thread() {
    return 'worker';
  }

  /** Configuration, parameter count and name of the loaded model. */
  get info() {
    if (this.#channel.closed) throw new Error('this headscope model was disposed; load it again');
    return this.#info;
  }
  /** The threads the engine splits this model's runs over, in the worker. */
  get threads() {
    return this.info.threads;
  }
  get disposed() {
    return this.#channel.closed;
  }

  /**
   * Runs the model on `text`; resolves to the same result object as HeadscopeModel.run. A long run
   * (about 200 ms of work or more) goes in steps: `onProgress({ tokens, total })` hears about each,
   * and aborting `signal` stops it between steps (the promise rejects with an AbortError).
   */
  async run(text, { onProgress, signal, ...options } = {}) {
    if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
    if (signal?.aborted) throw abortError();
    const { reuse = null, ...rest } = options;
    // the worker gets the earlier result's token ids, not its buffer: it sends back only the rows
    // that changed, and they are written into that buffer here
    const previous = reuse && !rest.patch ? reuseInfo(reuse, rest.ablate ?? []) : null;
    const release = previous ? claimForUpdate(reuse) : () => {};
    try {
      // onScreen: this text replaces the result on screen; the worker keeps its cache for it
      const data = await this.call('run', { text, options: rest, previous, onScreen: !!reuse }, onProgress, [], signal);
      // cancelled meanwhile (a newer text, another model): the result on screen stays as it was
      if (signal?.aborted) throw abortError();
      return makeResult(withPrevious(reuse, data));
    } finally {
      release();
    }
  }

  /**
   * As HeadscopeModel.inspectHead, in the worker: one head's insides on `text` (with `ablate`'s
   * heads off), its arrays transferred. It leaves the text in the engine's cache (as run() does);
   * results on screen are not touched, so a later run({ reuse }) still patches the right rows.
   */
  async inspectHead(text, layer, head, { ablate = [] } = {}) {
    if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
    return this.call('inspectHead', { text, layer, head, options: { ablate } });
  }

  /**
   * As HeadscopeModel.measureHeads, in the worker: `onProgress({ fraction })` after each chunk, and
   * aborting `signal` stops it between chunks (an AbortError). The page's runs, inspectHead() and
   * logitAttribution() sent meanwhile are answered between its chunks, not after it.
   */
  async measureHeads(text, { onProgress, signal, ...options } = {}) {
    if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
    if (signal?.aborted) throw abortError('the head measurement was cancelled');
    return this.call('measureHeads', { text, options }, onProgress, [], signal);
  }

  /**
   * As HeadscopeModel.patch, in the worker: onProgress({ fraction, report }) with the attribution map
   * first and the exact scores as they arrive; aborting `signal` stops it between chunks (an AbortError).
   */
  async patch(options) {
    if (options === null || typeof options !== 'object')
      throw new Error('patch({ clean, corrupted, ... }): the options must be an object');
    const { onProgress, signal, ...rest } = options;
    if (signal?.aborted) throw abortError('the patching was cancelled');
    return this.call('patch', { options: rest }, onProgress, [], signal);
  }

  /** As HeadscopeModel.explainScore, in the worker (its arrays transferred). */
  explainScore(text, layer, head, query, key, options = {}) {
    return this.call('explainScore', { text, layer, head, query, key, options });
  }

  /** As HeadscopeModel.circuits, in the worker (its arrays transferred). */
  circuits(options = {}) {
    return this.call('circuits', { options });
  }

  /** As HeadscopeModel.memory, in the worker. */
  memory() {
    return this.call('memory', {});
  }

  /** As HeadscopeModel.attentionTile, in the worker (its values transferred). */
  attentionTile(text, layer, head, options = {}) {
    return this.call('attentionTile', { text, layer, head, options });
  }

  /** As HeadscopeModel.attentionThumbnails, in the worker (its values transferred). */
  attentionThumbnails(text, options = {}) {
    return this.call('attentionThumbnails', { text, options });
  }

  /** As HeadscopeModel.logitAttribution: the last run()'s logit (or `of`'s) split into its parts, in the worker. */
  logitAttribution(position, token, of = undefined) {
    return this.call('logitAttribution', { position, token, of });
  }

  /**
   * As HeadscopeModel.generate, in the worker. With onToken, each token's result arrives as progress
   * (only its new attention rows), and the worker waits for onToken (and the promise it returns)
   * before the next token, answering the page's runs, inspectHead() and tokenText() meanwhile; a
   * token that arrives after `signal` aborted is not handed to onToken and not part of the value.
   */
  async generate(text, { onToken, signal, reuse = null, ...options } = {}) {
    if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
    const { ablate } = generateOptions(options); // bad options fail here, before any message
    let shown = reuse && reuseInfo(reuse, ablate) ? reuse : null;
    const previous = shown ? reuseInfo(shown, ablate) : null;
    let release = shown ? claimForUpdate(shown) : () => {};
    let failure = null;
    let heard = Promise.resolve(); // the tokens in order: each result takes the previous one's buffer
    const onProgress = onToken
      ? (p) => {
          heard = heard.then(async () => {
            let kept = false;
            if (!signal?.aborted && !failure) {
              const result = makeResult(p.data.attentionRows ? withPreviousRows(shown, p.data) : p.data);
              release();
              shown = result;
              release = claimForUpdate(result);
              kept = true;
              try {
                await onToken({
                  index: p.index,
                  id: p.id,
                  token: p.token,
                  prob: p.prob,
                  distribution: p.distribution,
                  ms: p.ms,
                  result,
                });
              } catch (e) {
                failure = e;
              }
            }
            this.#channel.notify('generateAck', { id: p.request, kept, stop: !!failure });
          });
        }
      : undefined;
    try {
      const value = await this.call(
        'generate',
        { text, options, previous, acks: !!onToken, aborted: !!signal?.aborted },
        onProgress,
        [],
        signal,
      );
      await heard;
      if (failure) throw failure;
      return value;
    } catch (e) {
      if (e?.name !== 'AbortError' || !signal?.aborted || failure) throw e;
      // stopped while queued behind other requests, before it began: nothing was written
      const tokens = await this.tokenize(text);
      const ids = tokens.map((t) => t.id);
      return { text, ids, generatedIds: [], tokens, promptTokens: tokens.length, stopped: true };
    } finally {
      release();
    }
  }

  tokenize(text) {
    return this.call('tokenize', { text });
  }
  tokenText(id) {
    return this.call('tokenText', { id });
  }
  /** What the engine's cache holds for the text on screen (see headscope-worker.d.ts). */
  cacheState() {
    return this.call('cacheState', {});
  }

  /** Frees the model and stops the worker. Later calls reject. */
  dispose() {
    this.#channel.close('model');
  }
}

// The worker resolves relative URLs against its own script, so a folder URL the page wrote
// relative to itself is made absolute here, against the page.
function absoluteSource(source) {
  if (source instanceof URL) return source.href;
  if (typeof source !== 'string' || shippedModels.includes(source)) return source;
  const base = globalThis.document?.baseURI ?? globalThis.location?.href;
  try {
    return new URL(source, base).href;
  } catch {
    return source; // not a URL: the worker's loadModel names the problem
  }
}

/**
 * Starts worker-thread.js: directly when it is same-origin, else through a same-origin blob: module.
 * `requirement` says what the browser needs for that, for the message when it refuses: browsers
 * report a refused worker as a bare error event.
 */
function startWorker() {
  if (typeof location === 'undefined' || new URL(import.meta.url).origin === location.origin) {
    const requirement =
      "worker-thread.js could not be started (the page's Content-Security-Policy must allow 'self' in worker-src)";
    // this literal form is what bundlers (Vite, webpack 5) recognise, to bundle and emit the worker
    return {
      worker: new Worker(new URL('./worker-thread.js', import.meta.url), { type: 'module' }),
      release() {},
      requirement,
    };
  }
  // Not a literal: bundlers would inline a small file as a data: URL here, which no worker can import.
  const url = new URL(WORKER_FILE, import.meta.url);
  // a module worker fetches its imports as worker scripts: worker-src covers the CDN's files too
  const requirement =
    `${url.href} could not be started from this page (the page's Content-Security-Policy ` +
    `must allow blob: and ${url.origin} in worker-src, and ${url.origin} must send Access-Control-Allow-Origin)`;
  const bootstrap = new Blob([`import ${JSON.stringify(url.href)};\n`], { type: 'text/javascript' });
  const blobUrl = URL.createObjectURL(bootstrap);
  try {
    return {
      worker: new Worker(blobUrl, { type: 'module' }),
      release: () => URL.revokeObjectURL(blobUrl),
      requirement,
    };
  } catch (e) {
    URL.revokeObjectURL(blobUrl);
    throw new WorkerStartError(`${e.message}; ${requirement}`);
  }
}

const WORKER_FILE = './worker-thread.js';

/**
 * Loads a model inside a new module Web Worker. `source` and `onProgress` are as for loadModel();
 * a source given as buffers is copied to the worker (structured clone).
 *
 * With `pageThreadFallback: true`, a worker that cannot be started (a Content-Security-Policy
 * without blob: or 'self' in worker-src, a worker script that cannot be read) is not an error:
 * the model is loaded on the page thread instead, behind the same promise API, and the reason is
 * logged once per page with console.info.
 */
export async function loadModelInWorker(source, options = {}) {
  // resolved here, so that a bad value is the caller's Error and a page without threads says so on
  // its own console
  const threads = engineThreads(options.threads, { forWorker: true });
  let model;
  let release = () => {};
  try {
    let worker = options.worker;
    let requirement;
    if (!worker) ({ worker, release, requirement } = startWorker());
    model = new WorkerModel(worker, requirement);
    await model.started();
  } catch (e) {
    model?.dispose();
    release();
    const startError = e instanceof WorkerStartError ? e : new WorkerStartError(e?.message ?? String(e));
    if (!options.pageThreadFallback) throw startError;
    return loadOnPageThread(source, options, startError);
  }
  release();
  try {
    return await model._load(source, { ...options, threads });
  } catch (e) {
    model.dispose();
    throw e;
  }
}

/**
 * A training run in its own Web Worker (createTrainer() of headscope.js, behind promises). train()
 * steps in chunks of about a frame, so progress arrives steadily and a pause (aborting its signal)
 * takes effect after the step in progress.
 */
class WorkerTrainer {
  #channel;
  #spec = null;
  #stepsDone = 0;
  #threads = 1;

  constructor(channel) {
    this.#channel = channel;
    channel.what = 'trainer';
  }

  async _create(options) {
    const threads = engineThreads(options?.threads, { forWorker: true });
    ({
      spec: this.#spec,
      stepsDone: this.#stepsDone,
      threads: this.#threads,
    } = await this.#channel.call('trainerCreate', { options: { ...options, threads } }));
    return this;
  }

  /** The run's options after its preset was applied. */
  get spec() {
    return this.#spec;
  }
  /** The threads forward and backward run on, in the worker. */
  get threads() {
    return this.#threads;
  }
  /** Steps taken, as of the last reply or progress message. */
  get stepsDone() {
    return this.#stepsDone;
  }
  get disposed() {
    return this.#channel.closed;
  }

  /**
   * Trains until `steps` more steps are done or `signal` aborts (then it resolves early, with
   * stopped: true; the run can continue with another train()). onProgress hears after every chunk:
   * { stepsDone, losses (the chunk's), lr, tokensPerSecond, probe? } with a probe (TrainerProbe)
   * every `probeEvery` steps and at the end. A diverging run rejects; its weights stay those before
   * the failed step.
   */
  async train({ steps, probeEvery = 25, onProgress, signal } = {}) {
    if (!Number.isInteger(steps) || steps < 1)
      throw new Error(`train({ steps }) needs a whole number of steps >= 1, got ${steps}`);
    if (signal?.aborted) return { stepsDone: this.#stepsDone, stopped: true };
    const done = await this.#channel.call(
      'trainerTrain',
      { steps, probeEvery },
      (p) => {
        this.#stepsDone = p.stepsDone;
        onProgress?.(p);
      },
      [],
      signal,
    );
    this.#stepsDone = done.stepsDone;
    return done;
  }

  /** step(n) or step({ ids }) as HeadscopeTrainer.step, in the worker. */
  async step(arg = 1) {
    const { losses, stepsDone } = await this.#channel.call('trainerStep', { arg });
    this.#stepsDone = stepsDone;
    return losses;
  }

  probe() {
    return this.#channel.call('trainerProbe', {});
  }
  /** Runs the trained model (its weights now) on `text`; resolves to a RunResult. */
  async run(text, options = {}) {
    return makeResult(await this.#channel.call('trainerRun', { text, options }));
  }
  export() {
    return this.#channel.call('trainerExport', {});
  }
  /** Stops the worker and frees the run. */
  dispose() {
    this.#channel.close('trainer');
  }
}

/** Starts a training run (createTrainer's options) in a new module Web Worker. */
export async function createTrainerInWorker(options = {}, { worker } = {}) {
  let release = () => {};
  let requirement;
  if (!worker) ({ worker, release, requirement } = startWorker());
  const channel = new WorkerChannel(worker, requirement);
  try {
    await channel.started();
  } finally {
    release();
  }
  try {
    return await new WorkerTrainer(channel)._create(options);
  } catch (e) {
    channel.close('trainer');
    throw e;
  }
}
