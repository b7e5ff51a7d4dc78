// The formatters, one entry point: clang-format (C++, .clang-format), prettier (JavaScript,
// .prettierrc.json) and ruff (Python: its formatter, and its linter's pyflakes and pycodestyle
// errors), over the files git tracks. Every one comes from Debian or npm: ruff runs as its
// WebAssembly build (@astral-sh/ruff-wasm-nodejs), since PyPI is not reachable here.
//   node scripts/format.mjs          rewrite the files that are not formatted
//   node scripts/format.mjs --check  change nothing; list them, with ruff's findings, and exit 1 if any
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { Workspace, PositionEncoding } from '@astral-sh/ruff-wasm-nodejs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const tracked = (...globs) =>
  execFileSync('git', ['ls-files', '-z', '--', ...globs], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter(Boolean);

// ruff's settings: the formatter at 120 columns; the linter's errors that are bugs or dead code
// (pyflakes F, pycodestyle E/W), without line length (the formatter's) and lambda assignment (a habit here)
const RUFF = { 'line-length': 120, lint: { select: ['E', 'F', 'W'], ignore: ['E501', 'E731', 'E741'] } };

const unformatted = [];
const findings = [];

function settle(file, before, after) {
  if (before === after) return;
  unformatted.push(file);
  if (!check) writeFileSync(join(ROOT, file), after);
}

// C++: clang-format reads .clang-format from the tree
for (const file of tracked('*.cpp', '*.hpp')) {
  const before = readFileSync(join(ROOT, file), 'utf8');
  const after = execFileSync('clang-format-14', [`--assume-filename=${file}`], {
    cwd: ROOT,
    input: before,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  settle(file, before, after);
}

// JavaScript
const prettierOptions = await prettier.resolveConfig(join(ROOT, '.prettierrc.json'));
for (const file of tracked('*.js', '*.mjs')) {
  const before = readFileSync(join(ROOT, file), 'utf8');
  settle(file, before, await prettier.format(before, { ...prettierOptions, filepath: file }));
}

// Python
const ruff = new Workspace(RUFF, PositionEncoding.Utf16);
for (const file of tracked('*.py')) {
  const before = readFileSync(join(ROOT, file), 'utf8');
  settle(file, before, ruff.format(before));
  for (const d of ruff.check(before)) findings.push(`${file}:${d.start_location.row}: ${d.code} ${d.message}`);
}

for (const f of findings) console.log(f);
if (check) {
  for (const f of unformatted) console.log(`not formatted: ${f}`);
  console.log(`format check: ${unformatted.length} files not formatted, ${findings.length} lint findings`);
  process.exit(unformatted.length || findings.length ? 1 : 0);
}
console.log(`formatted ${unformatted.length} files; ${findings.length} lint findings`);
process.exit(findings.length ? 1 : 0);
