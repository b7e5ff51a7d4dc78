// The layout of a run's result, in one place: where a head's attention sits in the flat arrays,
// how a result crosses a worker boundary, how a typed token's new rows are patched into an earlier
// result, and the "layer:head,..." form of switched-off heads.
//
// Shapes (row-major):
//   attentionAll       [nLayer, nHead, S, S]  row q = query token, column k = key token (k <= q < T);
//                                             S = result.stride, T by default. A result made to be
//                                             updated while the reader types keeps wider blocks
//                                             (S > T), so that new rows go in without moving old ones.
//   contributionNorms  [nLayer, nHead, T]     norm of what each head writes through W_O, per token
//   valueNorms         [nLayer, nHead, T]     || v_j W_O^h ||, per key token (only with { valueNorms })
//   logitsLast         [V]                    next-token logits after the last token
//   thumbnails         [nLayer, nHead, n, n]  instead of attentionAll, with { attention: 'thumbnails' }:
//                                             n = thumbnailCells, each cell the largest weight of a
//                                             thumbnailBin x thumbnailBin block (Model::attention_thumbnails)
//   roleScores         [nLayer, nHead, 6]     with them (Float64Array): every head's role scores, counted
//                                             by the forward pass (Model::head_role_scores; analysis.js's
//                                             SCORE_NAMES in order)
// nKvHead: the model's key/value heads (nHead for GPT-2); query head h reads h / (nHead / nKvHead).

/** The most cells a side a run's thumbnails hold (maps.js: the bin is the smallest power of two that fits the map in them). */
export const THUMBNAIL_SIZE = 128;

/** Rows and columns of each head's block in attentionAll (T unless the result keeps wider blocks). */
export function strideOf(result) {
  return result.stride ?? result.T;
}

/** Offset of attention weight (layer, head, q, k) in attentionAll. */
export function attentionIndex(result, layer, head, q, k) {
  const S = strideOf(result);
  return ((layer * result.nHead + head) * S + q) * S + k;
}

/**
 * Where one head's weights are: { data, offset, stride, rows }, weight (q, k) at
 * data[offset + q * stride + k] for q in rows ([begin, end); absent: every row < T). The result's
 * attentionAll, or for a result without maps ({ attention: 'thumbnails' }) the rows of a head's map a
 * page pulled for it (`result.pulled`: Map of layer * nHead + head -> { data, stride, rows }, data
 * holding rows [rows[0], rows[1]) one after the other, every column; without rows, every row < T);
 * null when neither holds the head.
 */
export function headSource(result, layer, head) {
  if (result.attentionAll)
    return { data: result.attentionAll, offset: headOffset(result, layer, head), stride: strideOf(result) };
  const m = result.pulled?.get(layer * result.nHead + head);
  if (!m) return null;
  return m.rows
    ? { data: m.data, offset: -m.rows[0] * m.stride, stride: m.stride, rows: m.rows }
    : { data: m.data, offset: 0, stride: m.stride };
}

/** True when `src` (headSource) holds row q. */
export const holdsRow = (src, q) => !!src && (!src.rows || (q >= src.rows[0] && q < src.rows[1]));

/** Attention weight of query q on key k in one head (NaN when the result holds no weights of that row: headSource). */
export function attentionAt(result, layer, head, q, k) {
  if (result.attentionAll) return result.attentionAll[attentionIndex(result, layer, head, q, k)];
  const src = headSource(result, layer, head);
  return holdsRow(src, q) ? src.data[src.offset + q * src.stride + k] : NaN;
}

/** Offset of the first weight of one head's block in attentionAll (row q starts q * strideOf() later). */
export function headOffset(result, layer, head) {
  const S = strideOf(result);
  return (layer * result.nHead + head) * S * S;
}

/** Offset of one head's contribution norm at token t in contributionNorms. */
export function contributionIndex(result, layer, head, t) {
  return (layer * result.nHead + head) * result.T + t;
}

function checkLayerHead(data, layer, head) {
  if (!Number.isInteger(layer) || layer < 0 || layer >= data.nLayer)
    throw new Error(`layer ${layer} is outside [0, ${data.nLayer})`);
  if (!Number.isInteger(head) || head < 0 || head >= data.nHead)
    throw new Error(`head ${head} is outside [0, ${data.nHead})`);
}

/** The typed arrays of a result: what a worker transfers instead of copying. */
const RESULT_BUFFERS = [
  'attentionAll',
  'attentionRows',
  'thumbnails',
  'thumbnailRows',
  'pulledRows',
  'roleScores',
  'contributionNorms',
  'contributionNormRows',
  'valueNorms',
  'logitsLast',
];

/** A result's plain data (no methods) and the buffers to transfer with it across postMessage. */
export function resultForTransfer(result) {
  const data = {};
  for (const [key, value] of Object.entries(result)) if (typeof value !== 'function') data[key] = value;
  return { data, transfer: RESULT_BUFFERS.filter((k) => data[k]).map((k) => data[k].buffer) };
}

/** True when two lists of switched-off heads ([[layer, head], ...]) are the same, in the same order. */
export const sameAblate = (a = [], b = []) =>
  a.length === b.length && a.every(([l, h], i) => l === b[i][0] && h === b[i][1]);

/** How many leading entries two id sequences share. */
export function sharedPrefixLength(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * The tokens [from, to) a view shows of T around token `around` when it shows at most `size`: all of
 * them, or `size` centred on it and moved inside [0, T) at either end. The one window rule: the lines
 * view, the token strip, and the rows a page pulls of a long text's head (run()'s `pull.window`).
 */
export function windowAround(T, around, size) {
  if (T <= size) return [0, T];
  const from = Math.max(0, Math.min(T - size, Math.floor(around - size / 2)));
  return [from, from + size];
}

// Results whose attention buffer went into a later result (see `reuse` below), and results that
// a run in flight (in a worker) will update: no second run may count on their rows meanwhile.
const superseded = new WeakSet();
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
    superseded.has(result) ||
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
  if (superseded.has(previous)) throw new Error('this result was already updated by a later run');
  const A = previous.attentionAll;
  if (strideOf(previous) !== S || A.length !== nLayer * nHead * S * S)
    throw new Error('the attention rows do not fit the earlier result');
  const rowsPerHead = T - rowsFrom;
  for (let head = 0; head < nLayer * nHead; head++) {
    const from = head * rowsPerHead * S;
    A.set(attentionRows.subarray(from, from + rowsPerHead * S), (head * S + rowsFrom) * S);
  }
  superseded.add(previous);
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
  if (superseded.has(previous)) throw new Error('this result was already updated by a later run');
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
  if (C.buffer === old.buffer) superseded.add(previous);
  const data = { ...update, thumbnails: C };
  delete data.thumbnailRows;
  delete data.thumbnailRowsFrom;
  return data;
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
  if (norms.buffer === old.buffer) superseded.add(previous);
  data.contributionNorms = norms;
  return data;
}

/** A run's data with what it left to `previous` put back: tokens, contribution norms, and attention rows or thumbnail rows. */
export function withPrevious(previous, update) {
  if (update.contributionNormRows) {
    if (superseded.has(previous)) throw new Error('this result was already updated by a later run');
    normsFit(previous, update); // before anything of `previous` is written
  }
  let data = update.tokensFrom ? withPreviousTokens(previous, update) : update;
  if (data.attentionRows) data = withPreviousRows(previous, data);
  else if (data.thumbnailRows) data = withPreviousThumbnails(previous, data);
  return data.contributionNormRows ? withPreviousNorms(previous, data) : data;
}

function checkCurrent(result) {
  if (superseded.has(result))
    throw new Error('this result was updated by a later run (passed as its `reuse`): use that one');
}

/**
 * The plain data of a run or a generation step (what run() adds accessors to): `fields` ({ text,
 * tokens, T, ablate, droppedTokens, reusedTokens, stride, rowsFrom }), the model's shape from
 * `config`, the engine's results `out` (attention as attentionRows when rows before rowsFrom are left
 * out, else attentionAll; none without `maps`), the loss when given, and the engine's value sizes
 * when given (valueNorms: a Float32Array, or null).
 */
export function plainData(out, fields, config, { loss, valueNorms = null, maps = true }) {
  const { text, tokens, T, ablate, droppedTokens, reusedTokens, stride, rowsFrom } = fields;
  const { nLayer, nHead, nKvHead } = config;
  const data = {
    text,
    tokens,
    T,
    nLayer,
    nHead,
    nKvHead,
    ablate: ablate.map(([l, hd]) => [l, hd]),
    patch: null,
    droppedTokens,
    reusedTokens,
    stride,
    rowsFrom,
    contributionNorms: out.contributionNorms,
    logitsLast: out.logitsLast,
    topNext: out.topNext,
  };
  if (maps) data[rowsFrom > 0 ? 'attentionRows' : 'attentionAll'] = out.attentionRows;
  if (loss !== undefined) data.loss = loss;
  if (valueNorms) data.valueNorms = valueNorms;
  return data;
}

// Tokens [first, T) of the engine's results `out` as run()'s Token objects, their byte spans mapped
// to string indices by `map` (generation.js's byteToIndexMaps())
export function engineTokens(out, T, map, first = 0) {
  return tokenArrays(
    out,
    T,
    (text, id, byteStart, byteEnd) => ({ text, id, start: map.start(byteStart), end: map.end(byteEnd) }),
    first,
  );
}

/** The engine's tokens as the binding sends them (parallel arrays: cpp/bindings/embind.cpp,
 *  set_token_arrays), [first, T) (all by default), each made by make(text, id, byteStart, byteEnd). */
export function tokenArrays(
  out,
  T = out.tokenIds.length,
  make = (text, id, byteStart, byteEnd) => ({ text, id, byteStart, byteEnd }),
  first = 0,
) {
  const { tokenIds, tokenByteStarts, tokenByteEnds, tokenTextBytes, tokenTextEnds } = out;
  const tokens = new Array(Math.max(0, T - first));
  let from = first > 0 ? tokenTextEnds[first - 1] : 0;
  for (let i = first; i < T; i++) {
    const to = tokenTextEnds[i];
    tokens[i - first] = make(utf8Piece(tokenTextBytes, from, to), tokenIds[i], tokenByteStarts[i], tokenByteEnds[i]);
    from = to;
  }
  return tokens;
}

// ignoreBOM: a token's text that starts with U+FEFF keeps it (the default decoder drops a leading one)
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
// bytes[from, to) as a string: most tokens are a few ASCII bytes, which need no decoder
function utf8Piece(bytes, from, to) {
  let ascii = to - from <= 64; // (apply's arguments stay few)
  for (let i = from; i < to && ascii; i++) ascii = bytes[i] < 0x80;
  return ascii ? String.fromCharCode.apply(null, bytes.subarray(from, to)) : utf8.decode(bytes.subarray(from, to));
}

/** Adds the accessor methods to a result's data (built by the engine, or received from a worker). */
export function makeResult(data) {
  const S = strideOf(data);
  const result = {
    ...data,
    /** One head's attention, T x T row-major (a copy). */
    attention(layer, head) {
      checkCurrent(result);
      checkLayerHead(data, layer, head);
      if (!data.attentionAll)
        throw new Error(
          "this result keeps no attention maps (run with attention: 'thumbnails'): read thumbnail(), or pull a part with model.attentionTile()",
        );
      const o = headOffset(data, layer, head);
      if (S === data.T) return data.attentionAll.slice(o, o + S * S);
      const out = new Float32Array(data.T * data.T);
      for (let q = 0; q < data.T; q++) out.set(data.attentionAll.subarray(o + q * S, o + q * S + data.T), q * data.T);
      return out;
    },
    /** One head's thumbnail, thumbnailCells x thumbnailCells row-major (a copy); only with { attention: 'thumbnails' }. */
    thumbnail(layer, head) {
      checkCurrent(result);
      checkLayerHead(data, layer, head);
      if (!(data.thumbnails instanceof Float32Array))
        throw new Error("this result has no thumbnails: run with { attention: 'thumbnails' }");
      const n = data.thumbnailCells;
      const o = (layer * data.nHead + head) * n * n;
      return data.thumbnails.slice(o, o + n * n);
    },
    /** One head's contribution norm at every token (a copy). */
    headContribution(layer, head) {
      checkCurrent(result);
      checkLayerHead(data, layer, head);
      const o = contributionIndex(data, layer, head, 0);
      return data.contributionNorms.slice(o, o + data.T);
    },
    /** One head's value sizes at every token (a copy); only for a run with { valueNorms: true }. */
    headValueNorms(layer, head) {
      checkCurrent(result);
      checkLayerHead(data, layer, head);
      if (!(data.valueNorms instanceof Float32Array))
        throw new Error('this result has no value sizes: run with { valueNorms: true }');
      const o = contributionIndex(data, layer, head, 0);
      return data.valueNorms.slice(o, o + data.T);
    },
  };
  return result;
}

// [[layer, head], ...] as the engine takes it: [l0, h0, l1, h1, ...]
export function flatAblate(ablate) {
  if (!Array.isArray(ablate)) throw new Error('ablate must be an array of [layer, head] pairs');
  const flat = [];
  for (const pair of ablate) {
    if (!Array.isArray(pair) || pair.length !== 2 || !pair.every(Number.isInteger))
      throw new Error(`ablate entries must be [layer, head] pairs of integers, got ${JSON.stringify(pair)}`);
    flat.push(pair[0], pair[1]);
  }
  return flat;
}

/** Parses switched-off heads, "0:1,2:3" (or "0.1"), into [[0, 1], [2, 3]]; duplicates dropped. */
export function parseAblate(s) {
  if (!s) return [];
  const out = [];
  for (const part of String(s).split(',')) {
    const m = /^\s*(\d+)\s*[:.]\s*(\d+)\s*$/.exec(part);
    if (m && !out.some(([l, h]) => l === +m[1] && h === +m[2])) out.push([+m[1], +m[2]]);
  }
  return out;
}

/** [[0, 1], [2, 3]] -> "0:1,2:3". */
export function formatAblate(pairs) {
  return pairs.map(([l, h]) => `${l}:${h}`).join(',');
}
