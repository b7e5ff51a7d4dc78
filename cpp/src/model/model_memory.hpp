// Internal to cpp/src: the memory limits shared by Model's loading (model_load.cpp) and its activations
// (model_memory.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "headscope/model.hpp"
#include "kernels/parallel.hpp"

namespace headscope {

// The largest single result copied out of a run (rows of every head's map, head contributions, every
// position's logits, thumbnails asked for at another size): 1.5 GB of floats, which a caller then holds
// beside the model. A text's own activations have the model's budget instead (memory_budget below).
inline constexpr uint64_t kMaxResultFloats = 384ull << 20;

// The memory a model may use: LoadOptions::memory_limit_bytes when set and smaller, else in wasm the
// module's maximum memory (4 GB for the npm module), natively the machine's physical memory.
uint64_t memory_limit(uint64_t requested);
// Bytes the allocator holds now: wasm's malloc in use; natively 0 (the limit is physical memory, whose
// use by other processes is not ours to count).
uint64_t memory_in_use();

// weight_plan.cpp: the bytes a model's weights take once loaded in `storage`; its name in messages
// ("float32", "F16", "8-bit"); and the refusal, with the sizes and the smaller storages that would
// fit, of weights that cannot fit (in wasm against the module's maximum, natively against physical
// memory; `resident_bytes` is memory the caller already holds for the load)
uint64_t planned_weight_bytes(const ModelConfig& c, WeightStorage storage);
const char* storage_words(WeightStorage s);
void check_weights_fit(const ModelConfig& c, uint64_t resident_bytes, WeightStorage storage, uint64_t requested_limit);
// Kept free beside the weights and a text's activations: the tokenizer's tables, a run's results on
// their way out, the allocator's slack. A sixteenth of the limit, between 64 and 256 MB.
inline uint64_t memory_reserve(uint64_t limit) { return std::clamp<uint64_t>(limit / 16, 64ull << 20, 256ull << 20); }

// How a model's memory limit is spent, fixed at load (MemoryUse reports it): the weights, what was
// already in use, the reserve, and what is left for a text's activations.
struct MemoryBudget {
  uint64_t limit = 0, weights = 0, in_use = 0, reserve = 0, activations = 0;
  static MemoryBudget of(uint64_t limit, uint64_t weights, uint64_t in_use) {
    MemoryBudget b{limit, weights, in_use, memory_reserve(limit), 0};
    const uint64_t taken = weights + in_use + b.reserve;
    b.activations = limit > taken ? limit - taken : 0;
    return b;
  }
  // "the limit 4096 MB less 361 MB of weights, 40 MB in use and 256 MB kept free"
  std::string words() const {
    return "the memory limit " + std::to_string(limit >> 20) + " MB less " + std::to_string(weights >> 20) +
           " MB of weights" +
           (in_use >= (1u << 20) ? ", " + std::to_string(in_use >> 20) + " MB in use before them" : "") + " and " +
           std::to_string(reserve >> 20) + " MB kept free";
  }
};

// A text's activations: a vector whose resize() leaves new elements unwritten (the allocator's
// construct() default-initializes), so that assign_zeros() below is what first touches its memory.
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new ((void*)p) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new ((void*)p) U(std::forward<Args>(args)...);
  }
};
template <class T>
using ActivationBuffer = std::vector<T, UninitAllocator<T>>;

// Sets `v` to n zeros, over the current pool's threads. A new allocation's pages are first touched
// here, and each first touch is a page fault: 2.5 ms a megabyte on the 2-core CI machine, where GPT-2
// small's activations at 1,024 tokens (293 MB) took 0.64 s to fault in on one thread, and two threads
// fault in parallel (bench/README.md, "Long texts in the page"). The old buffer is freed first, so the
// old and the new are never held together.
template <class T>
void assign_zeros(ActivationBuffer<T>& v, std::size_t n) {
  if (n > v.capacity()) ActivationBuffer<T>().swap(v);
  v.resize(n);  // unwritten (UninitAllocator)
  T* p = v.data();
  kernels::parallel_elements(n, 1.0, [p](std::size_t i0, std::size_t count) { std::fill_n(p + i0, count, T{}); });
}

// GB here are 2^30 bytes, so wasm32's 4 GB limit reads "4.0 GB".
inline std::string gigabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", (double)bytes / 1073741824.0);
  return buf;
}
// whole MB, or KB below one MB (a small model's short text)
inline std::string megabytes(uint64_t bytes) {
  return bytes >= (1u << 20) || bytes == 0 ? std::to_string(bytes >> 20) + " MB" : std::to_string(bytes >> 10) + " KB";
}

}  // namespace headscope
