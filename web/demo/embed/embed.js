// iframe mode: the URL query holds the whole state (model, text, layer, head, heads, token,
// view, inside and step for view=inside, by, and optionally theme=light|dark and edit=1); this page
// renders just that widget. A link with inside= and no view opens "Inside this head".
import { stateFromQuery, stateToQuery, DEFAULT_TEXT } from '../../component/headscope-view.js';

const query = new URLSearchParams(location.search);
const state = stateFromQuery(location.search);
const view = document.createElement('headscope-view');
view.setAttribute('text', state.text ?? DEFAULT_TEXT);
view.setAttribute('view', state.view ?? (state.inside !== undefined ? 'inside' : 'heatmap'));
if (state.model) view.setAttribute('model', state.model);
for (const k of ['layer', 'head', 'token', 'inside', 'step'])
  if (Number.isInteger(state[k])) view.setAttribute(k, String(state[k]));
if (state.by) view.setAttribute('by', state.by);
if (state.heads?.length) view.setAttribute('heads', state.heads.join(','));
const theme = query.get('theme');
if (theme === 'light' || theme === 'dark') {
  view.setAttribute('theme', theme);
  document.body.dataset.theme = theme;
}
if (query.get('edit') === '1') view.setAttribute('editable', '');
document.getElementById('widget').appendChild(view);
document.getElementById('open-full').href = `./?${stateToQuery(state)}`;
