// The speed of score splits and circuits, natively, so that the bench flags a regression:
//   circuits: `headscope circuits --json`, every head's copying score and the Q-, K- and
//     V-composition of every pair of heads in different layers, from the weights alone;
//   explain_cell: `headscope explain --json` of one cell, a head of the last layer (the most parts a
//     side) at the last of 20 GPT-2 tokens on an earlier key, against the mean over the keys;
//   each less `headscope run` on the same text beside it: all three load the model, and explain and
//     run both run the text once. circuits runs no text, so its figure is also less that run of 20
//     tokens (about 50 ms on GPT-2 small's shape, beside 0.7 s of load and 4 s of circuits).
// Runs are interleaved: each repeat runs circuits, then --pairs times explain and run, so a load
// spike on the shared machine hits all alike. explain's own work is small beside the load (tens of
// ms against 0.7 s on GPT-2 small's shape) and another process on the machine moves the load by
// hundreds of ms at times: the pairs are cheap, and more of them steady the median. circuits is
// less the median of its repeat's runs. Each command's JSON is checked before its time counts: a
// fast wrong answer is no figure.
// Usage: node bench/harness/explain-bench.mjs --model DIR --cli PATH --out FILE [--quick] [--repeats N]
//          [--pairs N] [--threads 2]
//   DIR: a GPT-2 folder with GPT-2's tokenizer (bench/shapes/make_gpt2_small.py)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { benchArgs, machineInfo, stats, timedCommand } from './lib.mjs';

const opt = benchArgs(
  {
    required: ['model', 'cli', 'out'],
    strings: ['repeats', 'pairs'],
    defaults: { threads: '2' },
    flags: ['quick'],
  },
  'node bench/harness/explain-bench.mjs --model DIR --cli PATH --out FILE [--quick] [--repeats N] [--pairs N] [--threads 2]',
);
const log = (...a) => console.error('[explain]', ...a);
const repeats = Number(opt.repeats ?? (opt.quick ? 1 : 3));
const pairs = Number(opt.pairs ?? (opt.quick ? 1 : 3));
const threads = Number(opt.threads);
for (const [name, n] of [
  ['repeats', repeats],
  ['pairs', pairs],
])
  if (!(Number.isInteger(n) && n >= 1)) throw new Error(`--${name} ${opt[name]}: a whole number >= 1`);

// patch-bench.mjs's clean text: 20 tokens with GPT-2's tokenizer; the query is the last token
// (" named"), the key the second (" Mary"), what an induction or name mover head would look back at
const TEXT = 'When Mary and John went to the big store in town, John gave a drink to the girl named';
const TOKENS = 20;
const QUERY = TOKENS - 1;
const KEY = 1;

const config = JSON.parse(readFileSync(path.join(opt.model, 'config.json'), 'utf8'));
const L = config.n_layer,
  H = config.n_head,
  C = config.n_embd;
const LAYER = L - 1,
  HEAD = 0;
// the parts entering the last layer (headscope/explain.hpp): embed, pos, then each earlier layer's
// heads, attention bias and MLP, then bias
const PARTS = 2 + LAYER * (H + 2) + 1;
const out = {
  machine: machineInfo(), // the CPU: the ceilings differ by vendor and flags
  model: { dir: path.resolve(opt.model), n_layer: L, n_head: H, n_embd: C, vocab_size: config.vocab_size },
  tokens: TOKENS,
  head: `${LAYER}:${HEAD}`,
  query: QUERY,
  key: KEY,
  parts: PARTS,
};

const timed = (args) => timedCommand(opt.cli, args);
const parsed = (command, stdout) => {
  try {
    return JSON.parse(stdout);
  } catch (e) {
    throw new Error(`headscope ${command} --json printed no JSON (${e.message}): ${stdout.slice(0, 200)}`);
  }
};
const finite = (x) => typeof x === 'number' && Number.isFinite(x);
// a rows x cols array of arrays whose every cell passes ok(value, row, col)
function checkMatrix(name, m, rows, cols, ok) {
  if (!Array.isArray(m) || m.length !== rows) throw new Error(`${name}: ${m?.length} rows, not ${rows}`);
  m.forEach((row, a) => {
    if (!Array.isArray(row) || row.length !== cols)
      throw new Error(`${name}[${a}]: ${row?.length} columns, not ${cols}`);
    row.forEach((x, b) => {
      if (!ok(x, a, b)) throw new Error(`${name}[${a}][${b}] = ${JSON.stringify(x)}`);
    });
  });
}

function checkCircuits(j) {
  // copying: sum Re(lambda) / sum |lambda|, within [-1, 1] but for double rounding
  checkMatrix('copying', j.copying, L, H, (x) => finite(x) && Math.abs(x) <= 1 + 1e-9);
  // comp(X, Y) = |X Y|_F / (|X|_F |Y|_F) is within [0, 1] (|X Y|_F <= |X|_F |Y|_F); null exactly
  // where head A's layer is not before head B's
  const layer = (i) => Math.floor(i / H);
  for (const k of ['Q', 'K', 'V']) {
    checkMatrix(`composition.${k}`, j.composition?.[k], L * H, L * H, (x, a, b) =>
      layer(a) < layer(b) ? finite(x) && x >= 0 && x <= 1 + 1e-9 : x === null,
    );
    const base = j.baseline?.[k];
    if (!(finite(base) && base >= 0 && base <= 1)) throw new Error(`baseline.${k} = ${base}`);
  }
  if (j.seeds !== 16) throw new Error(`${j.seeds} seeds, not the default 16`);
}

function checkExplain(j) {
  if (!Array.isArray(j.components) || j.components.length !== PARTS || j.components[0] !== 'embed')
    throw new Error(`components: ${j.components?.length} from ${j.components?.[0]}, not ${PARTS} from embed`);
  if (!finite(j.score)) throw new Error(`score = ${j.score}`);
  checkMatrix('table', j.table, PARTS, PARTS, finite);
  if (j.contrast?.against !== 'mean') throw new Error(`contrast against ${j.contrast?.against}, not the mean`);
  checkMatrix('contrast.table', j.contrast.table, PARTS, PARTS, finite);
  if (!Array.isArray(j.value?.by_token) || j.value.by_token.length !== TOKENS)
    throw new Error(`value.by_token has ${j.value?.by_token?.length} tokens, not ${TOKENS}: not GPT-2's tokenizer?`);
  if (!finite(j.value.total)) throw new Error(`value.total = ${j.value.total}`);
  // The cells sum to the score. Both come from the same float32 activations, the cells summed in
  // double, but the score is the forward pass's own q . k, whose q and k went through the float32
  // input norm and projections: dot products of n_embd terms, each off by at most about
  // n_embd * 2^-24 of its terms' absolute sum (float32's worst case for a sum of n_embd products).
  // The cells' absolute sum stands for that size (the cells are the q . k terms split by part), so
  // n_embd * 2^-24 of it (4.6e-5 at n_embd 768, where the gap is about 1e-8) allows the worst case
  // and still catches a part left out or counted twice: that moves the sum by a row or column of
  // cells, about 1/P of their absolute sum on average.
  let sum = 0,
    size = 0;
  for (const row of j.table) for (const x of row) ((sum += x), (size += Math.abs(x)));
  const bound = C * 2 ** -24 * (1 + size);
  if (!(Math.abs(sum - j.score) <= bound))
    throw new Error(`the cells sum to ${sum}, the score is ${j.score} (bound ${bound.toExponential(2)})`);
  return Math.abs(sum - j.score) / (1 + size);
}

const common = ['--model', opt.model, '--threads', String(threads)];
const explainArgs = ['--text', TEXT, '--head', out.head, '--query', String(QUERY), '--key', String(KEY), '--json'];
const circuitsMs = [],
  circuitsLess = [],
  explainMs = [],
  explainLess = [],
  runMs = [];
let worstSum = 0;
// untimed: the stage's first read of the checkpoint may come from the disk (548 MB at GPT-2 small's
// shape), which would land on the first command alone
timed(['run', ...common, '--text', TEXT]);
const median = (xs) => stats(xs).median_ms;
for (let i = 0; i < repeats; i++) {
  const c = timed(['circuits', ...common, '--json']);
  checkCircuits(parsed('circuits', c.stdout));
  const runs = [];
  for (let k = 0; k < pairs; k++) {
    const e = timed(['explain', ...common, ...explainArgs]);
    worstSum = Math.max(worstSum, checkExplain(parsed('explain', e.stdout)));
    const r = timed(['run', ...common, '--text', TEXT]);
    explainMs.push(e.ms);
    explainLess.push(e.ms - r.ms);
    runs.push(r.ms);
  }
  circuitsMs.push(c.ms);
  circuitsLess.push(c.ms - median(runs));
  runMs.push(...runs);
  log(
    `native, ${threads} threads: circuits ${c.ms.toFixed(0)} ms; explain, run: ` +
      runs.map((r, k) => `${explainMs[explainMs.length - pairs + k].toFixed(0)}, ${r.toFixed(0)} ms`).join('; '),
  );
}
log(`the cells sum to the score within ${worstSum.toExponential(2)} of their absolute sum`);
out.native = {
  threads,
  circuits: stats(circuitsLess),
  explain_cell: stats(explainLess),
  run_command: stats(runMs),
  circuits_command: stats(circuitsMs),
  explain_command: stats(explainMs),
};
const s = (x) => `${x.median_ms.toFixed(0)} ms (${x.min_ms.toFixed(0)} to ${x.p95_ms.toFixed(0)}, ${x.runs} runs)`;
log(
  `${L} layers x ${H} heads, n_embd ${C}, ${threads} threads, median (min to p95): ` +
    `circuits ${s(out.native.circuits)}, explain one cell ${s(out.native.explain_cell)}, ` +
    `run (the load) ${s(out.native.run_command)}`,
);
writeFileSync(opt.out, JSON.stringify(out, null, 2) + '\n');
log(`wrote ${opt.out}`);
