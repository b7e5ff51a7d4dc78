// See kernels_candidates.hpp. Compiled with the engine's flags; with HEADSCOPE_SIMD=0 every candidate
// forwards to the engine's kernel (the scalar build has nothing to compare).
#include "kernels_candidates.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if HEADSCOPE_SIMD
#include <xsimd/xsimd.hpp>
#endif

namespace headscope::bench::candidates {
namespace k = headscope::kernels;

#if HEADSCOPE_SIMD
using batch = xsimd::batch<float>;
constexpr int kLanes = static_cast<int>(batch::size);
constexpr int kPanel = 2 * kLanes;
bool available() { return true; }

// ---- LM head ---------------------------------------------------------------------------------
void lm_head_8rows(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept {
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

// ---- GEMM with split-k small tiles -------------------------------------------------------------
// ROWS rows x kPanel columns; U interleaved k streams, each with its own accumulators (U*ROWS*2 chains)
template <int ROWS, int U>
static inline void tile_split(float* out, int out_stride, const float* inp, int inp_stride, const float* panel, int k_begin,
                              int k_end, const float* bias, int n_valid) noexcept {
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
      tile_split<4, 1>(out + (std::size_t)t * N + n0, N, inp + (std::size_t)t * inp_stride, inp_stride, panel, k_begin, k_end, bias, n_valid);
    float* o = out + (std::size_t)t * N + n0;
    const float* a = inp + (std::size_t)t * inp_stride;
    switch (T - t) {
      case 3: tile_split<3, 1>(o, N, a, inp_stride, panel, k_begin, k_end, bias, n_valid); break;
      case 2: tile_split<2, 2>(o, N, a, inp_stride, panel, k_begin, k_end, bias, n_valid); break;
      case 1: tile_split<1, 4>(o, N, a, inp_stride, panel, k_begin, k_end, bias, n_valid); break;
      default: break;
    }
  }
}
void matmul_split_k(float* out, const float* inp, const k::PackedLinear& W, int T) noexcept {
  gemm_split(out, inp, W.K, W, 0, W.K, true, T);
}
void matmul_rows_split_k(float* out, const float* inp, int inp_stride, const k::PackedLinear& W, int k_begin, int k_end,
                         int T) noexcept {
  gemm_split(out, inp, inp_stride, W, k_begin, k_end, false, T);
}

// ---- attention: the engine's kernel with a one-pass weighted sum of values ----------------------
template <int NB>
static inline void weighted_values(float* y, const float* a, const float* values, std::size_t row3, int n) noexcept {
  batch acc[NB];
  for (int b = 0; b < NB; b++) acc[b] = batch(0.0f);
  for (int j = 0; j < n; j++) {
    const batch aj(a[j]);
    const float* v = values + j * row3;
    for (int b = 0; b < NB; b++) acc[b] = xsimd::fma(aj, batch::load_unaligned(v + b * kLanes), acc[b]);
  }
  for (int b = 0; b < NB; b++) acc[b].store_unaligned(y + b * kLanes);
}

template <bool POLY>
static void attention_one_pass(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                               int att_stride) noexcept;
void attention_av_one_pass(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                           int att_stride) noexcept {
  attention_one_pass<false>(out, att, qkv, t_begin, T, C, NH, att_stride);
}
void softmax_poly(float* row, int N) noexcept;
template <bool POLY>
static void attention_one_pass(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                               int att_stride) noexcept {
  const int HS = C / NH;
  const int hs_simd = HS - HS % kLanes;
  const float scale = 1.0f / std::sqrt((float)HS);
  const std::size_t row3 = 3 * (std::size_t)C;
  for (int h = 0; h < NH; h++) {
    for (int t = t_begin; t < T; t++) {
      const float* q = qkv + t * row3 + h * HS;
      const float* keys = qkv + C + h * HS;
      const float* values = qkv + 2 * C + h * HS;
      float* a = att + ((std::size_t)h * att_stride + t) * att_stride;
      // scores: unchanged from kernels_simd.cpp
      int j = 0;
      for (; j + kLanes <= t + 1; j += kLanes) {
        batch acc[kLanes];
        for (int u = 0; u < kLanes; u++) acc[u] = batch(0.0f);
        for (int d = 0; d < hs_simd; d += kLanes) {
          const batch qv = batch::load_unaligned(q + d);
          for (int u = 0; u < kLanes; u++) acc[u] = xsimd::fma(qv, batch::load_unaligned(keys + (j + u) * row3 + d), acc[u]);
        }
        batch scores = xsimd::haddp(acc);
        if (hs_simd < HS) {
          alignas(64) float tail[kLanes];
          for (int u = 0; u < kLanes; u++) {
            const float* kr = keys + (j + u) * row3;
            float s = 0.0f;
            for (int d = hs_simd; d < HS; d++) s += q[d] * kr[d];
            tail[u] = s;
          }
          scores += batch::load_aligned(tail);
        }
        (scores * batch(scale)).store_unaligned(a + j);
      }
      for (; j <= t; j++) a[j] = k::dot(q, keys + j * row3, HS) * scale;
      if constexpr (POLY) softmax_poly(a, t + 1); else k::softmax_forward(a, t + 1);
      std::fill(a + t + 1, a + att_stride, 0.0f);

      // y = sum_j a[j] v_j: up to 8 head-size batches per pass over j, each its own accumulator
      float* y = out + (std::size_t)t * C + h * HS;
      int d = 0;
      for (; d + 8 * kLanes <= hs_simd; d += 8 * kLanes) weighted_values<8>(y + d, a, values + d, row3, t + 1);
      switch ((hs_simd - d) / kLanes) {
        case 7: weighted_values<7>(y + d, a, values + d, row3, t + 1); break;
        case 6: weighted_values<6>(y + d, a, values + d, row3, t + 1); break;
        case 5: weighted_values<5>(y + d, a, values + d, row3, t + 1); break;
        case 4: weighted_values<4>(y + d, a, values + d, row3, t + 1); break;
        case 3: weighted_values<3>(y + d, a, values + d, row3, t + 1); break;
        case 2: weighted_values<2>(y + d, a, values + d, row3, t + 1); break;
        case 1: weighted_values<1>(y + d, a, values + d, row3, t + 1); break;
        default: break;
      }
      for (int dd = hs_simd; dd < HS; dd++) {
        float acc = 0.0f;
        for (int jj = 0; jj <= t; jj++) acc += a[jj] * values[jj * row3 + dd];
        y[dd] = acc;
      }
    }
  }
}

// ---- softmax with a polynomial exp ------------------------------------------------------------------
using ibatch = xsimd::batch<int32_t>;
// exp(x) for x <= 0 (clamped at -87.3: results below ~1e-38 become ~1e-38, never denormal)
static inline batch exp_nonpositive(batch x) noexcept {
  x = xsimd::max(x, batch(-87.33654f));
  // t = x log2(e) + 1.5 * 2^23: the float add rounds to the nearest integer n, kept in t's low bits
  const batch magic(12582912.0f);
  const batch t = xsimd::fma(x, batch(1.44269504088896341f), magic);
  const batch n = t - magic;
  batch r = xsimd::fnma(n, batch(0.693359375f), x);  // x - n ln2, in two parts
  r = xsimd::fnma(n, batch(-2.12194440e-4f), r);
  batch y(1.9875691500e-4f);
  y = xsimd::fma(y, r, batch(1.3981999507e-3f));
  y = xsimd::fma(y, r, batch(8.3334519073e-3f));
  y = xsimd::fma(y, r, batch(4.1665795894e-2f));
  y = xsimd::fma(y, r, batch(1.6666665459e-1f));
  y = xsimd::fma(y, r, batch(5.0000001201e-1f));
  y = xsimd::fma(y, r * r, r + batch(1.0f));
  // 2^n: n + 127 into the exponent field
  const ibatch ni = xsimd::bitwise_cast<ibatch>(t) - xsimd::bitwise_cast<ibatch>(magic);
  const batch scale = xsimd::bitwise_cast<batch>((ni + ibatch(127)) << 23);
  return y * scale;
}

void softmax_poly(float* row, int N) noexcept {
  batch maxb(-std::numeric_limits<float>::infinity());
  int i = 0;
  for (; i + kLanes <= N; i += kLanes) maxb = xsimd::max(maxb, batch::load_unaligned(row + i));
  alignas(64) float lanes[kLanes];
  maxb.store_aligned(lanes);
  float maxv = lanes[0];
  for (int l = 1; l < kLanes; l++) maxv = std::max(maxv, lanes[l]);
  for (; i < N; i++) maxv = std::max(maxv, row[i]);
  const batch maxv_b(maxv);
  batch sumb(0.0f);
  i = 0;
  for (; i + kLanes <= N; i += kLanes) {
    const batch e = exp_nonpositive(batch::load_unaligned(row + i) - maxv_b);
    e.store_unaligned(row + i);
    sumb += e;
  }
  float sum = xsimd::hadd(sumb);
  for (; i < N; i++) {
    row[i] = std::exp(row[i] - maxv);
    sum += row[i];
  }
  const batch inv_b(1.0f / sum);
  i = 0;
  for (; i + kLanes <= N; i += kLanes) (batch::load_unaligned(row + i) * inv_b).store_unaligned(row + i);
  for (; i < N; i++) row[i] *= 1.0f / sum;
}

// ---- attention, register-tiled ----------------------------------------------------------------
// scores for ROWS query rows x one panel of kPanel keys: acc over the head dimension
template <int ROWS>
static inline void score_tile(float* a_rows, int att_stride, const float* q, std::size_t row3, const float* kpanel, int HS,
                              float scale, int n_valid) noexcept {
  batch acc0[ROWS], acc1[ROWS];
  for (int r = 0; r < ROWS; r++) acc0[r] = acc1[r] = batch(0.0f);
  for (int d = 0; d < HS; d++) {
    const batch k0 = batch::load_aligned(kpanel + d * kPanel), k1 = batch::load_aligned(kpanel + d * kPanel + kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch qv(q[r * row3 + d]);
      acc0[r] = xsimd::fma(qv, k0, acc0[r]);
      acc1[r] = xsimd::fma(qv, k1, acc1[r]);
    }
  }
  const batch s(scale);
  for (int r = 0; r < ROWS; r++) {
    float* o = a_rows + (std::size_t)r * att_stride;
    if (n_valid == kPanel) {
      (acc0[r] * s).store_unaligned(o);
      (acc1[r] * s).store_unaligned(o + kLanes);
    } else {
      alignas(64) float tmp[kPanel];
      (acc0[r] * s).store_aligned(tmp);
      (acc1[r] * s).store_aligned(tmp + kLanes);
      std::memcpy(o, tmp, sizeof(float) * n_valid);
    }
  }
}

// y rows (ROWS) [d0, d0 + NB*kLanes) = sum_{j < n} a[r][j] v_j
template <int ROWS, int NB>
static inline void av_tile(float* y, int y_stride, const float* a, int att_stride, const float* values, std::size_t row3,
                           int n) noexcept {
  batch acc[ROWS][NB];
  for (int r = 0; r < ROWS; r++)
    for (int b = 0; b < NB; b++) acc[r][b] = batch(0.0f);
  for (int j = 0; j < n; j++) {
    const float* v = values + j * row3;
    batch vb[NB];
    for (int b = 0; b < NB; b++) vb[b] = batch::load_unaligned(v + b * kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch ar(a[(std::size_t)r * att_stride + j]);
      for (int b = 0; b < NB; b++) acc[r][b] = xsimd::fma(ar, vb[b], acc[r][b]);
    }
  }
  for (int r = 0; r < ROWS; r++)
    for (int b = 0; b < NB; b++) acc[r][b].store_unaligned(y + (std::size_t)r * y_stride + b * kLanes);
}

template <int ROWS>
static inline void av_rows(float* y, int y_stride, const float* a, int att_stride, const float* values, std::size_t row3,
                           int n, int hs_simd) noexcept {
  int d = 0;
  for (; d + 5 * kLanes <= hs_simd; d += 5 * kLanes) av_tile<ROWS, 5>(y + d, y_stride, a, att_stride, values + d, row3, n);
  switch ((hs_simd - d) / kLanes) {
    case 4: av_tile<ROWS, 4>(y + d, y_stride, a, att_stride, values + d, row3, n); break;
    case 3: av_tile<ROWS, 3>(y + d, y_stride, a, att_stride, values + d, row3, n); break;
    case 2: av_tile<ROWS, 2>(y + d, y_stride, a, att_stride, values + d, row3, n); break;
    case 1: av_tile<ROWS, 1>(y + d, y_stride, a, att_stride, values + d, row3, n); break;
    default: break;
  }
}

void attention_blocked(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                       int att_stride) noexcept {
  if (T - t_begin < 8) {
    attention_one_pass<true>(out, att, qkv, t_begin, T, C, NH, att_stride);
    return;
  }
  const int HS = C / NH;
  const int hs_simd = HS - HS % kLanes;
  const float scale = 1.0f / std::sqrt((float)HS);
  const std::size_t row3 = 3 * (std::size_t)C;
  const int panels = (T + kPanel - 1) / kPanel;
  static thread_local std::vector<float, xsimd::aligned_allocator<float, 64>> kpack;
  if (kpack.size() < (std::size_t)panels * kPanel * HS) kpack.resize((std::size_t)panels * kPanel * HS);
  for (int h = 0; h < NH; h++) {
    const float* q0 = qkv + h * HS;
    const float* keys = qkv + C + h * HS;
    const float* values = qkv + 2 * C + h * HS;
    float* att_h = att + (std::size_t)h * att_stride * att_stride;
    // pack keys 0..T-1: panel p, dimension d, lane u <- k_{p*kPanel+u}[d] (zero past T)
    for (int p = 0; p < panels; p++) {
      float* kp = kpack.data() + (std::size_t)p * kPanel * HS;
      for (int u = 0; u < kPanel; u++) {
        const int j = p * kPanel + u;
        if (j < T) {
          const float* kr = keys + j * row3;
          for (int d = 0; d < HS; d++) kp[d * kPanel + u] = kr[d];
        } else {
          for (int d = 0; d < HS; d++) kp[d * kPanel + u] = 0.0f;
        }
      }
    }
    // scores, 4 query rows at a time, key panels up to the last row's position (causal)
    for (int t0 = t_begin; t0 < T; t0 += 4) {
      const int rows = std::min(4, T - t0);
      const int t_last = t0 + rows - 1;
      for (int p = 0; p * kPanel <= t_last; p++) {
        const int n_valid = std::min(kPanel, att_stride - p * kPanel);
        float* a_rows = att_h + (std::size_t)t0 * att_stride + p * kPanel;
        const float* q = q0 + t0 * row3;
        const float* kp = kpack.data() + (std::size_t)p * kPanel * HS;
        switch (rows) {
          case 4: score_tile<4>(a_rows, att_stride, q, row3, kp, HS, scale, n_valid); break;
          case 3: score_tile<3>(a_rows, att_stride, q, row3, kp, HS, scale, n_valid); break;
          case 2: score_tile<2>(a_rows, att_stride, q, row3, kp, HS, scale, n_valid); break;
          default: score_tile<1>(a_rows, att_stride, q, row3, kp, HS, scale, n_valid); break;
        }
      }
      // softmax over the causal prefix; everything after it exactly 0 (overwrites the extra scores)
      for (int t = t0; t <= t_last; t++) {
        float* a = att_h + (std::size_t)t * att_stride;
        softmax_poly(a, t + 1);
        std::fill(a + t + 1, a + att_stride, 0.0f);
      }
    }
    // y = P V, two rows at a time over j <= the second row's position (the first row's P is 0 there)
    int t = t_begin;
    for (; t + 2 <= T; t += 2)
      av_rows<2>(out + (std::size_t)t * C + h * HS, C, att_h + (std::size_t)t * att_stride, att_stride, values, row3, t + 2, hs_simd);
    if (t < T) av_rows<1>(out + (std::size_t)t * C + h * HS, C, att_h + (std::size_t)t * att_stride, att_stride, values, row3, t + 1, hs_simd);
    for (int tt = t_begin; tt < T; tt++) {
      const float* a = att_h + (std::size_t)tt * att_stride;
      float* y = out + (std::size_t)tt * C + h * HS;
      for (int dd = hs_simd; dd < HS; dd++) {
        float acc = 0.0f;
        for (int jj = 0; jj <= tt; jj++) acc += a[jj] * values[jj * row3 + dd];
        y[dd] = acc;
      }
    }
  }
}

#else
bool available() { return false; }
void lm_head_8rows(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept {
  k::matmul_transposed_forward(out, inp, weight, T, K, N);
}
void matmul_split_k(float* out, const float* inp, const k::PackedLinear& W, int T) noexcept { k::matmul_forward(out, inp, W, T); }
void matmul_rows_split_k(float* out, const float* inp, int inp_stride, const k::PackedLinear& W, int k_begin, int k_end,
                         int T) noexcept {
  k::matmul_rows_forward(out, inp, inp_stride, W, k_begin, k_end, T);
}
void attention_av_one_pass(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                           int att_stride) noexcept {
  k::attention_forward(out, att, qkv, t_begin, T, C, NH, att_stride);
}
void attention_blocked(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                       int att_stride) noexcept {
  k::attention_forward(out, att, qkv, t_begin, T, C, NH, att_stride);
}
void softmax_poly(float* row, int N) noexcept { k::softmax_forward(row, N); }
#endif

}  // namespace headscope::bench::candidates
