// Model's activations as a budget: what a text's activations take (activation_floats), the buffers
// sized for a capacity of tokens (ensure_capacity, reserve), and the tokens a text past it loses
// (tokens_to_drop, cut). The limits themselves are model_memory.hpp's; runs are model.cpp's.
#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "model/model_impl.hpp"
#include "model/model_memory.hpp"

namespace headscope {

bool Model::Impl::reserve(int tokens) {
  reserved_ = std::clamp(tokens, 1, config_.n_positions);
  return ensure_capacity(reserved_);
}

// Floats of activations for `cap` positions (ensure_capacity's buffers). Sizes come from config.json
// and the text: added up in 64 bits, so a hostile config cannot overflow a 32-bit size_t (wasm).
uint64_t Model::Impl::activation_floats(uint64_t c64, bool views_only) const {
  const uint64_t L = config_.n_layer, NH = config_.n_head, C = config_.n_embd, QW = config_.q_width(),
                 W = config_.qkv_width(), KVW = (uint64_t)config_.kv_heads() * config_.head_size();
  const uint64_t FS = config_.family == Family::llama ? 3 * (uint64_t)config_.n_inner : config_.n_inner;
  const uint64_t maps = keep_maps_ ? L * NH * c64 * c64 : NH * (uint64_t)kernels::attention_block_rows() * c64;
  // every head's thumbnail, and the rows of its last cell row alone (thumb_tail_: at most kThumbTailRows)
  const uint64_t tail_rows =
      thumb_size_ ? std::min<uint64_t>(attention_thumbnail_bin((int)std::min<uint64_t>(c64, 1 << 24), thumb_size_),
                                       kThumbTailRows)
                  : 0;
  const uint64_t thumbnails = L * NH * (uint64_t)thumb_size_ * (thumb_size_ + tail_rows);
  const uint64_t row_stats = L * NH * c64 * kernels::kRowStats + 3 * c64 /* the copy chains, int32 */;
  // the residual stream, q | k | v (and the queries kept apart) and the heads' outputs: every layer's,
  // or one layer's rows at a time (views_only)
  const uint64_t R = std::min<uint64_t>(c64, kForwardRows);  // rows through the layers at a time
  // views_only: every layer's queries in F16 (half a float each) and their scales
  const uint64_t layers = views_only ? (2 * R + c64) * C + c64 * W + (L * c64 * QW + 1) / 2 + L * c64 + c64 * QW
                                     : (L + 1) * c64 * C + L * c64 * W + L * c64 * QW;
  return layers + maps + L * NH * c64 + 3 * R * C + R * FS +
         L * (2 * c64 + 32) * KVW /* key panels and values: L x KV x <= (2 cap + panel) x HS */ + thumbnails +
         row_stats;
}

bool Model::Impl::views_only_at(int cap) const { return activations_ != ActivationStorage::all && cap > full_tokens_; }

float* Model::Impl::stream(int l) {
  const std::size_t C = config_.n_embd, cap = cap_;
  if (!views_only_) return &residual_[(std::size_t)l * cap * C];
  return &residual_[2 * forward_rows() * C];  // the final stream (the rows buffers are forward()'s)
}

float* Model::Impl::stream_rows(int l, int t0) {
  const std::size_t C = config_.n_embd;
  if (!views_only_ || l == config_.n_layer) return stream(l) + (std::size_t)t0 * C;
  return &residual_[(std::size_t)(l % 2) * forward_rows() * C];
}

void Model::Impl::require_activations(const char* what) const {
  if (!views_only_) return;
  throw Error(std::string(what) + " needs every layer's activations, and this model keeps only the views' (" +
              (activations_ == ActivationStorage::automatic
                   ? "activations \"auto\": every layer's up to " + std::to_string(full_tokens_) +
                         " tokens, this text has " + std::to_string(T_)
                   : std::string("activations \"views\"")) +
              "); use a shorter text, or load the model with activations \"all\"");
}

bool Model::Impl::ensure_capacity(int T) {
  // a text short enough to keep whole after a longer one kept only the views' gets everything again
  // (the analyses of every layer then work on it: patching two short texts after a long one), unless
  // it is a step of a longer text reserved for (a long text run in steps from its start)
  const bool whole_again = views_only_ && !views_only_at(T) && !views_only_at(reserved_);
  if (T <= cap_ && !whole_again) return false;
  const std::size_t L = config_.n_layer, NH = config_.n_head, C = config_.n_embd, QW = config_.q_width(),
                    W = config_.qkv_width();
  const std::size_t FS = config_.family == Family::llama ? 3 * (std::size_t)config_.n_inner : config_.n_inner;
  const kernels::AttentionShape shape{config_.n_head, config_.kv_heads(), config_.head_size()};
  // Grow geometrically, with room for the next words typed, so typing does not reallocate at every
  // token: a reallocation drops the cache (the next run computes every token again). Exactly T
  // when the room would not fit.
  int cap = std::min(config_.n_positions, std::max({T + T / 8 + 16, T > cap_ ? 2 * cap_ : 0, 16}));
  // room past the text that would turn whole activations into the views' alone is not taken
  if (!views_only_at(T) && views_only_at(cap)) cap = std::max(T, full_tokens_);
  if (4 * activation_floats(cap, views_only_at(cap)) > budget_.activations) cap = T;
  const bool views_only = views_only_at(cap);
  const uint64_t floats = activation_floats(cap, views_only);  // refused before anything is allocated
  if (4 * floats > budget_.activations)
    throw Error("running " + std::to_string(T) + " tokens needs " + megabytes(4 * floats) +
                " of activations, more than their budget of " + megabytes(budget_.activations) + " (" +
                budget_.words() + "); use a shorter text");
  try {
    const std::size_t R = std::min<std::size_t>(cap, kForwardRows);  // forward_rows() once cap_ is set
    assign_zeros(residual_, views_only ? (2 * R + cap) * C : (L + 1) * cap * C);
    assign_zeros(qkv_, (views_only ? 1 : L) * cap * W);
    assign_zeros(queries_f16_, views_only ? L * cap * QW : 0);
    query_scales_.assign(views_only ? L * cap : 0, 1.0f);
    assign_zeros(att_, keep_maps_ ? L * NH * cap * cap : NH * kernels::attention_block_rows() * cap);
    assign_zeros(head_out_, (views_only ? 1 : L) * cap * QW);
    contrib_.clear();
    assign_zeros(contrib_norm_, L * NH * cap);
    assign_zeros(scratch_ln_, R * C);
    assign_zeros(scratch_proj_, R * C);
    assign_zeros(scratch_head_, R * C);
    assign_zeros(scratch_fc_, R * FS);
    assign_zeros(key_panels_, L * kernels::attention_key_panels_floats((int)cap, shape));
    assign_zeros(row_stats_, L * NH * cap * kernels::kRowStats);
    assign_zeros(row_copies_, 3 * cap);
  } catch (const std::bad_alloc&) {
    // leave no half-sized buffers behind: the next run starts from nothing
    cap_ = 0;
    has_run_ = false;
    cached_tokens_ = 0;
    cached_logits_ = 0;
    ActivationBuffer<uint16_t>().swap(queries_f16_);
    for (auto* v : {&residual_, &qkv_, &query_scales_, &att_, &head_out_, &contrib_norm_, &scratch_ln_, &scratch_proj_,
                    &scratch_head_, &scratch_fc_, &key_panels_, &row_stats_})
      ActivationBuffer<float>().swap(*v);
    ActivationBuffer<int32_t>().swap(row_copies_);
    throw Error("out of memory: running " + std::to_string(T) + " tokens needs about " + gigabytes(floats * 4) +
                " of activations next to " + gigabytes(weight_bytes()) + " of weights; use a shorter text");
  }
  logits_all_.clear();
  value_norm_.clear();
  value_norm_rows_ = 0;
  cap_ = cap;
  role_rows_ = 0;
  views_only_ = views_only;
  cached_tokens_ = 0;
  cached_logits_ = 0;
  has_run_ = false;  // the buffers holding the last run's results were just cleared
  return true;
}

int Model::Impl::tokens_to_drop(int tokens) const {
  const int n = config_.n_positions, step = std::max(1, n / Model::kContextDropSteps);
  return tokens <= n ? 0 : (tokens - n + step - 1) / step * step;
}

// Where the cut of a sequence of `tokens` goes: after the `keep` leading special tokens, `dropped`
// of the rest. A context too small to hold them and a text token cuts from the very start.
void Model::Impl::cut(int tokens, int& keep, int& dropped) const {
  keep = 0;
  dropped = tokens_to_drop(tokens);
  if (dropped == 0) return;
  keep = dropped > 0 ? std::min(tokenizer_->prefix_size(), tokens) : 0;
  if (keep + 1 >= config_.n_positions) keep = 0;
  dropped = std::min(dropped, tokens - keep - 1);
}
}  // namespace headscope
