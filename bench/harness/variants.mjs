// The engine's kernels against their previous versions and against candidates not adopted
// (cpp/bench/dev/kernel_versions.cpp), side by side in one process, after a correctness check, at the
// model's shapes. Also a machine calibration (peak SIMD128 multiply-add rate right now).
// Usage: node bench/harness/variants.mjs --simd DIR --model DIR [--out FILE] [--quick] [--reverse]
//   --simd: the wasm-release build tree (headscope_bench_wasm); --model: the shapes (config.json)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { benchArgs, compare, loadBenchModule, machineInfo, maxAbsDiff } from './lib.mjs';

const opt = benchArgs(
  { required: ['simd', 'model'], strings: ['out'], flags: ['quick', 'reverse'] },
  'node bench/harness/variants.mjs --simd DIR --model DIR [--out FILE] [--quick] [--reverse]',
);
const outFile = opt.out;
const quick = opt.quick;
const cfg = JSON.parse(readFileSync(path.join(opt.model, 'config.json'), 'utf8'));
const C = cfg.n_embd,
  F = cfg.n_inner ?? 4 * C,
  P = cfg.n_positions,
  NH = cfg.n_head,
  V = cfg.vocab_size;
const log = (...a) => console.error('[variants]', ...a);
const m = await loadBenchModule(opt.simd);
const out = {
  machine: machineInfo(),
  shape: { n_embd: C, n_inner: F, n_positions: P, n_head: NH, vocab_size: V },
  peak: null,
  gemm: [],
};

const iters = 2_000_000;
const pk = await compare({ peak: { fn: () => m.peakProbe(iters) } }, { minMs: 200, minRuns: 5 });
out.peak = {
  gflops_median: (iters * 64) / (pk.peak.median_ms * 1e6),
  gflops_best: (iters * 64) / (pk.peak.min_ms * 1e6),
};
const pt = await compare({ peak: { fn: () => m.peakProbeThroughput(iters) } }, { minMs: 200, minRuns: 5 });
out.peak_throughput = {
  gflops_median: (iters * 48) / (pt.peak.median_ms * 1e6),
  gflops_best: (iters * 48) / (pt.peak.min_ms * 1e6),
};
log(
  `SIMD128 separate mul + add throughput right now: ${out.peak_throughput.gflops_median.toFixed(1)} GFLOP/s (median), ${out.peak_throughput.gflops_best.toFixed(1)} (best)`,
);
// 10 independent multiply-add chains: the ceiling of a relaxed build (f32x4.relaxed_madd, enough chains
// to cover its latency on two pipes). In SIMD128 each chain is a multiply then an add, latency-bound: the
// SIMD128 GEMM's ceiling is the throughput probe above (only the add is on an accumulator's chain)
const pm = await compare({ peak: { fn: () => m.peakProbeMadd(iters) } }, { minMs: 200, minRuns: 5 });
out.peak_madd = {
  gflops_median: (iters * 80) / (pm.peak.median_ms * 1e6),
  gflops_best: (iters * 80) / (pm.peak.min_ms * 1e6),
};
log(
  `10 multiply-add chains right now: ${out.peak_madd.gflops_median.toFixed(1)} GFLOP/s (median), ${out.peak_madd.gflops_best.toFixed(1)} (best)`,
);
log(
  `SIMD128 multiply-add peak right now: ${out.peak.gflops_median.toFixed(1)} GFLOP/s (median), ${out.peak.gflops_best.toFixed(1)} (best)`,
);

for (const [K, N] of opt.reverse
  ? [
      [F, C],
      [C, F],
      [C, C],
      [C, 3 * C],
    ]
  : [
      [C, 3 * C],
      [C, C],
      [C, F],
      [F, C],
    ]) {
  const g = new m.Gemm4x8(K, N, P);
  for (const M of [16, 64, P]) {
    g.runEngine(M);
    const a = g.output(M);
    g.run(M);
    const b = g.output(M);
    const d = maxAbsDiff(a, b);
    if (d > 1e-4) throw new Error(`Gemm4x8 differs from matmul_forward by ${d}`);
    const s = await compare(
      { engine: { fn: () => g.runEngine(M) }, tile4x8: { fn: () => g.run(M) } },
      { minMs: quick ? 60 : 200, minRuns: 30 },
    );
    const fl = 2 * M * K * N;
    const row = {
      M,
      K,
      N,
      engine_gflops: fl / (s.engine.median_ms * 1e6),
      tile4x8_gflops: fl / (s.tile4x8.median_ms * 1e6),
      engine_best: fl / (s.engine.min_ms * 1e6),
      tile4x8_best: fl / (s.tile4x8.min_ms * 1e6),
    };
    out.gemm.push(row);
    log(
      `M=${M} K=${K} N=${N}: engine ${row.engine_gflops.toFixed(1)} (best ${row.engine_best.toFixed(1)}), tile4x8 ${row.tile4x8_gflops.toFixed(1)} (best ${row.tile4x8_best.toFixed(1)}) GFLOP/s`,
    );
  }
  g.delete();
}
// ---- the engine's kernels against the alternatives in cpp/bench/dev/kernel_versions.cpp ------------------
// kind "previous": the kernel before the register-tiled port (what the change bought); kind "not adopted": a
// candidate measured and left out. engine_speedup = alternative time / engine time (> 1: engine faster).
const versus = async (name, kind, engine, alternative, opts = {}) => {
  const s = await compare(
    { engine: { fn: engine }, alternative: { fn: alternative } },
    { minMs: quick ? 100 : 250, minRuns: 30, rounds: 10, ...opts },
  );
  const row = {
    name,
    kind,
    engine_ms: s.engine.median_ms,
    alternative_ms: s.alternative.median_ms,
    engine_best_ms: s.engine.min_ms,
    alternative_best_ms: s.alternative.min_ms,
    engine_speedup: s.alternative.median_ms / s.engine.median_ms,
    engine_speedup_best: s.alternative.min_ms / s.engine.min_ms,
  };
  out.alternatives.push(row);
  log(
    `${name} (${kind}): engine ${row.engine_ms.toFixed(4)} ms, alternative ${row.alternative_ms.toFixed(4)} ms: engine ${row.engine_speedup.toFixed(2)}x (best samples ${row.engine_speedup_best.toFixed(2)}x)`,
  );
};
out.alternatives = [];
if (!m.previousAvailable())
  throw new Error(`${opt.simd}: this bench module has no previous kernels (a build without HEADSCOPE_SIMD?)`);
{
  // the softmax rows of one layer (all heads, causal lengths 1..T): polynomial exp against xsimd::exp
  for (const T of [64, P]) {
    const sm = new m.Softmax(NH, T);
    sm.run();
    const s0 = sm.output();
    sm.runPrevious();
    const s1 = sm.output();
    let rel = 0;
    for (let i = 0; i < s0.length; i++) if (s1[i] > 1e-30) rel = Math.max(rel, Math.abs(s0[i] - s1[i]) / s1[i]);
    if (rel > 1e-5) throw new Error(`softmax with the polynomial exp: relative error ${rel}`);
    out.softmax_poly_max_rel_error = Math.max(out.softmax_poly_max_rel_error ?? 0, rel);
    await versus(
      `softmax rows of one layer, T=${T} (max rel. difference ${rel.toExponential(1)})`,
      'previous',
      () => sm.run(),
      () => sm.runPrevious(),
    );
    sm.delete();
  }
  // attention, full runs and the incremental update (one new row)
  const at = new m.Attention(C, NH, P);
  for (const T of [16, 64, P]) {
    at.runPrevious(T, 0);
    const o0 = at.output(T),
      p0 = at.probs();
    at.run(T, 0);
    const o1 = at.output(T),
      p1 = at.probs();
    const dOut = maxAbsDiff(o0, o1),
      dProb = maxAbsDiff(p0, p1);
    if (dOut > 1e-5 || dProb > 1e-6)
      throw new Error(`attention differs from the previous kernel at T=${T}: out ${dOut}, probs ${dProb}`);
    await versus(
      `attention T=${T} (one layer, all heads)`,
      'previous',
      () => at.run(T, 0),
      () => at.runPrevious(T, 0),
    );
  }
  // one new row: the engine appends one key to its panels (filled by the full run just before)
  at.run(P, 0);
  await versus(
    `attention, one new row at T=${P}`,
    'previous',
    () => at.run(P, P - 1),
    () => at.runPrevious(P, P - 1),
  );
  at.delete();
  // the packed GEMM before the panel-group order and packed_tile (matmul_forward_v1): the same bits
  for (const [K, N] of [
    [C, 3 * C],
    [F, C],
  ]) {
    const g = new m.GemmTiles(K, N, P);
    g.runEngine(P);
    const a = g.output(P).slice();
    g.runPrevious(P);
    if (maxAbsDiff(a, g.output(P)) !== 0) throw new Error(`matmul_forward_v1 differs at K=${K} N=${N}`);
    await versus(
      `GEMM M=${P} K=${K} N=${N}`,
      'previous',
      () => g.runEngine(P),
      () => g.runPrevious(P),
    );
    g.delete();
  }
  // not adopted: LM head with 8 weight rows per pass
  const lm = new m.LmHead(C, V);
  lm.run();
  const l0 = lm.output();
  lm.run8Rows();
  const l1 = lm.output();
  if (maxAbsDiff(l0, l1) > 1e-4) throw new Error('lm_head_8rows differs');
  await versus(
    `LM head (1 x ${C}) @ (${C} x ${V}), 8 rows per pass`,
    'not adopted',
    () => lm.run(),
    () => lm.run8Rows(),
  );
  lm.delete();
  // the F16 LM head's one row (a typed token on an F16 or BF16 checkpoint) at Llama 3's vocabulary,
  // 128,256 rows, whatever the model's: eight weight rows at a time against four (v1). The same bits.
  const V3 = 128256;
  const lm16 = new m.LmHead(C, V3, 0.02);
  lm16.runF16();
  const f0 = lm16.output();
  lm16.runF16V1();
  if (maxAbsDiff(f0, lm16.output()) !== 0) throw new Error('matmul_transposed_f16_forward_v1 differs');
  await versus(
    `LM head F16 (1 x ${C}) @ (${C} x ${V3}), 8 rows at a time`,
    'previous',
    () => lm16.runF16(),
    () => lm16.runF16V1(),
  );
  lm16.delete();
  // not adopted: split-k for the one-row GEMMs of the incremental update (and the per-head W_O)
  for (const [K, N] of [
    [C, 3 * C],
    [C, C],
    [C, F],
    [F, C],
  ]) {
    const g = new m.Gemm(K, N, P);
    for (const M of [1, 2, 3, 5]) {
      g.run(M);
      const a = g.output(M);
      g.runSplitK(M);
      const b = g.output(M);
      if (maxAbsDiff(a, b) > 1e-4) throw new Error(`matmul_split_k differs at M=${M}`);
    }
    await versus(
      `GEMM M=1 K=${K} N=${N}, split k`,
      'not adopted',
      () => g.run(1),
      () => g.runSplitK(1),
    );
    if (K === C && N === C)
      await versus(
        `W_O per head M=1 (${NH} x K=${C / NH}), split k`,
        'not adopted',
        () => g.runHeads(1, NH),
        () => g.runHeadsSplitK(1, NH),
      );
    g.delete();
  }
}
if (outFile) writeFileSync(outFile, JSON.stringify(out, null, 1));
