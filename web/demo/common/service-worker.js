// The demo site's service worker: the site keeps working offline once a reader has loaded it.
// web/demo/precache.mjs writes it into the built site with the site's file list in place of the
// placeholder below (so a new build is a new worker: the browser installs it, and on activation it
// replaces the old build's cache). Registered by common/offline.js; web/demo/article/README.md says
// what works offline.
//
// Hand-written, not Workbox: what it does is one strategy over one list, about a hundred lines, and
// Workbox's build step (workbox-build) brings a bundler and tens of packages into devDependencies for
// that. The list is still generated from the built files, so it cannot drift from the site.
//
// - install: the build's cache is filled with the site's shell: pages, styles, scripts, the engine's
//   .wasm builds, the model list and the cards. The models' files are cached when a page first uses
//   them, not at install: the article fetches a model only when its widget is scrolled to, and a
//   reader who reads the first screen should not download every model through this worker.
// - fetch: network first, the cache when the network fails. The demo's server sends every file
//   no-store so that a reload sees a fresh build; serving the cache first would show the previous
//   build on the reload after a rebuild (the new worker installs meanwhile, in the background).
//   Every good response of a listed file refreshes its copy.
// - Responses are stored whole, headers included: a page served from the cache keeps its
//   Content-Security-Policy and its cross-origin isolation (COOP, COEP), so the threaded engine
//   still runs offline.
// - A page that loaded before this worker controlled it names the models its widgets loaded
//   (common/offline.js, message 'cache'): a widget's Web Worker started before this one took over
//   fetches past it, and which engine build it took is its own choice (threads, relaxed SIMD), which
//   is why every build is in the shell. The named models' files not yet cached are fetched then.
'use strict';

/** { version, shell: [path], onUse: [path] }: paths relative to this worker's folder (onUse: models/NAME/FILE). */
const SITE = '__HEADSCOPE_SITE_FILES__';
const PREFIX = 'headscope-site-';
const CACHE = PREFIX + SITE.version;
const base = new URL('./', self.location.href);
const toUrl = (p) => new URL(p, base).href;
const SHELL = SITE.shell.map(toUrl);
const LISTED = new Set([...SHELL, ...SITE.onUse.map(toUrl)]);

/** The listed URL a request is for (a page's query string and the folder's index ignored), or null. */
function listedUrl(request) {
  // HEAD too: the article asks the engine's size that way (its download stated on the first screen)
  if (request.method !== 'GET' && request.method !== 'HEAD') return null;
  const url = new URL(request.url);
  if (url.origin !== base.origin) return null;
  url.hash = '';
  // a page is the same file whatever its query (article.html?model=heads-4); other files are asked
  // for without one
  if (request.mode === 'navigate') url.search = '';
  if (url.href === base.href) url.href = toUrl('index.html');
  return LISTED.has(url.href) ? url.href : null;
}

/** Whether a response is a whole, good one of this origin, to be stored. */
const storable = (response) => response.ok && response.status === 200 && response.type === 'basic';
const storing = new Map(); // url -> the put of a response a page is reading, until it is stored

self.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      // cache: 'reload': the files as the server has them now, not an HTTP cache's copies of an older build
      await cache.addAll(SHELL.map((url) => new Request(url, { cache: 'reload' })));
      // a new build takes over at once: pages fetch from the network first, so no open page is
      // served a mix of builds while it is online
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
      // the pages already open are served from now on (their files already fetched: message 'cache')
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('fetch', (event) => {
  const url = listedUrl(event.request);
  if (!url) return; // not a file of this build (a test's fixture, a model folder elsewhere): the network's
  event.respondWith(
    (async () => {
      const head = event.request.method === 'HEAD';
      try {
        if (head) return await fetch(event.request);
        // a navigation is fetched as asked (its mode and redirects), and stored under the page's file
        const response = await fetch(event.request.mode === 'navigate' ? event.request : url);
        if (storable(response)) {
          // stored beside, not before, the answer: the page reads the body (a model's progress) as it arrives
          const copy = response.clone();
          const put = caches
            .open(CACHE)
            .then((cache) => cache.put(url, copy))
            .catch(() => {})
            .finally(() => storing.delete(url));
          storing.set(url, put);
          event.waitUntil(put);
        }
        return response;
      } catch (error) {
        const cached = await caches.match(url, { cacheName: CACHE });
        if (!cached) throw error;
        return head ? new Response(null, { status: cached.status, headers: cached.headers }) : cached;
      }
    })(),
  );
});

// { type: 'cache', models: [name] }: models a page loaded without this worker; their listed files not
// yet cached are fetched and stored, then the message's port is answered
self.addEventListener('message', (event) => {
  const { type, models } = event.data || {};
  if (type !== 'cache' || !Array.isArray(models)) return;
  const files = SITE.onUse.filter((f) => models.some((m) => typeof m === 'string' && f.startsWith(`models/${m}/`)));
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      for (const url of files.map(toUrl)) {
        await storing.get(url); // a page's read of it, stored first
        if (await cache.match(url)) continue;
        const response = await fetch(url).catch(() => null);
        if (response && storable(response)) await cache.put(url, response);
      }
      event.ports[0]?.postMessage({ type: 'cached' });
    })(),
  );
});
