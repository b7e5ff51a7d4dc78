// See kernel_versions.hpp. Compiled with the engine's flags; with HEADSCOPE_SIMD=0 every function
// forwards to the engine's kernel (the scalar build has nothing to compare).
#include "kernel_versions.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <cmath>
#include <cstring>
#include <limits>

#if HEADSCOPE_SIMD
#include <xsimd/xsimd.hpp>

#include "kernels/simd_batch.hpp"
#endif

namespace headscope::bench::dev {
namespace k = headscope::kernels;

#if HEADSCOPE_SIMD
using batch = xsimd::batch<float>;
constexpr int kLanes = static_cast<int>(batch::size);
constexpr int kPanel = 2 * kLanes;
bool available() { return true; }

static float horizontal_max(const batch& b) {
  alignas(64) float lanes[kLanes];
  b.store_aligned(lanes);
  float m = lanes[0];
  for (int i = 1; i < kLanes; i++) m = std::max(m, lanes[i]);
  return m;
}

// ---- GEMM with split-k small tiles (a candidate that was not adopted) ---------------------------
// ROWS rows x kPanel columns; U interleaved k streams, each with its own accumulators (U*ROWS*2 chains)
template <int ROWS, int U>
static inline void tile_split(float* out, int out_stride, const float* inp, int inp_stride, const float* panel,
                              int k_begin, int k_end, const float* bias, int n_valid) noexcept {
  batch acc0[U][ROWS], acc1[U][ROWS];
  for (int u = 0; u < U; u++)
    for (int r = 0; r < ROWS; r++) acc0[u][r] = acc1[u][r] = batch(0.0f);
  if (bias) {
    const batch b_lo = batch::load_unaligned(bias), b_hi = batch::load_unaligned(bias + kLanes);
    for (int r = 0; r < ROWS; r++) acc0[0][r] = b_lo, acc1[0][r] = b_hi;
  }
  const float* w = panel + (std::size_t)k_begin * kPanel;
  int kk = k_begin;
  for (; kk + U <= k_end; kk += U, w += U * kPanel) {
    for (int u = 0; u < U; u++) {
      const batch w0 = batch::load_unaligned(w + u * kPanel);
      const batch w1 = batch::load_unaligned(w + u * kPanel + kLanes);
      for (int r = 0; r < ROWS; r++) {
        const batch a(inp[(std::size_t)r * inp_stride + kk + u]);
        acc0[u][r] = xsimd::fma(a, w0, acc0[u][r]);
        acc1[u][r] = xsimd::fma(a, w1, acc1[u][r]);
      }
    }
  }
  for (; kk < k_end; kk++, w += kPanel) {
    const batch w0 = batch::load_unaligned(w), w1 = batch::load_unaligned(w + kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch a(inp[(std::size_t)r * inp_stride + kk]);
      acc0[0][r] = xsimd::fma(a, w0, acc0[0][r]);
      acc1[0][r] = xsimd::fma(a, w1, acc1[0][r]);
    }
  }
  for (int r = 0; r < ROWS; r++) {
    batch s0 = acc0[0][r], s1 = acc1[0][r];
    for (int u = 1; u < U; u++) s0 += acc0[u][r], s1 += acc1[u][r];
    float* o = out + (std::size_t)r * out_stride;
    if (n_valid == kPanel) {
      s0.store_unaligned(o);
      s1.store_unaligned(o + kLanes);
    } else {
      alignas(64) float tmp[kPanel];
      s0.store_aligned(tmp);
      s1.store_aligned(tmp + kLanes);
      std::memcpy(o, tmp, sizeof(float) * n_valid);
    }
  }
}

static void gemm_split(float* out, const float* inp, int inp_stride, const k::PackedLinear& W, int k_begin, int k_end,
                       bool with_bias, int T) noexcept {
  const int N = W.N, panels = (N + kPanel - 1) / kPanel;
  for (int p = 0; p < panels; p++) {
    const float* panel = W.panels.data() + (std::size_t)p * W.K * kPanel;
    const int n0 = p * kPanel, n_valid = std::min(kPanel, N - n0);
    const float* bias = with_bias && !W.bias.empty() ? W.bias.data() + n0 : nullptr;
    int t = 0;
    for (; t + 4 <= T; t += 4)
      tile_split<4, 1>(out + (std::size_t)t * N + n0, N, inp + (std::size_t)t * inp_stride, inp_stride, panel, k_begin,
                       k_end, bias, n_valid);
    float* o = out + (std::size_t)t * N + n0;
    const float* a = inp + (std::size_t)t * inp_stride;
    switch (T - t) {
      case 3:
        tile_split<3, 1>(o, N, a, inp_stride, panel, k_begin, k_end, bias, n_valid);
        break;
      case 2:
        tile_split<2, 2>(o, N, a, inp_stride, panel, k_begin, k_end, bias, n_valid);
        break;
      case 1:
        tile_split<1, 4>(o, N, a, inp_stride, panel, k_begin, k_end, bias, n_valid);
        break;
      default:
        break;
    }
  }
}
void matmul_forward_candidate_split_k(float* out, const float* inp, const k::PackedLinear& W, int T) noexcept {
  gemm_split(out, inp, W.K, W, 0, W.K, true, T);
}
void matmul_rows_forward_candidate_split_k(float* out, const float* inp, int inp_stride, const k::PackedLinear& W,
                                           int k_begin, int k_end, int T) noexcept {
  gemm_split(out, inp, inp_stride, W, k_begin, k_end, false, T);
}

// ---- softmax with xsimd::exp -------------------------------------------------------------------
void softmax_forward_v1(float* row, int N) noexcept {
  batch maxb(-std::numeric_limits<float>::infinity());
  int i = 0;
  for (; i + kLanes <= N; i += kLanes) maxb = xsimd::max(maxb, batch::load_unaligned(row + i));
  float maxv = horizontal_max(maxb);
  for (; i < N; i++) maxv = std::max(maxv, row[i]);
  const batch maxv_b(maxv);
  batch sumb(0.0f);
  i = 0;
  for (; i + kLanes <= N; i += kLanes) {
    const batch e = xsimd::exp(batch::load_unaligned(row + i) - maxv_b);
    e.store_unaligned(row + i);
    sumb += e;
  }
  float sum = xsimd::hadd(sumb);
  for (; i < N; i++) {
    row[i] = std::exp(row[i] - maxv);
    sum += row[i];
  }
  const float inv = 1.0f / sum;
  const batch inv_b(inv);
  i = 0;
  for (; i + kLanes <= N; i += kLanes) (batch::load_unaligned(row + i) * inv_b).store_unaligned(row + i);
  for (; i < N; i++) row[i] *= inv;
}

// ---- attention: one row at a time, one pass over the keys per head-size batch --------------------
void attention_forward_v1(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                          int att_stride) noexcept {
  const int HS = C / NH;
  const int hs_simd = HS - HS % kLanes;  // head-size columns covered by whole batches
  const float scale = 1.0f / std::sqrt((float)HS);
  const std::size_t row3 = 3 * (std::size_t)C;
  for (int h = 0; h < NH; h++) {
    for (int t = t_begin; t < T; t++) {
      const float* q = qkv + t * row3 + h * HS;
      const float* keys = qkv + C + h * HS;        // key j at keys + j * row3
      const float* values = qkv + 2 * C + h * HS;  // value j at values + j * row3
      float* a = att + ((std::size_t)h * att_stride + t) * att_stride;

      // scores: kLanes keys at a time, one accumulator per key, reduced together by haddp
      int j = 0;
      for (; j + kLanes <= t + 1; j += kLanes) {
        batch acc[kLanes];
        for (int u = 0; u < kLanes; u++) acc[u] = batch(0.0f);
        for (int d = 0; d < hs_simd; d += kLanes) {
          const batch qv = batch::load_unaligned(q + d);
          for (int u = 0; u < kLanes; u++)
            acc[u] = xsimd::fma(qv, batch::load_unaligned(keys + (j + u) * row3 + d), acc[u]);
        }
        batch scores = xsimd::haddp(acc);
        if (hs_simd < HS) {
          alignas(64) float tail[kLanes];
          for (int u = 0; u < kLanes; u++) {
            const float* k = keys + (j + u) * row3;
            float s = 0.0f;
            for (int d = hs_simd; d < HS; d++) s += q[d] * k[d];
            tail[u] = s;
          }
          scores += batch::load_aligned(tail);
        }
        (scores * batch(scale)).store_unaligned(a + j);
      }
      for (; j <= t; j++) a[j] = k::dot(q, keys + j * row3, HS) * scale;

      softmax_forward_v1(a, t + 1);
      std::fill(a + t + 1, a + att_stride, 0.0f);  // causal mask: the future gets exactly 0

      // y = sum_j a[j] v_j, a batch of head-size columns at a time
      float* y = out + (std::size_t)t * C + h * HS;
      for (int d = 0; d < hs_simd; d += kLanes) {
        batch acc(0.0f);
        for (int jj = 0; jj <= t; jj++)
          acc = xsimd::fma(batch(a[jj]), batch::load_unaligned(values + jj * row3 + d), acc);
        acc.store_unaligned(y + d);
      }
      for (int d = hs_simd; d < HS; d++) {
        float acc = 0.0f;
        for (int jj = 0; jj <= t; jj++) acc += a[jj] * values[jj * row3 + d];
        y[d] = acc;
      }
    }
  }
}

// ---- LM head with 8 weight rows per pass (a candidate that was not adopted) -------------------------
void matmul_transposed_forward_candidate_8rows(float* out, const float* inp, const float* weight, int T, int K,
                                               int N) noexcept {
  constexpr int R = 8;
  for (int t = 0; t < T; t++) {
    const float* x = inp + (std::size_t)t * K;
    float* o = out + (std::size_t)t * N;
    int n = 0;
    for (; n + R <= N; n += R) {
      const float* w = weight + (std::size_t)n * K;
      batch acc[R];
      for (int r = 0; r < R; r++) acc[r] = batch(0.0f);
      int kk = 0;
      for (; kk + kLanes <= K; kk += kLanes) {
        const batch xv = batch::load_unaligned(x + kk);
        for (int r = 0; r < R; r++) acc[r] = xsimd::fma(xv, batch::load_unaligned(w + (std::size_t)r * K + kk), acc[r]);
      }
      alignas(64) float sums[R];
      if constexpr (R % kLanes == 0) {
        for (int r0 = 0; r0 < R; r0 += kLanes) xsimd::haddp(acc + r0).store_aligned(sums + r0);
      } else {
        for (int r = 0; r < R; r++) sums[r] = xsimd::hadd(acc[r]);
      }
      for (; kk < K; kk++)
        for (int r = 0; r < R; r++) sums[r] += x[kk] * w[(std::size_t)r * K + kk];
      std::memcpy(o + n, sums, sizeof sums);
    }
    for (; n < N; n++) o[n] = k::dot(x, weight + (std::size_t)n * K, K);
  }
}

// ---- the F16 LM head's one row v1: four weight rows at a time --------------------------------------
// (The engine's dot_rows_f16 takes all eight of a group.) Same bits: each output is the same chain.
void matmul_transposed_f16_forward_v1(float* out, const float* x, const uint16_t* weight, int K, int N) noexcept {
  constexpr int R = 4;
  const int P = kPanel;
  const int whole = K - K % P;
  int n = 0;
  for (; n + R <= N; n += R) {
    simd::batch a[R];
    for (int r = 0; r < R; r++) a[r] = batch(0.0f);
    for (int k = 0; k < whole; k += P) {
      const simd::batch lo_x = batch::load_unaligned(x + k), hi_x = batch::load_unaligned(x + k + kLanes);
      for (int r = 0; r < R; r++) {
        const simd::ibatch words =
            simd::ibatch::load_unaligned(reinterpret_cast<const int32_t*>(weight + (std::size_t)(n + r) * K + k));
        simd::batch lo, hi;
        simd::f16_finite_pair_to_f32(words, lo, hi);
        a[r] = simd::madd(lo_x, lo, a[r]);
        a[r] = simd::madd(hi_x, hi, a[r]);
      }
    }
    for (int r = 0; r < R; r++) {
      alignas(64) float tail[kPanel];
      const uint16_t* wr = weight + (std::size_t)(n + r) * K;
      for (int k = whole; k < K; k++) tail[k - whole] = k::f16_to_f32_reference(wr[k]);
      int k = whole;
      for (; k + kLanes <= K; k += kLanes)
        a[r] = simd::madd(batch::load_unaligned(x + k), batch::load_aligned(tail + (k - whole)), a[r]);
      float s = xsimd::hadd(a[r]);
      for (int kk = k; kk < K; kk++) s += x[kk] * tail[kk - whole];
      out[n + r] = s;
    }
  }
  for (; n < N; n++) {
    std::vector<float> row(K);
    k::f16_unpack_forward_reference(row.data(), weight + (std::size_t)n * K, K);
    out[n] = k::dot(x, row.data(), K);
  }
}

// ---- GEMM v1: the packed GEMM until the panel-group order ----------------------------------------
// Depth slices of 256; a block of 128 input rows in L2 while each panel's slice (in L1) is read by
// every row tile; the tile indexes A as r * stride + k and broadcasts a scalar (f32x4.splat).
namespace gemm_v1 {
constexpr int kTileRows = kLanes >= 16 ? 8 : kLanes == 8 ? 6 : 4;
constexpr int kDepthBlock = 256;
constexpr int kRowBlock = kTileRows * (128 / kTileRows);
enum class Start { bias, zero, out };
template <int ROWS>
static void tile(float* out, int out_stride, const float* a, std::ptrdiff_t a_row, const float* b, int depth,
                 Start start, const float* bias, int n_valid) noexcept {
  batch acc0[ROWS], acc1[ROWS];
  for (int r = 0; r < ROWS; r++) {
    if (start == Start::out) {
      alignas(64) float tmp[kPanel] = {};
      std::memcpy(tmp, out + (std::size_t)r * out_stride, sizeof(float) * n_valid);
      acc0[r] = batch::load_aligned(tmp);
      acc1[r] = batch::load_aligned(tmp + kLanes);
    } else {
      acc0[r] = start == Start::bias ? batch::load_unaligned(bias) : batch(0.0f);
      acc1[r] = start == Start::bias ? batch::load_unaligned(bias + kLanes) : batch(0.0f);
    }
  }
  const float* w = b;
  const float* x = a;
  for (int k = 0; k < depth; k++, w += kPanel, x++) {
    const batch w0 = batch::load_unaligned(w), w1 = batch::load_unaligned(w + kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch xv(x[r * a_row]);
      acc0[r] = headscope::simd::madd(xv, w0, acc0[r]);
      acc1[r] = headscope::simd::madd(xv, w1, acc1[r]);
    }
  }
  for (int r = 0; r < ROWS; r++) {
    alignas(64) float tmp[kPanel];
    acc0[r].store_aligned(tmp);
    acc1[r].store_aligned(tmp + kLanes);
    std::memcpy(out + (std::size_t)r * out_stride, tmp, sizeof(float) * n_valid);
  }
}
template <std::size_t... R>
static constexpr auto tiles(std::index_sequence<R...>) {
  using Fn = void (*)(float*, int, const float*, std::ptrdiff_t, const float*, int, Start, const float*, int) noexcept;
  return std::array<Fn, sizeof...(R)>{&tile<(int)R + 1>...};
}
static constexpr auto kTiles = tiles(std::make_index_sequence<kTileRows>{});
}  // namespace gemm_v1

void matmul_forward_v1(float* out, const float* inp, const k::PackedLinear& W, int T) noexcept {
  using namespace gemm_v1;
  const int K = W.K, N = W.N, panels = (N + kPanel - 1) / kPanel;
  for (int k0 = 0; k0 < K; k0 += kDepthBlock) {
    const int depth = std::min(kDepthBlock, K - k0);
    const Start start = k0 > 0 ? Start::out : W.bias.empty() ? Start::zero : Start::bias;
    for (int t0 = 0; t0 < T; t0 += kRowBlock) {
      const int t1 = std::min(T, t0 + kRowBlock);
      for (int p = 0; p < panels; p++) {
        const float* panel = W.panels.data() + ((std::size_t)p * K + k0) * kPanel;
        const int n0 = p * kPanel;
        for (int t = t0; t < t1; t += kTileRows) {
          const int rows = std::min(kTileRows, t1 - t);
          kTiles[rows - 1](out + (std::size_t)t * N + n0, N, inp + (std::size_t)t * K + k0, K, panel, depth, start,
                           W.bias.empty() ? nullptr : W.bias.data() + n0, std::min(kPanel, N - n0));
        }
      }
    }
  }
}

#else
bool available() { return false; }
void matmul_forward_v1(float* out, const float* inp, const k::PackedLinear& W, int T) noexcept {
  k::matmul_forward(out, inp, W, T);
}
void matmul_forward_candidate_split_k(float* out, const float* inp, const k::PackedLinear& W, int T) noexcept {
  k::matmul_forward(out, inp, W, T);
}
void matmul_rows_forward_candidate_split_k(float* out, const float* inp, int inp_stride, const k::PackedLinear& W,
                                           int k_begin, int k_end, int T) noexcept {
  k::matmul_rows_forward(out, inp, inp_stride, W, k_begin, k_end, T);
}
void softmax_forward_v1(float* row, int N) noexcept { k::softmax_forward(row, N); }
void matmul_transposed_f16_forward_v1(float* out, const float* x, const uint16_t* weight, int K, int N) noexcept {
  std::vector<float> scratch(k::matmul_transposed_f16_scratch_floats(K));
  k::matmul_transposed_f16_forward(out, x, weight, 1, K, N, scratch.data());
}
void attention_forward_v1(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                          int att_stride) noexcept {
  k::attention_forward(out, att, qkv, t_begin, T, C, NH, att_stride, nullptr);
}
void matmul_transposed_forward_candidate_8rows(float* out, const float* inp, const float* weight, int T, int K,
                                               int N) noexcept {
  k::matmul_transposed_forward(out, inp, weight, T, K, N);
}
#endif

}  // namespace headscope::bench::dev
