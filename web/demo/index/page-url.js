// The demo page's URL: what is on screen as a query (the view's keys of url-state.js, the panels' own
// keys, the lab's switched-off heads, ?threads=), written in place a moment after the views settle,
// so that a link reproduces what the reader sees.
import { stateToQuery, focusToken } from '../../component/headscope-view.js';

// ?threads=N as the page was opened with: it chose the engine, so the URL keeps it
export const URL_THREADS = new URLSearchParams(location.search).get('threads');

// a render can come every frame; the URL is written once the views have been still this long
const SETTLE_MS = 300;

/**
 * `page`: the demo's page object; `panels()`: the panels whose query() adds keys of their own
 * (patching: clean, corrupted, ...; why, whyview; circuits). Gives urlState() (the view's state as
 * url-state.js takes it) and written() (call after each render: the URL follows once it settles).
 */
export function installPageUrl({ page, panels }) {
  const { state } = page;

  // A model from the reader's disk has no URL: the URL keeps the text and the view, not the model.
  function urlState() {
    return {
      model: page.local ? undefined : state.model,
      text: state.text,
      layer: state.layer,
      head: state.head,
      heads: state.heads,
      token: state.token ?? undefined,
      view: state.view,
      links: state.links,
      by: state.by,
      ...(state.insideOpen && page.result ? { inside: focusToken(page.result, state), step: state.step } : {}),
    };
  }

  // the panels' own keys and the lab's switched-off heads
  function panelsQuery() {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(Object.assign({}, ...panels().map((p) => p.query()))))
      if (v !== undefined) q.set(k, v);
    const off = new URLSearchParams(location.search).get('off');
    if (off) q.set('off', off);
    return q.toString();
  }

  let timer = 0;
  function written() {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const query = [stateToQuery(urlState()), panelsQuery()].filter(Boolean).join('&');
      const threads = URL_THREADS === null ? '' : `${query ? '&' : ''}threads=${encodeURIComponent(URL_THREADS)}`;
      history.replaceState(null, '', `${location.pathname}?${query}${threads}`);
    }, SETTLE_MS);
  }

  return { urlState, written };
}
