// The Trainer's forward and backward passes, GPT-2's and the Llama family's: the model's forward
// (block_forward, forward.hpp, the code Model::run runs) on a batch, keeping what the backward needs,
// then the backward in llm.c's order. Shapes use the legend in train.hpp.
#include <algorithm>
#include <cmath>

#include "train/trainer_impl.hpp"
#include "headscope/error.hpp"
#include "kernels/kernels.hpp"

namespace headscope::train {

namespace k = headscope::kernels;

// ---- where the passes read the weights: the trainer's parameters, or a borrowed model's ------------

Trainer::Reads Trainer::reads() const {
  Reads r;
  r.blocks.resize(layers_.size());
  if (borrowing()) {
    const Model::Impl& m = *packed_->model;
    const auto at = [](const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); };
    r.wpe = at(m.wpe_);
    r.lnfw = at(m.final_norm_weight_);
    r.lnfb = at(m.final_norm_bias_);
    for (std::size_t l = 0; l < layers_.size(); l++) {
      const BlockWeights& b = m.blocks_[l];
      r.blocks[l] = {at(b.norm1_weight), at(b.norm1_bias), at(b.norm2_weight),
                     at(b.norm2_bias),   at(b.q_norm),     at(b.k_norm)};
    }
    return r;
  }
  const float* P = params_.data();
  r.wpe = P + wpe_;
  r.lnfw = P + lnfw_;
  r.lnfb = P + lnfb_;
  for (std::size_t l = 0; l < layers_.size(); l++) {
    const Layer& w = layers_[l];
    r.blocks[l] = {P + w.ln1w, P + w.ln1b, P + w.ln2w, P + w.ln2b, P + w.qnorm, P + w.knorm};
  }
  return r;
}

// GPT-2 adds the position's row of wpe; the Llama family rotates q and k inside the block instead
void Trainer::embed(int N, int T, const float* wpe) {
  const int C = config_.n_embd;
  for (int i = 0; i < N; i++) {
    float* out = &encoded_[(std::size_t)i * C];
    const std::size_t row = (std::size_t)ids_[i] * C;
    const float* tok = out;
    if (!borrowing())
      tok = params_.data() + wte_ + row;
    else if (const Model::Impl& m = *packed_->model; m.wte_f16_.empty())
      tok = m.wte_.data() + row;
    else  // widened exactly, as load() widens it
      k::f16_unpack_forward(out, &m.wte_f16_[row], C);
    if (!llama())
      k::add_forward(out, tok, wpe + (std::size_t)(i % T) * C, C);
    else if (tok != out)
      std::copy(tok, tok + C, out);
  }
}

void Trainer::head_forward(int N) {
  const int C = config_.n_embd, V = config_.vocab_size;
  if (!borrowing()) {
    k::matmul_transposed_forward(logits_.data(), lnf_.data(), params_.data() + head_, N, C, V);
    return;
  }
  const Packed::Head head = packed_->head();
  if (head.f32) {
    k::matmul_transposed_forward(logits_.data(), lnf_.data(), head.f32, N, C, V);
    return;
  }
  packed_->head_rows.resize(k::matmul_transposed_f16_scratch_floats(C));
  k::matmul_transposed_f16_forward(logits_.data(), lnf_.data(), head.f16, N, C, V, packed_->head_rows.data());
}

void Trainer::head_backward(int N, bool weights) {
  const int C = config_.n_embd, V = config_.vocab_size;
  if (!borrowing()) {
    k::matmul_transposed_backward(dlnf_.data(), weights ? grads_.data() + head_ : nullptr, dlogits_.data(), lnf_.data(),
                                  params_.data() + head_, N, C, V);
    return;
  }
  const Packed::Head head = packed_->head();
  if (head.f32) {
    k::matmul_transposed_backward(dlnf_.data(), nullptr, dlogits_.data(), lnf_.data(), head.f32, N, C, V);
    return;
  }
  // F16: a block of the vocabulary's rows at a time, widened, with the same columns of dlogits (the sum
  // over the vocabulary then runs block by block: the same terms, rounded in another order)
  constexpr int kRows = 256;
  std::vector<float>& rows = packed_->head_rows;
  std::vector<float>& dblock = packed_->head_dlogits;
  rows.resize((std::size_t)kRows * C);
  dblock.resize((std::size_t)N * kRows);
  for (int v0 = 0; v0 < V; v0 += kRows) {
    const int n = std::min(kRows, V - v0);
    for (int v = 0; v < n; v++)
      k::f16_unpack_forward(&rows[(std::size_t)v * C], head.f16 + (std::size_t)(v0 + v) * C, C);
    for (int i = 0; i < N; i++) std::copy_n(&dlogits_[(std::size_t)i * V + v0], n, &dblock[(std::size_t)i * n]);
    k::matmul_transposed_backward(dlnf_.data(), nullptr, dblock.data(), lnf_.data(), rows.data(), N, C, n);
  }
}

void Trainer::linear_backward(int l, Linear which, float* dinp, const float* dout, const float* inp, int N,
                              bool weights) {
  if (borrowing()) {  // no weight gradients here: ensure_grads() refused them
    const BlockWeights& b = packed_->model->blocks_[l];
    const k::PackedLinear& W = which == Linear::attn_in    ? b.attn_in
                               : which == Linear::attn_out ? b.attn_out
                               : which == Linear::mlp_in   ? b.mlp_in
                                                           : b.mlp_out;
    k::matmul_packed_backward(dinp, dout, W, N, packed_->transposed);
    return;
  }
  const Layer& w = layers_[l];
  const int C = config_.n_embd, H = config_.n_inner;
  struct Shape {
    int in, out;
    std::size_t weight, bias;
  };
  const Shape s = which == Linear::attn_in    ? Shape{C, config_.qkv_width(), w.qkvw, w.qkvb}
                  : which == Linear::attn_out ? Shape{config_.q_width(), C, w.attprojw, w.attprojb}
                  : which == Linear::mlp_in   ? Shape{C, llama() ? 2 * H : H, w.fcw, w.fcb}
                                              : Shape{H, C, w.fcprojw, w.fcprojb};
  float* G = grads_.data();
  if (llama())  // nn.Linear's (out, in) layout, no biases
    k::matmul_transposed_backward(dinp, weights ? G + s.weight : nullptr, dout, inp, params_.data() + s.weight, N, s.in,
                                  s.out);
  else  // Conv1D's (in, out)
    k::matmul_backward(dinp, weights ? G + s.weight : nullptr, weights ? G + s.bias : nullptr, dout, inp,
                       params_.data() + s.weight, N, s.in, s.out);
}

// ---- the passes ----------------------------------------------------------------------------------------

float Trainer::forward(const int* ids, const int* targets, int B, int T) {
  if (B < 1 || B > B_ || T < 1 || T > T_)
    throw Error("train: batch (" + std::to_string(B) + ", " + std::to_string(T) + ") is outside (1.." +
                std::to_string(B_) + ", 1.." + std::to_string(T_) + ")");
  kernels::PoolScope pool(packed_->threads());
  const int V = config_.vocab_size, C = config_.n_embd;
  const int N = B * T;
  for (int i = 0; i < N; i++) {
    for (int id : {ids[i], targets[i]})
      if (id < 0 || id >= V)
        throw Error("train: token id " + std::to_string(id) + " at row " + std::to_string(i / T) + ", position " +
                    std::to_string(i % T) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  }
  std::copy(ids, ids + N, ids_.begin());
  std::copy(targets, targets + N, targets_.begin());
  cur_B_ = B;
  cur_T_ = T;
  if (!borrowing()) pack_weights();
  const Reads w = reads();
  const float eps = config_.layer_norm_epsilon;

  // the model's forward on B sequences from position 0, keeping every layer's activations
  embed(N, T, w.wpe);
  const float* residual = encoded_.data();
  for (std::size_t l = 0; l < layers_.size(); l++) {
    LayerActs& a = acts_[l];
    BlockBuffers io;
    io.x = residual;
    io.ln1 = a.ln1.data();
    io.ln1_mean = a.ln1_mean.data();
    io.ln1_rstd = a.ln1_rstd.data();
    io.qkv = a.qkv.data();
    io.qkv_raw = config_.qk_norm ? a.qkv_raw.data() : nullptr;
    io.qk_rstd = config_.qk_norm ? a.qk_rstd.data() : nullptr;
    io.att = a.att.data();
    io.key_panels = key_panels_.data();
    io.head_out = a.atty.data();
    io.head_proj = head_proj_.data();
    io.attn_proj = a.attproj.data();
    io.res_mid = a.res2.data();
    io.ln2 = a.ln2.data();
    io.ln2_mean = a.ln2_mean.data();
    io.ln2_rstd = a.ln2_rstd.data();
    io.fc_pre = a.fch.data();
    io.fc_act = a.fch_gelu.data();
    io.rope_inv_freq = llama() ? packed_->rope.data() : nullptr;
    io.mlp_out = a.fcproj.data();
    io.res_out = a.res3.data();
    // a borrowing trainer takes W_O head by head, as Model::run does (it keeps every head's write
    // norm), so that its forward is the model's: with 8-bit weights one product over the concatenation
    // quantizes its inputs and the per-head products do not (kernels.hpp), so the two ways differ
    io.gates = gated_ || borrowing() ? &gates_[l * config_.n_head] : nullptr;
    block_forward(config_, packed_->layers()[l], io, B, 0, T, T);
    residual = a.res3.data();
  }
  if (llama())
    k::rmsnorm_forward(lnf_.data(), lnf_rstd_.data(), residual, w.lnfw, N, C, eps);
  else
    k::layernorm_forward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), residual, w.lnfw, w.lnfb, N, C, eps);
  head_forward(N);
  k::crossentropy_forward(losses_.data(), probs_.data(), logits_.data(), targets, N, V);
  double sum = 0;
  for (int i = 0; i < N; i++) sum += losses_[i];
  return (float)(sum / N);
}

// d.attproj (N, C) -> d.atty (N, QW) through W_O, and every head gate's gradient. W_O saw the heads'
// outputs times their gates: through a gated copy when a gate is not 1. A head's gate gradient is the
// sum over rows of its slice of d(gated output) . (its output).
void Trainer::output_projection_backward(int l, bool weights) {
  const int N = cur_B_ * cur_T_, NH = config_.n_head, HS = config_.head_size();
  const int QW = config_.q_width();
  LayerActs& a = acts_[l];
  LayerActs& d = dacts_[l];
  const float* wo_inp = a.atty.data();
  float* d_wo_inp = d.atty.data();
  const float* gates = &gates_[(std::size_t)l * NH];
  if (gated_) {
    for (int r = 0; r < N; r++)
      for (int h = 0; h < NH; h++)
        for (int i = 0; i < HS; i++) {
          const std::size_t j = (std::size_t)r * QW + h * HS + i;
          gated_atty_[j] = a.atty[j] * gates[h];
        }
    std::fill(dgated_atty_.begin(), dgated_atty_.end(), 0.0f);
    wo_inp = gated_atty_.data();
    d_wo_inp = dgated_atty_.data();
  }
  linear_backward(l, Linear::attn_out, d_wo_inp, d.attproj.data(), wo_inp, N, weights);
  for (int h = 0; h < NH; h++) {
    double g = 0;
    for (int r = 0; r < N; r++)
      g += k::dot(d_wo_inp + (std::size_t)r * QW + h * HS, a.atty.data() + (std::size_t)r * QW + h * HS, HS);
    gate_grads_[(std::size_t)l * NH + h] = (float)g;
  }
  if (gated_)
    for (int r = 0; r < N; r++)
      for (int h = 0; h < NH; h++)
        for (int i = 0; i < HS; i++) {
          const std::size_t j = (std::size_t)r * QW + h * HS + i;
          d.atty[j] += gates[h] * dgated_atty_[j];
        }
}

void Trainer::backward(Gradients which) { backward_seeded(which, {}); }

void Trainer::backward_from_logits(std::span<const float> dlogits, Gradients which) {
  if (cur_B_ == 0) throw Error("train: backward() before forward()");
  if (dlogits.size() != (std::size_t)cur_B_ * cur_T_ * config_.vocab_size)
    throw Error("train: " + std::to_string(dlogits.size()) + " logit gradients for a forward of " +
                std::to_string((std::size_t)cur_B_ * cur_T_ * config_.vocab_size) + " logits");
  backward_seeded(which, dlogits);
}

std::span<const float> Trainer::head_outputs_grad(int layer) const {
  if (layer < 0 || layer >= config_.n_layer) throw Error("train: layer " + std::to_string(layer) + " is out of range");
  return {dacts_[layer].atty.data(), (std::size_t)cur_B_ * cur_T_ * config_.q_width()};
}

// dlogits empty: the mean cross-entropy's gradient
void Trainer::backward_seeded(Gradients which, std::span<const float> dlogits) {
  if (cur_B_ == 0) throw Error("train: backward() before forward()");
  kernels::PoolScope pool(packed_->threads());
  // gates only: every activation's gradient down to the lowest layer's gates, no weight's (about a
  // third of the work, and the LM head's weight gradient streams the whole embedding)
  const bool weights = which == Gradients::all;
  const int B = cur_B_, T = cur_T_, N = B * T;
  const int V = config_.vocab_size, C = config_.n_embd, NH = config_.n_head, KV = config_.kv_heads();
  const int HS = config_.head_size(), H = config_.n_inner, W = config_.qkv_width(), QW = config_.q_width();
  const std::size_t nc = (std::size_t)N * C;
  if (weights) ensure_grads();
  const Reads rw = reads();
  float* G = grads_.data();
  // a norm's weight gradient: into grads_, or discarded without the weights' (grads_ may not exist)
  const auto NG = [&](std::size_t offset) { return weights ? G + offset : norm_grads_discarded_.data(); };
  // activation gradients start from zero each pass; parameter gradients accumulate until zero_grad()
  for (auto& d : dacts_)
    for (auto* v : {&d.ln1, &d.qkv, &d.atty, &d.attproj, &d.res2, &d.ln2, &d.fch, &d.fch_gelu, &d.fcproj, &d.res3})
      std::fill(v->begin(), v->end(), 0.0f);
  std::fill(dencoded_.begin(), dencoded_.end(), 0.0f);
  std::fill(dlnf_.begin(), dlnf_.end(), 0.0f);
  std::fill(dlogits_.begin(), dlogits_.end(), 0.0f);

  if (dlogits.empty())
    k::crossentropy_backward(dlogits_.data(), probs_.data(), targets_.data(), 1.0f / N, N, V);
  else
    std::copy(dlogits.begin(), dlogits.end(), dlogits_.begin());
  head_backward(N, weights);
  const int L = (int)layers_.size();
  if (llama())
    k::rmsnorm_backward(dacts_[L - 1].res3.data(), NG(lnfw_), dlnf_.data(), acts_[L - 1].res3.data(), rw.lnfw,
                        lnf_rstd_.data(), N, C);
  else
    k::layernorm_backward(dacts_[L - 1].res3.data(), NG(lnfw_), NG(lnfb_), dlnf_.data(), acts_[L - 1].res3.data(),
                          rw.lnfw, lnf_mean_.data(), lnf_rstd_.data(), N, C);
  for (int l = L - 1; l >= 0; l--) {
    const Layer& w = layers_[l];
    const Reads::Block& rb = rw.blocks[l];
    LayerActs& a = acts_[l];
    LayerActs& d = dacts_[l];
    const float* residual = l == 0 ? encoded_.data() : acts_[l - 1].res3.data();
    float* dresidual = l == 0 ? dencoded_.data() : dacts_[l - 1].res3.data();
    k::residual_backward(d.res2.data(), d.fcproj.data(), d.res3.data(), nc);
    if (llama()) {
      // down (C, F), SwiGLU, gate | up (2F, C), the norm before the MLP: nn.Linear's layout, no biases
      linear_backward(l, Linear::mlp_out, d.fch_gelu.data(), d.fcproj.data(), a.fch_gelu.data(), N, weights);
      k::swiglu_backward(d.fch.data(), a.fch.data(), d.fch_gelu.data(), N, H);
      linear_backward(l, Linear::mlp_in, d.ln2.data(), d.fch.data(), a.ln2.data(), N, weights);
      k::rmsnorm_backward(d.res2.data(), NG(w.ln2w), d.ln2.data(), a.res2.data(), rb.ln2w, a.ln2_rstd.data(), N, C);
    } else {
      linear_backward(l, Linear::mlp_out, d.fch_gelu.data(), d.fcproj.data(), a.fch_gelu.data(), N, weights);
      if (config_.activation == Activation::gelu_tanh)
        k::gelu_backward(d.fch.data(), a.fch.data(), d.fch_gelu.data(), (std::size_t)N * H);
      else
        k::gelu_erf_backward(d.fch.data(), a.fch.data(), d.fch_gelu.data(), (std::size_t)N * H);
      linear_backward(l, Linear::mlp_in, d.ln2.data(), d.fch.data(), a.ln2.data(), N, weights);
      k::layernorm_backward(d.res2.data(), NG(w.ln2w), NG(w.ln2b), d.ln2.data(), a.res2.data(), rb.ln2w,
                            a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
    }
    k::residual_backward(dresidual, d.attproj.data(), d.res2.data(), nc);
    output_projection_backward(l, weights);
    if (!weights && l == 0) break;  // below the lowest gates only weights have gradients
    k::attention_backward(d.qkv.data(), scratch_.data(), d.atty.data(), a.qkv.data(), a.att.data(), B, T,
                          k::AttentionShape{NH, KV, HS});
    if (!llama()) {
      linear_backward(l, Linear::attn_in, d.ln1.data(), d.qkv.data(), a.ln1.data(), N, weights);
      k::layernorm_backward(dresidual, NG(w.ln1w), NG(w.ln1b), d.ln1.data(), residual, rb.ln1w, a.ln1_mean.data(),
                            a.ln1_rstd.data(), N, C);
      continue;
    }
    // the rotation of q and k (the NH + KV heads from column 0), undone on their gradients
    for (int s = 0; s < B; s++)
      k::rope_backward(d.qkv.data() + (std::size_t)s * T * W, W, 0, T, NH + KV, HS, packed_->rope.data());
    if (config_.qk_norm) {
      // Qwen3's per-head norms of q and k: their outputs' gradients (the q | k part of a row, copied
      // aside) back to their inputs, the raw projections
      for (int r = 0; r < N; r++) {
        float* drow = d.qkv.data() + (std::size_t)r * W;
        const float* raw = a.qkv_raw.data() + (std::size_t)r * W;
        const float* rstd = a.qk_rstd.data() + (std::size_t)r * (NH + KV);
        float* dnormed = scratch_.data();  // W floats (the constructor sized it so)
        std::copy(drow, drow + QW + KV * HS, dnormed);
        std::fill(drow, drow + QW + KV * HS, 0.0f);
        k::rmsnorm_backward(drow, NG(w.qnorm), dnormed, raw, rb.qnorm, rstd, NH, HS);
        k::rmsnorm_backward(drow + QW, NG(w.knorm), dnormed + QW, raw + QW, rb.knorm, rstd + NH, KV, HS);
      }
    }
    linear_backward(l, Linear::attn_in, d.ln1.data(), d.qkv.data(), a.ln1.data(), N, weights);
    k::rmsnorm_backward(dresidual, NG(w.ln1w), d.ln1.data(), residual, rb.ln1w, a.ln1_rstd.data(), N, C);
  }
  if (!weights) return;
  if (llama()) {
    for (int i = 0; i < N; i++) {
      float* row = G + wte_ + (std::size_t)ids_[i] * C;
      k::add_forward(row, row, &dencoded_[(std::size_t)i * C], C);
    }
  } else {
    k::encoder_backward(G + wte_, G + wpe_, dencoded_.data(), ids_.data(), B, T, C);
  }
}

}  // namespace headscope::train
