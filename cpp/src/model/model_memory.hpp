// Internal to cpp/src: the memory limits shared by Model's loading (model_load.cpp) and its runs
// (model.cpp).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace headscope {

// 1.5 GB of float32 activations: within wasm32's 4 GB memory (the npm module's MAXIMUM_MEMORY)
// next to a small model's weights. Real GPT-2 (124M) at its full 1024 tokens needs about 0.8 GB.
inline constexpr uint64_t kMaxActivationFloats = 384ull << 20;

// GB here are 2^30 bytes, so wasm32's 4 GB limit reads "4.0 GB".
inline std::string gigabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", (double)bytes / 1073741824.0);
  return buf;
}

}  // namespace headscope
