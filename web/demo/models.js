// The models a demo site holds, their cards, and the head the page opens on.
//   models/index.json is written by web/demo/build.sh: { models: [{ name, card }] }.

let indexPromise = null;

/** The models this site holds: [{ name, card: boolean }]; [] when the index cannot be read. */
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

/**
 * The head (and query token) the page opens on for the article's sentence, from the model card:
 * the link to 'chef' whose best head is furthest above uniform attention, when it is at least 1.5x
 * uniform (a link is only shown where it is clearly above chance); otherwise the strongest
 * previous-token head (score >= 0.5) at the query token of 'cooked'. null when neither exists.
 */
export function openingHead(card) {
  const links = Object.values(card?.chef_sentence?.links || {});
  let best = null;
  for (const link of links) {
    const top = link.top?.[0];
    if (!top || !(link.uniform_baseline > 0)) continue;
    const ratio = top.weight / link.uniform_baseline;
    if (ratio >= 1.5 && (!best || ratio > best.ratio)) best = { layer: top.layer, head: top.head, token: link.query_token, ratio };
  }
  if (best) return best;
  const prev = (card?.heads || []).filter((h) => h.prev_token >= 0.5).sort((a, b) => b.prev_token - a.prev_token)[0];
  if (prev) return { layer: prev.layer, head: prev.head, token: card.chef_sentence?.links?.['cooked->chef']?.query_token };
  return null;
}

/** "124.4 M parameters, 498 MB" for a model's info. */
export function modelSize(info) {
  const mb = info.weightBytes / 1e6;
  return `${(info.parameterCount / 1e6).toFixed(info.parameterCount < 1e7 ? 2 : 1)} M parameters, ${mb < 10 ? mb.toFixed(1) : mb.toFixed(0)} MB of weights`;
}
