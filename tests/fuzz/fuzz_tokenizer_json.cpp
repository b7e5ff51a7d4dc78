// libFuzzer target: tokenizer.json loading (Tokenizer::from_tokenizer_json), then encoding a text
// with what loaded: its added tokens, NFC, the Llama 3 / Qwen2 splits and a Digits step.
// Input layout: tokenizer.json bytes, a 0xFF byte (never valid in UTF-8 JSON), the text to encode.
#include <cstdint>
#include <string_view>

#include "headscope/error.hpp"
#include "headscope/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all((const char*)data, size);
  const size_t split = all.find('\xff');
  const std::string_view file = all.substr(0, split);
  const std::string_view text =
      split == std::string_view::npos ? std::string_view("it's 2026!\r\n  caf\xC3\xA9") : all.substr(split + 1);
  try {
    const headscope::Tokenizer tok = headscope::Tokenizer::from_tokenizer_json(file);
    const auto tokens = tok.encode(text);
    uint32_t at = 0;
    for (const auto& t : tokens) {
      if (t.byte_start != at || t.byte_end < t.byte_start) __builtin_trap();  // spans must tile the text
      at = t.byte_end;
      (void)tok.token_display(t.id);
    }
    if (at != text.size()) __builtin_trap();
  } catch (const headscope::Error&) {
  }
  return 0;
}
