// Model: loading. A folder, buffers or any ByteSource -> validated config, tokenizer and weights,
// each tensor read once into its packed storage (float32, F16 or 8-bit), after checking that they fit
// (weight_plan.cpp).
#include "headscope/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>

#include "headscope/error.hpp"
#include "headscope/safetensors.hpp"
#include "arch/tensor_table.hpp"
#include "model/model_impl.hpp"
#include "model/model_memory.hpp"

namespace headscope {

namespace {
std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error("cannot read " + path.string());
  return ss.str();
}

// Reads the checkpoint's tensors by their table names, under the file's prefix (arch::checkpoint_prefix)
class TensorReader {
 public:
  TensorReader(const SafeTensors& st, std::string prefix) : st_(st), prefix_(std::move(prefix)) {}
  std::vector<float> read(const std::string& name, std::vector<int64_t> shape, std::size_t& count) const {
    std::size_t n = 1;
    for (int64_t d : shape) n *= (std::size_t)d;
    std::vector<float> v(n);
    read_into(v.data(), name, shape, count);
    return v;
  }
  // Straight into the storage that keeps the tensor: no second copy of it is ever made.
  void read_into(float* out, const std::string& name, const std::vector<int64_t>& shape, std::size_t& count) const {
    st_.read_f32_into(out, prefix_ + name, shape);
    std::size_t n = 1;
    for (int64_t d : shape) n *= (std::size_t)d;
    // Non-finite weights would silently turn every output into NaN: reject the file instead.
    for (std::size_t i = 0; i < n; i++)
      if (!std::isfinite(out[i]))
        throw Error("model.safetensors: tensor \"" + prefix_ + name + "\" contains NaN or Inf (element " +
                    std::to_string(i) + ")");
    count += n;
  }

 private:
  const SafeTensors& st_;
  std::string prefix_;
};

// With F16 storage a weight must be within F16's finite range: 65504, and values up to 65520
// (exclusive) round to it; larger ones would become infinite.
void check_f16_range(const std::string& name, const float* w, std::size_t n) {
  for (std::size_t i = 0; i < n; i++)
    if (!(std::fabs(w[i]) < 65520.0f))
      throw Error("model.safetensors: tensor \"" + name + "\" element " + std::to_string(i) + " is " +
                  std::to_string(w[i]) + ", beyond F16's range (largest 65504); load it with float32 weights");
}

}  // namespace

Model Model::load_directory(const std::filesystem::path& dir, const LoadOptions& options) {
  if (!std::filesystem::is_directory(dir)) throw Error("model folder not found: " + dir.string());
  const std::string config = read_file(dir / "config.json");
  // a folder of another family is named by its model_type, before its files are missed
  const bool llama = parse_config(config).family == Family::llama;
  const std::filesystem::path weights_path = dir / "model.safetensors";
  if (!std::filesystem::exists(weights_path))
    throw Error("no model.safetensors in " + dir.string() + " (only the safetensors format is supported)");
  // The Llama family's tokenizer is its tokenizer.json (the hub's folders often hold a vocab.json and
  // merges.txt too, without its split, normalizer and special tokens); GPT-2's is vocab.json +
  // merges.txt, or tokenizer.json when the folder has only that
  if (llama && !std::filesystem::exists(dir / "tokenizer.json"))
    throw Error("no tokenizer.json in " + dir.string() + ": a Llama-family model's tokenizer is read from it");
  const bool gpt2_files =
      !llama && (std::filesystem::exists(dir / "vocab.json") || !std::filesystem::exists(dir / "tokenizer.json"));
  Tokenizer tokenizer = gpt2_files ? Tokenizer::from_json(read_file(dir / "vocab.json"), read_file(dir / "merges.txt"))
                                   : Tokenizer::from_tokenizer_json(read_file(dir / "tokenizer.json"));
  // read tensor by tensor into the weights' own storage: the file is never held in memory
  return load_source(config, file_source(weights_path), std::move(tokenizer), 0, options);
}

Model Model::load_buffers(std::string_view config_json, std::span<const uint8_t> safetensors,
                          std::string_view vocab_json, std::string_view merges_txt, const LoadOptions& options) {
  return load_source(config_json, memory_source(safetensors), vocab_json, merges_txt, safetensors.size(), options);
}

Model Model::load_buffers_tokenizer_json(std::string_view config_json, std::span<const uint8_t> safetensors,
                                         std::string_view tokenizer_json, const LoadOptions& options) {
  parse_config(config_json);  // a config of another family is named before the tokenizer is read
  return load_source(config_json, memory_source(safetensors), Tokenizer::from_tokenizer_json(tokenizer_json),
                     safetensors.size(), options);
}

Model Model::load_source(std::string_view config_json, std::shared_ptr<const ByteSource> safetensors,
                         std::string_view vocab_json, std::string_view merges_txt, uint64_t resident_bytes,
                         const LoadOptions& options) {
  if (parse_config(config_json).family == Family::llama)
    throw Error(
        "a Llama-family model's tokenizer is its tokenizer.json, not vocab.json and merges.txt "
        "(Model::load_buffers_tokenizer_json; in JavaScript { config, weights, tokenizer })");
  return load_source(config_json, std::move(safetensors), Tokenizer::from_json(vocab_json, merges_txt), resident_bytes,
                     options);
}

Model Model::load_source(std::string_view config_json, std::shared_ptr<const ByteSource> safetensors,
                         Tokenizer tokenizer, uint64_t resident_bytes, const LoadOptions& options) {
  Model m;
  if (options.threads < 0 || options.threads > kMaxThreads)
    throw Error("threads must be within [0, " + std::to_string(kMaxThreads) + "] (0: one per core), got " +
                std::to_string(options.threads));
  if (options.thumbnail_size < 0 || options.thumbnail_size > kMaxThumbnailSize)
    throw Error("thumbnail_size must be within [0, " + std::to_string(kMaxThumbnailSize) + "] (0: none), got " +
                std::to_string(options.thumbnail_size));
  const ModelConfig config = parse_config(config_json);
  LoadOptions resolved = options;
  if (options.weights == WeightStorage::automatic) {
    // as the file stores its matrices: half precision stays half (read from the header alone)
    bool half = false, single = false;
    const SafeTensors header(safetensors);  // named: a temporary's map would not outlive the loop's start
    for (const auto& [name, info] : header.tensors())
      if (info.shape.size() == 2) (info.dtype == "F16" || info.dtype == "BF16" ? half : single) = true;
    resolved.weights = half && !single ? WeightStorage::f16 : WeightStorage::f32;
  }
  check_weights_fit(config, resident_bytes, resolved.weights, options.memory_limit_bytes);
  try {
    m.impl_->build(config_json, std::move(safetensors), std::move(tokenizer), resolved);
  } catch (const std::bad_alloc&) {
    throw Error(std::string("out of memory while loading the model: its ") + storage_words(resolved.weights) +
                " weights need about " + gigabytes(planned_weight_bytes(config, resolved.weights)) +
                (resolved.weights == WeightStorage::f32   ? "; try weights in F16 or 8 bits, or a smaller model"
                 : resolved.weights == WeightStorage::f16 ? "; try 8-bit weights, or a smaller model"
                                                          : "; try a smaller model"));
  }
  return m;
}

// Sets the budget, and a Llama-family model's context to what fits it. The context is what fits: with
// the maps kept (L, NH, T, T), a model with many layers and heads reaches its activation budget long
// before its configured context (SmolLM2-135M's shape near 1,700 tokens in wasm's 4 GB; without them,
// several thousand); a longer text is then cut, as past the context, instead of refused. (GPT-2's
// context is its n_positions, 1,024 at most in the published models, with a table of positions.)
// A model that leaves no room for a short text is refused.
void Model::Impl::fit_context(const MemoryBudget& budget, WeightStorage storage, int configured) {
  budget_ = budget;
  // the longest text whose activations fit `bytes`, kept whole (views_only false) or not, at most `most`
  const auto fitting = [&](uint64_t bytes, bool views_only, int most) {
    int lo = 0, hi = most;
    while (lo < hi) {
      const int mid = lo + (hi - lo + 1) / 2;
      if (4 * activation_floats((uint64_t)mid, views_only) <= bytes)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  };
  // views-only storage needs the key cache of the SIMD build's attention kernel
  const bool views_possible = kernels::attention_key_panels_floats(16, {1, 1, 1}) > 0;
  const bool past_full = views_possible && activations_ != ActivationStorage::all;
  full_tokens_ = activations_ == ActivationStorage::views && views_possible ? 0
                 : activations_ == ActivationStorage::automatic && views_possible
                     ? fitting(std::min(budget_.limit / 4, budget_.activations), false, configured)
                     : configured;
  if (config_.family == Family::llama)
    config_.n_positions = std::max(1, fitting(budget_.activations, past_full, configured));
  const int least = std::min(configured, 64);
  const bool least_views = past_full && least > full_tokens_;
  if (4 * activation_floats((uint64_t)least, least_views) > budget_.activations)
    throw Error("this model leaves " + megabytes(budget_.activations) + " for a text's activations (" +
                budget_.words() + "), and " + std::to_string(least) + " tokens need " +
                megabytes(4 * activation_floats((uint64_t)least, least_views)) +
                (storage == WeightStorage::f32   ? "; try weights in F16 or 8 bits, or a smaller model"
                 : storage == WeightStorage::f16 ? "; try 8-bit weights, or a smaller model"
                                                 : "; try a smaller model"));
}

void Model::Impl::build(std::string_view config_json, std::shared_ptr<const ByteSource> safetensors,
                        Tokenizer tokenizer, const LoadOptions& options) {
  const WeightStorage storage = options.weights;
  const int threads = options.threads;
  config_ = parse_config(config_json);
  keep_maps_ = options.attention_maps;
  activations_ = options.activations;
  thumb_size_ = options.thumbnail_size;
  // Before the weights are read: in use now is what else the module holds (other models, the tokenizer).
  // Planned weights first, to refuse before reading them; the weights as stored once read.
  const uint64_t limit = memory_limit(options.memory_limit_bytes), in_use = memory_in_use();
  const int configured = config_.n_positions;
  fit_context(MemoryBudget::of(limit, planned_weight_bytes(config_, storage), in_use), storage, configured);
  pool_ = std::make_unique<kernels::ThreadPool>(threads == 0 ? kernels::hardware_threads() : threads);
  storage_ = storage;
  tokenizer_ = std::move(tokenizer);
  const ModelConfig& c = config_;
  if (tokenizer_->vocab_size() > c.vocab_size)
    throw Error("the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                " tokens but config.json says vocab_size " + std::to_string(c.vocab_size));
  const SafeTensors st(std::move(safetensors), "model.safetensors");
  load_weights(st, storage);
  fit_context(MemoryBudget::of(limit, weight_bytes(), in_use), storage, configured);
  cap_ = 0;
  has_run_ = false;
  cached_tokens_ = 0;
  cached_logits_ = 0;
}

namespace {
// A (V, C) embedding matrix in the chosen storage: float32 as read, or F16 packed row by row (the
// embedding and the LM head widen whole rows).
void store_embedding(std::vector<float>& f32, std::vector<uint16_t>& f16, const std::string& name, int64_t V, int64_t C,
                     bool to_f16) {
  f16.clear();
  if (!to_f16) return;
  check_f16_range(name, f32.data(), f32.size());
  f16.resize(f32.size());
  for (int64_t v = 0; v < V; v++) kernels::f16_pack(&f16[(std::size_t)v * C], &f32[(std::size_t)v * C], (std::size_t)C);
  std::vector<float>().swap(f32);
}

// The packed layer a linear slot fills, and its (in, out) shape
kernels::PackedLinear& linear_in(BlockWeights& b, arch::Slot s) {
  using arch::Slot;
  switch (arch::linear_of(s)) {
    case Slot::qkv_weight:
      return b.attn_in;
    case Slot::attn_proj_weight:
      return b.attn_out;
    case Slot::fc_weight:
      return b.mlp_in;
    default:
      return b.mlp_out;
  }
}
std::pair<int64_t, int64_t> linear_shape(const ModelConfig& c, arch::Slot s) {
  using arch::Slot;
  const int64_t C = c.n_embd, F = c.n_inner, gate_up = c.family == Family::llama ? 2 : 1;
  switch (arch::linear_of(s)) {
    case Slot::qkv_weight:
      return {C, c.qkv_width()};
    case Slot::attn_proj_weight:
      return {c.q_width(), C};
    case Slot::fc_weight:
      return {C, gate_up * F};
    default:
      return {F, C};
  }
}
std::vector<float>* block_vector(BlockWeights& b, arch::Slot s) {
  using arch::Slot;
  using V = std::vector<float> BlockWeights::*;
  // clang-format off
  const std::pair<Slot, V> vectors[] = {
      {Slot::ln1_weight, &BlockWeights::norm1_weight}, {Slot::ln1_bias, &BlockWeights::norm1_bias},
      {Slot::ln2_weight, &BlockWeights::norm2_weight}, {Slot::ln2_bias, &BlockWeights::norm2_bias},
      {Slot::q_norm, &BlockWeights::q_norm}, {Slot::k_norm, &BlockWeights::k_norm}};
  // clang-format on
  for (const auto& [slot, member] : vectors)
    if (slot == s) return &(b.*member);
  return nullptr;
}
}  // namespace

// Every tensor of the family's table (arch/), each read once into the storage that keeps it: the
// embedding and an untied LM head first (with F16 storage they are the peak, planned_load_bytes), then
// the blocks in table order, each packed linear layer assembled from its parts (the Llama family's
// nn.Linear [out, in] parts transposed into their columns of the kernels' [in, out]) and packed as
// soon as it is whole, so one layer's float32 copy is the only temporary.
void Model::Impl::load_weights(const SafeTensors& st, WeightStorage storage) {
  using arch::Slot;
  const ModelConfig& c = config_;
  const arch::TensorTable table = arch::tensor_table(c);
  const TensorReader r(st, arch::checkpoint_prefix(c, st));
  for (const auto& [name, reason] : table.absent)
    if (st.contains(name)) throw Error("model.safetensors has " + name + " but " + reason);
  const int64_t C = c.n_embd;
  // the embeddings are F16 in both smaller storages; the linear layers F16 or 8-bit (8-bit needs finite
  // weights, which the reader guarantees: it refuses NaN and infinities in every tensor)
  const bool f16 = storage != WeightStorage::f32, q8 = storage == WeightStorage::q8;
  std::size_t n = 0;
  wte_.clear(), wte_f16_.clear(), lm_head_.clear(), lm_head_f16_.clear(), wpe_.clear(), final_norm_bias_.clear();
  const auto embedding = [&](const arch::TensorEntry& e, std::vector<float>& f32, std::vector<uint16_t>& half) {
    f32.assign((std::size_t)c.vocab_size * C, 0.0f);
    r.read_into(f32.data(), e.name, e.shape, n);
    store_embedding(f32, half, e.name, c.vocab_size, C, f16);
  };
  for (const arch::TensorEntry& e : table.tensors)
    if (e.slot == Slot::embedding)
      embedding(e, wte_, wte_f16_);
    else if (e.slot == Slot::lm_head)
      embedding(e, lm_head_, lm_head_f16_);
  scratch_wte_.assign(f16 ? kernels::matmul_transposed_f16_scratch_floats((int)C) : 0, 0.0f);
  rope_inv_freq_ = c.family == Family::llama ? rope_frequencies(c) : std::vector<double>();

  blocks_.assign(c.n_layer, BlockWeights{});
  // the linear layer being assembled: its weight (in, out) and bias, and the first part's name
  std::vector<float> weight, bias;
  std::string weight_name;
  Slot open = Slot::embedding;  // no layer open
  int open_layer = -1;
  const auto close = [&] {
    if (open == Slot::embedding) return;
    const auto [K, N] = linear_shape(c, open);
    if (bias.empty()) bias.assign((std::size_t)N, 0.0f);  // the Llama family: none
    kernels::PackedLinear& dst = linear_in(blocks_[open_layer], open);
    dst = q8    ? kernels::pack_linear_q8(weight.data(), bias.data(), (int)K, (int)N)
          : f16 ? kernels::pack_linear_f16(weight.data(), bias.data(), (int)K, (int)N)
                : kernels::pack_linear(weight.data(), bias.data(), (int)K, (int)N);
    open = Slot::embedding;
    bias.clear();
  };
  for (const arch::TensorEntry& e : table.tensors) {
    if (arch::is_linear(e.slot)) {
      const Slot layer_slot = arch::linear_of(e.slot);
      if (layer_slot != open || e.layer != open_layer) {
        close();
        const auto [K, N] = linear_shape(c, layer_slot);
        weight.assign((std::size_t)(K * N), 0.0f);
        open = layer_slot, open_layer = e.layer, weight_name = e.name;
      }
      if (arch::is_bias(e.slot)) {
        bias = r.read(e.name, e.shape, n);
        continue;
      }
      const int64_t width = linear_shape(c, layer_slot).second;
      if (table.linear_out_in) {  // [out, in] into columns [column, column + out) of (in, width)
        const std::vector<float> w = r.read(e.name, e.shape, n);
        if (f16 && !q8) check_f16_range(e.name, w.data(), w.size());
        const int64_t out = e.shape[0], in = e.shape[1];
        for (int64_t o = 0; o < out; o++)
          for (int64_t i = 0; i < in; i++)
            weight[(std::size_t)(i * width + e.column + o)] = w[(std::size_t)(o * in + i)];
      } else {  // Conv1D's [in, out] is the kernels' layout
        r.read_into(weight.data(), e.name, e.shape, n);
        if (f16 && !q8) check_f16_range(e.name, weight.data(), weight.size());
      }
      continue;
    }
    close();
    if (e.layer >= 0) {
      *block_vector(blocks_[e.layer], e.slot) = r.read(e.name, e.shape, n);
    } else if (e.slot == Slot::positions) {
      wpe_.assign((std::size_t)c.n_positions * C, 0.0f);
      r.read_into(wpe_.data(), e.name, e.shape, n);
    } else if (e.slot == Slot::final_norm_weight) {
      final_norm_weight_ = r.read(e.name, e.shape, n);
    } else if (e.slot == Slot::final_norm_bias) {
      final_norm_bias_ = r.read(e.name, e.shape, n);
    }
  }
  close();
  parameter_count_ = n;
}

std::size_t Model::Impl::weight_bytes() const {
  std::size_t b = (wte_.size() + wpe_.size() + lm_head_.size() + final_norm_weight_.size() + final_norm_bias_.size()) *
                      sizeof(float) +
                  (wte_f16_.size() + lm_head_f16_.size()) * sizeof(uint16_t);
  for (const auto& blk : blocks_)
    b += (blk.norm1_weight.size() + blk.norm1_bias.size() + blk.norm2_weight.size() + blk.norm2_bias.size() +
          blk.q_norm.size() + blk.k_norm.size()) *
             sizeof(float) +
         blk.attn_in.bytes() + blk.attn_out.bytes() + blk.mlp_in.bytes() + blk.mlp_out.bytes();
  return b;
}

}  // namespace headscope
