// A long text on the demo page: past MAP_BUDGET_FLOATS of full maps, a run returns every head's
// thumbnail instead of its map (run(text, { attention: 'thumbnails' })), the grid draws those, and
// the heads the detail views show are pulled from the engine (component/runtime/pulled-maps.js)
// before their result is drawn. At 1,000 tokens of GPT-2 small the full maps are 604 MB copied out
// of the engine and sent to the page at every run; the thumbnails are 9 MB, a pulled head 4 MB, and
// typing pulls only the new rows.
import { PulledMaps } from '../../component/runtime/pulled-maps.js';

// 128 MB of full maps (GPT-2 small's 144 heads at about 480 tokens; the default model's 32 heads at
// any text it reads): below it a run returns every map, as it always did
export const MAP_BUDGET_FLOATS = 1 << 25;

/**
 * page: the demo's state object ({ state, info, model, result }). Returns { runOptions(text),
 * absorb(result), ready(result), pull(result), clear() }: the run options for a text (what the run
 * returns of the maps: all, or thumbnails and the rows of the heads shown that the page lacks);
 * taking a result's rows in; whether `result` holds every head the views show; and a pull of those
 * it lacks, resolving to true when no later result was asked for meanwhile (the later one is drawn
 * instead).
 */
export function installLongText(page) {
  const { state } = page;
  // the rows pulled are those of the window around the focused token (pulled-maps.js)
  const pulled = new PulledMaps(() => page.model, { focus: () => state.token });
  let latest = null; // the newest result (of a run, or whose heads are being pulled): an older one is not drawn

  // tokens a text will have, from the last result's tokens per character (4 characters a token
  // before any), so that the mode is chosen before the run; a wrong guess only changes what the run
  // returns, not what the page shows
  function tokensOf(text) {
    const r = page.result;
    const perChar = r && r.text.length ? Math.max(0.25, r.T / r.text.length) : 0.25;
    return Math.ceil(text.length * perChar * 1.25);
  }

  function attentionMode(text) {
    const c = page.info?.config;
    if (!c || state.patch) return 'all'; // a patched run's texts are short, and its maps its own
    const T = Math.min(c.nPositions, tokensOf(text));
    return c.nLayer * c.nHead * T * T > MAP_BUDGET_FLOATS ? 'thumbnails' : 'all';
  }

  // the heads whose weights the views read: the selected one, and the lines view's of its layer
  function shownHeads({ nLayer, nHead }) {
    const heads = new Set([state.head]);
    if (state.view === 'lines') for (const h of state.heads) heads.add(h);
    return [...heads].filter((h) => h < nHead).map((h) => [Math.min(state.layer, nLayer - 1), h]);
  }

  function runOptions(text) {
    const attention = attentionMode(text);
    if (attention === 'all') return { attention };
    return { attention, pull: pulled.request(shownHeads(page.info.config), state.ablate) };
  }

  const ready = (result) => !pulled.missing(result, shownHeads(result)).length;

  // one pull at a time (the engine answers one call at a time anyway): a second waits for the first
  let queue = Promise.resolve();
  function pull(result) {
    latest = result;
    const next = queue.then(async () => {
      if (latest !== result) return false;
      await pulled.pull(result, pulled.missing(result, shownHeads(result)));
      return latest === result;
    });
    queue = next.catch(() => {});
    return next;
  }

  // every result of a run passes here first: a pull of an older one that ends after it is not drawn
  function absorb(result) {
    latest = result;
    pulled.absorb(result);
  }

  return { runOptions, absorb, ready, pull, clear: () => pulled.clear(), pulled };
}
