// Candidate kernel variants, timed side by side with the engine's kernels (bench/variants.mjs) before
// any change is proposed for cpp/src. wasm only (raw SIMD128 intrinsics); natively a no-op.
#include "bench_variants.hpp"

#ifdef __EMSCRIPTEN__
#include <emscripten/bind.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
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
// The calibration's reference tile since before the engine's gemm::packed_tile, which now has its row
// pointers too: raw intrinsics, accumulators as named locals, the whole depth in one call and the
// old loop order (every row tile under one panel), so it stays comparable across runs.
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

// ---- register-tile sweep (issue: a GEMM at the ceiling) --------------------------------------------
// R x 8 tiles over the engine's 8-wide packed panels, with the engine's cache blocking (depth slices of
// 256, row blocks of whole tiles up to 128 rows), so that only the tile differs. Every output is one
// multiply-add chain over k in increasing order, as in the engine. How A's element reaches a vector:
//   Splat::scalar     f32 load then f32x4.splat (what the engine's xsimd tile compiled to)
//   Splat::load       v128.load32_splat: a load that broadcasts (XNNPACK's *_loadsplat)
//   Splat::shuffle    one v128 load of 4 consecutive k per row, then a lane shuffle per k (XNNPACK's *_splat)
// The multiply-add is f32x4.relaxed_madd in a relaxed build, else a multiply and an add.
enum class Splat { scalar, load, shuffle };

static inline v128_t madd4(v128_t a, v128_t b, v128_t c) {
#if HEADSCOPE_RELAXED_SIMD
  return (v128_t)__builtin_wasm_fma_f32x4((__f32x4)a, (__f32x4)b, (__f32x4)c);
#else
  return wasm_f32x4_add(c, wasm_f32x4_mul(a, b));
#endif
}

template <int R, Splat S>
static inline void tile_rx8(float* out, int out_stride, const float* inp, int inp_stride, const float* panel, int depth,
                            const float* bias, bool from_out, int n_valid) {
  v128_t c0[R], c1[R];
  for (int r = 0; r < R; r++) {
    if (from_out) {
      alignas(16) float tmp[8] = {};
      std::memcpy(tmp, out + r * out_stride, sizeof(float) * n_valid);
      c0[r] = wasm_v128_load(tmp), c1[r] = wasm_v128_load(tmp + 4);
    } else {
      c0[r] = bias ? wasm_v128_load(bias) : wasm_f32x4_splat(0.0f);
      c1[r] = bias ? wasm_v128_load(bias + 4) : wasm_f32x4_splat(0.0f);
    }
  }
  const float* a[R];
  for (int r = 0; r < R; r++) a[r] = inp + r * inp_stride;
  const float* w = panel;
  int k = 0;
  if constexpr (S == Splat::shuffle) {
    for (; k + 4 <= depth; k += 4, w += 32) {
      v128_t av[R];
      for (int r = 0; r < R; r++) av[r] = wasm_v128_load(a[r] + k);
#define HEADSCOPE_STEP(L)                                                            \
  {                                                                                  \
    const v128_t w0 = wasm_v128_load(w + 8 * L), w1 = wasm_v128_load(w + 8 * L + 4); \
    for (int r = 0; r < R; r++) {                                                    \
      const v128_t x = wasm_i32x4_shuffle(av[r], av[r], L, L, L, L);                 \
      c0[r] = madd4(x, w0, c0[r]);                                                   \
      c1[r] = madd4(x, w1, c1[r]);                                                   \
    }                                                                                \
  }
      HEADSCOPE_STEP(0) HEADSCOPE_STEP(1) HEADSCOPE_STEP(2) HEADSCOPE_STEP(3)
#undef HEADSCOPE_STEP
    }
  }
  for (; k < depth; k++, w += 8) {
    const v128_t w0 = wasm_v128_load(w), w1 = wasm_v128_load(w + 4);
    for (int r = 0; r < R; r++) {
      const v128_t x = S == Splat::scalar ? wasm_f32x4_splat(a[r][k]) : wasm_v128_load32_splat(a[r] + k);
      c0[r] = madd4(x, w0, c0[r]);
      c1[r] = madd4(x, w1, c1[r]);
    }
  }
  for (int r = 0; r < R; r++) {
    if (n_valid == 8) {
      wasm_v128_store(out + r * out_stride, c0[r]), wasm_v128_store(out + r * out_stride + 4, c1[r]);
    } else {
      alignas(16) float tmp[8];
      wasm_v128_store(tmp, c0[r]), wasm_v128_store(tmp + 4, c1[r]);
      std::memcpy(out + r * out_stride, tmp, sizeof(float) * n_valid);
    }
  }
}

// out (M, N) = b + inp (M, K) @ W with an R x 8 tile, in one of two loop orders inside a depth slice of
// KC (the same slicing as the engine's, so each output's chain is the same):
//   PANELS_INNER false: the engine's (gemm.cpp gemm_packed): row block (128 rows) > panel > row tile. A
//     panel's slice (KC x 8) stays in L1 while the row block's inputs (128 x KC, from L2) stream past it.
//   PANELS_INNER true: panel group > row tile > panel. One row tile's inputs (R x KC, 4-6 KB) stay in
//     L1 while a group of panels (their slices: GROUP_KB, in L2) streams past it, each panel slice
//     one contiguous run that the prefetcher follows.
template <int R, Splat S, bool PANELS_INNER, int KC, int GROUP_KB = 256>
static void gemm_rx8(float* out, const float* inp, const kernels::PackedLinear& W, int M) {
  constexpr int kRowBlock = R * (128 / R);
  constexpr int kGroupPanels = std::max(1, GROUP_KB * 1024 / (KC * 8 * 4));
  using TileFn = void (*)(float*, int, const float*, int, const float*, int, const float*, bool, int);
  static constexpr TileFn tiles[6] = {&tile_rx8<1, S>,
                                      &tile_rx8<(R > 2 ? 2 : 1), S>,
                                      &tile_rx8<(R > 3 ? 3 : 1), S>,
                                      &tile_rx8<(R > 4 ? 4 : 1), S>,
                                      &tile_rx8<(R > 5 ? 5 : 1), S>,
                                      &tile_rx8<6, S>};
  const int K = W.K, N = W.N, panels = (N + 7) / 8;
  const auto one = [&](int t, int rows, int p, int k0, int depth) {
    const float* panel = W.panels.data() + ((std::size_t)p * K + k0) * 8;
    const int n0 = p * 8, n_valid = std::min(8, N - n0);
    float* o = out + (std::size_t)t * N + n0;
    const float* x = inp + (std::size_t)t * K + k0;
    const float* b = W.bias.empty() ? nullptr : W.bias.data() + n0;
    if (rows == R)
      tile_rx8<R, S>(o, N, x, K, panel, depth, b, k0 > 0, n_valid);
    else
      tiles[rows - 1](o, N, x, K, panel, depth, b, k0 > 0, n_valid);
  };
  for (int k0 = 0; k0 < K; k0 += KC) {
    const int depth = std::min(KC, K - k0);
    if (PANELS_INNER) {
      for (int p0 = 0; p0 < panels; p0 += kGroupPanels)
        for (int t = 0; t < M; t += R)
          for (int p = p0; p < std::min(panels, p0 + kGroupPanels); p++) one(t, std::min(R, M - t), p, k0, depth);
    } else {
      for (int t0 = 0; t0 < M; t0 += kRowBlock) {
        const int t1 = std::min(M, t0 + kRowBlock);
        for (int p = 0; p < panels; p++)
          for (int t = t0; t < t1; t += R) one(t, std::min(R, t1 - t), p, k0, depth);
      }
    }
  }
}

// R rows x two panels (16 columns): each broadcast of the input serves four weight vectors, not two
// (onnxruntime-web's MLAS tile is 2 x 16). The two panels are adjacent 8-wide panels of the engine's
// layout, read through two pointers. Loop: panels inside row tiles, depth slices of 256.
template <int R>
static inline void tile_rx16(float* out, int out_stride, const float* inp, int inp_stride, const float* pa,
                             const float* pb, int depth, const float* bias, bool from_out) {
  v128_t c[R][4];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < 4; j++)
      c[r][j] = from_out ? wasm_v128_load(out + r * out_stride + 4 * j)
                : bias   ? wasm_v128_load(bias + 4 * j)
                         : wasm_f32x4_splat(0.0f);
  const float* a[R];
  for (int r = 0; r < R; r++) a[r] = inp + r * inp_stride;
  for (int k = 0; k < depth; k++, pa += 8, pb += 8) {
    const v128_t w0 = wasm_v128_load(pa), w1 = wasm_v128_load(pa + 4), w2 = wasm_v128_load(pb),
                 w3 = wasm_v128_load(pb + 4);
    for (int r = 0; r < R; r++) {
      const v128_t x = wasm_v128_load32_splat(a[r] + k);
      c[r][0] = madd4(x, w0, c[r][0]);
      c[r][1] = madd4(x, w1, c[r][1]);
      c[r][2] = madd4(x, w2, c[r][2]);
      c[r][3] = madd4(x, w3, c[r][3]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < 4; j++) wasm_v128_store(out + r * out_stride + 4 * j, c[r][j]);
}

template <int R>
static void gemm_rx16(float* out, const float* inp, const kernels::PackedLinear& W, int M) {
  constexpr int KC = 256, kGroupPanels = 256 * 1024 / (KC * 8 * 4);
  const int K = W.K, N = W.N, panels = (N + 7) / 8;
  for (int k0 = 0; k0 < K; k0 += KC) {
    const int depth = std::min(KC, K - k0);
    for (int g0 = 0; g0 < panels; g0 += kGroupPanels) {
      const int g1 = std::min(panels, g0 + kGroupPanels);
      for (int t = 0; t < M; t += R) {
        const int rows = std::min(R, M - t);
        const float* x = inp + (std::size_t)t * K + k0;
        int p = g0;
        for (; p + 2 <= g1 && (p + 2) * 8 <= N; p += 2) {
          const float* pa = W.panels.data() + ((std::size_t)p * K + k0) * 8;
          const float* b = W.bias.empty() ? nullptr : W.bias.data() + p * 8;
          float* o = out + (std::size_t)t * N + p * 8;
          if (rows == R)
            tile_rx16<R>(o, N, x, K, pa, pa + (std::size_t)K * 8, depth, b, k0 > 0);
          else
            for (int r = 0; r < rows; r++)
              tile_rx16<1>(o + (std::size_t)r * N, N, x + (std::size_t)r * K, K, pa, pa + (std::size_t)K * 8, depth, b,
                           k0 > 0);
        }
        for (; p < g1; p++) {
          const float* panel = W.panels.data() + ((std::size_t)p * K + k0) * 8;
          const float* b = W.bias.empty() ? nullptr : W.bias.data() + p * 8;
          for (int r = 0; r < rows; r++)
            tile_rx8<1, Splat::load>(out + (std::size_t)(t + r) * N + p * 8, N, x + (std::size_t)r * K, K, panel, depth,
                                     b, k0 > 0, std::min(8, N - p * 8));
        }
      }
    }
  }
}

// The sweep's candidates, by index (tileVariantNames() lists them in this order)
using GemmFn = void (*)(float*, const float*, const kernels::PackedLinear&, int);
static constexpr std::pair<const char*, GemmFn> kTileVariants[] = {
    {"4x8 scalar splat", &gemm_rx8<4, Splat::scalar, false, 256>},
    {"4x8 loadsplat", &gemm_rx8<4, Splat::load, false, 256>},
    {"4x8 shuffle splat", &gemm_rx8<4, Splat::shuffle, false, 256>},
    {"5x8 loadsplat", &gemm_rx8<5, Splat::load, false, 256>},
    {"6x8 loadsplat", &gemm_rx8<6, Splat::load, false, 256>},
    {"6x8 shuffle splat", &gemm_rx8<6, Splat::shuffle, false, 256>},
    {"4x8 loadsplat, panels inner, kc 256", &gemm_rx8<4, Splat::load, true, 256>},
    {"4x8 loadsplat, panels inner, kc 128", &gemm_rx8<4, Splat::load, true, 128>},
    {"4x8 loadsplat, panels inner, kc 512", &gemm_rx8<4, Splat::load, true, 512>},
    {"5x8 loadsplat, panels inner, kc 256", &gemm_rx8<5, Splat::load, true, 256>},
    {"6x8 loadsplat, panels inner, kc 256", &gemm_rx8<6, Splat::load, true, 256>},
    {"4x8 loadsplat, panels inner, kc 256, groups of 64 KB", &gemm_rx8<4, Splat::load, true, 256, 64>},
    {"4x8 loadsplat, panels inner, kc 256, groups of 128 KB", &gemm_rx8<4, Splat::load, true, 256, 128>},
    {"4x8 loadsplat, panels inner, kc 256, groups of 512 KB", &gemm_rx8<4, Splat::load, true, 256, 512>},
    {"2x16 loadsplat (two panels), panels inner, kc 256", &gemm_rx16<2>},
    {"3x16 loadsplat (two panels), panels inner, kc 256", &gemm_rx16<3>},
};

emscripten::val tile_variant_names() {
  emscripten::val names = emscripten::val::array();
  for (const auto& v : kTileVariants) names.call<void>("push", std::string(v.first));
  return names;
}

// Calibration of the fused multiply-add (a relaxed build): 10 independent f32x4.relaxed_madd chains,
// enough to cover its latency on two pipes (80 flops per step). In a SIMD128 build, a multiply and an add.
float peak_probe_madd(int iters) {
  v128_t a[10];
  for (auto& v : a) v = wasm_f32x4_splat(1.0f);
  const v128_t x = wasm_f32x4_splat(0.999999f), y = wasm_f32x4_splat(1e-7f);
  for (int i = 0; i < iters; i++)
    for (auto& v : a) v = madd4(v, x, y);
  v128_t s = a[0];
  for (int j = 1; j < 10; j++) s = wasm_f32x4_add(s, a[j]);
  return wasm_f32x4_extract_lane(s, 0);
}

struct GemmTiles {
  GemmCase g;
  kernels::PackedLinear q8;  // the same weights in 8 bits (kernels/q8.cpp), packed on first use
  GemmTiles(int K, int N, int max_M) : g(K, N, max_M) {}
  void run(int variant, int M) { kTileVariants[variant].second(g.out.data(), g.inp.data(), g.W, M); }
  void run_engine(int M) { g.run(M); }
  // the engine's product with 8-bit weights: the inputs quantized per row, int32 sums (not the same bits)
  void run_q8(int M) {
    if (!q8.is_q8()) {
      std::vector<float> w((std::size_t)g.K * g.N), b(g.N);
      kernels::unpack_linear(w.data(), b.data(), g.W);
      q8 = kernels::pack_linear_q8(w.data(), b.data(), g.K, g.N);
    }
    kernels::matmul_forward(g.out.data(), g.inp.data(), q8, M);
  }
  void run_previous(int M) { dev::matmul_forward_v1(g.out.data(), g.inp.data(), g.W, M); }
  emscripten::val output(int M) {
    return emscripten::val::global("Float32Array")
        .new_(emscripten::typed_memory_view((std::size_t)M * g.N, g.out.data()));
  }
};

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
  function("peakProbeMadd", &peak_probe_madd);
  function("tileVariantNames", &tile_variant_names);
  class_<GemmTiles>("GemmTiles")
      .constructor<int, int, int>()
      .function("run", &GemmTiles::run)
      .function("runEngine", &GemmTiles::run_engine)
      .function("runPrevious", &GemmTiles::run_previous)
      .function("runQ8", &GemmTiles::run_q8)
      .function("output", &GemmTiles::output);
#endif
}

}  // namespace headscope::bench

#else
namespace headscope::bench {
void register_variants() {}
}  // namespace headscope::bench
#endif
