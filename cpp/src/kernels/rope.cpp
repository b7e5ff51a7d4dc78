// The Llama family's row ops (RMSNorm, rotary positions, SwiGLU) and their backward, in xsimd (batch from
// simd_batch.hpp); with HEADSCOPE_SIMD=0 they forward to their references (reference.hpp).
// Shapes and contracts in kernels.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"

namespace headscope::kernels {

#if HEADSCOPE_SIMD

using simd::batch;
using simd::kLanes;

void rmsnorm_forward(float* out, float* rstd, const float* x, const float* weight, int N, int C, float eps) noexcept {
  for (int t = 0; t < N; t++) {
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
}

// The rotation is a handful of multiplies per pair next to the matrix products that make q and k;
// it stays scalar, with each row's cosines and sines computed once for all its heads (in double, so
// that position 4,000 is as exact as position 4). sign -1 turns each pair back by its angle: the
// transpose of the rotation, rope_backward.
namespace {
void rotate_pairs(float* x, std::size_t row_stride, int t_begin, int T, int n_heads, int HS, const double* inv_freq,
                  float sign) noexcept {
  const int half = HS / 2;
  constexpr int kChunk = 64;  // pairs whose cosines and sines are kept at once
  float cs[kChunk], sn[kChunk];
  for (int t = t_begin; t < T; t++)
    for (int i0 = 0; i0 < half; i0 += kChunk) {
      const int n = std::min(kChunk, half - i0);
      for (int i = 0; i < n; i++) {
        const double angle = (double)t * inv_freq[i0 + i];
        cs[i] = (float)std::cos(angle);
        sn[i] = sign * (float)std::sin(angle);
      }
      for (int h = 0; h < n_heads; h++) {
        float* v = x + (std::size_t)t * row_stride + (std::size_t)h * HS + i0;
        for (int i = 0; i < n; i++) {
          const float a = v[i], b = v[i + half];
          v[i] = a * cs[i] - b * sn[i];
          v[i + half] = b * cs[i] + a * sn[i];
        }
      }
    }
}
}  // namespace

void rope_forward(float* x, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                  const double* inv_freq) noexcept {
  rotate_pairs(x, row_stride, t_begin, T, n_heads, HS, inv_freq, 1.0f);
}

// silu(g) * u through xsimd's exp; the tail runs through the same batch code on padded lanes (as
// forward_simd.cpp's map_batches), so an element's result does not depend on where its row ends.
void swiglu_forward(float* out, const float* gate_up, int N, int F) noexcept {
  const batch one(1.0f);
  const auto f = [&](batch g, batch u) { return g / (one + xsimd::exp(-g)) * u; };
  for (int t = 0; t < N; t++) {
    const float* g = gate_up + (std::size_t)t * 2 * F;
    const float* u = g + F;
    float* o = out + (std::size_t)t * F;
    int i = 0;
    for (; i + kLanes <= F; i += kLanes)
      f(batch::load_unaligned(g + i), batch::load_unaligned(u + i)).store_unaligned(o + i);
    if (i < F) {
      alignas(64) float tg[kLanes] = {}, tu[kLanes] = {};
      std::memcpy(tg, g + i, sizeof(float) * (F - i));
      std::memcpy(tu, u + i, sizeof(float) * (F - i));
      f(batch::load_aligned(tg), batch::load_aligned(tu)).store_aligned(tg);
      std::memcpy(o + i, tg, sizeof(float) * (F - i));
    }
  }
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
      acc = xsimd::fma(batch::load_unaligned(weight + i) * batch::load_unaligned(d + i), batch::load_unaligned(x + i), acc);
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

void rope_backward(float* dx, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                   const double* inv_freq) noexcept {
  rotate_pairs(dx, row_stride, t_begin, T, n_heads, HS, inv_freq, -1.0f);
}

void swiglu_backward(float* dgate_up, const float* gate_up, const float* dout, int N, int F) noexcept {
  const batch one(1.0f);
  // (d gate, d up) of one batch of lanes, added to dg and du
  const auto f = [&](batch g, batch u, batch d, batch& dg, batch& du) {
    const batch sg = one / (one + xsimd::exp(-g));
    dg = xsimd::fma(d * u, sg * xsimd::fma(g, one - sg, one), dg);
    du = xsimd::fma(d, g * sg, du);
  };
  for (int t = 0; t < N; t++) {
    const float* g = gate_up + (std::size_t)t * 2 * F;
    const float* u = g + F;
    const float* d = dout + (std::size_t)t * F;
    float* dg = dgate_up + (std::size_t)t * 2 * F;
    float* du = dg + F;
    int i = 0;
    for (; i + kLanes <= F; i += kLanes) {
      batch a = batch::load_unaligned(dg + i), b = batch::load_unaligned(du + i);
      f(batch::load_unaligned(g + i), batch::load_unaligned(u + i), batch::load_unaligned(d + i), a, b);
      a.store_unaligned(dg + i);
      b.store_unaligned(du + i);
    }
    if (i < F) {  // padded lanes, as swiglu_forward
      alignas(64) float tg[kLanes] = {}, tu[kLanes] = {}, td[kLanes] = {}, ta[kLanes] = {}, tb[kLanes] = {};
      const std::size_t bytes = sizeof(float) * (F - i);
      std::memcpy(tg, g + i, bytes);
      std::memcpy(tu, u + i, bytes);
      std::memcpy(td, d + i, bytes);
      std::memcpy(ta, dg + i, bytes);
      std::memcpy(tb, du + i, bytes);
      batch a = batch::load_aligned(ta), b = batch::load_aligned(tb);
      f(batch::load_aligned(tg), batch::load_aligned(tu), batch::load_aligned(td), a, b);
      a.store_aligned(ta);
      b.store_aligned(tb);
      std::memcpy(dg + i, ta, bytes);
      std::memcpy(du + i, tb, bytes);
    }
  }
}

#else  // HEADSCOPE_SIMD == 0: the scalar build forwards to the references

void rmsnorm_forward(float* out, float* rstd, const float* x, const float* weight, int N, int C, float eps) noexcept {
  ref::rmsnorm_forward<float>(out, rstd, x, weight, N, C, eps);
}
void rope_forward(float* x, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                  const double* inv_freq) noexcept {
  ref::rope_forward<float>(x, row_stride, t_begin, T, n_heads, HS, inv_freq);
}
void swiglu_forward(float* out, const float* gate_up, int N, int F) noexcept {
  ref::swiglu_forward<float>(out, gate_up, N, F);
}
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C) noexcept {
  ref::rmsnorm_backward<float>(dinp, dweight, dout, inp, weight, rstd, N, C);
}
void rope_backward(float* dx, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                   const double* inv_freq) noexcept {
  ref::rope_backward<float>(dx, row_stride, t_begin, T, n_heads, HS, inv_freq);
}
void swiglu_backward(float* dgate_up, const float* gate_up, const float* dout, int N, int F) noexcept {
  ref::swiglu_backward<float>(dgate_up, gate_up, dout, N, F);
}

#endif

}  // namespace headscope::kernels
