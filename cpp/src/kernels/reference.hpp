// The scalar reference of every kernel, forward and backward, in one place: plain loops that define
// what each op computes, templated over the float type. Instantiated in float they are the algorithmic
// reference the xsimd kernels (kernels.hpp) are tested against, and what a build with HEADSCOPE_SIMD=OFF
// runs everywhere (the bench's scalar subject); in double they are what the finite-difference tests
// differentiate. Loops in llm.c's order (train_gpt2.c), outputs first, then inputs, then sizes.
// Backward kernels ACCUMULATE (+=) into their gradient outputs, so a tensor used twice (the tied wte,
// a residual stream) sums its gradients; callers zero them once per step.
// Legend: B batch, T tokens, N rows (= B*T in training), C n_embd, NH heads, HS = C/NH, K inner
//         dimension, OC output columns, V vocabulary, P positions.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace headscope::kernels::ref {

// ---- element-wise and row-wise ops ------------------------------------------------------------------
// sum_i a[i] * b[i], in order
template <typename F>
F dot(const F* a, const F* b, int N) {
  F acc = 0;
  for (int i = 0; i < N; i++) acc += a[i] * b[i];
  return acc;
}
// out (N) = a (N) + b (N); out may alias a or b
template <typename F>
void add_forward(F* out, const F* a, const F* b, std::size_t N) {
  for (std::size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}
// out (N) = exp(inp) for inp <= 0 (the xsimd kernel is a polynomial there); out may equal inp
template <typename F>
void exp_nonpositive_forward(F* out, const F* inp, std::size_t N) {
  for (std::size_t i = 0; i < N; i++) out[i] = std::exp(inp[i]);
}
// row (N) <- softmax(row), in place, max-subtracted
template <typename F>
void softmax_forward(F* row, int N) {
  F maxv = -std::numeric_limits<F>::infinity();
  for (int i = 0; i < N; i++) maxv = std::fmax(maxv, row[i]);
  F sum = 0;
  for (int i = 0; i < N; i++) {
    row[i] = std::exp(row[i] - maxv);
    sum += row[i];
  }
  for (int i = 0; i < N; i++) row[i] /= sum;
}

// ---- token and position embeddings -------------------------------------------------------------
// out (B,T,C) = wte[ids[b,t]] + wpe[t]; ids (B,T); wte (V,C); wpe (P,C) with P >= T
template <typename F>
void encoder_forward(F* out, const int* ids, const F* wte, const F* wpe, int B, int T, int C) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      F* o = out + ((std::size_t)b * T + t) * C;
      const F* we = wte + (std::size_t)ids[b * T + t] * C;
      const F* pe = wpe + (std::size_t)t * C;
      for (int i = 0; i < C; i++) o[i] = we[i] + pe[i];
    }
}
template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const int* ids, int B, int T, int C) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const F* d = dout + ((std::size_t)b * T + t) * C;
      F* dwe = dwte + (std::size_t)ids[b * T + t] * C;
      F* dpe = dwpe + (std::size_t)t * C;
      for (int i = 0; i < C; i++) {
        dwe[i] += d[i];
        dpe[i] += d[i];
      }
    }
}

// ---- LayerNorm -------------------------------------------------------------------------------------
// out (N,C), mean (N), rstd (N) = 1/sqrt(biased var + eps); inp (N,C), weight (C), bias (C).
// Two passes (mean, then squared deviations) as in PyTorch. mean and rstd may be null (inference).
template <typename F>
void layernorm_forward(F* out, F* mean, F* rstd, const F* inp, const F* weight, const F* bias, int N, int C, F eps) {
  for (int t = 0; t < N; t++) {
    const F* x = inp + (std::size_t)t * C;
    F m = 0;
    for (int i = 0; i < C; i++) m += x[i];
    m /= C;
    F v = 0;
    for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
    v /= C;
    const F s = F(1) / std::sqrt(v + eps);
    F* o = out + (std::size_t)t * C;
    for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    if (mean) mean[t] = m;
    if (rstd) rstd[t] = s;
  }
}
// dinp (N,C), dweight (C), dbias (C) += ...; dout (N,C), inp (N,C), weight (C), mean/rstd (N) from the forward
template <typename F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight, const F* mean,
                        const F* rstd, int N, int C) {
  for (int t = 0; t < N; t++) {
    const F* d = dout + (std::size_t)t * C;
    const F* x = inp + (std::size_t)t * C;
    F* dx = dinp + (std::size_t)t * C;
    const F m = mean[t], s = rstd[t];
    // two reductions: the mean of dnorm and of dnorm * norm
    F dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int i = 0; i < C; i++) {
      const F norm = (x[i] - m) * s;
      const F dnorm = weight[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int i = 0; i < C; i++) {
      const F norm = (x[i] - m) * s;
      const F dnorm = weight[i] * d[i];
      dbias[i] += d[i];
      dweight[i] += norm * d[i];
      dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

// ---- linear layers (Hugging Face Conv1D layout) ----------------------------------------------------
// out (N,OC) = inp (N,K) @ weight (K,OC) + bias (OC); bias may be null
template <typename F>
void matmul_forward(F* out, const F* inp, const F* weight, const F* bias, int N, int K, int OC) {
  for (int t = 0; t < N; t++)
    for (int o = 0; o < OC; o++) {
      F acc = bias ? bias[o] : F(0);
      for (int k = 0; k < K; k++) acc += inp[(std::size_t)t * K + k] * weight[(std::size_t)k * OC + o];
      out[(std::size_t)t * OC + o] = acc;
    }
}
// The 8-bit layer (kernels.hpp, "8-bit weights") from its integers: out (N,OC) = ((sum_k q[k][o] *
// (codes[t][k] - 64)) * scales[o]) * row_scales[t] + bias[o], q (K,OC), codes (N,K) (no padding);
// the sum is exact in int64, the rest in F
template <typename F>
void matmul_q8_forward(F* out, const int8_t* q, const float* scales, const uint8_t* codes, const float* row_scales,
                       const float* bias, int N, int K, int OC) {
  for (int t = 0; t < N; t++)
    for (int o = 0; o < OC; o++) {
      int64_t sum = 0;
      for (int k = 0; k < K; k++)
        sum += (int64_t)q[(std::size_t)k * OC + o] * ((int)codes[(std::size_t)t * K + k] - 64);
      const F y = (F)sum * (F)scales[o] * (F)row_scales[t];
      out[(std::size_t)t * OC + o] = bias ? y + (F)bias[o] : y;
    }
}
// dinp (N,K), dweight (K,OC) or null, dbias (OC) or null += ...; dout (N,OC)
template <typename F>
void matmul_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight, int N, int K,
                     int OC) {
  for (int t = 0; t < N; t++)
    for (int k = 0; k < K; k++) {
      F acc = 0;
      for (int o = 0; o < OC; o++) acc += dout[(std::size_t)t * OC + o] * weight[(std::size_t)k * OC + o];
      dinp[(std::size_t)t * K + k] += acc;
    }
  for (int k = 0; dweight && k < K; k++)
    for (int o = 0; o < OC; o++) {
      F acc = 0;
      for (int t = 0; t < N; t++) acc += inp[(std::size_t)t * K + k] * dout[(std::size_t)t * OC + o];
      dweight[(std::size_t)k * OC + o] += acc;
    }
  if (dbias)
    for (int o = 0; o < OC; o++) {
      F acc = 0;
      for (int t = 0; t < N; t++) acc += dout[(std::size_t)t * OC + o];
      dbias[o] += acc;
    }
}

// ---- tied LM head: out (N,OC) = inp (N,K) @ weight^T, weight (OC,K) -----------------------------
template <typename F>
void matmul_transposed_forward(F* out, const F* inp, const F* weight, int N, int K, int OC) {
  for (int t = 0; t < N; t++)
    for (int o = 0; o < OC; o++) {
      F acc = 0;
      for (int k = 0; k < K; k++) acc += inp[(std::size_t)t * K + k] * weight[(std::size_t)o * K + k];
      out[(std::size_t)t * OC + o] = acc;
    }
}
// dinp (N,K), dweight (OC,K) or null += ...; dout (N,OC)
template <typename F>
void matmul_transposed_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight, int N, int K,
                                int OC) {
  for (int t = 0; t < N; t++)
    for (int k = 0; k < K; k++) {
      F acc = 0;
      for (int o = 0; o < OC; o++) acc += dout[(std::size_t)t * OC + o] * weight[(std::size_t)o * K + k];
      dinp[(std::size_t)t * K + k] += acc;
    }
  for (int o = 0; dweight && o < OC; o++)
    for (int k = 0; k < K; k++) {
      F acc = 0;
      for (int t = 0; t < N; t++) acc += dout[(std::size_t)t * OC + o] * inp[(std::size_t)t * K + k];
      dweight[(std::size_t)o * K + k] += acc;
    }
}

// ---- causal attention, multi-head or grouped-query ------------------------------------------------
// One sequence, query rows [t_begin, T) against keys and values [0, T), NH query heads over KV
// key/value heads of HS (query head h reads key/value head h / (NH / KV)):
// qkv (T, (NH+2KV)HS): [q (NH heads) | k (KV heads) | v (KV heads)]; GPT-2's (T,3C) is KV = NH, HS = C/NH
// att (NH, att_stride, att_stride): softmax_j(q_t . k_j / sqrt(HS)) for j <= t, exactly 0 for t < j < att_stride
// out (T, NH*HS): per query head sum_j att[t][j] v_j, heads concatenated. Rows below t_begin are left
// untouched. A training batch calls it per sequence with t_begin 0 and att_stride T. scores, when not
// null, receives query head scores_head's scaled scores before the softmax, rows [t_begin, T), j <= t.
// One row of attention_forward's map: a (att_stride) <- row t of query head h, the scaled scores
// (copied to `scores` when not null) then their softmax over j <= t, exactly 0 after it
template <typename F>
void attention_row(F* a, const F* qkv, int h, int t, int NH, int KV, int HS, int att_stride, F* scores = nullptr) {
  const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
  const int g = h / (NH / KV);
  const F scale = F(1) / std::sqrt(F(HS));
  const F* q = qkv + t * row + h * HS;
  for (int j = 0; j <= t; j++) a[j] = dot(q, qkv + j * row + (std::size_t)(NH + g) * HS, HS) * scale;
  if (scores)
    for (int j = 0; j <= t; j++) scores[j] = a[j];
  softmax_forward(a, t + 1);
  for (int j = t + 1; j < att_stride; j++) a[j] = 0;  // causal mask: the future gets exactly 0
}
// One row into its thumbnail row: cells[j >> shift] = max(cells[j >> shift], row[j]), j < n
template <typename F>
void attention_pool_row(F* cells, const F* row, int n, int shift) {
  for (int j = 0; j < n; j++) cells[j >> shift] = std::max(cells[j >> shift], row[j]);
}
// kernels::AttentionRowStats of row t (weights a), from their definition: out (6) <- previous, first,
// self, duplicate, induction, broad (-sum a log a / log(t + 1), at most 1); NaN where a row does not count
template <typename F>
void attention_row_stats(F* out, const F* a, int t, const int32_t* before, const int32_t* first, const int32_t* next) {
  const F nan = std::numeric_limits<F>::quiet_NaN();
  if (t == 0) {
    for (int i = 0; i < 6; i++) out[i] = nan;
    return;
  }
  out[0] = a[t - 1];
  out[1] = a[0];
  out[2] = a[t];
  double dup = 0;
  for (int j = first[t]; before[t] >= 0 && j < t; j = next[j]) dup += a[j];
  out[3] = before[t] >= 0 ? (F)dup : nan;
  out[4] = before[t] >= 0 && before[t] + 1 < t ? a[before[t] + 1] : nan;
  double h = 0;
  for (int j = 0; j <= t; j++)
    if (a[j] > 0) h -= (double)a[j] * std::log((double)a[j]);
  out[5] = (F)std::min(1.0, h / std::log(t + 1.0));
}
// att_block > 0: att holds att_block rows per head, (NH, att_block, att_stride), row t at
// (t - t_begin) % att_block, and no map is kept (kernels.hpp's attention_forward). pool (NH, pool_n,
// pool_n) or null: each row computed raised into its head's thumbnail, and rows from tail_begin pooled
// alone into pool_tail (NH, tail_rows, pool_n) when given (kernels::AttentionPool).
template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int t_begin, int T, int NH, int KV, int HS, int att_stride,
                       F* scores = nullptr, int scores_head = -1, int att_block = 0, F* pool = nullptr,
                       int pool_shift = 0, int pool_n = 0, F* stats = nullptr, int stats_stride = 0,
                       const int32_t* before = nullptr, const int32_t* first = nullptr, const int32_t* next = nullptr,
                       F* pool_tail = nullptr, int tail_begin = 0, int tail_rows = 0) {
  const std::size_t row = (std::size_t)(NH + 2 * KV) * HS, out_row = (std::size_t)NH * HS;
  const int group = NH / KV;
  for (int h = 0; h < NH; h++)
    for (int t = t_begin; t < T; t++) {
      const int g = h / group;
      F* a = att_block ? att + ((std::size_t)h * att_block + (t - t_begin) % att_block) * att_stride
                       : att + ((std::size_t)h * att_stride + t) * att_stride;
      attention_row(a, qkv, h, t, NH, KV, HS, att_stride,
                    scores && h == scores_head ? scores + (std::size_t)t * att_stride : nullptr);
      if (pool) attention_pool_row(pool + ((std::size_t)h * pool_n + (t >> pool_shift)) * pool_n, a, t + 1, pool_shift);
      if (pool && pool_tail && t >= tail_begin &&
          t - tail_begin < tail_rows) {  // the row alone (kernels::AttentionPool)
        F* own = pool_tail + ((std::size_t)h * tail_rows + (t - tail_begin)) * pool_n;
        std::fill(own, own + pool_n, F(0));
        attention_pool_row(own, a, t + 1, pool_shift);
      }
      if (stats) attention_row_stats(stats + ((std::size_t)h * stats_stride + t) * 6, a, t, before, first, next);
      F* o = out + (std::size_t)t * out_row + h * HS;
      for (int i = 0; i < HS; i++) o[i] = 0;
      for (int j = 0; j <= t; j++) {
        const F* vj = qkv + j * row + (std::size_t)(NH + KV + g) * HS;
        for (int i = 0; i < HS; i++) o[i] += a[j] * vj[i];
      }
    }
}
// GPT-2's multi-head case: qkv (T,3C), out (T,C)
template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int t_begin, int T, int C, int NH, int att_stride,
                       F* scores = nullptr, int scores_head = -1) {
  attention_forward<F>(out, att, qkv, t_begin, T, NH, NH, C / NH, att_stride, scores, scores_head);
}

// ---- the Llama family's row ops (kernels.hpp says what each computes) --------------------------------
template <typename F>
void rmsnorm_forward(F* out, F* rstd, const F* x, const F* weight, int N, int C, F eps) {
  for (int t = 0; t < N; t++) {
    const F* xr = x + (std::size_t)t * C;
    F ss = 0;
    for (int i = 0; i < C; i++) ss += xr[i] * xr[i];
    const F r = F(1) / std::sqrt(ss / F(C) + eps);
    if (rstd) rstd[t] = r;
    F* o = out + (std::size_t)t * C;
    for (int i = 0; i < C; i++) o[i] = xr[i] * r * weight[i];
  }
}

// sign -1: each pair turned back by its angle (rope_backward)
template <typename F>
void rope_forward(F* x, std::size_t row_stride, int t_begin, int T, int n_heads, int HS, const double* inv_freq,
                  F sign = F(1)) {
  const int half = HS / 2;
  for (int t = t_begin; t < T; t++)
    for (int i = 0; i < half; i++) {
      const double angle = (double)t * inv_freq[i];
      const F c = F(std::cos(angle)), s = sign * F(std::sin(angle));
      for (int h = 0; h < n_heads; h++) {
        F* v = x + (std::size_t)t * row_stride + (std::size_t)h * HS;
        const F a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
    }
}

template <typename F>
void swiglu_forward(F* out, const F* gate_up, int N, int Fw) {
  for (int t = 0; t < N; t++)
    for (int i = 0; i < Fw; i++) {
      const F g = gate_up[(std::size_t)t * 2 * Fw + i], u = gate_up[(std::size_t)t * 2 * Fw + Fw + i];
      out[(std::size_t)t * Fw + i] = g / (F(1) + std::exp(-g)) * u;
    }
}

// RMSNorm's backward: dinp (N, C), dweight (C) += ...; dout (N, C); inp, weight and rstd (N) from the
// forward. With n = w * dout: dinp_i = rstd (n_i - rstd^2 x_i (sum_j n_j x_j) / C), dweight_i = dout_i x_i rstd.
template <typename F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight, const F* rstd, int N, int C) {
  for (int t = 0; t < N; t++) {
    const F* x = inp + (std::size_t)t * C;
    const F* d = dout + (std::size_t)t * C;
    F* dx = dinp + (std::size_t)t * C;
    const F r = rstd[t];
    F dot_nx = 0;
    for (int i = 0; i < C; i++) dot_nx += weight[i] * d[i] * x[i];
    const F c = r * r * dot_nx / F(C);
    for (int i = 0; i < C; i++) {
      dx[i] += r * (weight[i] * d[i] - c * x[i]);
      dweight[i] += d[i] * x[i] * r;
    }
  }
}

// The rotation's backward, in place on the gradients dx laid out as rope_forward's x: each pair is
// turned back by its angle (the transpose of a rotation is its inverse), so
//   (d_i, d_{i+HS/2}) <- (d_i cos + d_{i+HS/2} sin, d_{i+HS/2} cos - d_i sin)
template <typename F>
void rope_backward(F* dx, std::size_t row_stride, int t_begin, int T, int n_heads, int HS, const double* inv_freq) {
  rope_forward<F>(dx, row_stride, t_begin, T, n_heads, HS, inv_freq, F(-1));
}

// SwiGLU's backward: dgate_up (N, 2F) += ...; gate_up (N, 2F) from the forward, dout (N, F).
// silu'(g) = sigma(g) (1 + g (1 - sigma(g))): d gate = dout u silu'(g), d up = dout silu(g).
template <typename F>
void swiglu_backward(F* dgate_up, const F* gate_up, const F* dout, int N, int Fw) {
  for (int t = 0; t < N; t++)
    for (int i = 0; i < Fw; i++) {
      const std::size_t gi = (std::size_t)t * 2 * Fw + i, ui = gi + Fw;
      const F g = gate_up[gi], u = gate_up[ui], d = dout[(std::size_t)t * Fw + i];
      const F sg = F(1) / (F(1) + std::exp(-g));
      dgate_up[gi] += d * u * sg * (F(1) + g * (F(1) - sg));
      dgate_up[ui] += d * g * sg;
    }
}

// Backward of a batch of B sequences of T tokens (att (B,NH,T,T) as the training forward keeps it), with
// NH query heads over KV key/value heads of size HS (query head h reads key/value head h / (NH / KV)):
// dqkv (B,T,(NH+2KV)HS) += ...; dout (B,T,NH HS); qkv and att from the forward; scratch (T) floats,
// overwritten. A key/value head's gradient sums what each of its query heads sends back.
template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B, int T, int NH, int KV,
                        int HS) {
  const std::size_t C3 = (std::size_t)(NH + 2 * KV) * HS, C = (std::size_t)NH * HS;
  const int group = NH / KV;
  const F scale = F(1) / std::sqrt(F(HS));
  F* datt = scratch;
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int t = 0; t < T; t++) {
        const std::size_t kcol = (std::size_t)(NH + h / group) * HS, vcol = (std::size_t)(NH + KV + h / group) * HS;
        const F* a = att + (((std::size_t)b * NH + h) * T + t) * T;
        const F* d = dout + ((std::size_t)b * T + t) * C + h * HS;
        // through out_t = sum_j a_j v_j
        for (int j = 0; j <= t; j++) {
          const F* vj = qkv + ((std::size_t)b * T + j) * C3 + vcol;
          F* dvj = dqkv + ((std::size_t)b * T + j) * C3 + vcol;
          F s = 0;
          for (int i = 0; i < HS; i++) {
            s += d[i] * vj[i];
            dvj[i] += a[j] * d[i];
          }
          datt[j] = s;
        }
        // through the softmax: dpre_j = a_j (datt_j - sum_k a_k datt_k)
        F dot = 0;
        for (int j = 0; j <= t; j++) dot += a[j] * datt[j];
        // through pre_j = q_t . k_j * scale
        const F* q = qkv + ((std::size_t)b * T + t) * C3 + h * HS;
        F* dq = dqkv + ((std::size_t)b * T + t) * C3 + h * HS;
        for (int j = 0; j <= t; j++) {
          const F dpre = a[j] * (datt[j] - dot) * scale;
          const F* kj = qkv + ((std::size_t)b * T + j) * C3 + kcol;
          F* dkj = dqkv + ((std::size_t)b * T + j) * C3 + kcol;
          for (int i = 0; i < HS; i++) {
            dq[i] += dpre * kj[i];
            dkj[i] += dpre * q[i];
          }
        }
      }
}
// GPT-2's multi-head case: dqkv (B,T,3C), dout (B,T,C)
template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B, int T, int C, int NH) {
  attention_backward<F>(dqkv, scratch, dout, qkv, att, B, T, NH, NH, C / NH);
}

// ---- GELU, tanh form (gelu_new) ------------------------------------------------------------------------
template <typename F>
void gelu_forward(F* out, const F* inp, std::size_t N) {
  const F s = std::sqrt(F(2) / F(M_PI));
  for (std::size_t i = 0; i < N; i++) {
    const F x = inp[i];
    out[i] = F(0.5) * x * (F(1) + std::tanh(s * (x + F(0.044715) * x * x * x)));
  }
}
// dinp (N) += gelu'(inp) * dout
template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, std::size_t N) {
  const F s = std::sqrt(F(2) / F(M_PI));
  for (std::size_t i = 0; i < N; i++) {
    const F x = inp[i];
    const F u = s * (x + F(0.044715) * x * x * x);
    const F th = std::tanh(u);
    const F sech2 = F(1) - th * th;
    const F grad = F(0.5) * (F(1) + th) + F(0.5) * x * sech2 * s * (F(1) + F(3) * F(0.044715) * x * x);
    dinp[i] += grad * dout[i];
  }
}

// ---- GELU, exact form (activation_function "gelu"): 0.5 x (1 + erf(x / sqrt 2)) ----------------------
template <typename F>
void gelu_erf_forward(F* out, const F* inp, std::size_t N) {
  const F inv_sqrt2 = F(0.70710678118654752440);
  for (std::size_t i = 0; i < N; i++) out[i] = F(0.5) * inp[i] * (F(1) + std::erf(inp[i] * inv_sqrt2));
}
// dinp (N) += gelu'(inp) * dout, gelu'(x) = Phi(x) + x phi(x)
template <typename F>
void gelu_erf_backward(F* dinp, const F* inp, const F* dout, std::size_t N) {
  const F inv_sqrt2 = F(0.70710678118654752440), inv_sqrt_2pi = F(1) / std::sqrt(F(2) * F(M_PI));
  for (std::size_t i = 0; i < N; i++) {
    const F x = inp[i];
    const F grad = F(0.5) * (F(1) + std::erf(x * inv_sqrt2)) + x * inv_sqrt_2pi * std::exp(F(-0.5) * x * x);
    dinp[i] += grad * dout[i];
  }
}

// ---- residual: out = a + b ----------------------------------------------------------------------------
// da (N), db (N) += dout (N)
template <typename F>
void residual_backward(F* da, F* db, const F* dout, std::size_t N) {
  for (std::size_t i = 0; i < N; i++) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

// ---- softmax + mean cross-entropy ---------------------------------------------------------------------
// probs (N,V) = softmax(logits) per row; losses (N) = -log probs[t][targets[t]]
template <typename F>
void crossentropy_forward(F* losses, F* probs, const F* logits, const int* targets, int N, int V) {
  for (int t = 0; t < N; t++) {
    const F* l = logits + (std::size_t)t * V;
    F* p = probs + (std::size_t)t * V;
    F maxv = -INFINITY;
    for (int v = 0; v < V; v++) maxv = l[v] > maxv ? l[v] : maxv;
    F sum = 0;
    for (int v = 0; v < V; v++) {
      p[v] = std::exp(l[v] - maxv);
      sum += p[v];
    }
    for (int v = 0; v < V; v++) p[v] /= sum;
    // log-sum-exp form: exact where probs[target] would underflow
    losses[t] = std::log(sum) + maxv - l[targets[t]];
  }
}
// dlogits (N,V) += (probs - onehot(targets)) * dloss, where dloss is d(total)/d(losses[t]) (1/N for the mean)
template <typename F>
void crossentropy_backward(F* dlogits, const F* probs, const int* targets, F dloss, int N, int V) {
  for (int t = 0; t < N; t++) {
    const F* p = probs + (std::size_t)t * V;
    F* d = dlogits + (std::size_t)t * V;
    for (int v = 0; v < V; v++) d[v] += (p[v] - (v == targets[t] ? F(1) : F(0))) * dloss;
  }
}

// ---- optimizers --------------------------------------------------------------------------------------
// AdamW as torch.optim.AdamW: decoupled weight decay, then Adam with bias correction; step t >= 1.
template <typename F>
void adamw_update(F* param, F* m, F* v, const F* grad, std::size_t N, F lr, F beta1, F beta2, F eps, F weight_decay,
                  int t) {
  const F c1 = F(1) - std::pow(beta1, F(t)), c2 = F(1) - std::pow(beta2, F(t));
  for (std::size_t i = 0; i < N; i++) {
    const F g = grad[i];
    m[i] = beta1 * m[i] + (F(1) - beta1) * g;
    v[i] = beta2 * v[i] + (F(1) - beta2) * g * g;
    const F mhat = m[i] / c1, vhat = v[i] / c2;
    param[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * param[i]);
  }
}
// plain SGD: param -= lr * grad
template <typename F>
void sgd_update(F* param, const F* grad, std::size_t N, F lr) {
  for (std::size_t i = 0; i < N; i++) param[i] -= lr * grad[i];
}
// sum of grad^2, accumulated in double (the global norm for clipping)
template <typename F>
double sum_squares(const F* grad, std::size_t N) {
  double s = 0;
  for (std::size_t i = 0; i < N; i++) s += (double)grad[i] * grad[i];
  return s;
}

}  // namespace headscope::kernels::ref
