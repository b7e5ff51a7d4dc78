// Rotary position embeddings (the Llama family), forward and backward. The scalar build
// (HEADSCOPE_SIMD=0) is scalar.cpp; the reference in reference.hpp. Shapes and contracts in kernels.hpp.
#include <algorithm>
#include <cmath>

#include "kernels.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

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

void rope_backward(float* dx, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                   const double* inv_freq) noexcept {
  rotate_pairs(dx, row_stride, t_begin, T, n_heads, HS, inv_freq, -1.0f);
}

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
