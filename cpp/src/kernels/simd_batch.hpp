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
#include <xsimd/xsimd.hpp>

namespace headscope::simd {

using batch = xsimd::batch<float>;
constexpr int kLanes = static_cast<int>(batch::size);
// Width of the weight panels of the GEMM and of the key panels of attention: two batches.
constexpr int kPanel = 2 * kLanes;

// a * b + c, the multiply-add of the products (GEMM, attention, dot). With relaxed SIMD in wasm it is
// one f32x4.relaxed_madd. Debian's clang 14 only knows the pre-standard builtin, whose bytes
// scripts/wasm_relaxed_madd.py rewrites after linking into the standard opcode (a * b + c, operands
// in this order; checked under node). Without it: xsimd's fma (one FMA natively with -march=native,
// a multiply and an add in SIMD128).
#if HEADSCOPE_RELAXED_SIMD
inline batch madd(const batch& a, const batch& b, const batch& c) noexcept {
  return batch(__builtin_wasm_fma_f32x4(a.data, b.data, c.data));
}
#else
inline batch madd(const batch& a, const batch& b, const batch& c) noexcept { return xsimd::fma(a, b, c); }
#endif

}  // namespace headscope::simd
#endif
