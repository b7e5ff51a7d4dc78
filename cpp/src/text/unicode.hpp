// Internal to the tokenizer (cpp/src/text/tokenizer.cpp): UTF-8 and the character classes its
// pre-tokenizer needs. Validity follows Unicode Table 3-7 (no overlongs, surrogates or code points
// above U+10FFFF); replacement follows the WHATWG TextDecoder (one U+FFFD per maximal invalid
// subpart), so strict decoding and replacement share one definition of validity.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headscope::unicode {

// The classes GPT-2's regex distinguishes: \p{L}, \p{N}, \s (White_Space plus U+FEFF, as in
// JavaScript), everything else. Tables: cpp/src/text/unicode_tables.inc (scripts/codegen/gen_unicode_tables.py).
enum class CharClass : uint8_t { kOther = 0, kLetter, kNumber, kSpace };

CharClass classify(char32_t cp);

// Appends the UTF-8 encoding of a code point (cp <= U+10FFFF).
void append_utf8(std::string& out, char32_t cp);

// At s[i] (i < s.size()): the length of a valid sequence, with its code point in cp; or, for an
// invalid one, the length of its maximal invalid subpart negated (at least 1).
int utf8_step(std::string_view s, std::size_t i, char32_t& cp);

// s with every maximal invalid subpart replaced by U+FFFD.
std::string utf8_sanitize(std::string_view s);

// Unicode Normalization Form C of valid UTF-8 (else Error "invalid UTF-8 at byte N"), in
// unicode_nfc.cpp. With source_offsets: out.size() + 1 offsets into s, one per byte of the result and
// one for its end, never decreasing: at character boundaries a < b of the result, the source bytes
// [offsets[a], offsets[b]) are what the characters [a, b) came from, so spans of the result map to
// spans that tile s in order; inside a character NFC left unchanged, byte for byte.
std::string nfc(std::string_view s, std::vector<uint32_t>* source_offsets = nullptr);

}  // namespace headscope::unicode
