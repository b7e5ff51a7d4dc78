// libFuzzer target: encoding arbitrary bytes with GPT-2's real vocabulary. Valid UTF-8 must
// round-trip exactly and the spans must tile the input; invalid UTF-8 must raise Error.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "headscope/error.hpp"
#include "headscope/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const headscope::Tokenizer& tok = fuzz::gpt2_tokenizer();
  const std::string_view text((const char*)data, size);
  try {
    const auto tokens = tok.encode(text);
    std::vector<int32_t> ids;
    uint32_t pos = 0;
    for (const auto& t : tokens) {
      if (t.byte_start != pos || t.byte_end <= t.byte_start) __builtin_trap();
      pos = t.byte_end;
      ids.push_back(t.id);
    }
    if (pos != size) __builtin_trap();
    if (tok.decode(ids) != text) __builtin_trap();
  } catch (const headscope::Error&) {
  }
  return 0;
}
