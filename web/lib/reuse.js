// A run given an earlier result as `reuse` (typing): what the run may leave out of its data, and how
// the receiving side puts it back into the earlier result's buffers. reuseInfo() says what the run
// needs to know of the earlier result; run-data.js leaves out the attention rows or thumbnail cell
// rows before the first changed token, the tokens the earlier result holds and the contribution
// norms' columns before that token; withPrevious() writes them back, superseding the earlier result
// whose buffers it wrote (result.js's supersede: its accessors throw from then on).
import {
  strideOf,
  sameAblate,
  sharedPrefixLength,
  engineTokens,
  supersede,
  isSuperseded,
  THUMBNAIL_SIZE,
} from './result.js';

/** Throws when a later run already updated `previous` (its buffers are that run's result's now). */
function notUpdatedYet(previous) {
  if (isSuperseded(previous)) throw new Error('this result was already updated by a later run');
}

// Results that a run in flight (in a worker) will update: no second run may count on their rows
// meanwhile. (Results already updated are result.js's isSuperseded.)
const claimed = new WeakSet();

/** Marks `result` as the one a run in flight will update (reuseInfo() then refuses it); returns the release. */
export function claimForUpdate(result) {
  claimed.add(result);
  return () => claimed.delete(result);
}

/**
 * What a run needs to know about an earlier result to send only the attention rows that changed:
 * its token ids and block width ({ ids, stride }), or for a result without maps its token ids and
 * thumbnails' bin and cells ({ ids, thumbnailBin, thumbnailCells }). Null when `result` cannot take
 * new rows (neither buffer, superseded already, other heads switched off, a patched run's:
 * RunOptions.patch).
 */
export function reuseInfo(result, ablate = []) {
  if (
    !result ||
    result.patch || // a patched run's rows are no other run's
    isSuperseded(result) ||
    claimed.has(result) ||
    !sameAblate(result.ablate ?? [], ablate)
  )
    return null;
  // a result without maps: its thumbnails, whose cell rows before the first changed token stay
  // (the text with the ids: the tokens the run shares with it are not sent again, tokensAfter())
  const ids = () => Int32Array.from(result.tokens, (t) => t.id);
  if (!result.attentionAll && result.thumbnails instanceof Float32Array) {
    const n = result.thumbnailCells;
    if (result.thumbnails.length !== result.nLayer * result.nHead * n * n) return null;
    return {
      ids: ids(),
      text: result.text,
      droppedTokens: result.droppedTokens ?? 0,
      thumbnailBin: result.thumbnailBin,
      thumbnailCells: n,
    };
  }
  if (!(result.attentionAll instanceof Float32Array) || !result.attentionAll.length) return null;
  const S = strideOf(result);
  if (result.attentionAll.length !== result.nLayer * result.nHead * S * S) return null;
  return { ids: ids(), text: result.text, droppedTokens: result.droppedTokens ?? 0, stride: S };
}

/**
 * The first attention row that differs between a result holding `previous` ({ ids, stride }, from
 * reuseInfo) and a run over `ids`: row q depends on tokens 0..q alone, so rows before the first
 * changed token are the same numbers. 0 when the rows do not fit previous's blocks (T > stride).
 */
export function firstChangedRow(previous, ids) {
  if (!previous?.stride || ids.length > previous.stride) return 0; // (a thumbnails result has no rows)
  return sharedPrefixLength(previous.ids, ids);
}

/**
 * Block width for a result that will take new rows as the reader types: T plus room for a few
 * typed words, in steps of 32 (so the blocks are not reallocated at every token), at most the context.
 */
export function roomyStride(T, nPositions) {
  return Math.min(nPositions, Math.ceil((T + Math.max(16, T / 8)) / 32) * 32);
}

/**
 * The data of a run that sent only the rows that changed (`update.attentionRows`: rows
 * [rowsFrom, T) of every head, each head's rows one after the other, `update.stride` floats each),
 * completed with `previous`'s attention: the new rows are written into previous's buffer, which the
 * new result then owns; previous is superseded (its accessors throw; do not read it any more).
 */
export function withPreviousRows(previous, update) {
  const { attentionRows, rowsFrom, stride: S, T, nLayer, nHead } = update;
  notUpdatedYet(previous);
  const A = previous.attentionAll;
  if (strideOf(previous) !== S || A.length !== nLayer * nHead * S * S)
    throw new Error('the attention rows do not fit the earlier result');
  const rowsPerHead = T - rowsFrom;
  for (let head = 0; head < nLayer * nHead; head++) {
    const from = head * rowsPerHead * S;
    A.set(attentionRows.subarray(from, from + rowsPerHead * S), (head * S + rowsFrom) * S);
  }
  supersede(previous);
  const data = { ...update, attentionAll: A };
  delete data.attentionRows;
  return data;
}

/**
 * A run's thumbnails from `update` (cell rows [thumbnailRowsFrom, n) of every head, as thumbnailRows)
 * with the rows before them from `previous` (an earlier result at the same bin). Cell rows before the
 * first changed token's are the same numbers: a row of a map depends on the tokens up to it alone.
 * With as many cells as before (most keystrokes: a cell row holds `bin` tokens), the new rows are
 * written into previous's buffer, which the new result then owns, and previous is superseded, as
 * withPreviousRows() does: a new buffer at every keystroke was 9 MB (GPT-2 small) to 17 MB (SmolLM2-135M)
 * of fresh memory to fault in and collect. A view that painted previous keeps its own copy of what it
 * painted (grid.js). When the text grew or shrank a cell (n cells against previous's m), each head's
 * earlier rows are moved to the new width, in previous's buffer when it was made with room for them
 * (arrayWithRoom(); previous is then superseded too), else into a new buffer with room.
 */
export function withPreviousThumbnails(previous, update) {
  const { thumbnailRows, thumbnailRowsFrom: from, thumbnailCells: n, thumbnailBin, nLayer, nHead } = update;
  const old = previous?.thumbnails,
    m = previous?.thumbnailCells;
  if (
    !(old instanceof Float32Array) ||
    previous.thumbnailBin !== thumbnailBin ||
    old.length !== nLayer * nHead * m * m ||
    from > Math.min(m, n) ||
    thumbnailRows.length !== nLayer * nHead * (n - from) * n
  )
    throw new Error('the thumbnail rows do not fit the earlier result');
  notUpdatedYet(previous);
  const heads = nLayer * nHead;
  const C = m === n ? old : arrayWithRoom(old, heads * n * n, heads * roomyCells(n) ** 2);
  // an earlier row holds nothing right of its diagonal: min(m, n) cells of it are all there is
  if (m !== n)
    moveBlocks(
      old,
      C,
      heads * from,
      (i) => (Math.floor(i / from) * m + (i % from)) * m,
      (i) => (Math.floor(i / from) * n + (i % from)) * n,
      Math.min(m, n),
      n,
    );
  for (let head = 0; head < heads; head++)
    C.set(thumbnailRows.subarray(head * (n - from) * n, (head + 1) * (n - from) * n), (head * n + from) * n);
  if (C.buffer === old.buffer) supersede(previous);
  keptThumbnailRows.set(C, { from: new WeakRef(previous), rows: from });
  const data = { ...update, thumbnails: C };
  delete data.thumbnailRows;
  delete data.thumbnailRowsFrom;
  return data;
}

// Which earlier result a result's thumbnails were written over (withPreviousThumbnails), and how
// many of its cell rows came from it unchanged: keyed by the thumbnails array, which the result
// carries, so that no field of a result (plain data, which may cross postMessage) holds another;
// the earlier result weakly, so that this does not keep it (and its pulled rows) alive.
const keptThumbnailRows = new WeakMap();

/**
 * How many leading cell rows of every head in `thumbnails` (a result's) are `earlier`'s, unchanged:
 * the rows withPreviousThumbnails() kept when it wrote this result's rows over `earlier` (a result
 * object, as given to `reuse`), else 0. The grid repaints a typed token's thumbnails comparing only
 * the rows after them with what it painted of `earlier` (paint.js paintThumbnails).
 */
export function thumbnailRowsKept(thumbnails, earlier) {
  const kept = thumbnails ? keptThumbnailRows.get(thumbnails) : undefined;
  return kept && earlier && kept.from.deref() === earlier ? kept.rows : 0;
}

// Buffers made here with room to type into: an array over one of them grows in place when a
// keystroke adds a token or a cell row, its blocks moved apart (moveBlocks), instead of into a new
// buffer each time. On SmolLM2-135M's 270 heads at 8,000 tokens the contribution norms are 8.6 MB and
// the thumbnails 17 MB: fresh memory of that size cost the page 35 ms and 65-78 ms to allocate,
// fault in and collect, at every added token and every added cell row.
const roomy = new WeakSet();

/** A Float32Array of `length` floats over `old`'s buffer when it is one made here with room for
 *  them, else over a new one of max(length, room) floats; the caller writes every value. */
function arrayWithRoom(old, length, room) {
  if (roomy.has(old.buffer) && old.byteOffset === 0 && old.buffer.byteLength >= length * 4)
    return new Float32Array(old.buffer, 0, length);
  const buffer = new ArrayBuffer(Math.max(length, room) * 4);
  roomy.add(buffer);
  return new Float32Array(buffer, 0, length);
}

/** Cells to keep room for in each head's thumbnail of n x n cells (a cell row holds a bin of tokens;
 *  a bin holds at most THUMBNAIL_SIZE cells, and a new bin sends every cell). */
const roomyCells = (n) => Math.min(Math.max(n, THUMBNAIL_SIZE), n + Math.max(4, Math.ceil(n / 8)));

/**
 * Copies `count` blocks from `src` to `dst`, block i from src[srcAt(i), +keep) to dst[dstAt(i), +keep),
 * then zeroes dst[dstAt(i) + keep, dstAt(i) + width). dst may be over src's buffer (arrayWithRoom):
 * srcAt and dstAt rise with i, and either every block moves up (dstAt(i) >= srcAt(i)) or every one
 * down, so going from the last block (up) or the first (down), no block is overwritten before it moved.
 */
function moveBlocks(src, dst, count, srcAt, dstAt, keep, width) {
  if (count === 0) return;
  const same = src.buffer === dst.buffer;
  const up = dstAt(count - 1) >= srcAt(count - 1);
  // both arrays start the buffer (arrayWithRoom); the longer one reaches every block
  const all = same && src.length > dst.length ? src : dst;
  for (let k = 0; k < count; k++) {
    const i = same && up ? count - 1 - k : k;
    const s = srcAt(i),
      d = dstAt(i);
    if (same) all.copyWithin(d, s, s + keep);
    else dst.set(src.subarray(s, s + keep), d);
    if (width > keep) dst.fill(0, d + keep, d + width);
  }
}

/**
 * A run's tokens from the first one `previous` (a reuseInfo(): its ids, text and dropped tokens) does
 * not hold as it is: { tokens, tokensFrom }, withPrevious() putting the first tokensFrom back from the
 * earlier result. A token is held when the ids up to it are the same, and the text up to its end (a
 * token's span is string indices), with as many tokens dropped before them (a text past the context:
 * the same ids further along the text are other spans). Typing at the end of 8,000 tokens then sends
 * one or two token objects to the page, not 8,000 (each copied out of the worker and into the page:
 * 5-10 ms a keystroke). `out`, `T` and `map` as engineTokens(); `dropped`, the run's droppedTokens.
 */
export function tokensAfter(out, T, map, text, previous, dropped = 0) {
  let n = 0;
  if (previous?.ids && typeof previous.text === 'string' && (previous.droppedTokens ?? 0) === dropped) {
    n = sharedPrefixLength(previous.ids, out.tokenIds.subarray(0, T));
    const end = n > 0 ? engineTokens(out, n, map, n - 1)[0].end : 0;
    if (text.slice(0, end) !== previous.text.slice(0, end)) n = 0;
  }
  return { tokens: engineTokens(out, T, map, n), tokensFrom: n };
}

/** `update`'s tokens (the ones after tokensFrom) with the first tokensFrom of `previous` before them. */
function withPreviousTokens(previous, update) {
  const { tokensFrom: n, ...data } = update;
  if (!previous?.tokens || previous.tokens.length < n) throw new Error('the tokens do not fit the earlier result');
  data.tokens = previous.tokens.slice(0, n).concat(update.tokens);
  return data;
}

/**
 * `update`'s contribution norms (columns [contributionNormsFrom, T) of every head, as
 * contributionNormRows) after `previous`'s columns before them: a column depends on the tokens up to
 * it alone, so the ones before are the same numbers. Written into previous's buffer when it has room
 * (the same token count, or a buffer made with room to type: arrayWithRoom()), which the new result
 * then owns, and previous is superseded; else into a new buffer with room.
 */
function normsFit(previous, update) {
  const { contributionNormRows: rows, contributionNormsFrom: from, nLayer, nHead, T } = update;
  const norms = previous?.contributionNorms;
  const P = previous?.T;
  if (
    !(norms instanceof Float32Array) ||
    !Number.isInteger(P) ||
    norms.length !== nLayer * nHead * P ||
    !(from >= 0 && from <= Math.min(P, T)) ||
    rows.length !== nLayer * nHead * (T - from)
  )
    throw new Error('the contribution norms do not fit the earlier result');
}
function withPreviousNorms(previous, update) {
  const { contributionNormRows: rows, contributionNormsFrom: from, ...data } = update;
  const { nLayer, nHead, T } = update;
  const heads = nLayer * nHead;
  const old = previous.contributionNorms,
    P = previous.T;
  const norms = P === T ? old : arrayWithRoom(old, heads * T, heads * roomyStride(T, Infinity));
  if (P !== T)
    moveBlocks(
      old,
      norms,
      heads,
      (head) => head * P,
      (head) => head * T,
      from,
      from,
    );
  for (let head = 0; head < heads; head++)
    norms.set(rows.subarray(head * (T - from), (head + 1) * (T - from)), head * T + from);
  if (norms.buffer === old.buffer) supersede(previous);
  data.contributionNorms = norms;
  return data;
}

/** A run's data with what it left to `previous` put back: tokens, contribution norms, and attention rows or thumbnail rows. */
export function withPrevious(previous, update) {
  if (update.contributionNormRows) {
    notUpdatedYet(previous);
    normsFit(previous, update); // before anything of `previous` is written
  }
  let data = update.tokensFrom ? withPreviousTokens(previous, update) : update;
  if (data.attentionRows) data = withPreviousRows(previous, data);
  else if (data.thumbnailRows) data = withPreviousThumbnails(previous, data);
  return data.contributionNormRows ? withPreviousNorms(previous, data) : data;
}
