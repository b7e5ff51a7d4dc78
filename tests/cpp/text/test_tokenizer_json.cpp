// tokenizer.json (Tokenizer::from_tokenizer_json) on the real files of Llama 3 and Qwen3, against
// the ids of an independent implementation, transformers.js's tokenizer code on npm
// (scripts/codegen/make-tokenizer-json-cases.mjs writes the files and the cases into the build tree). Ids
// are compared exactly: tokenization is discrete.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/tokenizer.hpp"
#include "test_util.hpp"
#include "text/unicode.hpp"

using headscope::Tokenizer;
using nlohmann::json;

namespace {

std::string family_dir(const std::string& family) { return std::string(HEADSCOPE_TOKENIZER_JSON_DIR) + "/" + family; }

// Each real file is loaded once for the whole suite (9 and 11 MB of JSON: seconds under the
// sanitizers and in wasm)
const Tokenizer& family_tokenizer(const std::string& family) {
  static std::map<std::string, Tokenizer> loaded;
  auto it = loaded.find(family);
  if (it == loaded.end())
    it = loaded
             .emplace(family,
                      Tokenizer::from_tokenizer_json(test_util::read_text(family_dir(family) + "/tokenizer.json")))
             .first;
  return it->second;
}

// The smallest tokenizer.json of this layout: bytes a, b, c, their merges "a b" and "ab c"
json tiny_tokenizer() {
  return json::parse(R"({
    "added_tokens": [{"id": 5, "content": "<s>", "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}, "merges": ["a b", ["ab", "c"]]}
  })");
}

}  // namespace

TEST_CASE("tokenizer.json: Llama 3's and Qwen3's ids equal transformers.js's on every case", "[tokenizer_json]") {
  // and Llama 3.2's (the same model, a post-processor that adds the BOS), and SmolLM2's pre-tokenizer
  // (Digits, then GPT-2's split) on GPT-2's vocabulary
  for (const std::string family : {"llama3", "llama3_2", "qwen3", "digits"}) {
    const Tokenizer& tok = family_tokenizer(family);
    REQUIRE(tok.prefix_size() == (family == "llama3_2" ? 1 : 0));
    const json cases = json::parse(test_util::read_text(family_dir(family) + "/cases.json"));
    REQUIRE(cases.size() > 30);
    for (const auto& c : cases) {
      const std::string text = c["text"];
      INFO(family << ": " << json(text).dump());
      const std::vector<headscope::Token> got = tok.encode(text);
      std::vector<int32_t> ids;
      for (const auto& t : got) ids.push_back(t.id);
      REQUIRE(ids == c["ids"].get<std::vector<int32_t>>());
      // the spans tile the input in order; the tokens' bytes are the (normalized) text. A span is
      // empty only where NFC moved a mark before another (U+0307 then U+0323, which it swaps) and
      // BPE cut between their bytes: the moved mark's source lies before its neighbour's.
      const bool reordered = family == "qwen3" && text.find("\xCC\x87\xCC\xA3") != std::string::npos;
      uint32_t at = 0;
      for (const auto& t : got) {
        REQUIRE(t.byte_start == at);
        if (!reordered) REQUIRE(t.byte_end > t.byte_start);
        at = t.byte_end;
      }
      REQUIRE(at == text.size());
      REQUIRE(tok.decode(ids) == (family == "qwen3" ? headscope::unicode::nfc(text) : text));
      // what the model reads: the post-processor's leading tokens (Llama 3.2's <|begin_of_text|>), then these
      if (c.contains("input_ids")) {
        std::vector<int32_t> input;
        for (const auto& t : tok.encode_input(text)) input.push_back(t.id);
        REQUIRE(input == c["input_ids"].get<std::vector<int32_t>>());
      }
    }
  }
}

TEST_CASE("tokenizer.json: the vocabulary, added tokens and what a Qwen3 span covers", "[tokenizer_json]") {
  const Tokenizer& llama = family_tokenizer("llama3");
  REQUIRE(llama.vocab_size() == 128256);  // 128,000 BPE tokens and 256 added ones
  REQUIRE(llama.token_bytes(128000) == "<|begin_of_text|>");
  const Tokenizer& qwen = family_tokenizer("qwen3");
  REQUIRE(qwen.vocab_size() == 151669);
  // "e" + COMBINING ACUTE is one character after NFC: its token spans both source characters
  const auto toks = qwen.encode(
      "caf"
      "e\xCC\x81");
  REQUIRE(toks.back().byte_end == 6);
  REQUIRE(qwen.decode(qwen.encode_ids("caf"
                                      "e\xCC\x81")) == "caf\xC3\xA9");
}

TEST_CASE("tokenizer.json: a tiny file; merges as strings and as pairs, added tokens first", "[tokenizer_json]") {
  const Tokenizer tok = Tokenizer::from_tokenizer_json(tiny_tokenizer().dump());
  REQUIRE(tok.encode_ids("abc") == std::vector<int32_t>{4});
  REQUIRE(tok.encode_ids("ab<s>cab") == std::vector<int32_t>{3, 5, 2, 3});
  REQUIRE(tok.vocab_size() == 6);
}

TEST_CASE("tokenizer.json: what it does not support, or a broken file, is refused by name", "[tokenizer_json]") {
  using Catch::Contains;
  auto refused = [](const json& j) { return Tokenizer::from_tokenizer_json(j.dump()); };
  REQUIRE_THROWS_WITH(Tokenizer::from_tokenizer_json("{not json"), Contains("tokenizer.json: not valid JSON"));
  REQUIRE_THROWS_WITH(Tokenizer::from_tokenizer_json("[]"), Contains("expected a JSON object"));
  json j = tiny_tokenizer();
  j["model"]["type"] = "Unigram";
  REQUIRE_THROWS_WITH(refused(j), Contains("model type \"Unigram\" is not supported"));
  j = tiny_tokenizer();
  j["model"]["byte_fallback"] = true;
  REQUIRE_THROWS_WITH(refused(j), Contains("byte_fallback = true"));
  j = tiny_tokenizer();
  j["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
  REQUIRE_THROWS_WITH(refused(j), Contains("a regex this engine does not know"));
  j = tiny_tokenizer();
  j["pre_tokenizer"] = json::parse(R"({"type": "Metaspace"})");
  REQUIRE_THROWS_WITH(refused(j), Contains("pre_tokenizer \"Metaspace\" is not supported"));
  j = tiny_tokenizer();
  j["normalizer"] = json::parse(R"({"type": "NFKC"})");
  REQUIRE_THROWS_WITH(refused(j), Contains("normalizer \"NFKC\" is not supported"));
  j = tiny_tokenizer();
  j["model"]["vocab"]["abc"] = 7;
  REQUIRE_THROWS_WITH(refused(j), Contains("ids must be 0..4, got 7"));
  j = tiny_tokenizer();
  j["added_tokens"] = json::parse(R"([{"id": 2, "content": "c"}, {"id": 6, "content": "<s>"}])");
  REQUIRE_THROWS_WITH(refused(j), Contains("no token has id 5"));
  j = tiny_tokenizer();
  j["added_tokens"][0]["id"] = 2;
  REQUIRE_THROWS_WITH(refused(j), Contains("which the vocab gives to another token"));
  j = tiny_tokenizer();
  j["added_tokens"][0]["lstrip"] = true;
  REQUIRE_THROWS_WITH(refused(j), Contains("lstrip = true is not supported"));
  j = tiny_tokenizer();
  j["model"]["merges"].push_back("a  b");
  REQUIRE_THROWS_WITH(refused(j), Contains("model.merges[2] must be two tokens separated by one space"));
  j = tiny_tokenizer();
  j["model"]["merges"].push_back(json::array({"a", "b"}));
  REQUIRE_THROWS_WITH(refused(j), Contains("duplicate merge"));
  j = tiny_tokenizer();
  j["model"]["merges"].push_back(json::array({"a", 3}));
  REQUIRE_THROWS_WITH(refused(j), Contains("model.merges[2][1] must be a string"));
  // every merge's tokens and its result must be in the vocab (the tokenizers library's BPE builder
  // refuses the file otherwise)
  j = tiny_tokenizer();
  j["model"]["merges"].push_back("b c");
  REQUIRE_THROWS_WITH(refused(j), Contains("model.merges[2] names 'bc', which is not in the vocab"));
  j = tiny_tokenizer();
  j["model"]["merges"].push_back(json::array({"c", "d"}));
  REQUIRE_THROWS_WITH(refused(j), Contains("model.merges[2] names 'd', which is not in the vocab"));
  j = tiny_tokenizer();
  j["model"].erase("vocab");
  REQUIRE_THROWS_WITH(refused(j), Contains("model has no \"vocab\""));
  // a byte the vocab lacks is named when it is met, as with vocab.json
  REQUIRE_THROWS_WITH(Tokenizer::from_tokenizer_json(tiny_tokenizer().dump()).encode("abd"), Contains("byte 0x64"));
}
