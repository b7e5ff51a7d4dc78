// The attention kernel that model_previous.cpp calls: the previous version in kernels_previous.cpp.
#include "kernels/kernels.hpp"
#include "kernels_previous.hpp"

namespace headscope::kernels {
// key_panels: the previous kernel kept no key cache; scores: it cannot capture a head's scores (the
// inspect option), which the benchmarks never ask for
void attention_forward_previous(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                                int att_stride, float* /*key_panels*/, float* /*scores*/, int /*scores_head*/) noexcept {
  bench::previous::attention_rows_two_pass(out, att, qkv, t_begin, T, C, NH, att_stride);
}
}  // namespace headscope::kernels
