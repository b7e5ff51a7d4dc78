// Candidate replacements for kernels in cpp/src/kernels_simd.cpp, written the same way (xsimd batch,
// any architecture) so that a proven one ports as is. Same signatures and results as the engine's.
#pragma once
#include "headscope/kernels.hpp"

namespace headscope::bench::candidates {
// matmul_transposed_forward (the tied LM head, out = inp @ weight^T): 8 weight rows per pass, reduced
// with haddp, so 8 independent accumulator chains instead of 4
void lm_head_8rows(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept;
// matmul_forward whose 1-3 row tiles (the incremental update's single row, and T % 4) split the k loop
// over independent accumulators: gemm_tile<1> has 2 dependent chains, latency-bound
void matmul_split_k(float* out, const float* inp, const kernels::PackedLinear& W, int T) noexcept;
void matmul_rows_split_k(float* out, const float* inp, int inp_stride, const kernels::PackedLinear& W, int k_begin,
                         int k_end, int T) noexcept;
// attention_forward with y = sum_j a[j] v_j computed for all head-size batches in one pass over j
// (HS/lanes independent accumulators) instead of one pass over j per batch (one dependent chain)
void attention_av_one_pass(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                           int att_stride) noexcept;
// attention_forward with register-tiled products: keys of a head packed into kPanel-wide panels
// (a small transpose per call), scores as 4-query x kPanel-key tiles, the weighted sum of values as
// 2-row x up-to-5-batch tiles. Rows computed per call below 8 (the incremental update) take the
// one-pass path above. Its softmax is softmax_poly. Uses a thread_local scratch for the packed keys (a port would pass scratch in).
void attention_blocked(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                       int att_stride) noexcept;
// softmax_forward with a polynomial exp (Cephes expf coefficients, the 2^n scale built with integer
// ops: no round or float->int conversion instructions) for max-subtracted inputs (x <= 0)
void softmax_poly(float* row, int N) noexcept;
bool available();  // false in the scalar build
}  // namespace headscope::bench::candidates
