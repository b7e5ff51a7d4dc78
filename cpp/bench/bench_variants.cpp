// Candidate kernel variants, timed side by side with the engine's kernels (bench/variants.mjs) before
// any change is proposed for cpp/src. wasm only (raw SIMD128 intrinsics); natively a no-op.
#include "bench_variants.hpp"

#ifdef __EMSCRIPTEN__
#include <emscripten/bind.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "bench_common.hpp"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace headscope::bench {
namespace {

#if defined(__wasm_simd128__)
// Machine calibration: 8 independent f32x4 multiply-add chains (16 ops per step, no memory traffic).
float peak_probe(int iters) {
  v128_t a0 = wasm_f32x4_splat(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  const v128_t x = wasm_f32x4_splat(0.999999f), y = wasm_f32x4_splat(1e-7f);
  for (int i = 0; i < iters; i++) {
    a0 = wasm_f32x4_add(wasm_f32x4_mul(a0, x), y);
    a1 = wasm_f32x4_add(wasm_f32x4_mul(a1, x), y);
    a2 = wasm_f32x4_add(wasm_f32x4_mul(a2, x), y);
    a3 = wasm_f32x4_add(wasm_f32x4_mul(a3, x), y);
    a4 = wasm_f32x4_add(wasm_f32x4_mul(a4, x), y);
    a5 = wasm_f32x4_add(wasm_f32x4_mul(a5, x), y);
    a6 = wasm_f32x4_add(wasm_f32x4_mul(a6, x), y);
    a7 = wasm_f32x4_add(wasm_f32x4_mul(a7, x), y);
  }
  const v128_t s = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3)),
                                  wasm_f32x4_add(wasm_f32x4_add(a4, a5), wasm_f32x4_add(a6, a7)));
  return wasm_f32x4_extract_lane(s, 0);
}

// Throughput calibration: 6 independent multiply chains and 6 independent add chains (12 f32x4 ops
// per step, latency hidden), i.e. the most separate mul + add SIMD128 can retire here.
float peak_probe_throughput(int iters) {
  v128_t m0 = wasm_f32x4_splat(1.0f), m1 = m0, m2 = m0, m3 = m0, m4 = m0, m5 = m0;
  v128_t s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0;
  const v128_t x = wasm_f32x4_splat(0.9999999f), y = wasm_f32x4_splat(1e-7f);
  for (int i = 0; i < iters; i++) {
    m0 = wasm_f32x4_mul(m0, x);
    s0 = wasm_f32x4_add(s0, y);
    m1 = wasm_f32x4_mul(m1, x);
    s1 = wasm_f32x4_add(s1, y);
    m2 = wasm_f32x4_mul(m2, x);
    s2 = wasm_f32x4_add(s2, y);
    m3 = wasm_f32x4_mul(m3, x);
    s3 = wasm_f32x4_add(s3, y);
    m4 = wasm_f32x4_mul(m4, x);
    s4 = wasm_f32x4_add(s4, y);
    m5 = wasm_f32x4_mul(m5, x);
    s5 = wasm_f32x4_add(s5, y);
  }
  const v128_t s = wasm_f32x4_add(
      wasm_f32x4_add(wasm_f32x4_add(m0, m1), wasm_f32x4_add(m2, m3)),
      wasm_f32x4_add(
          wasm_f32x4_add(m4, m5),
          wasm_f32x4_add(wasm_f32x4_add(s0, s1), wasm_f32x4_add(wasm_f32x4_add(s2, s3), wasm_f32x4_add(s4, s5)))));
  return wasm_f32x4_extract_lane(s, 0);
}

// Hand-written 4x8 register tile over the engine's packed panels (PackedLinear, 8-wide), raw SIMD128.
// Differences from kernels_simd.cpp gemm_tile<4>: four row pointers advanced with k instead of
// r*inp_stride+k indexing; accumulators as named locals.
static inline void tile4x8(float* out, int out_stride, const float* inp, int inp_stride, const float* panel, int K,
                           const float* bias, int n_valid) {
  v128_t b0 = bias ? wasm_v128_load(bias) : wasm_f32x4_splat(0.0f);
  v128_t b1 = bias ? wasm_v128_load(bias + 4) : wasm_f32x4_splat(0.0f);
  v128_t c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1, c30 = b0, c31 = b1;
  const float* a0 = inp;
  const float* a1 = inp + inp_stride;
  const float* a2 = inp + 2 * inp_stride;
  const float* a3 = inp + 3 * inp_stride;
  const float* w = panel;
  for (int k = 0; k < K; k++, w += 8) {
    const v128_t w0 = wasm_v128_load(w), w1 = wasm_v128_load(w + 4);
    v128_t x = wasm_f32x4_splat(a0[k]);
    c00 = wasm_f32x4_add(c00, wasm_f32x4_mul(x, w0));
    c01 = wasm_f32x4_add(c01, wasm_f32x4_mul(x, w1));
    x = wasm_f32x4_splat(a1[k]);
    c10 = wasm_f32x4_add(c10, wasm_f32x4_mul(x, w0));
    c11 = wasm_f32x4_add(c11, wasm_f32x4_mul(x, w1));
    x = wasm_f32x4_splat(a2[k]);
    c20 = wasm_f32x4_add(c20, wasm_f32x4_mul(x, w0));
    c21 = wasm_f32x4_add(c21, wasm_f32x4_mul(x, w1));
    x = wasm_f32x4_splat(a3[k]);
    c30 = wasm_f32x4_add(c30, wasm_f32x4_mul(x, w0));
    c31 = wasm_f32x4_add(c31, wasm_f32x4_mul(x, w1));
  }
  if (n_valid == 8) {
    wasm_v128_store(out, c00), wasm_v128_store(out + 4, c01);
    wasm_v128_store(out + out_stride, c10), wasm_v128_store(out + out_stride + 4, c11);
    wasm_v128_store(out + 2 * out_stride, c20), wasm_v128_store(out + 2 * out_stride + 4, c21);
    wasm_v128_store(out + 3 * out_stride, c30), wasm_v128_store(out + 3 * out_stride + 4, c31);
  } else {
    alignas(16) float tmp[4][8];
    wasm_v128_store(tmp[0], c00), wasm_v128_store(tmp[0] + 4, c01);
    wasm_v128_store(tmp[1], c10), wasm_v128_store(tmp[1] + 4, c11);
    wasm_v128_store(tmp[2], c20), wasm_v128_store(tmp[2] + 4, c21);
    wasm_v128_store(tmp[3], c30), wasm_v128_store(tmp[3] + 4, c31);
    for (int r = 0; r < 4; r++) std::memcpy(out + r * out_stride, tmp[r], sizeof(float) * n_valid);
  }
}

struct Gemm4x8 {
  GemmCase g;
  Gemm4x8(int K, int N, int max_M) : g(K, N, max_M) {}
  // M must be a multiple of 4 here (the benchmark shapes are)
  void run(int M) {
    const int K = g.K, N = g.N, panels = (N + 7) / 8;
    for (int p = 0; p < panels; p++) {
      const float* panel = g.W.panels.data() + (std::size_t)p * K * 8;
      const int n0 = p * 8;
      for (int t = 0; t + 4 <= M; t += 4)
        tile4x8(g.out.data() + (std::size_t)t * N + n0, N, g.inp.data() + (std::size_t)t * K, K, panel, K,
                g.W.bias.data() + n0, std::min(8, N - n0));
    }
  }
  emscripten::val output(int M) {
    return emscripten::val::global("Float32Array")
        .new_(emscripten::typed_memory_view((std::size_t)M * g.N, g.out.data()));
  }
  void run_engine(int M) { g.run(M); }
};
#endif

}  // namespace

void register_variants() {
  using namespace emscripten;
#if defined(__wasm_simd128__)
  function("peakProbe", &peak_probe);
  function("peakProbeThroughput", &peak_probe_throughput);
  class_<Gemm4x8>("Gemm4x8")
      .constructor<int, int, int>()
      .function("run", &Gemm4x8::run)
      .function("runEngine", &Gemm4x8::run_engine)
      .function("output", &Gemm4x8::output);
#endif
}

}  // namespace headscope::bench

#else
namespace headscope::bench {
void register_variants() {}
}  // namespace headscope::bench
#endif
