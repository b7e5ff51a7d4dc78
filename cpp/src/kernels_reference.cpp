// Scalar reference kernels: the algorithmic definition of each op, kept simple on purpose.
// The xsimd kernels in kernels_simd.cpp must agree with these (tests/cpp/test_kernels.cpp), and a
// build with HEADSCOPE_SIMD=OFF runs these everywhere (the scalar side of the benchmarks).
// Shapes use the legend in kernels.hpp.
#include <cmath>
#include <limits>

#include "headscope/kernels.hpp"

namespace headscope::kernels {

void matmul_forward_reference(float* out, const float* inp, const float* weight, const float* bias, int T,
                              int K, int N) noexcept {
  // out (T, N) = inp (T, K) @ weight (K, N) + bias (N)
  for (int t = 0; t < T; t++) {
    for (int n = 0; n < N; n++) {
      float acc = bias ? bias[n] : 0.0f;
      for (int k = 0; k < K; k++) acc += inp[(std::size_t)t * K + k] * weight[(std::size_t)k * N + n];
      out[(std::size_t)t * N + n] = acc;
    }
  }
}

void matmul_transposed_forward_reference(float* out, const float* inp, const float* weight, int T, int K,
                                         int N) noexcept {
  // out (T, N) = inp (T, K) @ weight (N, K)^T
  for (int t = 0; t < T; t++)
    for (int n = 0; n < N; n++) out[(std::size_t)t * N + n] = dot_reference(inp + (std::size_t)t * K, weight + (std::size_t)n * K, K);
}

void layernorm_forward_reference(float* out, const float* inp, const float* weight, const float* bias, int T,
                                 int C, float eps) noexcept {
  for (int t = 0; t < T; t++) {
    const float* x = inp + (std::size_t)t * C;
    float mean = 0.0f;
    for (int i = 0; i < C; i++) mean += x[i];
    mean /= C;
    float var = 0.0f;
    for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= C;
    const float rstd = 1.0f / std::sqrt(var + eps);
    float* o = out + (std::size_t)t * C;
    for (int i = 0; i < C; i++) o[i] = (x[i] - mean) * rstd * weight[i] + bias[i];
  }
}

void gelu_forward_reference(float* out, const float* inp, std::size_t N) noexcept {
  const float s = std::sqrt(2.0f / 3.14159265358979323846f);
  for (std::size_t i = 0; i < N; i++) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(s * (x + 0.044715f * x * x * x)));
  }
}

void gelu_erf_forward_reference(float* out, const float* inp, std::size_t N) noexcept {
  for (std::size_t i = 0; i < N; i++) out[i] = 0.5f * inp[i] * (1.0f + std::erf(inp[i] * 0.70710678118654752f));
}

void exp_nonpositive_forward_reference(float* out, const float* inp, std::size_t N) noexcept {
  for (std::size_t i = 0; i < N; i++) out[i] = std::exp(inp[i]);
}

void softmax_forward_reference(float* row, int N) noexcept {
  float maxv = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < N; i++) maxv = std::fmax(maxv, row[i]);
  float sum = 0.0f;
  for (int i = 0; i < N; i++) {
    row[i] = std::exp(row[i] - maxv);
    sum += row[i];
  }
  for (int i = 0; i < N; i++) row[i] /= sum;
}

void add_forward_reference(float* out, const float* a, const float* b, std::size_t N) noexcept {
  for (std::size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

float dot_reference(const float* a, const float* b, int N) noexcept {
  float acc = 0.0f;
  for (int i = 0; i < N; i++) acc += a[i] * b[i];
  return acc;
}

void attention_forward_reference(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                                 int att_stride) noexcept {
  const int HS = C / NH;
  const float scale = 1.0f / std::sqrt((float)HS);
  const std::size_t row3 = 3 * (std::size_t)C;
  for (int h = 0; h < NH; h++) {
    for (int t = t_begin; t < T; t++) {
      const float* q = qkv + t * row3 + h * HS;
      float* a = att + ((std::size_t)h * att_stride + t) * att_stride;
      for (int j = 0; j <= t; j++) a[j] = dot_reference(q, qkv + j * row3 + C + h * HS, HS) * scale;
      softmax_forward_reference(a, t + 1);
      for (int j = t + 1; j < att_stride; j++) a[j] = 0.0f;  // causal mask: the future gets exactly 0
      float* y = out + (std::size_t)t * C + h * HS;
      for (int d = 0; d < HS; d++) y[d] = 0.0f;
      for (int j = 0; j <= t; j++) {
        const float* v = qkv + j * row3 + 2 * C + h * HS;
        for (int d = 0; d < HS; d++) y[d] += a[j] * v[d];
      }
    }
  }
}

}  // namespace headscope::kernels
