// F16 weights widened to float32 in xsimd (batch from simd_batch.hpp), in the grouped order f16_pack writes
// (reference.cpp). The scalar build (HEADSCOPE_SIMD=0) is scalar.cpp.
#include <cstdint>

#include "kernels.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

using simd::batch;
using simd::ibatch;
using simd::kLanes;
using simd::kPanel;

// --- F16 -> float32: simd::f16_low_bits_to_f32 (simd_batch.hpp) --------------------------------
using simd::f16_low_bits_to_f32;

int f16_group_width() { return kPanel; }

// out (n) <- packed (n): each whole group of kPanel values is one int32 batch whose low halves are
// values [0, kLanes) and high halves values [kLanes, kPanel) (f16_pack's layout); the tail is plain.
void f16_unpack_forward(float* out, const uint16_t* packed, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + kPanel <= n; i += kPanel) {
    const ibatch words = ibatch::load_unaligned(reinterpret_cast<const int32_t*>(packed + i));
    f16_low_bits_to_f32(words).store_unaligned(out + i);
    f16_low_bits_to_f32(words >> 16).store_unaligned(out + i + kLanes);
  }
  for (; i < n; i++) out[i] = f16_to_f32_reference(packed[i]);
}

void f16_unpack_weights(float* out, const uint16_t* packed, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + kPanel <= n; i += kPanel) {
    batch lo, hi;
    simd::f16_finite_pair_to_f32(ibatch::load_unaligned(reinterpret_cast<const int32_t*>(packed + i)), lo, hi);
    lo.store_unaligned(out + i);
    hi.store_unaligned(out + i + kLanes);
  }
  for (; i < n; i++) out[i] = f16_to_f32_reference(packed[i]);
}

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
