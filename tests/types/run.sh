#!/usr/bin/env bash
# Type-checks the package's published types as a consumer sees them: consumer.ts (a browser app:
# headscope, headscope/worker, headscope/analysis) and consumer-node.ts (a Node script, no DOM types)
# compiled with `tsc --noEmit`, strict, declarations checked too.
#
# The package is installed into a scratch project as npm would lay it out: package.json (its
# "exports" map decides which .d.ts each import gets) and dist/*.d.ts, published from web/lib/ and
# web/component/ as scripts/build-package.sh publishes them (node web/bundle.mjs ... lib), so no wasm
# build is needed. Errors name the published files (dist/*.d.ts: web/lib/ and web/component/), and tests/types/*.ts. Exit code non-zero on any error; the last line is the summary.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
TSC="$ROOT/node_modules/.bin/tsc"
[ -x "$TSC" ] || { echo "types: $TSC is missing (typescript is a devDependency: npm ci)"; exit 1; }
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/node_modules/headscope/dist" "$SCRATCH/node_modules/@types"
cp package.json "$SCRATCH/node_modules/headscope/"
node web/bundle.mjs --out "$SCRATCH/node_modules/headscope/dist" lib
# Node's types, as a Node project installs them (here a dependency of the devDependencies)
ln -s "$ROOT/node_modules/@types/node" "$SCRATCH/node_modules/@types/node"
cp tests/types/*.ts tests/types/tsconfig*.json "$SCRATCH/"
echo '{ "name": "consumer", "private": true, "type": "module" }' > "$SCRATCH/package.json"

"$TSC" --version
failed=0
for config in tsconfig.json tsconfig.node.json; do
  if out="$(cd "$SCRATCH" && "$TSC" -p "$config" --pretty false 2>&1)"; then
    echo "ok   tsc --noEmit -p tests/types/$config"
  else
    failed=$((failed + 1))
    # point at the files in the repository, not their scratch copies
    printf '%s\n' "$out" | sed -e "s#node_modules/headscope/dist/#dist/#g" -e "s#^\(consumer[-a-z]*\.ts\)#tests/types/\1#"
    echo "FAIL tsc --noEmit -p tests/types/$config"
  fi
done
if [ "$failed" -eq 0 ]; then
  echo "types: 2 of 2 consumers type-check (strict, tsc --noEmit)"
else
  echo "types: $failed of 2 consumers fail to type-check"
  exit 1
fi
