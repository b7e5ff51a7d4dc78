// The engine's attention kernel and softmax as they were before the register-tiled port (cpp/src/kernels_simd.cpp
// at commit a2250c9), plus the candidates that were measured and not adopted. The benchmarks time them next to the current
// kernels, so the tables of bench/README.md show what each change bought, measured side by side in one run.
// Same signatures and results as the engine's kernels (bench/variants.mjs checks before timing).
#pragma once
#include "kernels/kernels.hpp"

namespace headscope::bench::previous {
// softmax_forward with xsimd::exp (the engine uses a polynomial for x <= 0)
void softmax_xsimd_exp(float* row, int N) noexcept;
// attention_forward one query row at a time with one pass over the keys per head-size batch (a single
// dependent chain each) and softmax_xsimd_exp (the engine tiles full runs and sums values in one pass)
void attention_rows_two_pass(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                             int att_stride) noexcept;
// not adopted: matmul_transposed_forward (the tied LM head) with 8 weight rows per pass reduced by haddp
// (0.73x in wasm: the 3.3 MB embedding streams from cache, bandwidth-bound)
void lm_head_8rows(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept;
// not adopted: matmul_forward / matmul_rows_forward whose 1-3 row tiles (the incremental update's single
// row) split the k loop over 4 (1 row) or 2 (2 rows) accumulator sets, as gemm_tile<1> has only 2
// dependent chains. Faster on those products, but a row's sum order then depends on how many rows are
// computed together, and the engine keeps typing (rows alone) bit-identical to a full run.
void matmul_split_k(float* out, const float* inp, const kernels::PackedLinear& W, int T) noexcept;
void matmul_rows_split_k(float* out, const float* inp, int inp_stride, const kernels::PackedLinear& W, int k_begin,
                         int k_end, int T) noexcept;
bool available();  // false in the scalar build
}  // namespace headscope::bench::previous
