// The residual stream's element-wise ops, forward and backward, and the embeddings' backward (token and
// position rows gathered by id), in xsimd (batch from simd_batch.hpp). The scalar build is scalar.cpp.

#include "kernels.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

using simd::accumulate;
using simd::batch;
using simd::kLanes;

void add_forward(float* out, const float* a, const float* b, std::size_t N) noexcept {
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes)
    (batch::load_unaligned(a + i) + batch::load_unaligned(b + i)).store_unaligned(out + i);
  for (; i < N; i++) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, std::size_t N) noexcept {
  accumulate(da, dout, N);
  accumulate(db, dout, N);
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* ids, int B, int T, int C) noexcept {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float* d = dout + ((std::size_t)b * T + t) * C;
      accumulate(dwte + (std::size_t)ids[b * T + t] * C, d, C);
      accumulate(dwpe + (std::size_t)t * C, d, C);
    }
}

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
