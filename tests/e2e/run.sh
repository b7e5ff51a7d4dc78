#!/usr/bin/env bash
# Browser end-to-end tests: builds the package (scripts/build-package.sh, incremental) and the demo
# site into build/e2e-site/, serves it with the strict CSP header, and runs tests/e2e/*.test.mjs
# with node's test runner in Debian's headless Chromium (playwright-core). Screenshots and exported
# files land in build/e2e-artifacts/. Exit code non-zero on any failure.
#   HEADSCOPE_E2E_SKIP_PACKAGE=1  reuse dist/ as it is (skip the wasm build)
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"
# one run at a time per checkout: runs share build/e2e-site and build/e2e-artifacts
mkdir -p build && exec 9>build/e2e.lock && flock 9
if [ "${HEADSCOPE_E2E_SKIP_PACKAGE:-0}" != 1 ] || [ ! -f dist/headscope-worker.js ]; then
  scripts/build-package.sh
fi
[ -x node_modules/.bin/esbuild ] && [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --ignore-scripts
web/demo/build.sh build/e2e-site
rm -rf build/e2e-artifacts && mkdir -p build/e2e-artifacts
status=0
node --test --test-concurrency=1 --test-timeout=120000 tests/e2e/ 2>&1 | tee build/e2e-artifacts/test-output.txt || status=$?
echo "e2e artifacts (screenshots, exports, test-output.txt): build/e2e-artifacts/"
exit "$status"
