// The layout of a run's result, in one place: where a head's attention sits in the flat arrays,
// how a result crosses a worker boundary, and the "layer:head,..." form of switched-off heads.
//
// Shapes (row-major, as the engine writes them):
//   attentionAll       [nLayer, nHead, T, T]  row q = query token, column k = key token (k <= q)
//   contributionNorms  [nLayer, nHead, T]     norm of what each head writes through W_O, per token
//   logitsLast         [V]                    next-token logits after the last token

/** Offset of attention weight (layer, head, q, k) in attentionAll. */
export function attentionIndex(result, layer, head, q, k) {
  const T = result.T;
  return ((layer * result.nHead + head) * T + q) * T + k;
}

/** Attention weight of query q on key k in one head. */
export function attentionAt(result, layer, head, q, k) {
  return result.attentionAll[attentionIndex(result, layer, head, q, k)];
}

/** Offset of the first weight of one head's T x T block in attentionAll. */
export function headOffset(result, layer, head) {
  return (layer * result.nHead + head) * result.T * result.T;
}

/** Offset of one head's contribution norm at token t in contributionNorms. */
export function contributionIndex(result, layer, head, t) {
  return (layer * result.nHead + head) * result.T + t;
}

function checkLayerHead(data, layer, head) {
  if (!Number.isInteger(layer) || layer < 0 || layer >= data.nLayer) throw new Error(`layer ${layer} is outside [0, ${data.nLayer})`);
  if (!Number.isInteger(head) || head < 0 || head >= data.nHead) throw new Error(`head ${head} is outside [0, ${data.nHead})`);
}

/** The typed arrays of a result: what a worker transfers instead of copying. */
const RESULT_BUFFERS = ['attentionAll', 'contributionNorms', 'logitsLast'];

/** A result's plain data (no methods) and the buffers to transfer with it across postMessage. */
export function resultForTransfer(result) {
  const data = {};
  for (const [key, value] of Object.entries(result)) if (typeof value !== 'function') data[key] = value;
  return { data, transfer: RESULT_BUFFERS.map((k) => data[k].buffer) };
}

/** Adds the accessor methods to a result's data (built by the engine, or received from a worker). */
export function makeResult(data) {
  const TT = data.T * data.T;
  return {
    ...data,
    /** One head's attention, T x T row-major (a copy). */
    attention(layer, head) {
      checkLayerHead(data, layer, head);
      const o = headOffset(data, layer, head);
      return data.attentionAll.slice(o, o + TT);
    },
    /** One head's contribution norm at every token (a copy). */
    headContribution(layer, head) {
      checkLayerHead(data, layer, head);
      const o = contributionIndex(data, layer, head, 0);
      return data.contributionNorms.slice(o, o + data.T);
    },
  };
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
