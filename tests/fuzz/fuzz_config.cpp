// libFuzzer target: config.json parsing and validation.
#include <cstdint>
#include <string_view>

#include "headscope/config.hpp"
#include "headscope/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const headscope::ModelConfig c = headscope::parse_config(std::string_view((const char*)data, size));
    // what the loader relies on after validation
    if (c.n_embd % c.n_head != 0 || c.n_layer < 1 || c.vocab_size < 1 || c.n_positions < 1) __builtin_trap();
  } catch (const headscope::Error&) {
  }
  return 0;
}
