// The MLPs' activations, forward and backward, in xsimd (batch from simd_batch.hpp): GPT-2's GELU (tanh
// form, "gelu_new") and its exact erf form ("gelu"), and the Llama family's SwiGLU, silu(gate) * up.
// The scalar build (HEADSCOPE_SIMD=0) is scalar.cpp; references in reference.hpp.
#include <cmath>
#include <cstring>

#include "kernels.hpp"
#include "parallel.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

using simd::batch;
using simd::kLanes;
using simd::map_batches;

// The forward activations run over the threads (parallel_elements, by blocks; same bits on any
// count): on one thread they were a serial part of every layer, about 4% of GPT-2 small's forward at
// T = 256, and what a second thread cannot share bounds its gain. About the multiply-adds an element
// is worth (a tanh, erf or exp through xsimd's polynomials and a division).
constexpr double kTranscendentalCost = 32;

void gelu_forward(float* out, const float* inp, std::size_t N) noexcept {
  const batch s_b(std::sqrt(2.0f / 3.14159265358979323846f)), c_b(0.044715f), half(0.5f), one(1.0f);
  const auto f = [&](batch x) {
    const batch inner = s_b * xsimd::fma(c_b * x, x * x, x);
    return half * x * (one + xsimd::tanh(inner));
  };
  parallel_elements(N, kTranscendentalCost, [&](std::size_t i, std::size_t n) { map_batches(out + i, inp + i, n, f); });
}

void gelu_erf_forward(float* out, const float* inp, std::size_t N) noexcept {
  const batch inv_sqrt2(0.70710678118654752f), half(0.5f), one(1.0f);
  const auto f = [&](batch x) { return half * x * (one + xsimd::erf(x * inv_sqrt2)); };
  parallel_elements(N, kTranscendentalCost, [&](std::size_t i, std::size_t n) { map_batches(out + i, inp + i, n, f); });
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
  const batch inv_sqrt2(0.70710678118654752f), inv_sqrt_2pi(0.39894228040143268f), half(0.5f), one(1.0f), mhalf(-0.5f);
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes) {
    const batch x = batch::load_unaligned(inp + i);
    const batch grad =
        xsimd::fma(x * inv_sqrt_2pi, xsimd::exp(mhalf * x * x), half * (one + xsimd::erf(x * inv_sqrt2)));
    xsimd::fma(grad, batch::load_unaligned(dout + i), batch::load_unaligned(dinp + i)).store_unaligned(dinp + i);
  }
  if (i < N) ref::gelu_erf_backward<float>(dinp + i, inp + i, dout + i, N - i);
}

// silu(g) * u through xsimd's exp; the tail runs through the same batch code on padded lanes (as
// simd_batch.hpp's map_batches), so an element's result does not depend on where its row ends.
void swiglu_forward(float* out, const float* gate_up, int N, int F) noexcept {
  const batch one(1.0f);
  const auto f = [&](batch g, batch u) { return g / (one + xsimd::exp(-g)) * u; };
  parallel_for(N, kTranscendentalCost * N * F, [&](int t_begin, int t_end) {
    for (int t = t_begin; t < t_end; t++) {
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
  });
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

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
