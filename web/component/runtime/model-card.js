// A model's card (card.json beside its config.json: a shipped model's, or a folder URL's when it has
// one), fetched once per source and shared by the widgets of a page. The lab's verb-to-subject badge
// needs the card's probe sentences; a model without a card gives null, never an error.
import { modelFileUrls } from '../../lib/files.js';

const cards = new Map(); // model source key -> Promise<card | null>

/** The card of `source` (a shipped model's name, a folder URL, or '' for the default model), or null. */
export function modelCard(source) {
  const key = source ? String(source) : '';
  if (!cards.has(key)) cards.set(key, fetchCard(key));
  return cards.get(key);
}

async function fetchCard(key) {
  try {
    const located = modelFileUrls(key || undefined);
    if (!located) return null;
    const res = await fetch(new URL('card.json', located.urls.config));
    return res.ok ? await res.json() : null;
  } catch {
    return null; // no card (a folder without one, or offline before it was cached)
  }
}
