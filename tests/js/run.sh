#!/usr/bin/env bash
# JavaScript package tests: builds dist/ and the native CLI (the --json peer), runs node --test on
# tests/js/*.test.js (API, heap, consumer install of the packed tarball).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build-package.sh
if [ ! -x build/native-release/headscope ] && [ ! -x build/native-debug/headscope ]; then
  cmake --preset native-release >/dev/null && cmake --build --preset native-release --target headscope
fi
# two files at a time (node's default on two cores is one): none asserts a time, and each writes only
# into its own scratch folder
node --test --test-concurrency=2 --test-reporter=spec tests/js/
