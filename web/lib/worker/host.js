// Runs inside the Web Worker (published as worker-thread.js; the page's side is client.js, published
// as headscope-worker.js, which starts this file): holds one model (or one training run) and answers
// the page's requests in order. Result typed arrays are transferred to the page, not copied. The
// messages, and how each is answered, are the table in protocol.js.
//
// A long run (a big model on a long text) is done in steps of tokens: the engine's cache takes the
// text a piece at a time (prefill), the page hears the progress after each piece, and a cancel
// message that arrived meanwhile stops it. The final run then only computes the last piece, and its
// result equals a run in one go (the engine reuses cached tokens only where they match).
import { loadModel, createTrainer } from '../headscope.js';
import { resultForTransfer, sharedPrefixLength } from '../result.js';
import { MESSAGES, AT_ONCE, NO_REPLY } from './protocol.js';
import { patchBuffers } from '../patching.js';
import { explainBuffers } from '../explain.js';
import { mapBuffers } from '../maps.js';
import { trainInChunks, probeForTransfer } from '../trainer.js';

// Runs cheaper than this many (parameters x tokens) go in one step: about 200 ms of work in wasm.
const STEPPED_RUN_WORK = 6e9;
const STEPS = 8;

let model = null;
let trainer = null;
const queue = [];
const cancelled = new Set();
let busy = false;

const yieldToMessages = () => new Promise((resolve) => setTimeout(resolve, 0));

function cancelledError() {
  const e = new Error('the run was cancelled');
  e.name = 'AbortError';
  return e;
}

// What the engine's cache holds: the token ids of the last run or prefill, and its switched-off
// heads (a cache made with others is not reused).
let cached = { ids: [], key: '' };
// the text of the last run in one go and the cache it left (runInSteps: typing at its end needs no plan)
let typedOn = null;
// what the engine's cache was computed with: the switched-off heads (a patched run leaves none, see runInSteps)
const cacheKey = (options) => JSON.stringify(options.ablate ?? []);

// Puts the start of `text` (its `tokens`, from token `start` on) into the engine's cache in STEPS
// pieces, each cut where a token starts with white space: the prefix then ends on a whole word, so
// it is tokenized as the start of the full text is (a cut elsewhere only costs a recomputation).
// After each piece `afterStep(tokensDone)` may stop it (false). True when every piece ran.
async function prefillInSteps(text, tokens, start, options, afterStep) {
  const T = tokens.length;
  const ids = tokens.map((t) => t.id);
  const step = Math.ceil((T - start) / STEPS);
  for (let end = start + step; end < T; end += step) {
    let k = end;
    while (k < T && !/\s/.test(text[tokens[k].start] ?? '')) k++;
    if (k >= T) break;
    model.prefill(text.slice(0, tokens[k].start), { ablate: options.ablate, allLogits: options.allLogits });
    cached = { ids: ids.slice(0, k), key: cacheKey(options) };
    if (!(await afterStep(k))) return false;
    end = k;
  }
  return true;
}

// The run's data (HeadscopeModel.runData: only the changed attention rows when `previous` allows).
// The work is the tokens the cache does not hold: typing at the end of a long text runs in one go.
async function runInSteps(id, text, options, previous) {
  const finish = () => {
    const data = model.runData(text, options, previous);
    // a patched run computes every token and leaves the engine no cache to reuse
    // (tokens from tokensFrom on: the earlier ones are previous's, reuse.js's tokensAfter())
    const ids = data.tokensFrom ? Array.from(previous.ids.subarray(0, data.tokensFrom)) : [];
    for (const t of data.tokens) ids.push(t.id);
    cached = options.patch ? { ids: [], key: '' } : { ids, key: cacheKey(options) };
    typedOn = { text, cached };
    return data;
  };
  if (options.patch) return finish();
  const { nPositions } = model.info.config;
  // a model too small for any text to be long (the shipped ones) never pays for the tokenizing below
  if (nPositions * model.info.parameterCount < STEPPED_RUN_WORK) return finish();
  // typing at the end of the text the cache holds: a few new tokens (at most one per character, and
  // the one or two a changed ending retokenizes), one step; no tokenizing of the whole text to plan
  if (
    typedOn?.cached === cached &&
    cached.key === cacheKey(options) &&
    text.startsWith(typedOn.text) &&
    (text.length - typedOn.text.length + 2) * model.info.parameterCount < STEPPED_RUN_WORK
  )
    return finish();
  const tokens = model.tokenize(text);
  const T = tokens.length;
  const ids = tokens.map((t) => t.id);
  let start = cached.key === cacheKey(options) ? sharedPrefixLength(cached.ids, ids) : 0;
  if (T > nPositions || (T - start) * model.info.parameterCount < STEPPED_RUN_WORK || T - start < 2 * STEPS)
    return finish();
  // the steps' prefixes grow towards T: room for all of them now, not a reallocation (and a lost
  // cache) between steps; a reallocation here empties the cache, so the steps start from token 0
  if (model.reserve(T)) {
    cached = { ids: [], key: '' };
    start = 0;
  }
  await prefillInSteps(text, tokens, start, options, async (k) => {
    self.postMessage({ id, progress: { tokens: k, total: T } });
    await yieldToMessages();
    if (cancelled.has(id)) throw cancelledError();
    return true;
  });
  self.postMessage({ id, progress: { tokens: T, total: T } });
  return finish();
}

// The text on screen (the latest run that updated a shown result), and putting it back into the
// engine's cache when the worker is idle: a side run (the lab's probes, loss or knock-outs) leaves
// its own text there, and the reader's next keystroke would otherwise compute every token of a long
// text again. In steps of tokens, stopping as soon as a request arrives (the run that follows
// reuses what was restored).
let onScreen = null;
let restoreTimer = 0;
const RESTORE_AFTER_IDLE_MS = 250;

async function restoreTyping() {
  if (!model || !onScreen) return;
  const { text, options } = onScreen;
  const tokens = model.tokenize(text);
  const T = Math.min(tokens.length, model.info.config.nPositions);
  const start =
    cached.key === cacheKey(options)
      ? sharedPrefixLength(
          cached.ids,
          tokens.map((t) => t.id),
        )
      : 0;
  // nothing left, a text past the context (cut differently), or a model too small for it to matter;
  // a restore interrupted by a request resumes here with what is left, however little
  if (start >= T || T * model.info.parameterCount < STEPPED_RUN_WORK / 4 || tokens.length > T) return;
  if (queue.length) return;
  const whole = await prefillInSteps(text, tokens, start, options, async () => {
    await yieldToMessages();
    return !queue.length; // a request stops it: that run reuses what is restored so far
  });
  if (whole && !queue.length) {
    model.prefill(text, options);
    cached = { ids: tokens.map((t) => t.id), key: cacheKey(options) };
  }
}

// The typed arrays of HeadscopeModel.inspectHead(): moved to the page, not copied.
const INSIDE_BUFFERS = ['q', 'k', 'v', 'scores', 'attention', 'z', 'out', 'valueNorm'];
// ... of measureHeads() and of logitAttribution()
const HEADS_BUFFERS = ['gateGrad', 'ablationDelta', 'prunedLoss', 'randomLossMean', 'randomLossLow', 'randomLossHigh'];
const ATTRIBUTION_BUFFERS = ['heads', 'attnBias', 'mlp'];

// The engine's cache after the last run message (logitAttribution() may repeat that run, which
// leaves the cache as the run left it), and that run's text and heads off
let lastRunCache = null;
let lastRunOf = null;
// the engine ran `text` (with options.ablate's heads off) for a reply that is not a run: the cache
// holds it, where it fits the context, and it is the run a later split repeats
function engineRan(text, options) {
  const key = cacheKey({ ablate: options?.ablate ?? [] });
  lastRunOf = { text, key };
  // the text the cache holds already (a tile of the run on screen): the cache is unchanged, and the
  // next keystroke keeps runInSteps' shortcut (typedOn), with no tokenizing of the whole text here
  if (typedOn?.cached === cached && typedOn.text === text && cached.key === key) {
    lastRunCache = cached;
    return;
  }
  const ids = model.tokenize(text).map((t) => t.id);
  const fits = ids.length <= model.info.config.nPositions;
  lastRunCache = cached = { ids: fits ? ids : [], key: fits ? key : '' };
}

// measureHeads() and patch(): the model's stepped analyses, their cancel read from the cancel
// messages, progress posted after each chunk (its typed arrays, which are the chunk's own copies,
// moved), and between chunks the queued requests the table marks betweenChunks (from the front of the
// queue, so the order of requests holds). Their runs take the engine's cache.
async function inChunks(id, analysis, buffersOf = () => []) {
  const signal = {
    get aborted() {
      return cancelled.has(id);
    },
  };
  try {
    return await analysis({
      signal,
      onProgress: async (progress) => {
        cached = { ids: [], key: '' };
        self.postMessage({ id, progress }, progress.report ? buffersOf(progress.report) : []);
        while (queue.length && MESSAGES[queue[0].method]?.betweenChunks && !signal.aborted) await handle(queue.shift());
      },
    });
  } finally {
    cached = { ids: [], key: '' };
  }
}

// generate(): HeadscopeModel.generateData. With acks (the page has onToken), each token's result
// goes to the page as progress (its buffers moved) and the next token waits for the page's
// generateAck, while the queued requests the table marks betweenChunks are answered (the page's
// onToken may need the model; a generation between tokens runs its sequence again first). A cancel
// stops it before the next token.
const acks = new Map(); // generate request id -> { kept, stop } once the page acknowledged its token
let wakeGeneration = null; // resolves the wait of a generation for an ack or a queued request

async function ackOf(id) {
  for (;;) {
    if (acks.has(id)) {
      const ack = acks.get(id);
      acks.delete(id);
      return ack;
    }
    if (queue.length && MESSAGES[queue[0].method]?.betweenChunks) {
      await handle(queue.shift());
      continue;
    }
    await new Promise((resolve) => {
      wakeGeneration = resolve;
    });
    wakeGeneration = null;
  }
}

async function generateInSteps(id, { text, options, previous, acks: withAcks, aborted }) {
  const signal = {
    get aborted() {
      return aborted || cancelled.has(id);
    },
  };
  const key = cacheKey(options);
  try {
    // without acks, the pauses between tokens answer the queued requests instead
    const between = async () => {
      while (queue.length && MESSAGES[queue[0].method]?.betweenChunks && !signal.aborted) await handle(queue.shift());
    };
    const value = await model.generateData(
      text,
      { ...options, signal, between },
      previous,
      withAcks
        ? async (step) => {
            cached = { ids: step.data.tokens.map((t) => t.id), key };
            const { data, transfer } = resultForTransfer(step.data);
            const { ids, probs } = step.distribution;
            self.postMessage({ id, progress: { ...step, request: id, data } }, [...transfer, ids.buffer, probs.buffer]);
            const ack = await ackOf(id);
            if (ack.stop) cancelled.add(id);
            return ack.kept;
          }
        : null,
    );
    cached = { ids: value.cachedIds, key };
    delete value.cachedIds;
    // the written text is on screen when the page heard of each token
    if (withAcks) onScreen = { text: value.text, options: { ablate: options.ablate } };
    return value;
  } catch (e) {
    cached = { ids: [], key: '' }; // a failed step may have left anything in the cache
    throw e;
  }
}

// What each message of protocol.js's MESSAGES does: (id, args) -> { value, transfer }, the
// reply and the buffers it moves to the page. When each runs (queued or at once) and the check that a
// model or trainer is loaded come from the table, in answer() and self.onmessage below.
const HANDLERS = {
  async load(id, args) {
    if (model) model.dispose();
    cached = { ids: [], key: '' };
    lastRunCache = null;
    lastRunOf = null;
    onScreen = null;
    model = await loadModel(args.source, {
      weights: args.weights,
      threads: args.threads,
      attentionMaps: args.attentionMaps,
      memoryLimit: args.memoryLimit,
      activations: args.activations,
      onProgress: (p) => self.postMessage({ id, progress: p }),
    });
    return { value: model.info, transfer: [] };
  },
  async run(id, args) {
    // the methods stay behind; the client adds them back with makeResult()
    const { data, transfer } = resultForTransfer(await runInSteps(id, args.text, args.options, args.previous));
    lastRunCache = cached;
    lastRunOf = args.options.patch ? null : { text: data.text, key: cacheKey(args.options) };
    // a run that replaces the result on screen (the page passed `reuse`) is the reader's text;
    // others (probes, the lab's loss or knock-outs) may take the engine's cache from it; a patched
    // run keeps no cache to put back
    if (args.onScreen)
      onScreen = args.options.patch ? null : { text: args.text, options: { ablate: args.options.ablate } };
    return { value: data, transfer };
  },
  inspectHead(id, args) {
    const inside = model.inspectHead(args.text, args.layer, args.head, args.options);
    // the inspect run took the engine's cache (the inspected text, with its heads off): say so, so
    // that the next run and the restore of the text on screen know what the cache holds
    cached = { ids: inside.tokens.map((t) => t.id), key: cacheKey(inside) };
    return { value: inside, transfer: INSIDE_BUFFERS.map((k) => inside[k].buffer) };
  },
  async measureHeads(id, { text, options }) {
    const report = await inChunks(id, (steps) => model.measureHeads(text, { ...options, ...steps }));
    return { value: report, transfer: HEADS_BUFFERS.map((k) => report[k].buffer) };
  },
  async patch(id, { options }) {
    const report = await inChunks(id, (steps) => model.patch({ ...options, ...steps }), patchBuffers);
    return { value: report, transfer: patchBuffers(report) };
  },
  explainScore(id, { text, layer, head, query, key, options }) {
    const r = model.explainScore(text, layer, head, query, key, options);
    engineRan(r.text, options);
    return { value: r, transfer: explainBuffers(r) };
  },
  memory() {
    return { value: model.memory(), transfer: [] };
  },
  attentionTile(id, { text, layer, head, options }) {
    const r = model.attentionTile(text, layer, head, options);
    engineRan(r.text, options);
    return { value: r, transfer: mapBuffers(r) };
  },
  attentionThumbnails(id, { text, options }) {
    const r = model.attentionThumbnails(text, options);
    engineRan(r.text, options);
    return { value: r, transfer: mapBuffers(r) };
  },
  circuits(id, { options }) {
    const r = model.circuits(options);
    return { value: r, transfer: explainBuffers(r) };
  },
  logitAttribution(id, args) {
    const a = model.logitAttribution(args.position, args.token, args.of);
    if (args.of && (a.text !== lastRunOf?.text || cacheKey(a) !== lastRunOf?.key)) {
      // the engine ran `of`'s text, which is now the run a later split repeats: the cache holds
      // its tokens (unknown past the context, where the start is cut)
      const ids = model.tokenize(a.text).map((t) => t.id);
      const fits = ids.length <= model.info.config.nPositions;
      lastRunCache = cached = { ids: fits ? ids : [], key: fits ? cacheKey(a) : '' };
      lastRunOf = { text: a.text, key: cacheKey(a) };
    } else if (lastRunCache) cached = lastRunCache;
    return { value: a, transfer: ATTRIBUTION_BUFFERS.map((k) => a[k].buffer) };
  },
  generate: async (id, args) => ({ value: await generateInSteps(id, args), transfer: [] }),
  generateAck(id, args) {
    acks.set(args.id, { kept: !!args.kept, stop: !!args.stop });
    wakeGeneration?.();
  },
  tokenize: (id, args) => ({ value: model.tokenize(args.text), transfer: [] }),
  tokenText: (id, args) => ({ value: model.tokenText(args.id), transfer: [] }),
  dispose() {
    model.dispose();
    model = null;
    return { value: true, transfer: [] };
  },
  cacheState: () => ({ value: cacheState(), transfer: [] }),
  cancel(id, args) {
    cancelled.add(args.id);
  },
  async trainerCreate(id, args) {
    trainer?.dispose();
    trainer = null;
    trainer = await createTrainer(args.options);
    return { value: { spec: trainer.spec, stepsDone: trainer.stepsDone, threads: trainer.threads }, transfer: [] };
  },
  trainerTrain: async (id, args) => ({
    value: await trainInChunks(trainer, args, {
      progress: (progress, transfer) => self.postMessage({ id, progress }, transfer),
      // a cancel (the page's pause) arrives as a message: read between chunks
      stop: async () => (await yieldToMessages(), cancelled.has(id)),
    }),
    transfer: [],
  }),
  trainerStep(id, args) {
    const losses = trainer.step(args.arg);
    return { value: { losses, stepsDone: trainer.stepsDone }, transfer: [losses.buffer] };
  },
  trainerProbe: () => probeForTransfer(trainer.probe()),
  trainerRun(id, args) {
    const trained = trainer.model();
    try {
      const { data, transfer } = resultForTransfer(trained.run(args.text, args.options));
      return { value: data, transfer };
    } finally {
      trained.dispose();
    }
  },
  trainerExport() {
    const files = trainer.export();
    return { value: files, transfer: [files.weights.buffer] };
  },
};
// a message in the table without a handler (or the reverse) is a mistake in this file: say so at once
for (const method of new Set([...Object.keys(MESSAGES), ...Object.keys(HANDLERS)]))
  if (!MESSAGES[method] || !HANDLERS[method])
    throw new Error(`worker-thread.js: ${method} is not both in MESSAGES and in HANDLERS`);

const NOT_LOADED = { model: 'no model loaded in this worker', trainer: 'no training run in this worker' };

// Calls the message's handler once what it needs is there (the protocol table's `needs`).
function answer(id, method, args) {
  const entry = MESSAGES[method];
  if (!entry) throw new Error(`unknown method ${method}`);
  const loaded = { model, trainer };
  if (entry.needs && !loaded[entry.needs]) throw new Error(NOT_LOADED[entry.needs]);
  return HANDLERS[method](id, args);
}

function postFailure(id, e) {
  self.postMessage({
    id,
    ok: false,
    error: e instanceof Error ? e.message : String(e),
    aborted: e?.name === 'AbortError',
  });
}

// Queued requests being answered: a head measurement answers others between its chunks, and its
// cancel must outlive theirs
const answering = new Set();

// A queued request: answered in turn, after the ones before it.
async function handle({ id, method, args }) {
  answering.add(id);
  try {
    if (cancelled.has(id)) throw cancelledError();
    const { value, transfer } = await answer(id, method, args);
    self.postMessage({ id, ok: true, value }, transfer);
  } catch (e) {
    postFailure(id, e);
  } finally {
    answering.delete(id);
    // requests are numbered in order: cancels of earlier ones are done with, unless still answering
    for (const c of cancelled) if (c <= id && !answering.has(c)) cancelled.delete(c);
  }
}

// What the cache holds for the text on screen (MESSAGES.cacheState: answered at once).
function cacheState() {
  const shown = onScreen ? model.tokenize(onScreen.text).map((t) => t.id) : [];
  const same = onScreen && cached.key === cacheKey(onScreen.options);
  return {
    cachedTokens: cached.ids.length,
    onScreenTokens: shown.length,
    onScreenCached: same ? sharedPrefixLength(cached.ids, shown) : 0,
  };
}

self.onmessage = (event) => {
  const { id, method, args } = event.data;
  const handling = MESSAGES[method]?.handling;
  // a cancel acts at once (between the steps of a long run); a state query is answered at once;
  // everything else (an unknown method too, whose error then comes in turn) waits its turn
  if (handling === NO_REPLY) {
    answer(id, method, args);
    return;
  }
  if (handling === AT_ONCE) {
    try {
      self.postMessage({ id, ok: true, value: answer(id, method, args).value });
    } catch (e) {
      postFailure(id, e);
    }
    return;
  }
  queue.push(event.data);
  clearTimeout(restoreTimer);
  wakeGeneration?.(); // a generation waiting for its ack answers betweenChunks requests meanwhile
  if (!busy) pump();
};

async function pump() {
  busy = true;
  while (queue.length) await handle(queue.shift());
  busy = false;
  // once the page has been quiet for a moment (a lab sequence of runs posts its next request at
  // once), give the engine's cache back to the text on screen
  restoreTimer = setTimeout(async () => {
    if (busy || queue.length) return;
    busy = true;
    try {
      await restoreTyping();
    } catch {
      onScreen = null; // the next run of that text reports any problem; do not retry this one
    }
    busy = false;
    if (queue.length) pump();
  }, RESTORE_AFTER_IDLE_MS);
}

// Tells the page that this module and its imports loaded: failures before this are the worker's
// (the page may then run the model itself), failures after it are the model's.
self.postMessage({ ready: true });
