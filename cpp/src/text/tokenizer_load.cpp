// GPT-2's tokenizer files: vocab.json and merges.txt (Tokenizer::from_json, contract in
// cpp/include/headscope/tokenizer.hpp), and what both loaders fill in once the ids are known
// (finish_vocab). Hugging Face's tokenizer.json is read by tokenizer_json.cpp.
#include <algorithm>
#include <climits>
#include <optional>

#include <nlohmann/json.hpp>

#include "headscope/error.hpp"
#include "text/tokenizer_impl.hpp"

namespace headscope {
using bpe_detail::byte_map;
using bpe_detail::pair_key;
using bpe_detail::quote_for_message;
using unicode::append_utf8;
using unicode::utf8_sanitize;
using unicode::utf8_step;

namespace {

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
  bool number_float(number_float_t, const string_t& s) override { return bad_value("the non-integer number " + s); }
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

// The raw bytes and display text of every id from its form (GPT-2's byte-to-unicode characters; any
// other character stands for its own UTF-8), and the symbol of each single byte.
void Tokenizer::Impl::finish_vocab() {
  const int32_t n = vocab_n;
  bytes.resize(n);
  display.resize(n);
  for (int32_t id = 0; id < n; ++id) {
    const std::string& form = sym_form[id];
    std::string raw;
    for (size_t i = 0; i < form.size();) {
      char32_t cp;
      const int len = utf8_step(form, i, cp);  // nlohmann only yields valid UTF-8
      if (cp < byte_map().to_byte.size() && byte_map().to_byte[cp] >= 0)
        raw += static_cast<char>(byte_map().to_byte[cp]);
      else
        raw.append(form, i, len);
      i += len;
    }
    display[id] = utf8_sanitize(raw);
    bytes[id] = std::move(raw);
  }

  for (int b = 0; b < 256; ++b) {
    std::string form;
    append_utf8(form, byte_map().to_char[b]);
    byte_sym[b] = intern(form);
  }
}

Tokenizer Tokenizer::from_json(std::string_view vocab_json, std::string_view merges_txt) {
  auto impl = std::make_shared<Impl>();

  VocabSax sax;
  const bool ok = nlohmann::json::sax_parse(vocab_json.begin(), vocab_json.end(), &sax);
  if (!ok || !sax.error.empty()) throw Error(sax.error.empty() ? "vocab.json: invalid JSON" : sax.error);
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

  impl->finish_vocab();

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
    const std::string at = "merges.txt line " + std::to_string(line_no);
    const int32_t a = impl->merge_token(left, at), b = impl->merge_token(right, at),
                  r = impl->merge_token(left + right, at);
    if (rank >= static_cast<size_t>(INT32_MAX)) throw Error("merges.txt: too many merges");
    if (!impl->merges.emplace(pair_key(a, b), MergeInfo{static_cast<int32_t>(rank), r}).second)
      throw Error("merges.txt line " + std::to_string(line_no) + ": duplicate merge " + quote_for_message(line));
    ++rank;
  }
  return Tokenizer(std::move(impl));
}

}  // namespace headscope
