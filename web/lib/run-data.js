// A run's plain data, built from the engine once it ran (HeadscopeModel.runData's second half): what
// is copied out of the engine, and what an earlier result (`previous`, a reuseInfo()) lets it leave
// out: attention rows or thumbnail cell rows before the first changed token, the tokens it holds, and
// the contribution norms' columns before that token. reuse.js's withPrevious() puts them back on the
// receiving side.
import { checked } from './wasm.js';
import { sharedPrefixLength, plainData } from './result.js';
import { firstChangedRow, roomyStride, tokensAfter } from './reuse.js';
import { byteToIndexMaps } from './generation.js';
import { runThumbnailsOf, pulledRowsOf } from './maps.js';

/**
 * The data of the run the engine (core, handle h) just made of `text` (well-formed) with `run`, the
 * engine's { tokens, reusedTokens, droppedTokens }. `config` is the model's; `request` the run's
 * parsed options { maps, patch, topK, allLogits, valueNorms, ablate, pull }.
 */
export function runDataOf(core, h, config, text, run, request, previous) {
  const { maps, patch, topK, allLogits, valueNorms, ablate, pull } = request;
  // a thumbnails result: the earlier one's cell rows before the first changed token stay (below)
  const previousThumbnails = !maps && !patch && previous?.thumbnailBin ? previous : null;
  // the tokens and norms of an earlier result of the same kind (maps, or thumbnails) are reused; a
  // patched run's tokens are its text's all the same, but it computes every token
  const previousTokens = patch ? null : maps ? (previous?.stride ? previous : null) : previousThumbnails;
  const previousRows = maps && !patch ? previous : null; // a patched run computes every token: no row is shared
  const T = run.tokens;
  const ids = h.tokenIds();
  const rowsFrom = previousRows ? firstChangedRow(previousRows, ids) : 0;
  const stride = !previousRows ? T : rowsFrom > 0 ? previousRows.stride : roomyStride(T, config.nPositions);
  // only the columns of the contribution norms from the first changed token on, which withPrevious()
  // writes after the earlier result's (a new 8.6 MB array at every keystroke on 8,000 tokens of
  // SmolLM2's 270 heads cost the worker a garbage collection, about 25 ms, as often)
  const normsFrom = previousTokens ? sharedPrefixLength(previousTokens.ids, ids) : 0;
  // without maps: no attention row is copied out (rows [T, T): none), every head's thumbnail instead
  const out = checked(
    core,
    maps
      ? h.results(topK, allLogits, rowsFrom, rowsFrom > 0 ? T - rowsFrom : stride, stride, normsFrom)
      : h.results(topK, allLogits, T, 0, T, normsFrom),
  );
  // the tokens the earlier result holds are left out (tokensFrom), and put back by withPrevious()
  const { droppedTokens, reusedTokens } = run;
  const map = byteToIndexMaps(text);
  const { tokens, tokensFrom } = tokensAfter(out, T, map, text, previousTokens, droppedTokens);
  const fields = { text, tokens, T, ablate, droppedTokens, reusedTokens, stride, rowsFrom };
  const data = plainData(out, fields, config, {
    loss: allLogits ? out.loss : undefined,
    valueNorms: valueNorms ? checked(core, h.valueNorms()) : null,
    maps,
  });
  if (!maps) {
    Object.assign(data, runThumbnailsOf(core, h, T, previousThumbnails));
    // the role scores the page shows, counted by the forward pass (no map to count them from here)
    data.roleScores = checked(core, core.headRoleScores(h));
  }
  // the rows of the heads the caller shows that it does not hold yet (typing: the new tokens' rows)
  if (pull) Object.assign(data, pulledRowsOf(core, h, pull, ids));
  if (tokensFrom > 0) data.tokensFrom = tokensFrom;
  if (normsFrom > 0) {
    data.contributionNormRows = data.contributionNorms;
    data.contributionNormsFrom = normsFrom;
    delete data.contributionNorms;
  }
  return { ...data, patch };
}
