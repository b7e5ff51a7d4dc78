// Hugging Face's tokenizer.json with a byte-level BPE model (Tokenizer::from_tokenizer_json, contract
// in cpp/include/headscope/tokenizer.hpp), as Llama 3, Qwen2/3 and SmolLM2 ship it: its normalizer,
// pre-tokenizer and post-processor read into the shared Impl, everything else refused by name.
#include <algorithm>
#include <climits>
#include <optional>

#include <nlohmann/json.hpp>

#include "headscope/error.hpp"
#include "text/tokenizer_impl.hpp"

namespace headscope {
using bpe_detail::pair_key;
using bpe_detail::quote_for_message;
using unicode::utf8_sanitize;
}  // namespace headscope

namespace headscope {
namespace {

using json = nlohmann::json;

// The Split patterns this engine evaluates by hand (tokenizer.cpp, pre_token_end), as tokenizer.json
// spells them
constexpr std::string_view kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

[[noreturn]] void refuse(const std::string& what) { throw Error("tokenizer.json: " + what); }

const json& member(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) refuse(where + " has no \"" + key + "\"");
  return *it;
}

bool flag(const json& j, const char* key, bool fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) refuse(where + "." + key + " must be true or false");
  return it->get<bool>();
}

std::string type_of(const json& j, const std::string& where) {
  if (!j.is_object()) refuse(where + " must be an object");
  const json& t = member(j, "type", where);
  if (!t.is_string()) refuse(where + ".type must be a string");
  return t.get<std::string>();
}

// A ByteLevel pre-tokenizer: its own regex (GPT-2's) or none; no prefix space
bool byte_level_uses_regex(const json& p, const std::string& where) {
  if (flag(p, "add_prefix_space", false, where))
    refuse(where + ".add_prefix_space = true is not supported (the models it knows split without one)");
  return flag(p, "use_regex", true, where);
}

Split read_pre_tokenizer(const json& p, Digits& digits) {
  if (p.is_null()) refuse("pre_tokenizer is null: a byte-level BPE model needs ByteLevel");
  const std::string type = type_of(p, "pre_tokenizer");
  if (type == "ByteLevel") {
    if (!byte_level_uses_regex(p, "pre_tokenizer")) refuse("pre_tokenizer ByteLevel without its regex splits nothing");
    return Split::gpt2;
  }
  if (type != "Sequence")
    refuse("pre_tokenizer \"" + type + "\" is not supported (ByteLevel, or a Sequence of Split and ByteLevel)");
  const json& list = member(p, "pretokenizers", "pre_tokenizer");
  if (!list.is_array()) refuse("pre_tokenizer.pretokenizers must be an array");
  std::optional<Split> split;
  bool byte_level = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]";
    const std::string t = type_of(list[i], where);
    if (t == "Split" && !split && !byte_level) {
      const json& pattern = member(list[i], "pattern", where);
      const auto regex = pattern.is_object() ? pattern.find("Regex") : pattern.end();
      if (regex == pattern.end() || !regex->is_string()) refuse(where + ".pattern must be {\"Regex\": ...}");
      const std::string re = regex->get<std::string>();
      if (re == kLlama3Pattern)
        split = Split::llama3;
      else if (re == kQwen2Pattern)
        split = Split::qwen2;
      else if (re == kGpt2Pattern)
        split = Split::gpt2;
      else
        refuse(where + " splits by a regex this engine does not know: " + quote_for_message(re) +
               " (it knows Llama 3's, Qwen2's and GPT-2's)");
      const json& behavior = member(list[i], "behavior", where);
      if (!behavior.is_string() || behavior.get<std::string>() != "Isolated")
        refuse(where + ".behavior must be \"Isolated\", got " + behavior.dump());
      if (flag(list[i], "invert", false, where)) refuse(where + ".invert = true is not supported");
    } else if (t == "Digits" && !split && !byte_level && digits == Digits::none) {
      digits = flag(list[i], "individual_digits", false, where) ? Digits::individual : Digits::runs;
    } else if (t == "ByteLevel" && !byte_level) {
      const bool regex = byte_level_uses_regex(list[i], where);
      if (regex && split) refuse(where + " splits again after the Split: not supported");
      if (regex) split = Split::gpt2;
      byte_level = true;
    } else {
      refuse(where + " \"" + t + "\" is not supported here (Digits or a Split, then ByteLevel)");
    }
  }
  if (!byte_level) refuse("pre_tokenizer has no ByteLevel step: only byte-level BPE models are supported");
  if (!split) refuse("pre_tokenizer splits nothing before BPE");
  return *split;
}

bool read_normalizer(const json& n) {
  if (n.is_null()) return false;
  const std::string type = type_of(n, "normalizer");
  if (type == "NFC") return true;
  if (type == "Sequence") {
    const json& list = member(n, "normalizers", "normalizer");
    if (list.is_array() && list.empty()) return false;
    if (list.is_array() && list.size() == 1 && type_of(list[0], "normalizer.normalizers[0]") == "NFC") return true;
  }
  refuse("normalizer \"" + type + "\" is not supported (none, or NFC)");
}

std::string json_string(const json& j, const std::string& where) {
  if (!j.is_string()) refuse(where + " must be a string, got " + j.dump().substr(0, 60));
  return j.get<std::string>();
}

}  // namespace

// The tokens the post-processor puts before a single text (TemplateProcessing's leading special
// tokens: Llama 3's <|begin_of_text|>), by content; empty for none (ByteLevel's only trims offsets).
// Anything that adds tokens after the text, or another kind of processor (Bert's, Roberta's), is
// refused by name: the model would read other ids than this tokenizer gives.
std::vector<std::string> read_post_processor(const json& p, const std::string& where = "post_processor") {
  if (p.is_null()) return {};
  const std::string type = type_of(p, where);
  if (type == "ByteLevel") return {};
  if (type == "Sequence") {
    const json& list = member(p, "processors", where);
    if (!list.is_array()) refuse(where + ".processors must be an array");
    std::vector<std::string> prefix;
    for (size_t i = 0; i < list.size(); ++i) {
      auto more = read_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]");
      if (!more.empty() && !prefix.empty()) refuse(where + " adds special tokens twice");
      if (!more.empty()) prefix = std::move(more);
    }
    return prefix;
  }
  if (type != "TemplateProcessing")
    refuse(where + " \"" + type + "\" is not supported (ByteLevel, TemplateProcessing, or a Sequence of them)");
  const json& single = member(p, "single", where);
  if (!single.is_array()) refuse(where + ".single must be an array");
  std::vector<std::string> prefix;
  bool text_seen = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string at = where + ".single[" + std::to_string(i) + "]";
    if (!single[i].is_object()) refuse(at + " must be an object");
    if (auto s = single[i].find("SpecialToken"); s != single[i].end()) {
      if (text_seen) refuse(at + ": a special token after the text is not supported (only tokens before it)");
      const json& id = member(*s, "id", at + ".SpecialToken");
      if (!id.is_string()) refuse(at + ".SpecialToken.id must be a string");
      prefix.push_back(id.get<std::string>());
    } else if (single[i].contains("Sequence")) {
      if (text_seen) refuse(at + ": the text twice");
      text_seen = true;
    } else {
      refuse(at + " must be a SpecialToken or the Sequence");
    }
  }
  if (!text_seen) refuse(where + ".single has no Sequence (the text)");
  return prefix;
}

Tokenizer Tokenizer::from_tokenizer_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    refuse(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) refuse("expected a JSON object");
  auto impl = std::make_shared<Impl>();
  impl->nfc = read_normalizer(j.contains("normalizer") ? j["normalizer"] : json());
  impl->split = read_pre_tokenizer(j.contains("pre_tokenizer") ? j["pre_tokenizer"] : json(), impl->digits);

  const json& model = member(j, "model", "the file");
  const std::string type = type_of(model, "model");
  if (type != "BPE")
    refuse("model type \"" + type +
           "\" is not supported (byte-level BPE only; a SentencePiece or WordPiece tokenizer is not)");
  if (flag(model, "byte_fallback", false, "model"))
    refuse("model.byte_fallback = true (SentencePiece-style BPE) is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() && model[key] != "")
      refuse(std::string("model.") + key + " is not supported");
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0)
    refuse("model.dropout is not supported");
  impl->ignore_merges = flag(model, "ignore_merges", false, "model");

  // the vocabulary: ids 0..N-1 of the model, then the added tokens' ids, together 0..M-1
  const json& vocab = member(model, "vocab", "model");
  if (!vocab.is_object() || vocab.empty()) refuse("model.vocab must be a non-empty object of token -> id");
  const json added = j.contains("added_tokens") && !j["added_tokens"].is_null() ? j["added_tokens"] : json::array();
  if (!added.is_array()) refuse("added_tokens must be an array");
  if (vocab.size() + added.size() > static_cast<size_t>(INT32_MAX)) refuse("too many tokens");
  const int64_t most = static_cast<int64_t>(vocab.size() + added.size());
  std::vector<int8_t> seen(static_cast<size_t>(most), 0);  // 1: in the vocab, 2: an added token
  int64_t top = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer())
      refuse("model.vocab: the id of " + quote_for_message(it.key()) + " is not an integer");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(vocab.size()))
      refuse("model.vocab: ids must be 0.." + std::to_string(vocab.size() - 1) + ", got " + std::to_string(id) +
             " for " + quote_for_message(it.key()));
    if (seen[id]) refuse("model.vocab: duplicate id " + std::to_string(id));
    seen[id] = 1;
    top = std::max(top, id);
  }
  const auto model_n = static_cast<int32_t>(vocab.size());
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < added.size(); ++i) {
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!added[i].is_object()) refuse(where + " must be an object");
    const json& idj = member(added[i], "id", where);
    if (!idj.is_number_integer() || idj.get<int64_t>() < 0 || idj.get<int64_t>() >= most)
      refuse(where + ".id must be an integer in [0, " + std::to_string(most) + "), got " + idj.dump());
    const auto id = static_cast<int32_t>(idj.get<int64_t>());
    std::string content = json_string(member(added[i], "content", where), where + ".content");
    if (content.empty()) refuse(where + ".content is empty");
    for (const char* key : {"lstrip", "rstrip", "single_word"})
      if (flag(added[i], key, false, where)) refuse(where + "." + key + " = true is not supported");
    if (flag(added[i], "normalized", false, where) && impl->nfc)
      refuse(where + ".normalized = true with a normalizer is not supported");
    if (seen[id] == 1 && vocab.value(content, json()) != json(id))
      refuse(where + " has id " + std::to_string(id) + ", which the vocab gives to another token");
    if (seen[id] == 2) refuse(where + ": duplicate id " + std::to_string(id));
    if (impl->added_ids.count(content)) refuse(where + ": duplicate content " + quote_for_message(content));
    seen[id] = 2;
    top = std::max<int64_t>(top, id);
    impl->added_ids.emplace(content, id);
    tokens.push_back({std::move(content), id});
  }
  for (int64_t id = 0; id <= top; ++id)
    if (!seen[id])
      refuse("no token has id " + std::to_string(id) + " (ids must run 0.." + std::to_string(top) + " without gaps)");

  impl->vocab_n = static_cast<int32_t>(top + 1);
  impl->sym_form.assign(impl->vocab_n, std::string());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = it.value().get<int32_t>();
    impl->sym_form[id] = it.key();
    impl->vocab.emplace(it.key(), id);
  }
  for (const AddedToken& a : tokens)
    if (a.id >= model_n || impl->sym_form[a.id].empty()) impl->sym_form[a.id] = a.content;
  impl->finish_vocab();
  for (const AddedToken& a : tokens) {  // an added token's bytes are its content, not byte-level characters
    impl->bytes[a.id] = a.content;
    impl->display[a.id] = utf8_sanitize(a.content);
    impl->added_by_byte[static_cast<uint8_t>(a.content[0])].push_back(a);
  }
  for (auto& list : impl->added_by_byte)
    std::stable_sort(list.begin(), list.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });

  // merges: "left right" strings, or [left, right] pairs; rank = order
  const json& merges = member(model, "merges", "model");
  if (!merges.is_array()) refuse("model.merges must be an array");
  int32_t rank = 0;
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string where = "model.merges[" + std::to_string(i) + "]";
    std::string left, right;
    if (merges[i].is_string()) {
      const std::string m = merges[i].get<std::string>();
      const size_t sp = m.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= m.size() || m.find(' ', sp + 1) != std::string::npos)
        refuse(where + " must be two tokens separated by one space, got " + quote_for_message(m));
      left = m.substr(0, sp);
      right = m.substr(sp + 1);
    } else if (merges[i].is_array() && merges[i].size() == 2) {
      left = json_string(merges[i][0], where + "[0]");
      right = json_string(merges[i][1], where + "[1]");
      if (left.empty() || right.empty()) refuse(where + " has an empty token");
    } else {
      refuse(where + " must be \"left right\" or [left, right]");
    }
    const std::string at = "tokenizer.json: " + where;
    const int32_t a = impl->merge_token(left, at), b = impl->merge_token(right, at),
                  r = impl->merge_token(left + right, at);
    if (!impl->merges.emplace(pair_key(a, b), MergeInfo{rank, r}).second)
      refuse(where + ": duplicate merge " + quote_for_message(left + " " + right));
    ++rank;
  }
  for (const std::string& content : read_post_processor(j.contains("post_processor") ? j["post_processor"] : json())) {
    const auto it = impl->added_ids.find(content);
    if (it == impl->added_ids.end())
      refuse("post_processor adds " + quote_for_message(content) + ", which is not one of the added_tokens");
    impl->prefix_ids.push_back(it->second);
  }
  return Tokenizer(std::move(impl));
}

}  // namespace headscope
