// libFuzzer target: config.json parsing and validation.
#include <cstdint>
#include <string_view>

#include "headscope/config.hpp"
#include "headscope/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const headscope::ModelConfig c = headscope::parse_config(std::string_view((const char*)data, size));
    // what the loader relies on after validation: both families' shapes whole, the query heads in
    // whole groups over the key/value heads, the Llama family's heads in rotary pairs
    if (c.n_layer < 1 || c.vocab_size < 1 || c.n_positions < 1 || c.n_head < 1 || c.n_inner < 1) __builtin_trap();
    if (c.family == headscope::Family::gpt2 && (c.n_embd % c.n_head != 0 || c.kv_heads() != c.n_head)) __builtin_trap();
    if (c.head_size() < 1 || c.kv_heads() < 1 || c.n_head % c.kv_heads() != 0) __builtin_trap();
    if (c.family == headscope::Family::llama && (c.head_size() % 2 != 0 || c.n_positions > headscope::kLlamaContext))
      __builtin_trap();
  } catch (const headscope::Error&) {
  }
  return 0;
}
