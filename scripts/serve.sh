#!/usr/bin/env bash
# Builds everything (the wasm package in dist/, then the demo site in build/web/) and serves the
# demo at http://localhost:${PORT:-8080}/ with node's http module (no network needed).
#   PORT=9000 scripts/serve.sh      another port
#   HOST=0.0.0.0 scripts/serve.sh   listen on all interfaces (default: 127.0.0.1)
#   HEADSCOPE_SKIP_BUILD=1          serve build/web/ as it is
# The built folder build/web/ is static: any static file server can serve it.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"
if [ "${HEADSCOPE_SKIP_BUILD:-0}" != 1 ]; then
  # the toolchain and node_modules first: the package build bundles with esbuild (an npm package)
  HEADSCOPE_WHO="${HEADSCOPE_WHO:-scripts/serve.sh}" scripts/build-package.sh
  web/demo/build.sh build/web
fi
[ -f build/web/models/headscope-base/model.safetensors ] ||
  echo "note: the default model (web/models/headscope-base) is not built yet; open the page with ?model=<folder URL> meanwhile" >&2
exec node web/server/serve.mjs --root build/web --port "${PORT:-8080}" --host "${HOST:-127.0.0.1}" --quiet
