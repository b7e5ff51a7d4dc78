// xsimd kernels of training (backward pass, optimizer updates, the unpacked Conv1D forward). Each is
// written once over `batch` (simd_batch.hpp: SIMD128 through sse4.1 in wasm, AVX-512 natively with
// -march=native): a SIMD loop over whole batches, then a scalar tail. The products use the model's
// register tile (gemm_tile.hpp) and dot product (forward_simd.cpp).
// With HEADSCOPE_SIMD=0 each forwards to its scalar reference in reference.hpp.
// Shapes use the legend in kernels.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"
#if HEADSCOPE_SIMD
#include "gemm_tile.hpp"
#include "parallel.hpp"
#endif

namespace headscope::kernels {

#if HEADSCOPE_SIMD

using simd::batch;
using simd::kLanes;

namespace {

float hsum(const batch& b) { return xsimd::hadd(b); }

// y (n) += a * x (n)
inline void axpy(float* y, float a, const float* x, int n) noexcept {
  const batch va(a);
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    xsimd::fma(va, batch::load_unaligned(x + i), batch::load_unaligned(y + i)).store_unaligned(y + i);
  for (; i < n; i++) y[i] += a * x[i];
}

// y (n) += x (n)
inline void acc(float* y, const float* x, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    (batch::load_unaligned(y + i) + batch::load_unaligned(x + i)).store_unaligned(y + i);
  for (; i < n; i++) y[i] += x[i];
}

}  // namespace

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* ids, int B, int T, int C) noexcept {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float* d = dout + ((std::size_t)b * T + t) * C;
      acc(dwte + (std::size_t)ids[b * T + t] * C, d, C);
      acc(dwpe + (std::size_t)t * C, d, C);
    }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) noexcept {
  for (int t = 0; t < N; t++) {
    const float* d = dout + (std::size_t)t * C;
    const float* x = inp + (std::size_t)t * C;
    float* dx = dinp + (std::size_t)t * C;
    const float m = mean[t], s = rstd[t];
    const batch vm(m), vs(s);
    batch s1(0.0f), s2(0.0f);
    int i = 0;
    for (; i + kLanes <= C; i += kLanes) {
      const batch norm = (batch::load_unaligned(x + i) - vm) * vs;
      const batch dnorm = batch::load_unaligned(weight + i) * batch::load_unaligned(d + i);
      s1 += dnorm;
      s2 = xsimd::fma(dnorm, norm, s2);
    }
    float dnorm_mean = hsum(s1), dnorm_norm_mean = hsum(s2);
    for (; i < C; i++) {
      const float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    const batch vdm(dnorm_mean), vdnm(dnorm_norm_mean);
    i = 0;
    for (; i + kLanes <= C; i += kLanes) {
      const batch di = batch::load_unaligned(d + i);
      const batch norm = (batch::load_unaligned(x + i) - vm) * vs;
      const batch dnorm = batch::load_unaligned(weight + i) * di;
      (batch::load_unaligned(dbias + i) + di).store_unaligned(dbias + i);
      xsimd::fma(norm, di, batch::load_unaligned(dweight + i)).store_unaligned(dweight + i);
      xsimd::fma(dnorm - vdm - norm * vdnm, vs, batch::load_unaligned(dx + i)).store_unaligned(dx + i);
    }
    for (; i < C; i++) {
      const float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
      dbias[i] += d[i];
      dweight[i] += norm * d[i];
      dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

// ---- the Conv1D layer's training products, on the model's register tile ---------------------------
// Each output tile lives in registers for its whole reduction and is written once: kTileRows rows x
// two batches of columns, for out and dinp (reduction over K, resp. OC) and for dweight (reduction
// over N, reading inp transposed through the tile's strides). dinp multiplies by the weight
// transposed into a scratch copy, so that its reduction, like the others, needs no horizontal sums.
// Column tails that fill no whole panel are summed in scalar code.
using gemm::kTileRows;
using gemm::TileStart;

// y (N, M) = (Accumulate ? y : bias or 0) + x (N, D) @ w (D, M)
// The reduction runs in depth slices of w that stay in L2 (kSliceFloats) while every row tile passes
// over them: without slicing, each tile of rows streams all of w from memory, which for the tied LM
// head's input gradient (D = vocabulary) is the whole embedding once per 6 rows. A tile stores its
// partial sums between slices and reloads them, which is exact (gemm_tile.hpp), so slicing does not
// change a single result.
template <bool Accumulate>
void gemm_rows(float* y, const float* x, const float* w, const float* bias, int N, int D, int M) noexcept {
  constexpr int kSliceFloats = 96 * 1024;  // 384 KB of w per slice (L2 is 512 KB per core on this machine)
  const int slice = std::clamp(kSliceFloats / std::max(M, 1), 16, 512);
  for (int d0 = 0; d0 < D; d0 += slice) {
    const int depth = std::min(slice, D - d0);
    const bool from_out = Accumulate || d0 > 0;
    const float* b = d0 == 0 ? bias : nullptr;
    const TileStart start = from_out ? TileStart::out : b ? TileStart::bias : TileStart::zero;
    const auto rows = [&](auto r_tag, int t0, int j_begin, int j_end) {
      constexpr int R = decltype(r_tag)::value;
      int j = j_begin;
      for (; j + 2 * kLanes <= j_end; j += 2 * kLanes)
        gemm::tile<R, false>(y + (std::size_t)t0 * M + j, M, x + (std::size_t)t0 * D + d0, D, 1, w + (std::size_t)d0 * M + j,
                             M, depth, start, b ? b + j : nullptr, 2 * kLanes);
      for (; j < j_end; j++)
        for (int r = 0; r < R; r++) {
          const float* xr = x + (std::size_t)(t0 + r) * D;
          float* dst = y + (std::size_t)(t0 + r) * M + j;
          float acc = from_out ? *dst : b ? b[j] : 0.0f;
          for (int d = d0; d < d0 + depth; d++) acc += xr[d] * w[(std::size_t)d * M + j];
          *dst = acc;
        }
    };
    // threads take whole column panels (parallel.hpp); the columns after the last panel are one more unit
    const int panels = M / (2 * kLanes), units = panels + (M % (2 * kLanes) ? 1 : 0);
    parallel_for(units, (double)N * depth * M, [&](int u_begin, int u_end) {
      const int j_begin = u_begin * 2 * kLanes, j_end = std::min(M, u_end * 2 * kLanes);
      int t = 0;
      for (; t + kTileRows <= N; t += kTileRows) rows(std::integral_constant<int, kTileRows>{}, t, j_begin, j_end);
      for (; t < N; t++) rows(std::integral_constant<int, 1>{}, t, j_begin, j_end);
    });
  }
}

void matmul_unpacked_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int K,
                             int OC) noexcept {
  gemm_rows<false>(out, inp, weight, bias, N, K, OC);
}

static void weight_grad(float* g, const float* a, const float* b, int N, int K, int M) noexcept;

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int K, int OC) noexcept {
  // dinp (N, K) += dout (N, OC) @ weight^T (OC, K): the transpose costs K x OC moves against N x K x OC
  // multiply-adds. Scratch per thread, grown to the largest layer once.
  static thread_local std::vector<float> weight_t;
  weight_t.resize((std::size_t)K * OC);
  // in 32 x 32 blocks: a plain loop writes one cache line per element (14% of a head-gate backward of
  // GPT-2 small before blocking)
  constexpr int kBlock = 32;
  for (int k0 = 0; k0 < K; k0 += kBlock)
    for (int o0 = 0; o0 < OC; o0 += kBlock)
      for (int k = k0; k < std::min(K, k0 + kBlock); k++)
        for (int o = o0; o < std::min(OC, o0 + kBlock); o++) weight_t[(std::size_t)o * K + k] = weight[(std::size_t)k * OC + o];
  gemm_rows<true>(dinp, dout, weight_t.data(), nullptr, N, OC, K);
  // dweight (K, OC) += inp (N, K)^T @ dout (N, OC)
  if (dweight) weight_grad(dweight, inp, dout, N, K, OC);
  // dbias (OC) += column sums of dout
  if (dbias)
    for (int tt = 0; tt < N; tt++) acc(dbias, dout + (std::size_t)tt * OC, OC);
}

// g (K, M) += a (N, K)^T @ b (N, M): each tile of g is summed over N in registers and written once
static void weight_grad(float* g, const float* a, const float* b, int N, int K, int M) noexcept {
  // threads take whole column panels of g, each summing its tiles over all N rows (parallel.hpp)
  const int panels = M / (2 * kLanes), units = panels + (M % (2 * kLanes) ? 1 : 0);
  parallel_for(units, (double)N * K * M, [&](int u_begin, int u_end) {
    for (int o = u_begin * 2 * kLanes; o < std::min(u_end, panels) * 2 * kLanes; o += 2 * kLanes) {
      int k = 0;
      // rows k of g: A = a^T, element (k, t) at a[t * K + k]; B = b's rows, stride M
      for (; k + kTileRows <= K; k += kTileRows)
        gemm::tile<kTileRows, false>(g + (std::size_t)k * M + o, M, a + k, 1, K, b + o, M, N, TileStart::out,
                                     nullptr, 2 * kLanes);
      for (; k < K; k++)
        gemm::tile<1, false>(g + (std::size_t)k * M + o, M, a + k, 1, K, b + o, M, N, TileStart::out, nullptr,
                             2 * kLanes);
    }
    if (u_end > panels)
      for (int o = panels * 2 * kLanes; o < M; o++)
        for (int k = 0; k < K; k++) {
          float s = 0.0f;
          for (int tt = 0; tt < N; tt++) s += a[(std::size_t)tt * K + k] * b[(std::size_t)tt * M + o];
          g[(std::size_t)k * M + o] += s;
        }
  });
}

void matmul_transposed_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, int N, int K, int OC) noexcept {
  // dinp (N, K) += dout (N, OC) @ weight (OC, K): the weight is already the product's right side
  gemm_rows<true>(dinp, dout, weight, nullptr, N, OC, K);
  // dweight (OC, K) += dout (N, OC)^T @ inp (N, K)
  if (dweight) weight_grad(dweight, dout, inp, N, OC, K);
}

void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, const AttentionShape& shape) noexcept {
  const int NH = shape.NH, KV = shape.KV, HS = shape.HS, group = NH / KV;
  const std::size_t C3 = shape.qkv_row(), C = shape.out_row();
  const float scale = 1.0f / std::sqrt((float)HS);
  // threads take whole (sequence, key/value head) pairs and that head's query heads in order: each
  // writes only its own columns of dqkv, and a shared key/value head sums its query heads' gradients
  // in the same order for every thread count
  parallel_for(B * KV, (double)B * T * T * C * 2, [&](int u_begin, int u_end) {
    static thread_local std::vector<float> own;
    float* datt = scratch;  // the caller's scratch serves the first chunk, the calling thread's
    if (u_begin > 0) {
      own.resize((std::size_t)T);
      datt = own.data();
    }
    for (int u = u_begin; u < u_end; u++) {
      const int b = u / KV, g = u % KV;
      const std::size_t kcol = (std::size_t)(NH + g) * HS, vcol = (std::size_t)(NH + KV + g) * HS;
      for (int h = g * group; h < (g + 1) * group; h++)
        for (int t = 0; t < T; t++) {
          const float* a = att + (((std::size_t)b * NH + h) * T + t) * T;
          const float* d = dout + ((std::size_t)b * T + t) * C + h * HS;
          const float* base = qkv + (std::size_t)b * T * C3;
          float* dbase = dqkv + (std::size_t)b * T * C3;
          for (int j = 0; j <= t; j++) {
            datt[j] = dot(d, base + (std::size_t)j * C3 + vcol, HS);
            axpy(dbase + (std::size_t)j * C3 + vcol, a[j], d, HS);
          }
          const float dsum = dot(a, datt, t + 1);
          const float* q = base + (std::size_t)t * C3 + h * HS;
          float* dq = dbase + (std::size_t)t * C3 + h * HS;
          for (int j = 0; j <= t; j++) {
            const float dpre = a[j] * (datt[j] - dsum) * scale;
            axpy(dq, dpre, base + (std::size_t)j * C3 + kcol, HS);
            axpy(dbase + (std::size_t)j * C3 + kcol, dpre, q, HS);
          }
        }
    }
  });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t N) noexcept {
  const float s = std::sqrt(2.0f / (float)M_PI);
  const batch vs(s), c(0.044715f), c3(3.0f * 0.044715f), half(0.5f), one(1.0f);
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes) {
    const batch x = batch::load_unaligned(inp + i);
    const batch x2 = x * x;
    const batch th = xsimd::tanh(vs * xsimd::fma(c * x2, x, x));
    const batch sech2 = one - th * th;
    const batch grad = half * (one + th) + half * x * sech2 * vs * xsimd::fma(c3, x2, one);
    xsimd::fma(grad, batch::load_unaligned(dout + i), batch::load_unaligned(dinp + i)).store_unaligned(dinp + i);
  }
  if (i < N) ref::gelu_backward<float>(dinp + i, inp + i, dout + i, N - i);
}

// gelu'(x) = Phi(x) + x phi(x) for the exact form (activation_function "gelu")
void gelu_erf_backward(float* dinp, const float* inp, const float* dout, std::size_t N) noexcept {
  const batch inv_sqrt2(0.70710678118654752f), inv_sqrt_2pi(0.39894228040143268f), half(0.5f), one(1.0f),
      mhalf(-0.5f);
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes) {
    const batch x = batch::load_unaligned(inp + i);
    const batch grad = xsimd::fma(x * inv_sqrt_2pi, xsimd::exp(mhalf * x * x), half * (one + xsimd::erf(x * inv_sqrt2)));
    xsimd::fma(grad, batch::load_unaligned(dout + i), batch::load_unaligned(dinp + i)).store_unaligned(dinp + i);
  }
  if (i < N) ref::gelu_erf_backward<float>(dinp + i, inp + i, dout + i, N - i);
}

void residual_backward(float* da, float* db, const float* dout, std::size_t N) noexcept {
  acc(da, dout, N);
  acc(db, dout, N);
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N,
                           int V) noexcept {
  for (int t = 0; t < N; t++) {
    float* d = dlogits + (std::size_t)t * V;
    axpy(d, dloss, probs + (std::size_t)t * V, V);
    d[targets[t]] -= dloss;
  }
}

void adamw_update(float* param, float* m, float* v, const float* grad, std::size_t N, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int t) noexcept {
  const float c1 = 1.0f - std::pow(beta1, (float)t), c2 = 1.0f - std::pow(beta2, (float)t);
  const batch b1(beta1), b2(beta2), ob1(1.0f - beta1), ob2(1.0f - beta2), ic1(1.0f / c1), ic2(1.0f / c2),
      veps(eps), vlr(lr), vwd(weight_decay);
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes) {
    const batch g = batch::load_unaligned(grad + i), p = batch::load_unaligned(param + i);
    const batch mi = b1 * batch::load_unaligned(m + i) + ob1 * g;
    const batch vi = b2 * batch::load_unaligned(v + i) + ob2 * g * g;
    mi.store_unaligned(m + i);
    vi.store_unaligned(v + i);
    const batch upd = (mi * ic1) / (xsimd::sqrt(vi * ic2) + veps) + vwd * p;
    (p - vlr * upd).store_unaligned(param + i);
  }
  for (; i < N; i++) {
    const float g = grad[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    param[i] -= lr * ((m[i] * (1.0f / c1)) / (std::sqrt(v[i] * (1.0f / c2)) + eps) + weight_decay * param[i]);
  }
}

void sgd_update(float* param, const float* grad, std::size_t N, float lr) noexcept {
  const batch vlr(lr);
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes)
    (batch::load_unaligned(param + i) - vlr * batch::load_unaligned(grad + i)).store_unaligned(param + i);
  for (; i < N; i++) param[i] -= lr * grad[i];
}

#else  // HEADSCOPE_SIMD == 0: the scalar references

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* ids, int B, int T, int C) noexcept {
  ref::encoder_backward<float>(dwte, dwpe, dout, ids, B, T, C);
}
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) noexcept {
  ref::layernorm_backward<float>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}
void matmul_unpacked_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int K,
                             int OC) noexcept {
  ref::matmul_forward<float>(out, inp, weight, bias, N, K, OC);
}
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int K, int OC) noexcept {
  ref::matmul_backward<float>(dinp, dweight, dbias, dout, inp, weight, N, K, OC);
}
void matmul_transposed_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, int N, int K, int OC) noexcept {
  ref::matmul_transposed_backward<float>(dinp, dweight, dout, inp, weight, N, K, OC);
}
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, const AttentionShape& shape) noexcept {
  ref::attention_backward<float>(dqkv, scratch, dout, qkv, att, B, T, shape.NH, shape.KV, shape.HS);
}
void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t N) noexcept {
  ref::gelu_backward<float>(dinp, inp, dout, N);
}
void gelu_erf_backward(float* dinp, const float* inp, const float* dout, std::size_t N) noexcept {
  ref::gelu_erf_backward<float>(dinp, inp, dout, N);
}
void residual_backward(float* da, float* db, const float* dout, std::size_t N) noexcept {
  ref::residual_backward<float>(da, db, dout, N);
}
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N,
                           int V) noexcept {
  ref::crossentropy_backward<float>(dlogits, probs, targets, dloss, N, V);
}
void adamw_update(float* param, float* m, float* v, const float* grad, std::size_t N, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int t) noexcept {
  ref::adamw_update<float>(param, m, v, grad, N, lr, beta1, beta2, eps, weight_decay, t);
}
void sgd_update(float* param, const float* grad, std::size_t N, float lr) noexcept {
  ref::sgd_update<float>(param, grad, N, lr);
}

#endif

double sum_squares(const float* grad, std::size_t N) noexcept { return ref::sum_squares<float>(grad, N); }

}  // namespace headscope::kernels
