#!/usr/bin/env bash
# Rebuild every shipped model from scratch (or resume): data -> tokenizer -> models -> export -> cards.
# Models are trained one after another (they were trained in parallel here, one thread each; the result
# is the same up to floating-point nondeterminism). A failed fetch or a checksum mismatch stops the script
# (set -e) before any model is touched; each export replaces its folder in one rename.
#
#   bash scripts/train/all.sh            # everything (about 6-7 h on 2 idle CPU cores: the default model
#                                        # about 4 h at about 3,000 tokens/s, each family model about 40 min)
#   MODELS="heads-1 heads-2" bash scripts/train/all.sh   # a subset
#
# Needs: /usr/bin/python3 with python3-torch, python3-numpy, python3-regex (Debian bookworm), npm.
# The cards' role scores come from scripts/train/head_metrics.py (run by each export).
# Intermediate files go to .cache/ (gitignored); rerunning resumes every model from its checkpoint
# and re-exports it. Outputs: web/models/{DATA.md,provenance.json,index.json,README.md} and
# web/models/<model>/{config.json,model.safetensors,vocab.json,merges.txt,README.md,card.json,reference.json}
# and web/models/headscope-base/ablation_reference.json.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY=/usr/bin/python3
cd "$ROOT"
bash scripts/data/fetch_corpus.sh
$PY scripts/data/prepare_corpus.py
$PY scripts/train/train.py --smoke
# the shipped models, as web/models/index.json lists them (the one list; MODELS="a b" trains others)
SHIPPED="$($PY -c 'import json; print(" ".join(m["name"] for m in json.load(open("web/models/index.json"))["models"]))')"
for m in ${MODELS:-$SHIPPED}; do
  $PY scripts/train/train.py --model "$m"
done
# the engine's ablation test compares against PyTorch with two heads zeroed on the default model
if [[ " ${MODELS:-headscope-base} " == *" headscope-base "* ]]; then
  $PY scripts/train/ablation_reference.py --model headscope-base
fi
# the engine's CLI (built by scripts/run.sh --cli): the cards' native timings and the head measurement
[ -x build/native-release/headscope ] || { cmake --preset native-release >/dev/null && cmake --build --preset native-release --target headscope; }
$PY scripts/train/measure_speed.py --cli build/native-release/headscope
# which heads each model needs, on its held-out passage (the engine's CLI: built by scripts/run.sh --cli)
$PY scripts/train/heldout_text.py
$PY scripts/train/heads_card.py
$PY scripts/train/summarize.py
