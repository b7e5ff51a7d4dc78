// Unicode Normalization Form C (UAX #15, section 3.11 of the standard): canonical decomposition,
// canonical ordering, canonical composition, from the tables of unicode_nfc_tables.inc
// (scripts/codegen/gen_nfc_tables.py); Hangul syllables arithmetically. Checked against every NFC case of
// Unicode's NormalizationTest.txt (tests/cpp/text/test_nfc.cpp).
#include <algorithm>
#include <iterator>
#include <vector>

#include "headscope/error.hpp"
#include "text/unicode.hpp"

namespace headscope::unicode {
namespace {

struct CccRange {
  char32_t first, last;
  uint8_t ccc;
};
struct Decomposition {
  char32_t cp, first, second;
};
struct Composition {
  char32_t first, second, cp;
};
#include "unicode_nfc_tables.inc"

// Hangul (the standard's section 3.12)
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  auto it = std::upper_bound(std::begin(kCombiningClass), std::end(kCombiningClass), cp,
                             [](char32_t c, const CccRange& r) { return c < r.first; });
  if (it == std::begin(kCombiningClass)) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

const Decomposition* decomposition(char32_t cp) {
  auto it = std::lower_bound(std::begin(kDecomposition), std::end(kDecomposition), cp,
                             [](const Decomposition& d, char32_t c) { return d.cp < c; });
  return it != std::end(kDecomposition) && it->cp == cp ? it : nullptr;
}

// The primary composite of (a, b), or 0
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  auto it = std::lower_bound(std::begin(kComposition), std::end(kComposition), std::pair{a, b},
                             [](const Composition& c, const std::pair<char32_t, char32_t>& k) {
                               return c.first != k.first ? c.first < k.first : c.second < k.second;
                             });
  return it != std::end(kComposition) && it->first == a && it->second == b ? it->cp : 0;
}

// A code point with the bytes of the source it came from: [start, end)
struct Char {
  char32_t cp;
  uint32_t start, end;
  uint8_t ccc;
};

void decompose(char32_t cp, uint32_t start, uint32_t end, std::vector<Char>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back({kLBase + s / kNCount, start, end, 0});
    out.push_back({kVBase + (s % kNCount) / kTCount, start, end, 0});
    if (s % kTCount) out.push_back({kTBase + s % kTCount, start, end, 0});
    return;
  }
  if (const Decomposition* d = decomposition(cp)) {
    decompose(d->first, start, end, out);  // mappings nest at most a few levels deep
    if (d->second) decompose(d->second, start, end, out);
    return;
  }
  out.push_back({cp, start, end, combining_class(cp)});
}

}  // namespace

std::string nfc(std::string_view s, std::vector<uint32_t>* source_offsets) {
  std::vector<Char> buf;
  buf.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    const int len = utf8_step(s, i, cp);
    if (len <= 0) throw Error("invalid UTF-8 at byte " + std::to_string(i));
    decompose(cp, static_cast<uint32_t>(i), static_cast<uint32_t>(i + len), buf);
    i += len;
  }
  // canonical ordering: each run of non-starters sorted by combining class, stably
  for (size_t i = 0; i < buf.size();) {
    if (buf[i].ccc == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < buf.size() && buf[j].ccc != 0) ++j;
    std::stable_sort(buf.begin() + i, buf.begin() + j, [](const Char& a, const Char& b) { return a.ccc < b.ccc; });
    i = j;
  }
  // canonical composition: a character joins the last starter unless something between them blocks
  // it (a starter, or a character of the same or a higher class)
  size_t out_n = 0, starter = 0;
  bool have_starter = false;
  int last_ccc = 0;
  for (size_t i = 0; i < buf.size(); ++i) {
    const Char c = buf[i];
    if (have_starter && (out_n == starter + 1 || last_ccc < c.ccc)) {
      if (const char32_t composite = compose(buf[starter].cp, c.cp)) {
        Char& st = buf[starter];
        st.cp = composite;
        st.start = std::min(st.start, c.start);
        st.end = std::max(st.end, c.end);
        continue;
      }
    }
    if (c.ccc == 0) {
      starter = out_n;
      have_starter = true;
    }
    last_ccc = c.ccc;
    buf[out_n++] = c;
  }
  buf.resize(out_n);

  std::string out;
  out.reserve(s.size());
  if (source_offsets) {
    source_offsets->clear();
    source_offsets->reserve(s.size() + 1);
  }
  // The source offset of each output character's first byte: the furthest source byte that the
  // characters before it came from. Never decreasing, 0 at the start and s.size() at the end, so the
  // spans they give tile the source in order, even where reordering moved a mark past a neighbour.
  // Inside a character, byte k maps to source byte start + k (exactly, for a character NFC left
  // as it was), kept below the character's end, so that pieces of one character keep spans of their own.
  uint32_t reached = 0;
  for (const Char& c : buf) {
    const size_t before = out.size();
    append_utf8(out, c.cp);
    if (source_offsets) {
      source_offsets->push_back(reached);
      for (size_t k = 1; k < out.size() - before; ++k)
        source_offsets->push_back(
            std::max<uint32_t>(reached, std::min<uint32_t>(c.start + static_cast<uint32_t>(k), c.end - 1)));
    }
    reached = std::max(reached, c.end);
  }
  if (source_offsets) source_offsets->push_back(static_cast<uint32_t>(s.size()));
  return out;
}

}  // namespace headscope::unicode
