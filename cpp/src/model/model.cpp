// Model: runs. Tokens -> the forward pass with the key/value cache for typing at the end, and the
// results of the last run (reading them: model_results.cpp). Loading is in model_load.cpp.
#include "headscope/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <new>
#include <unordered_map>

#include "headscope/error.hpp"
#include "headscope/safetensors.hpp"
#include "model/model_impl.hpp"
#include "model/model_memory.hpp"

namespace headscope {

RunInfo Model::Impl::run(std::string_view text, const RunOptions& options) {
  if (text.empty()) throw Error("text is empty");
  std::vector<Token> tokens = tokenizer_->encode_input(text);  // throws on invalid UTF-8
  if (tokens.empty()) throw Error("text is empty");
  int keep = 0, dropped = 0;
  cut((int)tokens.size(), keep, dropped);
  tokens.erase(tokens.begin() + keep, tokens.begin() + keep + dropped);
  std::vector<int32_t> ids(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); i++) ids[i] = tokens[i].id;
  RunInfo info = run_ids(ids, options);
  tokens_ = std::move(tokens);
  info.dropped_tokens = dropped;
  info.first_byte = tokens_[std::min<std::size_t>(keep, tokens_.size() - 1)].byte_start;
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
  if (options.patch) {
    // the other text's run first (with the same heads off), for the head's output at every position
    const RunPatch& p = *options.patch;
    check_layer_head(p.head.layer, p.head.head);
    if ((int)p.from.size() != T)
      throw Error("the patch's text has " + std::to_string(p.from.size()) + " tokens and this one " +
                  std::to_string(T) + ": a head is patched between texts of as many tokens");
    RunOptions from;
    from.ablate = options.ablate;
    run_ids(p.from, from);
    require_activations("patching a head");
    const std::size_t QW = c.q_width();
    const float* z = &head_out_[(std::size_t)p.head.layer * cap_ * QW];
    run_patch_z_.assign(z, z + (std::size_t)T * QW);
    cached_tokens_ = cached_logits_ = 0;  // the patched run computes every token
  }

  ensure_capacity(T);
  if (T >= reserved_) reserved_ = 0;  // the text reserved for has come (or was given up)
  // Reuse the cached prefix only if it was computed with the same switched-off heads and holds
  // everything this run must return. Logits for every position are not part of the cache: a run
  // that wants them computes those the cache lacks from the final residual stream it keeps, so a
  // loss computed while the reader pauses does not cost the next keystroke a full recompute.
  int reuse = 0;
  // an inspected head needs nothing the cache lacks: head_inside() reads its insides from the run's
  // own buffers, so inspecting a head while typing computes only the new tokens
  const bool kept_compatible = has_run_ && (!options.keep_contributions || options_.keep_contributions);
  if (kept_compatible && mask == ablate_mask_) {
    const int limit = std::min({cached_tokens_, T, (int)ids_.size()});
    while (reuse < limit && ids_[reuse] == ids[reuse]) reuse++;
  }
  // The same tokens with other heads switched off: the layers below the first one whose switched-off
  // heads differ computed exactly this run's numbers, so the run starts at that layer, every token.
  // Measuring heads switches them one at a time: on average half the layers are computed.
  int layer_begin = 0;
  // (with the views' activations alone no layer's input is kept: every layer is computed)
  if (kept_compatible && !views_only_ && mask != ablate_mask_ && cached_tokens_ == T && (int)ids_.size() == T &&
      std::equal(ids.begin(), ids.end(), ids_.begin())) {
    const std::size_t NH = c.n_head;
    while (std::equal(mask.begin() + (std::ptrdiff_t)(layer_begin * NH),
                      mask.begin() + (std::ptrdiff_t)((layer_begin + 1) * NH),
                      ablate_mask_.begin() + (std::ptrdiff_t)(layer_begin * NH)))
      layer_begin++;  // stops before n_layer: the masks differ somewhere
  }
  if (options.keep_contributions && (uint64_t)c.n_layer * c.n_head * cap_ * c.n_embd > kMaxResultFloats)
    throw Error("keeping head contributions for " + std::to_string(T) +
                " tokens needs too much memory; use a shorter text");
  if (options.all_logits && (uint64_t)cap_ * c.vocab_size > kMaxResultFloats)
    throw Error("logits for all " + std::to_string(T) + " positions need too much memory; use a shorter text");
  if (options.keep_contributions && contrib_.size() != (std::size_t)c.n_layer * c.n_head * cap_ * c.n_embd) {
    contrib_.assign((std::size_t)c.n_layer * c.n_head * cap_ * c.n_embd, 0.0f);
    reuse = layer_begin = 0;
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
  if (options.patch) {
    run_patch_layer_ = options.patch->head.layer;
    run_patch_ = {run_patch_z_.data(), options.patch->head.head, 0, T};
  }
  try {
    forward(reuse, logits_begin, layer_begin);
  } catch (...) {
    run_patch_layer_ = -1;
    throw;
  }
  run_patch_layer_ = -1;
  cached_tokens_ = T;
  cached_logits_ = options.all_logits ? T : std::min(cached_logits_, reuse);
  // a patched run's activations are no plain run's: the next run computes every token
  if (options.patch) cached_tokens_ = cached_logits_ = 0;
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
  const int T = T_;
  const int C = c.n_embd, NH = c.n_head, V = c.vocab_size;
  const std::size_t cap = cap_, W = c.qkv_width(), QW = c.q_width();
  const bool llama = c.family == Family::llama;
  const k::AttentionShape shape{NH, c.kv_heads(), c.head_size()};
  forward_calls_++;
  if (t_begin < role_rows_ || layer_begin > 0) role_rows_ = 0;  // rows the role sums hold are recomputed
  prepare_thumbnails(t_begin, layer_begin);
  thumb_rows_ = -1;  // until every layer has raised them (a failed run leaves them to be pooled again)
  const int S = thumb_size_;
  // the copy chains of the role statistics' duplicate and induction rows (as web/lib/analysis.js's copiesOf)
  int32_t* before = row_copies_.data();
  int32_t* first = before + cap;
  int32_t* next = first + cap;
  {
    std::unordered_map<int32_t, int32_t> last_seen, first_seen;
    for (int t = 0; t < T; t++) {
      next[t] = T;
      const auto seen = last_seen.find(ids_[t]);
      before[t] = seen == last_seen.end() ? -1 : seen->second;
      if (seen != last_seen.end()) next[seen->second] = t;
      first[t] = first_seen.emplace(ids_[t], t).first->second;
      last_seen[ids_[t]] = t;
    }
  }

  // Rows go through every layer kForwardRows at a time (a row's numbers do not depend on the rows
  // computed with it: the keys and values of the rows before are the cache), so the per-row scratch
  // and, keeping the views' alone, the stream between layers hold that many rows, not the text's.
  for (int t0 = t_begin; t0 < T; t0 += kForwardRows) {
    const int t1 = std::min(T, t0 + kForwardRows);
    for (int t = t0; layer_begin == 0 && t < t1; t++) {
      float* row = stream_rows(0, t0) + (std::size_t)(t - t0) * C;
      if (wte_f16_.empty()) {
        if (llama)
          std::copy_n(&wte_[(std::size_t)ids_[t] * C], C, row);  // rotary positions: no wpe
        else
          k::add_forward(row, &wte_[(std::size_t)ids_[t] * C], &wpe_[(std::size_t)t * C], C);
      } else {  // widened in place (exact), then the same add
        k::f16_unpack_forward(row, &wte_f16_[(std::size_t)ids_[t] * C], C);
        if (!llama) k::add_forward(row, row, &wpe_[(std::size_t)t * C], C);
      }
    }

    for (int l = layer_begin; l < c.n_layer; l++) {
      float* x_next = stream_rows(l + 1, t0);  // (t1 - t0, C) stream leaving the block
      BlockBuffers io;
      io.x = stream_rows(l, t0);  // (t1 - t0, C) stream entering it
      io.ln1 = io.ln2 = scratch_ln_.data();
      io.qkv = views_only_ ? qkv_.data() : &qkv_[l * cap * W];
      io.att = keep_maps_ ? &att_[l * NH * cap * cap] : att_.data();
      io.att_block = keep_maps_ ? 0 : k::attention_block_rows();
      io.key_panels = key_panels_.data() + l * k::attention_key_panels_floats((int)cap, shape);
      io.head_out = views_only_ ? head_out_.data() : &head_out_[l * cap * QW];
      io.head_proj = scratch_head_.data();
      io.attn_proj = io.mlp_out = scratch_proj_.data();
      io.res_mid = io.res_out = x_next;
      io.fc_pre = io.fc_act = scratch_fc_.data();
      if (llama) io.fc_act += forward_rows() * 2 * c.n_inner;  // SwiGLU reads gate | up and writes apart
      io.rope_inv_freq = rope_inv_freq_.data();
      io.ablate = &ablate_mask_[(std::size_t)l * NH];
      io.contrib = options_.keep_contributions ? &contrib_[(std::size_t)l * NH * cap * C] : nullptr;
      io.norms = &contrib_norm_[(std::size_t)l * NH * cap];
      if (l == run_patch_layer_) io.patches = &run_patch_;
      k::AttentionPool pool{S ? &thumbs_[(std::size_t)l * NH * S * S] : nullptr, thumb_shift_, S};
      if (S && tail_shift_ >= 0) {  // the last cell row's rows, each alone (model_impl.hpp, thumb_tail_)
        pool.tail_rows = 1 << tail_shift_;
        pool.tail = &thumb_tail_[(std::size_t)l * NH * pool.tail_rows * S];
        pool.tail_begin = tail_begin_;
      }
      io.pool = &pool;
      const k::AttentionRowStats stats{&row_stats_[(std::size_t)l * NH * cap * k::kRowStats], (int)cap, before, first,
                                       next};
      io.row_stats = &stats;
      block_forward(c, blocks_[l], io, 1, t0, t1, (int)cap);
      // the layer's queries, as the attention read them (the views recompute any row from them)
      if (views_only_) keep_queries(l, t0, t1);
    }
  }
  thumb_rows_ = T;
  tail_end_ = tail_complete_ ? T : tail_begin_;

  // final norm and LM head; the last row always (T may have shrunk: text deleted at the end)
  const float* final_stream = stream(c.n_layer);
  const auto final_norm = [&](const float* x, int rows) {
    if (llama)
      k::rmsnorm_forward(scratch_ln_.data(), nullptr, x, final_norm_weight_.data(), rows, C, c.layer_norm_epsilon);
    else
      k::layernorm_forward(scratch_ln_.data(), nullptr, nullptr, x, final_norm_weight_.data(), final_norm_bias_.data(),
                           rows, C, c.layer_norm_epsilon);
  };
  for (int r0 = logits_begin; options_.all_logits && r0 < T; r0 += kForwardRows) {
    const int rows = std::min(kForwardRows, T - r0);
    final_norm(final_stream + (std::size_t)r0 * C, rows);
    lm_head(&logits_all_[(std::size_t)r0 * V], scratch_ln_.data(), rows);
  }
  // (every invalidation of the cache sets cached_tokens_ to 0, and other heads switched off start
  // from token 0, so t_begin == T means that the last forward pass that computed row T - 1 left it as
  // it is; logits_last_rows_ == T that it was this one)
  if (t_begin >= T && logits_last_rows_ == T && logits_last_.size() == (std::size_t)V) return;
  logits_last_rows_ = -1;  // until the LM head below has run (it may throw)
  logits_last_.resize(V);
  final_norm(final_stream + (std::size_t)(T - 1) * C, 1);
  lm_head(logits_last_.data(), scratch_ln_.data(), 1);
  logits_last_rows_ = T;
}

// out (T, V) = x (T, C) @ wte^T, the tied LM head (or the untied one), in either storage
void Model::Impl::lm_head(float* out, const float* x, int T) {
  const int C = config_.n_embd, V = config_.vocab_size;
  const bool untied = !lm_head_.empty() || !lm_head_f16_.empty();
  if (wte_f16_.empty())
    kernels::matmul_transposed_forward(out, x, untied ? lm_head_.data() : wte_.data(), T, C, V);
  else
    kernels::matmul_transposed_f16_forward(out, x, untied ? lm_head_f16_.data() : wte_f16_.data(), T, C, V,
                                           scratch_wte_.data());
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
MemoryUse Model::memory() const {
  const Impl& m = *impl_;
  MemoryUse u;
  u.weight_bytes = m.weight_bytes();
  u.capacity_tokens = m.cap_;
  u.activation_bytes = m.cap_ > 0 ? 4 * m.activation_floats((uint64_t)m.cap_, m.views_only_) : 0;
  u.activation_budget_bytes = m.budget_.activations;
  u.limit_bytes = m.budget_.limit;
  u.reserve_bytes = m.budget_.reserve;
  u.in_use_at_load_bytes = m.budget_.in_use;
  u.context_tokens = m.config_.n_positions;
  u.bytes_at_context = 4 * m.activation_floats((uint64_t)m.config_.n_positions, m.views_only_at(m.config_.n_positions));
  u.attention_maps = m.keep_maps_;
  u.activations = m.activations_;
  u.views_only = m.views_only_;
  u.full_activation_tokens = std::min(m.full_tokens_, m.config_.n_positions);
  return u;
}
WeightStorage Model::weight_storage() const { return impl_->storage_; }
RunInfo Model::run(std::string_view text, const RunOptions& options) {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->run(text, options);
}
int Model::tokens_to_drop(int tokens) const { return impl_->tokens_to_drop(tokens); }
std::vector<int32_t> Model::context_window(std::span<const int32_t> ids, int* dropped) const {
  int keep = 0, drop = 0;
  impl_->cut((int)ids.size(), keep, drop);
  if (dropped) *dropped = drop;
  std::vector<int32_t> out(ids.begin(), ids.begin() + keep);
  out.insert(out.end(), ids.begin() + keep + drop, ids.end());
  return out;
}
RunInfo Model::run_ids(std::span<const int32_t> ids, const RunOptions& options) {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->run_ids(ids, options);
}
int Model::threads() const { return impl_->pool_ ? impl_->pool_->size() : 1; }
void Model::clear_cache() {
  impl_->cached_tokens_ = 0;
  impl_->cached_logits_ = 0;
}
bool Model::reserve(int tokens) {
  kernels::PoolScope threads(impl_->pool_.get());  // the new activations are zeroed over the threads
  return impl_->reserve(tokens);
}
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
void Model::copy_head_attention_rows(float* out, int layer, int head, int row_begin, int block_rows, int stride) const {
  impl_->copy_head_attention_rows(out, layer, head, row_begin, block_rows, stride);
}
std::size_t Model::attention_rows_floats(int row_begin, int block_rows, int stride) const {
  return impl_->attention_rows_floats(row_begin, block_rows, stride);
}
AttentionTile Model::attention_tile(int layer, int head, int row_begin, int row_end, int col_begin, int col_end,
                                    int bin) const {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->attention_tile(layer, head, row_begin, row_end, col_begin, col_end, bin);
}
std::vector<float> Model::attention_thumbnails(int size, int* bin, int row_begin) const {
  return impl_->attention_thumbnails(size, bin, row_begin);
}
std::vector<double> Model::head_role_scores() const { return impl_->head_role_scores(); }
std::vector<float> Model::hidden_states() const { return impl_->hidden_states(); }
std::vector<float> Model::contribution(int layer, int head) const { return impl_->contribution(layer, head); }
std::vector<float> Model::contribution_norms(int t_begin) const { return impl_->contribution_norms(t_begin); }
std::vector<float> Model::value_norms() const {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->value_norms();
}
HeadInside Model::head_inside() const {
  kernels::PoolScope threads(impl_->pool_.get());
  return impl_->head_inside();
}
LogitAttribution Model::logit_attribution(int position, int token) const {
  return impl_->logit_attribution(position, token);
}

}  // namespace headscope
