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
  if (!packed_->model_blocks) pack_weights();
  const float* P = params_.data();
  const float eps = config_.layer_norm_epsilon;

  // the model's forward on B sequences from position 0, keeping every layer's activations: GPT-2 adds
  // the position's row of wpe, the Llama family rotates q and k inside the block instead
  for (int i = 0; i < N; i++) {
    const float* tok = P + wte_ + (std::size_t)ids[i] * C;
    if (llama())
      std::copy(tok, tok + C, &encoded_[(std::size_t)i * C]);
    else
      k::add_forward(&encoded_[(std::size_t)i * C], tok, P + wpe_ + (std::size_t)(i % T) * C, C);
  }
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
    io.gates = gated_ ? &gates_[l * config_.n_head] : nullptr;
    block_forward(config_, packed_->layers()[l], io, B, 0, T, T);
    residual = a.res3.data();
  }
  if (llama())
    k::rmsnorm_forward(lnf_.data(), lnf_rstd_.data(), residual, P + lnfw_, N, C, eps);
  else
    k::layernorm_forward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), residual, P + lnfw_, P + lnfb_, N, C, eps);
  k::matmul_transposed_forward(logits_.data(), lnf_.data(), P + head_, N, C, V);
  k::crossentropy_forward(losses_.data(), probs_.data(), logits_.data(), targets, N, V);
  double sum = 0;
  for (int i = 0; i < N; i++) sum += losses_[i];
  return (float)(sum / N);
}

// d.attproj (N, C) -> d.atty (N, QW) through W_O, and every head gate's gradient. W_O saw the heads'
// outputs times their gates: through a gated copy when a gate is not 1. A head's gate gradient is the
// sum over rows of its slice of d(gated output) . (its output).
void Trainer::output_projection_backward(int l, bool weights) {
  const int N = cur_B_ * cur_T_, C = config_.n_embd, NH = config_.n_head, HS = config_.head_size();
  const int QW = config_.q_width();
  const Layer& w = layers_[l];
  LayerActs& a = acts_[l];
  LayerActs& d = dacts_[l];
  const float* P = params_.data();
  float* G = grads_.data();
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
  if (llama())  // W_O (C, QW), nn.Linear's layout
    k::matmul_transposed_backward(d_wo_inp, weights ? G + w.attprojw : nullptr, d.attproj.data(), wo_inp,
                                  P + w.attprojw, N, QW, C);
  else
    k::matmul_backward(d_wo_inp, weights ? G + w.attprojw : nullptr, weights ? G + w.attprojb : nullptr,
                       d.attproj.data(), wo_inp, P + w.attprojw, N, C, C);
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
  const float* P = params_.data();
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
  k::matmul_transposed_backward(dlnf_.data(), weights ? G + head_ : nullptr, dlogits_.data(), lnf_.data(), P + head_, N,
                                C, V);
  const int L = (int)layers_.size();
  if (llama())
    k::rmsnorm_backward(dacts_[L - 1].res3.data(), NG(lnfw_), dlnf_.data(), acts_[L - 1].res3.data(), P + lnfw_,
                        lnf_rstd_.data(), N, C);
  else
    k::layernorm_backward(dacts_[L - 1].res3.data(), NG(lnfw_), NG(lnfb_), dlnf_.data(), acts_[L - 1].res3.data(),
                          P + lnfw_, lnf_mean_.data(), lnf_rstd_.data(), N, C);
  for (int l = L - 1; l >= 0; l--) {
    const Layer& w = layers_[l];
    LayerActs& a = acts_[l];
    LayerActs& d = dacts_[l];
    const float* residual = l == 0 ? encoded_.data() : acts_[l - 1].res3.data();
    float* dresidual = l == 0 ? dencoded_.data() : dacts_[l - 1].res3.data();
    k::residual_backward(d.res2.data(), d.fcproj.data(), d.res3.data(), nc);
    if (llama()) {
      // down (C, F), SwiGLU, gate | up (2F, C), the norm before the MLP: nn.Linear's layout, no biases
      k::matmul_transposed_backward(d.fch_gelu.data(), weights ? G + w.fcprojw : nullptr, d.fcproj.data(),
                                    a.fch_gelu.data(), P + w.fcprojw, N, H, C);
      k::swiglu_backward(d.fch.data(), a.fch.data(), d.fch_gelu.data(), N, H);
      k::matmul_transposed_backward(d.ln2.data(), weights ? G + w.fcw : nullptr, d.fch.data(), a.ln2.data(), P + w.fcw,
                                    N, C, 2 * H);
      k::rmsnorm_backward(d.res2.data(), NG(w.ln2w), d.ln2.data(), a.res2.data(), P + w.ln2w, a.ln2_rstd.data(), N, C);
    } else {
      k::matmul_backward(d.fch_gelu.data(), weights ? G + w.fcprojw : nullptr, weights ? G + w.fcprojb : nullptr,
                         d.fcproj.data(), a.fch_gelu.data(), P + w.fcprojw, N, H, C);
      if (config_.activation == Activation::gelu_tanh)
        k::gelu_backward(d.fch.data(), a.fch.data(), d.fch_gelu.data(), (std::size_t)N * H);
      else
        k::gelu_erf_backward(d.fch.data(), a.fch.data(), d.fch_gelu.data(), (std::size_t)N * H);
      k::matmul_backward(d.ln2.data(), weights ? G + w.fcw : nullptr, weights ? G + w.fcb : nullptr, d.fch.data(),
                         a.ln2.data(), P + w.fcw, N, C, H);
      k::layernorm_backward(d.res2.data(), NG(w.ln2w), NG(w.ln2b), d.ln2.data(), a.res2.data(), P + w.ln2w,
                            a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
    }
    k::residual_backward(dresidual, d.attproj.data(), d.res2.data(), nc);
    output_projection_backward(l, weights);
    if (!weights && l == 0) break;  // below the lowest gates only weights have gradients
    k::attention_backward(d.qkv.data(), scratch_.data(), d.atty.data(), a.qkv.data(), a.att.data(), B, T,
                          k::AttentionShape{NH, KV, HS});
    if (!llama()) {
      k::matmul_backward(d.ln1.data(), weights ? G + w.qkvw : nullptr, weights ? G + w.qkvb : nullptr, d.qkv.data(),
                         a.ln1.data(), P + w.qkvw, N, C, 3 * C);
      k::layernorm_backward(dresidual, NG(w.ln1w), NG(w.ln1b), d.ln1.data(), residual, P + w.ln1w, a.ln1_mean.data(),
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
        k::rmsnorm_backward(drow, NG(w.qnorm), dnormed, raw, P + w.qnorm, rstd, NH, HS);
        k::rmsnorm_backward(drow + QW, NG(w.knorm), dnormed + QW, raw + QW, P + w.knorm, rstd + NH, KV, HS);
      }
    }
    k::matmul_transposed_backward(d.ln1.data(), weights ? G + w.qkvw : nullptr, d.qkv.data(), a.ln1.data(), P + w.qkvw,
                                  N, C, W);
    k::rmsnorm_backward(dresidual, NG(w.ln1w), d.ln1.data(), residual, P + w.ln1w, a.ln1_rstd.data(), N, C);
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
