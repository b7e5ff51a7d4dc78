// The softmax and the cross-entropy loss with its gradient, in xsimd (batch from simd_batch.hpp), and the
// exp of non-positive inputs they (and attention) use. The scalar build (HEADSCOPE_SIMD=0) is scalar.cpp;
// references in reference.hpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "kernels.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

using simd::axpy;
using simd::batch;
using simd::horizontal_max;
using simd::ibatch;
using simd::kLanes;
using simd::map_batches;

// exp(x) for x <= 0, the only inputs a max-subtracted softmax produces. xsimd::exp handles the whole
// range with a round-to-integer and range checks that cost more than the polynomial in SIMD128;
// this is Cephes' expf polynomial with 2^n built by integer ops (no float->int instruction):
// max relative error 3.2e-7 (about 5 ulp), measured against std::exp in tests/cpp/kernels/test_softmax_loss.cpp.
// Inputs below -87.3 are clamped there, giving ~1e-38 instead of a denormal or 0 (the softmax's sum
// is >= 1, so the difference is below float resolution).
static inline batch exp_nonpositive(batch x) noexcept {
  x = xsimd::max(x, batch(-87.33654f));
  // t = x log2(e) + 1.5 * 2^23: the float add rounds x log2(e) to the nearest integer n, kept in t's low bits
  const batch magic(12582912.0f);
  const batch t = xsimd::fma(x, batch(1.44269504088896341f), magic);
  const batch n = t - magic;
  batch r = xsimd::fnma(n, batch(0.693359375f), x);  // r = x - n ln2, ln2 split in two for exactness
  r = xsimd::fnma(n, batch(-2.12194440e-4f), r);
  batch y(1.9875691500e-4f);
  y = xsimd::fma(y, r, batch(1.3981999507e-3f));
  y = xsimd::fma(y, r, batch(8.3334519073e-3f));
  y = xsimd::fma(y, r, batch(4.1665795894e-2f));
  y = xsimd::fma(y, r, batch(1.6666665459e-1f));
  y = xsimd::fma(y, r, batch(5.0000001201e-1f));
  y = xsimd::fma(y, r * r, r + batch(1.0f));  // e^r, |r| <= ln2 / 2
  // 2^n: n + 127 shifted into the exponent field
  const ibatch ni = xsimd::bitwise_cast<ibatch>(t) - xsimd::bitwise_cast<ibatch>(magic);
  const batch two_n = xsimd::bitwise_cast<batch>((ni + ibatch(127)) << 23);
  return y * two_n;
}

void exp_nonpositive_forward(float* out, const float* inp, std::size_t N) noexcept {
  map_batches(out, inp, N, [](batch x) { return exp_nonpositive(x); });
}

// out (N) = softmax(in (N)); out may equal in. Returns the row's max and the sum of exp(x - max),
// whose log is the log-sum-exp the cross-entropy needs.
static inline std::pair<float, float> softmax_row(float* out, const float* in, int N) noexcept {
  batch maxb(-std::numeric_limits<float>::infinity());
  int i = 0;
  for (; i + kLanes <= N; i += kLanes) maxb = xsimd::max(maxb, batch::load_unaligned(in + i));
  float maxv = horizontal_max(maxb);
  for (; i < N; i++) maxv = std::max(maxv, in[i]);
  const batch maxv_b(maxv);
  batch sumb(0.0f);
  i = 0;
  for (; i + kLanes <= N; i += kLanes) {
    const batch e = exp_nonpositive(batch::load_unaligned(in + i) - maxv_b);
    e.store_unaligned(out + i);
    sumb += e;
  }
  float sum = xsimd::hadd(sumb);
  for (; i < N; i++) {
    out[i] = std::exp(in[i] - maxv);
    sum += out[i];
  }
  const float inv = 1.0f / sum;
  const batch inv_b(inv);
  i = 0;
  for (; i + kLanes <= N; i += kLanes) (batch::load_unaligned(out + i) * inv_b).store_unaligned(out + i);
  for (; i < N; i++) out[i] *= inv;
  return {maxv, sum};
}

void softmax_forward(float* row, int N) noexcept { softmax_row(row, row, N); }

void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V) noexcept {
  for (int t = 0; t < N; t++) {
    const float* l = logits + (std::size_t)t * V;
    const auto [maxv, sum] = softmax_row(probs + (std::size_t)t * V, l, V);
    losses[t] = std::log(sum) + maxv - l[targets[t]];
  }
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V) noexcept {
  for (int t = 0; t < N; t++) {
    float* d = dlogits + (std::size_t)t * V;
    axpy(d, dloss, probs + (std::size_t)t * V, V);
    d[targets[t]] -= dloss;
  }
}

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
