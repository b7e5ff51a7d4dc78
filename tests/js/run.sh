#!/usr/bin/env bash
# JavaScript tests, in two sets:
#   tests/js/unit/     one file per source module, on the sources themselves (pure scene builders, the
#                      pages' table builders, the bench's regression marking): no build needed, run first
#   tests/js/package/  the npm package as built in dist/ (API, heap, threads, training, the consumer
#                      install of the packed tarball), with the native CLI as the --json peer
# Each set runs node --test, two files at a time (node's default on two cores is one): none asserts
# a time, and each writes only into its own scratch folder. Both sets run; the exit code is non-zero
# if either failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
status=0
echo "--- tests/js/unit (sources, no build)"
node --test --test-concurrency=2 --test-reporter=spec tests/js/unit/ || status=1
set -e
scripts/build-package.sh
if [ ! -x build/native-release/headscope ] && [ ! -x build/native-debug/headscope ]; then
  cmake --preset native-release >/dev/null && cmake --build --preset native-release --target headscope
fi
set +e
echo "--- tests/js/package (dist/ and the native CLI)"
node --test --test-concurrency=2 --test-reporter=spec tests/js/package/ || status=1
exit $status
