// Internal to cpp/src: the build's SIMD batch type and what every xsimd kernel file shares.
//   wasm:    -msimd128 -msse4.1 -> xsimd's sse4.1 arch, which Emscripten lowers to SIMD128 (4 lanes)
//   native:  whatever the compiler targets (SSE2 by default; with -march=native the machine's widest,
//            AVX2 with FMA on the AMD EPYC the bench runs on, AVX-512 where the CPU has it)
// With HEADSCOPE_SIMD=0 nothing here is defined and the kernel files forward to their references.
#pragma once

#ifndef HEADSCOPE_SIMD
#define HEADSCOPE_SIMD 1
#endif
#ifndef HEADSCOPE_RELAXED_SIMD
#define HEADSCOPE_RELAXED_SIMD 0
#endif

#if HEADSCOPE_SIMD
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

namespace headscope::simd {

using batch = xsimd::batch<float>;
constexpr int kLanes = static_cast<int>(batch::size);
// Width of the weight panels of the GEMM and of the key panels of attention: two batches.
constexpr int kPanel = 2 * kLanes;

// a * b + c, the multiply-add of the products (GEMM, attention, dot). With relaxed SIMD in wasm it is
// one f32x4.relaxed_madd. Debian's clang 14 only knows the pre-standard builtin, whose bytes
// scripts/codegen/wasm_relaxed_opcodes.py rewrites after linking into the standard opcode (a * b + c, operands
// in this order; checked under node). Without it: xsimd's fma (one FMA natively with -march=native,
// a multiply and an add in SIMD128).
#if HEADSCOPE_RELAXED_SIMD
inline batch madd(const batch& a, const batch& b, const batch& c) noexcept {
  return batch(__builtin_wasm_fma_f32x4(a.data, b.data, c.data));
}
#else
inline batch madd(const batch& a, const batch& b, const batch& c) noexcept { return xsimd::fma(a, b, c); }
#endif

// Helpers the kernel files share. Each loop runs over whole batches, then a scalar tail.
using ibatch = xsimd::batch<int32_t>;

inline float hsum(const batch& b) noexcept { return xsimd::hadd(b); }

// F16 -> float32 (f16.cpp, and the GEMM's one-row tile on F16 panels in gemm_tile.hpp).
// Widening by integer and float ops that SIMD128 has (no F16 instructions there, and the same code
// natively): the 15 bits below the sign, shifted up by 13, are the float32 with the same mantissa
// and an exponent 112 too small (subnormal F16 values land on subnormal float32 bit patterns), so one
// exact multiply by 2^112 rebiases them; exponent 31 (inf, NaN) is forced to 255; then the sign.
// Only the low 16 bits of each int32 lane are read.
inline batch f16_low_bits_to_f32(const ibatch& h) noexcept {
  const ibatch magnitude = (h & ibatch(0x7fff)) << 13;
  const ibatch rebiased = xsimd::bitwise_cast<ibatch>(xsimd::bitwise_cast<batch>(magnitude) * batch(0x1p112f));
  const ibatch special = xsimd::select((h & ibatch(0x7c00)) == ibatch(0x7c00), ibatch(0x7f800000), ibatch(0));
  return xsimd::bitwise_cast<batch>(rebiased | special | ((h & ibatch(0x8000)) << 16));
}

// Both halves of each int32 lane (f16_pack's grouped layout: lo from the low 16 bits, hi from the
// high ones), for F16 values known to be finite: the model's weights, which the loader refuses with
// a NaN or an infinity and rounds into F16's finite range. An arithmetic shift by 3 puts the 15 bits
// below the sign 13 places lower under the sign, with three copies of the sign between them that the
// mask clears (and, for hi, the low value's bits it drops): each value times 2^-112, exactly (F16's
// normal values land on normal float32 ones, its subnormal ones on subnormal float32 patterns 2^-136
// apart, above float32's 2^-149).
// A product whose other operand the caller scaled by 2^112 (exact for |x| < 2^16:
// f16_scaled_input_fits) is then the same real number as w * x and rounds to the same float: the
// same bits as widening, two multiplies fewer per two batches, where a typed token's F16 products and
// LM head spend their time in V8.
inline void f16_finite_pair_to_scaled_f32(const ibatch& words, batch& lo, batch& hi) noexcept {
  const ibatch mask(static_cast<int32_t>(0x8fffe000u));
  lo = xsimd::bitwise_cast<batch>(((words << 16) >> 3) & mask);
  hi = xsimd::bitwise_cast<batch>((words >> 3) & mask);
}
constexpr float kF16Rebias = 0x1p112f;
// The same two values widened: the multiply by 2^112 rebiases the exponent and keeps the sign. The
// same floats as f16_low_bits_to_f32 for every finite pattern (tests/cpp/kernels/test_f16.cpp checks
// all of them), in 7 operations for two batches instead of 21. Widening was most of the time of an
// F16 matrix-vector product (a typed token's layers and LM head in wasm, where SIMD128 has no F16
// conversion: about 1 G weights/s before).
inline void f16_finite_pair_to_f32(const ibatch& words, batch& lo, batch& hi) noexcept {
  f16_finite_pair_to_scaled_f32(words, lo, hi);
  lo = lo * batch(kF16Rebias);
  hi = hi * batch(kF16Rebias);
}

// True when every x[t * stride + k] (t < T, k < K) has |x| < 2^16: scaled by 2^112 it stays finite and
// exact. False for NaN and infinities too, whose callers widen instead (the same results either way).
inline bool f16_scaled_input_fits(const float* x, int T, int K, std::size_t stride) noexcept {
  for (int t = 0; t < T; t++)
    for (int k = 0; k < K; k++)
      if (!(std::fabs(x[(std::size_t)t * stride + k]) < 0x1p16f)) return false;
  return true;
}

inline float horizontal_max(const batch& b) noexcept {
  alignas(64) float lanes[kLanes];
  b.store_aligned(lanes);
  float m = lanes[0];
  for (int i = 1; i < kLanes; i++) m = std::max(m, lanes[i]);
  return m;
}

// y (n) += a * x (n)
inline void axpy(float* y, float a, const float* x, int n) noexcept {
  const batch va(a);
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    xsimd::fma(va, batch::load_unaligned(x + i), batch::load_unaligned(y + i)).store_unaligned(y + i);
  for (; i < n; i++) y[i] += a * x[i];
}

// y (n) += x (n)
inline void accumulate(float* y, const float* x, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    (batch::load_unaligned(y + i) + batch::load_unaligned(x + i)).store_unaligned(y + i);
  for (; i < n; i++) y[i] += x[i];
}

// Element-wise kernels whose SIMD formula differs from the scalar one (tanh, erf, exp) run the tail
// through the same SIMD code on a padded batch: each element's result then depends only on its value,
// not on where the array ends, so a model row gives the same bits whether it is computed alone
// (typing) or with others (a full run) -- with 16 lanes, n * n_inner is often not a multiple of 16.
template <class F>
inline void map_batches(float* out, const float* inp, std::size_t N, F&& f) noexcept {
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes) f(batch::load_unaligned(inp + i)).store_unaligned(out + i);
  if (i < N) {
    alignas(64) float tmp[kLanes] = {};
    std::memcpy(tmp, inp + i, sizeof(float) * (N - i));
    f(batch::load_aligned(tmp)).store_aligned(tmp);
    std::memcpy(out + i, tmp, sizeof(float) * (N - i));
  }
}

}  // namespace headscope::simd
#endif
