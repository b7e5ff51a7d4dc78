// Which query heads share a key/value head (grouped-query attention: query head h reads key/value
// head floor(h / (nHead / nKvHead))), and the sentences that say so. Pure: the grid, the info line
// and the "Inside this head" panel read it; tests/js/unit/kv-groups.test.js checks it.

/** The key/value head that query head `head` reads. */
export const kvHeadOf = (nHead, nKvHead, head) => Math.floor(head / (nHead / nKvHead));

/** [{ kv, first, last }, ...]: each key/value head and the query heads [first, last] that read it. */
export function kvGroups(nHead, nKvHead) {
  const size = nHead / nKvHead;
  return Array.from({ length: nKvHead }, (_, kv) => ({ kv, first: kv * size, last: (kv + 1) * size - 1 }));
}

const heads = ({ first, last }) => (first === last ? `head ${first}` : `heads ${first}-${last}`);

/** "heads 0-2 share key/value head 0" for the group of `head`; '' when every head has its own. */
export function headSharing(nHead, nKvHead, head) {
  if (!(nKvHead < nHead)) return '';
  const g = kvGroups(nHead, nKvHead)[kvHeadOf(nHead, nKvHead, head)];
  return `${heads(g)} share key/value head ${g.kv}`;
}

/** The name of the sharing: 'multi-head' (every head its own), 'multi-query' (all one) or 'grouped-query'. */
export function sharingName(nHead, nKvHead) {
  if (!(nKvHead < nHead)) return 'multi-head';
  return nKvHead === 1 ? 'multi-query' : 'grouped-query';
}

/**
 * How a layer's heads share keys and values, in one sentence: every head its own (multi-head),
 * all one (multi-query), or the groups (at most four named, then how many more).
 */
export function sharingSentence(nHead, nKvHead) {
  const kind = sharingName(nHead, nKvHead);
  if (kind === 'multi-head') return `each of the ${nHead} heads has its own keys and values`;
  if (kind === 'multi-query') return `all ${nHead} heads share one key/value head (multi-query attention)`;
  const groups = kvGroups(nHead, nKvHead);
  const named = groups.slice(0, 4).map((g) => `${heads(g)} share key/value head ${g.kv}`);
  const more = groups.length > 4 ? `, … (${nKvHead} key/value heads, ${nHead / nKvHead} query heads each)` : '';
  return `${named.join(', ')}${more} (grouped-query attention)`;
}

/** "6.0 KB" / "96 bytes": a key/value cache size per token. */
export function cacheBytes(bytes) {
  if (bytes < 1000) return `${bytes} bytes`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(1)} KB`;
  return `${(bytes / 1e6).toFixed(2)} MB`;
}
