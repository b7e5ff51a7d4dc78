// A small static file server for the demo (node's http module only; no network access needed).
//   node web/demo/serve.mjs --root build/web [--port 8080] [--host 127.0.0.1] [--mount /prefix/=DIR]...
//                           [--csp POLICY|none] [--cors [EXT,...]]
// Every response carries the strict Content-Security-Policy the page is built for, so the demo is
// always exercised under it (--csp replaces it; the tests use that for articles with their own
// policies). --cors adds "Access-Control-Allow-Origin: *" as a CDN does, to every file or only to
// files with the listed extensions (e.g. --cors .js, a CDN misconfigured for everything else).
// Range requests are not needed (files are fetched whole).
import { createServer } from 'node:http';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = { root: 'build/web', port: Number(process.env.PORT || 8080), host: process.env.HOST || '127.0.0.1', mounts: [], quiet: false, csp: null, cors: null };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--root') opt.root = args[++i];
  else if (a === '--port') opt.port = Number(args[++i]);
  else if (a === '--host') opt.host = args[++i];
  else if (a === '--quiet') opt.quiet = true;
  else if (a === '--csp') opt.csp = args[++i];
  else if (a === '--cors') opt.cors = args[i + 1]?.startsWith('.') ? args[++i].split(',') : ['*'];
  else if (a === '--mount') {
    const [prefix, dir] = args[++i].split('=');
    opt.mounts.push({ prefix: prefix.endsWith('/') ? prefix : `${prefix}/`, dir: path.resolve(dir) });
  } else { console.error(`serve.mjs: unknown argument ${a}`); process.exit(2); }
}
opt.root = path.resolve(opt.root);

export const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'";
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json; charset=utf-8', '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8', '.md': 'text/plain; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.safetensors': 'application/octet-stream', '.ico': 'image/x-icon',
};

function resolve(urlPath) {
  let decoded;
  try { decoded = decodeURIComponent(urlPath); } catch { return null; }
  if (decoded.includes('\0')) return null;
  let base = opt.root;
  let rel = decoded;
  for (const m of opt.mounts) {
    if (decoded.startsWith(m.prefix)) { base = m.dir; rel = decoded.slice(m.prefix.length - 1); break; }
  }
  const full = path.resolve(base, `.${path.posix.normalize(rel)}`);
  if (full !== base && !full.startsWith(base + path.sep)) return null;
  return full;
}

const server = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const headers = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' };
  const csp = opt.csp ?? CSP;
  if (csp !== 'none') headers['Content-Security-Policy'] = csp;
  if (opt.cors && (opt.cors.includes('*') || opt.cors.includes(path.extname(url.pathname)))) headers['Access-Control-Allow-Origin'] = '*';
  if (req.method !== 'GET' && req.method !== 'HEAD') { res.writeHead(405, headers); res.end(); return; }
  let file = resolve(url.pathname);
  if (!file) { res.writeHead(400, headers); res.end('bad path'); return; }
  try {
    let st = await fs.stat(file);
    if (st.isDirectory()) {
      if (!url.pathname.endsWith('/')) { res.writeHead(301, { ...headers, Location: `${url.pathname}/${url.search}` }); res.end(); return; }
      file = path.join(file, 'index.html');
      st = await fs.stat(file);
    }
    res.writeHead(200, { ...headers, 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream', 'Content-Length': st.size });
    if (req.method === 'HEAD') { res.end(); return; }
    createReadStream(file).pipe(res);
  } catch {
    res.writeHead(404, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('not found');
  }
  if (!opt.quiet) console.log(`${req.method} ${url.pathname}`);
});
server.listen(opt.port, opt.host, () => {
  const a = server.address();
  console.log(`headscope demo: serving ${opt.root} at http://${opt.host === '127.0.0.1' ? 'localhost' : opt.host}:${a.port}/`);
});
