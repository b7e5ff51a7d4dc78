// The layout of a run's result, in one place: where a head's attention sits in the flat arrays,
// how a result crosses a worker boundary, its accessors, and the "layer:head,..." form of
// switched-off heads. How a typed token's run is put together with an earlier result: reuse.js.
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

// Results whose buffers went into a later result (reuse.js: a run given them as `reuse`): their
// accessors throw from then on, since what they would read may have been overwritten or moved.
const superseded = new WeakSet();
/** Marks `result` as updated by a later run. */
export const supersede = (result) => superseded.add(result);
/** True when a later run updated `result` (supersede). */
export const isSuperseded = (result) => superseded.has(result);

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
