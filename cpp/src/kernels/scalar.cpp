// The build without SIMD (HEADSCOPE_SIMD=0): every kernel of kernels.hpp forwards to its scalar reference
// (reference.hpp). This is the "scalar" subject of the benchmarks; each SIMD file holds only its SIMD half.
#include <cstdint>
#include <vector>

#include "kernels.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"

#if !HEADSCOPE_SIMD

namespace headscope::kernels {

SimdInfo simd_info() { return {"scalar", 1, false}; }
int linear_panel_width() { return 0; }  // one panel spanning all columns: the Conv1D layout unchanged
GemmBlocking gemm_blocking() { return {1, 1, 1}; }

int f16_group_width() { return 1; }  // plain order
void f16_unpack_forward(float* out, const uint16_t* packed, std::size_t n) noexcept {
  f16_unpack_forward_reference(out, packed, n);
}
void f16_unpack_weights(float* out, const uint16_t* packed, std::size_t n) noexcept {
  f16_unpack_forward_reference(out, packed, n);
}
void pack_linear_into(PackedLinear& W, const float* weight, const float* bias, int K, int N) {
  W.K = K;
  W.N = N;
  W.panel_width = N;
  W.panels_f16.clear();
  W.panels.assign(weight, weight + (std::size_t)K * N);
  if (bias)
    W.bias.assign(bias, bias + N);
  else
    W.bias.clear();
}
PackedLinear pack_linear_f16(const float* weight, const float* bias, int K, int N) {
  PackedLinear W;
  W.K = K;
  W.N = N;
  W.panel_width = N;
  W.panels_f16.resize((std::size_t)K * N);
  f16_pack(W.panels_f16.data(), weight, W.panels_f16.size());
  if (bias) W.bias.assign(bias, bias + N);
  return W;
}
// weight element (k, n) of either storage, in float32
static inline float weight_at(const PackedLinear& W, int k, int n) noexcept {
  const std::size_t i = (std::size_t)k * W.N + n;
  return W.is_f16() ? f16_to_f32_reference(W.panels_f16[i]) : W.panels[i];
}
// ref::matmul_forward's loops, reading either storage
void matmul_forward(float* out, const float* inp, const PackedLinear& W, int T) noexcept {
  if (W.is_q8()) return matmul_q8_forward(out, inp, W, T);
  if (!W.is_f16()) {
    ref::matmul_forward<float>(out, inp, W.panels.data(), W.bias.empty() ? nullptr : W.bias.data(), T, W.K, W.N);
    return;
  }
  for (int t = 0; t < T; t++)
    for (int n = 0; n < W.N; n++) {
      float acc = W.bias.empty() ? 0.0f : W.bias[n];
      for (int k = 0; k < W.K; k++) acc += inp[(std::size_t)t * W.K + k] * weight_at(W, k, n);
      out[(std::size_t)t * W.N + n] = acc;
    }
}
void matmul_rows_forward(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin, int k_end,
                         int T) noexcept {
  if (W.is_q8()) return matmul_q8_rows_forward(out, inp, inp_stride, W, k_begin, k_end, T);
  for (int t = 0; t < T; t++)
    for (int n = 0; n < W.N; n++) {
      float acc = 0.0f;
      for (int k = k_begin; k < k_end; k++) acc += inp[(std::size_t)t * inp_stride + k] * weight_at(W, k, n);
      out[(std::size_t)t * W.N + n] = acc;
    }
}
void matmul_transposed_forward(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept {
  ref::matmul_transposed_forward<float>(out, inp, weight, T, K, N);
}
std::size_t matmul_transposed_f16_scratch_floats(int K) { return (std::size_t)K; }
void matmul_transposed_f16_forward(float* out, const float* inp, const uint16_t* weight, int T, int K, int N,
                                   float* scratch) noexcept {
  for (int n = 0; n < N; n++) {
    f16_unpack_forward_reference(scratch, weight + (std::size_t)n * K, K);
    for (int t = 0; t < T; t++) out[(std::size_t)t * N + n] = ref::dot<float>(inp + (std::size_t)t * K, scratch, K);
  }
}
float dot(const float* a, const float* b, int N) noexcept { return ref::dot<float>(a, b, N); }
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int T, int C, float eps) noexcept {
  ref::layernorm_forward<float>(out, mean, rstd, inp, weight, bias, T, C, eps);
}
void gelu_forward(float* out, const float* inp, std::size_t N) noexcept { ref::gelu_forward<float>(out, inp, N); }
void gelu_erf_forward(float* out, const float* inp, std::size_t N) noexcept {
  ref::gelu_erf_forward<float>(out, inp, N);
}
void softmax_forward(float* row, int N) noexcept { ref::softmax_forward<float>(row, N); }
void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V) noexcept {
  ref::crossentropy_forward<float>(losses, probs, logits, targets, N, V);
}
void add_forward(float* out, const float* a, const float* b, std::size_t N) noexcept {
  ref::add_forward<float>(out, a, b, N);
}
void exp_nonpositive_forward(float* out, const float* inp, std::size_t N) noexcept {
  ref::exp_nonpositive_forward<float>(out, inp, N);
}

int attention_key_panel_width() { return 1; }
std::size_t attention_key_panels_floats(int, const AttentionShape&) { return 0; }
int attention_block_rows() { return 1; }
int attention_value_slice() { return 1 << 30; }  // one pass: the scalar kernel does not slice
void attention_cached_value_rows(float*, const float*, int, const AttentionShape&, int, int, int) noexcept {}
void attention_forward(float* out, float* att, const float* qkv, int t_begin, int T, const AttentionShape& shape,
                       int att_stride, float*, float* scores, int scores_head, int att_block, const AttentionPool* pool,
                       const AttentionRowStats* stats) noexcept {
  const bool pooled = pool && pool->cells, counted = stats && stats->out;
  ref::attention_forward<float>(out, att, qkv, t_begin, T, shape.NH, shape.KV, shape.HS, att_stride, scores,
                                scores_head, att_block, pooled ? pool->cells : nullptr, pooled ? pool->shift : 0,
                                pooled ? pool->n : 0, counted ? stats->out : nullptr, counted ? stats->stride : 0,
                                counted ? stats->before : nullptr, counted ? stats->first : nullptr,
                                counted ? stats->next : nullptr, pooled ? pool->tail : nullptr,
                                pooled ? pool->tail_begin : 0, pooled ? pool->tail_rows : 0);
}
void attention_pool_row(float* cells, const float* row, int n, int shift) noexcept {
  ref::attention_pool_row<float>(cells, row, n, shift);
}

// the scalar build keeps no key cache, so its model never keeps the queries apart (q_stride is always
// 0, and q_first_row too)
void attention_rows(float* att_rows, const float* qkv, int h, int r_begin, int r_end, const AttentionShape& shape,
                    int att_stride, const float*, std::size_t, int) noexcept {
  for (int t = r_begin; t < r_end; t++)
    ref::attention_row<float>(att_rows + (std::size_t)(t - r_begin) * att_stride, qkv, h, t, shape.NH, shape.KV,
                              shape.HS, att_stride);
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* ids, int B, int T, int C) noexcept {
  ref::encoder_backward<float>(dwte, dwpe, dout, ids, B, T, C);
}
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) noexcept {
  ref::layernorm_backward<float>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}
void matmul_unpacked_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int K,
                             int OC) noexcept {
  ref::matmul_forward<float>(out, inp, weight, bias, N, K, OC);
}
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int K, int OC) noexcept {
  ref::matmul_backward<float>(dinp, dweight, dbias, dout, inp, weight, N, K, OC);
}
void matmul_transposed_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                                int N, int K, int OC) noexcept {
  ref::matmul_transposed_backward<float>(dinp, dweight, dout, inp, weight, N, K, OC);
}
void matmul_packed_backward(float* dinp, const float* dout, const PackedLinear& W, int N,
                            std::vector<float>& weight) noexcept {
  weight.resize((std::size_t)W.K * W.N);
  unpack_linear(weight.data(), nullptr, W);
  ref::matmul_backward<float>(dinp, nullptr, nullptr, dout, nullptr, weight.data(), N, W.K, W.N);
}
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, const AttentionShape& shape) noexcept {
  ref::attention_backward<float>(dqkv, scratch, dout, qkv, att, B, T, shape.NH, shape.KV, shape.HS);
}
void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t N) noexcept {
  ref::gelu_backward<float>(dinp, inp, dout, N);
}
void gelu_erf_backward(float* dinp, const float* inp, const float* dout, std::size_t N) noexcept {
  ref::gelu_erf_backward<float>(dinp, inp, dout, N);
}
void residual_backward(float* da, float* db, const float* dout, std::size_t N) noexcept {
  ref::residual_backward<float>(da, db, dout, N);
}
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V) noexcept {
  ref::crossentropy_backward<float>(dlogits, probs, targets, dloss, N, V);
}
void adamw_update(float* param, float* m, float* v, const float* grad, std::size_t N, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int t) noexcept {
  ref::adamw_update<float>(param, m, v, grad, N, lr, beta1, beta2, eps, weight_decay, t);
}
void sgd_update(float* param, const float* grad, std::size_t N, float lr) noexcept {
  ref::sgd_update<float>(param, grad, N, lr);
}

void rmsnorm_forward(float* out, float* rstd, const float* x, const float* weight, int N, int C, float eps) noexcept {
  ref::rmsnorm_forward<float>(out, rstd, x, weight, N, C, eps);
}
void rope_forward(float* x, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                  const double* inv_freq) noexcept {
  ref::rope_forward<float>(x, row_stride, t_begin, T, n_heads, HS, inv_freq);
}
void swiglu_forward(float* out, const float* gate_up, int N, int F) noexcept {
  ref::swiglu_forward<float>(out, gate_up, N, F);
}
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C) noexcept {
  ref::rmsnorm_backward<float>(dinp, dweight, dout, inp, weight, rstd, N, C);
}
void rope_backward(float* dx, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                   const double* inv_freq) noexcept {
  ref::rope_backward<float>(dx, row_stride, t_begin, T, n_heads, HS, inv_freq);
}
void swiglu_backward(float* dgate_up, const float* gate_up, const float* dout, int N, int F) noexcept {
  ref::swiglu_backward<float>(dgate_up, gate_up, dout, N, F);
}

}  // namespace headscope::kernels

#endif  // !HEADSCOPE_SIMD
