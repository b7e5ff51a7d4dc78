#!/usr/bin/env bash
# Runs the commands README.md names, as a newcomer would, in a quick form, so none of them can rot
# unnoticed (scripts/test.sh runs this after the suites that build the engine):
#   scripts/run.sh and `npm start`: each must serve the demo page, its engine and the default model;
#   scripts/run.sh --cli, and the CLI lines of the README on the default model.
# The servers are waited for by polling until they answer (or a deadline passes), then stopped.
# `scripts/test.sh` itself, `npm test`, `npm run bench` and `npm run screenshots` have their own steps
# in scripts/test.sh. Exit code non-zero on the first failure, with the command named.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"
fail() { echo "readme commands: FAIL: $*" >&2; exit 1; }
TEXT="The chef, who trained in Paris, cooked the meal quickly."
MODEL=web/models/headscope-base

# serve_check NAME PORT COMMAND...: starts COMMAND (a server) in its own process group, waits until
# the page, the engine's .wasm and the default model's weights answer 200, then stops the group.
serve_check() {
  local name="$1" port="$2"; shift 2
  local log="build/readme-commands-$port.log"
  mkdir -p build
  PORT="$port" setsid "$@" >"$log" 2>&1 &
  local pid=$!
  local deadline=$((SECONDS + 900))   # a first build of both wasm engines takes minutes on 2 cores
  local ok=0
  while [ $SECONDS -lt $deadline ]; do
    if ! kill -0 "$pid" 2>/dev/null; then cat "$log" >&2; fail "$name exited before serving"; fi
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then ok=1; break; fi
    sleep 1   # polling interval of the readiness check above, not a wait standing in for it
  done
  if [ $ok = 1 ]; then
    for path in / /headscope_wasm.wasm /models/headscope-base/model.safetensors /models/headscope-base/config.json; do
      curl -fsS -o /dev/null "http://127.0.0.1:$port$path" || { ok=0; echo "$name: GET $path failed" >&2; }
    done
    # the page is served under the strict policy it is built for
    curl -fsSI "http://127.0.0.1:$port/" | grep -qi "^content-security-policy: .*script-src 'self' 'wasm-unsafe-eval'" ||
      { ok=0; echo "$name: / is not served with the strict Content-Security-Policy" >&2; }
  fi
  kill -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [ $ok = 1 ] || { tail -20 "$log" >&2; fail "$name did not serve the demo on port $port"; }
  echo "readme commands: $name served the demo, its engine and the default model"
}

serve_check "scripts/run.sh" 18431 scripts/run.sh
serve_check "npm start" 18432 npm start --silent

out=$(scripts/run.sh --cli 2>&1) || { echo "$out" >&2; fail "scripts/run.sh --cli"; }
grep -q "chef" <<<"$out" || { echo "$out" >&2; fail "scripts/run.sh --cli printed no token 'chef'"; }
echo "readme commands: scripts/run.sh --cli ran the article's sentence"

CLI=build/native-release/headscope
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$CLI" run --model "$MODEL" --text "$TEXT" --json > "$tmp/run.json" || fail "headscope run --json"
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const T = d.tokens.length, L = d.attention.length, H = d.attention[0].length;
if (!(T > 5 && d.ids.length === T && d.attention[0][0].length === T && d.logits_last.length > 1000)) process.exit(1);
// every attention row is a probability distribution over the keys up to its query (causal)
for (const layer of d.attention) for (const head of layer) head.forEach((row, q) => {
  const s = row.reduce((a, b) => a + b, 0);
  if (Math.abs(s - 1) > 1e-4 || row.slice(q + 1).some((w) => w !== 0)) process.exit(2);
});
console.log(`readme commands: headscope run --json: ${T} tokens, ${L} x ${H} attention maps`);
' "$tmp/run.json" || fail "headscope run --json gave a malformed document"
"$CLI" run --model "$MODEL" --text "$TEXT" --ablate 0:1,1:3 >/dev/null || fail "headscope run --ablate"
# DIR may be a Llama-family folder (tokenizer.json): a grouped-query fixture, its BOS first
LLAMA=tests/fixtures/models/llama-gqa
"$CLI" run --model "$LLAMA" --text "$TEXT" --json > "$tmp/llama.json" || fail "headscope run --json on a Llama-family folder"
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (!(d.tokens[0] === "<|begin_of_text|>" && d.attention[0].length === 4)) process.exit(1);
console.log(`readme commands: headscope run on a Llama-family folder: ${d.tokens.length} tokens, ${d.attention[0].length} query heads a layer`);
' "$tmp/llama.json" || fail "headscope run --json on a Llama-family folder gave an unexpected document"
"$CLI" info --model "$LLAMA" | grep -q "share key/value head" || fail "headscope info on a Llama-family folder does not say how heads share"
# the README's training line, shortened: the preset as the page runs it, for 20 steps
"$CLI" train --preset induction --steps 20 --out "$tmp/trained" --scores --log-every 10 >"$tmp/train.log" ||
  fail "headscope train --preset induction"
grep -q '"done": *true' "$tmp/train.log" || fail "headscope train printed no final line"
"$CLI" info --model "$tmp/trained" >/dev/null || fail "the trained folder does not open"
echo "readme commands: headscope train --preset induction wrote a folder that opens"
# the README's heads and generate lines, on the default model (heads: no random orders, to be quick)
"$CLI" heads --model "$MODEL" --text-file "$MODEL/heldout.txt" --random-orders 0 --json > "$tmp/heads.json" ||
  fail "headscope heads"
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (!(d.order.length === d.gate_grad.length * d.gate_grad[0].length && d.pruned_loss.length === d.order.length + 1)) process.exit(1);
' "$tmp/heads.json" || fail "headscope heads --json gave a malformed document"
out=$("$CLI" generate --model "$MODEL" --text "The chef" --tokens 20 --seed 1) || fail "headscope generate"
[ "${out#The chef}" != "$out" ] && [ ${#out} -gt 12 ] || fail "headscope generate did not continue the text: '$out'"
# the README's patch line: an induction pair on the default model, whose answer must beat the distractor
out=$("$CLI" patch --model "$MODEL" --clean "Mr. Smith left the room. Later, Mr." --corrupted "Mr. Jones left the room. Later, Mr." --answer " Smith" --distractor " Jones") || fail "headscope patch"
grep -q '^head  *patched  *attribution' <<<"$out" || fail "headscope patch printed no table: '$out'"
ld=$(grep -oP 'LD clean \K[-0-9.]+' <<<"$out") && awk -v x="$ld" 'BEGIN { exit !(x > 1) }' ||
  fail "headscope patch: the clean text's answer does not beat the distractor by a nat: '$out'"
# the README's explain and circuits lines on the default model
out=$("$CLI" explain --model "$MODEL" --text "Mr. Smith left. Later, Mr. Smith" --head 1:2 --query 8 --key 2) ||
  fail "headscope explain"
grep -q '^L1H2, query 8 "\.", key 2 " Smith": score' <<<"$out" || fail "headscope explain printed no split: '$out'"
out=$("$CLI" circuits --model "$MODEL") || fail "headscope circuits"
grep -q '^baseline (random matrices, 16 seeds)' <<<"$out" || fail "headscope circuits printed no table: '$out'"
# the README's accuracy line: 8-bit weights against float32 on the default model's held-out text
out=$("$CLI" accuracy --model "$MODEL" --text-file "$MODEL/heldout.txt") || fail "headscope accuracy"
grep -q 'weights q8' <<<"$out" && grep -q 'KL mean' <<<"$out" || fail "headscope accuracy printed no comparison: '$out'"
echo "readme commands: headscope heads, patch, explain, circuits, generate and accuracy ran"
echo "readme commands: all passed"
