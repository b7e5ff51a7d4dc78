// Earlier versions of the engine's kernels, and candidates that were measured and not adopted, kept the
// way llm.c's dev/cuda keeps its numbered kernels: standalone functions with the engine's signatures and
// results (bench/variants.mjs checks them against the engine before timing), never linked into the engine.
// The bench times each next to the engine's current kernel (cpp/src/kernels/), so bench/README.md's
// tables show what each rewrite bought, side by side in one run.
//   _v1: the engine's kernel until the register-tiled port (cpp/src/kernels_simd.cpp at commit a2250c9);
//        the engine's current kernel is the latest version.
//   _candidate_*: a variant that was measured and not adopted, with the reason beside it.
// Whole-model before/after comparisons check out the older commit and build it: bench/before-after.mjs.
#pragma once
#include "kernels/kernels.hpp"

namespace headscope::bench::dev {
// softmax_forward v1: xsimd::exp (the engine uses a polynomial for x <= 0)
void softmax_forward_v1(float* row, int N) noexcept;
// attention_forward v1: one query row at a time, one pass over the keys per head-size batch (a single
// dependent chain each), softmax_forward_v1 (the engine tiles full runs and sums values in one pass)
void attention_forward_v1(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                          int att_stride) noexcept;
// not adopted: matmul_transposed_forward (the tied LM head) with 8 weight rows per pass reduced by haddp
// (0.73x in wasm: the 3.3 MB embedding streams from cache, bandwidth-bound)
void matmul_transposed_forward_candidate_8rows(float* out, const float* inp, const float* weight, int T, int K,
                                               int N) noexcept;
// not adopted: matmul_forward / matmul_rows_forward whose 1-3 row tiles (the incremental update's single
// row) split the k loop over 4 (1 row) or 2 (2 rows) accumulator sets, as the 1-row tile has only 2
// dependent chains. Faster on those products, but a row's sum order then depends on how many rows are
// computed together, and the engine keeps typing (rows alone) bit-identical to a full run.
void matmul_forward_candidate_split_k(float* out, const float* inp, const kernels::PackedLinear& W, int T) noexcept;
void matmul_rows_forward_candidate_split_k(float* out, const float* inp, int inp_stride, const kernels::PackedLinear& W,
                                           int k_begin, int k_end, int T) noexcept;
// matmul_transposed_f16_forward v1, one input row (a typed token's LM head on F16 weights): four
// weight rows at a time (the engine now takes eight: more short row streams in flight). Same bits.
void matmul_transposed_f16_forward_v1(float* out, const float* x, const uint16_t* weight, int K, int N) noexcept;
// matmul_forward v1: the packed GEMM until the panel-group order and packed_tile (bench/README.md, "The
// GEMM's register tile"): row blocks of 128 inputs, the tile indexing A as r * stride + k. Same bits.
void matmul_forward_v1(float* out, const float* inp, const kernels::PackedLinear& W, int T) noexcept;
bool available();  // false in the scalar build
}  // namespace headscope::bench::dev
