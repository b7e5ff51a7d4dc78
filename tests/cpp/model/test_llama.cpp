// Llama-family checkpoints (config.json model_type "llama" / "qwen3", tokenizer.json): what is
// particular to them. Their numbers against float64 PyTorch run in the shared tests of test_model.cpp,
// test_inside.cpp, test_f16_storage.cpp and test_generate.cpp, which take both families' fixtures
// (test_util::all_fixture_models).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/generate.hpp"
#include "headscope/heads.hpp"
#include "headscope/model.hpp"
#include "headscope/train.hpp"
#include "test_util.hpp"

using headscope::Model;
using nlohmann::json;
using test_util::fixture_dir;
using test_util::kLlamaFixtureModels;
using test_util::load_fixture;
using test_util::read_text;

namespace {

#define REQUIRE_LLAMA_ERROR(expr, text) REQUIRE_THROWS_WITH(expr, Catch::Matchers::Contains(text))

// llama-gqa's config.json with one edit, loaded with its own weights and tokenizer
Model load_edited(const std::function<void(json&)>& edit, const std::string& name = "llama-gqa") {
  json c = json::parse(read_text(fixture_dir(name) + "/config.json"));
  edit(c);
  return Model::load_buffers_tokenizer_json(c.dump(), test_util::read_bytes(fixture_dir(name) + "/model.safetensors"),
                                            read_text(fixture_dir(name) + "/tokenizer.json"));
}

}  // namespace

TEST_CASE("llama: the config is read into the shared fields, key/value heads and rotary settings", "[llama][config]") {
  const Model gqa = load_fixture("llama-gqa");
  const auto& c = gqa.config();
  REQUIRE(c.family == headscope::Family::llama);
  REQUIRE(c.n_head == 4);
  REQUIRE(c.kv_heads() == 2);
  REQUIRE(c.group_size() == 2);
  REQUIRE(c.head_size() == 6);
  REQUIRE(c.qkv_width() == (4 + 2 * 2) * 6);
  REQUIRE(c.tie_word_embeddings);
  const Model qwen = load_fixture("qwen3-qknorm");
  REQUIRE(qwen.config().qk_norm);
  REQUIRE(qwen.config().q_width() == 48);  // 4 heads of 12: wider than hidden_size 16
  const Model mqa = load_fixture("llama-mqa");
  REQUIRE(mqa.config().kv_heads() == 1);
  REQUIRE(mqa.config().rope_scaling.llama3);
  REQUIRE(!mqa.config().tie_word_embeddings);
  // the untied LM head counts: embedding + lm_head are two V x C matrices
  REQUIRE(mqa.parameter_count() > (std::size_t)2 * mqa.config().vocab_size * mqa.config().n_embd);
}

TEST_CASE("llama: text goes through tokenizer.json, with the post-processor's BOS, to the reference's ids",
          "[llama][tokenizer]") {
  for (const std::string& name : kLlamaFixtureModels) {
    const Model m =
        Model::load_directory(fixture_dir(name));  // the folder: config.json, model.safetensors, tokenizer.json
    const json ref = json::parse(read_text(fixture_dir(name) + "/reference.json"));
    const bool llama = m.config().model_type == "llama";
    for (const json& c : ref["cases"]) {
      const std::string text = c["text"].get<std::string>();
      INFO(name << ": \"" << text << "\"");
      std::vector<int32_t> ids;
      for (const headscope::Token& t : m.tokenizer().encode_input(text)) ids.push_back(t.id);
      // the reference's cases are cut to its T <= 24; the text's own ids start the same way
      const auto want = c["ids"].get<std::vector<int32_t>>();
      REQUIRE(ids.size() >= want.size());
      REQUIRE(std::vector<int32_t>(ids.begin(), ids.begin() + (long)want.size()) == want);
      // Llama 3's template puts <|begin_of_text|> first (an empty span); Qwen3's adds nothing
      if (llama) {
        REQUIRE(m.tokenizer().token_bytes(ids[0]) == "<|begin_of_text|>");
        REQUIRE(m.tokenizer().encode_input(text)[0].byte_end == 0);
        REQUIRE(m.tokenizer().encode(text).size() + 1 == ids.size());
      } else {
        REQUIRE(m.tokenizer().encode(text).size() == ids.size());
      }
    }
    // a run of the text is a run of those ids
    Model run = Model::load_directory(fixture_dir(name));
    run.run("The chef");
    std::vector<int32_t> ids;
    for (const headscope::Token& t : run.tokenizer().encode_input("The chef")) ids.push_back(t.id);
    REQUIRE(run.ids() == ids);
  }
}

TEST_CASE("llama: a folder that also holds vocab.json and merges.txt is read with its tokenizer.json",
          "[llama][tokenizer]") {
  // the hub's folders often hold both; GPT-2's files lack tokenizer.json's split, normalizer and BOS
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "headscope-test-llama-both";
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    std::filesystem::copy_file(fixture_dir("llama-gqa") + "/" + f, dir / f,
                               std::filesystem::copy_options::overwrite_existing);
  for (const char* f : {"vocab.json", "merges.txt"})
    std::filesystem::copy_file(fixture_dir("odd-hs12") + "/" + f, dir / f,
                               std::filesystem::copy_options::overwrite_existing);
  const Model m = Model::load_directory(dir);
  REQUIRE(m.tokenizer().prefix_size() == 1);
  REQUIRE(m.tokenizer().token_bytes(m.tokenizer().encode_input("The chef")[0].id) == "<|begin_of_text|>");
  std::filesystem::remove(dir / "tokenizer.json");
  REQUIRE_LLAMA_ERROR(Model::load_directory(dir), "no tokenizer.json");
  std::filesystem::remove_all(dir);
  // and as buffers: a Llama-family config with GPT-2's files is refused
  REQUIRE_LLAMA_ERROR(
      Model::load_buffers(read_text(fixture_dir("llama-gqa") + "/config.json"),
                          test_util::read_bytes(fixture_dir("llama-gqa") + "/model.safetensors"), "{}", ""),
      "tokenizer is its tokenizer.json");
}

TEST_CASE("llama: bad configs and files are refused by name", "[llama][errors]") {
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j["num_key_value_heads"] = 3; }),
                      "not a multiple of num_key_value_heads");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j["head_dim"] = 5; }), "head_dim = 5 is odd");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j.erase("max_position_embeddings"); }),
                      "missing key \"max_position_embeddings\"");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j["hidden_act"] = "gelu"; }), "hidden_act \"gelu\" is not supported");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j["attention_bias"] = true; }), "attention_bias=true is not supported");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) {
                        j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
                      }),
                      "rope_scaling of type \"yarn\" is not supported");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) {
                        j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
                      }),
                      "needs factor, low_freq_factor and high_freq_factor");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j["rms_norm_eps"] = 0; }), "\"rms_norm_eps\" = 0 is outside");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) {
                        j["rope_scaling"] = {{"rope_type", "llama3"},
                                             {"factor", 0.5},
                                             {"low_freq_factor", 1.0},
                                             {"high_freq_factor", 4.0},
                                             {"original_max_position_embeddings", 8}};
                      }),
                      "factor must be at least 1");
  // newer files put rope_theta and the scaling in rope_parameters: read from there, the same model
  Model top = load_fixture("llama-mqa");
  Model nested = load_edited(
      [](json& j) {
        j["rope_parameters"] = j["rope_scaling"];
        j["rope_parameters"]["rope_theta"] = j["rope_theta"];
        j.erase("rope_scaling");
        j.erase("rope_theta");
      },
      "llama-mqa");
  REQUIRE(nested.config().rope_theta == top.config().rope_theta);
  REQUIRE(nested.config().rope_scaling.llama3);
  top.run("Line 1 Line 22");
  nested.run("Line 1 Line 22");
  REQUIRE(std::vector<float>(top.logits_last().begin(), top.logits_last().end()) ==
          std::vector<float>(nested.logits_last().begin(), nested.logits_last().end()));
  // the shapes the config promises are the file's: a head_dim of 8 wants q_proj of 32 rows
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j["head_dim"] = 8; }), "q_proj.weight");
  // an untied model says lm_head.weight; a tied config with one in the file is contradictory
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j["tie_word_embeddings"] = false; }), "lm_head.weight");
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) { j["tie_word_embeddings"] = true; }, "llama-mqa"),
                      "has lm_head.weight but config.json says tie_word_embeddings=true");
  // Qwen3 without its q_norm
  REQUIRE_LLAMA_ERROR(load_edited([](json& j) {
                        j["model_type"] = "qwen3";
                        j["head_dim"] = 6;
                      }),
                      "q_norm.weight");
}

TEST_CASE("llama: a Trainer from a loaded model computes its logits, and its checkpoint reloads as that model",
          "[llama][train]") {
  for (const std::string& name : kLlamaFixtureModels) {
    INFO(name);
    Model m = load_fixture(name);
    m.run("The chef, who trained in Paris, cooked");
    const std::vector<int32_t> ids = m.ids();
    const int T = (int)ids.size();
    headscope::RunOptions all;
    all.all_logits = true;
    m.run_ids(ids, all);
    const std::vector<float> want = m.logits_all();
    headscope::train::Trainer t(m.config(), 1, T);
    t.load(m);
    const std::vector<int> in(ids.begin(), ids.end()), targets(T, 0);
    t.forward(in.data(), targets.data(), 1, T);
    // the same kernels on the same weights, but the model sums W_O's product head by head (its views
    // keep each head's write) where the trainer takes one product: float sums of NH HS terms in two
    // orders, through 2 layers, |logits| < 5: 1e-5 (1 + |logit|) covers their rounding (measured
    // below 1e-6), while a transposed or misplaced weight changes the logits by 1e-2 or more
    double max_err = 0;
    for (std::size_t i = 0; i < want.size(); i++) {
      const double err = std::fabs(t.logits()[i] - want[i]);
      max_err = std::max(max_err, err);
      REQUIRE(err <= 1e-5 * (1 + std::fabs(want[i])));
    }
    INFO("max |trainer - model| " << max_err);
    // config.json and model.safetensors as the trainer writes them (Hugging Face's Llama layout): the
    // same model, bit for bit
    const std::vector<uint8_t> weights = t.safetensors_bytes();
    Model back =
        Model::load_buffers_tokenizer_json(t.config_json(), weights, read_text(fixture_dir(name) + "/tokenizer.json"));
    REQUIRE(back.config().model_type == m.config().model_type);
    back.run_ids(ids, all);
    REQUIRE(back.logits_all() == want);
  }
}

TEST_CASE("llama: past the context the BOS stays first and the cut comes after it; writing past it too",
          "[llama][context]") {
  Model m = load_fixture("llama-gqa");  // context 32
  const int P = m.config().n_positions;
  const std::string text = "The chef, who trained in Paris, cooked the meal quickly. Then the chef left.";
  const auto all = m.tokenizer().encode_input(text);
  REQUIRE((int)all.size() > P);
  const headscope::RunInfo info = m.run(text);
  const std::vector<int32_t> ids = m.ids();
  REQUIRE((int)ids.size() <= P);
  REQUIRE(ids[0] == all[0].id);  // <|begin_of_text|>
  REQUIRE(info.dropped_tokens == (int)all.size() - (int)ids.size());
  for (std::size_t i = 1; i < ids.size(); i++) REQUIRE(ids[i] == all[all.size() - ids.size() + i].id);
  REQUIRE(m.tokens()[0].byte_end == 0);
  // the same window from ids
  std::vector<int32_t> all_ids;
  for (const auto& t : all) all_ids.push_back(t.id);
  REQUIRE(m.context_window(all_ids) == ids);
  REQUIRE(m.context_window(std::vector<int32_t>{}).empty());  // nothing to cut

  // greedy writing past the context: every step runs the window with the BOS first, and each token is
  // the argmax of a fresh run of that window (no cache, no generation code)
  Model writer = load_fixture("llama-gqa");
  Model fresh = load_fixture("llama-gqa");
  headscope::SamplingOptions greedy;
  greedy.temperature = 0;
  // the prompt: about 28 of the 32 positions (its own tokens, as the writer will encode it)
  const std::string prompt = writer.tokenizer().decode(std::vector<int32_t>(all_ids.begin() + 1, all_ids.begin() + 28));
  std::vector<int32_t> seq;
  for (const auto& t : writer.tokenizer().encode_input(prompt)) seq.push_back(t.id);
  REQUIRE(seq.size() > 20);
  REQUIRE((int)seq.size() <= P);
  int steps = 0;
  headscope::generate(writer, prompt, 12, greedy, [&](const headscope::GeneratedToken& g) {
    fresh.clear_cache();  // a full run of the window: no cached prefix
    fresh.run_ids(fresh.context_window(seq));
    const auto logits = fresh.logits_last();
    const int32_t best = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
    REQUIRE(g.id == best);
    seq.push_back(g.id);
    REQUIRE(writer.ids()[0] == seq[0]);
    REQUIRE(writer.ids() == fresh.context_window(seq));
    steps++;
    return true;
  });
  REQUIRE(steps == 12);  // 28 + 12 > 32: the last steps ran cut windows
}
