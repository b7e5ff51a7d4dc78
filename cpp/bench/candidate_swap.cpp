// The *_candidate kernels that model_candidates.cpp calls: the candidates of kernels_candidates.cpp.
#include "headscope/kernels.hpp"
#include "kernels_candidates.hpp"

namespace headscope::kernels {
void attention_forward_candidate(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                                 int att_stride) noexcept {
  bench::candidates::attention_blocked(out, att, qkv, t_begin, T, C, NH, att_stride);
}
void matmul_forward_candidate(float* out, const float* inp, const PackedLinear& W, int T) noexcept {
  bench::candidates::matmul_split_k(out, inp, W, T);
}
void matmul_rows_forward_candidate(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin,
                                   int k_end, int T) noexcept {
  bench::candidates::matmul_rows_split_k(out, inp, inp_stride, W, k_begin, k_end, T);
}
}  // namespace headscope::kernels
