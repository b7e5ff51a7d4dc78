// Model: runs. Tokens -> the forward pass with the key/value cache for typing at the end, and the
// results of the last run. Loading is in model_load.cpp.
#include "headscope/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <new>

#include "headscope/error.hpp"
#include "headscope/safetensors.hpp"
#include "model_impl.hpp"
#include "model_memory.hpp"

namespace headscope {

bool Model::Impl::reserve(int tokens) { return ensure_capacity(std::clamp(tokens, 1, config_.n_positions)); }

bool Model::Impl::ensure_capacity(int T) {
  if (T <= cap_) return false;
  const std::size_t L = config_.n_layer, NH = config_.n_head, C = config_.n_embd, F = config_.n_inner;
  // Sizes come from config.json and the text: add them up in 64 bits and refuse before allocating,
  // so a hostile config cannot overflow a 32-bit size_t (wasm) into a small buffer.
  const auto floats_for = [&](uint64_t c64) {
    return (uint64_t)(L + 1) * c64 * C + (uint64_t)L * c64 * 3 * C + (uint64_t)L * NH * c64 * c64 + (uint64_t)L * c64 * C +
           (uint64_t)L * NH * c64 + 3 * c64 * C + c64 * F +
           (uint64_t)L * (2 * c64 + 32) * C /* key panels and values: L x NH x <= (2 cap + panel) x HS */;
  };
  // Grow geometrically, with room for the next words typed, so typing does not reallocate at every
  // token: a reallocation drops the cache (the next run computes every token again). Exactly T
  // when the room would not fit.
  int cap = std::min(config_.n_positions, std::max({T + T / 8 + 16, 2 * cap_, 16}));
  if (floats_for(cap) > kMaxActivationFloats) cap = T;
  const uint64_t floats = floats_for(cap);
  if (floats > kMaxActivationFloats)
    throw Error("running " + std::to_string(T) + " tokens needs " + std::to_string(floats * 4 >> 20) +
                " MB of activations, more than the " + std::to_string(kMaxActivationFloats * 4 >> 20) +
                " MB limit; use a shorter text");
  try {
    residual_.assign((L + 1) * cap * C, 0.0f);
    qkv_.assign(L * cap * 3 * C, 0.0f);
    att_.assign(L * NH * cap * cap, 0.0f);
    head_out_.assign(L * cap * C, 0.0f);
    contrib_.clear();
    contrib_norm_.assign(L * NH * cap, 0.0f);
    scratch_ln_.assign(cap * C, 0.0f);
    scratch_proj_.assign(cap * C, 0.0f);
    scratch_head_.assign(cap * C, 0.0f);
    scratch_fc_.assign(cap * F, 0.0f);
    key_panels_.assign(L * kernels::attention_key_panels_floats((int)cap, (int)C, (int)NH), 0.0f);
  } catch (const std::bad_alloc&) {
    // leave no half-sized buffers behind: the next run starts from nothing
    cap_ = 0;
    has_run_ = false;
    cached_tokens_ = 0;
    cached_logits_ = 0;
    for (auto* v : {&residual_, &qkv_, &att_, &head_out_, &contrib_norm_, &scratch_ln_, &scratch_proj_, &scratch_head_,
                    &scratch_fc_, &key_panels_})
      std::vector<float>().swap(*v);
    throw Error("out of memory: running " + std::to_string(T) + " tokens needs about " + gigabytes(floats * 4) +
                " of activations next to " + gigabytes(weight_bytes()) + " of weights; use a shorter text");
  }
  logits_all_.clear();
  inspect_scores_.clear();
  inspect_out_.clear();
  value_norm_.clear();
  value_norm_rows_ = 0;
  cap_ = cap;
  cached_tokens_ = 0;
  cached_logits_ = 0;
  has_run_ = false;  // the buffers holding the last run's results were just cleared
  return true;
}

int Model::Impl::tokens_to_drop(int tokens) const {
  const int n = config_.n_positions, step = std::max(1, n / Model::kContextDropSteps);
  return tokens <= n ? 0 : (tokens - n + step - 1) / step * step;
}

RunInfo Model::Impl::run(std::string_view text, const RunOptions& options) {
  if (text.empty()) throw Error("text is empty");
  std::vector<Token> tokens = tokenizer_->encode(text);  // throws on invalid UTF-8
  if (tokens.empty()) throw Error("text is empty");
  const int dropped = tokens_to_drop((int)tokens.size());
  tokens.erase(tokens.begin(), tokens.begin() + dropped);
  std::vector<int32_t> ids(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); i++) ids[i] = tokens[i].id;
  RunInfo info = run_ids(ids, options);
  tokens_ = std::move(tokens);
  info.dropped_tokens = dropped;
  info.first_byte = tokens_.front().byte_start;
  return info;
}

RunInfo Model::Impl::run_ids(std::span<const int32_t> ids, const RunOptions& options) {
  const ModelConfig& c = config_;
  const int T = (int)ids.size();
  if (T == 0) throw Error("no tokens to run");
  if (T > c.n_positions)
    throw Error(std::to_string(T) + " tokens exceed the model's context of " + std::to_string(c.n_positions));
  for (int t = 0; t < T; t++)
    if (ids[t] < 0 || ids[t] >= c.vocab_size)
      throw Error("token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) + " is outside [0, " +
                  std::to_string(c.vocab_size) + ")");
  std::vector<uint8_t> mask((std::size_t)c.n_layer * c.n_head, 0);
  for (const HeadRef& h : options.ablate) {
    check_layer_head(h.layer, h.head);
    mask[(std::size_t)h.layer * c.n_head + h.head] = 1;
  }
  if (options.inspect) check_layer_head(options.inspect->layer, options.inspect->head);

  ensure_capacity(T);
  // Reuse the cached prefix only if it was computed with the same switched-off heads and holds
  // everything this run must return. Logits for every position are not part of the cache: a run
  // that wants them computes those the cache lacks from the final residual stream it keeps, so a
  // loss computed while the reader pauses does not cost the next keystroke a full recompute.
  int reuse = 0;
  // an inspected head needs its scores and write for the cached rows too: kept only by a run that
  // inspected the same head
  const bool kept_compatible = has_run_ && (!options.keep_contributions || options_.keep_contributions) &&
                               (!options.inspect || options_.inspect == options.inspect);
  if (kept_compatible && mask == ablate_mask_) {
    const int limit = std::min({cached_tokens_, T, (int)ids_.size()});
    while (reuse < limit && ids_[reuse] == ids[reuse]) reuse++;
  }
  // The same tokens with other heads switched off: the layers below the first one whose switched-off
  // heads differ computed exactly this run's numbers, so the run starts at that layer, every token.
  // Measuring heads switches them one at a time: on average half the layers are computed.
  int layer_begin = 0;
  if (kept_compatible && mask != ablate_mask_ && cached_tokens_ == T && (int)ids_.size() == T &&
      std::equal(ids.begin(), ids.end(), ids_.begin())) {
    const std::size_t NH = c.n_head;
    while (std::equal(mask.begin() + (std::ptrdiff_t)(layer_begin * NH), mask.begin() + (std::ptrdiff_t)((layer_begin + 1) * NH),
                      ablate_mask_.begin() + (std::ptrdiff_t)(layer_begin * NH)))
      layer_begin++;  // stops before n_layer: the masks differ somewhere
  }
  if (options.keep_contributions && (uint64_t)c.n_layer * c.n_head * cap_ * c.n_embd > kMaxActivationFloats)
    throw Error("keeping head contributions for " + std::to_string(T) + " tokens needs too much memory; use a shorter text");
  if (options.all_logits && (uint64_t)cap_ * c.vocab_size > kMaxActivationFloats)
    throw Error("logits for all " + std::to_string(T) + " positions need too much memory; use a shorter text");
  if (options.keep_contributions && contrib_.size() != (std::size_t)c.n_layer * c.n_head * cap_ * c.n_embd) {
    contrib_.assign((std::size_t)c.n_layer * c.n_head * cap_ * c.n_embd, 0.0f);
    reuse = layer_begin = 0;
  }
  if (options.inspect) {
    if (inspect_scores_.size() != (std::size_t)cap_ * cap_) {
      inspect_scores_.assign((std::size_t)cap_ * cap_, 0.0f);
      inspect_out_.assign((std::size_t)cap_ * c.n_embd, 0.0f);
      reuse = layer_begin = 0;
    }
  }
  if (options.all_logits && logits_all_.size() != (std::size_t)cap_ * c.vocab_size) {
    logits_all_.assign((std::size_t)cap_ * c.vocab_size, 0.0f);
    cached_logits_ = 0;
  }
  const int logits_begin = std::min(reuse, cached_logits_);

  ids_.assign(ids.begin(), ids.end());
  tokens_.clear();
  for (int t = 0; t < T; t++) {
    // run_ids has no source text: spans index the concatenation of the tokens' bytes
    Token tok;
    tok.id = ids[t];
    tok.text = tokenizer_->token_display(ids[t]);
    tok.byte_start = t ? tokens_.back().byte_end : 0;
    tok.byte_end = tok.byte_start + (uint32_t)tokenizer_->token_bytes(ids[t]).size();
    tokens_.push_back(std::move(tok));
  }
  options_ = options;
  ablate_mask_ = std::move(mask);
  T_ = T;
  has_run_ = true;
  value_norm_rows_ = std::min(value_norm_rows_, reuse);
  forward(reuse, logits_begin, layer_begin);
  cached_tokens_ = T;
  cached_logits_ = options.all_logits ? T : std::min(cached_logits_, reuse);
  RunInfo info;
  info.tokens = T;
  info.reused_tokens = reuse;
  info.reused_layers = layer_begin;
  return info;
}

// Computes positions [t_begin, T_) of layers [layer_begin, L); positions below t_begin, and layers
// below layer_begin (then t_begin is 0), are the cache. With all_logits, the logits of positions
// [logits_begin, T_) (logits_begin <= t_begin: the cache may hold positions whose logits were never computed).
void Model::Impl::forward(int t_begin, int logits_begin, int layer_begin) {
  namespace k = kernels;
  const ModelConfig& c = config_;
  const int T = T_, n = T - t_begin;  // n: rows computed in this call
  const int C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  const std::size_t cap = cap_;

  if (n > 0) {
    for (int t = t_begin; layer_begin == 0 && t < T; t++) {
      float* row = &residual_[(std::size_t)t * C];
      if (wte_f16_.empty()) {
        k::add_forward(row, &wte_[(std::size_t)ids_[t] * C], &wpe_[(std::size_t)t * C], C);
      } else {  // widened in place (exact), then the same add
        k::f16_unpack_forward(row, &wte_f16_[(std::size_t)ids_[t] * C], C);
        k::add_forward(row, row, &wpe_[(std::size_t)t * C], C);
      }
    }

    for (int l = layer_begin; l < c.n_layer; l++) {
      float* x_next = &residual_[((l + 1) * cap + t_begin) * C];  // (n, C) stream leaving the block
      BlockBuffers io;
      io.x = &residual_[(l * cap + t_begin) * C];  // (n, C) stream entering it
      io.ln1 = io.ln2 = scratch_ln_.data();
      io.qkv = &qkv_[l * cap * 3 * C];
      io.att = &att_[l * NH * cap * cap];
      io.key_panels = key_panels_.data() + l * k::attention_key_panels_floats((int)cap, C, NH);
      io.head_out = &head_out_[l * cap * C];
      io.head_proj = scratch_head_.data();
      io.attn_proj = io.mlp_out = scratch_proj_.data();
      io.res_mid = io.res_out = x_next;
      io.fc_pre = io.fc_act = scratch_fc_.data();
      io.ablate = &ablate_mask_[(std::size_t)l * NH];
      io.contrib = options_.keep_contributions ? &contrib_[(std::size_t)l * NH * cap * C] : nullptr;
      io.norms = &contrib_norm_[(std::size_t)l * NH * cap];
      if (options_.inspect && options_.inspect->layer == l) {
        io.inspect_head = options_.inspect->head;
        io.inspect_scores = inspect_scores_.data();
        io.inspect_out = inspect_out_.data();
      }
      block_forward(c, blocks_[l], io, 1, t_begin, T, (int)cap);
    }
  }

  // final LayerNorm and tied LM head; the last row always (T may have shrunk: text deleted at the end)
  const float* final_stream = &residual_[(std::size_t)c.n_layer * cap * C];
  if (options_.all_logits && T > logits_begin) {
    const int rows = T - logits_begin;
    k::layernorm_forward(scratch_ln_.data(), nullptr, nullptr, final_stream + (std::size_t)logits_begin * C,
                         ln_f_weight_.data(), ln_f_bias_.data(), rows, C, c.layer_norm_epsilon);
    lm_head(&logits_all_[(std::size_t)logits_begin * V], scratch_ln_.data(), rows);
  }
  logits_last_.resize(V);
  k::layernorm_forward(scratch_ln_.data(), nullptr, nullptr, final_stream + (std::size_t)(T - 1) * C,
                       ln_f_weight_.data(), ln_f_bias_.data(), 1, C, c.layer_norm_epsilon);
  lm_head(logits_last_.data(), scratch_ln_.data(), 1);
}

// out (T, V) = x (T, C) @ wte^T, the tied LM head, in either storage
void Model::Impl::lm_head(float* out, const float* x, int T) {
  const int C = config_.n_embd, V = config_.vocab_size;
  if (wte_f16_.empty())
    kernels::matmul_transposed_forward(out, x, wte_.data(), T, C, V);
  else
    kernels::matmul_transposed_f16_forward(out, x, wte_f16_.data(), T, C, V, scratch_wte_.data());
}

// ---- results ---------------------------------------------------------------------------------

void Model::Impl::require_run() const {
  if (!has_run_) throw Error("no results yet: call run() first");
}

void Model::Impl::check_layer_head(int layer, int head) const {
  if (layer < 0 || layer >= config_.n_layer)
    throw Error("layer " + std::to_string(layer) + " is outside [0, " + std::to_string(config_.n_layer) + ")");
  if (head < 0 || head >= config_.n_head)
    throw Error("head " + std::to_string(head) + " is outside [0, " + std::to_string(config_.n_head) + ")");
}

std::span<const float> Model::Impl::logits_last() const {
  require_run();
  return logits_last_;
}

std::vector<float> Model::Impl::logits_all() const {
  require_run();
  if (!options_.all_logits) throw Error("logits for all positions were not kept: run with all_logits");
  const std::size_t V = config_.vocab_size;
  return std::vector<float>(logits_all_.begin(), logits_all_.begin() + (std::ptrdiff_t)(T_ * V));
}

std::vector<float> Model::Impl::attention(int layer, int head) const {
  require_run();
  check_layer_head(layer, head);
  std::vector<float> out((std::size_t)T_ * T_);
  const float* src = &att_[((std::size_t)layer * config_.n_head + head) * cap_ * cap_];
  for (int t = 0; t < T_; t++) std::copy(src + (std::size_t)t * cap_, src + (std::size_t)t * cap_ + T_, &out[(std::size_t)t * T_]);
  return out;
}

void Model::Impl::copy_attention_all(float* out) const { copy_attention_rows(out, 0, T_, T_); }

std::size_t Model::Impl::attention_rows_floats(int row_begin, int block_rows, int stride) const {
  require_run();
  const std::string t = std::to_string(T_);
  if (row_begin < 0 || row_begin > T_) throw Error("attention rows must start within [0, " + t + "], got " + std::to_string(row_begin));
  if (stride < T_ || stride > config_.n_positions)
    throw Error("attention row stride must be within [" + t + ", " + std::to_string(config_.n_positions) + "], got " + std::to_string(stride));
  if (block_rows < T_ - row_begin || block_rows > config_.n_positions)
    throw Error("a block of " + std::to_string(block_rows) + " rows cannot hold attention rows " + std::to_string(row_begin) + " to " + t +
                " (at most n_positions = " + std::to_string(config_.n_positions) + " rows)");
  // 64-bit product, refused above the activation limit before a 32-bit size_t (wasm) could wrap
  const uint64_t floats = (uint64_t)config_.n_layer * config_.n_head * block_rows * stride;
  if (floats > kMaxActivationFloats)
    throw Error("attention rows of " + std::to_string(block_rows) + " x " + std::to_string(stride) + " per head need " +
                std::to_string(floats * 4 >> 20) + " MB, more than the " + std::to_string(kMaxActivationFloats * 4 >> 20) + " MB limit");
  return (std::size_t)floats;
}

void Model::Impl::copy_attention_rows(float* out, int row_begin, int block_rows, int stride) const {
  attention_rows_floats(row_begin, block_rows, stride);
  for (int l = 0; l < config_.n_layer; l++)
    for (int h = 0; h < config_.n_head; h++) {
      const std::size_t head = (std::size_t)l * config_.n_head + h;
      const float* src = &att_[head * cap_ * cap_];  // (cap, cap): the engine's own rows
      float* block = out + head * block_rows * (std::size_t)stride;
      for (int q = row_begin; q < T_; q++) {
        float* dst = block + (std::size_t)(q - row_begin) * stride;
        std::copy_n(src + (std::size_t)q * cap_, T_, dst);
        std::fill(dst + T_, dst + stride, 0.0f);
      }
    }
}

std::vector<float> Model::Impl::attention_all() const {
  require_run();
  std::vector<float> out((std::size_t)config_.n_layer * config_.n_head * T_ * T_);
  copy_attention_all(out.data());
  return out;
}

std::vector<float> Model::Impl::hidden_states() const {
  require_run();
  const std::size_t C = config_.n_embd, rows = (std::size_t)T_ * C;
  std::vector<float> out((config_.n_layer + 1) * rows);
  for (int l = 0; l <= config_.n_layer; l++)
    std::copy_n(&residual_[l * cap_ * C], rows, &out[l * rows]);
  return out;
}

std::vector<float> Model::Impl::contribution(int layer, int head) const {
  require_run();
  check_layer_head(layer, head);
  if (!options_.keep_contributions) throw Error("head contributions were not kept: run with keep_contributions");
  const std::size_t C = config_.n_embd;
  const float* src = &contrib_[((std::size_t)layer * config_.n_head + head) * cap_ * C];
  return std::vector<float>(src, src + (std::size_t)T_ * C);
}

std::vector<float> Model::Impl::contribution_norms() const {
  require_run();
  std::vector<float> out((std::size_t)config_.n_layer * config_.n_head * T_);
  for (std::size_t lh = 0; lh < (std::size_t)config_.n_layer * config_.n_head; lh++)
    std::copy_n(&contrib_norm_[lh * cap_], T_, &out[lh * T_]);
  return out;
}

// || v_j @ W_O^h || for rows j in [row_begin, T_) of head (layer, head) into out[j - row_begin]: each
// value through the head's rows of W_O, by the kernel that gives the head its write. A row's result
// does not depend on how many rows are computed together, so rows added later equal a full run's.
// scratch: grown to (T_ - row_begin, C) floats, reused across heads by the caller.
void Model::Impl::value_norm_rows(float* out, int layer, int head, int row_begin, std::vector<float>& moved) const {
  const int C = config_.n_embd, HS = config_.head_size(), n = T_ - row_begin;
  if (n <= 0) return;
  const float* values = &qkv_[((std::size_t)layer * cap_ + row_begin) * 3 * C + 2 * C];
  moved.resize((std::size_t)n * C);
  kernels::matmul_rows_forward(moved.data(), values, 3 * C, blocks_[layer].c_proj, head * HS, (head + 1) * HS, n);
  for (int t = 0; t < n; t++) {
    const float* row = &moved[(std::size_t)t * C];
    out[t] = std::sqrt(kernels::dot(row, row, C));
  }
}

std::vector<float> Model::Impl::value_norms() const {
  require_run();
  const std::size_t LH = (std::size_t)config_.n_layer * config_.n_head, cap = cap_;
  if (value_norm_.size() != LH * cap) {
    value_norm_.assign(LH * cap, 0.0f);
    value_norm_rows_ = 0;
  }
  if (value_norm_rows_ < T_) {
    std::vector<float> scratch;
    for (std::size_t lh = 0; lh < LH; lh++)
      value_norm_rows(&value_norm_[lh * cap + value_norm_rows_], (int)(lh / config_.n_head), (int)(lh % config_.n_head),
                      value_norm_rows_, scratch);
    value_norm_rows_ = T_;
  }
  std::vector<float> out(LH * T_);
  for (std::size_t lh = 0; lh < LH; lh++) std::copy_n(&value_norm_[lh * cap], T_, &out[lh * T_]);
  return out;
}

HeadInside Model::Impl::head_inside() const {
  require_run();
  if (!options_.inspect) throw Error("no head was inspected: run with RunOptions::inspect");
  const ModelConfig& c = config_;
  const int l = options_.inspect->layer, h = options_.inspect->head, T = T_, C = c.n_embd, HS = c.head_size();
  const std::size_t cap = cap_;
  HeadInside r;
  r.layer = l;
  r.head = h;
  r.T = T;
  r.head_size = HS;
  r.n_embd = C;
  // q, k and v are the forward's own rows of c_attn's output (qkv_, the key/value cache)
  const float* qkv = &qkv_[l * cap * 3 * C];
  for (const auto& [dst, third] : {std::pair{&r.q, 0}, std::pair{&r.k, 1}, std::pair{&r.v, 2}}) {
    dst->resize((std::size_t)T * HS);
    for (int t = 0; t < T; t++)
      std::copy_n(qkv + (std::size_t)t * 3 * C + third * C + h * HS, HS, dst->data() + (std::size_t)t * HS);
  }
  r.scores.assign((std::size_t)T * T, -std::numeric_limits<float>::infinity());
  r.attention.resize((std::size_t)T * T);
  const float* att = &att_[((std::size_t)l * c.n_head + h) * cap * cap];
  for (int t = 0; t < T; t++) {
    std::copy_n(&inspect_scores_[(std::size_t)t * cap], t + 1, &r.scores[(std::size_t)t * T]);
    std::copy_n(att + (std::size_t)t * cap, T, &r.attention[(std::size_t)t * T]);
  }
  r.z.resize((std::size_t)T * HS);
  for (int t = 0; t < T; t++)
    std::copy_n(&head_out_[(l * cap + t) * C + h * HS], HS, &r.z[(std::size_t)t * HS]);
  r.out.assign(inspect_out_.begin(), inspect_out_.begin() + (std::ptrdiff_t)T * C);
  r.value_norm.resize(T);
  std::vector<float> scratch;
  value_norm_rows(r.value_norm.data(), l, h, 0, scratch);
  return r;
}

double LogitAttribution::total() const {
  double s = embedding + ln_bias;
  for (double x : heads) s += x;
  for (double x : attn_bias) s += x;
  for (double x : mlp) s += x;
  return s;
}

LogitAttribution Model::Impl::logit_attribution(int position, int token) const {
  require_run();
  const ModelConfig& c = config_;
  if (position < 0 || position >= T_)
    throw Error("position " + std::to_string(position) + " is outside [0, " + std::to_string(T_) + ")");
  if (token < 0 || token >= c.vocab_size)
    throw Error("token " + std::to_string(token) + " is outside [0, " + std::to_string(c.vocab_size) + ")");
  const int C = c.n_embd, L = c.n_layer, NH = c.n_head;
  const std::size_t cap = cap_;
  // the token's unembedding times the final LayerNorm's scale, in double
  std::vector<double> w(C);
  std::vector<float> row(C);
  if (wte_f16_.empty()) std::copy_n(&wte_[(std::size_t)token * C], C, row.data());
  else kernels::f16_unpack_forward(row.data(), &wte_f16_[(std::size_t)token * C], C);
  for (int i = 0; i < C; i++) w[i] = (double)row[i] * ln_f_weight_[i];
  // the final LayerNorm's scale at the position, from the residual stream it normalizes
  const float* x = &residual_[((std::size_t)L * cap + position) * C];
  double mean = 0, var = 0;
  for (int i = 0; i < C; i++) mean += x[i];
  mean /= C;
  for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
  const double rstd = 1.0 / std::sqrt(var / C + c.layer_norm_epsilon);
  // one part's attribution: its write centered, scaled, dotted with w
  const auto part = [&](const double* v) {
    double m = 0, s = 0;
    for (int i = 0; i < C; i++) m += v[i];
    m /= C;
    for (int i = 0; i < C; i++) s += (v[i] - m) * w[i];
    return s * rstd;
  };
  LogitAttribution a;
  a.position = position;
  a.token = token;
  std::vector<double> v(C), attn(C);
  for (int i = 0; i < C; i++) v[i] = residual_[(std::size_t)position * C + i];
  a.embedding = part(v.data());
  for (int l = 0; l < L; l++) {
    std::fill(attn.begin(), attn.end(), 0.0);
    const int HS = c.head_size();
    for (int h = 0; h < NH; h++) {
      // the head's write at the position, by the forward's own kernel on its output row (a row
      // computed alone equals the same row computed with the others, bit for bit); 0 if switched off
      std::vector<float> ch(C, 0.0f);
      if (!ablate_mask_[(std::size_t)l * NH + h])
        kernels::matmul_rows_forward(ch.data(), &head_out_[(l * cap + position) * C], C, blocks_[l].c_proj, h * HS,
                                     (h + 1) * HS, 1);
      for (int i = 0; i < C; i++) v[i] = ch[i], attn[i] += ch[i];
      a.heads.push_back(part(v.data()));
    }
    const std::vector<float>& bias = blocks_[l].c_proj.bias;
    for (int i = 0; i < C; i++) v[i] = bias[i], attn[i] += bias[i];
    a.attn_bias.push_back(part(v.data()));
    // the MLP's write: what the block added beyond its attention
    const float* in = &residual_[((std::size_t)l * cap + position) * C];
    const float* out = &residual_[((std::size_t)(l + 1) * cap + position) * C];
    for (int i = 0; i < C; i++) v[i] = (double)out[i] - in[i] - attn[i];
    a.mlp.push_back(part(v.data()));
  }
  for (int i = 0; i < C; i++) a.ln_bias += (double)ln_f_bias_[i] * row[i];
  a.logit = position == T_ - 1 ? logits_last_[token] : (options_.all_logits ? logits_all_[(std::size_t)position * c.vocab_size + token] : a.total());
  return a;
}

// ---- Model: the API, forwarding to its Impl ------------------------------------------------------

SimdInfo simd_info() {
  const kernels::SimdInfo s = kernels::simd_info();
  return {s.arch, s.float_lanes, s.simd, s.relaxed_madd};
}

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const ModelConfig& Model::config() const { return impl_->config_; }
const Tokenizer& Model::tokenizer() const { return *impl_->tokenizer_; }
std::size_t Model::parameter_count() const { return impl_->parameter_count_; }
std::size_t Model::weight_bytes() const { return impl_->weight_bytes(); }
WeightStorage Model::weight_storage() const { return impl_->storage_; }
RunInfo Model::run(std::string_view text, const RunOptions& options) {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->run(text, options);
}
int Model::tokens_to_drop(int tokens) const { return impl_->tokens_to_drop(tokens); }
RunInfo Model::run_ids(std::span<const int32_t> ids, const RunOptions& options) {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->run_ids(ids, options);
}
int Model::threads() const { return impl_->pool_ ? impl_->pool_->size() : 1; }
void Model::clear_cache() {
  impl_->cached_tokens_ = 0;
  impl_->cached_logits_ = 0;
}
bool Model::reserve(int tokens) { return impl_->reserve(tokens); }
int Model::T() const { return impl_->T_; }
const std::vector<Token>& Model::tokens() const { return impl_->tokens_; }
const std::vector<int32_t>& Model::ids() const { return impl_->ids_; }
std::span<const float> Model::logits_last() const { return impl_->logits_last(); }
std::vector<float> Model::logits_all() const { return impl_->logits_all(); }
std::vector<float> Model::attention(int layer, int head) const { return impl_->attention(layer, head); }
std::vector<float> Model::attention_all() const { return impl_->attention_all(); }
void Model::copy_attention_all(float* out) const { impl_->copy_attention_all(out); }
void Model::copy_attention_rows(float* out, int row_begin, int block_rows, int stride) const {
  impl_->copy_attention_rows(out, row_begin, block_rows, stride);
}
std::size_t Model::attention_rows_floats(int row_begin, int block_rows, int stride) const {
  return impl_->attention_rows_floats(row_begin, block_rows, stride);
}
std::vector<float> Model::hidden_states() const { return impl_->hidden_states(); }
std::vector<float> Model::contribution(int layer, int head) const { return impl_->contribution(layer, head); }
std::vector<float> Model::contribution_norms() const { return impl_->contribution_norms(); }
std::vector<float> Model::value_norms() const {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->value_norms();
}
HeadInside Model::head_inside() const {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->head_inside();
}
LogitAttribution Model::logit_attribution(int position, int token) const { return impl_->logit_attribution(position, token); }

}  // namespace headscope
