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

// --- F16 -> float32 ------------------------------------------------------------------------
// Widening by integer and float ops that SIMD128 has (no F16 instructions there, and the same code
// natively): the 15 bits below the sign, shifted up by 13, are the float32 with the same mantissa
// and an exponent 112 too small (subnormal F16 values land on subnormal float32 bit patterns), so one
// exact multiply by 2^112 rebiases them; exponent 31 (inf, NaN) is forced to 255; then the sign.
// Only the low 16 bits of each int32 lane are read.
static inline batch f16_low_bits_to_f32(const ibatch& h) noexcept {
  const ibatch magnitude = (h & ibatch(0x7fff)) << 13;
  const ibatch rebiased = xsimd::bitwise_cast<ibatch>(xsimd::bitwise_cast<batch>(magnitude) * batch(0x1p112f));
  const ibatch special = xsimd::select((h & ibatch(0x7c00)) == ibatch(0x7c00), ibatch(0x7f800000), ibatch(0));
  return xsimd::bitwise_cast<batch>(rebiased | special | ((h & ibatch(0x8000)) << 16));
}

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

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
