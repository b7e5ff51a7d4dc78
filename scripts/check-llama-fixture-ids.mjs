#!/usr/bin/env node
// Checks the token ids that scripts/make_llama_fixtures.py computes with its own small byte-level BPE
// encoder against @lenml/tokenizers (transformers.js's tokenizer code), an independent JavaScript
// implementation of Hugging Face's tokenizer.json. make_llama_fixtures.py runs it before writing anything.
//
// Usage: node scripts/check-llama-fixture-ids.mjs CASES.json
//   CASES.json: [{ "name", "tokenizer_json": path, "tokenizer_config": path,
//                  "cases": [{ "text", "ids", "ids_no_special" }] }]
//   ids:            encode(text, { add_special_tokens: true }): what the post_processor adds (Llama 3: BOS)
//   ids_no_special: encode(text, { add_special_tokens: false }): the text's own tokens
// Also decodes ids_no_special and requires the text back (byte-level BPE is lossless).
// Exits 1 on any difference. The package is resolved from the repository's node_modules (npm ci), or from
// the node_modules folder named by HEADSCOPE_NODE_MODULES.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const specPath = process.argv[2];
if (!specPath) {
  console.error('usage: check-llama-fixture-ids.mjs CASES.json');
  process.exit(2);
}
const from = process.env.HEADSCOPE_NODE_MODULES
  ? join(resolve(process.env.HEADSCOPE_NODE_MODULES), '..', 'resolve-from-here.js')
  : import.meta.url;
let TokenizerLoader;
try {
  ({ TokenizerLoader } = createRequire(from)('@lenml/tokenizers'));
} catch (e) {
  console.error(`@lenml/tokenizers not found (run npm ci, or set HEADSCOPE_NODE_MODULES): ${e.message}`);
  process.exit(2);
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
let failures = 0;
let checked = 0;
for (const family of JSON.parse(readFileSync(specPath, 'utf8'))) {
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(family.tokenizer_json, 'utf8')),
    tokenizerConfig: JSON.parse(readFileSync(family.tokenizer_config, 'utf8')),
  });
  for (const c of family.cases) {
    const withSpecial = Array.from(tok.encode(c.text, { add_special_tokens: true }));
    const plain = Array.from(tok.encode(c.text, { add_special_tokens: false }));
    const back = tok.decode(plain);
    for (const [what, got, want] of [['ids', withSpecial, c.ids], ['ids_no_special', plain, c.ids_no_special]]) {
      if (!same(got, want)) {
        console.error(`${family.name} ${JSON.stringify(c.text)}: ${what} ${JSON.stringify(want)} (Python) vs ` +
          `${JSON.stringify(got)} (@lenml/tokenizers)`);
        failures++;
      }
    }
    if (back !== c.text) {
      console.error(`${family.name} ${JSON.stringify(c.text)}: decodes to ${JSON.stringify(back)}`);
      failures++;
    }
    checked++;
  }
}
if (failures) {
  console.error(`${failures} differences`);
  process.exit(1);
}
console.log(`ids: ${checked} texts agree with @lenml/tokenizers (with and without special tokens)`);
