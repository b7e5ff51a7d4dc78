#!/usr/bin/env bash
# Assembles the static demo site, OUT (default build/web/), from the package in dist/ (built by
# scripts/build-package.sh) and the page sources in web/demo/ and web/component/.
# The result works from any static file server: no CDN, no network.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${1:-$ROOT/build/web}"
DIST="$ROOT/dist"
for f in headscope.js headscope-worker.js worker-thread.js headscope_wasm.js headscope_wasm.wasm headscope_wasm_relaxed.js headscope_wasm_threads.js headscope_wasm_threads.worker.js headscope_wasm_threads.wasm headscope_wasm_threads_relaxed.js headscope_wasm_threads_relaxed.worker.js headscope_wasm_threads_relaxed.wasm; do
  [ -f "$DIST/$f" ] || { echo "web/demo/build.sh: $DIST/$f is missing; run scripts/build-package.sh first" >&2; exit 1; }
done
TMP="$OUT.tmp"
rm -rf "$TMP" && mkdir -p "$TMP"
cp "$DIST"/*.js "$DIST"/*.wasm "$DIST"/*.json "$TMP"/
mkdir -p "$TMP/models"
[ -d "$DIST/models" ] && cp -r "$DIST/models/." "$TMP/models/"
# models/index.json: the models this site holds (the page's model picker reads it), with each card's
# family and key/value heads (compare.html picks its families by them)
node -e '
const fs = require("fs"), path = require("path");
const dir = process.argv[1];
const names = fs.readdirSync(dir).filter((n) => fs.existsSync(path.join(dir, n, "model.safetensors"))).sort();
const cardOf = (name) => { try { return JSON.parse(fs.readFileSync(path.join(dir, name, "card.json"), "utf8")); } catch { return null; } };
const entry = (name) => {
  const c = cardOf(name), a = (c && c.architecture) || {};
  return { name, card: !!c, family: (c && c.family) || null, n_kv_head: a.n_kv_head ?? a.n_head ?? null };
};
fs.writeFileSync(path.join(dir, "index.json"), JSON.stringify({ models: names.map(entry) }, null, 1));
' "$TMP/models"
"$ROOT/web/component/build.sh" "$TMP"
cp "$ROOT/web/component/views.css" "$TMP/"
cp "$ROOT/web/component/lab.css" "$TMP/lab-views.css"
# the components' palette as the demo pages' root colours (demo.css imports it), light/dark as the toggle sets
node --input-type=module -e '
import { writeFileSync } from "node:fs";
import { paletteCss } from "'"$ROOT"'/web/component/runtime/theme.js";
writeFileSync(process.argv[1], paletteCss({ root: ":root", attribute: "data-theme" }));
' "$TMP/demo-palette.css"
# The pages sit in a folder each (web/demo/README.md) but are served side by side, as one flat folder,
# so that their URLs and their links to each other stay plain names: every page's HTML and CSS, the
# shared files, and the articles' own small scripts (unbundled: they must run before the elements
# are defined). A name in two folders would overwrite the other: the build stops instead.
shopt -s nullglob
for f in "$ROOT"/web/demo/*/*.{html,css,svg} "$ROOT"/web/demo/articles/*.js; do
  [ ! -e "$TMP/${f##*/}" ] || { echo "web/demo/build.sh: ${f#"$ROOT"/} would overwrite another ${f##*/}" >&2; exit 1; }
  cp "$f" "$TMP/"
done
shopt -u nullglob
# the pages' scripts (index/demo.js, compare/compare.js, embed/embed.js, train/train.js), bundled
node "$ROOT/web/bundle.mjs" --out "$TMP" demo
# every page's start, from the doctype to <body>, is written here from its first line,
# {{PAGE_HEAD title="..." css="a.css b.css" js="a.js b.js" color-scheme body-class="..."}}: the head
# tags every page has (the character set, the viewport, the Content-Security-Policy the server sends
# too, web/server/static-server.mjs DEMO_CSP, so the policy lives in one place, and the icon), then
# with color-scheme the light/dark meta, the title, a stylesheet link per css and a module script per
# js, in that order; a page that does not start with {{PAGE_HEAD ...}} fails the build. {{DEMO_CSP}} in a page's text is the policy itself (csp.html quotes it).
node --input-type=module -e '
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { DEMO_CSP } from "'"$ROOT"'/web/server/static-server.mjs";
const head = [
  "<meta charset=\"utf-8\">",
  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
  `<meta http-equiv="Content-Security-Policy" content="${DEMO_CSP.replaceAll("\"", "&quot;")}">`,
  "<link rel=\"icon\" href=\"favicon.svg\" type=\"image/svg+xml\">",
].join("\n");
const cspText = DEMO_CSP.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
const pageHead = (attrs) => {
  const a = Object.fromEntries([...attrs.matchAll(/([\w-]+)(?:="([^"]*)")?/g)].map((m) => [m[1], m[2] ?? true]));
  const list = (v) => (v ? v.split(" ") : []);
  return [
    "<!doctype html>",
    "<html lang=\"en\">",
    "<head>",
    head,
    ...(a["color-scheme"] ? ["<meta name=\"color-scheme\" content=\"light dark\">"] : []),
    ...(a.title ? [`<title>${a.title}</title>`] : []),
    ...list(a.css).map((f) => `<link rel="stylesheet" href="${f}">`),
    ...list(a.js).map((f) => `<script type="module" src="${f}"></script>`),
    "</head>",
    a["body-class"] ? `<body class="${a["body-class"]}">` : "<body>",
  ].join("\n");
};
const dir = process.argv[1];
for (const name of readdirSync(dir).filter((n) => n.endsWith(".html"))) {
  const file = path.join(dir, name), html = readFileSync(file, "utf8");
  const at = /^\{\{PAGE_HEAD((?: [\w-]+(?:="[^"]*")?)*)\}\}\n/;
  if (!at.test(html)) throw new Error(`web/demo/build.sh: ${name} does not start with {{PAGE_HEAD ...}}`);
  writeFileSync(file, html.replace(at, (m, attrs) => `${pageHead(attrs)}\n`).replaceAll("{{DEMO_CSP}}", cspText));
}
' "$TMP"
# last, once every file is in place: the service worker, with the list of the files actually in the
# site (web/demo/precache.mjs; the pages register it with common/offline.js)
node "$ROOT/web/demo/precache.mjs" "$TMP"
rm -rf "$OUT" && mv "$TMP" "$OUT"
echo "web/demo/build.sh: site in ${OUT#$ROOT/} ($(du -sh "$OUT" | cut -f1))"
