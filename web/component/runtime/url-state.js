// A view's state and its URL form (used by the iframe mode, the page's address bar and the embed
// snippet): which views exist, the text shown when none is given, and query string <-> state.

export const VIEWS = ['grid', 'heatmap', 'lines', 'inside', 'combine'];
export const DEFAULT_TEXT = 'The chef, who trained in Paris, cooked the meal quickly.';

/**
 * Reads { model, text, layer, head, heads, token, links, view, inside, step, by } from URL query
 * parameters. inside: the query token of "Inside this head" (an article links to one step with
 * inside=<token>&step=<1-6>); by: 'value' colours the attention views by weight × value size.
 */
export function stateFromQuery(search) {
  const q = new URLSearchParams(search);
  const int = (name) => {
    const v = q.get(name);
    if (v === null || v === '') return undefined;
    const n = Number(v);
    return Number.isInteger(n) && n >= 0 ? n : undefined;
  };
  const state = {};
  if (q.has('model')) state.model = q.get('model');
  if (q.has('text')) state.text = q.get('text');
  const layer = int('layer');
  const head = int('head');
  const token = int('token');
  const links = int('links');
  const inside = int('inside');
  const step = int('step');
  if (inside !== undefined) state.inside = inside;
  if (step !== undefined && step >= 1 && step <= 6) state.step = step;
  if (q.get('by') === 'value') state.by = 'value';
  if (layer !== undefined) state.layer = layer;
  if (head !== undefined) state.head = head;
  if (token !== undefined) state.token = token;
  if (links !== undefined) state.links = links;
  if (q.has('heads')) state.heads = parseHeads(q.get('heads'));
  const view = q.get('view');
  if (VIEWS.includes(view)) state.view = view;
  return state;
}

export function parseHeads(s) {
  if (!s) return [];
  return [
    ...new Set(
      String(s)
        .split(',')
        .map((x) => Number(x.trim()))
        .filter((n) => Number.isInteger(n) && n >= 0),
    ),
  ];
}

/** The query string (without '?') holding a state. */
export function stateToQuery(state) {
  const q = new URLSearchParams();
  if (state.model) q.set('model', state.model);
  if (state.text !== undefined) q.set('text', state.text);
  if (Number.isInteger(state.layer)) q.set('layer', String(state.layer));
  if (Number.isInteger(state.head)) q.set('head', String(state.head));
  if (state.heads && state.heads.length > 1) q.set('heads', state.heads.join(','));
  if (Number.isInteger(state.token)) q.set('token', String(state.token));
  if (Number.isInteger(state.links)) q.set('links', String(state.links));
  if (state.view) q.set('view', state.view);
  if (Number.isInteger(state.inside)) q.set('inside', String(state.inside));
  if (Number.isInteger(state.step) && state.step > 1) q.set('step', String(state.step));
  if (state.by === 'value') q.set('by', 'value');
  return q.toString();
}
