// Shared by the benchmark embind module (bench_embind.cpp) and the native benchmark (bench_native.cpp):
// the kernels at the model's shapes on deterministic random data, so both subjects time exactly the
// same calls. Nothing here is part of the engine.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/kernels.hpp"
#include "dev/kernel_versions.hpp"
#include "kernels/reference.hpp"

namespace headscope::bench {

inline std::vector<float> random_floats(std::size_t n, uint32_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = scale * ((float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f);
  }
  return v;
}

// y (M, N) = x (M, K) @ W (K, N) + b through the engine's packed GEMM (matmul_forward).
struct GemmCase {
  int K, N, max_M;
  kernels::PackedLinear W;
  std::vector<float> weight, bias, inp, out;
  GemmCase(int K_, int N_, int max_M_) : K(K_), N(N_), max_M(max_M_) {
    weight = random_floats((std::size_t)K * N, 1, 0.05f);
    bias = random_floats(N, 2, 0.1f);
    inp = random_floats((std::size_t)max_M * K, 3);
    out.assign((std::size_t)max_M * N, 0.0f);
    W = kernels::pack_linear(weight.data(), bias.data(), K, N);
  }
  void run(int M) { kernels::matmul_forward(out.data(), inp.data(), W, M); }
  void run_split_k(int M) { dev::matmul_forward_candidate_split_k(out.data(), inp.data(), W, M); }
  // W_O as the model does it: one head's rows at a time (NH products with K = HS), no bias
  void run_heads_split_k(int M, int NH) {
    const int HS = K / NH;
    for (int h = 0; h < NH; h++)
      dev::matmul_rows_forward_candidate_split_k(out.data(), inp.data(), K, W, h * HS, (h + 1) * HS, M);
  }
  void run_heads(int M, int NH) {
    const int HS = K / NH;
    for (int h = 0; h < NH; h++) kernels::matmul_rows_forward(out.data(), inp.data(), K, W, h * HS, (h + 1) * HS, M);
  }
};

// attention_forward over a (T, 3C) qkv buffer with the model's C and NH, att stride = n_positions.
struct AttentionCase {
  int C, NH, cap;
  std::vector<float> qkv, att, out, key_panels;
  AttentionCase(int C_, int NH_, int cap_) : C(C_), NH(NH_), cap(cap_) {
    qkv = random_floats((std::size_t)cap * 3 * C, 4);
    att.assign((std::size_t)NH * cap * cap, 0.0f);
    out.assign((std::size_t)cap * C, 0.0f);
    key_panels.assign(kernels::attention_key_panels_floats(cap, C, NH), 0.0f);
  }
  void run(int T, int t_begin) {
    kernels::attention_forward(out.data(), att.data(), qkv.data(), t_begin, T, C, NH, cap, key_panels.data());
  }
  void run_previous(int T, int t_begin) {
    dev::attention_forward_v1(out.data(), att.data(), qkv.data(), t_begin, T, C, NH, cap);
  }
  void run_reference(int T, int t_begin) {
    kernels::ref::attention_forward<float>(out.data(), att.data(), qkv.data(), t_begin, T, C, NH, cap);
  }
};

// All causal softmax rows of one layer at T (NH * T rows of lengths 1..T), as attention does them.
struct SoftmaxCase {
  int NH, T;
  std::vector<float> src, rows;
  SoftmaxCase(int NH_, int T_) : NH(NH_), T(T_) {
    src = random_floats((std::size_t)NH * T * T, 7, 4.0f);
    rows = src;
  }
  template <class F>
  void each(F&& f) {
    std::copy(src.begin(), src.end(), rows.begin());
    for (int h = 0; h < NH; h++)
      for (int t = 0; t < T; t++) f(rows.data() + ((std::size_t)h * T + t) * T, t + 1);
  }
  void run() {
    each([](float* r, int n) { kernels::softmax_forward(r, n); });
  }
  void run_previous() {
    each([](float* r, int n) { dev::softmax_forward_v1(r, n); });
  }
};

// The tied LM head for the last position: logits (V) = x (C) @ wte^T, wte (V, C).
struct LmHeadCase {
  int C, V;
  std::vector<float> wte, x, out, scratch;
  std::vector<uint16_t> wte_f16;
  LmHeadCase(int C_, int V_, float scale = 0.05f) : C(C_), V(V_) {
    wte = random_floats((std::size_t)V * C, 5, scale);
    x = random_floats(C, 6);
    out.assign(V, 0.0f);
    wte_f16.resize(wte.size());
    for (int v = 0; v < V; v++) kernels::f16_pack(&wte_f16[(std::size_t)v * C], &wte[(std::size_t)v * C], C);
    scratch.resize(kernels::matmul_transposed_f16_scratch_floats(C));
  }
  void run() { kernels::matmul_transposed_forward(out.data(), x.data(), wte.data(), 1, C, V); }
  // the same product on the weights kept F16 (a typed token's LM head on an F16 checkpoint)
  void run_f16() {
    kernels::matmul_transposed_f16_forward(out.data(), x.data(), wte_f16.data(), 1, C, V, scratch.data());
  }
  void run_f16_v1() { dev::matmul_transposed_f16_forward_v1(out.data(), x.data(), wte_f16.data(), C, V); }
  void run_8rows() { dev::matmul_transposed_forward_candidate_8rows(out.data(), x.data(), wte.data(), 1, C, V); }
};

}  // namespace headscope::bench
