// Internal to cpp/src: what a Model holds (model.hpp keeps only the API). Model's methods forward to
// these; model.cpp runs, model_load.cpp loads.
#pragma once
#include <optional>

#include "model/model_memory.hpp"
#include "model/forward.hpp"
#include "kernels/parallel.hpp"
#include "headscope/model.hpp"
#include "headscope/safetensors.hpp"

namespace headscope {

struct Model::Impl {
  // ---- the operations behind Model's API (contracts in model.hpp) ----
  void build(std::string_view config_json, std::shared_ptr<const ByteSource> safetensors, Tokenizer tokenizer,
             const LoadOptions& options);
  void load_weights(const SafeTensors& st, WeightStorage storage);  // model_load.cpp, through the family's arch/ table
  std::size_t weight_bytes() const;
  RunInfo run(std::string_view text, const RunOptions& options);
  int tokens_to_drop(int tokens) const;
  void cut(int tokens, int& keep, int& dropped) const;
  RunInfo run_ids(std::span<const int32_t> ids, const RunOptions& options);
  bool reserve(int tokens);
  std::span<const float> logits_last() const;
  std::vector<float> logits_all() const;
  std::vector<float> attention(int layer, int head) const;
  std::vector<float> attention_all() const;
  void copy_attention_all(float* out) const;
  void copy_attention_rows(float* out, int row_begin, int block_rows, int stride) const;
  void copy_head_attention_rows(float* out, int layer, int head, int row_begin, int block_rows, int stride) const;
  void copy_head_rows(float* out, int l, int h, int row_begin, int stride, std::vector<float>& rows) const;
  std::size_t attention_rows_floats(int row_begin, int block_rows, int stride) const;
  AttentionTile attention_tile(int layer, int head, int row_begin, int row_end, int col_begin, int col_end,
                               int bin) const;
  std::vector<float> attention_thumbnails(int size, int* bin, int row_begin) const;
  std::vector<float> hidden_states() const;
  std::vector<double> head_role_scores() const;
  std::vector<float> contribution(int layer, int head) const;
  std::vector<float> contribution_norms(int t_begin) const;
  std::vector<float> value_norms() const;
  void value_norm_rows(float* out, int layer, int head, int row_begin, std::vector<float>& scratch) const;
  HeadInside head_inside() const;
  LogitAttribution logit_attribution(int position, int token) const;

  void fit_context(const MemoryBudget& budget, WeightStorage storage, int configured);
  bool ensure_capacity(int T);  // true when it reallocated (dropping the cache and the last results)
  // floats of activations for `cap` positions, every layer's (views_only false) or the views' alone
  uint64_t activation_floats(uint64_t cap, bool views_only) const;
  // whether a text needing `cap` positions keeps only the views' activations (activations_, full_tokens_)
  bool views_only_at(int cap) const;
  // the residual stream entering layer l (l = L: the final one), row 0 of it: every layer's own rows,
  // or with views_only_ two rows buffers taken in turn and the final stream's
  float* stream(int l);
  const float* stream(int l) const { return const_cast<Impl*>(this)->stream(l); }
  // rows [t0, t0 + kForwardRows) of that stream as forward() computes them: row t0 of the layer's
  // stream, or with views_only_ (below the final stream) row 0 of the rows buffer it takes in turn
  float* stream_rows(int l, int t0);
  // the rows forward() takes through every layer at a time, and the per-row buffers hold
  static constexpr int kForwardRows = 512;
  std::size_t forward_rows() const { return std::min<std::size_t>(cap_, kForwardRows); }
  // Rows [r_begin, r_end) of `layer`'s queries (every query head's q) on the last run, as attention_rows
  // reads them: a pointer to row *first_row's query head 0, the floats from one row to the next. Kept
  // whole (in qkv_) that is row 0 of the layer's q | k | v; with views_only_ rows [r_begin, r_end)
  // widened from their F16 into `scratch` ((r_end - r_begin) x q_width floats).
  const float* queries(int layer, int r_begin, int r_end, std::vector<float>& scratch, std::size_t* row_stride,
                       int* first_row) const;
  // with views_only_: rows [t0, t1) of `layer`'s queries, as qkv_ holds them now, into queries_f16_
  void keep_queries(int layer, int t0, int t1);
  // throws Error when the last run kept only the views' activations: `what` needs every layer's
  void require_activations(const char* what) const;
  void forward(int t_begin, int logits_begin, int layer_begin = 0);
  void lm_head(float* out, const float* x, int T);
  void check_layer_head(int layer, int head) const;
  // Rows [r_begin, r_end) of head (layer, head)'s map on the last run into out ((r_end - r_begin,
  // cap_) floats): copied from att_ when the run keeps the maps, else recomputed from the key cache
  void map_rows(int layer, int head, int r_begin, int r_end, float* out) const;
  void require_run() const;

  ModelConfig config_;
  std::optional<Tokenizer> tokenizer_;  // always set after build(); optional only because Tokenizer has no empty state
  std::size_t parameter_count_ = 0;
  std::unique_ptr<kernels::ThreadPool> pool_;  // the kernels' threads (LoadOptions::threads)

  // weights
  WeightStorage storage_ = WeightStorage::f32;
  std::vector<float> wte_;          // (V, C), also the LM head (f32 storage; empty with f16)
  std::vector<uint16_t> wte_f16_;   // (V, C), each row packed by kernels::f16_pack (f16 storage; else empty)
  std::vector<float> scratch_wte_;  // matmul_transposed_f16_scratch_floats(C) (f16 storage): wte rows widened
  std::vector<float> wpe_;          // (n_positions, C); empty for the Llama family (rotary positions)
  // the Llama family with an untied LM head: (V, C) in the same storage as wte
  std::vector<float> lm_head_;
  std::vector<uint16_t> lm_head_f16_;
  std::vector<double> rope_inv_freq_;  // (HS/2) the Llama family's rotary frequencies, rope_scaling applied
  std::vector<BlockWeights> blocks_;
  std::vector<float> final_norm_weight_, final_norm_bias_;

  // activations, allocated for cap_ positions (grown on demand, at most n_positions). With
  // views_only_ (LoadOptions::activations) residual_, qkv_ and head_out_ hold one layer's rows at a
  // time, and queries_ every layer's q.
  int cap_ = 0;
  ActivationStorage activations_ = ActivationStorage::all;
  int full_tokens_ = 0;      // the longest text whose activations are kept whole (fit_context)
  bool views_only_ = false;  // this allocation keeps only the views' activations
  int reserved_ = 0;  // reserve()'s tokens until a run that long: the steps of that text keep the reserved allocation
  ActivationBuffer<float> residual_;  // (L+1, cap, C); views_only_: two rows buffers (R, C) and the final (cap, C),
                                      // R = forward_rows(); stream() and stream_rows() say where
  ActivationBuffer<float> qkv_;       // (L, cap, W): q | k | v (W = 3C for GPT-2); views_only_: (cap, W), one layer's
  // views_only_: every layer's q, (L, cap, QW), as the attention read it, stored as F16 of q / s with s
  // the power of two that puts the row's largest |q| in [0.5, 1) (query_scales_, (L, cap)): half the
  // bytes, no overflow, each value within 2^-11 of itself (relative; 2^-25 s absolute below F16's
  // normal range). Else empty. Rows recomputed from them are the forward's within the bound in
  // cpp/README.md, "Memory".
  ActivationBuffer<uint16_t> queries_f16_;
  ActivationBuffer<float> query_scales_;
  bool keep_maps_ = true;             // LoadOptions::attention_maps
  ActivationBuffer<float> att_;       // (L, NH, cap, cap); without keep_maps_ (NH, block, cap): one layer's
                                      // rows being computed (kernels::attention_block_rows)
  ActivationBuffer<float> head_out_;  // (L, cap, QW): concatenated head outputs, after ablation; views_only_: (cap, QW)
  std::vector<float> contrib_;        // (L, NH, cap, C) when keep_contributions
  ActivationBuffer<float> contrib_norm_;  // (L, NH, cap)
  ActivationBuffer<float> scratch_ln_;    // (R, C), R = forward_rows(): forward()'s rows at a time
  ActivationBuffer<float> scratch_proj_;  // (R, C)
  ActivationBuffer<float> scratch_head_;  // (R, C)
  ActivationBuffer<float> scratch_fc_;    // (R, F) GPT-2; (R, 3F) Llama: gate | up, then the SwiGLU
  ActivationBuffer<float> key_panels_;  // L x attention_key_panels_floats(cap, shape): keys and values in the attention
                                        // kernel's layout, cached with qkv_
  // Every head's thumbnail of the last run (LoadOptions::thumbnail_size S), raised by the forward pass
  // as it computes each row: (L, NH, S, S) cells of 2^thumb_shift_ x 2^thumb_shift_ weights
  // (attention_thumbnail_bin), rows [0, thumb_rows_) pooled in. Empty when S is 0.
  int thumb_size_ = 0;
  MemoryBudget budget_;  // fixed at load (build): what a text's activations may take
  std::vector<float> thumbs_;
  int thumb_shift_ = 0;
  int thumb_rows_ = 0;
  // The rows of the last cell row, each pooled alone ((L, NH, 2^thumb_shift_, S), kernels::
  // AttentionPool's tail) while a cell is at most kThumbTailRows rows: valid for rows [tail_begin_,
  // tail_end_) at tail_shift_ (-1: none). A run that computes some of them again (typing inside a
  // cell row) puts back the others from here, exactly as the forward pooled them, instead of pooling
  // them again from the cache (which a views-only model computes from its F16 queries).
  static constexpr int kThumbTailRows = 64;
  std::vector<float> thumb_tail_;
  int tail_begin_ = 0, tail_end_ = 0, tail_shift_ = -1;
  bool tail_complete_ = false;  // this run leaves every row [tail_begin_, T_) in the tail
  // Before forward(t_begin, .., layer_begin): the thumbnails brought to this run's bin and cleared of
  // every row the run computes again; the forward then raises them by the rows it computes
  void prepare_thumbnails(int t_begin, int layer_begin);
  // rows [r0, r1) of every head of layers [l0, l1) on the last run's cache, max-pooled into `cells`
  // ((L, NH, S, S) cells of 2^shift weights): the fallback when rows the thumbnails held were lost
  void pool_from_cache(float* cells, int S, int shift, int l0, int l1, int r0, int r1) const;
  // Each row's role statistics (kernels::AttentionRowStats), written by the forward pass: (L, NH, cap,
  // kRowStats); and the token-copy chains they need, for the last run's ids (row_copies_: before |
  // first | next, cap each)
  ActivationBuffer<float> row_stats_;
  ActivationBuffer<int32_t> row_copies_;
  // head_role_scores()'s sums of every head's row statistics (and how many counted) over rows
  // [0, role_rows_), in row order: a call adds the rows after them instead of all T rows (at 8,000
  // tokens of SmolLM2-135M, 52 MB read at every keystroke). They stop kRoleRowsRecent rows before the
  // end, which typing recomputes (a changed last word); a forward pass from before role_rows_, or
  // from a later layer, drops them.
  static constexpr int kRoleRowsRecent = 32;
  mutable std::vector<double> role_sums_;
  mutable std::vector<int> role_counts_;
  mutable int role_rows_ = 0;
  std::vector<float> logits_last_;  // (V)
  // the run length whose last row logits_last_ holds (-1: none). A run of the tokens the cache holds
  // (a view's tile or pull of the text on screen) recomputes no row, so it keeps them: the LM head of
  // one row reads the whole unembedding (154 MB in GPT-2 small), 8-9 ms of a tile's 10 in the page.
  int logits_last_rows_ = -1;
  std::vector<float> logits_all_;  // (cap, V) with all_logits

  // a count of forward() calls, by which a caller that keeps state between calls (the activation
  // patching, which reads the activations a run left) sees another's run
  uint64_t forward_calls_ = 0;
  // RunOptions::patch: during a patched run, layer run_patch_layer_'s head output from the other
  // text's run (run_patch_z_, (T, QW) rows of that layer)
  int run_patch_layer_ = -1;
  std::vector<float> run_patch_z_;
  ZPatch run_patch_;

  // state of the last run
  int T_ = 0;
  bool has_run_ = false;
  std::vector<Token> tokens_;
  std::vector<int32_t> ids_;
  RunOptions options_;
  std::vector<uint8_t> ablate_mask_;  // (L, NH), 1 = switched off
  int cached_tokens_ = 0;             // leading positions whose activations are valid for options_
  int cached_logits_ = 0;             // leading positions whose rows of logits_all_ belong to that cache
  // value_norms(), computed when first asked for and kept with the cache: rows [0, value_norm_rows_)
  // of each (layer, head) block hold || v_j W_O^h || for the cached tokens (a token's value depends on
  // it and the tokens before it only, so typing at the end keeps them)
  mutable std::vector<float> value_norm_;  // (L, NH, cap)
  mutable int value_norm_rows_ = 0;
};

}  // namespace headscope
