// Training speed side by side: tokens/s of full training steps of the engine's
// native build (the `headscope train` CLI), its wasm build in Node (the npm package's createTrainer,
// SIMD128, and the relaxed-SIMD build Chromium loads), and PyTorch on CPU with one thread
// (bench/shapes/train_torch.py, the repository's reference GPT-2), on the same model shape, batch and
// sequence length, in one run; then the native CLI and PyTorch again at each other count of
// --threads (default 2; "1" for none), as native_Nt and torch_Nt:
//   default  the page's default preset `induction`: 2 layers x 4 heads, n_embd 64, context 32,
//            vocabulary 48, batch 16, T = 32 (cpp/src/train/training_spec.cpp)
//   d128     the same with n_embd 128 (4 heads of 32): between the two, to place the crossover
//   d256     the same with n_embd 256 (4 heads of 64), where PyTorch's BLAS should win
// Every subject does the same work per step: a fresh batch of B x (T+1) tokens, forward, mean
// next-token cross-entropy, backward, clip the global norm at 1.0, AdamW (lr 1e-3, betas 0.9/0.999,
// eps 1e-8, no decay). (The engine draws its induction-task batch, PyTorch uniform random tokens:
// either costs microseconds against a step of milliseconds.)
//
// Interleaving: the wasm and PyTorch subjects are long-lived processes that run a chunk of steps on
// request; the native CLI is started for each chunk and its first logged window (warm-up) dropped.
// In each round every subject runs one chunk of about the same wall time, in a rotating order, so a
// load spike on the shared machine hits all subjects alike; ratios are medians of the per-round
// ratios to PyTorch (paired), tokens/s the medians over rounds.
//
// Usage: node bench/harness/train-speed.mjs --native BIN --pkg DIR --out FILE [--quick] [--shapes default,d128,d256]
//          [--no-relaxed] [--rounds N] [--chunk-seconds S] [--threads 2]
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { benchArgs, machineInfo, ROOT } from './lib.mjs';

const opt = benchArgs(
  {
    required: ['native', 'pkg', 'out'],
    strings: ['rounds', 'chunk-seconds'],
    defaults: { shapes: 'default,d128,d256', python: '/usr/bin/python3', threads: '2' },
    flags: ['quick', 'no-relaxed'],
  },
  'node bench/harness/train-speed.mjs --native BIN --pkg DIR --out FILE [--quick] [--shapes default,d128,d256] [--no-relaxed]',
);
// many short rounds: the load on the shared cores changes within seconds, so the subjects' chunks of
// one round should lie close together in time
// (the quick run only checks that every subject trains and reports: 2 short rounds)
const ROUNDS = Number(opt.rounds ?? (opt.quick ? 2 : 15));
// thread counts beyond 1 for the native and PyTorch subjects
const MORE_THREADS = opt.threads
  .split(',')
  .map(Number)
  .filter((n) => n !== 1);
if (MORE_THREADS.some((n) => !Number.isInteger(n) || n < 1))
  throw new Error(`--threads takes counts like 2 or 2,4, got ${opt.threads}`);
const CHUNK_S = Number(opt['chunk-seconds'] ?? (opt.quick ? 0.2 : 0.5));
const log = (...a) => console.error('[train]', ...a);

// the page's default preset (cpp/src/train/training_spec.cpp, induction_spec(2, 4))
const DEFAULT = { n_layer: 2, n_head: 4, n_embd: 64, n_positions: 32, vocab_size: 48, batch_size: 16, seq_len: 32 };
const SHAPES = {
  default: { label: "the page's default preset (induction: 2 layers x 4 heads, n_embd 64)", ...DEFAULT },
  d128: { label: 'the same with n_embd 128 (4 heads of 32)', ...DEFAULT, n_embd: 128 },
  d256: { label: 'the same with n_embd 256 (4 heads of 64)', ...DEFAULT, n_embd: 256 },
};
const tmp = mkdtempSync(path.join(os.tmpdir(), 'headscope-train-bench-'));

// ---- a long-lived subject: one JSON line per request ("N" -> {"steps", "seconds"}) ----------------
function persistent(name, cmd, args) {
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'], cwd: ROOT });
  const lines = createInterface({ input: child.stdout });
  const queue = [];
  const waiting = [];
  lines.on('line', (l) => {
    if (waiting.length) waiting.shift()(l);
    else queue.push(l);
  });
  let exited = null;
  child.on('exit', (code) => {
    exited = code;
    while (waiting.length) waiting.shift()(null);
  });
  const next = () =>
    new Promise((resolve) => {
      if (queue.length) resolve(queue.shift());
      else if (exited !== null) resolve(null);
      else waiting.push(resolve);
    });
  const read = async () => {
    const l = await next();
    if (l === null) throw new Error(`${name}: the process ended (exit ${exited})`);
    return JSON.parse(l);
  };
  return {
    name,
    ready: read(),
    async run(n) {
      child.stdin.write(`${n}\n`);
      const r = await read();
      return { steps: r.steps, seconds: r.seconds };
    },
    close() {
      child.stdin.end('\n');
    },
  };
}

// ---- the native CLI: a process per chunk; windows of K steps, the first one dropped ---------------
function nativeSubject(shape, threads = 1) {
  const cfg = path.join(tmp, `config-${shape.n_embd}.json`);
  writeFileSync(
    cfg,
    JSON.stringify({
      n_layer: shape.n_layer,
      n_head: shape.n_head,
      n_embd: shape.n_embd,
      n_positions: shape.n_positions,
      vocab_size: shape.vocab_size,
    }),
  );
  const tokensPerStep = shape.batch_size * shape.seq_len;
  const run = (n) =>
    new Promise((resolve, reject) => {
      const K = Math.max(1, Math.ceil(n / 4));
      const args = [
        'train',
        '--preset',
        'induction',
        '--config',
        cfg,
        '--batch-size',
        String(shape.batch_size),
        '--seq-len',
        String(shape.seq_len),
        '--steps',
        String(5 * K),
        '--log-every',
        String(K),
        '--threads',
        String(threads),
        '--out',
        path.join(tmp, `native-out-${threads}`),
      ];
      const child = spawn(opt.native, args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.on('error', reject);
      child.on('exit', (code) => {
        if (code !== 0) return reject(new Error(`native: ${opt.native} ${args.join(' ')} exited ${code}`));
        const windows = out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l))
          .filter((l) => l.tokens_per_s !== undefined);
        const timed = windows.slice(1); // the first window pays the first steps' allocations
        const steps = timed.length * K;
        resolve({ steps, seconds: timed.reduce((s, w) => s + (K * tokensPerStep) / w.tokens_per_s, 0) });
      });
    });
  return {
    name: threads === 1 ? 'native' : `native_${threads}t`,
    ready: Promise.resolve({ build: '-O3 -march=native', threads }),
    run,
    close() {},
  };
}

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};

async function benchShape(key) {
  const shape = SHAPES[key];
  const tokensPerStep = shape.batch_size * shape.seq_len;
  const shapeArg = JSON.stringify(Object.fromEntries(Object.entries(shape).filter(([k]) => k !== 'label')));
  const warm = key === 'default' ? '50' : '6'; // steps (d256: about 0.1-0.3 s each)
  const subjects = [
    nativeSubject(shape),
    persistent('wasm', 'node', ['bench/harness/train-wasm.mjs', '--pkg', opt.pkg, '--warmup', warm, shapeArg]),
    ...(opt['no-relaxed']
      ? []
      : [
          persistent('wasm_relaxed', 'node', [
            '--experimental-wasm-relaxed-simd',
            'bench/harness/train-wasm.mjs',
            '--pkg',
            opt.pkg,
            '--warmup',
            warm,
            shapeArg,
          ]),
        ]),
    persistent('torch', opt.python, ['bench/shapes/train_torch.py', shapeArg, '--warmup', warm, '--foreach']),
    ...MORE_THREADS.flatMap((n) => [
      nativeSubject(shape, n),
      persistent(`torch_${n}t`, opt.python, [
        'bench/shapes/train_torch.py',
        shapeArg,
        '--warmup',
        warm,
        '--foreach',
        '--threads',
        String(n),
      ]),
    ]),
  ];
  const info = {};
  for (const s of subjects) info[s.name] = await s.ready;
  if (info.wasm_relaxed && info.wasm_relaxed.build !== 'relaxed SIMD')
    throw new Error(
      `wasm_relaxed loaded the ${info.wasm_relaxed.build} build (does ${opt.pkg} hold headscope_wasm_relaxed.wasm?)`,
    );
  if (info.wasm.build !== 'SIMD128') throw new Error(`wasm loaded the ${info.wasm.build} build, not SIMD128`);
  // calibration: seconds per step of each subject, then chunks of about CHUNK_S seconds
  const perStep = {};
  for (const s of subjects) {
    const n = key === 'default' ? 8 : 3;
    const r = await s.run(n);
    perStep[s.name] = r.seconds / r.steps;
  }
  const chunk = Object.fromEntries(
    subjects.map((s) => [s.name, Math.max(s.name === 'native' ? 4 : 2, Math.round(CHUNK_S / perStep[s.name]))]),
  );
  log(`${key}: steps per chunk ${JSON.stringify(chunk)} (${ROUNDS} rounds)`);
  const samples = Object.fromEntries(subjects.map((s) => [s.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < subjects.length; i++) {
      const s = subjects[(i + r) % subjects.length];
      const { steps, seconds } = await s.run(chunk[s.name]);
      samples[s.name].push((steps * tokensPerStep) / seconds);
    }
  }
  for (const s of subjects) s.close();
  const tps = Object.fromEntries(
    Object.entries(samples).map(([n, v]) => [
      n,
      {
        tokens_per_s: median(v),
        min: Math.min(...v),
        max: Math.max(...v),
        samples: v.map((x) => Math.round(x)),
        steps_per_chunk: chunk[n],
      },
    ]),
  );
  const pairs = (a, b) => samples[a].map((x, i) => x / samples[b][i]);
  const paired = (a, b) => median(pairs(a, b));
  const quartiles = (xs) => {
    const v = [...xs].sort((x, y) => x - y);
    const q = (p) => v[Math.min(v.length - 1, Math.floor(p * v.length))];
    return [q(0.25), q(0.75)];
  };
  const ratios = {
    native_over_torch: paired('native', 'torch'),
    wasm_over_torch: paired('wasm', 'torch'),
    ...(samples.wasm_relaxed ? { wasm_relaxed_over_torch: paired('wasm_relaxed', 'torch') } : {}),
    wasm_over_native: paired('wasm', 'native'),
    ...Object.fromEntries(
      MORE_THREADS.flatMap((n) => [
        [`native_${n}t_over_torch_${n}t`, paired(`native_${n}t`, `torch_${n}t`)],
        [`native_${n}t_over_native`, paired(`native_${n}t`, 'native')],
        [`torch_${n}t_over_torch`, paired(`torch_${n}t`, 'torch')],
      ]),
    ),
  };
  // the spread of the per-round ratios (first and third quartile): how much the load moved them
  const spread = Object.fromEntries(
    Object.keys(ratios).map((k) => {
      const [a, b] = k.split('_over_');
      return [k, quartiles(pairs(a, b))];
    }),
  );
  log(
    `${key}: tokens/s ${Object.entries(tps)
      .map(([n, v]) => `${n} ${Math.round(v.tokens_per_s)}`)
      .join(', ')}; ` +
      Object.entries(ratios)
        .map(([n, v]) => `${n} ${v.toFixed(2)}`)
        .join(', '),
  );
  return {
    key,
    label: shape.label,
    shape: Object.fromEntries(Object.entries(shape).filter(([k]) => k !== 'label')),
    tokens_per_step: tokensPerStep,
    subjects: tps,
    ratios,
    ratio_quartiles: spread,
    info,
  };
}

const loadBefore = os.loadavg();
const shapes = [];
for (const key of opt.shapes.split(',')) {
  if (!SHAPES[key]) throw new Error(`unknown shape ${key} (${Object.keys(SHAPES).join(', ')})`);
  shapes.push(await benchShape(key));
}
rmSync(tmp, { recursive: true, force: true });
const result = {
  generated: new Date().toISOString(),
  machine: {
    ...machineInfo(),
    loadavg_before: loadBefore,
    loadavg_after: os.loadavg(),
  },
  rounds: ROUNDS,
  chunk_seconds: CHUNK_S,
  node: process.version,
  shapes,
};
await writeFile(opt.out, JSON.stringify(result, null, 1) + '\n');
log(`wrote ${opt.out}`);
