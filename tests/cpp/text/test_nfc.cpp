// Normalization Form C (cpp/src/text/unicode_nfc.cpp) against Unicode's own conformance file,
// NormalizationTest.txt of the same Unicode version as the tables (Debian's unicode-data; the ctest
// fixture nfc_cases unpacks it into the build tree). Exact: NFC is a function of the code points.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "text/unicode.hpp"

namespace {

std::string utf8_of(const std::vector<char32_t>& cps) {
  std::string s;
  for (char32_t c : cps) headscope::unicode::append_utf8(s, c);
  return s;
}

std::vector<char32_t> parse_cps(const std::string& field) {
  std::vector<char32_t> out;
  std::istringstream in(field);
  std::string hex;
  while (in >> hex) out.push_back(static_cast<char32_t>(std::stoul(hex, nullptr, 16)));
  return out;
}

std::string hex_of(const std::string& s) {
  std::ostringstream o;
  for (unsigned char c : s) o << std::hex << (int)c << ' ';
  return o.str();
}

// The offsets nfc() gives: one per output byte and one more, never decreasing, from 0 to the
// source's end. (Plain checks, one assertion per case: Catch2's per-assertion cost, times the
// half million there would be, was most of this file's time under the sanitizers.)
bool tiles(const std::vector<uint32_t>& offsets, const std::string& out, const std::string& src) {
  if (offsets.size() != out.size() + 1 || offsets.front() != 0 || offsets.back() != src.size()) return false;
  for (size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i - 1] > offsets[i]) return false;
  return true;
}

}  // namespace

TEST_CASE("nfc: every case of NormalizationTest.txt", "[nfc]") {
  using headscope::unicode::nfc;
  std::ifstream f(HEADSCOPE_NFC_TEST_FILE);
  REQUIRE(f.good());
  std::string line;
  std::set<char32_t> part1;  // the single characters Part 1 lists; every other one is its own NFC
  std::string part;
  size_t cases = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '@') {
      part = line.substr(0, line.find(' '));
      continue;
    }
    std::vector<std::string> fields;
    std::istringstream in(line);
    std::string field;
    while (fields.size() < 5 && std::getline(in, field, ';')) fields.push_back(field);
    REQUIRE(fields.size() == 5);
    std::vector<std::string> c;
    for (const auto& x : fields) c.push_back(utf8_of(parse_cps(x)));
    if (part == "@Part1") part1.insert(parse_cps(fields[0])[0]);
    // the standard's NFC invariants: c2 == NFC(c1) == NFC(c2) == NFC(c3), c4 == NFC(c4) == NFC(c5)
    for (int i : {0, 1, 2}) {
      std::vector<uint32_t> offsets;
      const std::string got = nfc(c[i], &offsets);
      if (got != c[1])
        FAIL("line: " << line << "\nNFC(c" << i + 1 << ") = " << hex_of(got) << ", expected " << hex_of(c[1]));
      if (!tiles(offsets, got, c[i]))
        FAIL("line: " << line << "\nthe offsets of NFC(c" << i + 1 << ") do not tile its source");
    }
    for (int i : {3, 4})
      if (nfc(c[i]) != c[3]) FAIL("line: " << line << "\nNFC(c" << i + 1 << ") != c4");
    ++cases;
  }
  REQUIRE(cases > 19000);  // the file has 19,000-odd cases; fewer means it was not read whole
  REQUIRE(part1.size() > 10000);
  // every code point Part 1 does not list is unchanged by NFC. Checked 4,096 at a time, each after a
  // space: U+0020 has class 0 and is in no canonical composition, first or second, so it keeps its
  // neighbours apart and NFC of the chunk is the chunk exactly when NFC leaves each one alone.
  size_t unchanged = 0;
  std::vector<char32_t> chunk;
  auto check = [&] {
    std::vector<char32_t> spaced;
    for (char32_t c : chunk) spaced.insert(spaced.end(), {U' ', c});
    const std::string s = utf8_of(spaced);
    const bool same = nfc(s) == s;
    if (!same)
      for (char32_t c : chunk)  // find which
        if (nfc(utf8_of({c})) != utf8_of({c}))
          FAIL("U+" << std::hex << (uint32_t)c << " changed by NFC but not listed in Part 1");
    REQUIRE(same);
    unchanged += chunk.size();
    chunk.clear();
  };
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || part1.count(cp)) continue;
    chunk.push_back(cp);
    if (chunk.size() == 4096) check();
  }
  check();
  REQUIRE(unchanged > 1000000);
}

TEST_CASE("nfc: spans of the result map back to the source bytes", "[nfc]") {
  using headscope::unicode::nfc;
  // "e" + COMBINING ACUTE ACCENT composes into one character that came from all three source bytes
  const std::string src = "ae\xCC\x81z";
  std::vector<uint32_t> off;
  const std::string out = nfc(src, &off);
  REQUIRE(out == "a\xC3\xA9z");
  REQUIRE(off == std::vector<uint32_t>{0, 1, 2, 4, 5});  // é's second byte: inside its source, not at its start
  // a Hangul syllable decomposes and recomposes into itself; unchanged text maps byte for byte
  const std::string hangul = "\xEA\xB0\x80!";  // U+AC00 then "!"
  REQUIRE(nfc(hangul, &off) == hangul);
  REQUIRE(off == std::vector<uint32_t>{0, 1, 2, 3, 4});
  REQUIRE_THROWS_WITH(nfc("ok\xFF"), Catch::Contains("invalid UTF-8 at byte 2"));
}
