// Where the demo page opens when it shows the article's sentence: the head (and query token) its
// model card finds most telling, with the verb-to-subject heads' links measured live through the
// engine. The rule itself is openingHead (models.js); this module decides when it applies and
// supplies the weights the card does not list.
import { attentionAt } from '../../lib/result.js';
import { openingHead, verbSubjectHeads } from '../common/models.js';

/**
 * Whether the page opens on the card's head: the text is the article's sentence, and the URL
 * (`fromUrl`, stateFromQuery's result) chose no head.
 */
function opensOnCard(card, text, fromUrl) {
  return !!card && fromUrl.layer === undefined && fromUrl.head === undefined && text === card.chef_sentence?.text;
}

/**
 * A head's attention from "cooked" to "chef" on the article's sentence, measured through the engine,
 * as openingHead's linkWeight (the card lists only the sentence's top three heads). undefined when
 * the card names no verb-to-subject head or the run fails.
 */
async function cardLinkWeight(model, card) {
  if (!verbSubjectHeads(card).length) return undefined;
  try {
    const r = await model.run(card.chef_sentence.text, { topK: 1 });
    return (layer, head, q, keys) =>
      layer < r.nLayer && head < r.nHead && q < r.T && keys.every((k) => k <= q)
        ? keys.reduce((s, k) => s + attentionAt(r, layer, head, q, k), 0)
        : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The head the page opens on for `text` with `model` and its `card`: { layer, head, token } (token
 * undefined when the card names none, or when the URL chose a token: the URL's choice stands), or
 * null when the page keeps its own start (no card, another text, a head chosen by the URL, or a head
 * the model does not have).
 */
export async function cardOpening(model, card, { text, fromUrl }) {
  if (!opensOnCard(card, text, fromUrl)) return null;
  const start = openingHead(card, { linkWeight: await cardLinkWeight(model, card) });
  const c = model.info.config;
  if (!start || start.layer >= c.nLayer || start.head >= c.nHead) return null;
  const token = fromUrl.token === undefined && Number.isInteger(start.token) ? start.token : undefined;
  return { layer: start.layer, head: start.head, token };
}
