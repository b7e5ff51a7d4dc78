#include "headscope/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
#include <malloc.h>
#else
#include <unistd.h>
#endif

#include "headscope/error.hpp"
#include "headscope/safetensors.hpp"

namespace headscope {
namespace {

// 1.5 GB of float32 activations: within wasm32's 4 GB memory (the npm module's MAXIMUM_MEMORY)
// next to a small model's weights. Real GPT-2 (124M) at its full 1024 tokens needs about 0.8 GB.
constexpr uint64_t kMaxActivationFloats = 384ull << 20;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error("cannot read " + path.string());
  return ss.str();
}

// Hugging Face GPT-2 checkpoints name tensors "h.0.attn.c_attn.weight" (GPT2Model) or
// "transformer.h.0..." (GPT2LMHeadModel); both are accepted.
class TensorReader {
 public:
  explicit TensorReader(const SafeTensors& st) : st_(st) {
    if (!st.contains("wte.weight") && st.contains("transformer.wte.weight")) prefix_ = "transformer.";
  }
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

// GB here are 2^30 bytes, so wasm32's 4 GB limit reads "4.0 GB".
std::string gigabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", (double)bytes / 1073741824.0);
  return buf;
}

// Bytes the weights take once loaded: the linear layers packed (panel padding is below 1%), these and
// wte in the chosen storage, the rest float32.
uint64_t planned_weight_bytes(const ModelConfig& c, WeightStorage storage) {
  const uint64_t V = c.vocab_size, P = c.n_positions, C = c.n_embd, F = c.n_inner, L = c.n_layer;
  const uint64_t large = V * C + L * (C * 3 * C + C * C + C * F + F * C);       // wte and the linear layers
  const uint64_t small = P * C + L * (4 * C + 3 * C + C + F + C) + 2 * C;         // wpe, LayerNorms, biases
  return (storage == WeightStorage::f16 ? 2 : 4) * large + 4 * small;
}

// Peak bytes while loading: the weights, plus one linear layer's Conv1D-layout weight read in float32
// before it is packed; with F16 storage wte is read in float32 first (it is the first tensor loaded,
// so that peak is wte's two copies).
uint64_t planned_load_bytes(const ModelConfig& c, WeightStorage storage) {
  const uint64_t C = c.n_embd, V = c.vocab_size;
  const uint64_t linear_temporary = 4 * C * std::max<uint64_t>(3 * C, c.n_inner);
  const uint64_t with_linear = planned_weight_bytes(c, storage) + linear_temporary;
  return storage == WeightStorage::f16 ? std::max(with_linear, 6 * V * C) : with_linear;
}

const char* storage_words(WeightStorage s) { return s == WeightStorage::f16 ? "F16" : "float32"; }

// Refuses, with the sizes, a model whose weights cannot fit, before any of them is allocated:
// in wasm against the module's maximum memory, natively against the machine's physical memory.
// `resident_bytes` is memory the caller already holds for the load (a file copied into wasm memory).
// A float32 load that would fit in F16 says so.
void check_weights_fit(const ModelConfig& c, uint64_t resident_bytes, WeightStorage storage) {
  const uint64_t weights = planned_weight_bytes(c, storage);
#ifdef __EMSCRIPTEN__
  const uint64_t limit = emscripten_get_heap_max();
  // includes resident_bytes when they live in wasm memory; mallinfo's int fields read as unsigned (up to 4 GB)
  const uint64_t in_use = (uint64_t)(unsigned)mallinfo().uordblks;
  const uint64_t needed = in_use + planned_load_bytes(c, storage);
  const bool f16_fits = in_use + planned_load_bytes(c, WeightStorage::f16) <= limit;
  (void)resident_bytes;
  if (needed > limit)
    throw Error("this model needs about " + gigabytes(needed) + " of wasm memory (" + gigabytes(weights) + " of " +
                storage_words(storage) + " weights" +
                (in_use > (64u << 20) ? ", " + gigabytes(in_use) + " already in use" : std::string()) + "); the limit is " +
                gigabytes(limit) +
                (storage == WeightStorage::f32 && f16_fits
                     ? "; it would fit with weights in F16: loadModel(source, { weights: 'f16' })"
                     : "; try a smaller model"));
#else
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: leave it to the allocator
  const uint64_t limit = (uint64_t)pages * (uint64_t)page;
  const uint64_t needed = planned_load_bytes(c, storage) + resident_bytes;
  const bool f16_fits = planned_load_bytes(c, WeightStorage::f16) + resident_bytes <= limit;
  if (needed > limit)
    throw Error("this model needs about " + gigabytes(needed) + " of memory (" + gigabytes(weights) + " of " +
                storage_words(storage) + " weights); this machine has " + gigabytes(limit) +
                (storage == WeightStorage::f32 && f16_fits
                     ? "; it would fit with weights in F16: headscope run --weights f16 (LoadOptions::weights = WeightStorage::f16)"
                     : "; try a smaller model"));
#endif
}

// With F16 storage a weight must be within F16's finite range: 65504, and values up to 65520
// (exclusive) round to it; larger ones would become infinite.
void check_f16_range(const std::string& name, const float* w, std::size_t n) {
  for (std::size_t i = 0; i < n; i++)
    if (!(std::fabs(w[i]) < 65520.0f))
      throw Error("model.safetensors: tensor \"" + name + "\" element " + std::to_string(i) + " is " +
                  std::to_string(w[i]) + ", beyond F16's range (largest 65504); load it with float32 weights");
}

}  // namespace

const char* weight_storage_name(WeightStorage s) { return s == WeightStorage::f16 ? "f16" : "f32"; }

WeightStorage parse_weight_storage(std::string_view name) {
  if (name == "f32") return WeightStorage::f32;
  if (name == "f16") return WeightStorage::f16;
  throw Error("weights must be \"f32\" or \"f16\", got \"" + std::string(name) + "\"");
}

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load_directory(const std::filesystem::path& dir, const LoadOptions& options) {
  if (!std::filesystem::is_directory(dir)) throw Error("model folder not found: " + dir.string());
  const std::string config = read_file(dir / "config.json");
  const std::filesystem::path weights_path = dir / "model.safetensors";
  if (!std::filesystem::exists(weights_path))
    throw Error("no model.safetensors in " + dir.string() + " (only the safetensors format is supported)");
  const std::string vocab = read_file(dir / "vocab.json");
  const std::string merges = read_file(dir / "merges.txt");
  // read tensor by tensor into the weights' own storage: the file is never held in memory
  return load_source(config, file_source(weights_path), vocab, merges, 0, options);
}

Model Model::load_buffers(std::string_view config_json, std::span<const uint8_t> safetensors,
                          std::string_view vocab_json, std::string_view merges_txt, const LoadOptions& options) {
  return load_source(config_json, memory_source(safetensors), vocab_json, merges_txt, safetensors.size(), options);
}

Model Model::load_source(std::string_view config_json, std::shared_ptr<const ByteSource> safetensors,
                         std::string_view vocab_json, std::string_view merges_txt, uint64_t resident_bytes,
                         const LoadOptions& options) {
  Model m;
  const ModelConfig config = parse_config(config_json);
  check_weights_fit(config, resident_bytes, options.weights);
  try {
    m.build(config_json, std::move(safetensors), vocab_json, merges_txt, options.weights);
  } catch (const std::bad_alloc&) {
    throw Error(std::string("out of memory while loading the model: its ") + storage_words(options.weights) +
                " weights need about " + gigabytes(planned_weight_bytes(config, options.weights)) +
                (options.weights == WeightStorage::f32 ? "; try weights in F16, or a smaller model" : "; try a smaller model"));
  }
  return m;
}

void Model::build(std::string_view config_json, std::shared_ptr<const ByteSource> safetensors,
                  std::string_view vocab_json, std::string_view merges_txt, WeightStorage storage) {
  config_ = parse_config(config_json);
  storage_ = storage;
  const bool f16 = storage == WeightStorage::f16;
  tokenizer_ = Tokenizer::from_json(vocab_json, merges_txt);
  const ModelConfig& c = config_;
  if (tokenizer_->vocab_size() > c.vocab_size)
    throw Error("vocab.json has " + std::to_string(tokenizer_->vocab_size()) + " tokens but config.json says vocab_size " +
                std::to_string(c.vocab_size));

  const SafeTensors st(std::move(safetensors), "model.safetensors");
  const TensorReader r(st);
  const int64_t C = c.n_embd, F = c.n_inner;
  std::size_t n = 0;
  wte_.assign((std::size_t)c.vocab_size * C, 0.0f);
  r.read_into(wte_.data(), "wte.weight", {c.vocab_size, C}, n);
  wte_f16_.clear();
  scratch_wte_.clear();
  if (f16) {
    check_f16_range("wte.weight", wte_.data(), wte_.size());
    wte_f16_.resize(wte_.size());
    for (int64_t v = 0; v < c.vocab_size; v++)  // row by row: the embedding and the LM head widen whole rows
      kernels::f16_pack(&wte_f16_[(std::size_t)v * C], &wte_[(std::size_t)v * C], (std::size_t)C);
    std::vector<float>().swap(wte_);
    scratch_wte_.assign(kernels::matmul_transposed_f16_scratch_floats((int)C), 0.0f);
  }
  // a linear layer in the chosen storage
  const auto pack = [&](const std::string& name, const std::vector<float>& w, const std::vector<float>& bias, int K,
                        int N) {
    if (!f16) return kernels::pack_linear(w.data(), bias.data(), K, N);
    check_f16_range(name, w.data(), w.size());
    return kernels::pack_linear_f16(w.data(), bias.data(), K, N);
  };
  wpe_.assign((std::size_t)c.n_positions * C, 0.0f);
  r.read_into(wpe_.data(), "wpe.weight", {c.n_positions, C}, n);
  blocks_.clear();
  for (int l = 0; l < c.n_layer; l++) {
    const std::string p = "h." + std::to_string(l) + ".";
    BlockWeights b;
    b.ln_1_weight = r.read(p + "ln_1.weight", {C}, n);
    b.ln_1_bias = r.read(p + "ln_1.bias", {C}, n);
    {
      const auto w = r.read(p + "attn.c_attn.weight", {C, 3 * C}, n);
      const auto bias = r.read(p + "attn.c_attn.bias", {3 * C}, n);
      b.c_attn = pack(p + "attn.c_attn.weight", w, bias, (int)C, (int)(3 * C));
    }
    {
      const auto w = r.read(p + "attn.c_proj.weight", {C, C}, n);
      const auto bias = r.read(p + "attn.c_proj.bias", {C}, n);
      b.c_proj = pack(p + "attn.c_proj.weight", w, bias, (int)C, (int)C);
    }
    b.ln_2_weight = r.read(p + "ln_2.weight", {C}, n);
    b.ln_2_bias = r.read(p + "ln_2.bias", {C}, n);
    {
      const auto w = r.read(p + "mlp.c_fc.weight", {C, F}, n);
      const auto bias = r.read(p + "mlp.c_fc.bias", {F}, n);
      b.c_fc = pack(p + "mlp.c_fc.weight", w, bias, (int)C, (int)F);
    }
    {
      const auto w = r.read(p + "mlp.c_proj.weight", {F, C}, n);
      const auto bias = r.read(p + "mlp.c_proj.bias", {C}, n);
      b.mlp_proj = pack(p + "mlp.c_proj.weight", w, bias, (int)F, (int)C);
    }
    blocks_.push_back(std::move(b));
  }
  ln_f_weight_ = r.read("ln_f.weight", {C}, n);
  ln_f_bias_ = r.read("ln_f.bias", {C}, n);
  parameter_count_ = n;
  cap_ = 0;
  has_run_ = false;
  cached_tokens_ = 0;
}

std::size_t Model::weight_bytes() const {
  std::size_t b = (wte_.size() + wpe_.size() + ln_f_weight_.size() + ln_f_bias_.size()) * sizeof(float) +
                  wte_f16_.size() * sizeof(uint16_t);
  for (const auto& blk : blocks_)
    b += (blk.ln_1_weight.size() * 4) * sizeof(float) + blk.c_attn.bytes() + blk.c_proj.bytes() + blk.c_fc.bytes() +
         blk.mlp_proj.bytes();
  return b;
}

void Model::ensure_capacity(int T) {
  if (T <= cap_) return;
  // Grow geometrically so typing does not reallocate on every token; a reallocation drops the cache.
  const int cap = std::min(config_.n_positions, std::max({T, 2 * cap_, 16}));
  const std::size_t L = config_.n_layer, NH = config_.n_head, C = config_.n_embd, F = config_.n_inner;
  // Sizes come from config.json and the text: add them up in 64 bits and refuse before allocating,
  // so a hostile config cannot overflow a 32-bit size_t (wasm) into a small buffer.
  const uint64_t c64 = cap, floats = (uint64_t)(L + 1) * c64 * C + (uint64_t)L * c64 * 3 * C +
                                     (uint64_t)L * NH * c64 * c64 + (uint64_t)L * c64 * C + (uint64_t)L * NH * c64 +
                                     3 * c64 * C + c64 * F +
                                     (uint64_t)L * (2 * c64 + 32) * C /* key panels and values: L x NH x <= (2 cap + panel) x HS */;
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
    for (auto* v : {&residual_, &qkv_, &att_, &head_out_, &contrib_norm_, &scratch_ln_, &scratch_proj_, &scratch_head_,
                    &scratch_fc_, &key_panels_})
      std::vector<float>().swap(*v);
    throw Error("out of memory: running " + std::to_string(T) + " tokens needs about " + gigabytes(floats * 4) +
                " of activations next to " + gigabytes(weight_bytes()) + " of weights; use a shorter text");
  }
  logits_all_.clear();
  cap_ = cap;
  cached_tokens_ = 0;
}

RunInfo Model::run(std::string_view text, const RunOptions& options) {
  if (text.empty()) throw Error("text is empty");
  std::vector<Token> tokens = tokenizer_->encode(text);  // throws on invalid UTF-8
  if (tokens.empty()) throw Error("text is empty");
  int dropped = 0;
  if ((int)tokens.size() > config_.n_positions) {
    dropped = (int)tokens.size() - config_.n_positions;
    tokens.erase(tokens.begin(), tokens.begin() + dropped);
  }
  std::vector<int32_t> ids(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); i++) ids[i] = tokens[i].id;
  RunInfo info = run_ids(ids, options);
  tokens_ = std::move(tokens);
  info.dropped_tokens = dropped;
  info.first_byte = tokens_.front().byte_start;
  return info;
}

RunInfo Model::run_ids(std::span<const int32_t> ids, const RunOptions& options) {
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

  ensure_capacity(T);
  // Reuse the cached prefix only if it was computed with the same switched-off heads and holds
  // everything this run must return.
  int reuse = 0;
  const bool options_compatible = has_run_ && mask == ablate_mask_ && (!options.all_logits || options_.all_logits) &&
                                  (!options.keep_contributions || options_.keep_contributions);
  if (options_compatible) {
    const int limit = std::min({cached_tokens_, T, (int)ids_.size()});
    while (reuse < limit && ids_[reuse] == ids[reuse]) reuse++;
  }
  if (options.keep_contributions && (uint64_t)c.n_layer * c.n_head * cap_ * c.n_embd > kMaxActivationFloats)
    throw Error("keeping head contributions for " + std::to_string(T) + " tokens needs too much memory; use a shorter text");
  if (options.all_logits && (uint64_t)cap_ * c.vocab_size > kMaxActivationFloats)
    throw Error("logits for all " + std::to_string(T) + " positions need too much memory; use a shorter text");
  if (options.keep_contributions && contrib_.size() != (std::size_t)c.n_layer * c.n_head * cap_ * c.n_embd) {
    contrib_.assign((std::size_t)c.n_layer * c.n_head * cap_ * c.n_embd, 0.0f);
    reuse = 0;
  }
  if (options.all_logits && logits_all_.size() != (std::size_t)cap_ * c.vocab_size) {
    logits_all_.assign((std::size_t)cap_ * c.vocab_size, 0.0f);
    reuse = 0;
  }

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
  forward(reuse);
  cached_tokens_ = T;
  RunInfo info;
  info.tokens = T;
  info.reused_tokens = reuse;
  return info;
}

// Computes positions [t_begin, T_) of every layer; positions below t_begin are the cache.
void Model::forward(int t_begin) {
  namespace k = kernels;
  const ModelConfig& c = config_;
  const int T = T_, n = T - t_begin;  // n: rows computed in this call
  const int C = c.n_embd, NH = c.n_head, HS = c.head_size(), F = c.n_inner, V = c.vocab_size;
  const std::size_t cap = cap_;

  if (n > 0) {
    for (int t = t_begin; t < T; t++) {
      float* row = &residual_[(std::size_t)t * C];
      if (wte_f16_.empty()) {
        k::add_forward(row, &wte_[(std::size_t)ids_[t] * C], &wpe_[(std::size_t)t * C], C);
      } else {  // widened in place (exact), then the same add
        k::f16_unpack_forward(row, &wte_f16_[(std::size_t)ids_[t] * C], C);
        k::add_forward(row, row, &wpe_[(std::size_t)t * C], C);
      }
    }

    for (int l = 0; l < c.n_layer; l++) {
      const BlockWeights& w = blocks_[l];
      const float* x = &residual_[(l * cap + t_begin) * C];       // (n, C) stream entering the block
      float* x_next = &residual_[((l + 1) * cap + t_begin) * C];  // (n, C) stream leaving it
      float* qkv = &qkv_[l * cap * 3 * C];                        // (cap, 3C)
      float* head_out = &head_out_[l * cap * C];                  // (cap, C)
      float* att = &att_[l * NH * cap * cap];                     // (NH, cap, cap)

      // attention: every head reads the same LayerNormed input through its own slice of c_attn
      k::layernorm_forward(scratch_ln_.data(), x, w.ln_1_weight.data(), w.ln_1_bias.data(), n, C, c.layer_norm_epsilon);
      k::matmul_forward(qkv + (std::size_t)t_begin * 3 * C, scratch_ln_.data(), w.c_attn, n);
      k::attention_forward(head_out, att, qkv, t_begin, T, C, NH, (int)cap,
                           key_panels_.data() + l * k::attention_key_panels_floats((int)cap, C, NH));

      // W_O, one head at a time: out = bias + sum_h head_out[:, h] @ W_O[h rows]. A switched-off head
      // writes nothing. Summing per head gives each head's contribution for free.
      float* proj = scratch_proj_.data();  // (n, C)
      for (int r = 0; r < n; r++) std::copy(w.c_proj.bias.begin(), w.c_proj.bias.begin() + C, proj + (std::size_t)r * C);
      for (int h = 0; h < NH; h++) {
        float* norms = &contrib_norm_[(l * NH + h) * cap];
        float* kept = options_.keep_contributions ? &contrib_[((l * NH + h) * cap + t_begin) * C] : nullptr;
        if (ablate_mask_[(std::size_t)l * NH + h]) {
          for (int t = t_begin; t < T; t++) {
            std::fill(head_out + (std::size_t)t * C + h * HS, head_out + (std::size_t)t * C + (h + 1) * HS, 0.0f);
            norms[t] = 0.0f;
          }
          if (kept) std::fill(kept, kept + (std::size_t)n * C, 0.0f);
          continue;
        }
        float* contrib = kept ? kept : scratch_head_.data();  // (n, C)
        k::matmul_rows_forward(contrib, head_out + (std::size_t)t_begin * C, C, w.c_proj, h * HS, (h + 1) * HS, n);
        for (int r = 0; r < n; r++) {
          const float* row = contrib + (std::size_t)r * C;
          norms[t_begin + r] = std::sqrt(k::dot(row, row, C));
        }
        k::add_forward(proj, proj, contrib, (std::size_t)n * C);
      }
      k::add_forward(x_next, x, proj, (std::size_t)n * C);

      // MLP
      k::layernorm_forward(scratch_ln_.data(), x_next, w.ln_2_weight.data(), w.ln_2_bias.data(), n, C, c.layer_norm_epsilon);
      k::matmul_forward(scratch_fc_.data(), scratch_ln_.data(), w.c_fc, n);
      if (c.activation == Activation::gelu_tanh)
        k::gelu_forward(scratch_fc_.data(), scratch_fc_.data(), (std::size_t)n * F);
      else
        k::gelu_erf_forward(scratch_fc_.data(), scratch_fc_.data(), (std::size_t)n * F);
      k::matmul_forward(proj, scratch_fc_.data(), w.mlp_proj, n);
      k::add_forward(x_next, x_next, proj, (std::size_t)n * C);
    }
  }

  // final LayerNorm and tied LM head; the last row always (T may have shrunk: text deleted at the end)
  const float* final_stream = &residual_[(std::size_t)c.n_layer * cap * C];
  if (options_.all_logits && n > 0) {
    k::layernorm_forward(scratch_ln_.data(), final_stream + (std::size_t)t_begin * C, ln_f_weight_.data(),
                         ln_f_bias_.data(), n, C, c.layer_norm_epsilon);
    lm_head(&logits_all_[(std::size_t)t_begin * V], scratch_ln_.data(), n);
  }
  logits_last_.resize(V);
  k::layernorm_forward(scratch_ln_.data(), final_stream + (std::size_t)(T - 1) * C, ln_f_weight_.data(),
                       ln_f_bias_.data(), 1, C, c.layer_norm_epsilon);
  lm_head(logits_last_.data(), scratch_ln_.data(), 1);
}

// out (T, V) = x (T, C) @ wte^T, the tied LM head, in either storage
void Model::lm_head(float* out, const float* x, int T) {
  const int C = config_.n_embd, V = config_.vocab_size;
  if (wte_f16_.empty())
    kernels::matmul_transposed_forward(out, x, wte_.data(), T, C, V);
  else
    kernels::matmul_transposed_f16_forward(out, x, wte_f16_.data(), T, C, V, scratch_wte_.data());
}

// ---- results ---------------------------------------------------------------------------------

void Model::require_run() const {
  if (!has_run_) throw Error("no results yet: call run() first");
}

void Model::check_layer_head(int layer, int head) const {
  if (layer < 0 || layer >= config_.n_layer)
    throw Error("layer " + std::to_string(layer) + " is outside [0, " + std::to_string(config_.n_layer) + ")");
  if (head < 0 || head >= config_.n_head)
    throw Error("head " + std::to_string(head) + " is outside [0, " + std::to_string(config_.n_head) + ")");
}

std::span<const float> Model::logits_last() const {
  require_run();
  return logits_last_;
}

std::vector<float> Model::logits_all() const {
  require_run();
  if (!options_.all_logits) throw Error("logits for all positions were not kept: run with all_logits");
  const std::size_t V = config_.vocab_size;
  return std::vector<float>(logits_all_.begin(), logits_all_.begin() + (std::ptrdiff_t)(T_ * V));
}

std::vector<float> Model::attention(int layer, int head) const {
  require_run();
  check_layer_head(layer, head);
  std::vector<float> out((std::size_t)T_ * T_);
  const float* src = &att_[((std::size_t)layer * config_.n_head + head) * cap_ * cap_];
  for (int t = 0; t < T_; t++) std::copy(src + (std::size_t)t * cap_, src + (std::size_t)t * cap_ + T_, &out[(std::size_t)t * T_]);
  return out;
}

void Model::copy_attention_all(float* out) const {
  require_run();
  const std::size_t TT = (std::size_t)T_ * T_;
  for (int l = 0; l < config_.n_layer; l++)
    for (int h = 0; h < config_.n_head; h++) {
      const float* src = &att_[((std::size_t)l * config_.n_head + h) * cap_ * cap_];
      float* dst = out + ((std::size_t)l * config_.n_head + h) * TT;
      for (int t = 0; t < T_; t++) std::copy(src + (std::size_t)t * cap_, src + (std::size_t)t * cap_ + T_, dst + (std::size_t)t * T_);
    }
}

std::vector<float> Model::attention_all() const {
  require_run();
  std::vector<float> out((std::size_t)config_.n_layer * config_.n_head * T_ * T_);
  copy_attention_all(out.data());
  return out;
}

std::vector<float> Model::hidden_states() const {
  require_run();
  const std::size_t C = config_.n_embd, rows = (std::size_t)T_ * C;
  std::vector<float> out((config_.n_layer + 1) * rows);
  for (int l = 0; l <= config_.n_layer; l++)
    std::copy_n(&residual_[l * cap_ * C], rows, &out[l * rows]);
  return out;
}

std::vector<float> Model::contribution(int layer, int head) const {
  require_run();
  check_layer_head(layer, head);
  if (!options_.keep_contributions) throw Error("head contributions were not kept: run with keep_contributions");
  const std::size_t C = config_.n_embd;
  const float* src = &contrib_[((std::size_t)layer * config_.n_head + head) * cap_ * C];
  return std::vector<float>(src, src + (std::size_t)T_ * C);
}

std::vector<float> Model::contribution_norms() const {
  require_run();
  std::vector<float> out((std::size_t)config_.n_layer * config_.n_head * T_);
  for (std::size_t lh = 0; lh < (std::size_t)config_.n_layer * config_.n_head; lh++)
    std::copy_n(&contrib_norm_[lh * cap_], T_, &out[lh * T_]);
  return out;
}

}  // namespace headscope
