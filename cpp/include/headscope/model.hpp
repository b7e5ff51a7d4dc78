// Model: a GPT-2 or Llama-family transformer that records what every attention head did.
//
// Data path: text -> Tokenizer (byte-level BPE) -> ids -> embeddings -> L pre-norm blocks (causal
// attention: multi-head, or query heads sharing key/value heads; MLP) -> final norm -> LM head -> logits.
// GPT-2: LayerNorm, learned positions, GELU, tied head; the Llama family: RMSNorm, rotary positions,
// SwiGLU, tied or untied head (cpp/README.md, "The Llama family").
// After run(), the model holds the last run's tokens, logits, attention probabilities of every
// layer and head, and each head's contribution to the residual stream.
//
// Legend: T tokens, C n_embd, L n_layer, NH n_head, HS head size, V vocab_size, F n_inner.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "headscope/config.hpp"
#include "headscope/safetensors.hpp"
#include "headscope/tokenizer.hpp"

namespace headscope {

namespace train {
class Trainer;
}  // namespace train
class ActivationPatching;

struct HeadRef {
  int layer = 0;
  int head = 0;
  bool operator==(const HeadRef&) const = default;
};

// RunOptions::patch: head `head`'s output before W_O (z) at every position taken from a run of the
// token ids `from` (activation patching of one head, as a whole run; headscope/patching.hpp defines it).
struct RunPatch {
  std::vector<int32_t> from;
  HeadRef head;
};

struct RunOptions {
  // Heads whose outputs are zeroed before the output projection W_O ("switched off").
  std::vector<HeadRef> ablate;
  // Keep logits for every position, not only the last (costs T x V floats).
  bool all_logits = false;
  // Keep each head's full contribution vectors (L x NH x T x C floats); their norms are always kept.
  bool keep_contributions = false;
  // The head Model::head_inside() returns. Costs the run nothing: the insides are read from the
  // run's own buffers when asked for, so an inspecting run reuses the cache like any other.
  std::optional<HeadRef> inspect;
  // The run with one head patched from another text of as many tokens (with the same switched-off
  // heads). It computes every token, and the run after it too: the engine keeps no cache across it.
  std::optional<RunPatch> patch;
};

// One head's computation on the last run's tokens, read from the forward pass's own buffers (q, k, v,
// the attention map, z) and computed from them with the forward's kernels (scores, the write), row-major:
struct HeadInside {
  int layer = 0, head = 0;
  int T = 0, head_size = 0, n_embd = 0;
  std::vector<float> q, k, v;     // (T, HS): the head's query, key and value of each token
  std::vector<float> scores;      // (T, T): q_i . k_j / sqrt(HS) for j <= i; -infinity where j > i (masked)
  std::vector<float> attention;   // (T, T): softmax of each row, the head's attention map
  std::vector<float> z;           // (T, HS): z_i = sum_j attention_ij v_j
  std::vector<float> out;         // (T, C): z_i @ W_O^h, the head's write into the residual stream (0 if switched off)
  std::vector<float> value_norm;  // (T): || v_j @ W_O^h ||, the size of what the head moves from token j
};

// How the large weight matrices are held after loading: every block's linear layers and the token
// embedding wte (also the tied LM head). LayerNorm parameters, biases and wpe stay float32 either way.
//   f32: float32, the default (results as computed in float32 from the checkpoint's values)
//   f16: IEEE half precision, about half the memory; the kernels widen them to float32 as they read,
//        so results equal a float32 model whose weights were rounded to F16 (nearest even). An F16
//        checkpoint's values are kept exactly; F32 and BF16 values are rounded once.
//   q8:  8-bit: every block's four linear layers as int8 with a float32 scale per output column, their
//        inputs quantized per token to 7 bits as each product runs, the sums in int32 (the definition:
//        cpp/src/kernels/kernels.hpp, "8-bit weights"); the embedding and the LM head in F16. Weights
//        take about a quarter of float32's memory. Attention, the norms, the residual stream and the
//        logits stay float32: results are float32 computations on slightly perturbed inputs (how
//        much, on the shipped models: cpp/README.md, "8-bit weights").
//   automatic (asked for as "auto"): as the checkpoint stores them, f16 when its matrices are F16 or
//        BF16 (an F16 file stays F16 in memory), else f32. A model's weight_storage() is never automatic.
enum class WeightStorage { f32, f16, automatic, q8 };
// "f32" / "f16" / "q8" / "auto"; parse_weight_storage throws Error on anything else
const char* weight_storage_name(WeightStorage s);
WeightStorage parse_weight_storage(std::string_view name);

// What a run keeps of a text's activations, per token:
//   all: every layer's residual stream, q | k | v and head outputs, besides the key/value cache: what
//     hidden_states(), head_inside(), logit_attribution(), the score split (explain_score) and the
//     patching read. Typing after switching heads off starts at the first layer that changed.
//   views: only what the views read: every layer's queries, in F16 at a power-of-two scale per row,
//     and key/value cache (maps, tiles and thumbnails recompute any row from them), the thumbnails, the
//     role statistics and each head's write norm. About 30% of `all` for the Llama family's shapes
//     (SmolLM2-135M: 24,600 floats' worth a token against 78,000). What the forward pass computes
//     equals `all`'s bit for bit: logits, role scores, value and write norms, the run's thumbnails, and
//     typing. A row recomputed later (maps, tiles, thumbnails of another size; the kept maps when
//     attention_maps is on are the forward's) is the forward's on queries rounded to F16: each weight
//     within p (exp(2 D) - 1) of `all`'s p, D the largest change of the row's scores, at most
//     sum_i (2^-11 |q_i| + 2^-25 s) |k_i| / sqrt(HS) (cpp/README.md, "Memory"). The analyses above throw
//     an Error naming the option. Needs the SIMD build's key cache: a scalar build keeps `all`.
//   automatic: `all` while a text's activations take at most a quarter of the memory limit
//     (MemoryUse::full_activation_tokens tokens), `views` past that, so that a short text can be
//     analysed in full and a long one still fits.
enum class ActivationStorage { all, views, automatic };
// "all" / "views" / "auto"; parse_activation_storage throws Error on anything else
const char* activation_storage_name(ActivationStorage s);
ActivationStorage parse_activation_storage(std::string_view name);

struct LoadOptions {
  WeightStorage weights = WeightStorage::f32;
  // Threads the kernels split each run over: 0 = one per core (std::thread::hardware_concurrency),
  // at most kMaxThreads. Results are bit-identical for every count (work is split along outputs, never
  // a sum). A wasm build without threads always runs on one.
  int threads = 0;
  // Keep every head's full attention map after a run (L x NH x T x T floats). false: no map is kept;
  // whatever reads one (attention(), attention_all(), copy_attention_rows(), head_inside(), tiles,
  // thumbnails, the score split) recomputes the rows it needs from the key cache with the forward
  // pass's own kernel, bit for bit the same. A run's memory then grows with T instead of T², so long
  // texts fit (a Llama-family model's context is what fits), at the cost of that recomputation.
  bool attention_maps = true;
  // Every run also keeps every head's map as a thumbnail of at most thumbnail_size x thumbnail_size
  // cells (attention_thumbnails), raised by the forward pass as it computes each row: the grid of
  // every head costs the run about one comparison per weight and no second pass over the maps, and
  // typing raises only the new rows' cells. (L x NH x size² floats: 9 MB for GPT-2 small at 128.)
  // 0: none kept (attention_thumbnails then recomputes them).
  int thumbnail_size = 128;
  // The memory the model may use, in bytes: its weights, a text's activations and a reserve for the
  // rest (MemoryUse says how it is spent). 0: all there is, the wasm module's maximum memory (4 GB for
  // the npm package) or natively the machine's physical memory; a smaller figure caps it (a browser
  // that reserves less, a tab sharing its memory). A model whose weights do not fit is refused at load
  // with the sizes; a Llama-family model's context is what fits the rest; a longer GPT-2 text is refused.
  uint64_t memory_limit_bytes = 0;
  // What a run keeps of a text's activations (ActivationStorage): every layer's, or only what the
  // views read, which lets a long text fit in less than half the memory.
  ActivationStorage activations = ActivationStorage::all;
};
inline constexpr int kMaxThreads = 256;
inline constexpr int kMaxThumbnailSize = 512;
inline constexpr int kRoleScores = 6;  // Model::head_role_scores: previous, first, self, duplicate, induction, broad

// The bin of a T x T map's thumbnail of at most size x size cells: the smallest power of two b with
// ceil(T / b) <= size. A power of two, so that a text growing past a bin doubles it, and the cells
// at 2b are the maxima of 2 x 2 cells at b: typing never computes an old row again.
int attention_thumbnail_bin(int T, int size);

struct RunInfo {
  int tokens = 0;           // T, tokens the model saw
  int reused_tokens = 0;    // leading tokens whose keys/values came from the previous run's cache
  int reused_layers = 0;    // leading layers taken whole from the cache: the same tokens as the previous
                            // run, other heads switched off, none of them in these layers
  int dropped_tokens = 0;   // tokens cut from the start because the text exceeded n_positions
  uint32_t first_byte = 0;  // byte offset in the text of the first token the model saw
};

// Which kernels this build runs (what `headscope bench` and the package's model.info report).
struct SimdInfo {
  std::string arch;           // xsimd architecture ("sse4.1" in wasm: Emscripten lowers it to SIMD128), or "scalar"
  int float_lanes = 1;        // floats per SIMD batch; 1 when built with HEADSCOPE_SIMD=OFF
  bool simd = false;          // false when every kernel runs its scalar reference
  bool relaxed_madd = false;  // wasm built with relaxed SIMD: products use f32x4.relaxed_madd
};
SimdInfo simd_info();

// What pushed one logit: each part's write into the residual stream c at the position, through the
// final LayerNorm fixed at that position, (c - mean(c)) / sigma . (gamma * wte[token]) (the Llama
// family's RMSNorm: c / rms . (gamma * unembedding[token]), no centring and no bias):
struct LogitAttribution {
  int position = 0, token = 0;
  double logit = 0;               // the model's logit (float32, as logits give it)
  std::vector<double> heads;      // (L, NH): each head's write z_h W_O^h
  std::vector<double> attn_bias;  // (L): W_O's bias
  std::vector<double> mlp;        // (L): each block's MLP
  double embedding = 0;           // the token and position embeddings
  double ln_bias = 0;             // beta . wte[token], the final LayerNorm's bias
  double total() const;           // the sum of every part: the logit, up to rounding
};

// A part of one head's attention map on the last run (Model::attention_tile): rows [row_begin, row_end)
// and columns [col_begin, col_end) of the T x T map in cells of bin x bin (the last row and column of
// cells may be narrower), each cell the largest weight it covers. The maximum, not the mean: a head
// that puts all of a row on one token stays a cell of 1 at every bin, where a mean would fade it by bin².
struct AttentionTile {
  int layer = 0, head = 0;
  int row_begin = 0, row_end = 0, col_begin = 0, col_end = 0, bin = 1;
  int rows = 0, cols = 0;     // cells: ceil((row_end - row_begin) / bin) x ceil((col_end - col_begin) / bin)
  std::vector<float> values;  // (rows, cols), row-major; with bin 1 the map's own weights, bit for bit
};

// How a model's memory is spent (Model::memory), fixed at load: the limit (LoadOptions::
// memory_limit_bytes) less the weights, what the module held before them and a reserve is the budget
// a text's activations must fit. A Llama-family model's context (config().n_positions,
// context_tokens) is at most what fits it; a longer text is cut to it.
struct MemoryUse {
  uint64_t limit_bytes = 0;  // the whole: wasm's maximum memory, physical memory, or the option
  uint64_t weight_bytes = 0;
  uint64_t in_use_at_load_bytes = 0;     // wasm: what the module held before the weights (other models, the tokenizer)
  uint64_t reserve_bytes = 0;            // kept free: results on their way out, the allocator's slack
  uint64_t activation_budget_bytes = 0;  // the rest: the limit on a text's activations
  uint64_t activation_bytes = 0;         // allocated now, for capacity_tokens positions
  int capacity_tokens = 0;
  int context_tokens = 0;         // the longest text run() keeps (config().n_positions)
  uint64_t bytes_at_context = 0;  // the activations a text as long as the context needs
  bool attention_maps = true;     // LoadOptions::attention_maps: the maps (L x NH x T² floats) kept
  ActivationStorage activations = ActivationStorage::all;  // LoadOptions::activations
  bool views_only = false;                                 // the last allocation keeps only the views' activations
  int full_activation_tokens = 0;  // the longest text whose activations are kept whole (the context with `all`)
};

class Model {
 public:
  // A folder in the Hugging Face layout: config.json, model.safetensors, and the tokenizer as
  // vocab.json + merges.txt (GPT-2) or tokenizer.json (the Llama family; also read for GPT-2 when
  // vocab.json is absent). The weights are read tensor by tensor into their own storage: the file
  // is never held in memory.
  static Model load_directory(const std::filesystem::path& dir, const LoadOptions& options = {});
  // The same four files as in-memory buffers (what a browser hands over).
  static Model load_buffers(std::string_view config_json, std::span<const uint8_t> safetensors,
                            std::string_view vocab_json, std::string_view merges_txt, const LoadOptions& options = {});
  // config.json, model.safetensors and tokenizer.json as in-memory buffers.
  static Model load_buffers_tokenizer_json(std::string_view config_json, std::span<const uint8_t> safetensors,
                                           std::string_view tokenizer_json, const LoadOptions& options = {});
  // The weights from any ByteSource (e.g. a JavaScript buffer read tensor by tensor).
  // resident_bytes: memory already taken by the source itself, counted when checking that the
  // weights fit. Every loader refuses, with the sizes, a model whose weights cannot fit in memory
  // (wasm: the module's maximum memory; natively: physical memory) and turns an allocation failure
  // into an Error naming the size. With F16 storage, a weight beyond F16's range (|w| >= 65520) is
  // refused with its tensor's name.
  static Model load_source(std::string_view config_json, std::shared_ptr<const ByteSource> safetensors,
                           std::string_view vocab_json, std::string_view merges_txt, uint64_t resident_bytes,
                           const LoadOptions& options = {});
  // The same with the tokenizer already made (from either kind of file).
  static Model load_source(std::string_view config_json, std::shared_ptr<const ByteSource> safetensors,
                           Tokenizer tokenizer, uint64_t resident_bytes, const LoadOptions& options = {});

  const ModelConfig& config() const;
  const Tokenizer& tokenizer() const;
  std::size_t parameter_count() const;
  std::size_t weight_bytes() const;  // bytes the loaded weights take, in their storage
  MemoryUse memory() const;
  WeightStorage weight_storage() const;
  int threads() const;  // the kernels' threads (LoadOptions::threads, resolved)

  // Tokenizes and runs `text`. Throws Error on empty text or invalid UTF-8.
  // Text longer than n_positions tokens: the oldest tokens are cut (the ones next to the cursor,
  // which a reader typing at the end is looking at, are kept), in whole steps of n_positions / 8
  // (tokens_to_drop()): typing on past the context then extends the same window for up to that many
  // tokens, each keystroke an incremental update, instead of shifting every position at every token.
  // RunInfo::dropped_tokens says how many were cut; the same text always keeps the same tokens.
  // The tokenizer's leading special tokens (Llama 3's <|begin_of_text|>) stay first: the cut is after
  // them, as a model trained with a BOS expects (its first-token "sink" heads look there).
  // When the new tokens begin with the previous run's tokens (typing at the end) and the switched-
  // off heads match, the cached keys and values of that prefix are reused; results equal a full run.
  // The same tokens with other switched-off heads reuse the layers below the first that changed.
  RunInfo run(std::string_view text, const RunOptions& options = {});
  // Tokens run() cuts from the start of a text of `tokens` tokens: 0 when it fits, else the excess
  // rounded up to a whole number of steps of n_positions / kContextDropSteps (at least 1).
  int tokens_to_drop(int tokens) const;
  static constexpr int kContextDropSteps = 8;
  // The window run() keeps of a sequence of ids that begins as Tokenizer::encode_input's does: its
  // leading special tokens, then all but the first `dropped` of the rest (tokens_to_drop()).
  std::vector<int32_t> context_window(std::span<const int32_t> ids, int* dropped = nullptr) const;
  // Runs token ids directly (1 <= size <= n_positions, each id < vocab_size).
  RunInfo run_ids(std::span<const int32_t> ids, const RunOptions& options = {});
  void clear_cache();  // the next run computes every token
  // Allocates activations for `tokens` positions (at most n_positions) now. A long text run in
  // steps (prefixes first) then never reallocates between steps, which would drop the cache.
  // Returns true when it reallocated: the cache and the last run's results are gone.
  bool reserve(int tokens);

  // ---- results of the last run (throw Error if there was none, or on a bad layer/head) ----
  int T() const;
  const std::vector<Token>& tokens() const;
  const std::vector<int32_t>& ids() const;
  std::span<const float> logits_last() const;               // (V)
  std::vector<float> logits_all() const;                    // (T, V); requires RunOptions::all_logits
  std::vector<float> attention(int layer, int head) const;  // (T, T), row = query, column = key
  std::vector<float> attention_all() const;                 // (L, NH, T, T)
  void copy_attention_all(float* out) const;                // same, into L*NH*T*T floats
  // Rows [row_begin, T) of every head's attention, for a caller that keeps each head's rows in a
  // block of `block_rows` rows of `stride` floats (stride >= T, block_rows >= T - row_begin): row q
  // of head (l, h) goes to out[((l * NH + h) * block_rows + q - row_begin) * stride + k], keys k < T,
  // and the rest of the row is 0. A viewer that keeps rows in a wider block can then take only the
  // rows a typed token changed (row q depends on tokens 0..q alone) and append rows without moving
  // the others. With row_begin 0 and block_rows = stride = T this is attention_all()'s layout.
  void copy_attention_rows(float* out, int row_begin, int block_rows, int stride) const;
  // The same for head (layer, head) alone: its block of block_rows x stride floats into `out`, as
  // copy_attention_rows() writes it at that head's place. A caller that hands the rows on (the
  // JavaScript binding) then needs one head's floats at a time, not every head's at once.
  void copy_head_attention_rows(float* out, int layer, int head, int row_begin, int block_rows, int stride) const;
  // Floats copy_attention_rows() writes: L * NH * block_rows * stride. Throws Error on a layout that
  // cannot hold the rows, or one wider than the context (stride or block_rows above n_positions).
  std::size_t attention_rows_floats(int row_begin, int block_rows, int stride) const;
  // A tile of head (layer, head)'s map, recomputed from the cached queries and keys by the forward
  // pass's own kernel (about (row_end - row_begin) x T x HS work): a view draws what it looks at
  // without the whole map leaving the engine. Throws Error on a range outside [0, T) or a bin < 1.
  AttentionTile attention_tile(int layer, int head, int row_begin, int row_end, int col_begin, int col_end,
                               int bin = 1) const;
  // Every head's map as a thumbnail of at most `size` x `size` cells: bin = attention_thumbnail_bin(T,
  // size), each cell the largest weight of its bin x bin block (as attention_tile's). (L, NH, n, n),
  // n = ceil(T / bin). At LoadOptions::thumbnail_size these are the ones the run pooled (a copy);
  // another size is recomputed from the key cache. With row_begin (in [0, n]) only each head's cell
  // rows [row_begin, n): (L, NH, n - row_begin, n), for a caller that holds the rows before it (typing
  // changes the rows from the first changed token's on, while the bin stays).
  std::vector<float> attention_thumbnails(int size, int* bin = nullptr, int row_begin = 0) const;
  // Every head's role scores on the last run, (L, NH, kRoleScores): each the mean over the rows that
  // count of a statistic of the head's attention row, in this order (the page's web/lib/analysis.js
  // names and explains them): previous (the weight on the token before), first (on the first token),
  // self, duplicate (on earlier copies of the token), induction (on the token after its last earlier
  // copy), broad (the row's entropy over log(t + 1)). The forward pass computes each row's statistics
  // as it computes the row, so this needs no map and typing adds only the new rows'. NaN for a score
  // no row counts in (duplicate on a text without a repeated token).
  std::vector<double> head_role_scores() const;
  std::vector<float> hidden_states() const;  // (L+1, T, C): residual entering each block, then after the last
  // Head h's contribution to the residual stream at each position: its output (T, HS) @ W_O[h*HS:(h+1)*HS, :].
  // The attention layer's output is the sum of these over heads plus W_O's bias: concatenating the
  // heads and multiplying by W_O is the same as adding up what each head writes through its rows of W_O.
  std::vector<float> contribution(int layer, int head) const;  // (T, C); requires keep_contributions
  // (L, NH, T - t_begin): L2 norm of each contribution row, tokens [t_begin, T). Typing changes only the
  // columns from the first changed token on; a caller holding the others asks for these.
  std::vector<float> contribution_norms(int t_begin = 0) const;
  // (L, NH, T): || v_j @ W_O^h ||, the size of what head h would move from token j, from the last
  // run's own values (so earlier switched-off heads count; a switched-off head's are what it would
  // move). Computed when first asked for, about one W_O product per layer, and kept with the cache:
  // after typing at the end only the new tokens' are computed. Weighting attention by them shows
  // what a head writes rather than where it looks (Kobayashi et al. 2020).
  std::vector<float> value_norms() const;
  // The inspected head of the last run (RunOptions::inspect); throws Error if it had none.
  HeadInside head_inside() const;
  // Direct logit attribution at `position` for token `token`, from the last run: the final norm
  // is affine once its mean and scale at that position are fixed, so the logit splits exactly into
  // one term per thing written into the residual stream. Needs no kept contributions.
  LogitAttribution logit_attribution(int position, int token) const;

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

 private:
  friend class train::Trainer;      // Trainer::load(const Model&) reads the packed weights
  friend class ActivationPatching;  // patching.hpp: runs from a layer with one head's output replaced
  friend struct AnalysisAccess;     // explain.hpp: reads a run's buffers and the packed weights
  Model();
  // The weights, the activations (the key/value cache among them) and the last run's state live
  // behind this pointer (cpp/src/model/model_impl.hpp), so this header is only the API.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace headscope
