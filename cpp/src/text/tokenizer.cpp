// Byte-level BPE encoding (contract in cpp/include/headscope/tokenizer.hpp): added tokens, the
// normalizer, the pre-tokenizer's split and BPE, with the byte span of every token; the loaders are
// in tokenizer_load.cpp (GPT-2's files) and tokenizer_json.cpp (tokenizer.json).
#include <algorithm>
#include <queue>
#include <utility>

#include "headscope/error.hpp"
#include "text/tokenizer_impl.hpp"

namespace headscope {
using bpe_detail::byte_map;
using bpe_detail::hex_byte;
using bpe_detail::kMaxCachedWordBytes;
using bpe_detail::kMaxCachedWords;
using bpe_detail::pair_key;
using bpe_detail::quote_for_message;
using unicode::append_utf8;
using unicode::CharClass;
using unicode::classify;
using unicode::utf8_sanitize;
using unicode::utf8_step;

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
  for (int i = 0; i < n; ++i) syms[i] = {byte_sym[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, 1};

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

void Tokenizer::Impl::word_pieces(std::string_view word, uint32_t word_offset, std::vector<Piece>& out) const {
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
  if (ignore_merges) {
    // tokenizer.json's ignore_merges: a pre-token the vocab holds whole is that token
    std::string form;
    for (char ch : word) append_utf8(form, byte_map().to_char[static_cast<uint8_t>(ch)]);
    if (auto it = vocab.find(form); it != vocab.end()) out.push_back({it->second, static_cast<uint32_t>(word.size())});
  }
  if (out.empty()) bpe(word, out);
  uint32_t rel = 0;  // where the piece starts in the word (word_offset: the word's place, for messages)
  for (const Piece& p : out) {
    if (p.sym >= vocab_n) {
      const uint32_t at = word_offset + rel;
      if (p.len == 1) {
        const auto b = static_cast<uint8_t>(word[rel]);
        std::string form;
        append_utf8(form, byte_map().to_char[b]);
        throw Error("byte " + hex_byte(b) + " at byte " + std::to_string(at) + " is not in the vocab (vocab form " +
                    quote_for_message(form) + ")");
      }
      throw Error("token " + quote_for_message(sym_form[p.sym]) + " at bytes " + std::to_string(at) + ".." +
                  std::to_string(at + p.len) + " is produced by the merges but is not in the vocab");
    }
    rel += p.len;
  }
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu);
    if (cache.size() >= kMaxCachedWords) cache.clear();
    cache.emplace(std::move(key), out);
  }
}

namespace {

// The pre-token that starts at code point i of a text of n code points (classes cls, byte offsets
// off, n + 1 of them): the index of the code point after it. Each pattern (tokenizer_impl.hpp's
// Split) is evaluated alternative by alternative, the first that matches winning, as a backtracking
// regex engine does:
//   gpt2:   's|'t|'re|'ve|'m|'ll|'d, case-sensitive; an optional single U+0020 glued to a run of one
//           class; \s+(?!\S): whitespace up to the end, or all but the last whitespace character
//           before non-space (that one joins the next word); \s+: a lone whitespace character
//   llama3, qwen2: the contractions in either case (ASCII letters, as the npm peer transformers.js
//           rewrites (?i:...)); one character that is no letter, number, \r or \n, glued to a run of
//           letters; 1 to 3 digits (qwen2: 1); an optional U+0020 and a run of "other" characters
//           with the \r and \n right after it; whitespace up to its last \r or \n; then the two
//           whitespace rules of gpt2
//   A Digits pre-tokenizer first (Impl::digits) makes the text between numbers a text of its own: n
//   is then the end of that stretch, not of the whole (the lookahead of \s+(?!\S) ends there too).
size_t pre_token_end(Split split, std::string_view text, const std::vector<CharClass>& cls,
                     const std::vector<uint32_t>& off, size_t i, size_t n) {
  auto byte_at = [&](size_t b) -> char { return b < text.size() ? text[b] : '\0'; };
  auto run_end = [&](size_t k, CharClass c) {
    while (k < n && cls[k] == c) ++k;
    return k;
  };
  auto newline = [&](size_t k) { return k < n && (text[off[k]] == '\r' || text[off[k]] == '\n'); };
  auto whitespace = [&](size_t k) {  // \s+(?!\S) then \s+
    const size_t end = run_end(k, CharClass::kSpace);
    return end < n && end - k >= 2 ? end - 1 : end;
  };
  const uint32_t b = off[i];
  const char c = text[b];
  if (split == Split::gpt2) {
    const char c1 = byte_at(b + 1), c2 = byte_at(b + 2);
    if (c == '\'' && (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')) return i + 2;
    if (c == '\'' && ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l'))) return i + 3;
    if (c == ' ' && i + 1 < n && cls[i + 1] != CharClass::kSpace) return run_end(i + 1, cls[i + 1]);
    if (cls[i] != CharClass::kSpace) return run_end(i, cls[i]);
    return whitespace(i);
  }
  if (c == '\'') {
    const char c1 = static_cast<char>(byte_at(b + 1) | 0x20), c2 = static_cast<char>(byte_at(b + 2) | 0x20);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return i + 2;
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return i + 3;
  }
  if (cls[i] == CharClass::kLetter) return run_end(i, CharClass::kLetter);
  if (cls[i] != CharClass::kNumber && !newline(i) && i + 1 < n && cls[i + 1] == CharClass::kLetter)
    return run_end(i + 1, CharClass::kLetter);
  if (cls[i] == CharClass::kNumber) {
    const size_t most = split == Split::llama3 ? 3 : 1;
    size_t end = i + 1;
    while (end < n && end - i < most && cls[end] == CharClass::kNumber) ++end;
    return end;
  }
  const size_t other = c == ' ' && i + 1 < n && cls[i + 1] == CharClass::kOther ? i + 1 : i;
  if (cls[other] == CharClass::kOther) {
    size_t end = run_end(other, CharClass::kOther);
    while (newline(end)) ++end;
    return end;
  }
  // whitespace: up to its last \r or \n, if it has one
  const size_t end = run_end(i, CharClass::kSpace);
  size_t last_newline = n;
  for (size_t k = i; k < end; ++k)
    if (newline(k)) last_newline = k;
  if (last_newline != n) return last_newline + 1;
  return whitespace(i);
}

}  // namespace

// One stretch of text between added tokens (bytes [base, base + text.size()) of the input):
// normalized, cut into pre-tokens, each pre-token into BPE pieces.
template <class Sink>
void Tokenizer::Impl::run_stretch(std::string_view raw, uint32_t base, Sink&& sink) const {
  std::string normalized;
  std::vector<uint32_t> to_raw;  // with nfc: offsets of normalized bytes in raw (unicode::nfc)
  if (nfc) normalized = unicode::nfc(raw, &to_raw);
  const std::string_view text = nfc ? std::string_view(normalized) : raw;
  auto source = [&](uint32_t b) { return base + (nfc ? to_raw[b] : b); };

  std::vector<CharClass> cls;
  std::vector<uint32_t> off;
  cls.reserve(text.size());
  off.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    const int len = utf8_step(text, i, cp);
    if (len <= 0) throw Error("invalid UTF-8 at byte " + std::to_string(base + i));
    cls.push_back(classify(cp));
    off.push_back(static_cast<uint32_t>(i));
    i += len;
  }
  const size_t n = cls.size();
  off.push_back(static_cast<uint32_t>(text.size()));

  std::vector<Piece> pieces;
  for (size_t i = 0; i < n;) {
    size_t end;
    if (digits != Digits::none && cls[i] == CharClass::kNumber) {  // Digits: a number, cut out first
      end = i + 1;
      while (digits == Digits::runs && end < n && cls[end] == CharClass::kNumber) ++end;
    } else {
      size_t stretch = n;  // Digits: the split's pattern runs up to the next number only
      if (digits != Digits::none) {
        stretch = i;
        while (stretch < n && cls[stretch] != CharClass::kNumber) ++stretch;
      }
      end = pre_token_end(split, text, cls, off, i, stretch);
    }
    const uint32_t wb = off[i], we = off[end];
    word_pieces(text.substr(wb, we - wb), source(wb), pieces);
    uint32_t at = wb;
    for (const Piece& p : pieces) {
      sink(p.sym, source(at), source(at + p.len));
      at += p.len;
    }
    i = end;
  }
}

template <class Sink>
void Tokenizer::Impl::run(std::string_view text, Sink&& sink) const {
  if (text.size() > UINT32_MAX) throw Error("text is larger than 4 GiB");
  if (added_ids.empty()) return run_stretch(text, 0, sink);
  // added tokens first: at each byte the longest that matches (they are valid UTF-8, so a match
  // starts at a character boundary); the stretches between them are encoded on their own
  size_t stretch = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    for (const AddedToken& a : added_by_byte[static_cast<uint8_t>(text[i])])
      if (text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    if (i > stretch) run_stretch(text.substr(stretch, i - stretch), static_cast<uint32_t>(stretch), sink);
    sink(hit->id, static_cast<uint32_t>(i), static_cast<uint32_t>(i + hit->content.size()));
    i += hit->content.size();
    stretch = i;
  }
  if (stretch < text.size()) run_stretch(text.substr(stretch), static_cast<uint32_t>(stretch), sink);
}

int Tokenizer::prefix_size() const { return (int)impl_->prefix_ids.size(); }

std::vector<Token> Tokenizer::encode_input(std::string_view utf8) const {
  std::vector<Token> text = encode(utf8);
  if (text.empty() || impl_->prefix_ids.empty()) return text;
  std::vector<Token> out;
  out.reserve(impl_->prefix_ids.size() + text.size());
  for (int32_t id : impl_->prefix_ids) out.push_back(Token{id, impl_->display[id], 0, 0});
  out.insert(out.end(), std::make_move_iterator(text.begin()), std::make_move_iterator(text.end()));
  return out;
}

std::vector<Token> Tokenizer::encode(std::string_view utf8) const {
  std::vector<Token> out;
  impl_->run(utf8, [&](int32_t id, uint32_t b, uint32_t e) { out.push_back(Token{id, impl_->display[id], b, e}); });
  return out;
}

std::vector<int32_t> Tokenizer::encode_ids(std::string_view utf8) const {
  std::vector<int32_t> out;
  impl_->run(utf8, [&](int32_t id, uint32_t, uint32_t) { out.push_back(id); });
  return out;
}

static void check_id(const Tokenizer::Impl& impl, int32_t id) {
  if (id < 0 || id >= impl.vocab_n)
    throw Error("token id " + std::to_string(id) + " is outside the vocab (size " + std::to_string(impl.vocab_n) + ")");
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
