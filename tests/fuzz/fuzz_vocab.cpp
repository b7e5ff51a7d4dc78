// libFuzzer target: vocab.json + merges.txt loading, then encoding with the loaded tokenizer.
// Input layout: vocab.json bytes, a 0xFF byte (never valid in UTF-8 JSON), merges.txt bytes.
#include <cstdint>
#include <string_view>

#include "headscope/error.hpp"
#include "headscope/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all((const char*)data, size);
  const size_t split = all.find('\xff');
  const std::string_view vocab = all.substr(0, split);
  const std::string_view merges = split == std::string_view::npos ? std::string_view() : all.substr(split + 1);
  try {
    const headscope::Tokenizer tok = headscope::Tokenizer::from_json(vocab, merges);
    const auto tokens = tok.encode("hello world, it's 42!");
    for (const auto& t : tokens) (void)tok.token_display(t.id);
  } catch (const headscope::Error&) {
  }
  return 0;
}
