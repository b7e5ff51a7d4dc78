// Static file serving for the demo (serve.mjs), the tests and the benchmarks, on sirv.
// Loopback by default; no caching (every reload sees a fresh build); paths cannot leave their folder.
//
//   const server = await startStaticServer({ root, mounts: [['/fixtures/', dir]], csp, cors, log });
//   server.url   // http://127.0.0.1:PORT/
//   await server.close();
import { createServer } from 'node:http';
import path from 'node:path';
import sirv from 'sirv';

/** The Content-Security-Policy the demo's pages are built for; every page is served under it. */
export const DEMO_CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'";

/**
 * Cross-origin isolation, which the threaded engine needs (SharedArrayBuffer): the demo is served
 * with it. Every file the demo loads is its own origin's, or fetched with CORS.
 */
export const ISOLATION_HEADERS = Object.freeze({
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
});

// types sirv's table (mrmime) does not know
const EXTRA_TYPES = {
  '.safetensors': 'application/octet-stream',
  '.md': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * A request handler serving `root`, and each [prefix, dir] of `mounts` under its prefix.
 *   csp: the Content-Security-Policy header for every response (null: none)
 *   cors: null, or a list of extensions ('*' for all) whose responses get
 *         "Access-Control-Allow-Origin: *", as a CDN sends
 *   headers: more headers for every response
 *   log(method, path): called for each request
 */
export function staticHandler({ root, mounts = [], csp = null, cors = null, headers = {}, log = null }) {
  const setHeaders = (res, pathname) => {
    const ext = path.extname(pathname);
    if (EXTRA_TYPES[ext]) res.setHeader('Content-Type', EXTRA_TYPES[ext]);
    if (cors && (cors.includes('*') || cors.includes(ext))) res.setHeader('Access-Control-Allow-Origin', '*');
  };
  const serve = (dir) => sirv(path.resolve(dir), { dev: true, etag: false, dotfiles: false, setHeaders });
  const routes = [
    ...mounts.map(([prefix, dir]) => [prefix.endsWith('/') ? prefix : `${prefix}/`, serve(dir)]),
    ['/', serve(root)],
  ];
  return (req, res) => {
    const url = new URL(req.url, 'http://localhost');
    log?.(req.method, url.pathname);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (csp) res.setHeader('Content-Security-Policy', csp);
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
      return;
    }
    const [prefix, handler] = routes.find(([p]) => url.pathname.startsWith(p));
    req.url = `/${url.pathname.slice(prefix.length)}${url.search}`;
    handler(req, res, () => {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found');
    });
  };
}

/** Starts a server for staticHandler(options) on `host`:`port` (0: a free port). */
export async function startStaticServer({ host = '127.0.0.1', port = 0, ...options }) {
  const server = createServer(staticHandler(options));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const { port: actual } = server.address();
  return {
    server,
    port: actual,
    url: `http://${host}:${actual}/`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(resolve);
      }),
  };
}
