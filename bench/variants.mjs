// Candidate kernels (cpp/bench/bench_variants.cpp) against the engine's, side by side in one process,
// after a correctness check. Also a machine calibration (peak SIMD128 multiply-add rate right now).
// Usage: node bench/variants.mjs [--builds build/bench] [--out FILE] [--quick]
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, compare, loadBenchModule, maxAbsDiff } from './lib.mjs';

const args = process.argv.slice(2);
const arg = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
const B = arg('--builds', path.join(ROOT, 'build', 'bench'));
const outFile = arg('--out');
const quick = args.includes('--quick');
const C = Number(arg('--C', 160)), F = 4 * C, P = Number(arg('--P', 128));
const log = (...a) => console.error('[variants]', ...a);
const m = await loadBenchModule(path.join(B, 'wasm-simd'));
const out = { peak: null, gemm: [] };

const iters = 2_000_000;
const pk = await compare({ peak: { fn: () => m.peakProbe(iters) } }, { minMs: 200, minRuns: 5 });
out.peak = { gflops_median: (iters * 64) / (pk.peak.median_ms * 1e6), gflops_best: (iters * 64) / (pk.peak.min_ms * 1e6) };
const pt = await compare({ peak: { fn: () => m.peakProbeThroughput(iters) } }, { minMs: 200, minRuns: 5 });
out.peak_throughput = { gflops_median: (iters * 48) / (pt.peak.median_ms * 1e6), gflops_best: (iters * 48) / (pt.peak.min_ms * 1e6) };
log(`SIMD128 separate mul + add throughput right now: ${out.peak_throughput.gflops_median.toFixed(1)} GFLOP/s (median), ${out.peak_throughput.gflops_best.toFixed(1)} (best)`);
log(`SIMD128 multiply-add peak right now: ${out.peak.gflops_median.toFixed(1)} GFLOP/s (median), ${out.peak.gflops_best.toFixed(1)} (best)`);

for (const [K, N] of (args.includes("--reverse") ? [[F, C], [C, F], [C, C], [C, 3 * C]] : [[C, 3 * C], [C, C], [C, F], [F, C]])) {
  const g = new m.Gemm4x8(K, N, P);
  for (const M of [16, 64, P]) {
    g.runEngine(M); const a = g.output(M);
    g.run(M); const b = g.output(M);
    const d = maxAbsDiff(a, b);
    if (d > 1e-4) throw new Error(`Gemm4x8 differs from matmul_forward by ${d}`);
    const s = await compare({ engine: { fn: () => g.runEngine(M) }, tile4x8: { fn: () => g.run(M) } }, { minMs: quick ? 60 : 200, minRuns: 30 });
    const fl = 2 * M * K * N;
    const row = { M, K, N, engine_gflops: fl / (s.engine.median_ms * 1e6), tile4x8_gflops: fl / (s.tile4x8.median_ms * 1e6),
      engine_best: fl / (s.engine.min_ms * 1e6), tile4x8_best: fl / (s.tile4x8.min_ms * 1e6) };
    out.gemm.push(row);
    log(`M=${M} K=${K} N=${N}: engine ${row.engine_gflops.toFixed(1)} (best ${row.engine_best.toFixed(1)}), tile4x8 ${row.tile4x8_gflops.toFixed(1)} (best ${row.tile4x8_best.toFixed(1)}) GFLOP/s`);
  }
  g.delete();
}
// ---- candidate kernels (cpp/bench/kernels_candidates.cpp) against the engine's -------------------
const NH = Number(arg('--NH', 8)), V = Number(arg('--V', 5120));
const cmp = async (name, engine, cand, opts = {}) => {
  const s = await compare({ engine: { fn: engine }, candidate: { fn: cand } }, { minMs: quick ? 100 : 250, minRuns: 30, rounds: 10, ...opts });
  const row = { name, engine_ms: s.engine.median_ms, candidate_ms: s.candidate.median_ms, engine_best_ms: s.engine.min_ms,
    candidate_best_ms: s.candidate.min_ms, speedup: s.engine.median_ms / s.candidate.median_ms, speedup_best: s.engine.min_ms / s.candidate.min_ms };
  out.candidates.push(row);
  log(`${name}: engine ${row.engine_ms.toFixed(4)} ms, candidate ${row.candidate_ms.toFixed(4)} ms: ${row.speedup.toFixed(2)}x (best samples ${row.speedup_best.toFixed(2)}x)`);
};
out.candidates = [];
if (m.candidatesAvailable()) {
  // LM head, last position
  const lm = new m.LmHead(C, V);
  lm.run(); const l0 = lm.output(); lm.runCandidate(); const l1 = lm.output();
  if (maxAbsDiff(l0, l1) > 1e-4) throw new Error('lm_head_8rows differs');
  await cmp(`LM head (1 x ${C}) @ (${C} x ${V})`, () => lm.run(), () => lm.runCandidate());
  lm.delete();
  // one-row GEMMs (the incremental update) and the per-head W_O at M = 1
  for (const [K, N] of [[C, 3 * C], [C, C], [C, F], [F, C]]) {
    const g = new m.Gemm(K, N, P);
    for (const M of [1, 2, 3, 5]) {
      g.run(M); const a = g.output(M); g.runCandidate(M); const b = g.output(M);
      if (maxAbsDiff(a, b) > 1e-4) throw new Error(`matmul_split_k differs at M=${M}`);
    }
    await cmp(`GEMM M=1 K=${K} N=${N}`, () => g.run(1), () => g.runCandidate(1));
    if (K === C && N === C) await cmp(`W_O per head M=1 (${NH} x K=${C / NH})`, () => g.runHeads(1, NH), () => g.runHeadsCandidate(1, NH));
    g.delete();
  }
  // the softmax rows of one layer (all heads, causal lengths 1..T)
  for (const T of [64, P]) {
    const sm = new m.Softmax(NH, T);
    sm.run(); const s0 = sm.output(); sm.runCandidate(); const s1 = sm.output();
    let rel = 0;
    for (let i = 0; i < s0.length; i++) if (s0[i] > 1e-30) rel = Math.max(rel, Math.abs(s1[i] - s0[i]) / s0[i]);
    if (rel > 1e-5) throw new Error(`softmax_poly relative error ${rel}`);
    out.softmax_poly_max_rel_error = Math.max(out.softmax_poly_max_rel_error ?? 0, rel);
    await cmp(`softmax rows of one layer, T=${T} (poly exp; max rel. error ${rel.toExponential(1)})`, () => sm.run(), () => sm.runCandidate());
    sm.delete();
  }
  // attention, full and incremental (one new row)
  const at = new m.Attention(C, NH, P);
  for (const T of [16, 64, P]) {
    at.run(T, 0); const o0 = at.output(T), p0 = at.probs();
    at.runCandidate(T, 0); const o1 = at.output(T), p1 = at.probs();
    if (maxAbsDiff(o0, o1) > 1e-5 || maxAbsDiff(p0, p1) > 0) throw new Error(`attention_av_one_pass differs at T=${T}`);
    await cmp(`attention T=${T} (one layer, all heads)`, () => at.run(T, 0), () => at.runCandidate(T, 0));
    at.runBlocked(T, 0); const o2 = at.output(T), p2 = at.probs();
    const dOut = maxAbsDiff(o0, o2), dProb = maxAbsDiff(p0, p2);
    if (dOut > 1e-5 || dProb > 1e-6) throw new Error(`attention_blocked differs at T=${T}: out ${dOut}, probs ${dProb}`);
    await cmp(`attention blocked T=${T} (one layer, all heads)`, () => at.run(T, 0), () => at.runBlocked(T, 0));
  }
  // partial update: rows 100..127 (a paste at the end)
  at.run(P, 0); at.run(P, P - 28); const o3 = at.output(P), p3 = at.probs();
  at.runBlocked(P, 0); at.runBlocked(P, P - 28); const o4 = at.output(P), p4 = at.probs();
  if (maxAbsDiff(o3, o4) > 1e-5 || maxAbsDiff(p3, p4) > 1e-6) throw new Error('attention_blocked differs on a partial update');
  await cmp(`attention, one new row at T=${P}`, () => at.run(P, P - 1), () => at.runCandidate(P, P - 1));
  at.delete();
}
if (outFile) writeFileSync(outFile, JSON.stringify(out, null, 1));
