// The optimizers' parameter updates (AdamW, SGD), in xsimd (batch from simd_batch.hpp). The scalar build
// (HEADSCOPE_SIMD=0) is scalar.cpp; references in reference.hpp.
#include <cmath>

#include "kernels.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

using simd::batch;
using simd::kLanes;

void adamw_update(float* param, float* m, float* v, const float* grad, std::size_t N, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int t) noexcept {
  const float c1 = 1.0f - std::pow(beta1, (float)t), c2 = 1.0f - std::pow(beta2, (float)t);
  const batch b1(beta1), b2(beta2), ob1(1.0f - beta1), ob2(1.0f - beta2), ic1(1.0f / c1), ic2(1.0f / c2), veps(eps),
      vlr(lr), vwd(weight_decay);
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

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)

// Both builds: the gradient clipping's sum, in double, as the reference
namespace headscope::kernels {
double sum_squares(const float* grad, std::size_t N) noexcept { return ref::sum_squares<float>(grad, N); }
}  // namespace headscope::kernels
