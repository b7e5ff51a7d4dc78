#!/usr/bin/env bash
# Bundles the web components <headscope-view> and <headscope-lab> into OUT/headscope-view.js and
# OUT/headscope-lab.js (default OUT: dist/). They import the package's files by their published names (headscope-worker.js,
# analysis.js, ...) at run time, so they sit next to them, as in dist/:
#   <script type="module" src="dist/headscope-view.js"></script>
# Called by scripts/build-package.sh (after dist/ is assembled) and by web/demo/build.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
node "$ROOT/web/bundle.mjs" --out "${1:-$ROOT/dist}" component
