// Imported on both sides of the Web Worker (published as worker-protocol.js): the messages between
// the page (client.js, published as headscope-worker.js) and the worker (host.js, published as
// worker-thread.js), in one table. The worker answers a method only if it is listed
// here, in the way listed here; the page sends only methods listed here.
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
    args: '{ source, weights, threads }',
    value: 'ModelInfo',
    progress: '{ loaded, total } (bytes)',
  },
  run: {
    handling: QUEUED,
    needs: 'model',
    args: '{ text, options, previous: reuseInfo() | null, onScreen }',
    value: 'HeadscopeModel.runData(): the result without its methods (attentionRows when previous allowed)',
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
