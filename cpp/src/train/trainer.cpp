// Trainer: parameters, gradients, AdamW state and activations in flat arrays (llm.c's layout), for
// GPT-2 and the Llama family; their initialisation, loading, packing for the forward's kernels and
// saving; the optimizer steps. The forward and backward passes are in trainer_passes.cpp. Shapes use
// the legend in train.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

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

void Trainer::layout_gpt2() {
  const int64_t V = config_.vocab_size, C = config_.n_embd, L = config_.n_layer, H = config_.n_inner;
  wte_ = add_tensor("wte.weight", {V, C});
  wpe_ = add_tensor("wpe.weight", {config_.n_positions, C});
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
  head_ = wte_;  // GPT-2's LM head is the embedding
}

// Hugging Face's names and shapes, in an order that keeps q_proj, k_proj, v_proj (and gate_proj,
// up_proj) adjacent: in nn.Linear's [out, in] layout each pair of consecutive tensors is then one
// matrix with the outputs side by side, as the forward's packed q | k | v and gate | up read them.
void Trainer::layout_llama() {
  const ModelConfig& c = config_;
  const int64_t V = c.vocab_size, C = c.n_embd, L = c.n_layer, F = c.n_inner, HS = c.head_size();
  const int64_t QW = c.q_width(), KVW = (int64_t)c.kv_heads() * HS;
  wte_ = add_tensor("model.embed_tokens.weight", {V, C});
  for (int l = 0; l < L; l++) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Layer ly;
    ly.ln1w = add_tensor(p + "input_layernorm.weight", {C});
    ly.qkvw = add_tensor(p + "self_attn.q_proj.weight", {QW, C});
    add_tensor(p + "self_attn.k_proj.weight", {KVW, C});
    add_tensor(p + "self_attn.v_proj.weight", {KVW, C});
    ly.attprojw = add_tensor(p + "self_attn.o_proj.weight", {C, QW});
    if (c.qk_norm) {
      ly.qnorm = add_tensor(p + "self_attn.q_norm.weight", {HS});
      ly.knorm = add_tensor(p + "self_attn.k_norm.weight", {HS});
    }
    ly.ln2w = add_tensor(p + "post_attention_layernorm.weight", {C});
    ly.fcw = add_tensor(p + "mlp.gate_proj.weight", {F, C});
    add_tensor(p + "mlp.up_proj.weight", {F, C});
    ly.fcprojw = add_tensor(p + "mlp.down_proj.weight", {C, F});
    layers_.push_back(ly);
  }
  lnfw_ = add_tensor("model.norm.weight", {C});
  head_ = c.tie_word_embeddings ? wte_ : add_tensor("lm_head.weight", {V, C});
}

Trainer::Trainer(const ModelConfig& config, int B, int T, std::size_t max_bytes, bool optimizer_state)
    : config_(config), B_(B), T_(T) {
  const int64_t V = config.vocab_size, C = config.n_embd, L = config.n_layer, NH = config.n_head;
  const int64_t H = config.n_inner > 0 ? config.n_inner : 4 * C;
  config_.n_inner = (int)H;  // block_forward reads the MLP width from the config
  if (V < 1 || C < 1 || L < 1 || NH < 1 || (!llama() && C % NH != 0))
    throw Error("train: invalid shape (vocab_size, n_embd, n_layer, n_head must be positive, n_embd divisible by n_head)");
  // GPT-2's heads are C / NH wide, each with its own keys and values, whatever a config edited by hand
  // still says in the Llama family's fields (the layout and the activations follow these)
  if (!llama()) {
    config_.n_kv_head = 0;
    config_.head_dim = 0;
  }
  if (llama() && (config.kv_heads() < 1 || NH % config.kv_heads() != 0 || config.head_size() < 2 ||
                  config.head_size() % 2 != 0))
    throw Error("train: invalid Llama-family shape (key/value heads must divide the query heads, the head size must be even)");
  if (B < 1 || T < 1) throw Error("train: batch size and sequence length must be at least 1");
  if (T > config.n_positions)
    throw Error("train: sequence length " + std::to_string(T) + " exceeds n_positions " +
                std::to_string(config.n_positions));
  // The parameters' names, shapes and offsets (nothing allocated yet)
  if (llama()) layout_llama();
  else layout_gpt2();
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
  const double need = 4.0 * ((optimizer_state ? 4.0 : 2.0) * (double)P + 2.0 * n_acts + packed);
  if (need > (double)max_bytes)
    throw Error("train: this shape needs about " + std::to_string((long long)(need / 1048576.0)) +
                " MiB, more than the limit of " + std::to_string((long long)(max_bytes / 1048576)) +
                " MiB: reduce n_embd, n_layer, vocab_size, the batch size or the sequence length");

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
  key_panels_.assign(k::attention_key_panels_floats(T, k::AttentionShape{(int)NH, config_.kv_heads(), config_.head_size()}), 0);
  packed_ = std::make_unique<Packed>();
  packed_->blocks.resize(L);
  packed_->pool = std::make_unique<kernels::ThreadPool>(kernels::hardware_threads());
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
                            &a.ln2_mean, &a.ln2_rstd, &a.fch, &a.fch_gelu, &a.fcproj, &a.res3, &a.qkv_raw,
                            &a.qk_rstd})
        f += v->size();
  f += gated_atty_.size() + dgated_atty_.size() + packed_->transposed.size() + packed_->zeros.size();
  std::size_t packed = 0;  // the layers as the forward's kernels read them (filled by the first forward)
  for (const BlockWeights& b : packed_->blocks)
    packed += b.c_attn.bytes() + b.c_proj.bytes() + b.c_fc.bytes() + b.mlp_proj.bytes();
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
  Normal normal(seed);
  const double proj_std = 0.02 / std::sqrt(2.0 * config_.n_layer);
  for (const NamedTensor& t : tensors_) {
    float* p = params_.data() + t.offset;
    if (llama()) {  // transformers' _init_weights: Linear and Embedding normal(0, 0.02), RMSNorm gains 1
      const bool norm = t.name.ends_with("norm.weight");
      for (std::size_t i = 0; i < t.size(); i++) p[i] = norm ? 1.0f : (float)(0.02 * normal());
      continue;
    }
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

void Trainer::set_head_gates(std::span<const float> gates) {
  if (gates.size() != gates_.size())
    throw Error("train: " + std::to_string(gates.size()) + " head gates for " + std::to_string(gates_.size()) + " heads");
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
  const Model::Impl& m = *model.impl_;
  const ModelConfig& c = m.config_;
  // the Llama family has no position table: its context (which a Model lowers to what its activations
  // allow) is no part of the weights, but its rotation and norms' epsilon are part of the model
  const bool same_rope = c.rope_theta == config_.rope_theta && c.rope_scaling.llama3 == config_.rope_scaling.llama3 &&
                         c.rope_scaling.factor == config_.rope_scaling.factor &&
                         c.rope_scaling.low_freq_factor == config_.rope_scaling.low_freq_factor &&
                         c.rope_scaling.high_freq_factor == config_.rope_scaling.high_freq_factor &&
                         c.rope_scaling.original_max_position_embeddings ==
                             config_.rope_scaling.original_max_position_embeddings;
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
      std::copy(b.ln_1_weight.begin(), b.ln_1_weight.end(), P + w.ln1w);
      unpack_transposed(P + w.qkvw, b.c_attn);
      unpack_transposed(P + w.attprojw, b.c_proj);
      std::copy(b.ln_2_weight.begin(), b.ln_2_weight.end(), P + w.ln2w);
      unpack_transposed(P + w.fcw, b.c_fc);
      unpack_transposed(P + w.fcprojw, b.mlp_proj);
      if (c.qk_norm) {
        std::copy(b.q_norm.begin(), b.q_norm.end(), P + w.qnorm);
        std::copy(b.k_norm.begin(), b.k_norm.end(), P + w.knorm);
      }
    }
    std::copy(m.ln_f_weight_.begin(), m.ln_f_weight_.end(), P + lnfw_);
  } else {
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
      b.ln_1_weight.assign(P + w.ln1w, P + w.ln1w + C);
      pack(b.c_attn, P + w.qkvw, W, C);
      pack(b.c_proj, P + w.attprojw, C, QW);
      b.ln_2_weight.assign(P + w.ln2w, P + w.ln2w + C);
      pack(b.c_fc, P + w.fcw, 2 * H, C);
      pack(b.mlp_proj, P + w.fcprojw, C, H);
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
  if (llama()) {
    const bool qwen = c.qk_norm;  // Qwen3's q/k norms are what tells the two apart
    nlohmann::ordered_json rope = nullptr;
    if (c.rope_scaling.llama3)
      rope = {{"rope_type", "llama3"},
              {"factor", c.rope_scaling.factor},
              {"low_freq_factor", c.rope_scaling.low_freq_factor},
              {"high_freq_factor", c.rope_scaling.high_freq_factor},
              {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
    nlohmann::ordered_json j = {{"architectures", {qwen ? "Qwen3ForCausalLM" : "LlamaForCausalLM"}},
                                {"model_type", qwen ? "qwen3" : "llama"},
                                {"vocab_size", c.vocab_size},
                                {"hidden_size", c.n_embd},
                                {"intermediate_size", c.n_inner},
                                {"num_hidden_layers", c.n_layer},
                                {"num_attention_heads", c.n_head},
                                {"num_key_value_heads", c.kv_heads()},
                                {"head_dim", c.head_size()},
                                {"hidden_act", "silu"},
                                {"max_position_embeddings", c.max_position_embeddings > 0 ? c.max_position_embeddings
                                                                                          : c.n_positions},
                                {"rms_norm_eps", c.layer_norm_epsilon},
                                {"rope_theta", c.rope_theta},
                                {"rope_scaling", rope},
                                {"attention_bias", false},
                                {"tie_word_embeddings", c.tie_word_embeddings},
                                {"torch_dtype", "float32"}};
    if (!qwen) j["mlp_bias"] = false;
    else j["use_sliding_window"] = false;
    return j.dump(2) + "\n";
  }
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
