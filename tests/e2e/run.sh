#!/usr/bin/env bash
# Browser end-to-end tests: builds the package (scripts/build-package.sh, incremental) and the demo
# site into build/e2e-site/, then runs tests/e2e/*.test.mjs with @playwright/test
# (tests/e2e/playwright.config.mjs: Debian's headless Chromium; two files at a time, then the
# timing-sensitive ones alone). The tests serve the
# site themselves, under the strict CSP header. Screenshots and exported files land in
# build/e2e-artifacts/; a failed test's screenshot (and trace, with --trace on) in
# build/e2e-artifacts/test-results/{parallel,quiet}/.
# Exit code non-zero on any failure; the last line is the summary.
#   HEADSCOPE_E2E_SKIP_PACKAGE=1  reuse dist/ as it is (skip the wasm build)
#   extra arguments go to `playwright test`, e.g. tests/e2e/run.sh -g 'strict CSP' --trace on
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"
# one run at a time per checkout: runs share build/e2e-site and build/e2e-artifacts
mkdir -p build && exec 9>build/e2e.lock && flock 9
if [ "${HEADSCOPE_E2E_SKIP_PACKAGE:-0}" != 1 ] || [ ! -f dist/headscope-worker.js ]; then
  scripts/build-package.sh
fi
[ -x node_modules/.bin/esbuild ] && [ -x node_modules/.bin/playwright ] || npm ci --no-audit --no-fund --ignore-scripts
web/demo/build.sh build/e2e-site
rm -rf build/e2e-artifacts && mkdir -p build/e2e-artifacts
echo "e2e artifacts (screenshots, exports, failures, test-output.txt): build/e2e-artifacts/"
# the projects of tests/e2e/playwright.config.mjs one after the other: two files at a time, then the
# timing-sensitive files alone; both run even if the first fails
status=0
for project in parallel quiet; do
  npx --no-install playwright test -c tests/e2e/playwright.config.mjs --project "$project" --pass-with-no-tests "$@" 2>&1 |
    tee -a build/e2e-artifacts/test-output.txt || status=1
done
summary=$(grep '^headscope e2e:' build/e2e-artifacts/test-output.txt | sed 's/^headscope e2e: //' | paste -sd ';' | sed 's/;/; then /')
echo "headscope e2e: $([ "$status" = 0 ] && echo passed || echo failed): $summary"
exit "$status"
