// GPT-2 byte-level BPE. See cpp/include/headscope/tokenizer.hpp for the contract.
#include "headscope/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "headscope/error.hpp"
#include "unicode.hpp"

namespace headscope {
using unicode::CharClass;
using unicode::append_utf8;
using unicode::classify;
using unicode::utf8_sanitize;
using unicode::utf8_step;

namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. in byte order, so every byte has a visible, non-space character in vocab.json.
struct ByteMap {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 0x144> to_byte{};  // indexed by char; -1 if not a byte character
  ByteMap() {
    to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

std::string quote_for_message(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out = "'";
  out += utf8_sanitize(s.substr(0, kMax));
  out += s.size() > kMax ? "'..." : "'";
  return out;
}

std::string hex_byte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}

// Streaming parse of vocab.json: detects duplicate keys (a DOM parse silently keeps the last)
// and avoids building a 50k-entry DOM only to copy it.
class VocabSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::unordered_map<std::string, int32_t> ids;
  std::string error;

  bool null() override { return bad_value("null"); }
  bool boolean(bool) override { return bad_value("a boolean"); }
  bool number_integer(number_integer_t v) override {
    if (v < 0) return fail("vocab.json: negative id " + std::to_string(v) + " for key " + quote_for_message(key_));
    return add(static_cast<uint64_t>(v));
  }
  bool number_unsigned(number_unsigned_t v) override { return add(v); }
  bool number_float(number_float_t, const string_t& s) override {
    return bad_value("the non-integer number " + s);
  }
  bool string(string_t&) override { return bad_value("a string"); }
  bool binary(binary_t&) override { return bad_value("binary data"); }
  bool start_object(std::size_t) override {
    if (depth_++ == 0) return true;
    return bad_value("an object");
  }
  bool key(string_t& k) override {
    key_ = k;
    have_key_ = true;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return fail("vocab.json: expected a JSON object of token -> id, got an array");
    return bad_value("an array");
  }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    return fail(std::string("vocab.json: invalid JSON: ") + ex.what());
  }

 private:
  bool fail(std::string msg) {
    if (error.empty()) error = std::move(msg);
    return false;
  }
  bool bad_value(const std::string& what) {
    if (depth_ == 0) return fail("vocab.json: expected a JSON object of token -> id, got " + what);
    return fail("vocab.json: id for key " + quote_for_message(key_) + " is " + what +
                ", expected a non-negative integer");
  }
  bool add(uint64_t v) {
    if (depth_ != 1 || !have_key_) return bad_value("a number");
    if (v > static_cast<uint64_t>(INT32_MAX))
      return fail("vocab.json: id " + std::to_string(v) + " for key " + quote_for_message(key_) +
                  " does not fit in int32");
    if (!ids.emplace(key_, static_cast<int32_t>(v)).second)
      return fail("vocab.json: duplicate key " + quote_for_message(key_));
    return true;
  }
  int depth_ = 0;
  std::string key_;
  bool have_key_ = false;
};

}  // namespace

// Types of Tokenizer::Impl's members: in a named namespace, since a member whose type has internal
// linkage is what GCC warns about (-Wsubobject-linkage) once this file is compiled inside a unity batch
namespace bpe_detail {

struct Piece {
  int32_t sym;   // symbol id (a vocab id if < vocab size)
  uint32_t len;  // bytes of the word it covers
};

struct MergeInfo {
  int32_t rank;
  int32_t result;
};

}  // namespace bpe_detail
using bpe_detail::MergeInfo;
using bpe_detail::Piece;

namespace {

inline uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// Bounds memory for the page's keystroke re-encodes of large texts; results do not depend on it.
constexpr size_t kMaxCachedWords = 1 << 18;
constexpr size_t kMaxCachedWordBytes = 256;

}  // namespace

struct Tokenizer::Impl {
  int32_t vocab_n = 0;
  std::vector<std::string> bytes;    // raw bytes per vocab id
  std::vector<std::string> display;  // sanitized bytes per vocab id
  std::unordered_map<std::string, int32_t> vocab;  // vocab form -> id

  // Symbols: vocab ids first, then strings that only occur in merges.txt.
  std::vector<std::string> sym_form;
  std::unordered_map<std::string, int32_t> extra_index;  // only strings not in the vocab
  std::unordered_map<uint64_t, MergeInfo> merges;
  std::array<int32_t, 256> byte_sym{};

  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<Piece>> cache;

  int32_t intern(const std::string& form) {
    if (auto v = vocab.find(form); v != vocab.end()) return v->second;
    auto [it, inserted] = extra_index.emplace(form, static_cast<int32_t>(sym_form.size()));
    if (inserted) sym_form.push_back(form);
    return it->second;
  }

  void bpe(std::string_view word, std::vector<Piece>& out) const;
  void word_pieces(std::string_view word, uint32_t word_offset, std::vector<Piece>& out) const;
  template <class Sink>
  void run(std::string_view text, Sink&& sink) const;
};

// OpenAI's loop: repeatedly take the lowest-ranked adjacent pair and merge all of its
// non-overlapping occurrences left to right. A heap keyed by (rank, position) with lazy
// invalidation gives the same result in O(n log n), so one huge "word" (a megabyte of CJK or
// of punctuation is a single pre-token) does not go quadratic.
void Tokenizer::Impl::bpe(std::string_view word, std::vector<Piece>& out) const {
  const int n = static_cast<int>(word.size());
  struct Sym {
    int32_t id;
    int32_t prev, next;
    uint32_t len;  // 0 once merged into its left neighbour
  };
  std::vector<Sym> syms(n);
  for (int i = 0; i < n; ++i)
    syms[i] = {byte_sym[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, 1};

  struct Cand {
    int32_t rank, pos, left, right, result;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int pos) {
    if (pos < 0) return;
    const int nx = syms[pos].next;
    if (nx < 0) return;
    auto it = merges.find(pair_key(syms[pos].id, syms[nx].id));
    if (it != merges.end()) heap.push({it->second.rank, pos, syms[pos].id, syms[nx].id, it->second.result});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);

  std::vector<Cand> batch;
  while (!heap.empty()) {
    // All candidates of one rank are occurrences of one pair; take them all before applying any
    // so pairs created by this pass wait for the next one, as in the original.
    const int32_t rank = heap.top().rank;
    batch.clear();
    while (!heap.empty() && heap.top().rank == rank) {
      batch.push_back(heap.top());
      heap.pop();
    }
    for (const Cand& c : batch) {
      Sym& l = syms[c.pos];
      if (l.len == 0 || l.id != c.left || l.next < 0) continue;
      Sym& r = syms[l.next];
      if (r.id != c.right) continue;
      l.id = c.result;
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) syms[r.next].prev = c.pos;
      push(l.prev);
      push(c.pos);
    }
  }
  for (int i = 0; i >= 0 && i < n; i = syms[i].next) out.push_back({syms[i].id, syms[i].len});
}

void Tokenizer::Impl::word_pieces(std::string_view word, uint32_t word_offset,
                                  std::vector<Piece>& out) const {
  out.clear();
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::lock_guard<std::mutex> lock(cache_mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      out = it->second;
      return;
    }
  }
  bpe(word, out);
  uint32_t at = word_offset;
  for (const Piece& p : out) {
    if (p.sym >= vocab_n) {
      if (p.len == 1) {
        const auto b = static_cast<uint8_t>(word[at - word_offset]);
        std::string form;
        append_utf8(form, byte_map().to_char[b]);
        throw Error("byte " + hex_byte(b) + " at byte " + std::to_string(at) +
                    " is not in the vocab (vocab form " + quote_for_message(form) + ")");
      }
      throw Error("token " + quote_for_message(sym_form[p.sym]) + " at bytes " + std::to_string(at) +
                  ".." + std::to_string(at + p.len) +
                  " is produced by merges.txt but is not in the vocab");
    }
    at += p.len;
  }
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu);
    if (cache.size() >= kMaxCachedWords) cache.clear();
    cache.emplace(std::move(key), out);
  }
}

// The GPT-2 pattern, alternative by alternative, at each position:
//   's|'t|'re|'ve|'m|'ll|'d    ASCII contractions, case-sensitive
//   ' ?\p{L}+' etc.            an optional single U+0020 glued to a run of one class
//   \s+(?!\S)                  whitespace up to the end, or all but the last whitespace
//                              character before non-space (that one joins the next word)
//   \s+                        a lone whitespace character before non-space
template <class Sink>
void Tokenizer::Impl::run(std::string_view text, Sink&& sink) const {
  if (text.size() > UINT32_MAX) throw Error("text is larger than 4 GiB");
  std::vector<CharClass> cls;
  std::vector<uint32_t> off;
  cls.reserve(text.size());
  off.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    const int len = utf8_step(text, i, cp);
    if (len <= 0) throw Error("invalid UTF-8 at byte " + std::to_string(i));
    cls.push_back(classify(cp));
    off.push_back(static_cast<uint32_t>(i));
    i += len;
  }
  const size_t n = cls.size();
  off.push_back(static_cast<uint32_t>(text.size()));

  auto byte_at = [&](size_t b) -> char { return b < text.size() ? text[b] : '\0'; };
  auto run_end = [&](size_t i, CharClass k) {
    while (i < n && cls[i] == k) ++i;
    return i;
  };

  std::vector<Piece> pieces;
  for (size_t i = 0; i < n;) {
    const uint32_t b = off[i];
    const char c = text[b];
    size_t end;
    const char c1 = byte_at(b + 1), c2 = byte_at(b + 2);
    if (c == '\'' && (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')) {
      end = i + 2;
    } else if (c == '\'' && ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') ||
                             (c1 == 'l' && c2 == 'l'))) {
      end = i + 3;
    } else if (c == ' ' && i + 1 < n && cls[i + 1] != CharClass::kSpace) {
      end = run_end(i + 1, cls[i + 1]);
    } else if (cls[i] != CharClass::kSpace) {
      end = run_end(i, cls[i]);
    } else {
      end = run_end(i, CharClass::kSpace);
      if (end < n && end - i >= 2) --end;
    }
    const uint32_t wb = off[i], we = off[end];
    word_pieces(text.substr(wb, we - wb), wb, pieces);
    uint32_t at = wb;
    for (const Piece& p : pieces) {
      sink(p.sym, at, at + p.len);
      at += p.len;
    }
    i = end;
  }
}

Tokenizer Tokenizer::from_json(std::string_view vocab_json, std::string_view merges_txt) {
  auto impl = std::make_shared<Impl>();
  const ByteMap& bm = byte_map();

  VocabSax sax;
  const bool ok = nlohmann::json::sax_parse(vocab_json.begin(), vocab_json.end(), &sax);
  if (!ok || !sax.error.empty())
    throw Error(sax.error.empty() ? "vocab.json: invalid JSON" : sax.error);
  if (sax.ids.empty()) throw Error("vocab.json: the vocab is empty");
  // Contiguous ids keep vocab_size() == entry count and make every id below it decodable.
  const auto n = static_cast<int32_t>(sax.ids.size());
  impl->vocab_n = n;
  impl->sym_form.assign(n, std::string());
  std::vector<bool> seen(n, false);
  for (const auto& [form, id] : sax.ids) {
    if (id >= n)
      throw Error("vocab.json: ids must be 0.." + std::to_string(n - 1) + " (one per entry), got id " +
                  std::to_string(id) + " for key " + quote_for_message(form));
    if (seen[id]) throw Error("vocab.json: duplicate id " + std::to_string(id));
    seen[id] = true;
    impl->sym_form[id] = form;
  }
  impl->vocab = std::move(sax.ids);

  impl->bytes.resize(n);
  impl->display.resize(n);
  for (int32_t id = 0; id < n; ++id) {
    const std::string& form = impl->sym_form[id];
    std::string raw;
    for (size_t i = 0; i < form.size();) {
      char32_t cp;
      const int len = utf8_step(form, i, cp);  // nlohmann only yields valid UTF-8
      if (cp < bm.to_byte.size() && bm.to_byte[cp] >= 0)
        raw += static_cast<char>(bm.to_byte[cp]);
      else
        raw.append(form, i, len);
      i += len;
    }
    impl->display[id] = utf8_sanitize(raw);
    impl->bytes[id] = std::move(raw);
  }

  for (int b = 0; b < 256; ++b) {
    std::string form;
    append_utf8(form, bm.to_char[b]);
    impl->byte_sym[b] = impl->intern(form);
  }

  size_t line_no = 0, rank = 0;
  for (size_t pos = 0; pos <= merges_txt.size();) {
    size_t nl = merges_txt.find('\n', pos);
    if (nl == std::string_view::npos) nl = merges_txt.size();
    std::string_view line = merges_txt.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1 && line.substr(0, 8) == "#version") continue;
    if (line.empty()) continue;
    std::vector<std::string_view> parts;
    for (size_t i = 0; i < line.size();) {
      if (line[i] == ' ' || line[i] == '\t') {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      parts.push_back(line.substr(i, j - i));
      i = j;
    }
    if (parts.size() != 2)
      throw Error("merges.txt line " + std::to_string(line_no) + ": expected two tokens, got " +
                  std::to_string(parts.size()) + " in " + quote_for_message(line));
    const std::string left(parts[0]), right(parts[1]);
    const int32_t a = impl->intern(left);
    const int32_t b = impl->intern(right);
    const int32_t r = impl->intern(left + right);
    if (rank >= static_cast<size_t>(INT32_MAX))
      throw Error("merges.txt: too many merges");
    if (!impl->merges.emplace(pair_key(a, b), MergeInfo{static_cast<int32_t>(rank), r}).second)
      throw Error("merges.txt line " + std::to_string(line_no) + ": duplicate merge " +
                  quote_for_message(line));
    ++rank;
  }
  return Tokenizer(std::move(impl));
}

std::vector<Token> Tokenizer::encode(std::string_view utf8) const {
  std::vector<Token> out;
  impl_->run(utf8, [&](int32_t id, uint32_t b, uint32_t e) {
    out.push_back(Token{id, impl_->display[id], b, e});
  });
  return out;
}

std::vector<int32_t> Tokenizer::encode_ids(std::string_view utf8) const {
  std::vector<int32_t> out;
  impl_->run(utf8, [&](int32_t id, uint32_t, uint32_t) { out.push_back(id); });
  return out;
}

static void check_id(const Tokenizer::Impl& impl, int32_t id) {
  if (id < 0 || id >= impl.vocab_n)
    throw Error("token id " + std::to_string(id) + " is outside the vocab (size " +
                std::to_string(impl.vocab_n) + ")");
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    check_id(*impl_, id);
    out += impl_->bytes[id];
  }
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  check_id(*impl_, id);
  return impl_->bytes[id];
}

std::string Tokenizer::token_display(int32_t id) const {
  check_id(*impl_, id);
  return impl_->display[id];
}

int32_t Tokenizer::vocab_size() const { return impl_->vocab_n; }

std::optional<int32_t> Tokenizer::token_id(std::string_view token_in_vocab_form) const {
  auto it = impl_->vocab.find(std::string(token_in_vocab_form));
  if (it == impl_->vocab.end()) return std::nullopt;
  return it->second;
}

std::string Tokenizer::bytes_to_vocab_form(std::string_view bytes) {
  std::string out;
  for (char c : bytes) append_utf8(out, byte_map().to_char[static_cast<uint8_t>(c)]);
  return out;
}

std::string Tokenizer::sanitize_utf8(std::string_view bytes) { return utf8_sanitize(bytes); }

size_t Tokenizer::cached_words() const {
  std::lock_guard<std::mutex> lock(impl_->cache_mu);
  return impl_->cache.size();
}

}  // namespace headscope
