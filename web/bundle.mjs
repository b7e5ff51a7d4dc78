// Bundles the browser entry points of web/ with esbuild.
//
// Sources import each other by their real paths, so go-to-definition works in the source tree
// without a build. At run time every published file sits flat in one folder (dist/, or the demo
// site), so an import of a file of web/lib/ or of another entry point is left as an external import
// of './<name>.js'. That also keeps one module instance per page: <headscope-view> and
// <headscope-lab> share the model cache of headscope-view.js.
//
//   node web/bundle.mjs --out DIR component     the two web components (dist/ and the site)
//   node web/bundle.mjs --out DIR demo          the demo pages' scripts (the site only)
import { parseArgs } from 'node:util';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const WEB = path.dirname(fileURLToPath(import.meta.url));

const ENTRIES = {
  component: ['component/headscope-view.js', 'component/headscope-lab.js'],
  demo: ['demo/index/demo.js', 'demo/compare/compare.js', 'demo/embed/embed.js', 'demo/train/train.js'],
};

// Files that are published beside the bundles: every module of the package's API, and the
// component entry points (imported by the lab and by the pages).
function publishedFiles() {
  const map = new Map();
  for (const name of readdirSync(path.join(WEB, 'lib')).filter((f) => f.endsWith('.js')))
    map.set(path.join(WEB, 'lib', name), `./${name}`);
  for (const entry of ENTRIES.component) map.set(path.join(WEB, entry), `./${path.basename(entry)}`);
  return map;
}

function flatExternals(entryFile, published) {
  return {
    name: 'flat-externals',
    setup(build) {
      build.onResolve({ filter: /^\.\.?\// }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        const target = path.resolve(args.resolveDir, args.path);
        if (target === entryFile || !published.has(target)) return undefined;
        return { path: published.get(target), external: true };
      });
    },
  };
}

const { values, positionals } = parseArgs({ options: { out: { type: 'string' } }, allowPositionals: true });
if (!values.out || positionals.length !== 1 || !ENTRIES[positionals[0]]) {
  console.error(`usage: node web/bundle.mjs --out DIR ${Object.keys(ENTRIES).join('|')}`);
  process.exit(2);
}
const published = publishedFiles();
for (const entry of ENTRIES[positionals[0]]) {
  const entryFile = path.join(WEB, entry);
  await esbuild.build({
    entryPoints: [entryFile],
    outfile: path.join(path.resolve(values.out), path.basename(entry)),
    bundle: true,
    format: 'esm',
    target: 'es2022',
    charset: 'utf8',
    legalComments: 'eof',
    loader: { '.css': 'text' },
    plugins: [flatExternals(entryFile, published)],
    logLevel: 'warning',
  });
}
