// The two norms, forward and backward, in xsimd (batch from simd_batch.hpp): GPT-2's LayerNorm and the
// Llama family's RMSNorm. The scalar build (HEADSCOPE_SIMD=0) is scalar.cpp; references in reference.hpp.
// Shapes and contracts in kernels.hpp.
#include <cmath>

#include "kernels.hpp"
#include "parallel.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

using simd::batch;
using simd::hsum;
using simd::kLanes;

// The forward norms run over the threads by rows (a serial part of every layer otherwise); about the
// multiply-adds a float is worth: three passes over it.
constexpr double kNormCost = 4;

// --- LayerNorm (GPT-2) -----------------------------------------------------------------------
void layernorm_forward(float* out, float* mean_out, float* rstd_out, const float* inp, const float* weight,
                       const float* bias, int T, int C, float eps) noexcept {
  // rows over the threads (each row the same instructions on any count); about 4 passes a float
  parallel_for(T, kNormCost * T * C, [&](int t_begin, int t_end) {
    for (int t = t_begin; t < t_end; t++) {
      const float* x = inp + (std::size_t)t * C;
      float* o = out + (std::size_t)t * C;
      // two passes (mean, then squared deviations) as in PyTorch: one-pass E[x^2]-E[x]^2 loses
      // precision when the residual stream has a large mean
      batch sum(0.0f);
      int i = 0;
      for (; i + kLanes <= C; i += kLanes) sum += batch::load_unaligned(x + i);
      float s = xsimd::hadd(sum);
      for (; i < C; i++) s += x[i];
      const float mean = s / C;
      const batch mean_b(mean);
      batch sq(0.0f);
      i = 0;
      for (; i + kLanes <= C; i += kLanes) {
        const batch d = batch::load_unaligned(x + i) - mean_b;
        sq = xsimd::fma(d, d, sq);
      }
      float v = xsimd::hadd(sq);
      for (; i < C; i++) v += (x[i] - mean) * (x[i] - mean);
      const float rstd = 1.0f / std::sqrt(v / C + eps);
      if (mean_out) mean_out[t] = mean;
      if (rstd_out) rstd_out[t] = rstd;
      const batch rstd_b(rstd);
      i = 0;
      for (; i + kLanes <= C; i += kLanes) {
        const batch n = (batch::load_unaligned(x + i) - mean_b) * rstd_b;
        xsimd::fma(n, batch::load_unaligned(weight + i), batch::load_unaligned(bias + i)).store_unaligned(o + i);
      }
      for (; i < C; i++) o[i] = (x[i] - mean) * rstd * weight[i] + bias[i];
    }
  });
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

// --- RMSNorm (the Llama family) ---------------------------------------------------------------
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* weight, int N, int C, float eps) noexcept {
  parallel_for(N, kNormCost * N * C, [&](int t_begin, int t_end) {
    for (int t = t_begin; t < t_end; t++) {
      const float* xr = x + (std::size_t)t * C;
      float* o = out + (std::size_t)t * C;
      const float r = 1.0f / std::sqrt(dot(xr, xr, C) / C + eps);
      if (rstd) rstd[t] = r;
      const batch r_b(r);
      int i = 0;
      for (; i + kLanes <= C; i += kLanes)
        (batch::load_unaligned(xr + i) * r_b * batch::load_unaligned(weight + i)).store_unaligned(o + i);
      for (; i < C; i++) o[i] = xr[i] * r * weight[i];
    }
  });
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C) noexcept {
  for (int t = 0; t < N; t++) {
    const float* x = inp + (std::size_t)t * C;
    const float* d = dout + (std::size_t)t * C;
    float* dx = dinp + (std::size_t)t * C;
    const float r = rstd[t];
    // sum_j w_j d_j x_j, in lanes then across them (as dot)
    batch acc(0.0f);
    int i = 0;
    for (; i + kLanes <= C; i += kLanes)
      acc = xsimd::fma(batch::load_unaligned(weight + i) * batch::load_unaligned(d + i), batch::load_unaligned(x + i),
                       acc);
    float dot_nx = xsimd::hadd(acc);
    for (int j = i; j < C; j++) dot_nx += weight[j] * d[j] * x[j];
    const float c = r * r * dot_nx / (float)C;
    const batch r_b(r), c_b(c);
    for (i = 0; i + kLanes <= C; i += kLanes) {
      const batch xv = batch::load_unaligned(x + i), dv = batch::load_unaligned(d + i);
      const batch n = batch::load_unaligned(weight + i) * dv;
      (batch::load_unaligned(dx + i) + r_b * (n - c_b * xv)).store_unaligned(dx + i);
      xsimd::fma(dv * xv, r_b, batch::load_unaligned(dweight + i)).store_unaligned(dweight + i);
    }
    for (; i < C; i++) {
      dx[i] += r * (weight[i] * d[i] - c * x[i]);
      dweight[i] += d[i] * x[i] * r;
    }
  }
}

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
