// Writes the built site's service worker (common/service-worker.js) into the site, with the list of
// the files actually in it, so the list cannot drift from the site: run by web/demo/build.sh last,
// once every file is in place.
//   node web/demo/precache.mjs SITE_DIR
// The build's version is a hash of every file's path and bytes: any change makes a new worker, which
// replaces the old cache. The shell (with the engine's builds) is cached at install; the models'
// files, all but their cards, when a page first uses them (service-worker.js says why).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const WORKER = 'service-worker.js';
const PLACEHOLDER = "'__HEADSCOPE_SITE_FILES__'";

/** Whether a site file (its path in the site, with /) is cached on first use rather than at install. */
export const cachedOnUse = (file) => /^models\/[^/]+\//.test(file) && !file.endsWith('/card.json');

/** Every file under `dir`, as sorted paths with /. */
function filesOf(dir, prefix = '') {
  return readdirSync(path.join(dir, prefix), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesOf(dir, `${prefix}${e.name}/`) : [`${prefix}${e.name}`]))
    .sort();
}

/** { version, shell, onUse } of the site in `dir` (the worker itself left out: it is never cached). */
export function siteFiles(dir) {
  const files = filesOf(dir).filter((f) => f !== WORKER && !f.endsWith('.tmp'));
  const all = createHash('sha256');
  for (const f of files)
    all.update(
      `${f}\0${createHash('sha256')
        .update(readFileSync(path.join(dir, f)))
        .digest('hex')}\n`,
    );
  return {
    version: all.digest('hex').slice(0, 16),
    shell: files.filter((f) => !cachedOnUse(f)),
    onUse: files.filter(cachedOnUse),
  };
}

/** Writes SITE/service-worker.js from the template with the site's files; returns what it listed. */
export function writeServiceWorker(site) {
  const template = readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'common', WORKER), 'utf8');
  if (template.split(PLACEHOLDER).length !== 2)
    throw new Error(`precache.mjs: common/${WORKER} must hold ${PLACEHOLDER} once`);
  const listed = siteFiles(site);
  writeFileSync(
    path.join(site, WORKER),
    template.replace(PLACEHOLDER, () => JSON.stringify(listed)),
  );
  return listed;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const site = process.argv[2];
  if (!site) {
    console.error('usage: node web/demo/precache.mjs SITE_DIR');
    process.exit(2);
  }
  const { version, shell, onUse } = writeServiceWorker(site);
  console.log(
    `precache.mjs: ${WORKER} for build ${version}: ${shell.length} files at install, ${onUse.length} on first use`,
  );
}
