// The models a demo site holds, their cards, and the head the page opens on.
//   models/index.json is written by web/demo/build.sh: { models: [{ name, card, family, n_kv_head }] }
//   (card: whether the folder has card.json; family and n_kv_head: from that card, else null).
import { sharingSentence, cacheBytes } from '../../component/model/kv-groups.js';

let indexPromise = null;

/** The models this site holds: [{ name, card: boolean, family, n_kv_head }]; [] when the index cannot be read. */
export function modelIndex() {
  if (!indexPromise) {
    indexPromise = fetch('models/index.json')
      .then((res) => (res.ok ? res.json() : { models: [] }))
      .then((j) => (Array.isArray(j.models) ? j.models : []))
      .catch(() => []);
  }
  return indexPromise;
}

/** The model card (card.json) of a shipped model, when the site has one; else null. */
export async function loadCard(name) {
  try {
    const entry = (await modelIndex()).find((m) => m.name === name);
    if (!entry?.card) return null;
    const res = await fetch(`models/${encodeURIComponent(name)}/card.json`);
    return res.ok ? await res.json() : null;
  } catch {
    return null;
  }
}

// A link is only opened where it is clearly above chance: at least this many times the uniform share.
export const CLEAR_LINK_RATIO = 1.5;

/**
 * The card's verb-to-subject head, when its score (averaged over the card's probe sentences) reaches
 * the role's threshold (card.roles.thresholds, 3.0x uniform): { layer, head, score, threshold }; else null.
 * Old cards (no roles section) name none.
 */
export function verbSubjectHead(card) {
  const b = card?.roles?.best?.verb_to_subject;
  const threshold = Number(card?.roles?.thresholds?.verb_to_subject);
  if (!b || !Number.isInteger(b.layer) || !Number.isInteger(b.head) || !(threshold > 0) || !(b.score >= threshold))
    return null;
  return { layer: b.layer, head: b.head, score: b.score, threshold };
}

/** Every head the card counts as verb to subject (score >= the card's threshold), strongest first. */
export function verbSubjectHeads(card) {
  const threshold = Number(card?.roles?.thresholds?.verb_to_subject);
  if (!(threshold > 0)) return [];
  const out = (card?.heads || [])
    .filter((h) => Number.isInteger(h.layer) && Number.isInteger(h.head) && h.verb_to_subject >= threshold)
    .map((h) => ({ layer: h.layer, head: h.head, score: h.verb_to_subject, threshold }));
  const best = verbSubjectHead(card);
  if (best && !out.some((h) => h.layer === best.layer && h.head === best.head)) out.push(best);
  return out.sort((a, b) => b.score - a.score);
}

/**
 * The head (and query token) the page opens on for the article's sentence, from the model card:
 *  1. a verb-to-subject head of the card (verbSubjectHeads) at "cooked": of those whose attention
 *     from "cooked" to "chef" on this sentence is clearly above chance (at least CLEAR_LINK_RATIO x
 *     uniform), the one that puts the most on "chef".
 *     That weight is the card's (chef_sentence.links['cooked->chef'].top) when it lists the head, else
 *     `linkWeight(layer, head, queryToken, keyTokens)` (measured live by the page), else unknown (skip);
 *  2. otherwise the link to 'chef' whose best head is furthest above uniform attention, when at least
 *     CLEAR_LINK_RATIO x uniform;
 *  3. otherwise the strongest previous-token head (score >= 0.5) at the query token of 'cooked'.
 * null when none exists. Result: { layer, head, token, ratio?, role? ('verb_to_subject') }.
 */
export function openingHead(card, { linkWeight } = {}) {
  const links = card?.chef_sentence?.links || {};
  const cooked = links['cooked->chef'];
  if (cooked && Number.isInteger(cooked.query_token) && cooked.uniform_baseline > 0) {
    let chosen = null;
    for (const v2s of verbSubjectHeads(card)) {
      const listed = (cooked.top || []).find((t) => t.layer === v2s.layer && t.head === v2s.head);
      const weight = listed
        ? listed.weight
        : linkWeight?.(v2s.layer, v2s.head, cooked.query_token, cooked.key_tokens || []);
      const ratio = weight / cooked.uniform_baseline;
      if (Number.isFinite(ratio) && ratio >= CLEAR_LINK_RATIO && (!chosen || ratio > chosen.ratio)) {
        chosen = { layer: v2s.layer, head: v2s.head, token: cooked.query_token, ratio, role: 'verb_to_subject' };
      }
    }
    if (chosen) return chosen;
  }
  let best = null;
  for (const link of Object.values(links)) {
    const top = link.top?.[0];
    if (!top || !(link.uniform_baseline > 0)) continue;
    const ratio = top.weight / link.uniform_baseline;
    if (ratio >= CLEAR_LINK_RATIO && (!best || ratio > best.ratio))
      best = { layer: top.layer, head: top.head, token: link.query_token, ratio };
  }
  if (best) return best;
  const prev = (card?.heads || []).filter((h) => h.prev_token >= 0.5).sort((a, b) => b.prev_token - a.prev_token)[0];
  if (prev) return { layer: prev.layer, head: prev.head, token: cooked?.query_token };
  return null;
}

/** "124.4 M parameters, 498 MB of weights" for a model's info, and how they are held unless float32
 *  ("166 MB of weights in 8 bits"): a model in 8 bits computes slightly different numbers. */
export function modelSize(info) {
  const mb = info.weightBytes / 1e6;
  const held = { f16: ' in F16', q8: ' in 8 bits' }[info.weights] ?? '';
  return `${(info.parameterCount / 1e6).toFixed(info.parameterCount < 1e7 ? 2 : 1)} M parameters, ${mb < 10 ? mb.toFixed(1) : mb.toFixed(0)} MB of weights${held}`;
}

/**
 * How the model's heads share keys and values, and what each token costs in key/value cache: "all 8
 * heads share one key/value head (multi-query attention); 2.0 KB of key/value cache per token".
 */
export function cacheLine(info) {
  const c = info.config;
  return `${sharingSentence(c.nHead, c.nKvHead ?? c.nHead)}; ${cacheBytes(c.kvCacheBytesPerToken)} of key/value cache per token`;
}
