// Makes the site work offline once loaded: registers its service worker (service-worker.js, written
// into the built site by web/demo/precache.mjs) and names to it the models this page's widgets
// loaded. On a first visit the page does not wait for the worker: the widgets near the first screen
// start at once, in Web Workers that fetch their model past a service worker still installing, so
// their models are named once the page is controlled (the worker fetches what it has not cached).
// <html data-offline> says where it stands: 'caching', then 'ready' (the page is controlled and
// every model named so far is cached), or 'off' (no service worker: a browser without them, a page
// not served over http(s), or a registration that failed).
import { defaultModelName } from '../../lib/files.js';

const root = document.documentElement;
const WIDGETS = 'headscope-view, headscope-lab';

/** Registers the worker at `url` (beside the pages) and names to it the models the widgets load. */
export function keepOffline(url = 'service-worker.js') {
  const sw = navigator.serviceWorker;
  if (!sw || !/^https?:$/.test(location.protocol)) {
    root.dataset.offline = 'off';
    return;
  }
  root.dataset.offline = 'caching';
  const named = new Set(); // models the widgets have loaded
  let unnamed = []; // models rendered, not yet named to the worker in control
  let waiting = 0; // names the worker has not answered yet
  const settle = () => {
    if (!waiting && !unnamed.length && sw.controller) root.dataset.offline = 'ready';
  };
  const name = () => {
    if (!sw.controller || !unnamed.length) return settle();
    const channel = new MessageChannel();
    waiting++;
    root.dataset.offline = 'caching';
    channel.port1.onmessage = () => {
      waiting--;
      settle();
    };
    sw.controller.postMessage({ type: 'cache', models: unnamed }, [channel.port2]);
    unnamed = [];
  };
  // a widget has loaded its model once it shows a result (data-tokens); a folder URL is not the
  // site's and is ignored by the worker
  const rendered = (el) => {
    const model = el.getAttribute('model') || defaultModelName;
    if (!el.dataset.tokens || named.has(model)) return;
    named.add(model);
    unnamed.push(model);
    name();
  };
  document.querySelectorAll(WIDGETS).forEach(rendered);
  new MutationObserver((changes) => {
    for (const c of changes) if (c.target.matches(WIDGETS)) rendered(c.target);
  }).observe(document.body, { subtree: true, attributeFilter: ['data-tokens'] });
  if (sw.controller) settle();
  // a worker that takes over (the first, or a new build's, whose cache starts without models) is told
  // every model so far
  sw.addEventListener('controllerchange', () => {
    unnamed = [...named];
    name();
  });
  // the page works without the worker: it only loses being readable offline
  sw.register(url).catch((e) => {
    root.dataset.offline = 'off';
    console.warn(`headscope: this page will not work offline (${e.message})`);
  });
}
