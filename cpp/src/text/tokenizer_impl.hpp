// Internal to the tokenizer: what a Tokenizer holds, shared by its loaders (tokenizer_load.cpp:
// GPT-2's vocab.json + merges.txt; tokenizer_json.cpp: Hugging Face's tokenizer.json) and its encoder
// (tokenizer.cpp).
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/tokenizer.hpp"
#include "text/unicode.hpp"

namespace headscope {

// Named, not anonymous: these are the types of Tokenizer::Impl's members, and the header is included
// by more than one file (GCC's -Wsubobject-linkage otherwise)
namespace bpe_detail {

using unicode::utf8_sanitize;

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

inline const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

inline std::string quote_for_message(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out = "'";
  out += utf8_sanitize(s.substr(0, kMax));
  out += s.size() > kMax ? "'..." : "'";
  return out;
}

inline std::string hex_byte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}

struct Piece {
  int32_t sym;   // symbol id (an id if < vocab_n)
  uint32_t len;  // bytes of the word it covers
};

struct MergeInfo {
  int32_t rank;
  int32_t result;
};

struct AddedToken {
  std::string content;  // matched as these bytes, in the raw text
  int32_t id;
};

// How text is cut into pre-tokens before BPE: the regex of each family, evaluated by hand
enum class Digits { none, runs, individual };

enum class Split {
  gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
           // ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  qwen2,   // the same with \p{N} for \p{N}{1,3}: one digit per pre-token
};

inline uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// Bounds memory for the page's keystroke re-encodes of large texts; results do not depend on it.
constexpr size_t kMaxCachedWords = 1 << 18;
constexpr size_t kMaxCachedWordBytes = 256;

}  // namespace bpe_detail

using bpe_detail::AddedToken;
using bpe_detail::Digits;
using bpe_detail::MergeInfo;
using bpe_detail::Piece;
using bpe_detail::Split;

struct Tokenizer::Impl {
  int32_t vocab_n = 0;               // ids 0..vocab_n-1: the BPE vocabulary's, then added tokens beyond it
  std::vector<std::string> bytes;    // raw bytes per id
  std::vector<std::string> display;  // sanitized bytes per id
  std::unordered_map<std::string, int32_t> vocab;  // vocab form -> id, the BPE vocabulary's only

  // tokenizer.json's pipeline (from_json's files: GPT-2's, no normalizer, no added tokens)
  Split split = Split::gpt2;
  // a Digits pre-tokenizer before the split (SmolLM2's, StarCoder's): numbers cut out first, each
  // digit alone (individual_digits) or each run, and the split's pattern applied between them
  Digits digits = Digits::none;
  bool nfc = false;            // normalizer NFC, on each stretch of text between added tokens
  bool ignore_merges = false;  // a pre-token that is in the vocab is one token, merges or not
  // added tokens, matched in the raw text before anything else, longest first at each byte:
  // indexed by their first byte, each list longest first
  std::array<std::vector<AddedToken>, 256> added_by_byte;
  std::unordered_map<std::string, int32_t> added_ids;  // content -> id
  std::vector<int32_t> prefix_ids;                     // what the post-processor puts before a text (Llama 3's BOS)

  // Symbols: ids first, then strings that only occur in merges.
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
  // A merge's two tokens and what they make must all be in the vocab: the tokenizers library's BPE
  // builder refuses a file otherwise, so a file it would refuse is not loaded here either. `where`
  // names the merge for the message ("merges.txt line 7").
  int32_t merge_token(const std::string& form, const std::string& where) const {
    if (auto v = vocab.find(form); v != vocab.end()) return v->second;
    throw Error(where + " names " + bpe_detail::quote_for_message(form) +
                ", which is not in the vocab (every merge's tokens and their result must be)");
  }

  void bpe(std::string_view word, std::vector<Piece>& out) const;
  void word_pieces(std::string_view word, uint32_t word_offset, std::vector<Piece>& out) const;
  // Calls sink(id, byte_begin, byte_end) for each token of text, in order, the spans tiling it
  template <class Sink>
  void run(std::string_view text, Sink&& sink) const;
  template <class Sink>
  void run_stretch(std::string_view text, uint32_t base, Sink&& sink) const;

  // for the loaders (tokenizer_load.cpp, tokenizer_json.cpp): bytes, display and byte symbols once the ids are known
  void finish_vocab();
};

}  // namespace headscope
