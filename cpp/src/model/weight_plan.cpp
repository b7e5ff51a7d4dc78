// What a model's weights will take before any is read: their bytes in each storage, the check that
// they fit the memory limit (with the smaller storages that would), the limit itself, and the storage
// options' names. model_load.cpp loads; model_memory.hpp declares what it shares.
#include <algorithm>
#include <string>

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
#include <malloc.h>
#else
#include <unistd.h>
#endif

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "model/model_memory.hpp"

namespace headscope {

uint64_t memory_limit(uint64_t requested) {
#ifdef __EMSCRIPTEN__
  const uint64_t whole = emscripten_get_heap_max();
#else
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const uint64_t whole = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
#endif
  return requested > 0 ? std::min(requested, whole) : whole;
}

uint64_t memory_in_use() {
#ifdef __EMSCRIPTEN__
  return (uint64_t)(unsigned)mallinfo().uordblks;  // int fields: read as unsigned (up to 4 GB)
#else
  return 0;
#endif
}

// Bytes the weights take once loaded: the linear layers packed (panel padding is below 1%), these and
// wte in the chosen storage, the rest float32.
uint64_t planned_weight_bytes(const ModelConfig& c, WeightStorage storage) {
  const uint64_t V = c.vocab_size, P = c.n_positions, C = c.n_embd, F = c.n_inner, L = c.n_layer;
  const uint64_t W = c.qkv_width(), QW = c.q_width();
  // bytes per value of the embeddings and of the linear layers; 8-bit layers add a scale and a zero
  // sum (4 bytes each) per output column, counted with the small float32 vectors below
  const uint64_t embed = storage == WeightStorage::f32 ? 4 : 2;
  const uint64_t linear = storage == WeightStorage::q8 ? 1 : embed;
  const uint64_t per_column = storage == WeightStorage::q8 ? 2 : 0;
  if (c.family == Family::llama) {
    // embedding (and an untied LM head), the linear layers; the norms and the packed layers' zero biases
    const uint64_t embeddings = V * C * (c.tie_word_embeddings ? 1 : 2);
    const uint64_t linears = L * (C * W + QW * C + C * 2 * F + F * C);
    const uint64_t small = L * (2 * C + W + C + 2 * F + C + 2 * (uint64_t)c.head_size()) + C;
    return embed * embeddings + linear * linears + 4 * (small + per_column * L * (W + C + 2 * F + C));
  }
  const uint64_t linears = L * (C * 3 * C + C * C + C * F + F * C);        // the linear layers
  const uint64_t small = P * C + L * (4 * C + 3 * C + C + F + C) + 2 * C;  // wpe, LayerNorms, biases
  return embed * V * C + linear * linears + 4 * (small + per_column * L * (3 * C + C + F + C));
}

// Peak bytes while loading: the weights, plus one linear layer's Conv1D-layout weight read in float32
// before it is packed; with F16 storage wte is read in float32 first (it is the first tensor loaded,
// so that peak is wte's two copies).
static uint64_t planned_load_bytes(const ModelConfig& c, WeightStorage storage) {
  const uint64_t C = c.n_embd, V = c.vocab_size;
  // a Llama-family layer is read as Hugging Face's [out, in] and transposed: two copies
  const uint64_t linear_temporary =
      c.family == Family::llama
          ? 8 * std::max<uint64_t>(C * c.qkv_width(),
                                   std::max<uint64_t>(C * 2 * (uint64_t)c.n_inner, (uint64_t)c.q_width() * C))
          : 4 * C * std::max<uint64_t>(3 * C, c.n_inner);
  const uint64_t with_linear = planned_weight_bytes(c, storage) + linear_temporary;
  // an untied LM head is read the same way while wte's F16 copy is kept
  const uint64_t untied = c.family == Family::llama && !c.tie_word_embeddings ? 2 * V * C : 0;
  return storage == WeightStorage::f32 ? with_linear : std::max(with_linear, 6 * V * C + untied);
}

const char* storage_words(WeightStorage s) {
  return s == WeightStorage::f16 ? "F16" : s == WeightStorage::q8 ? "8-bit" : "float32";
}

// What a load that does not fit could do instead: the smaller storages that would fit, or a smaller model
static std::string smaller_storages(const ModelConfig& c, WeightStorage storage, uint64_t in_use, uint64_t limit,
                                    bool js) {
  const bool f16 = storage == WeightStorage::f32 && in_use + planned_load_bytes(c, WeightStorage::f16) <= limit;
  const bool q8 = storage != WeightStorage::q8 && in_use + planned_load_bytes(c, WeightStorage::q8) <= limit;
  const auto option = [&](const char* name) {
    return js ? std::string("loadModel(source, { weights: '") + name + "' })"
              : std::string("headscope run --weights ") + name + " (LoadOptions::weights = WeightStorage::" + name +
                    ")";
  };
  if (f16 && q8) return "; it would fit with weights in F16: " + option("f16") + ", or in 8 bits: " + option("q8");
  if (f16) return "; it would fit with weights in F16: " + option("f16");
  if (q8) return "; it would fit with 8-bit weights: " + option("q8");
  return "; try a smaller model";
}

// Refuses, with the sizes, a model whose weights cannot fit, before any of them is allocated:
// in wasm against the module's maximum memory, natively against the machine's physical memory.
// `resident_bytes` is memory the caller already holds for the load (a file copied into wasm memory).
// A float32 load that would fit in F16 says so.
void check_weights_fit(const ModelConfig& c, uint64_t resident_bytes, WeightStorage storage, uint64_t requested_limit) {
  const uint64_t weights = planned_weight_bytes(c, storage);
  const uint64_t limit = memory_limit(requested_limit);
#ifdef __EMSCRIPTEN__
  // includes resident_bytes when they live in wasm memory
  const uint64_t in_use = memory_in_use();
  const uint64_t needed = in_use + planned_load_bytes(c, storage);
  (void)resident_bytes;
  if (needed > limit)
    throw Error("this model needs about " + gigabytes(needed) + " of wasm memory (" + gigabytes(weights) + " of " +
                storage_words(storage) + " weights" +
                (in_use > (64u << 20) ? ", " + gigabytes(in_use) + " already in use" : std::string()) +
                "); the limit is " + gigabytes(limit) + smaller_storages(c, storage, in_use, limit, true));
#else
  if (limit == UINT64_MAX) return;  // unknown: leave it to the allocator
  const uint64_t needed = planned_load_bytes(c, storage) + resident_bytes;
  if (needed > limit)
    throw Error("this model needs about " + gigabytes(needed) + " of memory (" + gigabytes(weights) + " of " +
                storage_words(storage) + " weights); the limit is " + gigabytes(limit) +
                (requested_limit && requested_limit == limit ? " (LoadOptions::memory_limit_bytes)"
                                                             : " (this machine's memory)") +
                smaller_storages(c, storage, resident_bytes, limit, false));
#endif
}

const char* weight_storage_name(WeightStorage s) {
  return s == WeightStorage::f16         ? "f16"
         : s == WeightStorage::q8        ? "q8"
         : s == WeightStorage::automatic ? "auto"
                                         : "f32";
}

WeightStorage parse_weight_storage(std::string_view name) {
  if (name == "f32") return WeightStorage::f32;
  if (name == "f16") return WeightStorage::f16;
  if (name == "q8") return WeightStorage::q8;
  if (name == "auto") return WeightStorage::automatic;
  throw Error("weights must be \"f32\", \"f16\", \"q8\" or \"auto\", got \"" + std::string(name) + "\"");
}

const char* activation_storage_name(ActivationStorage s) {
  return s == ActivationStorage::views ? "views" : s == ActivationStorage::automatic ? "auto" : "all";
}

ActivationStorage parse_activation_storage(std::string_view name) {
  if (name == "all") return ActivationStorage::all;
  if (name == "views") return ActivationStorage::views;
  if (name == "auto") return ActivationStorage::automatic;
  throw Error("activations must be \"all\", \"views\" or \"auto\", got \"" + std::string(name) + "\"");
}

}  // namespace headscope
