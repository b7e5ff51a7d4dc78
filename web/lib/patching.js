// HeadscopeModel.patch(): activation and attribution patching between two texts (the engine's
// ActivationPatching, cpp/include/headscope/patching.hpp, where the scores are defined), stepped in
// chunks like the head measurement so that a page paints the attribution map at once and the exact
// scores as they arrive. Published as patching.js; the Worker's host calls it as the page thread does.
import { checked } from './wasm.js';
import { CHUNK_MS, performanceNow, yieldToEventLoop, toWellFormed } from './generation.js';

/** The Error a cancelled patching rejects with (name 'AbortError'). */
export function cancelledPatching() {
  const e = new Error('the patching was cancelled');
  e.name = 'AbortError';
  return e;
}

// The engine takes token ids (-1: its default, the runs' most likely next tokens). A string must be
// exactly one token (the engine's message names what it splits into); an id must be in the vocabulary.
function tokenId(core, h, name, token, vocabSize) {
  if (token === undefined || token === null) return -1;
  if (typeof token === 'string') {
    try {
      return checked(core, h.singleTokenId(token));
    } catch (e) {
      throw new Error(`${name}: ${e.message}`);
    }
  }
  if (!Number.isInteger(token) || token < 0 || token >= vocabSize)
    throw new Error(
      `${name} must be one token's text or an id in [0, ${vocabSize}), got ${typeof token === 'number' ? token : typeof token}`,
    );
  return token;
}

/** RunOptions.patch checked and copied ({ from, layer, head }, from well-formed), or null. */
export function runPatch(patch) {
  if (patch === undefined || patch === null) return null;
  if (typeof patch !== 'object' || typeof patch.from !== 'string')
    throw new Error('patch must be { from: string, layer, head } or null');
  for (const k of ['layer', 'head'])
    if (!Number.isInteger(patch[k]) || patch[k] < 0)
      throw new Error(
        `patch.${k} must be a whole number >= 0, got ${typeof patch[k] === 'number' ? patch[k] : typeof patch[k]}`,
      );
  return { from: toWellFormed(patch.from), layer: patch.layer, head: patch.head };
}

/**
 * HeadscopeModel.patch()'s work for the model handle `h` (see headscope.d.ts, PatchOptions). `model`
 * is what it needs of the model: live() (its handle; throws once disposed), take() (before each
 * chunk: the patching's runs replace the engine's last run) and tokenText(id).
 */
export async function patchOf(core, h, options, model) {
  if (options === null || typeof options !== 'object')
    throw new Error('patch({ clean, corrupted, ... }): the options must be an object');
  const { clean, corrupted, answer, distractor, byPosition = false, onProgress, signal, chunkMs = CHUNK_MS } = options;
  for (const [name, v] of [
    ['clean', clean],
    ['corrupted', corrupted],
  ])
    if (typeof v !== 'string') throw new Error(`patch(): ${name} must be a string, got ${typeof v}`);
  if (typeof byPosition !== 'boolean')
    throw new Error(`patch(): byPosition must be a boolean, got ${typeof byPosition}`);
  if (!(chunkMs >= 0)) throw new Error(`patch(): chunkMs must be a number >= 0, got ${chunkMs}`);
  const vocabSize = h.config().vocabSize;
  const a = tokenId(core, h, 'answer', answer, vocabSize);
  const d = tokenId(core, h, 'distractor', distractor, vocabSize);
  if (signal?.aborted) throw cancelledPatching();
  const patching = checked(core, core.patching(h, toWellFormed(clean), toWellFormed(corrupted), a, d, byPosition));
  try {
    for (let first = true; ; first = false) {
      const t0 = performanceNow();
      let done;
      model.take();
      // the first step is the two runs and the backward pass: the attribution map is then whole, and
      // the page gets it before any exact run; after it, one patched run at a time until the chunk's time is up
      do done = checked(core, patching.step(1));
      while (!first && !done && performanceNow() - t0 < chunkMs);
      model.live();
      if (done) break;
      if (onProgress)
        await onProgress({ fraction: patching.progress(), report: patchReport(patching.report(), model) });
      // disposed meanwhile (in onProgress, or between chunks): the patching refers to the model
      model.live();
      await yieldToEventLoop();
      if (signal?.aborted) throw cancelledPatching();
      model.live();
    }
    return patchReport(patching.report(), model);
  } finally {
    patching.delete();
  }
}

// The engine's report as the API's: tokens and the answer with their texts, scores as Float64Arrays
// (NaN where an exact score is not computed yet), null for the by-position maps when not asked for
export function patchReport(r, model) {
  const token = (id) => ({ id, text: model.tokenText(id) });
  const byPosition = r.headsByPosition.length > 0;
  return {
    nLayer: r.nLayer,
    nHead: r.nHead,
    tokens: r.tokens,
    firstDifference: r.firstDifference,
    tokensClean: Array.from(r.idsClean, token),
    tokensCorrupted: Array.from(r.idsCorrupted, token),
    answer: token(r.answer),
    distractor: token(r.distractor),
    ldClean: r.ldClean,
    ldCorrupted: r.ldCorrupted,
    heads: r.heads,
    headsAttribution: r.headsAttribution,
    resid: r.resid,
    headsByPosition: byPosition ? r.headsByPosition : null,
    headsByPositionAttribution: byPosition ? r.headsByPositionAttribution : null,
    exactRunsDone: r.exactRunsDone,
    exactRunsTotal: r.exactRunsTotal,
    complete: r.exactRunsDone === r.exactRunsTotal,
  };
}

/** The report's typed arrays, for a transfer between threads. */
export function patchBuffers(report) {
  return ['heads', 'headsAttribution', 'resid', 'headsByPosition', 'headsByPositionAttribution']
    .filter((k) => report[k])
    .map((k) => report[k].buffer);
}
