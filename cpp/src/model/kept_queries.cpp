// A views-only model's queries (model_impl.hpp, queries_f16_): kept in F16 at a power-of-two scale
// per row as the forward pass leaves each layer, and widened again for the rows a view recomputes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernels.hpp"
#include "model/model_impl.hpp"

namespace headscope {

const float* Model::Impl::queries(int layer, int r_begin, int r_end, std::vector<float>& scratch,
                                  std::size_t* row_stride, int* first_row) const {
  const std::size_t cap = cap_, QW = config_.q_width();
  if (!views_only_) {  // from row 0: the scalar build's attention_rows reads the keys beside them
    *row_stride = config_.qkv_width();
    *first_row = 0;
    return &qkv_[(std::size_t)layer * cap * config_.qkv_width()];
  }
  *row_stride = QW;
  *first_row = r_begin;
  scratch.resize((std::size_t)(r_end - r_begin) * QW);
  for (int t = r_begin; t < r_end; t++) {
    float* row = scratch.data() + (std::size_t)(t - r_begin) * QW;
    const std::size_t at = (std::size_t)layer * cap + t;
    kernels::f16_unpack_forward(row, &queries_f16_[at * QW], QW);
    const float s = query_scales_[at];  // a power of two: the product is exact
    for (std::size_t i = 0; i < QW; i++) row[i] *= s;
  }
  return scratch.data();
}

// one row of queries into their F16 (queries_f16_'s rule); `scaled` holds q_width floats
static void keep_query_row(uint16_t* out, float* scale_out, const float* q, std::size_t QW, float* scaled) {
  float most = 0.0f;
  for (std::size_t i = 0; i < QW; i++) most = std::max(most, std::fabs(q[i]));
  int e = 0;
  // a row of zeros, or one with an infinity or NaN (kept as F16 keeps them), is stored unscaled
  const float s = most > 0.0f && std::isfinite(most) ? (std::frexp(most, &e), std::ldexp(1.0f, e)) : 1.0f;
  for (std::size_t i = 0; i < QW; i++) scaled[i] = q[i] / s;  // exact: s is a power of two
  kernels::f16_pack(out, scaled, QW);
  *scale_out = s;
}

void Model::Impl::keep_queries(int layer, int t0, int t1) {
  const std::size_t cap = cap_, W = config_.qkv_width(), QW = config_.q_width();
  std::vector<float> scaled(QW);
  for (int t = t0; t < t1; t++)
    keep_query_row(&queries_f16_[((std::size_t)layer * cap + t) * QW], &query_scales_[(std::size_t)layer * cap + t],
                   &qkv_[(std::size_t)t * W], QW, scaled.data());
}

}  // namespace headscope
