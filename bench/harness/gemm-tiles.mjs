// The GEMM's register tile, swept: R x 8 tiles (R = 4, 5, 6) and three ways of broadcasting the input
// (cpp/bench/bench_variants.cpp, kTileVariants) against the engine's matmul_forward, side by side in one
// run, after checking that each gives the engine's bits; with the calibration probes of the same module.
// Also the engine's product with 8-bit weights ('engine q8', kernels/q8.cpp), in the same rounds.
// Usage: node [--experimental-wasm-relaxed-simd] bench/harness/gemm-tiles.mjs --simd DIR [--out FILE] [--quick]
//   --simd: a wasm build tree with headscope_bench_wasm (SIMD128 or relaxed SIMD)
// Shapes: headscope-base's linear layers (C = 160) at M = 16, 64, 128 and GPT-2 small's (C = 768) at M = 256.
import { writeFileSync } from 'node:fs';
import { benchArgs, compare, loadBenchModule, machineInfo, machineLine } from './lib.mjs';

const opt = benchArgs(
  { required: ['simd'], strings: ['out'], flags: ['quick'] },
  'node bench/harness/gemm-tiles.mjs --simd DIR [--out FILE] [--quick]',
);
const log = (...a) => console.error('[gemm-tiles]', ...a);
const m = await loadBenchModule(opt.simd);
const relaxed = m.simdInfo().relaxedMadd;
const names = m.tileVariantNames();
const out = { build: opt.simd, machine: machineInfo(), probes: {}, rows: [] };
log(`CPU: ${machineLine(out.machine)}`);

const iters = 2_000_000;
for (const [name, fn, flops] of [
  ['mul_add_chains', () => m.peakProbe(iters), 64],
  ['mul_add_throughput', () => m.peakProbeThroughput(iters), 48],
  ['madd_chains', () => m.peakProbeMadd(iters), 80],
]) {
  const s = await compare({ p: { fn } }, { minMs: 300, minRuns: 10 });
  out.probes[name] = {
    gflops_median: (iters * flops) / (s.p.median_ms * 1e6),
    gflops_best: (iters * flops) / (s.p.min_ms * 1e6),
  };
  log(
    `probe ${name}: ${out.probes[name].gflops_median.toFixed(1)} GFLOP/s (median), ${out.probes[name].gflops_best.toFixed(1)} (best)`,
  );
}

const shapes = [
  [160, 480, [16, 64, 128]],
  [160, 160, [16, 64, 128]],
  [160, 640, [16, 64, 128]],
  [640, 160, [16, 64, 128]],
  [768, 2304, [256]],
  [768, 768, [256]],
  [768, 3072, [256]],
  [3072, 768, [256]],
];
for (const [K, N, Ms] of shapes) {
  const g = new m.GemmTiles(K, N, Math.max(...Ms));
  for (const M of Ms) {
    g.runEngine(M);
    const want = g.output(M).slice();
    for (let v = -1; v < names.length; v++) {
      if (v < 0) g.runPrevious(M);
      else g.run(v, M);
      const got = g.output(M);
      for (let i = 0; i < want.length; i++)
        if (got[i] !== want[i] && !(Number.isNaN(got[i]) && Number.isNaN(want[i])))
          throw new Error(
            `${names[v] ?? 'engine v1'} differs from matmul_forward at M=${M} K=${K} N=${N}, index ${i}: ${got[i]} vs ${want[i]}`,
          );
    }
    const subjects = { engine: { fn: () => g.runEngine(M) }, 'engine v1': { fn: () => g.runPrevious(M) } };
    names.forEach((n, v) => (subjects[n] = { fn: () => g.run(v, M) }));
    // the engine with 8-bit weights (kernels/q8.cpp): other numbers by design, so after the bit checks;
    // its rate counts the same 2 M K N operations
    subjects['engine q8'] = { fn: () => g.runQ8(M) };
    const s = await compare(subjects, { minMs: opt.quick ? 60 : 200, minRuns: 20 });
    const fl = 2 * M * K * N;
    const row = { M, K, N, gflops: {}, gflops_best: {} };
    for (const n of Object.keys(subjects)) {
      row.gflops[n] = fl / (s[n].median_ms * 1e6);
      row.gflops_best[n] = fl / (s[n].min_ms * 1e6);
    }
    out.rows.push(row);
    log(
      `M=${M} K=${K} N=${N}: ` +
        Object.entries(row.gflops)
          .map(([n, v]) => `${n} ${v.toFixed(1)}`)
          .join(', '),
    );
  }
  g.delete();
}
const geo = (n) => Math.exp(out.rows.reduce((s, r) => s + Math.log(r.gflops[n]), 0) / out.rows.length);
out.geomean = Object.fromEntries(['engine', 'engine v1', 'engine q8', ...names].map((n) => [n, geo(n)]));
log(
  'geomean of medians: ' +
    Object.entries(out.geomean)
      .map(([n, v]) => `${n} ${v.toFixed(1)}`)
      .join(', '),
);
// The ceiling: SIMD128 has no fused multiply-add, and in the GEMM only the add is on an accumulator's
// chain, so its ceiling is the throughput probe (independent multiplies and adds: two of each a cycle
// on Zen); the 10-chain probe, a multiply then an add on each chain, is latency-bound there. With relaxed
// SIMD each step is one f32x4.relaxed_madd, and 10 chains of them cover its latency on two pipes.
out.relaxed_madd = relaxed;
out.ceiling = relaxed
  ? { probe: 'madd_chains', ...out.probes.madd_chains }
  : { probe: 'mul_add_throughput', ...out.probes.mul_add_throughput };
log(
  `engine over the ceiling (${out.ceiling.probe}): ${(out.geomean.engine / out.ceiling.gflops_median).toFixed(2)} by medians`,
);
if (opt.out) writeFileSync(opt.out, JSON.stringify(out, null, 1));
