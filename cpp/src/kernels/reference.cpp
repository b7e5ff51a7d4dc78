// The references of F16 storage, which are not templates: the rounding to and widening from IEEE
// binary16, and the group layout of packed F16 arrays (kernels.hpp). Every other reference is a
// template in reference.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels.hpp"

namespace headscope::kernels {

// ---- F16 weight storage ------------------------------------------------------------------------

uint16_t f32_to_f16_reference(float x) noexcept {
  // F. Giesen's float_to_half_fast3_rtne: the rounding is done by the FPU's own round-to-nearest-even
  // (an add for the subnormal range) or by integer rounding with the mantissa's parity (ties to even).
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7e00 | (uint16_t)((u >> 13) & 0x3ff);  // NaN: quiet, top payload bits kept
  if (u >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 (half-way past 65504, tie to even 2^16) and inf: inf
  if (u < 0x38800000u) {
    // below 2^-14: an F16 subnormal or zero. Adding 0.5 puts the value's 2^-24 units in the float's
    // low mantissa bits, rounded to nearest even by the addition itself.
    const uint32_t magic_bits = (uint32_t)((127 - 15) + (23 - 10) + 1) << 23;  // 0.5f
    float magic, f;
    std::memcpy(&magic, &magic_bits, 4);
    std::memcpy(&f, &u, 4);
    f += magic;
    uint32_t r;
    std::memcpy(&r, &f, 4);
    return sign | (uint16_t)(r - magic_bits);
  }
  const uint32_t mant_odd = (u >> 13) & 1;
  u += ((uint32_t)(15 - 127) << 23) + 0xfff;  // rebias the exponent; round half up ...
  u += mant_odd;                              // ... or half to even
  return sign | (uint16_t)(u >> 13);
}

float f16_to_f32_reference(uint16_t h) noexcept {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const bool negative = (h & 0x8000) != 0;
  if (exp == 31) {  // inf or NaN, payload kept
    const uint32_t bits = (negative ? 0x80000000u : 0u) | 0x7f800000u | (uint32_t)mant << 13;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  // subnormal: mant x 2^-24; normal: (1024 + mant) x 2^(exp - 25)
  const float v = exp == 0 ? std::ldexp((float)mant, -24) : std::ldexp((float)(1024 + mant), exp - 25);
  return negative ? -v : v;
}

void f16_pack(uint16_t* out, const float* in, std::size_t n) noexcept {
  const std::size_t G = (std::size_t)f16_group_width(), half = G / 2;
  std::size_t i = 0;
  if (G > 1)
    for (; i + G <= n; i += G)
      for (std::size_t j = 0; j < half;
           j++) {  // little-endian: the 32-bit word j is out[i + 2j] | out[i + 2j + 1] << 16
        out[i + 2 * j] = f32_to_f16_reference(in[i + j]);
        out[i + 2 * j + 1] = f32_to_f16_reference(in[i + half + j]);
      }
  for (; i < n; i++) out[i] = f32_to_f16_reference(in[i]);
}

void f16_unpack_forward_reference(float* out, const uint16_t* packed, std::size_t n) noexcept {
  const std::size_t G = (std::size_t)f16_group_width(), half = G / 2;
  std::size_t i = 0;
  if (G > 1)
    for (; i + G <= n; i += G)
      for (std::size_t j = 0; j < half; j++) {
        out[i + j] = f16_to_f32_reference(packed[i + 2 * j]);
        out[i + half + j] = f16_to_f32_reference(packed[i + 2 * j + 1]);
      }
  for (; i < n; i++) out[i] = f16_to_f32_reference(packed[i]);
}

// ---- unpacking a linear layer (either build's panel width) ------------------------------------

void unpack_linear(float* weight, float* bias, const PackedLinear& W) {
  if (W.is_q8()) {  // dequantized: q * s
    std::vector<int8_t> q((std::size_t)W.K * W.N);
    std::vector<float> scales(W.N);
    unpack_linear_q8(q.data(), scales.data(), W);
    for (std::size_t i = 0; i < q.size(); i++) weight[i] = (float)q[i] * scales[i % W.N];
    if (bias && !W.bias.empty()) std::copy(W.bias.begin(), W.bias.begin() + W.N, bias);
    return;
  }
  const int pw = W.panel_width, panels = (W.N + pw - 1) / pw;
  // F16 storage is the float32 panels packed by f16_pack as one array: widen it the same way
  std::vector<float> widened;
  if (W.is_f16()) {
    widened.resize(W.panels_f16.size());
    f16_unpack_forward_reference(widened.data(), W.panels_f16.data(), widened.size());
  }
  const float* src = W.is_f16() ? widened.data() : W.panels.data();
  for (int p = 0; p < panels; p++)
    for (int k = 0; k < W.K; k++)
      for (int c = 0; c < pw && p * pw + c < W.N; c++)
        weight[(std::size_t)k * W.N + p * pw + c] = src[((std::size_t)p * W.K + k) * pw + c];
  if (bias && !W.bias.empty()) std::copy(W.bias.begin(), W.bias.begin() + W.N, bias);
}

}  // namespace headscope::kernels
