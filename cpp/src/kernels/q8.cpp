// 8-bit weights (WeightStorage::q8): the quantization, the packed layout and its matrix product,
// defined in kernels.hpp ("8-bit weights"); the reference is ref::matmul_q8_forward (reference.hpp).
//
// The product's register tile multiplies int8 weights by 7-bit input codes four (or two) at a time
// into int32 accumulators, on whatever the target has:
//   wasm with relaxed SIMD:  i16x8.relaxed_dot_i8x16_i7x16_s, then i32x4.dot_i16x8_s with ones (the
//                            pairs' sums) and an add (V8 on x64: pmaddubsw, pmaddwd, paddd). Not the fused
//                            i32x4.relaxed_dot_i8x16_i7x16_add_s: Node 20's V8 (11.3, where the wasm
//                            test suite runs) returns twice the dot product without the addend for it;
//                            Chromium 156 computes both correctly (checked on this machine). On CPUs
//                            without AVX-VNNI, this one among them, V8 lowers both to the same three
//                            instructions; with AVX-VNNI the fused one is a single vpdpbusd.
//                            clang 14 has no builtin for it: the code says __builtin_wasm_relaxed_min_f64x2,
//                            whose pre-standard bytes scripts/codegen/wasm_relaxed_opcodes.py rewrites
//                            after linking (both take two v128 and give one).
//   wasm SIMD128:            groups of two: i16x8.load8x8_s widens the weights, i32x4.dot_i16x8_s.
//   x86 AVX-512 / AVX2 / SSSE3: vpdpbusd with AVX-512 VNNI, else pmaddubsw + pmaddwd (the codes are the
//                            unsigned operand: they never set the top bit, and |pair sum| <= 2 * 127 * 127
//                            never saturates 16 bits).
//   anything else, and the build without SIMD: the same sums in a plain loop over the packed layout.
// Every path sums the same integers exactly, so they all give the same int32 sums; the float epilogue
// is three roundings in a fixed order.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "kernels.hpp"
#include "parallel.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD && defined(__EMSCRIPTEN__)
#include <wasm_simd128.h>
#define HEADSCOPE_Q8_TILE 1
#elif HEADSCOPE_SIMD && (defined(__AVX512BW__) || defined(__AVX2__) || defined(__SSSE3__))
#include <immintrin.h>
#define HEADSCOPE_Q8_TILE 1
#else
#define HEADSCOPE_Q8_TILE 0
#endif

namespace headscope::kernels {

namespace {

#if HEADSCOPE_Q8_TILE
using simd::kLanes;
using simd::kPanel;
constexpr int kQ8Panel = kPanel;  // columns per panel: two vectors of int32 accumulators

#if defined(__EMSCRIPTEN__)
static_assert(kLanes == 4, "wasm: xsimd's sse4.1 batch is SIMD128");
#if HEADSCOPE_RELAXED_SIMD
constexpr int kGroup = 4;
#else
constexpr int kGroup = 2;
#endif
struct Ops {
  using v = v128_t;
  static v zero() noexcept { return wasm_i32x4_splat(0); }
  // kLanes columns' weights of one group
  static v weights(const int8_t* p) noexcept {
    if constexpr (kGroup == 4)
      return wasm_v128_load(p);
    else
      return wasm_i16x8_load8x8(p);  // widened to 16 bits
  }
  // one row's codes of one group, in every lane
  static v codes(const uint8_t* p) noexcept {
    if constexpr (kGroup == 4)
      return wasm_v128_load32_splat(p);
    else
      return wasm_u16x8_extend_low_u8x16(wasm_v128_load16_splat(p));
  }
  static v dot_add(v acc, v w, v x) noexcept {
#if HEADSCOPE_RELAXED_SIMD
    typedef double v2d __attribute__((vector_size(16)));
    // i16x8.relaxed_dot_i8x16_i7x16_s(w, x) once rewritten (see the top of this file)
    const v pairs = (v)__builtin_wasm_relaxed_min_f64x2((v2d)w, (v2d)x);
    // the pairs' sums by a dot product with ones: the same integers as i32x4.extadd_pairwise_i16x8_s,
    // which V8 lowers to pmaddwd from a constant in memory whose address it loads for every use (perf
    // annotate: a mov and a memory operand per dot product); this way 1.09x the GOP/s here
    return wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(pairs, wasm_i16x8_splat(1)));
#else
    return wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(w, x));
#endif
  }
  static void store(int32_t* p, v a) noexcept { wasm_v128_store(p, a); }
};
#else  // x86
constexpr int kGroup = 4;
struct Ops {
#if defined(__AVX512BW__)
  static_assert(kLanes == 16, "xsimd's batch is expected to be AVX-512 here");
  using v = __m512i;
  static v zero() noexcept { return _mm512_setzero_si512(); }
  static v weights(const int8_t* p) noexcept { return _mm512_loadu_si512(p); }
  static v codes(const uint8_t* p) noexcept {
    int32_t four;
    std::memcpy(&four, p, 4);
    return _mm512_set1_epi32(four);
  }
  static v dot_add(v acc, v w, v x) noexcept {
#if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(acc, x, w);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(x, w), _mm512_set1_epi16(1)));
#endif
  }
  static void store(int32_t* p, v a) noexcept { _mm512_storeu_si512(p, a); }
#elif defined(__AVX2__)
  static_assert(kLanes == 8, "xsimd's batch is expected to be AVX2 here");
  using v = __m256i;
  static v zero() noexcept { return _mm256_setzero_si256(); }
  static v weights(const int8_t* p) noexcept { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static v codes(const uint8_t* p) noexcept {
    int32_t four;
    std::memcpy(&four, p, 4);
    return _mm256_set1_epi32(four);
  }
  static v dot_add(v acc, v w, v x) noexcept {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), _mm256_set1_epi16(1)));
  }
  static void store(int32_t* p, v a) noexcept { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), a); }
#else
  static_assert(kLanes == 4, "xsimd's batch is expected to be SSE here");
  using v = __m128i;
  static v zero() noexcept { return _mm_setzero_si128(); }
  static v weights(const int8_t* p) noexcept { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static v codes(const uint8_t* p) noexcept {
    int32_t four;
    std::memcpy(&four, p, 4);
    return _mm_set1_epi32(four);
  }
  static v dot_add(v acc, v w, v x) noexcept {
    return _mm_add_epi32(acc, _mm_madd_epi16(_mm_maddubs_epi16(x, w), _mm_set1_epi16(1)));
  }
  static void store(int32_t* p, v a) noexcept { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), a); }
#endif
};
#endif  // x86

// Rows per register tile: 2 * ROWS accumulators, two weight vectors and a code vector (the x86
// lowering without VNNI needs a temporary and the constant of ones too) within V8's 15 registers
constexpr int kQ8TileRows = 4;
#else
constexpr int kQ8Panel = 8;
constexpr int kGroup = 4;
#endif  // HEADSCOPE_Q8_TILE

int groups_of(int K) { return (K + kGroup - 1) / kGroup; }

// out row (n_valid columns) from the int32 sums of one panel's columns: the definition's epilogue.
// One non-inline function for every tile height, so every row's floats come from the same code.
[[gnu::noinline]] void epilogue(float* out, const int32_t* sums, float row_scale, const float* scales,
                                const int32_t* zero_sums, const float* bias, int n_valid) noexcept {
  for (int c = 0; c < n_valid; c++) {
    float y = (float)(sums[c] - zero_sums[c]) * scales[c];
    y = y * row_scale;
    out[c] = bias ? y + bias[c] : y;
  }
}

#if HEADSCOPE_Q8_TILE
// out (ROWS, n_valid) of one panel: codes (ROWS rows, row stride code_stride), the panel's groups
template <int ROWS>
void q8_tile(float* out, int out_stride, const uint8_t* codes, int code_stride, const float* row_scales,
             const int8_t* panel, int groups, const float* scales, const int32_t* zero_sums, const float* bias,
             int n_valid) noexcept {
  typename Ops::v acc0[ROWS], acc1[ROWS];
  for (int r = 0; r < ROWS; r++) acc0[r] = acc1[r] = Ops::zero();
  const uint8_t* x[ROWS];
  for (int r = 0; r < ROWS; r++) x[r] = codes + (std::size_t)r * code_stride;
  const int8_t* w = panel;
  for (int g = 0; g < groups; g++, w += kQ8Panel * kGroup) {
    const typename Ops::v w0 = Ops::weights(w), w1 = Ops::weights(w + kLanes * kGroup);
    for (int r = 0; r < ROWS; r++) {
      const typename Ops::v xv = Ops::codes(x[r] + g * kGroup);
      acc0[r] = Ops::dot_add(acc0[r], w0, xv);
      acc1[r] = Ops::dot_add(acc1[r], w1, xv);
    }
  }
  for (int r = 0; r < ROWS; r++) {
    alignas(64) int32_t sums[kQ8Panel];
    Ops::store(sums, acc0[r]);
    Ops::store(sums + kLanes, acc1[r]);
    epilogue(out + (std::size_t)r * out_stride, sums, row_scales[r], scales, zero_sums, bias, n_valid);
  }
}
// One row against kQ8RowPanels panels at once: the one-token update's products. q8_tile<1> has two
// accumulators, each waiting on the last dot product's latency (as the float tile did: gemm_tile.hpp,
// packed_row_panels); here eight. The int32 sums are exact in any order and each panel's floats come
// from the same epilogue, so the same bits. Panel j starts at panel + j * panel_bytes; all its
// columns are valid.
constexpr int kQ8RowPanels = 4;
void q8_row_panels(float* out, const uint8_t* codes, float row_scale, const int8_t* panel, std::size_t panel_bytes,
                   int groups, const float* scales, const int32_t* zero_sums, const float* bias) noexcept {
  typename Ops::v acc0[kQ8RowPanels], acc1[kQ8RowPanels];
  for (int j = 0; j < kQ8RowPanels; j++) acc0[j] = acc1[j] = Ops::zero();
  for (int g = 0; g < groups; g++) {
    const typename Ops::v xv = Ops::codes(codes + g * kGroup);
    for (int j = 0; j < kQ8RowPanels; j++) {
      const int8_t* w = panel + j * panel_bytes + (std::size_t)g * kQ8Panel * kGroup;
      acc0[j] = Ops::dot_add(acc0[j], Ops::weights(w), xv);
      acc1[j] = Ops::dot_add(acc1[j], Ops::weights(w + kLanes * kGroup), xv);
    }
  }
  for (int j = 0; j < kQ8RowPanels; j++) {
    alignas(64) int32_t sums[kQ8Panel];
    Ops::store(sums, acc0[j]);
    Ops::store(sums + kLanes, acc1[j]);
    const int n0 = j * kQ8Panel;
    epilogue(out + n0, sums, row_scale, scales + n0, zero_sums + n0, bias ? bias + n0 : nullptr, kQ8Panel);
  }
}

using Q8TileFn = void (*)(float*, int, const uint8_t*, int, const float*, const int8_t*, int, const float*,
                          const int32_t*, const float*, int) noexcept;
template <std::size_t... R>
constexpr std::array<Q8TileFn, sizeof...(R)> q8_tiles(std::index_sequence<R...>) {
  return {&q8_tile<(int)R + 1>...};
}
constexpr auto kQ8Tiles = q8_tiles(std::make_index_sequence<kQ8TileRows>{});
#endif

}  // namespace

int q8_group() { return kGroup; }
int q8_code_stride(int K) { return groups_of(K) * kGroup; }

PackedLinear pack_linear_q8(const float* weight, const float* bias, int K, int N) {
  PackedLinear W;
  W.K = K;
  W.N = N;
  W.panel_width = kQ8Panel;
  W.q8_group = kGroup;
  const int panels = (N + kQ8Panel - 1) / kQ8Panel, groups = groups_of(K);
  const std::size_t padded = (std::size_t)panels * kQ8Panel;
  W.panels_q8.assign(padded * groups * kGroup, 0);
  W.q8_scales.assign(padded, 0.0f);
  W.q8_zero_sums.assign(padded, 0);
  for (int n = 0; n < N; n++) {
    float m = 0.0f;
    for (int k = 0; k < K; k++) m = std::max(m, std::fabs(weight[(std::size_t)k * N + n]));
    if (m == 0.0f) continue;  // an all-zero column: scale 0, weights 0
    const float inv = 127.0f / m;
    W.q8_scales[n] = m / 127.0f;
    const int p = n / kQ8Panel, c = n % kQ8Panel;
    int32_t sum = 0;
    for (int k = 0; k < K; k++) {
      const float q = std::clamp(std::nearbyint(weight[(std::size_t)k * N + n] * inv), -127.0f, 127.0f);
      W.panels_q8[(((std::size_t)p * groups + k / kGroup) * kQ8Panel + c) * kGroup + k % kGroup] = (int8_t)q;
      sum += (int32_t)q;
    }
    W.q8_zero_sums[n] = 64 * sum;
  }
  if (bias) {
    W.bias.assign(padded, 0.0f);
    std::copy(bias, bias + N, W.bias.begin());
  }
  return W;
}

void unpack_linear_q8(int8_t* q, float* scales, const PackedLinear& W) {
  const int G = W.q8_group, P = W.panel_width, groups = (W.K + G - 1) / G;
  for (int k = 0; k < W.K; k++)
    for (int n = 0; n < W.N; n++)
      q[(std::size_t)k * W.N + n] = W.panels_q8[(((std::size_t)(n / P) * groups + k / G) * P + n % P) * G + k % G];
  std::copy(W.q8_scales.begin(), W.q8_scales.begin() + W.N, scales);
}

void q8_quantize_rows(uint8_t* codes, float* scales, const float* x, std::size_t x_stride, int T, int K) noexcept {
  const int stride = q8_code_stride(K);
  for (int t = 0; t < T; t++) {
    const float* row = x + (std::size_t)t * x_stride;
    uint8_t* out = codes + (std::size_t)t * stride;
    float m = 0.0f;
    bool finite = true;
    for (int k = 0; k < K; k++) {
      finite = finite && std::isfinite(row[k]);
      m = std::max(m, std::fabs(row[k]));
    }
    std::fill(out, out + stride, (uint8_t)64);
    if (!finite) {
      scales[t] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    scales[t] = m / 63.0f;
    if (m == 0.0f) continue;
    const float inv = 63.0f / m;
    for (int k = 0; k < K; k++) out[k] = (uint8_t)(64 + (int)std::clamp(std::nearbyint(row[k] * inv), -63.0f, 63.0f));
  }
}

void matmul_q8_forward(float* out, const float* inp, const PackedLinear& W, int T) noexcept {
  const int K = W.K, N = W.N, stride = q8_code_stride(K), groups = groups_of(K);
  const int panels = (N + kQ8Panel - 1) / kQ8Panel;
  // the inputs' codes, quantized once, the rows split over the threads (each row's codes and scale
  // are its own: the same bytes on any count). On one thread this was a serial part of every product:
  // at T = 1,024 on GPT-2 small's shape q8 gained 1.31x from a second thread where float32 gained 1.96x.
  static thread_local std::vector<uint8_t> codes;
  static thread_local std::vector<float> row_scales;
  codes.resize((std::size_t)T * stride);
  row_scales.resize(T);
  uint8_t* const codes_out = codes.data();  // the calling thread's buffers (a worker's thread_local is its own)
  float* const scales_out = row_scales.data();
  parallel_for(T, 4.0 * T * K, [&](int t0, int t1) {
    q8_quantize_rows(codes_out + (std::size_t)t0 * stride, scales_out + t0, inp + (std::size_t)t0 * K, K, t1 - t0, K);
  });
  const uint8_t* cx = codes.data();
  const float* sx = row_scales.data();
  const float* bias = W.bias.empty() ? nullptr : W.bias.data();
  const std::size_t panel_bytes = (std::size_t)groups * kGroup * kQ8Panel;
  // threads take whole panels (parallel.hpp), so each output is computed as on one thread; ranges of
  // kQ8RowPanels panels, which the one-row loop takes at a time
  const auto panel_range = [&](int p_begin, int p_end) {
#if HEADSCOPE_Q8_TILE
    // panels in groups whose weights (256 KB) stay in L2 while every row tile passes over them
    const int group_panels = std::max<int>(1, (int)(256 * 1024 / panel_bytes));
    for (int g0 = p_begin; g0 < p_end; g0 += group_panels) {
      const int g1 = std::min(p_end, g0 + group_panels);
      const auto row_tile = [&](auto tile, int t) {
        for (int p = g0; p < g1; p++) {
          const int n0 = p * kQ8Panel;
          tile(out + (std::size_t)t * N + n0, N, cx + (std::size_t)t * stride, stride, sx + t,
               W.panels_q8.data() + p * panel_bytes, groups, W.q8_scales.data() + n0, W.q8_zero_sums.data() + n0,
               bias ? bias + n0 : nullptr, std::min(kQ8Panel, N - n0));
        }
      };
      // a last single row (the one-token update's whole product) takes kQ8RowPanels whole panels at a time
      const auto one_row = [&](int t) {
        int p = g0;
        for (; p + kQ8RowPanels <= g1 && (p + kQ8RowPanels) * kQ8Panel <= N; p += kQ8RowPanels) {
          const int n0 = p * kQ8Panel;
          q8_row_panels(out + (std::size_t)t * N + n0, cx + (std::size_t)t * stride, sx[t],
                        W.panels_q8.data() + p * panel_bytes, panel_bytes, groups, W.q8_scales.data() + n0,
                        W.q8_zero_sums.data() + n0, bias ? bias + n0 : nullptr);
        }
        for (; p < g1; p++) {
          const int n0 = p * kQ8Panel;
          q8_tile<1>(out + (std::size_t)t * N + n0, N, cx + (std::size_t)t * stride, stride, sx + t,
                     W.panels_q8.data() + p * panel_bytes, groups, W.q8_scales.data() + n0, W.q8_zero_sums.data() + n0,
                     bias ? bias + n0 : nullptr, std::min(kQ8Panel, N - n0));
        }
      };
      int t = 0;
      for (; t + kQ8TileRows <= T; t += kQ8TileRows) row_tile(q8_tile<kQ8TileRows>, t);
      if (T - t == 1)
        one_row(t);
      else if (t < T)
        row_tile(kQ8Tiles[T - t - 1], t);
    }
#else
    int32_t sums[kQ8Panel];
    for (int p = p_begin; p < p_end; p++) {
      const int n0 = p * kQ8Panel;
      const int8_t* panel = W.panels_q8.data() + p * panel_bytes;
      for (int t = 0; t < T; t++) {
        const uint8_t* x = cx + (std::size_t)t * stride;
        for (int c = 0; c < kQ8Panel; c++) {
          int32_t s = 0;
          for (int g = 0; g < groups; g++)
            for (int j = 0; j < kGroup; j++)
              s += panel[((std::size_t)g * kQ8Panel + c) * kGroup + j] * (int32_t)x[g * kGroup + j];
          sums[c] = s;
        }
        epilogue(out + (std::size_t)t * N + n0, sums, sx[t], W.q8_scales.data() + n0, W.q8_zero_sums.data() + n0,
                 bias ? bias + n0 : nullptr, std::min(kQ8Panel, N - n0));
      }
    }
#endif
  };
#if HEADSCOPE_Q8_TILE
  parallel_for(panels, (double)T * K * N / 4, panel_range, kQ8RowPanels);
#else
  parallel_for(panels, (double)T * K * N / 4, panel_range);
#endif
}

void q8_dequantize_panel_row(float* dst, const PackedLinear& W, int p, int k) noexcept {
  const int G = W.q8_group, P = W.panel_width, groups = (W.K + G - 1) / G, n0 = p * P;
  const int8_t* q = &W.panels_q8[(((std::size_t)p * groups + k / G) * P) * G + k % G];
  const float* scale = &W.q8_scales[n0];
  for (int j = 0; j < std::min(P, W.N - n0); j++) dst[j] = (float)q[(std::size_t)j * G] * scale[j];
}

void matmul_q8_rows_forward(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin, int k_end,
                            int T) noexcept {
  // rows [k_begin, k_end) of the weight dequantized (q * s) and packed as a float32 layer, per thread.
  // Model::run takes W_O head by head, so a typed token does this for every layer's whole W_O: the
  // weights are read panel by panel, in their own order, straight into the float32 panels when those
  // are as wide (the SIMD builds), else into the Conv1D layout and packed (the same numbers either way).
  static thread_local std::vector<float> weight;
  static thread_local PackedLinear slice;
  const int depth = k_end - k_begin, N = W.N, P = W.panel_width;
  const int panels = (N + P - 1) / P;
  const bool direct = linear_panel_width() == P;
  if (direct) {
    slice.K = depth;
    slice.N = N;
    slice.panel_width = P;
    slice.panels_f16.clear();
    slice.bias.clear();
    slice.panels.assign((std::size_t)panels * depth * P, 0.0f);  // zero past N, as pack_linear_into pads
  } else {
    weight.resize((std::size_t)depth * N);
  }
  for (int p = 0; p < panels; p++)
    for (int k = k_begin; k < k_end; k++)
      q8_dequantize_panel_row(direct ? &slice.panels[((std::size_t)p * depth + (k - k_begin)) * P]
                                     : &weight[(std::size_t)(k - k_begin) * N + p * P],
                              W, p, k);
  if (!direct) pack_linear_into(slice, weight.data(), nullptr, depth, N);
  matmul_rows_forward(out, inp + k_begin, inp_stride, slice, 0, depth, T);
}

}  // namespace headscope::kernels
