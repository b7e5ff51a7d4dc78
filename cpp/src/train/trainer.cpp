// Trainer: parameters, gradients, AdamW state and activations in flat arrays (llm.c's layout), for
// GPT-2 and the Llama family; their initialisation, loading, packing for the forward's kernels and
// saving; the optimizer steps. The forward and backward passes are in trainer_passes.cpp. Shapes use
// the legend in train.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>  // the safetensors header
#include <random>

#include "arch/tensor_table.hpp"
#include "model/model_impl.hpp"
#include "train/trainer_impl.hpp"
#include "headscope/error.hpp"
#include "headscope/safetensors.hpp"
#include "kernels/kernels.hpp"

namespace headscope::train {

namespace k = headscope::kernels;
using namespace headscope::kernels;  // the optimizer updates

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

// The flat parameters in the family's table order (arch/), and each block's offsets into them
void Trainer::layout() {
  using arch::Slot;
  // where each slot's offset goes: the model's own tensors, then a block's
  const std::pair<Slot, std::size_t Trainer::*> model[] = {{Slot::embedding, &Trainer::wte_},
                                                           {Slot::positions, &Trainer::wpe_},
                                                           {Slot::lm_head, &Trainer::head_},
                                                           {Slot::final_norm_weight, &Trainer::lnfw_},
                                                           {Slot::final_norm_bias, &Trainer::lnfb_}};
  // clang-format off
  const std::pair<Slot, std::size_t Layer::*> block[] = {
      {Slot::ln1_weight, &Layer::ln1w}, {Slot::ln1_bias, &Layer::ln1b}, {Slot::ln2_weight, &Layer::ln2w},
      {Slot::ln2_bias, &Layer::ln2b}, {Slot::qkv_weight, &Layer::qkvw}, {Slot::qkv_bias, &Layer::qkvb},
      {Slot::attn_proj_weight, &Layer::attprojw}, {Slot::attn_proj_bias, &Layer::attprojb},
      {Slot::fc_weight, &Layer::fcw}, {Slot::fc_bias, &Layer::fcb}, {Slot::mlp_proj_weight, &Layer::fcprojw},
      {Slot::mlp_proj_bias, &Layer::fcprojb}, {Slot::q_norm, &Layer::qnorm}, {Slot::k_norm, &Layer::knorm}};
  // clang-format on
  layers_.assign(config_.n_layer, Layer{});
  bool untied = false;
  for (const arch::TensorEntry& e : arch::tensor_table(config_).tensors) {
    const std::size_t at = add_tensor(e.name, e.shape);
    if (e.layer >= 0 && e.column != 0) continue;  // a later part of a packed layer: it follows the first
    bool placed = false;
    if (e.layer < 0) {
      for (const auto& [slot, member] : model)
        if (slot == e.slot) this->*member = at, placed = true;
      untied = untied || e.slot == Slot::lm_head;
    } else {
      for (const auto& [slot, member] : block)
        if (slot == e.slot) layers_[e.layer].*member = at, placed = true;
    }
    if (!placed) throw Error("train: tensor " + e.name + " has no place in the trainer's layout");
  }
  if (!untied) head_ = wte_;  // a tied LM head is the embedding
}

Trainer::Trainer(const ModelConfig& config, int B, int T, std::size_t max_bytes, bool optimizer_state)
    : Trainer(config, B, T, max_bytes, optimizer_state ? Owns::everything : Owns::no_moments) {}

Trainer::Trainer(const Model& model, int B, int T, std::size_t max_bytes)
    : Trainer(model.impl_->config_, B, T, max_bytes, Owns::nothing) {
  packed_->model = model.impl_.get();
  packed_->borrowed = model.impl_->pool_.get();
}

bool Trainer::borrowing() const { return packed_->model != nullptr; }

void Trainer::require_own_parameters(const char* what) const {
  if (borrowing())
    throw Error(std::string("train: ") + what +
                ": this trainer reads a model's weights and has no parameters of its own");
}

Trainer::Trainer(const ModelConfig& config, int B, int T, std::size_t max_bytes, Owns owns)
    : config_(config), B_(B), T_(T) {
  const int64_t V = config.vocab_size, C = config.n_embd, L = config.n_layer, NH = config.n_head;
  const int64_t H = config.n_inner > 0 ? config.n_inner : 4 * C;
  config_.n_inner = (int)H;  // block_forward reads the MLP width from the config
  if (V < 1 || C < 1 || L < 1 || NH < 1 || (!llama() && C % NH != 0))
    throw Error(
        "train: invalid shape (vocab_size, n_embd, n_layer, n_head must be positive, n_embd divisible by n_head)");
  // GPT-2's heads are C / NH wide, each with its own keys and values, whatever a config edited by hand
  // still says in the Llama family's fields (the layout and the activations follow these)
  if (!llama()) {
    config_.n_kv_head = 0;
    config_.head_dim = 0;
  }
  if (llama() &&
      (config.kv_heads() < 1 || NH % config.kv_heads() != 0 || config.head_size() < 2 || config.head_size() % 2 != 0))
    throw Error(
        "train: invalid Llama-family shape (key/value heads must divide the query heads, the head size must be even)");
  if (B < 1 || T < 1) throw Error("train: batch size and sequence length must be at least 1");
  if (T > config.n_positions)
    throw Error("train: sequence length " + std::to_string(T) + " exceeds n_positions " +
                std::to_string(config.n_positions));
  // The parameters' names, shapes and offsets (nothing allocated yet)
  layout();
  const std::size_t P = tensors_.back().offset + tensors_.back().size();
  // Memory check before any allocation: parameters x4 (weights, grads, m, v), activations x2 (values
  // and gradients), as bytes() counts them afterwards.
  const int64_t QW = config_.q_width(), W = config_.qkv_width(), NKV = NH + config_.kv_heads();
  const double N = (double)B * T;
  const double per_layer =
      llama() ? N * (6.0 * C + 2.0 + W + QW + 3.0 * H + (config_.qk_norm ? (double)W + NKV : 0.0)) + N * NH * T
              : N * (10.0 * C + 4.0 + 2.0 * H) + N * NH * T;
  const double n_acts = N * (2.0 * C + 3.0 + 2.0 * V + 1.0) + L * per_layer;
  // (the packed copy of the layers the forward reads: at most P floats more, with the Llama family's
  // transpose on its way there: one matrix)
  const double packed = (double)P + (llama() ? (double)C * std::max<int64_t>({W, 2 * H, QW}) : 0.0);
  const double copies = owns == Owns::everything ? 4.0 : owns == Owns::no_moments ? 2.0 : 0.0;
  // (borrowing: no copy, but the largest layer transposed for its input's gradient)
  const double largest = (double)C * std::max<int64_t>({W, QW, llama() ? 2 * H : H});
  const double need = 4.0 * (copies * (double)P + 2.0 * n_acts + (owns == Owns::nothing ? largest : packed));
  if (need > (double)max_bytes)
    throw Error("train: this shape needs about " + std::to_string((long long)(need / 1048576.0)) +
                " MiB, more than the limit of " + std::to_string((long long)(max_bytes / 1048576)) +
                " MiB: reduce n_embd, n_layer, vocab_size, the batch size or the sequence length");

  if (owns != Owns::nothing) params_.assign(P, 0.0f);
  norm_grads_discarded_.assign(C, 0.0f);
  if (owns == Owns::everything) {
    grads_.assign(P, 0.0f);
    adam_m_.assign(P, 0.0f);
    adam_v_.assign(P, 0.0f);
  }
  gates_.assign((std::size_t)L * NH, 1.0f);
  gate_grads_.assign((std::size_t)L * NH, 0.0f);

  const std::size_t n = (std::size_t)B * T, nc = n * C, nh = n * H;
  ids_.assign(n, 0);
  targets_.assign(n, 0);
  // dacts_ mirrors acts_, without what only the forward keeps (Qwen3's raw q | k and their rstd)
  auto alloc = [&](LayerActs& a, bool forward) {
    a.ln1.assign(nc, 0);
    a.ln1_mean.assign(llama() ? 0 : n, 0);  // RMSNorm keeps no mean
    a.ln1_rstd.assign(n, 0);
    a.qkv.assign(n * W, 0);
    a.att.assign(n * NH * T, 0);
    a.atty.assign(n * QW, 0);
    a.attproj.assign(nc, 0);
    a.res2.assign(nc, 0);
    a.ln2.assign(nc, 0);
    a.ln2_mean.assign(llama() ? 0 : n, 0);
    a.ln2_rstd.assign(n, 0);
    a.fch.assign(llama() ? 2 * nh : nh, 0);  // the Llama family's gate | up
    a.fch_gelu.assign(nh, 0);
    a.fcproj.assign(nc, 0);
    a.res3.assign(nc, 0);
    if (config_.qk_norm && forward) {
      a.qkv_raw.assign(n * W, 0);
      a.qk_rstd.assign(n * NKV, 0);
    }
  };
  acts_.resize(L);
  dacts_.resize(L);
  for (int l = 0; l < L; l++) {
    alloc(acts_[l], true);
    alloc(dacts_[l], false);
  }
  encoded_.assign(nc, 0);
  lnf_.assign(nc, 0);
  lnf_mean_.assign(llama() ? 0 : n, 0);
  lnf_rstd_.assign(n, 0);
  logits_.assign(n * V, 0);
  probs_.assign(n * V, 0);
  losses_.assign(n, 0);
  dencoded_.assign(nc, 0);
  dlnf_.assign(nc, 0);
  dlogits_.assign(n * V, 0);
  scratch_.assign(std::max<std::size_t>(T, config_.qk_norm ? (std::size_t)W : 0), 0);
  head_proj_.assign(nc, 0);
  key_panels_.assign(
      k::attention_key_panels_floats(T, k::AttentionShape{(int)NH, config_.kv_heads(), config_.head_size()}), 0);
  packed_ = std::make_unique<Packed>();
  packed_->blocks.resize(L);
  // (a borrowing trainer runs on its model's threads: in the threaded wasm build the model holds the workers)
  if (owns != Owns::nothing) packed_->pool = std::make_unique<kernels::ThreadPool>(kernels::hardware_threads());
  if (llama()) {
    packed_->rope = rope_frequencies(config_);
    packed_->zeros.assign((std::size_t)std::max<int64_t>({W, C, 2 * H}), 0.0f);
  }
}

std::size_t Trainer::bytes() const {
  std::size_t f = params_.size() + grads_.size() + adam_m_.size() + adam_v_.size();
  for (const auto* v : {&encoded_, &lnf_, &lnf_mean_, &lnf_rstd_, &logits_, &probs_, &losses_, &dencoded_, &dlnf_,
                        &dlogits_, &scratch_, &head_proj_, &key_panels_})
    f += v->size();
  for (const auto* set : {&acts_, &dacts_})
    for (const LayerActs& a : *set)
      for (const auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.att, &a.atty, &a.attproj, &a.res2, &a.ln2,
                            &a.ln2_mean, &a.ln2_rstd, &a.fch, &a.fch_gelu, &a.fcproj, &a.res3, &a.qkv_raw, &a.qk_rstd})
        f += v->size();
  f += gated_atty_.size() + dgated_atty_.size() + packed_->transposed.size() + packed_->zeros.size();
  std::size_t packed = 0;  // the layers as the forward's kernels read them (filled by the first forward)
  for (const BlockWeights& b : packed_->blocks)
    packed += b.attn_in.bytes() + b.attn_out.bytes() + b.mlp_in.bytes() + b.mlp_out.bytes();
  return f * sizeof(float) + packed + (ids_.size() + targets_.size()) * sizeof(int);
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
  require_own_parameters("init_random");
  Normal normal(seed);
  const double proj_std = 0.02 / std::sqrt(2.0 * config_.n_layer);
  const std::vector<arch::TensorEntry> table = arch::tensor_table(config_).tensors;  // in tensors_'s order
  for (std::size_t i = 0; i < tensors_.size(); i++) {
    const NamedTensor& t = tensors_[i];
    float* p = params_.data() + t.offset;
    const arch::Init init = table[i].init;
    if (init == arch::Init::ones || init == arch::Init::zeros) {  // no draws
      std::fill(p, p + t.size(), init == arch::Init::ones ? 1.0f : 0.0f);
      continue;
    }
    const double sd = init == arch::Init::positions ? 0.01 : init == arch::Init::residual_projection ? proj_std : 0.02;
    for (std::size_t j = 0; j < t.size(); j++) p[j] = (float)(sd * normal());
  }
  std::fill(adam_m_.begin(), adam_m_.end(), 0.0f);
  std::fill(adam_v_.begin(), adam_v_.end(), 0.0f);
  adam_t_ = 0;
}

void Trainer::load(const SafeTensors& st) {
  require_own_parameters("load");
  const std::string prefix = arch::checkpoint_prefix(config_, st);
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

void Trainer::ensure_grads() {
  require_own_parameters("weight gradients");
  if (grads_.empty()) grads_.assign(params_.size(), 0.0f);
}
void Trainer::zero_grad() {
  ensure_grads();
  std::fill(grads_.begin(), grads_.end(), 0.0f);
}

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

void Trainer::set_head_gates(std::span<const float> gates) {
  if (gates.size() != gates_.size())
    throw Error("train: " + std::to_string(gates.size()) + " head gates for " + std::to_string(gates_.size()) +
                " heads");
  std::copy(gates.begin(), gates.end(), gates_.begin());
  gated_ = std::any_of(gates_.begin(), gates_.end(), [](float g) { return g != 1.0f; });
  if (gated_ && gated_atty_.empty()) {
    gated_atty_.assign((std::size_t)B_ * T_ * config_.q_width(), 0.0f);
    dgated_atty_.assign(gated_atty_.size(), 0.0f);
  }
}

namespace {
// dst (cols, rows) = src (rows, cols) transposed
void transpose(float* dst, const float* src, std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; r++)
    for (std::size_t c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
}
// A (V, C) matrix of a model, float32 or F16 packed row by row (model_load.cpp), widened into dst
void copy_embedding(float* dst, const std::vector<float>& f32, const std::vector<uint16_t>& f16, std::size_t V,
                    std::size_t C) {
  if (f16.empty()) {
    std::copy(f32.begin(), f32.end(), dst);
    return;
  }
  for (std::size_t v = 0; v < V; v++) k::f16_unpack_forward(dst + v * C, &f16[v * C], C);
}
}  // namespace

void Trainer::load(const Model& model) {
  require_own_parameters("load");
  const Model::Impl& m = *model.impl_;
  const ModelConfig& c = m.config_;
  // the Llama family has no position table: its context (which a Model lowers to what its activations
  // allow) is no part of the weights, but its rotation and norms' epsilon are part of the model
  const bool same_rope =
      c.rope_theta == config_.rope_theta && c.rope_scaling.llama3 == config_.rope_scaling.llama3 &&
      c.rope_scaling.factor == config_.rope_scaling.factor &&
      c.rope_scaling.low_freq_factor == config_.rope_scaling.low_freq_factor &&
      c.rope_scaling.high_freq_factor == config_.rope_scaling.high_freq_factor &&
      c.rope_scaling.original_max_position_embeddings == config_.rope_scaling.original_max_position_embeddings;
  if (c.family != config_.family || c.vocab_size != config_.vocab_size || c.n_embd != config_.n_embd ||
      c.n_layer != config_.n_layer || c.n_head != config_.n_head || c.n_inner != config_.n_inner ||
      c.kv_heads() != config_.kv_heads() || c.head_size() != config_.head_size() || c.qk_norm != config_.qk_norm ||
      (!llama() && c.n_positions != config_.n_positions) ||
      (llama() && (c.tie_word_embeddings != config_.tie_word_embeddings || !same_rope ||
                   c.layer_norm_epsilon != config_.layer_norm_epsilon)))
    throw Error("train: the model's shape differs from this trainer's");
  float* P = params_.data();
  const std::size_t C = c.n_embd;
  copy_embedding(P + wte_, m.wte_, m.wte_f16_, c.vocab_size, C);
  if (llama()) {
    if (head_ != wte_) copy_embedding(P + head_, m.lm_head_, m.lm_head_f16_, c.vocab_size, C);
    // the packed layers unpacked to (in, out), then transposed back to nn.Linear's (out, in)
    std::vector<float>& tmp = packed_->transposed;
    const auto unpack_transposed = [&](float* dst, const k::PackedLinear& W) {
      tmp.resize((std::size_t)W.K * W.N);
      k::unpack_linear(tmp.data(), nullptr, W);
      transpose(dst, tmp.data(), W.K, W.N);
    };
    for (std::size_t l = 0; l < layers_.size(); l++) {
      const BlockWeights& b = m.blocks_[l];
      const Layer& w = layers_[l];
      std::copy(b.norm1_weight.begin(), b.norm1_weight.end(), P + w.ln1w);
      unpack_transposed(P + w.qkvw, b.attn_in);
      unpack_transposed(P + w.attprojw, b.attn_out);
      std::copy(b.norm2_weight.begin(), b.norm2_weight.end(), P + w.ln2w);
      unpack_transposed(P + w.fcw, b.mlp_in);
      unpack_transposed(P + w.fcprojw, b.mlp_out);
      if (c.qk_norm) {
        std::copy(b.q_norm.begin(), b.q_norm.end(), P + w.qnorm);
        std::copy(b.k_norm.begin(), b.k_norm.end(), P + w.knorm);
      }
    }
    std::copy(m.final_norm_weight_.begin(), m.final_norm_weight_.end(), P + lnfw_);
  } else {
    std::copy(m.wpe_.begin(), m.wpe_.end(), P + wpe_);
    for (std::size_t l = 0; l < layers_.size(); l++) {
      const BlockWeights& b = m.blocks_[l];
      const Layer& w = layers_[l];
      std::copy(b.norm1_weight.begin(), b.norm1_weight.end(), P + w.ln1w);
      std::copy(b.norm1_bias.begin(), b.norm1_bias.end(), P + w.ln1b);
      k::unpack_linear(P + w.qkvw, P + w.qkvb, b.attn_in);
      k::unpack_linear(P + w.attprojw, P + w.attprojb, b.attn_out);
      std::copy(b.norm2_weight.begin(), b.norm2_weight.end(), P + w.ln2w);
      std::copy(b.norm2_bias.begin(), b.norm2_bias.end(), P + w.ln2b);
      k::unpack_linear(P + w.fcw, P + w.fcb, b.mlp_in);
      k::unpack_linear(P + w.fcprojw, P + w.fcprojb, b.mlp_out);
    }
    std::copy(m.final_norm_weight_.begin(), m.final_norm_weight_.end(), P + lnfw_);
    std::copy(m.final_norm_bias_.begin(), m.final_norm_bias_.end(), P + lnfb_);
  }
  std::fill(adam_m_.begin(), adam_m_.end(), 0.0f);
  std::fill(adam_v_.begin(), adam_v_.end(), 0.0f);
  adam_t_ = 0;
}

double Trainer::grad_norm() const { return std::sqrt(k::sum_squares(grads_.data(), grads_.size())); }

// The linear layers packed for the model's kernels from the current parameters: K x N moves per
// layer against N_rows x K x N multiply-adds of its forward, once per step (the Llama family's
// through a transpose from nn.Linear's layout first, as many moves again).
void Trainer::pack_weights() {
  const float* P = params_.data();
  const int C = config_.n_embd, H = config_.n_inner;
  if (llama()) {
    const int W = config_.qkv_width(), QW = config_.q_width(), HS = config_.head_size();
    const float* zeros = packed_->zeros.data();
    std::vector<float>& tmp = packed_->transposed;
    // an (out, in) nn.Linear weight into the packed (in, out) layout, with a zero bias
    const auto pack = [&](k::PackedLinear& dst, const float* w, int out, int in) {
      tmp.resize((std::size_t)out * in);
      transpose(tmp.data(), w, out, in);
      k::pack_linear_into(dst, tmp.data(), zeros, in, out);
    };
    for (std::size_t l = 0; l < layers_.size(); l++) {
      const Layer& w = layers_[l];
      BlockWeights& b = packed_->blocks[l];
      b.norm1_weight.assign(P + w.ln1w, P + w.ln1w + C);
      pack(b.attn_in, P + w.qkvw, W, C);
      pack(b.attn_out, P + w.attprojw, C, QW);
      b.norm2_weight.assign(P + w.ln2w, P + w.ln2w + C);
      pack(b.mlp_in, P + w.fcw, 2 * H, C);
      pack(b.mlp_out, P + w.fcprojw, C, H);
      if (config_.qk_norm) {
        b.q_norm.assign(P + w.qnorm, P + w.qnorm + HS);
        b.k_norm.assign(P + w.knorm, P + w.knorm + HS);
      }
    }
    return;
  }
  for (std::size_t l = 0; l < layers_.size(); l++) {
    const Layer& w = layers_[l];
    BlockWeights& b = packed_->blocks[l];
    b.norm1_weight.assign(P + w.ln1w, P + w.ln1w + C);
    b.norm1_bias.assign(P + w.ln1b, P + w.ln1b + C);
    k::pack_linear_into(b.attn_in, P + w.qkvw, P + w.qkvb, C, 3 * C);
    k::pack_linear_into(b.attn_out, P + w.attprojw, P + w.attprojb, C, C);
    b.norm2_weight.assign(P + w.ln2w, P + w.ln2w + C);
    b.norm2_bias.assign(P + w.ln2b, P + w.ln2b + C);
    k::pack_linear_into(b.mlp_in, P + w.fcw, P + w.fcb, C, H);
    k::pack_linear_into(b.mlp_out, P + w.fcprojw, P + w.fcprojb, H, C);
  }
}

void Trainer::sgd_step(float lr) {
  require_own_parameters("sgd_step");
  ensure_grads();
  sgd_update(params_.data(), grads_.data(), params_.size(), lr);
}
void Trainer::adamw_step(const AdamW& hp) {
  require_own_parameters("adamw_step");
  if (adam_m_.empty()) throw Error("train: this trainer was made without optimizer state");
  if (hp.clip > 0) {
    // as torch.nn.utils.clip_grad_norm_: scale by clip / (norm + 1e-6) when that is below 1
    const double norm = grad_norm();
    const double coef = hp.clip / (norm + 1e-6);
    if (coef < 1.0)
      for (float& g : grads_) g = (float)(g * coef);
  }
  adam_t_++;
  adamw_update(params_.data(), adam_m_.data(), adam_v_.data(), grads_.data(), params_.size(), hp.lr, hp.beta1, hp.beta2,
               hp.eps, hp.weight_decay, adam_t_);
}

std::vector<uint8_t> Trainer::safetensors_bytes() const {
  require_own_parameters("safetensors_bytes");
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

std::string Trainer::config_json() const { return arch::config_json(config_); }

}  // namespace headscope::train
