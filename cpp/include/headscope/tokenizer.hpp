// Byte-level BPE tokenizer: GPT-2's (the encoder of OpenAI's gpt-2 encoder.py, reimplemented) from
// vocab.json and merges.txt, and the Llama 3 / Qwen2 family's from tokenizer.json (from_tokenizer_json).
//
// Behaviour follows OpenAI's Python original; the JS package gpt-3-encoder is the test peer and
// agrees everywhere the tests look (see tests/cpp/text/test_tokenizer.cpp for where it does not).
//  - Pre-tokenizer: the GPT-2 regex, evaluated by hand over code points with Unicode 15.0 tables
//    (cpp/src/text/unicode.cpp, unicode_tables.inc). \s is White_Space plus JavaScript's extra U+FEFF.
//  - Special tokens such as "<|endoftext|>" in the input are plain text, as in GPT-2's encoder.
//  - Input must be valid UTF-8 (no overlongs, surrogates, truncation, > U+10FFFF).
//
// Loading rules (from_json), each violation throws headscope::Error naming file and entry:
//  - vocab.json: a JSON object mapping strings to integer ids in [0, 2^31); no duplicate keys,
//    no duplicate ids, and the ids must be exactly 0..N-1 (so vocab_size() == number of entries).
//  - merges.txt: an optional first line starting with "#version", then one merge per line,
//    "left right" separated by one ASCII space; rank = line order. "\r\n" line ends and blank
//    lines are accepted. A pair listed twice is an error.
//  - Merge parts or results that are not in the vocab are allowed: BPE runs on strings as the
//    Python original does, so such strings may appear as intermediate symbols. Encoding throws
//    only if a *final* token is not in the vocab (e.g. a byte a tiny vocab lacks; the message
//    names the byte and its offset in the input).
//  - Vocab strings are in GPT-2's byte-to-unicode form; a character outside that mapping (e.g. in
//    an added special token) decodes to its own UTF-8 bytes.
//
// Thread safety: all const members may be called concurrently; copies share one word cache.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headscope {

struct Token {
  int32_t id;
  std::string text;     // the token's bytes as valid UTF-8 for display; bytes that do not form
                        // complete UTF-8 characters within this token become U+FFFD (one per
                        // maximal invalid subsequence, as the WHATWG TextDecoder does)
  uint32_t byte_start;  // [byte_start, byte_end): the span of this token in the input string
  uint32_t byte_end;
};

class Tokenizer {
 public:
  // vocab.json: GPT-2 encoder (token string in byte-to-unicode form -> id).
  // merges.txt: "#version" line optional, then "a b" pairs by rank. Throws Error (see above).
  static Tokenizer from_json(std::string_view vocab_json, std::string_view merges_txt);
  // Hugging Face's tokenizer.json with a byte-level BPE model (Llama 3, Qwen2/3, SmolLM, GPT-2):
  //  - normalizer: none or NFC (applied to each stretch between added tokens; spans stay in the input's
  //    bytes, so a token of a composed character covers what it was composed from; a token can be
  //    empty only where NFC reordered marks and BPE cut between them)
  //  - pre_tokenizer: ByteLevel with its regex, or a Sequence of a Split by Llama 3's, Qwen2's or
  //    GPT-2's regex (behavior Isolated) and ByteLevel without one; no prefix space. A Digits step may
  //    come first (SmolLM2's): numbers cut out, each digit alone or each run, at Unicode's \p{N} as
  //    Hugging Face's char::is_numeric cuts, and the split's regex applied between them
  //  - model: BPE, merges as "a b" strings or [a, b] pairs, ignore_merges; no byte_fallback,
  //    subword affixes or dropout
  //  - added_tokens: matched in the raw text first, the longest at each position (lstrip, rstrip
  //    and single_word refused); ids of the vocab and the added tokens together run 0..N-1
  //  - post_processor: none, ByteLevel, or TemplateProcessing (alone or in a Sequence) with special
  //    tokens before the text only (Llama 3's <|begin_of_text|>): those are what encode_input() adds
  // Anything else (a SentencePiece or WordPiece model, another regex) throws Error naming it.
  static Tokenizer from_tokenizer_json(std::string_view tokenizer_json);

  // Empty input gives an empty vector. Throws Error("invalid UTF-8 at byte N") on bad input.
  // The spans of the returned tokens tile the input exactly, in order.
  std::vector<Token> encode(std::string_view utf8) const;
  std::vector<int32_t> encode_ids(std::string_view utf8) const;
  // What a model reads: the post-processor's tokens before the text (Llama 3's BOS; each an empty
  // span at byte 0), then encode()'s. The same as encode() for GPT-2's files. Empty input: empty.
  std::vector<Token> encode_input(std::string_view utf8) const;
  int prefix_size() const;  // how many tokens encode_input() puts before a (non-empty) text

  // Concatenated raw token bytes (may be invalid UTF-8 for a partial sequence of ids).
  // Throws Error on an id outside [0, vocab_size()).
  std::string decode(const std::vector<int32_t>& ids) const;
  std::string token_bytes(int32_t id) const;    // throws on a bad id
  std::string token_display(int32_t id) const;  // valid UTF-8 (U+FFFD for partial chars)
  int32_t vocab_size() const;                   // number of entries = max id + 1
  // Lookup by the vocab.json key, e.g. "<|endoftext|>" or "Ġthe".
  std::optional<int32_t> token_id(std::string_view token_in_vocab_form) const;

  // Added helpers.
  // GPT-2's byte-to-unicode form of raw bytes (the inverse of what token_bytes does per char).
  static std::string bytes_to_vocab_form(std::string_view bytes);
  // Valid UTF-8 for arbitrary bytes, replacing invalid sequences with U+FFFD (WHATWG rules).
  static std::string sanitize_utf8(std::string_view bytes);
  // Number of distinct pre-token words currently cached (for tests and memory diagnostics).
  size_t cached_words() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace headscope
