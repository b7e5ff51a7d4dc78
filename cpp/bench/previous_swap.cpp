// The attention kernel that model_previous.cpp calls: the previous version in kernels_previous.cpp.
#include "kernels/kernels.hpp"
#include "kernels_previous.hpp"

namespace headscope::kernels {
void attention_forward_previous(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                                int att_stride, float* /*scratch: the previous kernel had none*/) noexcept {
  bench::previous::attention_rows_two_pass(out, att, qkv, t_begin, T, C, NH, att_stride);
}
}  // namespace headscope::kernels
