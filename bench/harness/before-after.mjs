// Two builds of the engine side by side, interleaved in one run: did a change keep the speed?
//   node bench/harness/before-after.mjs --before DIR --after DIR [--gpt2 FOLDER] [--rounds N] [--out FILE]
//                               [--before-args "..."] [--after-args "..."]
// --before-args / --after-args: more options for one side's CLI, written with "=" (e.g. --after-args="--threads 1", to
// compare one thread with a build from before threads).
// Each DIR holds a native CLI (`headscope`, a native-release build) and a wasm module
// (`headscope_wasm.js` + `.wasm`, a wasm-release build) of one version, e.g. build trees of a
// `git worktree` at the old commit and of the current one. Measured, rounds alternating before/after:
//   native: `headscope bench` forward (CPU time) on the default model (T = 128) and, with --gpt2, a
//           GPT-2-small-shaped folder (bench/shapes/make_gpt2_small.py) at T = 64, 256, 1024;
//   native training: `headscope train --preset induction` tokens/s over 300 steps;
//   wasm (Node): a full run of the default model (T = 128) and of the GPT-2-small folder (T = 256)
//           through the bound Model.run, after a warm-up (V8 tiers wasm up only for later calls).
// Prints one JSON document: per case the median of each side and after/before (above 1: slower).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { coreRunCall } from './lib.mjs';

const { values: o } = parseArgs({
  options: {
    before: { type: 'string' },
    after: { type: 'string' },
    gpt2: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    out: { type: 'string' },
    model: { type: 'string', default: 'web/models/headscope-base' },
    'before-args': { type: 'string', default: '' },
    'after-args': { type: 'string', default: '' },
  },
});
if (!o.before || !o.after) {
  console.error(
    'usage: node bench/harness/before-after.mjs --before DIR --after DIR [--gpt2 FOLDER] [--rounds N] [--out FILE]',
  );
  process.exit(2);
}
const rounds = Number(o.rounds);
const sides = { before: path.resolve(o.before), after: path.resolve(o.after) };
const extra = {
  [sides.before]: o['before-args'].split(' ').filter(Boolean),
  [sides.after]: o['after-args'].split(' ').filter(Boolean),
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = {};
const record = (name, side, value) => (results[name] ??= { before: [], after: [] })[side].push(value);

function nativeBench(dir, model, T) {
  const out = execFileSync(path.join(dir, 'headscope'), [
    'bench',
    '--model',
    model,
    '--tokens',
    String(T),
    '--repeat',
    '5',
    ...extra[dir],
  ]);
  return JSON.parse(out.toString()).forward_cpu_ms;
}
function nativeTrain(dir) {
  const out = execFileSync(path.join(dir, 'headscope'), [
    'train',
    '--preset',
    'induction',
    '--steps',
    '300',
    '--log-every',
    '300',
    '--out',
    path.join('/tmp', `before-after-${process.pid}`),
    ...extra[dir],
  ])
    .toString()
    .trim()
    .split('\n');
  return JSON.parse(out[0]).tokens_per_s;
}

// the bound module of one build, with a model loaded from a folder
async function wasmModel(dir, folder) {
  const glue = await import(pathToFileURL(path.join(dir, 'headscope_wasm.js')).href + `?${path.basename(dir)}`);
  const core = await glue.default({ wasmBinary: readFileSync(path.join(dir, 'headscope_wasm.wasm')) });
  const f = (n) => readFileSync(path.join(folder, n));
  const m = core.load(
    f('config.json').toString(),
    new Uint8Array(f('model.safetensors')),
    f('vocab.json').toString(),
    f('merges.txt').toString(),
  );
  if (!m) throw new Error(core.lastError());
  return m;
}
// a text of about T tokens; two variants that differ at the first character, so each run is a full one
const words =
  'the chef who trained in paris cooked the meal quickly while the old farmer watched from his porch '.split(' ');
const textOf = (T, first) =>
  first + ' ' + Array.from({ length: T - 1 }, (_, i) => words[i % (words.length - 1)]).join(' ');
async function wasmCase(name, models, T) {
  const texts = [textOf(T, 'A'), textOf(T, 'B')];
  for (const side of Object.keys(sides)) for (let i = 0; i < 3; i++) coreRunCall(models[side], texts[i % 2]); // warm-up
  for (let r = 0; r < rounds; r++)
    for (const side of Object.keys(sides)) {
      const times = [];
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        if (!coreRunCall(models[side], texts[i % 2])) throw new Error(`${side}: run failed`);
        times.push(performance.now() - t0);
      }
      record(name, side, median(times));
    }
}

for (let r = 0; r < rounds; r++)
  for (const side of Object.keys(sides)) {
    record('native default model T=128 forward CPU ms', side, nativeBench(sides[side], o.model, 128));
    if (o.gpt2)
      for (const T of [64, 256, 1024])
        record(`native GPT-2 small T=${T} forward CPU ms`, side, nativeBench(sides[side], o.gpt2, T));
    record('native training, induction preset, tokens/s', side, nativeTrain(sides[side]));
  }
const base = { before: await wasmModel(sides.before, o.model), after: await wasmModel(sides.after, o.model) };
await wasmCase('wasm default model T=128 run ms', base, 128);
if (o.gpt2) {
  const big = { before: await wasmModel(sides.before, o.gpt2), after: await wasmModel(sides.after, o.gpt2) };
  await wasmCase('wasm GPT-2 small T=256 run ms', big, 256);
}
const report = { date: new Date().toISOString().slice(0, 10), rounds, cases: {} };
for (const [name, v] of Object.entries(results)) {
  const b = median(v.before),
    a = median(v.after);
  report.cases[name] = { before: +b.toFixed(3), after: +a.toFixed(3), after_over_before: +(a / b).toFixed(3) };
}
const text = JSON.stringify(report, null, 1);
console.log(text);
if (o.out) writeFileSync(o.out, text + '\n');
