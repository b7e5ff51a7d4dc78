// Serves the demo site (or any folder) on loopback, for `npm start`, scripts/serve.sh and the tests.
//   node web/server/serve.mjs [--root build/web] [--port 8080] [--host 127.0.0.1] [--mount /prefix/=DIR]...
//                           [--csp POLICY|none] [--cors [EXT,...]] [--isolation on|off] [--quiet]
// Every response carries the strict Content-Security-Policy the pages are built for, so the demo is
// always exercised under it (--csp replaces it; the tests use that for articles with their own
// policies). --cors adds "Access-Control-Allow-Origin: *" as a CDN does, to every file or only to
// files with the listed extensions (e.g. --cors .js, a CDN misconfigured for everything else).
// Pages are cross-origin isolated (COOP same-origin, COEP require-corp: the threaded engine's
// SharedArrayBuffer) unless --isolation off.
// Each request is logged as "GET /path" unless --quiet.
import { parseArgs } from 'node:util';
import { startStaticServer, DEMO_CSP, ISOLATION_HEADERS } from './static-server.mjs';

let values;
try {
  ({ values } = parseArgs({
    options: {
      root: { type: 'string', default: 'build/web' },
      port: { type: 'string', default: process.env.PORT || '8080' },
      host: { type: 'string', default: process.env.HOST || '127.0.0.1' },
      mount: { type: 'string', multiple: true, default: [] },
      csp: { type: 'string' },
      cors: { type: 'string' },
      isolation: { type: 'string', default: 'on' },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    // `--cors` alone means every file: parseArgs needs a value, so it is rewritten to `--cors=*`
    args: process.argv
      .slice(2)
      .flatMap((a, i, all) =>
        a === '--cors' && (all[i + 1] === undefined || all[i + 1].startsWith('--')) ? ['--cors=*'] : [a],
      ),
  }));
} catch (e) {
  console.error(`serve.mjs: ${e.message}`);
  process.exit(2);
}
if (values.help) {
  console.log(
    'usage: node web/server/serve.mjs [--root DIR] [--port N] [--host H] [--mount /prefix/=DIR]... [--csp POLICY|none] [--cors [EXT,...]] [--isolation on|off] [--quiet]',
  );
  process.exit(0);
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`serve.mjs: --port must be a port number, got ${values.port}`);
  process.exit(2);
}
const mounts = values.mount.map((m) => {
  const eq = m.indexOf('=');
  if (eq <= 0) {
    console.error(`serve.mjs: --mount takes /prefix/=DIR, got ${m}`);
    process.exit(2);
  }
  return [m.slice(0, eq), m.slice(eq + 1)];
});
const csp = values.csp === undefined ? DEMO_CSP : values.csp === 'none' ? null : values.csp;
const cors = values.cors === undefined ? null : values.cors.split(',');
// on: cross-origin isolated (COOP + COEP), so that the engine runs threaded; off: as a page that
// embeds a widget usually is, single-threaded
if (values.isolation !== 'on' && values.isolation !== 'off') {
  console.error(`serve.mjs: --isolation takes on or off, got ${values.isolation}`);
  process.exit(2);
}
const headers = values.isolation === 'on' ? ISOLATION_HEADERS : {};

const server = await startStaticServer({
  root: values.root,
  host: values.host,
  port,
  mounts,
  csp,
  cors,
  headers,
  log: values.quiet ? null : (method, path) => console.log(`${method} ${path}`),
});
const shown = values.host === '127.0.0.1' ? `http://localhost:${server.port}/` : server.url;
console.log(`headscope demo: serving ${values.root} at ${shown}`);
