// Scalar reference kernels: the algorithmic definition of each op, kept simple on purpose.
// The xsimd kernels in kernels_simd.cpp must agree with these (tests/cpp/test_kernels.cpp), and a
// build with HEADSCOPE_SIMD=OFF runs these everywhere (the scalar side of the benchmarks).
// Shapes use the legend in kernels.hpp.
#include <cmath>
#include <cstring>
#include <limits>

#include "headscope/kernels.hpp"

namespace headscope::kernels {

void matmul_forward_reference(float* out, const float* inp, const float* weight, const float* bias, int T,
                              int K, int N) noexcept {
  // out (T, N) = inp (T, K) @ weight (K, N) + bias (N)
  for (int t = 0; t < T; t++) {
    for (int n = 0; n < N; n++) {
      float acc = bias ? bias[n] : 0.0f;
      for (int k = 0; k < K; k++) acc += inp[(std::size_t)t * K + k] * weight[(std::size_t)k * N + n];
      out[(std::size_t)t * N + n] = acc;
    }
  }
}

void matmul_transposed_forward_reference(float* out, const float* inp, const float* weight, int T, int K,
                                         int N) noexcept {
  // out (T, N) = inp (T, K) @ weight (N, K)^T
  for (int t = 0; t < T; t++)
    for (int n = 0; n < N; n++) out[(std::size_t)t * N + n] = dot_reference(inp + (std::size_t)t * K, weight + (std::size_t)n * K, K);
}

void layernorm_forward_reference(float* out, const float* inp, const float* weight, const float* bias, int T,
                                 int C, float eps) noexcept {
  for (int t = 0; t < T; t++) {
    const float* x = inp + (std::size_t)t * C;
    float mean = 0.0f;
    for (int i = 0; i < C; i++) mean += x[i];
    mean /= C;
    float var = 0.0f;
    for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= C;
    const float rstd = 1.0f / std::sqrt(var + eps);
    float* o = out + (std::size_t)t * C;
    for (int i = 0; i < C; i++) o[i] = (x[i] - mean) * rstd * weight[i] + bias[i];
  }
}

void gelu_forward_reference(float* out, const float* inp, std::size_t N) noexcept {
  const float s = std::sqrt(2.0f / 3.14159265358979323846f);
  for (std::size_t i = 0; i < N; i++) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(s * (x + 0.044715f * x * x * x)));
  }
}

void gelu_erf_forward_reference(float* out, const float* inp, std::size_t N) noexcept {
  for (std::size_t i = 0; i < N; i++) out[i] = 0.5f * inp[i] * (1.0f + std::erf(inp[i] * 0.70710678118654752f));
}

void exp_nonpositive_forward_reference(float* out, const float* inp, std::size_t N) noexcept {
  for (std::size_t i = 0; i < N; i++) out[i] = std::exp(inp[i]);
}

void softmax_forward_reference(float* row, int N) noexcept {
  float maxv = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < N; i++) maxv = std::fmax(maxv, row[i]);
  float sum = 0.0f;
  for (int i = 0; i < N; i++) {
    row[i] = std::exp(row[i] - maxv);
    sum += row[i];
  }
  for (int i = 0; i < N; i++) row[i] /= sum;
}

void add_forward_reference(float* out, const float* a, const float* b, std::size_t N) noexcept {
  for (std::size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

float dot_reference(const float* a, const float* b, int N) noexcept {
  float acc = 0.0f;
  for (int i = 0; i < N; i++) acc += a[i] * b[i];
  return acc;
}

void attention_forward_reference(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                                 int att_stride) noexcept {
  const int HS = C / NH;
  const float scale = 1.0f / std::sqrt((float)HS);
  const std::size_t row3 = 3 * (std::size_t)C;
  for (int h = 0; h < NH; h++) {
    for (int t = t_begin; t < T; t++) {
      const float* q = qkv + t * row3 + h * HS;
      float* a = att + ((std::size_t)h * att_stride + t) * att_stride;
      for (int j = 0; j <= t; j++) a[j] = dot_reference(q, qkv + j * row3 + C + h * HS, HS) * scale;
      softmax_forward_reference(a, t + 1);
      for (int j = t + 1; j < att_stride; j++) a[j] = 0.0f;  // causal mask: the future gets exactly 0
      float* y = out + (std::size_t)t * C + h * HS;
      for (int d = 0; d < HS; d++) y[d] = 0.0f;
      for (int j = 0; j <= t; j++) {
        const float* v = qkv + j * row3 + 2 * C + h * HS;
        for (int d = 0; d < HS; d++) y[d] += a[j] * v[d];
      }
    }
  }
}

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
      for (std::size_t j = 0; j < half; j++) {  // little-endian: the 32-bit word j is out[i + 2j] | out[i + 2j + 1] << 16
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

}  // namespace headscope::kernels
