// Trainer: parameters, gradients, AdamW state and activations in flat arrays (llm.c's layout); the
// model's forward pass (block_forward, forward.hpp) run on a batch and keeping what the backward
// needs; the backward pass in llm.c's order; the optimizer steps. Shapes use the legend in train.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "forward.hpp"
#include "model_impl.hpp"
#include "headscope/error.hpp"
#include "headscope/safetensors.hpp"
#include "headscope/train.hpp"
#include "kernels/kernels.hpp"
#include "kernels/parallel.hpp"

namespace headscope::train {

namespace k = headscope::kernels;
using namespace headscope::kernels;  // the backward kernels and optimizer updates

struct Trainer::Packed {
  std::vector<BlockWeights> blocks;
  std::unique_ptr<kernels::ThreadPool> pool;  // the kernels' threads (set_threads)
  kernels::ThreadPool* borrowed = nullptr;     // or a model's (share_threads)
  kernels::ThreadPool* threads() const { return borrowed ? borrowed : pool.get(); }
};
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;
Trainer::~Trainer() = default;

std::size_t NamedTensor::size() const {
  std::size_t n = 1;
  for (int64_t d : shape) n *= (std::size_t)d;
  return n;
}

std::size_t Trainer::add_tensor(const std::string& name, std::vector<int64_t> shape) {
  NamedTensor t{name, std::move(shape), 0};
  t.offset = tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().size();
  tensors_.push_back(t);
  return t.offset;
}

Trainer::Trainer(const ModelConfig& config, int B, int T, std::size_t max_bytes, bool optimizer_state)
    : config_(config), B_(B), T_(T) {
  if (config.family == Family::llama)
    throw Error("train: training a Llama-family model (model_type \"" + config.model_type + "\") is not supported yet; "
                "the trainer runs GPT-2 models");
  const int64_t V = config.vocab_size, C = config.n_embd, L = config.n_layer, NH = config.n_head;
  const int64_t H = config.n_inner > 0 ? config.n_inner : 4 * C;
  config_.n_inner = (int)H;  // block_forward reads the MLP width from the config
  if (V < 1 || C < 1 || L < 1 || NH < 1 || C % NH != 0)
    throw Error("train: invalid shape (vocab_size, n_embd, n_layer, n_head must be positive, n_embd divisible by n_head)");
  if (B < 1 || T < 1) throw Error("train: batch size and sequence length must be at least 1");
  if (T > config.n_positions)
    throw Error("train: sequence length " + std::to_string(T) + " exceeds n_positions " +
                std::to_string(config.n_positions));
  // Memory check before any allocation: parameters x4 (weights, grads, m, v), activations x2 (values
  // and gradients), as bytes() counts them afterwards.
  const double n_params = (double)V * C + (double)config.n_positions * C + 2.0 * C +
                          (double)L * (4.0 * C + 3.0 * C * C + 3.0 * C + C * C + C + 2.0 * C * H + H + C);
  const double N = (double)B * T;
  const double per_layer = N * (10.0 * C + 4.0 + 2.0 * H) + N * NH * T;
  const double n_acts = N * (2.0 * C + 3.0 + 2.0 * V + 1.0) + L * per_layer;
  const double need = 4.0 * ((optimizer_state ? 4.0 : 2.0) * n_params + 2.0 * n_acts);
  if (need > (double)max_bytes)
    throw Error("train: this shape needs about " + std::to_string((long long)(need / 1048576.0)) +
                " MiB, more than the limit of " + std::to_string((long long)(max_bytes / 1048576)) +
                " MiB: reduce n_embd, n_layer, vocab_size, the batch size or the sequence length");

  wte_ = add_tensor("wte.weight", {V, C});
  wpe_ = add_tensor("wpe.weight", {config.n_positions, C});
  for (int l = 0; l < L; l++) {
    const std::string p = "h." + std::to_string(l) + ".";
    Layer ly;
    ly.ln1w = add_tensor(p + "ln_1.weight", {C});
    ly.ln1b = add_tensor(p + "ln_1.bias", {C});
    ly.qkvw = add_tensor(p + "attn.c_attn.weight", {C, 3 * C});
    ly.qkvb = add_tensor(p + "attn.c_attn.bias", {3 * C});
    ly.attprojw = add_tensor(p + "attn.c_proj.weight", {C, C});
    ly.attprojb = add_tensor(p + "attn.c_proj.bias", {C});
    ly.ln2w = add_tensor(p + "ln_2.weight", {C});
    ly.ln2b = add_tensor(p + "ln_2.bias", {C});
    ly.fcw = add_tensor(p + "mlp.c_fc.weight", {C, H});
    ly.fcb = add_tensor(p + "mlp.c_fc.bias", {H});
    ly.fcprojw = add_tensor(p + "mlp.c_proj.weight", {H, C});
    ly.fcprojb = add_tensor(p + "mlp.c_proj.bias", {C});
    layers_.push_back(ly);
  }
  lnfw_ = add_tensor("ln_f.weight", {C});
  lnfb_ = add_tensor("ln_f.bias", {C});
  const std::size_t P = tensors_.back().offset + tensors_.back().size();
  params_.assign(P, 0.0f);
  grads_.assign(P, 0.0f);
  if (optimizer_state) {
    adam_m_.assign(P, 0.0f);
    adam_v_.assign(P, 0.0f);
  }
  gates_.assign((std::size_t)L * NH, 1.0f);
  gate_grads_.assign((std::size_t)L * NH, 0.0f);

  const std::size_t n = (std::size_t)B * T, nc = n * C, nh = n * H;
  ids_.assign(n, 0);
  targets_.assign(n, 0);
  auto alloc = [&](LayerActs& a) {
    a.ln1.assign(nc, 0);
    a.ln1_mean.assign(n, 0);
    a.ln1_rstd.assign(n, 0);
    a.qkv.assign(3 * nc, 0);
    a.att.assign(n * NH * T, 0);
    a.atty.assign(nc, 0);
    a.attproj.assign(nc, 0);
    a.res2.assign(nc, 0);
    a.ln2.assign(nc, 0);
    a.ln2_mean.assign(n, 0);
    a.ln2_rstd.assign(n, 0);
    a.fch.assign(nh, 0);
    a.fch_gelu.assign(nh, 0);
    a.fcproj.assign(nc, 0);
    a.res3.assign(nc, 0);
  };
  acts_.resize(L);
  dacts_.resize(L);
  for (int l = 0; l < L; l++) {
    alloc(acts_[l]);
    alloc(dacts_[l]);
  }
  encoded_.assign(nc, 0);
  lnf_.assign(nc, 0);
  lnf_mean_.assign(n, 0);
  lnf_rstd_.assign(n, 0);
  logits_.assign(n * V, 0);
  probs_.assign(n * V, 0);
  losses_.assign(n, 0);
  dencoded_.assign(nc, 0);
  dlnf_.assign(nc, 0);
  dlogits_.assign(n * V, 0);
  scratch_.assign(T, 0);
  head_proj_.assign(nc, 0);
  key_panels_.assign(k::attention_key_panels_floats(T, C, NH), 0);
  packed_ = std::make_unique<Packed>();
  packed_->blocks.resize(L);
  packed_->pool = std::make_unique<kernels::ThreadPool>(kernels::hardware_threads());
}

std::size_t Trainer::bytes() const {
  std::size_t f = params_.size() + grads_.size() + adam_m_.size() + adam_v_.size();
  for (const auto* v : {&encoded_, &lnf_, &lnf_mean_, &lnf_rstd_, &logits_, &probs_, &losses_, &dencoded_, &dlnf_,
                        &dlogits_, &scratch_, &head_proj_, &key_panels_})
    f += v->size();
  for (const auto* set : {&acts_, &dacts_})
    for (const LayerActs& a : *set)
      for (const auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.att, &a.atty, &a.attproj, &a.res2, &a.ln2,
                            &a.ln2_mean, &a.ln2_rstd, &a.fch, &a.fch_gelu, &a.fcproj, &a.res3})
        f += v->size();
  return f * sizeof(float) + (ids_.size() + targets_.size()) * sizeof(int);
}

namespace {
// Box-Muller over mt19937 (whose output the standard fixes), so a seed gives the same weights in
// every build; std::normal_distribution differs between libstdc++ and libc++.
struct Normal {
  std::mt19937 rng;
  explicit Normal(uint64_t seed) : rng((uint32_t)(seed ^ (seed >> 32))) {}
  double uniform() { return ((rng() >> 8) + 0.5) / 16777216.0; }  // (0, 1)
  double operator()() {
    const double u = uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
};
}  // namespace

void Trainer::init_random(uint64_t seed) {
  Normal normal(seed);
  const double proj_std = 0.02 / std::sqrt(2.0 * config_.n_layer);
  for (const NamedTensor& t : tensors_) {
    float* p = params_.data() + t.offset;
    const bool ln = t.name.find("ln_") != std::string::npos;
    if (ln) {
      const float v = t.name.ends_with(".weight") ? 1.0f : 0.0f;
      for (std::size_t i = 0; i < t.size(); i++) p[i] = v;
    } else if (t.name.ends_with(".bias")) {
      for (std::size_t i = 0; i < t.size(); i++) p[i] = 0.0f;
    } else {
      const double sd = t.name == "wpe.weight" ? 0.01 : t.name.ends_with("c_proj.weight") ? proj_std : 0.02;
      for (std::size_t i = 0; i < t.size(); i++) p[i] = (float)(sd * normal());
    }
  }
  std::fill(adam_m_.begin(), adam_m_.end(), 0.0f);
  std::fill(adam_v_.begin(), adam_v_.end(), 0.0f);
  adam_t_ = 0;
}

void Trainer::load(const SafeTensors& st) {
  const std::string prefix = !st.contains("wte.weight") && st.contains("transformer.wte.weight") ? "transformer." : "";
  for (const NamedTensor& t : tensors_) {
    if (!st.contains(prefix + t.name)) throw Error("model.safetensors: tensor \"" + prefix + t.name + "\" is missing");
    const std::vector<float> v = st.read_f32(prefix + t.name, t.shape);
    for (std::size_t i = 0; i < v.size(); i++)
      if (!std::isfinite(v[i]))
        throw Error("model.safetensors: tensor \"" + prefix + t.name + "\" contains NaN or Inf");
    std::memcpy(params_.data() + t.offset, v.data(), v.size() * sizeof(float));
  }
  std::fill(adam_m_.begin(), adam_m_.end(), 0.0f);
  std::fill(adam_v_.begin(), adam_v_.end(), 0.0f);
  adam_t_ = 0;
}

std::span<const float> Trainer::attention(int layer) const {
  if (layer < 0 || layer >= config_.n_layer) throw Error("train: layer " + std::to_string(layer) + " is out of range");
  return {acts_[layer].att.data(), (std::size_t)cur_B_ * config_.n_head * cur_T_ * cur_T_};
}

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
  pack_weights();
  const float* P = params_.data();
  const float eps = config_.layer_norm_epsilon;

  // the model's forward on B sequences from position 0, keeping every layer's activations
  for (int i = 0; i < N; i++)
    k::add_forward(&encoded_[(std::size_t)i * C], P + wte_ + (std::size_t)ids[i] * C, P + wpe_ + (std::size_t)(i % T) * C, C);
  const float* residual = encoded_.data();
  for (std::size_t l = 0; l < layers_.size(); l++) {
    LayerActs& a = acts_[l];
    BlockBuffers io;
    io.x = residual;
    io.ln1 = a.ln1.data();
    io.ln1_mean = a.ln1_mean.data();
    io.ln1_rstd = a.ln1_rstd.data();
    io.qkv = a.qkv.data();
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
    io.mlp_out = a.fcproj.data();
    io.res_out = a.res3.data();
    io.gates = gated_ ? &gates_[l * config_.n_head] : nullptr;
    block_forward(config_, packed_->blocks[l], io, B, 0, T, T);
    residual = a.res3.data();
  }
  k::layernorm_forward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), residual, P + lnfw_, P + lnfb_, N, C, eps);
  k::matmul_transposed_forward(logits_.data(), lnf_.data(), P + wte_, N, C, V);
  k::crossentropy_forward(losses_.data(), probs_.data(), logits_.data(), targets, N, V);
  double sum = 0;
  for (int i = 0; i < N; i++) sum += losses_[i];
  return (float)(sum / N);
}

void Trainer::zero_grad() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

void Trainer::set_threads(int threads) {
  if (threads < 0 || threads > kMaxThreads)
    throw Error("threads must be within [0, " + std::to_string(kMaxThreads) + "] (0: one per core), got " +
                std::to_string(threads));
  // the old pool's threads first: in the threaded wasm build they are the new pool's workers
  packed_->pool.reset();
  packed_->borrowed = nullptr;
  packed_->pool = std::make_unique<kernels::ThreadPool>(threads == 0 ? kernels::hardware_threads() : threads);
}
int Trainer::threads() const { return packed_->threads() ? packed_->threads()->size() : 1; }

void Trainer::share_threads(const Model& model) {
  packed_->pool.reset();
  packed_->borrowed = model.impl_->pool_.get();
}

void Trainer::backward(Gradients which) {
  if (cur_B_ == 0) throw Error("train: backward() before forward()");
  kernels::PoolScope pool(packed_->threads());
  // gates only: every activation's gradient down to the lowest layer's gates, no weight's (about a
  // third of the work, and the LM head's weight gradient streams the whole embedding)
  const bool weights = which == Gradients::all;
  const int B = cur_B_, T = cur_T_, N = B * T;
  const int V = config_.vocab_size, C = config_.n_embd, NH = config_.n_head, HS = C / NH;
  const int H = config_.n_inner > 0 ? config_.n_inner : 4 * C;
  const std::size_t nc = (std::size_t)N * C;
  const float* P = params_.data();
  float* G = grads_.data();
  // activation gradients start from zero each pass; parameter gradients accumulate until zero_grad()
  for (auto& d : dacts_)
    for (auto* v : {&d.ln1, &d.qkv, &d.atty, &d.attproj, &d.res2, &d.ln2, &d.fch, &d.fch_gelu, &d.fcproj, &d.res3})
      std::fill(v->begin(), v->end(), 0.0f);
  std::fill(dencoded_.begin(), dencoded_.end(), 0.0f);
  std::fill(dlnf_.begin(), dlnf_.end(), 0.0f);
  std::fill(dlogits_.begin(), dlogits_.end(), 0.0f);

  crossentropy_backward(dlogits_.data(), probs_.data(), targets_.data(), 1.0f / N, N, V);
  matmul_transposed_backward(dlnf_.data(), weights ? G + wte_ : nullptr, dlogits_.data(), lnf_.data(), P + wte_, N, C, V);
  const int L = (int)layers_.size();
  layernorm_backward(dacts_[L - 1].res3.data(), G + lnfw_, G + lnfb_, dlnf_.data(), acts_[L - 1].res3.data(),
                     P + lnfw_, lnf_mean_.data(), lnf_rstd_.data(), N, C);
  for (int l = L - 1; l >= 0; l--) {
    const Layer& w = layers_[l];
    LayerActs& a = acts_[l];
    LayerActs& d = dacts_[l];
    const float* residual = l == 0 ? encoded_.data() : acts_[l - 1].res3.data();
    float* dresidual = l == 0 ? dencoded_.data() : dacts_[l - 1].res3.data();
    residual_backward(d.res2.data(), d.fcproj.data(), d.res3.data(), nc);
    matmul_backward(d.fch_gelu.data(), weights ? G + w.fcprojw : nullptr, weights ? G + w.fcprojb : nullptr,
                    d.fcproj.data(), a.fch_gelu.data(), P + w.fcprojw, N, H, C);
    if (config_.activation == Activation::gelu_tanh)
      gelu_backward(d.fch.data(), a.fch.data(), d.fch_gelu.data(), (std::size_t)N * H);
    else
      gelu_erf_backward(d.fch.data(), a.fch.data(), d.fch_gelu.data(), (std::size_t)N * H);
    matmul_backward(d.ln2.data(), weights ? G + w.fcw : nullptr, weights ? G + w.fcb : nullptr, d.fch.data(),
                    a.ln2.data(), P + w.fcw, N, C, H);
    layernorm_backward(d.res2.data(), G + w.ln2w, G + w.ln2b, d.ln2.data(), a.res2.data(), P + w.ln2w,
                       a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
    residual_backward(dresidual, d.attproj.data(), d.res2.data(), nc);
    // W_O saw the heads' outputs times their gates: through a gated copy when a gate is not 1. A head's
    // gate gradient is the sum over rows of its slice of d(gated output) . (its output).
    const float* wo_inp = a.atty.data();
    float* d_wo_inp = d.atty.data();
    const float* gates = &gates_[(std::size_t)l * NH];
    if (gated_) {
      for (int r = 0; r < N; r++)
        for (int h = 0; h < NH; h++)
          for (int i = 0; i < HS; i++) {
            const std::size_t j = (std::size_t)r * C + h * HS + i;
            gated_atty_[j] = a.atty[j] * gates[h];
          }
      std::fill(dgated_atty_.begin(), dgated_atty_.end(), 0.0f);
      wo_inp = gated_atty_.data();
      d_wo_inp = dgated_atty_.data();
    }
    matmul_backward(d_wo_inp, weights ? G + w.attprojw : nullptr, weights ? G + w.attprojb : nullptr, d.attproj.data(),
                    wo_inp, P + w.attprojw, N, C, C);
    for (int h = 0; h < NH; h++) {
      double g = 0;
      for (int r = 0; r < N; r++)
        g += k::dot(d_wo_inp + (std::size_t)r * C + h * HS, a.atty.data() + (std::size_t)r * C + h * HS, HS);
      gate_grads_[(std::size_t)l * NH + h] = (float)g;
    }
    if (gated_)
      for (int r = 0; r < N; r++)
        for (int h = 0; h < NH; h++)
          for (int i = 0; i < HS; i++) {
            const std::size_t j = (std::size_t)r * C + h * HS + i;
            d.atty[j] += gates[h] * dgated_atty_[j];
          }
    if (!weights && l == 0) break;  // below the lowest gates only weights have gradients
    attention_backward(d.qkv.data(), scratch_.data(), d.atty.data(), a.qkv.data(), a.att.data(), B, T, C, NH);
    matmul_backward(d.ln1.data(), weights ? G + w.qkvw : nullptr, weights ? G + w.qkvb : nullptr, d.qkv.data(),
                    a.ln1.data(), P + w.qkvw, N, C, 3 * C);
    layernorm_backward(dresidual, G + w.ln1w, G + w.ln1b, d.ln1.data(), residual, P + w.ln1w, a.ln1_mean.data(),
                       a.ln1_rstd.data(), N, C);
  }
  if (weights) encoder_backward(G + wte_, G + wpe_, dencoded_.data(), ids_.data(), B, T, C);
}

void Trainer::set_head_gates(std::span<const float> gates) {
  if (gates.size() != gates_.size())
    throw Error("train: " + std::to_string(gates.size()) + " head gates for " + std::to_string(gates_.size()) + " heads");
  std::copy(gates.begin(), gates.end(), gates_.begin());
  gated_ = std::any_of(gates_.begin(), gates_.end(), [](float g) { return g != 1.0f; });
  if (gated_ && gated_atty_.empty()) {
    gated_atty_.assign((std::size_t)B_ * T_ * config_.n_embd, 0.0f);
    dgated_atty_.assign(gated_atty_.size(), 0.0f);
  }
}

void Trainer::load(const Model& model) {
  const Model::Impl& m = *model.impl_;
  const ModelConfig& c = m.config_;
  if (c.vocab_size != config_.vocab_size || c.n_positions != config_.n_positions || c.n_embd != config_.n_embd ||
      c.n_layer != config_.n_layer || c.n_head != config_.n_head || c.n_inner != config_.n_inner)
    throw Error("train: the model's shape differs from this trainer's");
  float* P = params_.data();
  const std::size_t C = c.n_embd;
  if (!m.wte_f16_.empty()) {
    for (int v = 0; v < c.vocab_size; v++)  // rows packed one by one (model_load.cpp)
      k::f16_unpack_forward(P + wte_ + v * C, &m.wte_f16_[v * C], C);
  } else {
    std::copy(m.wte_.begin(), m.wte_.end(), P + wte_);
  }
  std::copy(m.wpe_.begin(), m.wpe_.end(), P + wpe_);
  for (std::size_t l = 0; l < layers_.size(); l++) {
    const BlockWeights& b = m.blocks_[l];
    const Layer& w = layers_[l];
    std::copy(b.ln_1_weight.begin(), b.ln_1_weight.end(), P + w.ln1w);
    std::copy(b.ln_1_bias.begin(), b.ln_1_bias.end(), P + w.ln1b);
    k::unpack_linear(P + w.qkvw, P + w.qkvb, b.c_attn);
    k::unpack_linear(P + w.attprojw, P + w.attprojb, b.c_proj);
    std::copy(b.ln_2_weight.begin(), b.ln_2_weight.end(), P + w.ln2w);
    std::copy(b.ln_2_bias.begin(), b.ln_2_bias.end(), P + w.ln2b);
    k::unpack_linear(P + w.fcw, P + w.fcb, b.c_fc);
    k::unpack_linear(P + w.fcprojw, P + w.fcprojb, b.mlp_proj);
  }
  std::copy(m.ln_f_weight_.begin(), m.ln_f_weight_.end(), P + lnfw_);
  std::copy(m.ln_f_bias_.begin(), m.ln_f_bias_.end(), P + lnfb_);
  std::fill(adam_m_.begin(), adam_m_.end(), 0.0f);
  std::fill(adam_v_.begin(), adam_v_.end(), 0.0f);
  adam_t_ = 0;
}

double Trainer::grad_norm() const { return std::sqrt(k::sum_squares(grads_.data(), grads_.size())); }

// The linear layers packed for the model's kernels from the current parameters: K x N moves per
// layer against N_rows x K x N multiply-adds of its forward, once per step.
void Trainer::pack_weights() {
  const float* P = params_.data();
  const int C = config_.n_embd, H = config_.n_inner;
  for (std::size_t l = 0; l < layers_.size(); l++) {
    const Layer& w = layers_[l];
    BlockWeights& b = packed_->blocks[l];
    b.ln_1_weight.assign(P + w.ln1w, P + w.ln1w + C);
    b.ln_1_bias.assign(P + w.ln1b, P + w.ln1b + C);
    k::pack_linear_into(b.c_attn, P + w.qkvw, P + w.qkvb, C, 3 * C);
    k::pack_linear_into(b.c_proj, P + w.attprojw, P + w.attprojb, C, C);
    b.ln_2_weight.assign(P + w.ln2w, P + w.ln2w + C);
    b.ln_2_bias.assign(P + w.ln2b, P + w.ln2b + C);
    k::pack_linear_into(b.c_fc, P + w.fcw, P + w.fcb, C, H);
    k::pack_linear_into(b.mlp_proj, P + w.fcprojw, P + w.fcprojb, H, C);
  }
}

void Trainer::sgd_step(float lr) { sgd_update(params_.data(), grads_.data(), params_.size(), lr); }

void Trainer::adamw_step(const AdamW& hp) {
  if (adam_m_.empty()) throw Error("train: this trainer was made without optimizer state");
  if (hp.clip > 0) {
    // as torch.nn.utils.clip_grad_norm_: scale by clip / (norm + 1e-6) when that is below 1
    const double norm = grad_norm();
    const double coef = hp.clip / (norm + 1e-6);
    if (coef < 1.0)
      for (float& g : grads_) g = (float)(g * coef);
  }
  adam_t_++;
  adamw_update(params_.data(), adam_m_.data(), adam_v_.data(), grads_.data(), params_.size(), hp.lr, hp.beta1,
               hp.beta2, hp.eps, hp.weight_decay, adam_t_);
}

std::vector<uint8_t> Trainer::safetensors_bytes() const {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  std::size_t offset = 0;
  for (const NamedTensor& t : tensors_) {
    const std::size_t nbytes = t.size() * sizeof(float);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  std::vector<uint8_t> out(8 + h.size() + offset);
  const uint64_t n = h.size();
  for (int i = 0; i < 8; i++) out[i] = (uint8_t)(n >> (8 * i));
  std::memcpy(out.data() + 8, h.data(), h.size());
  uint8_t* data = out.data() + 8 + h.size();
  for (const NamedTensor& t : tensors_) {
    // little-endian float32: both targets are little-endian
    std::memcpy(data, params_.data() + t.offset, t.size() * sizeof(float));
    data += t.size() * sizeof(float);
  }
  return out;
}

std::string Trainer::config_json() const {
  const ModelConfig& c = config_;
  nlohmann::ordered_json j = {{"architectures", {"GPT2LMHeadModel"}},
                              {"model_type", "gpt2"},
                              {"vocab_size", c.vocab_size},
                              {"n_positions", c.n_positions},
                              {"n_ctx", c.n_positions},
                              {"n_embd", c.n_embd},
                              {"n_layer", c.n_layer},
                              {"n_head", c.n_head},
                              {"n_inner", c.n_inner > 0 ? c.n_inner : 4 * c.n_embd},
                              {"layer_norm_epsilon", c.layer_norm_epsilon},
                              {"activation_function", c.activation == Activation::gelu_tanh ? "gelu_new" : "gelu"},
                              {"bos_token_id", 0},
                              {"eos_token_id", 0}};
  return j.dump(2) + "\n";
}

}  // namespace headscope::train
