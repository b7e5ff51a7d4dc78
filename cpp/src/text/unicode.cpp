// UTF-8 decoding and encoding, and the character classes of GPT-2's pre-tokenizer regex
// (letters \p{L}, numbers \p{N}, white space \s) from Unicode 15.0 tables. See unicode.hpp.
#include "text/unicode.hpp"

#include <algorithm>
#include <array>
#include <iterator>

namespace headscope::unicode {
namespace {

struct CodeRange {
  char32_t first, last;
  CharClass cls;
};

#include "unicode_tables.inc"

CharClass classify_slow(char32_t cp) {
  const auto* end = std::end(kCodeRanges);
  const auto* it =
      std::upper_bound(std::begin(kCodeRanges), end, cp, [](char32_t c, const CodeRange& r) { return c < r.first; });
  if (it == std::begin(kCodeRanges)) return CharClass::kOther;
  --it;
  return cp <= it->last ? it->cls : CharClass::kOther;
}

// ASCII dominates typical text; a table avoids the binary search there.
const std::array<CharClass, 128>& ascii_classes() {
  static const std::array<CharClass, 128> table = [] {
    std::array<CharClass, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = classify_slow(c);
    return t;
  }();
  return table;
}

// Bounds of the second byte after a lead byte (Unicode Table 3-7); exclude overlongs,
// surrogates and code points above U+10FFFF. Returns the sequence length, 0 for a bad lead.
int utf8_lead(uint8_t b, uint8_t& lo, uint8_t& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b == 0xE0) {
    lo = 0xA0;
    return 3;
  }
  if (b >= 0xE1 && b <= 0xEC) return 3;
  if (b == 0xED) {
    hi = 0x9F;
    return 3;
  }
  if (b >= 0xEE && b <= 0xEF) return 3;
  if (b == 0xF0) {
    lo = 0x90;
    return 4;
  }
  if (b >= 0xF1 && b <= 0xF3) return 4;
  if (b == 0xF4) {
    hi = 0x8F;
    return 4;
  }
  return 0;
}

}  // namespace

CharClass classify(char32_t cp) { return cp < 128 ? ascii_classes()[cp] : classify_slow(cp); }

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Length of the valid sequence at s[i], or the length of its maximal invalid subpart negated
// (at least 1), so strict decoding and WHATWG replacement share one definition of validity.
int utf8_step(std::string_view s, size_t i, char32_t& cp) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  uint8_t lo, hi;
  const int n = utf8_lead(b0, lo, hi);
  if (n == 0) return -1;
  if (n == 1) {
    cp = b0;
    return 1;
  }
  char32_t c = b0 & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    if (i + k >= s.size()) return -k;
    const auto b = static_cast<uint8_t>(s[i + k]);
    if (b < lo || b > hi) return -k;
    lo = 0x80;
    hi = 0xBF;
    c = (c << 6) | (b & 0x3F);
  }
  cp = c;
  return n;
}

std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    const int n = utf8_step(s, i, cp);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += -n;
    }
  }
  return out;
}

}  // namespace headscope::unicode
