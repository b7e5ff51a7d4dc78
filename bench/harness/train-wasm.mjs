// The wasm side of the training-speed bench (bench/harness/train-speed.mjs): the npm package's
// createTrainer() in Node, on the page's default preset with an optional other shape. Steps are
// taken one call at a time, trainer.step(1), as the page's Worker takes them (web/lib/worker.js),
// so V8 has tiered the engine's functions up to TurboFan after the warm-up (cpp/README.md, "Toolchain notes").
// Which build runs: the package's SIMD128 build; with `node --experimental-wasm-relaxed-simd` the
// package picks its relaxed-SIMD build (the one Chromium loads).
//
// Same protocol as bench/shapes/train_torch.py: prints {"ready": true, ...} once warmed up, then for every
// line "N" on stdin runs N steps and prints {"steps": N, "seconds": s, "loss": x}; an empty line or
// EOF ends it.
//   node bench/harness/train-wasm.mjs --pkg dist '{"n_layer":2,"n_head":4,"n_embd":64,"n_positions":32,
//       "vocab_size":48,"batch_size":16,"seq_len":32}' [--warmup 20]
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: { pkg: { type: 'string', default: 'dist' }, warmup: { type: 'string', default: '20' } },
});
const shape = JSON.parse(positionals[0]);
const { createTrainer } = await import(pathToFileURL(path.resolve(opt.pkg, 'headscope.js')).href);

const trainer = await createTrainer({
  preset: 'induction',
  config: {
    nLayer: shape.n_layer,
    nHead: shape.n_head,
    nEmbd: shape.n_embd,
    nPositions: shape.n_positions,
    vocabSize: shape.vocab_size,
  },
  batchSize: shape.batch_size,
  seqLen: shape.seq_len,
});
const spec = trainer.spec;
// which build the package loaded (it falls back to SIMD128 where relaxed SIMD does not validate, or
// where its copy lacks the relaxed .wasm): the engine says, through a model of the run
const probe = trainer.model();
const relaxed = probe.info.simd.relaxedMadd;
probe.dispose();
let loss = 0;
for (let i = 0; i < Number(opt.warmup); i++) loss = trainer.step(1)[0];
console.log(
  JSON.stringify({
    ready: true,
    build: relaxed ? 'relaxed SIMD' : 'SIMD128',
    node: process.version,
    spec: { ...spec.config, batchSize: spec.batchSize, seqLen: spec.seqLen },
    bytes: trainer.bytes,
  }),
);

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) break;
  const n = Number(line);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) loss = trainer.step(1)[0];
  const seconds = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({ steps: n, seconds, loss }));
}
trainer.dispose();
process.exit(0);
