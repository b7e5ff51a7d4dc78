#!/usr/bin/env bash
# Bundles the <headscope-view> web component into one ES module, OUT/headscope-view.js (default
# OUT: dist/). It imports ./headscope-worker.js, so it must sit next to the package's files:
#   <script type="module" src="dist/headscope-view.js"></script>
# Called by scripts/build-package.sh (after dist/ is assembled) and by web/demo/build.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${1:-$ROOT/dist}"
mkdir -p "$OUT"
"$ROOT/node_modules/.bin/esbuild" "$ROOT/web/component/headscope-view.js" \
  --bundle --format=esm --target=es2022 --charset=utf8 --legal-comments=eof \
  --loader:.css=text --external:./headscope-worker.js \
  --outfile="$OUT/headscope-view.js" --log-level=warning
# issue 6: <headscope-lab> (switch heads off, role badges, predict-then-reveal); shares the model
# cache of headscope-view.js and uses the package's analysis.js, both imported at run time
"$ROOT/node_modules/.bin/esbuild" "$ROOT/web/component/headscope-lab.js" \
  --bundle --format=esm --target=es2022 --charset=utf8 --legal-comments=eof \
  --loader:.css=text --external:./headscope-view.js --external:./analysis.js \
  --outfile="$OUT/headscope-lab.js" --log-level=warning
