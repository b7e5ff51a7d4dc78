// Publishes the package's files and bundles the browser entry points of web/ with esbuild.
//
// Sources import each other by their real paths, so go-to-definition works in the source tree
// without a build. At run time every published file sits flat in one folder (dist/, or the demo
// site) under the name PUBLISHED gives it (web/lib/worker/client.js is dist/headscope-worker.js),
// so an import of a published file is left as an external import of './<name>'. That also keeps one
// module instance per page: <headscope-view> and <headscope-lab> share the model cache of
// headscope-view.js.
//
//   node web/bundle.mjs --out DIR lib           the package's modules, types and model list, copied
//                                               under their published names with their imports
//                                               rewritten to them (scripts/build-package.sh, tests/types/run.sh)
//   node web/bundle.mjs --out DIR component     the two web components (dist/ and the site)
//   node web/bundle.mjs --out DIR demo          the demo pages' scripts (the site only)
import { parseArgs } from 'node:util';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const WEB = path.dirname(fileURLToPath(import.meta.url));

const ENTRIES = {
  component: ['component/headscope-view.js', 'component/headscope-lab.js'],
  demo: [
    'demo/index/demo.js',
    'demo/compare/compare.js',
    'demo/embed/embed.js',
    'demo/train/train.js',
    'demo/article/explainer.js',
  ],
};

// The package's files as published (source under web/ -> name in dist/). These names are the
// package's public paths (package.json's "exports", the CDN's URLs): a source may move, its
// published name stays.
const PUBLISHED = {
  'lib/headscope.js': 'headscope.js',
  'lib/wasm.js': 'wasm.js',
  'lib/files.js': 'files.js',
  'lib/result.js': 'result.js',
  'lib/reuse.js': 'reuse.js',
  'lib/generation.js': 'generation.js',
  'lib/trainer.js': 'trainer.js',
  'lib/analysis.js': 'analysis.js',
  'lib/patching.js': 'patching.js',
  'lib/explain.js': 'explain.js',
  'lib/maps.js': 'maps.js',
  'lib/run-data.js': 'run-data.js',
  'lib/roles.json': 'roles.json',
  'lib/worker/client.js': 'headscope-worker.js',
  'lib/worker/host.js': 'worker-thread.js',
  'lib/worker/protocol.js': 'worker-protocol.js',
  'lib/worker/page-thread.js': 'worker-fallback.js',
  'lib/headscope.d.ts': 'headscope.d.ts',
  'lib/headscope-worker.d.ts': 'headscope-worker.d.ts',
  'lib/analysis.d.ts': 'analysis.d.ts',
  'component/headscope-view.d.ts': 'headscope-view.d.ts',
  'component/headscope-lab.d.ts': 'headscope-lab.d.ts',
  'models/index.json': 'models/index.json',
};

// The engine's Emscripten glue, built by scripts/build-package.sh into dist/ (web/lib/wasm.js imports
// them as if they sat beside it, as they do once published).
const ENGINE_GLUE = [
  'headscope_wasm.js',
  'headscope_wasm_relaxed.js',
  'headscope_wasm_threads.js',
  'headscope_wasm_threads_relaxed.js',
];

// Files that are published beside the bundles: the package's modules (PUBLISHED), the engine's glue,
// and the component entry points (imported by the lab and by the pages).
function publishedFiles() {
  const map = new Map();
  for (const [source, name] of Object.entries(PUBLISHED)) map.set(path.join(WEB, source), `./${name}`);
  for (const name of ENGINE_GLUE) map.set(path.join(WEB, 'lib', name), `./${name}`);
  for (const entry of ENTRIES.component) map.set(path.join(WEB, entry), `./${path.basename(entry)}`);
  return map;
}

// Copies PUBLISHED into `out`, each import of another published file rewritten to its published
// name (a relative import of a file that is not published is an error: dist/ would lack it).
function publishLib(out, published) {
  const SPECIFIER = /((?:\bfrom|\bimport)\s*\(?\s*)(['"])(\.\.?\/[^'"]+)\2/g;
  for (const [source, name] of Object.entries(PUBLISHED)) {
    const file = path.join(WEB, source);
    let text = readFileSync(file, 'utf8');
    if (!file.endsWith('.json')) {
      text = text.replace(SPECIFIER, (match, before, quote, specifier) => {
        const target = published.get(path.resolve(path.dirname(file), specifier));
        if (!target)
          throw new Error(`web/${source} imports ${specifier}, which is not published (PUBLISHED in web/bundle.mjs)`);
        const relative = path.posix.relative(path.posix.dirname(`./${name}`), target);
        return `${before}${quote}${relative.startsWith('.') ? relative : `./${relative}`}${quote}`;
      });
    }
    const dest = path.join(out, name);
    mkdirSync(path.dirname(dest), { recursive: true });
    writeFileSync(dest, text);
  }
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
if (!values.out || positionals.length !== 1 || !(ENTRIES[positionals[0]] || positionals[0] === 'lib')) {
  console.error(`usage: node web/bundle.mjs --out DIR lib|${Object.keys(ENTRIES).join('|')}`);
  process.exit(2);
}
const published = publishedFiles();
if (positionals[0] === 'lib') {
  publishLib(path.resolve(values.out), published);
  process.exit(0);
}
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
