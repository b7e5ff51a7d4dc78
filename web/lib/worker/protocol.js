// Imported on both sides of the Web Worker (published as worker-protocol.js): the messages between
// the page (client.js, published as headscope-worker.js) and the worker (host.js, published as
// worker-thread.js), in one table. The worker answers a method only if it is listed
// here, in the way listed here; the page sends only methods listed here.
// WorkerChannel, at the end, is the page's end of it (client.js): it sends requests by this table.
//
// Page -> worker: { id, method, args }. Requests are numbered in order from 1 (the worker relies on
// it to forget cancels); a cancel is sent as id 0 and names the request in args.id.
// Worker -> page:
//   { ready: true }                       once, when worker-thread.js and its imports have loaded
//   { id, progress }                      any number, before the reply, for methods with `progress`
//   { id, ok: true, value }               the reply (its typed arrays transferred, not copied)
//   { id, ok: false, error, aborted }     the failure: the engine's message; aborted for a cancelled run

/** Answered one at a time, in the order they arrived: each uses the model or the trainer. */
export const QUEUED = 'queued';
/** Answered on arrival, between the steps of whatever runs: it reads state only, so it neither
 *  waits for a long run nor interrupts the worker's restore of the text on screen. */
export const AT_ONCE = 'at once';
/** Acted on at arrival, never answered. */
export const NO_REPLY = 'no reply';

// One row per message. `needs`: what must be loaded in the worker first ('model' | 'trainer' |
// null), else the reply is an error saying so. `args` and `value`: what the request carries and what
// the reply carries. `progress`: what progress messages carry, for methods that send them.
// `cancellable`: a cancel message stops it between its steps (a run rejects with an AbortError, a
// training run resolves with stopped: true). `betweenChunks`: while a head measurement runs, such
// requests at the front of the queue are answered between its chunks (they use the model without
// replacing it), so the page's runs do not wait for the whole measurement.
export const MESSAGES = Object.freeze({
  load: {
    handling: QUEUED,
    needs: null,
    args: '{ source, weights, threads, attentionMaps }',
    value: 'ModelInfo',
    progress: '{ loaded, total } (bytes)',
  },
  run: {
    handling: QUEUED,
    needs: 'model',
    args: '{ text, options, previous: reuseInfo() | null, onScreen }',
    value:
      'HeadscopeModel.runData(): the result without its methods (attentionRows, and tokens from tokensFrom on, when previous allowed)',
    progress: '{ tokens, total } after each step of a long run',
    cancellable: true,
    betweenChunks: true,
  },
  inspectHead: {
    handling: QUEUED,
    needs: 'model',
    args: '{ text, layer, head, options: { ablate } }',
    value: "HeadscopeModel.inspectHead(): one head's insides (its eight typed arrays transferred)",
    betweenChunks: true,
  },
  tokenize: { handling: QUEUED, needs: 'model', args: '{ text }', value: 'Token[]', betweenChunks: true },
  tokenText: { handling: QUEUED, needs: 'model', args: '{ id }', value: 'string', betweenChunks: true },
  measureHeads: {
    handling: QUEUED,
    needs: 'model',
    args: '{ text, options: HeadsOptions without onProgress and signal }',
    value: 'HeadscopeModel.measureHeads(): HeadsReport (its typed arrays transferred)',
    progress: '{ fraction } after each chunk of model runs',
    cancellable: true,
  },
  patch: {
    handling: QUEUED,
    needs: 'model',
    args: '{ options: PatchOptions without onProgress and signal }',
    value: 'HeadscopeModel.patch(): PatchReport (its typed arrays transferred)',
    progress: '{ fraction, report: PatchReport so far } after the attribution map and after each chunk of patched runs',
    cancellable: true,
  },
  explainScore: {
    handling: QUEUED,
    needs: 'model',
    args: '{ text, layer, head, query, key, options: { ablate, versus, token } }',
    value: 'HeadscopeModel.explainScore(): ScoreSplit (its typed arrays transferred)',
    betweenChunks: true,
  },
  circuits: {
    handling: QUEUED,
    needs: 'model',
    args: '{ options: { seeds } }',
    value: 'HeadscopeModel.circuits(): Circuits (its typed arrays transferred)',
  },
  memory: {
    handling: QUEUED,
    needs: 'model',
    args: '{}',
    value: 'HeadscopeModel.memory(): ModelMemory',
  },
  attentionTile: {
    handling: QUEUED,
    needs: 'model',
    args: '{ text, layer, head, options: { rows, columns, bin, ablate } }',
    value: 'HeadscopeModel.attentionTile(): AttentionTile (its values transferred)',
    betweenChunks: true,
  },
  attentionThumbnails: {
    handling: QUEUED,
    needs: 'model',
    args: '{ text, options: { size, ablate } }',
    value: 'HeadscopeModel.attentionThumbnails(): AttentionThumbnails (its values transferred)',
    betweenChunks: true,
  },
  logitAttribution: {
    handling: QUEUED,
    needs: 'model',
    args: '{ position, token, of: { text, ablate } | undefined }',
    value: 'HeadscopeModel.logitAttribution() of the last run message, or of `of` (its typed arrays transferred)',
    betweenChunks: true,
  },
  generate: {
    handling: QUEUED,
    needs: 'model',
    args: '{ text, options: GenerateOptions without onToken, reuse and signal, previous: reuseInfo() | null, acks, aborted }',
    value: "HeadscopeModel.generate()'s value (GenerateResult)",
    // with acks (the page has onToken) the worker waits for the page's generateAck of each token,
    // answering betweenChunks requests meanwhile: onToken's pace is the writing's, and a token the
    // page no longer wanted (it stopped meanwhile) is not part of the value
    progress:
      '{ request, index, id, token, prob, distribution, data: runData() of the text so far } after each token, with acks only',
    cancellable: true,
  },
  generateAck: {
    handling: NO_REPLY,
    needs: null,
    args: '{ id of the generate request, kept: onToken heard the token, stop }',
    value: null,
  },
  dispose: { handling: QUEUED, needs: 'model', args: '{}', value: 'true' },
  cacheState: { handling: AT_ONCE, needs: 'model', args: '{}', value: 'CacheState' },
  cancel: { handling: NO_REPLY, needs: null, args: '{ id } of the request to stop', value: null },
  trainerCreate: { handling: QUEUED, needs: null, args: '{ options }', value: '{ spec, stepsDone, threads }' },
  trainerTrain: {
    handling: QUEUED,
    needs: 'trainer',
    args: '{ steps, probeEvery }',
    value: '{ stepsDone, stopped }',
    progress: '{ stepsDone, losses, lr, tokensPerSecond, probe? } after each chunk of steps',
    cancellable: true,
  },
  trainerStep: { handling: QUEUED, needs: 'trainer', args: '{ arg: n | { ids } }', value: '{ losses, stepsDone }' },
  trainerProbe: { handling: QUEUED, needs: 'trainer', args: '{}', value: 'TrainerProbe' },
  trainerRun: {
    handling: QUEUED,
    needs: 'trainer',
    args: '{ text, options }',
    value: 'the result without its methods',
  },
  trainerExport: { handling: QUEUED, needs: 'trainer', args: '{}', value: '{ config, weights, vocab, merges }' },
});

/** The request that stops request `id` (see MESSAGES.cancel). */
export function cancelRequest(id) {
  return { id: 0, method: 'cancel', args: { id } };
}

/** The worker could not be started (as opposed to a model that failed to load inside it). */
export class WorkerStartError extends Error {
  constructor(reason) {
    super(`no Web Worker could be started: ${reason}`);
    this.name = 'WorkerStartError';
  }
}

// The page's end of one worker (client.js's models and trainers): numbered requests, their
// progress messages and replies, the methods checked against MESSAGES.
export class WorkerChannel {
  what = 'model'; // named in errors after close
  #worker;
  #pending = new Map();
  #nextId = 1;
  #closed = false;
  #started;

  constructor(worker, startRequirement = 'worker-thread.js could not be started') {
    this.#worker = worker;
    // Settles when worker-thread.js has loaded its modules (it posts { ready: true }), or rejects
    // with a WorkerStartError if the worker fails before that: a script it could not read, a policy
    // that forbids it. Errors after that point are the model's, not the worker's.
    let ready = false;
    this.#started = new Promise((resolve, reject) => {
      worker.onmessage = (event) => {
        if (event.data?.ready) {
          ready = true;
          resolve();
          return;
        }
        const { id, ok, value, error, progress } = event.data;
        const p = this.#pending.get(id);
        if (!p) return;
        if (progress) {
          p.onProgress?.(progress);
          return;
        }
        this.#pending.delete(id);
        if (ok) {
          p.resolve(value);
          return;
        }
        const err = new Error(error);
        if (event.data.aborted) err.name = 'AbortError';
        p.reject(err);
      };
      worker.onerror = (event) => {
        event.preventDefault?.();
        if (!ready) {
          reject(new WorkerStartError(event.message || startRequirement));
          return;
        }
        const err = new Error(`headscope worker failed: ${event.message || 'unknown error'}`);
        for (const p of this.#pending.values()) p.reject(err);
        this.#pending.clear();
      };
    });
  }

  /** Resolves once the worker runs; rejects with a WorkerStartError if it never does. */
  started() {
    return this.#started;
  }

  /** Sends request `method` (a message of protocol.js) and resolves to its reply's value. */
  call(method, args, onProgress, transfer = [], signal = null) {
    if (this.#closed)
      return Promise.reject(
        new Error(`this headscope ${this.what} was disposed${this.what === 'model' ? '; load it again' : ''}`),
      );
    const entry = MESSAGES[method];
    // a mistake in this file, caught here: an unknown method, or one the worker never answers
    if (!entry || entry.handling === NO_REPLY)
      return Promise.reject(
        new Error(`headscope worker: ${method} is not a request with a reply in worker-protocol.js`),
      );
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ id, method, args }, transfer);
      // the worker checks for a cancel between the steps of a long run (the table's `cancellable`)
      if (entry.cancellable)
        signal?.addEventListener(
          'abort',
          () => {
            if (this.#pending.has(id)) this.#worker.postMessage(cancelRequest(id));
          },
          { once: true },
        );
    });
  }

  /** Sends message `method`, one the worker acts on without a reply (NO_REPLY in protocol.js). */
  notify(method, args) {
    if (this.#closed) return;
    if (MESSAGES[method]?.handling !== NO_REPLY)
      throw new Error(`headscope worker: ${method} is not a message without a reply`);
    this.#worker.postMessage({ id: 0, method, args });
  }

  get closed() {
    return this.#closed;
  }

  /** Rejects what is pending and stops the worker. */
  close(what) {
    if (this.#closed) return;
    this.#closed = true;
    for (const p of this.#pending.values()) p.reject(new Error(`this headscope ${what} was disposed`));
    this.#pending.clear();
    this.#worker.terminate();
  }
}
