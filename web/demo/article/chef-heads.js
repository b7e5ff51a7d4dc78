// The worked example's heads: which head links a word back to an earlier one on the reader's text,
// by roles.json's verb-to-subject score (attention from the later word's last token to the earlier
// word's tokens, divided by the attention a uniform head would give them), for any pair of words.
// Pure: reads a run result (tokens with spans, attention(layer, head)), so it is tested in Node.

/** The tokens covering the first whole-word occurrence of `word` in `text` (case-insensitive): indices, or []. */
export function wordTokens(tokens, text, word) {
  const re = new RegExp(`\\b${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'i');
  const m = re.exec(text);
  if (!m) return [];
  const start = m.index;
  const end = start + word.length;
  const out = [];
  tokens.forEach((t, i) => {
    if (t.end > start && t.start < end) out.push(i);
  });
  return out;
}

/**
 * For every head: how strongly the last token of `from` attends to the tokens of `to`, as
 * { ratio (× uniform), weight (the attention itself) }. Returns { query, keys, heads: [{ layer,
 * head, ratio, weight }] strongest first } or null when a word is missing or `to` is not earlier.
 */
export function linkScores(result, from, to) {
  const q = wordTokens(result.tokens, result.text, from);
  const keys = wordTokens(result.tokens, result.text, to);
  if (!q.length || !keys.length) return null;
  const query = q[q.length - 1];
  if (keys[keys.length - 1] >= query) return null;
  const T = result.T;
  const uniform = keys.length / (query + 1); // what a head spreading its attention evenly would give
  const heads = [];
  for (let layer = 0; layer < result.nLayer; layer++)
    for (let head = 0; head < result.nHead; head++) {
      const a = result.attention(layer, head);
      let weight = 0;
      for (const k of keys) weight += a[query * T + k];
      heads.push({ layer, head, ratio: weight / uniform, weight });
    }
  heads.sort((x, y) => y.ratio - x.ratio || x.layer - y.layer || x.head - y.head);
  return { query, keys, heads };
}
