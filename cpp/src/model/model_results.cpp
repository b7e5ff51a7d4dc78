// Model: what a run leaves to read. Logits, attention maps, hidden states, each head's write and
// value sizes, one head's internals and the split of a logit, all from the last run's buffers
// (model.cpp runs; model_load.cpp loads).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "kernels/parallel.hpp"
#include "model/model_impl.hpp"
#include "model/model_memory.hpp"

namespace headscope {
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
  constexpr int kRows = 64;
  std::vector<float> rows((std::size_t)std::min(kRows, T_) * cap_);
  for (int t0 = 0; t0 < T_; t0 += kRows) {
    const int t1 = std::min(T_, t0 + kRows);
    map_rows(layer, head, t0, t1, rows.data());
    for (int t = t0; t < t1; t++) std::copy_n(&rows[(std::size_t)(t - t0) * cap_], T_, &out[(std::size_t)t * T_]);
  }
  return out;
}

void Model::Impl::map_rows(int layer, int head, int r_begin, int r_end, float* out) const {
  const ModelConfig& c = config_;
  if (keep_maps_) {
    const float* src = &att_[(((std::size_t)layer * c.n_head + head) * cap_ + r_begin) * cap_];
    std::copy_n(src, (std::size_t)(r_end - r_begin) * cap_, out);
    return;
  }
  const kernels::AttentionShape shape{c.n_head, c.kv_heads(), c.head_size()};
  const float* panels =
      key_panels_.empty() ? nullptr
                          : key_panels_.data() + (std::size_t)layer * kernels::attention_key_panels_floats(cap_, shape);
  // a views-only model's queries are widened from F16 a block of rows at a time
  constexpr int kRows = 64;
  static thread_local std::vector<float> scratch;
  for (int r0 = r_begin; r0 < r_end; r0 += kRows) {
    const int r1 = std::min(r_end, r0 + kRows);
    std::size_t q_stride = 0;
    int q_first = 0;
    const float* q = queries(layer, r0, r1, scratch, &q_stride, &q_first);
    kernels::attention_rows(out + (std::size_t)(r0 - r_begin) * cap_, q, head, r0, r1, shape, cap_, panels, q_stride,
                            q_first);
  }
}

AttentionTile Model::Impl::attention_tile(int layer, int head, int row_begin, int row_end, int col_begin, int col_end,
                                          int bin) const {
  require_run();
  check_layer_head(layer, head);
  const auto range = [&](const char* what, int begin, int end) {
    if (begin < 0 || begin >= end || end > T_)
      throw Error(std::string("attention tile: ") + what + " [" + std::to_string(begin) + ", " + std::to_string(end) +
                  ") must be a non-empty range within [0, " + std::to_string(T_) + ")");
  };
  range("rows", row_begin, row_end);
  range("columns", col_begin, col_end);
  if (bin < 1 || bin > T_)
    throw Error("attention tile: bin must be within [1, " + std::to_string(T_) + "], got " + std::to_string(bin));
  AttentionTile tile{layer, head, row_begin, row_end, col_begin, col_end, bin};
  tile.rows = (row_end - row_begin + bin - 1) / bin;
  tile.cols = (col_end - col_begin + bin - 1) / bin;
  tile.values.assign((std::size_t)tile.rows * tile.cols, 0.0f);
  const int cap = cap_;
  // threads take whole rows of cells; each takes its rows kRows at a time into its own scratch, from the
  // kept maps or recomputed (map_rows)
  constexpr int kRows = 32;
  const double work = (double)(row_end - row_begin) * row_end * config_.head_size();
  kernels::parallel_for(tile.rows, work, [&](int a_begin, int a_end) {
    static thread_local std::vector<float> rows;
    rows.resize((std::size_t)kRows * cap);
    for (int a = a_begin; a < a_end; a++) {
      float* cells = &tile.values[(std::size_t)a * tile.cols];
      const int r_end = std::min(row_end, row_begin + (a + 1) * bin);
      for (int r0 = row_begin + a * bin; r0 < r_end; r0 += kRows) {
        const int r1 = std::min(r_end, r0 + kRows);
        map_rows(layer, head, r0, r1, rows.data());
        for (int r = r0; r < r1; r++) {
          const float* w = rows.data() + (std::size_t)(r - r0) * cap;
          for (int b = 0; b < tile.cols; b++) {
            const int j0 = col_begin + b * bin, j1 = std::min(col_end, j0 + bin);
            cells[b] = std::max(cells[b], *std::max_element(w + j0, w + j1));
          }
        }
      }
    }
  });
  return tile;
}

std::vector<double> Model::Impl::head_role_scores() const {
  require_run();
  const std::size_t heads = (std::size_t)config_.n_layer * config_.n_head;
  constexpr int K = kernels::kRowStats;
  static_assert(K == kRoleScores, "a role score per row statistic");
  // every head's sums over rows [r0, r1) added to sums and counts, in row order (as the page's mean of
  // the rows that count): the same additions whether the rows come in one call or several
  const auto add_rows = [&](double* sums, int* counts, int r0, int r1) {
    for (std::size_t lh = 0; lh < heads; lh++) {
      const float* rows = &row_stats_[lh * cap_ * K];
      for (int t = r0; t < r1; t++)
        for (int i = 0; i < K; i++) {
          const float v = rows[(std::size_t)t * K + i];
          if (v == v) sums[lh * K + i] += v, counts[lh * K + i]++;
        }
    }
  };
  if (role_rows_ == 0 || role_rows_ > T_ || role_sums_.size() != heads * K) {
    role_sums_.assign(heads * K, 0.0);
    role_counts_.assign(heads * K, 0);
    role_rows_ = 0;
  }
  const int settled = std::max(0, T_ - kRoleRowsRecent);
  if (settled > role_rows_) {
    add_rows(role_sums_.data(), role_counts_.data(), role_rows_, settled);
    role_rows_ = settled;
  }
  std::vector<double> sums = role_sums_;
  std::vector<int> counts = role_counts_;
  add_rows(sums.data(), counts.data(), role_rows_, T_);
  std::vector<double> out(heads * K);
  for (std::size_t j = 0; j < heads * K; j++)
    out[j] = counts[j] ? sums[j] / counts[j] : std::numeric_limits<double>::quiet_NaN();
  return out;
}

void Model::Impl::copy_attention_all(float* out) const { copy_attention_rows(out, 0, T_, T_); }

std::size_t Model::Impl::attention_rows_floats(int row_begin, int block_rows, int stride) const {
  require_run();
  const std::string t = std::to_string(T_);
  if (row_begin < 0 || row_begin > T_)
    throw Error("attention rows must start within [0, " + t + "], got " + std::to_string(row_begin));
  if (stride < T_ || stride > config_.n_positions)
    throw Error("attention row stride must be within [" + t + ", " + std::to_string(config_.n_positions) + "], got " +
                std::to_string(stride));
  if (block_rows < T_ - row_begin || block_rows > config_.n_positions)
    throw Error("a block of " + std::to_string(block_rows) + " rows cannot hold attention rows " +
                std::to_string(row_begin) + " to " + t +
                " (at most n_positions = " + std::to_string(config_.n_positions) + " rows)");
  // 64-bit product, refused above the activation limit before a 32-bit size_t (wasm) could wrap
  const uint64_t floats = (uint64_t)config_.n_layer * config_.n_head * block_rows * stride;
  if (floats > kMaxResultFloats)
    throw Error("attention rows of " + std::to_string(block_rows) + " x " + std::to_string(stride) + " per head need " +
                std::to_string(floats * 4 >> 20) + " MB, more than the " + std::to_string(kMaxResultFloats * 4 >> 20) +
                " MB limit");
  return (std::size_t)floats;
}

void Model::Impl::copy_attention_rows(float* out, int row_begin, int block_rows, int stride) const {
  attention_rows_floats(row_begin, block_rows, stride);
  std::vector<float> scratch;
  for (int l = 0; l < config_.n_layer; l++)
    for (int h = 0; h < config_.n_head; h++)
      copy_head_rows(out + ((std::size_t)l * config_.n_head + h) * block_rows * (std::size_t)stride, l, h, row_begin,
                     stride, scratch);
}

void Model::Impl::copy_head_attention_rows(float* out, int layer, int head, int row_begin, int block_rows,
                                           int stride) const {
  attention_rows_floats(row_begin, block_rows, stride);
  check_layer_head(layer, head);
  std::vector<float> scratch;
  copy_head_rows(out, layer, head, row_begin, stride, scratch);
}

// One head's rows [row_begin, T) into rows of `stride` floats (the layout checked by the caller).
void Model::Impl::copy_head_rows(float* out, int l, int h, int row_begin, int stride, std::vector<float>& rows) const {
  constexpr int kRows = 64;
  if (!keep_maps_) rows.resize((std::size_t)kRows * cap_);
  const std::size_t head = (std::size_t)l * config_.n_head + h;
  for (int q0 = row_begin; q0 < T_; q0 += kRows) {
    const int q1 = std::min(T_, q0 + kRows);
    // the engine's own rows (cap wide): kept, or recomputed
    const float* src = keep_maps_ ? &att_[(head * cap_ + q0) * cap_] : rows.data();
    if (!keep_maps_) map_rows(l, h, q0, q1, rows.data());
    for (int q = q0; q < q1; q++) {
      float* dst = out + (std::size_t)(q - row_begin) * stride;
      std::copy_n(src + (std::size_t)(q - q0) * cap_, T_, dst);
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
  require_activations("hidden_states");
  std::vector<float> out((config_.n_layer + 1) * rows);
  for (int l = 0; l <= config_.n_layer; l++) std::copy_n(stream(l), rows, &out[l * rows]);
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

std::vector<float> Model::Impl::contribution_norms(int t_begin) const {
  require_run();
  if (t_begin < 0 || t_begin > T_)
    throw Error("contribution norms from token " + std::to_string(t_begin) + ": outside [0, " + std::to_string(T_) +
                "]");
  const std::size_t n = (std::size_t)(T_ - t_begin);
  std::vector<float> out((std::size_t)config_.n_layer * config_.n_head * n);
  if (n == 0) return out;  // (no element to point at: an empty vector's storage is null)
  for (std::size_t lh = 0; lh < (std::size_t)config_.n_layer * config_.n_head; lh++)
    std::copy_n(contrib_norm_.data() + lh * cap_ + t_begin, n, out.data() + lh * n);
  return out;
}

// || v_j @ W_O^h || for rows j in [row_begin, T_) of head (layer, head) into out[j - row_begin]: each
// value through the head's rows of W_O, by the kernel that gives the head its write. A row's result
// does not depend on how many rows are computed together, so rows added later equal a full run's.
// moved: grown to (T_ - row_begin) (C + HS) floats, reused across heads by the caller.
void Model::Impl::value_norm_rows(float* out, int layer, int head, int row_begin, std::vector<float>& moved) const {
  const ModelConfig& c = config_;
  const int C = c.n_embd, HS = c.head_size(), n = T_ - row_begin, W = c.qkv_width();
  if (n <= 0) return;
  // the query head's value is its key/value head's, at column (NH + KV + g) HS of qkv; the product
  // reads columns [head HS, (head + 1) HS) of its input, so the input starts head HS before it
  const int g = head / c.group_size();
  moved.resize((std::size_t)n * (C + HS));
  if (views_only_) {
    // the key cache's copy of the values (the same floats), copied out as rows HS apart after the product's rows
    const kernels::AttentionShape shape{c.n_head, c.kv_heads(), HS};
    const float* panels = key_panels_.data() + (std::size_t)layer * kernels::attention_key_panels_floats(cap_, shape);
    float* rows = moved.data() + (std::size_t)n * C;
    kernels::attention_cached_value_rows(rows, panels, cap_, shape, g, row_begin, T_);
    kernels::matmul_rows_forward(moved.data(), rows - (std::size_t)head * HS, HS, blocks_[layer].attn_out, head * HS,
                                 (head + 1) * HS, n);
  } else {
    const float* values =
        &qkv_[((std::size_t)layer * cap_ + row_begin) * W + (std::size_t)(c.n_head + c.kv_heads() + g) * HS] -
        (std::size_t)head * HS;
    kernels::matmul_rows_forward(moved.data(), values, W, blocks_[layer].attn_out, head * HS, (head + 1) * HS, n);
  }
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
  require_activations("looking inside a head");
  const ModelConfig& c = config_;
  const int l = options_.inspect->layer, h = options_.inspect->head, T = T_, C = c.n_embd, HS = c.head_size();
  const std::size_t cap = cap_;
  HeadInside r;
  r.layer = l;
  r.head = h;
  r.T = T;
  r.head_size = HS;
  r.n_embd = C;
  // q, k and v are the forward's own rows of attn_in's output (qkv_, the key/value cache; the Llama
  // family's q and k after their norm and rotation, as the attention dots them): query head h, and
  // the key/value head g it reads
  const std::size_t W = c.qkv_width();
  const int g = h / c.group_size();
  const float* qkv = &qkv_[l * cap * W];
  for (const auto& [dst, column] :
       {std::pair{&r.q, h}, std::pair{&r.k, c.n_head + g}, std::pair{&r.v, c.n_head + c.kv_heads() + g}}) {
    dst->resize((std::size_t)T * HS);
    for (int t = 0; t < T; t++)
      std::copy_n(qkv + (std::size_t)t * W + (std::size_t)column * HS, HS, dst->data() + (std::size_t)t * HS);
  }
  // scores: q_i . k_j / sqrt(HS), as the attention kernel forms them before its softmax (the same
  // float dot and scale; the kernel's blocked sums may round the last bit differently), read from the
  // cache rather than kept by the run: any run of these tokens can be inspected, and typing with the
  // panel open computes only the new tokens
  const float scale = 1.0f / std::sqrt((float)HS);
  r.scores.assign((std::size_t)T * T, -std::numeric_limits<float>::infinity());
  for (int t = 0; t < T; t++) {
    const float* q = &r.q[(std::size_t)t * HS];
    for (int j = 0; j <= t; j++)
      r.scores[(std::size_t)t * T + j] = kernels::dot(q, &r.k[(std::size_t)j * HS], HS) * scale;
  }
  r.attention = attention(l, h);
  r.z.resize((std::size_t)T * HS);
  for (int t = 0; t < T; t++)
    std::copy_n(&head_out_[(l * cap + t) * c.q_width() + h * HS], HS, &r.z[(std::size_t)t * HS]);
  // the write z W_O^h by the kernel and rows the forward pass sums into W_O's output, so it equals
  // what the run added (bit for bit); a switched-off head wrote nothing
  r.out.assign((std::size_t)T * C, 0.0f);
  if (!ablate_mask_[(std::size_t)l * c.n_head + h])
    kernels::matmul_rows_forward(r.out.data(), &head_out_[(std::size_t)l * cap * c.q_width()], c.q_width(),
                                 blocks_[l].attn_out, h * HS, (h + 1) * HS, T);
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
  require_activations("logit attribution");
  const ModelConfig& c = config_;
  if (position < 0 || position >= T_)
    throw Error("position " + std::to_string(position) + " is outside [0, " + std::to_string(T_) + ")");
  if (token < 0 || token >= c.vocab_size)
    throw Error("token " + std::to_string(token) + " is outside [0, " + std::to_string(c.vocab_size) + ")");
  const bool llama = c.family == Family::llama;
  const int C = c.n_embd, L = c.n_layer, NH = c.n_head, QW = c.q_width();
  const std::size_t cap = cap_;
  // the token's unembedding (the LM head's row: wte's, or the untied LM head's) times the
  // final norm's scale, in double
  std::vector<double> w(C);
  std::vector<float> row(C);
  const bool untied = !lm_head_.empty() || !lm_head_f16_.empty();
  const std::vector<float>& f32 = untied ? lm_head_ : wte_;
  const std::vector<uint16_t>& f16 = untied ? lm_head_f16_ : wte_f16_;
  if (f16.empty())
    std::copy_n(&f32[(std::size_t)token * C], C, row.data());
  else
    kernels::f16_unpack_forward(row.data(), &f16[(std::size_t)token * C], C);
  for (int i = 0; i < C; i++) w[i] = (double)row[i] * final_norm_weight_[i];
  // the final norm's scale at the position, from the residual stream it normalizes: LayerNorm's
  // 1 / sigma (GPT-2), RMSNorm's 1 / rms (the Llama family, which does not center)
  const float* x = &residual_[((std::size_t)L * cap + position) * C];
  double mean = 0, var = 0;
  if (!llama) {
    for (int i = 0; i < C; i++) mean += x[i];
    mean /= C;
  }
  for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
  const double rstd = 1.0 / std::sqrt(var / C + c.layer_norm_epsilon);
  // one part's attribution: its write (centered, for LayerNorm) scaled and dotted with w
  const auto part = [&](const double* v) {
    double m = 0, s = 0;
    if (!llama) {
      for (int i = 0; i < C; i++) m += v[i];
      m /= C;
    }
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
        kernels::matmul_rows_forward(ch.data(), &head_out_[(l * cap + position) * QW], QW, blocks_[l].attn_out, h * HS,
                                     (h + 1) * HS, 1);
      for (int i = 0; i < C; i++) v[i] = ch[i], attn[i] += ch[i];
      a.heads.push_back(part(v.data()));
    }
    const std::vector<float>& bias = blocks_[l].attn_out.bias;
    for (int i = 0; i < C; i++) v[i] = bias[i], attn[i] += bias[i];
    a.attn_bias.push_back(part(v.data()));
    // the MLP's write: what the block added beyond its attention
    const float* in = &residual_[((std::size_t)l * cap + position) * C];
    const float* out = &residual_[((std::size_t)(l + 1) * cap + position) * C];
    for (int i = 0; i < C; i++) v[i] = (double)out[i] - in[i] - attn[i];
    a.mlp.push_back(part(v.data()));
  }
  for (std::size_t i = 0; i < final_norm_bias_.size(); i++)
    a.ln_bias += (double)final_norm_bias_[i] * row[i];  // RMSNorm: none
  a.logit = position == T_ - 1
                ? logits_last_[token]
                : (options_.all_logits ? logits_all_[(std::size_t)position * c.vocab_size + token] : a.total());
  return a;
}

}  // namespace headscope
