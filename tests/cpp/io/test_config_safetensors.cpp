// Malformed input: every case raises headscope::Error with a message naming the problem.
// Hostile safetensors files are built in memory from a fixture by editing its header or bytes.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
#else
#include <unistd.h>
#endif

#include "headscope/config.hpp"
#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/safetensors.hpp"
#include "test_util.hpp"

using headscope::Error;
using headscope::LoadOptions;
using headscope::MemoryUse;
using headscope::Model;
using headscope::RunInfo;
using nlohmann::json;
using test_util::read_bytes;
using test_util::read_text;

namespace {

const std::string kOddHs12Dir = std::string(HEADSCOPE_FIXTURES_DIR) + "/models/odd-hs12";

struct Files {
  std::string config = read_text(kOddHs12Dir + "/config.json");
  std::vector<uint8_t> weights = read_bytes(kOddHs12Dir + "/model.safetensors");
  std::string vocab = read_text(kOddHs12Dir + "/vocab.json");
  std::string merges = read_text(kOddHs12Dir + "/merges.txt");
  Model load() const { return Model::load_buffers(config, weights, vocab, merges); }
  // config.json claiming another shape: width C, NH heads, L layers (n_inner unset: 4 C)
  json config_of_shape(int C, int NH, int L) const {
    json j = json::parse(config);
    j["n_embd"] = C;
    j["n_head"] = NH;
    j["n_layer"] = L;
    j["n_inner"] = nullptr;
    return j;
  }
  // the message of the Error that loading these weights under `shaped` throws
  std::string load_error(const json& shaped) const {
    try {
      Model::load_buffers(shaped.dump(), weights, vocab, merges);
      FAIL("no error");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

// A safetensors file split into its JSON header and data section, to be edited and re-joined.
struct Parts {
  json header;
  std::vector<uint8_t> data;
  explicit Parts(const std::vector<uint8_t>& file) {
    uint64_t n = 0;
    std::memcpy(&n, file.data(), 8);
    header = json::parse(file.begin() + 8, file.begin() + 8 + (std::ptrdiff_t)n);
    data.assign(file.begin() + 8 + (std::ptrdiff_t)n, file.end());
  }
  std::vector<uint8_t> join() const {
    const std::string h = header.dump();
    std::vector<uint8_t> out(8);
    const uint64_t n = h.size();
    std::memcpy(out.data(), &n, 8);
    out.insert(out.end(), h.begin(), h.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }
};

std::vector<uint8_t> edited(const std::vector<uint8_t>& file, const std::function<void(Parts&)>& edit) {
  Parts p(file);
  edit(p);
  return p.join();
}

#define REQUIRE_ERROR_CONTAINS(expr, text) REQUIRE_THROWS_WITH(expr, Catch::Matchers::Contains(text))

}  // namespace

TEST_CASE("the unedited fixture loads (the edits below are what breaks it)", "[errors]") {
  const Files f;
  REQUIRE_NOTHROW(f.load());
}

TEST_CASE("config.json errors name the key", "[errors][config]") {
  const Files f;
  auto with = [&](const std::function<void(json&)>& edit) {
    json j = json::parse(f.config);
    edit(j);
    Files g = f;
    g.config = j.dump();
    return g;
  };
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j.erase("n_head"); }).load(), "missing key \"n_head\"");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["n_layer"] = -2; }).load(), "\"n_layer\" = -2 is outside");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["n_embd"] = 1 << 30; }).load(), "\"n_embd\" = 1073741824 is outside");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["n_positions"] = 0; }).load(), "\"n_positions\" = 0");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["vocab_size"] = "many"; }).load(), "\"vocab_size\" must be an integer");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["n_head"] = 5; }).load(), "n_embd (48) is not divisible by n_head (5)");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["layer_norm_epsilon"] = -1; }).load(), "layer_norm_epsilon");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["activation_function"] = "relu"; }).load(),
                         "activation_function \"relu\"");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["scale_attn_by_inverse_layer_idx"] = true; }).load(), "not supported");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["vocab_size"] = 100; }).load(),
                         "the tokenizer has 257 tokens but config.json says vocab_size 100");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["model_type"] = "bert"; }).load(),
                         "model_type \"bert\" is not supported: this engine runs GPT-2");
  REQUIRE_ERROR_CONTAINS(with([](json& j) { j["model_type"] = 3; }).load(), "\"model_type\" must be a string");
  Files bad = f;
  bad.config = "{\"n_embd\": 48,";
  REQUIRE_ERROR_CONTAINS(bad.load(), "config.json: not valid JSON");
  bad.config = "[1, 2]";
  REQUIRE_ERROR_CONTAINS(bad.load(), "expected a JSON object");
}

TEST_CASE("safetensors errors: structure of the file", "[errors][safetensors]") {
  const Files f;
  Files g = f;
  g.weights.resize(5);
  REQUIRE_ERROR_CONTAINS(g.load(), "too short for a safetensors header");

  g = f;
  g.weights.resize(g.weights.size() - 100);  // truncated inside the data section
  REQUIRE_ERROR_CONTAINS(g.load(), "lie outside the data section");

  g = f;
  const uint64_t huge = std::numeric_limits<uint64_t>::max() - 3;
  std::memcpy(g.weights.data(), &huge, 8);
  REQUIRE_ERROR_CONTAINS(g.load(), "is larger than the file");

  g = f;
  const uint64_t just_over = g.weights.size() - 7;
  std::memcpy(g.weights.data(), &just_over, 8);
  REQUIRE_ERROR_CONTAINS(g.load(), "is larger than the file");

  g = f;
  g.weights[8] = 'x';  // the header's opening brace
  REQUIRE_ERROR_CONTAINS(g.load(), "header is not valid JSON");
}

TEST_CASE("safetensors errors: tensors", "[errors][safetensors]") {
  const Files f;
  const std::string t = "h.0.attn.c_attn.weight";
  Files g = f;
  g.weights = edited(f.weights, [&](Parts& p) {
    p.header["h.0.attn.c_attn.weightX"] = p.header[t];
    p.header.erase(t);
  });
  REQUIRE_ERROR_CONTAINS(g.load(), "missing tensor \"h.0.attn.c_attn.weight\"");

  g.weights = edited(f.weights, [&](Parts& p) { p.header[t]["shape"] = {144, 48}; });
  REQUIRE_ERROR_CONTAINS(g.load(), "has shape [144, 48], expected [48, 144]");

  g.weights = edited(f.weights, [&](Parts& p) { p.header[t]["dtype"] = "I32"; });
  REQUIRE_ERROR_CONTAINS(g.load(), "has dtype I32; only F32, F16 and BF16");

  g.weights = edited(f.weights, [&](Parts& p) { p.header[t]["dtype"] = "F16"; });  // half the bytes it claims
  REQUIRE_ERROR_CONTAINS(g.load(), "need 13824 bytes but data_offsets give 27648");

  g.weights = edited(f.weights, [&](Parts& p) { p.header[t]["dtype"] = "Q4"; });
  REQUIRE_ERROR_CONTAINS(g.load(), "unknown dtype \"Q4\"");

  g.weights = edited(f.weights, [&](Parts& p) { p.header[t]["shape"] = {-48, 144}; });
  REQUIRE_ERROR_CONTAINS(g.load(), "non-negative integers");

  g.weights = edited(f.weights, [&](Parts& p) {  // element count overflows 64 bits
    p.header[t]["shape"] = {4294967296ull, 4294967296ull, 16};
  });
  REQUIRE_ERROR_CONTAINS(g.load(), "overflows");

  g.weights = edited(f.weights, [&](Parts& p) {
    const uint64_t end = p.data.size();
    p.header[t]["data_offsets"] = {end - 10, end + 27638};
  });
  REQUIRE_ERROR_CONTAINS(g.load(), "lie outside the data section");

  g.weights = edited(f.weights, [&](Parts& p) {  // a second tensor pointing into the first one's bytes
    auto other = p.header["h.0.attn.c_proj.bias"];
    const uint64_t b = p.header[t]["data_offsets"][0].get<uint64_t>() + 4;
    other["data_offsets"] = {b, b + 192};
    p.header["h.0.attn.c_proj.bias"] = other;
  });
  REQUIRE_ERROR_CONTAINS(g.load(), "tensors overlap");

  g.weights = edited(f.weights, [&](Parts& p) {  // NaN weight: rejected (documented in cpp/README.md, "Bad input")
    const uint64_t b = p.header[t]["data_offsets"][0].get<uint64_t>();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(p.data.data() + b + 40, &nan, 4);
  });
  REQUIRE_ERROR_CONTAINS(g.load(), "contains NaN or Inf (element 10)");

  g.weights = edited(f.weights, [&](Parts& p) { p.header[t] = "nope"; });
  REQUIRE_ERROR_CONTAINS(g.load(), "entry is not an object");
}

TEST_CASE("missing files in a model folder", "[errors][files]") {
  REQUIRE_ERROR_CONTAINS(Model::load_directory("/nonexistent/headscope-model"), "model folder not found");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "headscope-test-missing";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kOddHs12Dir + "/config.json", dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove(dir / "model.safetensors");
  REQUIRE_ERROR_CONTAINS(Model::load_directory(dir), "no model.safetensors");
  std::filesystem::copy_file(kOddHs12Dir + "/model.safetensors", dir / "model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  REQUIRE_ERROR_CONTAINS(Model::load_directory(dir), "cannot open");
  std::filesystem::remove_all(dir);
  // a folder of a family not run here (config.json, model.safetensors, tokenizer.json) is named by its
  // model_type, not by the vocab.json it lacks; its config has none of GPT-2's keys
  const std::filesystem::path qwen2 = std::filesystem::temp_directory_path() / "headscope-test-qwen2";
  std::filesystem::create_directories(qwen2);
  std::ofstream(qwen2 / "config.json") << R"({"model_type": "qwen2", "hidden_size": 896, "num_attention_heads": 14,
    "num_key_value_heads": 2, "num_hidden_layers": 24, "vocab_size": 151936, "rms_norm_eps": 1e-6})";
  REQUIRE_ERROR_CONTAINS(Model::load_directory(qwen2),
                         "model_type \"qwen2\" is not supported yet (a relative of the Llama family");
  std::filesystem::remove_all(qwen2);
}

TEST_CASE("bad text, ids and head references", "[errors][input]") {
  Model m = Files().load();
  REQUIRE_ERROR_CONTAINS(m.logits_last(), "call run() first");
  REQUIRE_ERROR_CONTAINS(m.run(""), "text is empty");
  REQUIRE_ERROR_CONTAINS(m.run("ab\xff"
                               "cd"),
                         "invalid UTF-8 at byte 2");
  REQUIRE_ERROR_CONTAINS(m.run("\xed\xa0\x80"), "invalid UTF-8");  // a UTF-16 surrogate encoded in UTF-8
  REQUIRE_ERROR_CONTAINS(m.run("\xc3"), "invalid UTF-8");          // truncated sequence
  const std::vector<int32_t> bad_ids = {1, 2, 300};
  REQUIRE_ERROR_CONTAINS(m.run_ids(bad_ids), "token id 300 at position 2");
  const std::vector<int32_t> too_many(33, 5);
  REQUIRE_ERROR_CONTAINS(m.run_ids(too_many), "33 tokens exceed the model's context of 32");
  headscope::RunOptions opt;
  opt.ablate = {{2, 0}};
  REQUIRE_ERROR_CONTAINS(m.run("hi", opt), "layer 2 is outside [0, 2)");
  opt.ablate = {{0, 4}};
  REQUIRE_ERROR_CONTAINS(m.run("hi", opt), "head 4 is outside [0, 4)");
  m.run("hi");
  REQUIRE_ERROR_CONTAINS(m.attention(0, -1), "head -1");
  REQUIRE_ERROR_CONTAINS(m.logits_all(), "run with all_logits");
  REQUIRE_ERROR_CONTAINS(m.contribution(0, 0), "run with keep_contributions");
  // after errors, the model still works
  REQUIRE(m.run("hi").tokens == 2);
}

TEST_CASE("a context too large for memory is refused before allocating", "[errors][memory]") {
  // tiny-hs4 (2 layers, 2 heads) with n_positions raised to 65536 and a matching position table:
  // 20,000 tokens would need 2 x 2 x 20000^2 attention floats (6.4 GB). The engine must say so
  // instead of overflowing a 32-bit size (wasm) or aborting in the allocator.
  const std::string dir = std::string(HEADSCOPE_FIXTURES_DIR) + "/models/tiny-hs4";
  json config = json::parse(read_text(dir + "/config.json"));
  const int C = config["n_embd"].get<int>();
  config["n_positions"] = 65536;
  const std::vector<uint8_t> weights = edited(read_bytes(dir + "/model.safetensors"), [&](Parts& p) {
    const uint64_t begin = p.data.size();
    p.data.resize(p.data.size() + (std::size_t)65536 * C * 4, 0);  // zeros: a valid F32 table
    p.header["wpe.weight"]["shape"] = {65536, C};
    p.header["wpe.weight"]["data_offsets"] = {begin, p.data.size()};
  });
  // a memory limit of 1 GB (LoadOptions::memory_limit_bytes): natively the default is this machine's
  // memory, on which 6.4 GB might well fit
  LoadOptions options;
  options.memory_limit_bytes = 1ull << 30;
  Model m = Model::load_buffers(config.dump(), weights, read_text(dir + "/vocab.json"), read_text(dir + "/merges.txt"),
                                options);
  REQUIRE(m.run(std::string(100, 'a')).tokens == 100);  // ordinary lengths still work
  // the budget is the limit less the weights (2 MB: the table of 65,536 positions) and the reserve (a
  // sixteenth of the limit, at least 64 MB)
  const MemoryUse u = m.memory();
  REQUIRE(u.limit_bytes == 1ull << 30);
  REQUIRE(u.reserve_bytes == 64ull << 20);
  // natively nothing is counted in use before the weights; in wasm (this suite runs there too) what
  // the module's allocator holds
  REQUIRE(u.activation_budget_bytes == u.limit_bytes - u.weight_bytes - u.in_use_at_load_bytes - u.reserve_bytes);
  REQUIRE_ERROR_CONTAINS(m.run(std::string(20000, 'a')), "MB of activations, more than their budget of " +
                                                             std::to_string(u.activation_budget_bytes >> 20) +
                                                             " MB (the memory limit 1024 MB less " +
                                                             std::to_string(u.weight_bytes >> 20) + " MB of weights");
  REQUIRE_ERROR_CONTAINS(m.run(std::string(20000, 'a')), " and 64 MB kept free); use a shorter text");
  REQUIRE(m.run("still usable").tokens == 12);
}

TEST_CASE("a Llama-family model's context is what its memory budget holds", "[errors][memory]") {
  // llama-gqa (2 layers, 4 query heads) claiming a context of a million positions (RoPE needs no
  // table), under a memory limit of 80 MB: the budget is 80 - 64 MB (the reserve) less the weights,
  // and with the maps kept (2 x 4 x T² floats) it holds about 700 tokens.
  const std::string dir = std::string(HEADSCOPE_FIXTURES_DIR) + "/models/llama-gqa";
  json config = json::parse(read_text(dir + "/config.json"));
  config["max_position_embeddings"] = 1000000;
  LoadOptions options;
  options.memory_limit_bytes = 80ull << 20;
  Model m = Model::load_buffers_tokenizer_json(config.dump(), read_bytes(dir + "/model.safetensors"),
                                               read_text(dir + "/tokenizer.json"), options);
  const MemoryUse u = m.memory();
  REQUIRE(u.activation_budget_bytes == u.limit_bytes - u.weight_bytes - u.in_use_at_load_bytes - u.reserve_bytes);
  const int ctx = m.config().n_positions;
  REQUIRE(u.context_tokens == ctx);
  // Bounds from the definition: the maps alone (8 T² floats) must fit, so ctx <= sqrt(budget / 32);
  // and every other activation of this model is under 2,000 floats a token (its widths are 24 to 80),
  // so any T with 4 (8 T² + 2000 T) <= budget fits
  const double budget = (double)u.activation_budget_bytes;
  REQUIRE(ctx <= std::sqrt(budget / 32.0));
  const double fits = (-2000.0 + std::sqrt(2000.0 * 2000.0 + 8.0 * budget)) / 16.0;  // root of 32 T² + 8000 T = budget
  REQUIRE(ctx >= (int)fits);
  REQUIRE(u.bytes_at_context <= u.activation_budget_bytes);
  // a text of that many tokens runs within the budget; a longer one is cut to the context, not refused
  std::string text;
  while ((int)m.tokenizer().encode_input(text).size() < ctx + 50) text += " ab";
  const RunInfo info = m.run(text);
  REQUIRE(info.tokens <= ctx);
  REQUIRE(info.dropped_tokens > 0);
  REQUIRE(m.memory().activation_bytes <= u.activation_budget_bytes);
  // the same model under twice the limit keeps a longer context
  LoadOptions roomier = options;
  roomier.memory_limit_bytes = 160ull << 20;
  const Model wide = Model::load_buffers_tokenizer_json(config.dump(), read_bytes(dir + "/model.safetensors"),
                                                        read_text(dir + "/tokenizer.json"), roomier);
  REQUIRE(wide.config().n_positions > ctx);
}

TEST_CASE("a model that leaves no room for a short text is refused at load with the numbers", "[errors][memory]") {
  // a limit of 64 MB is all reserve: nothing is left for activations
  const std::string dir = std::string(HEADSCOPE_FIXTURES_DIR) + "/models/tiny-hs4";
  LoadOptions options;
  options.memory_limit_bytes = 64ull << 20;
  // (in wasm also ", N MB in use before them" after the weights)
  REQUIRE_ERROR_CONTAINS(
      Model::load_directory(dir, options),
      "this model leaves 0 MB for a text's activations (the memory limit 64 MB less 0 MB of weights");
  REQUIRE_ERROR_CONTAINS(Model::load_directory(dir, options), " and 64 MB kept free), and 32 tokens need");
  options.memory_limit_bytes = 0;  // the loader itself is unharmed
  REQUIRE(Model::load_directory(dir, options).run("still fine").tokens > 0);
}

TEST_CASE("a model too large for memory is refused with its size before any weight is allocated", "[errors][memory]") {
  // odd-hs12's files with config.json claiming n_embd 16384 and 100 layers: about 1.2 TB of float32
  // weights, beyond any machine's physical memory and beyond wasm32's 4 GB. The loader must name the
  // size (never std::bad_alloc, never a crash) before it reads or allocates a single tensor.
  const Files f;
  {
    const std::string msg = f.load_error(f.config_of_shape(16384, 128, 100));
    INFO(msg);
    // 100 layers x (12 C^2 + 13 C) floats x 4 bytes = 1200.0 GB (2^30 bytes), plus at most one
    // layer's 4 GB read before packing and the memory already in use: the figure lies in [1199, 1210]
    const std::size_t at = msg.find("needs about ");
    REQUIRE(at != std::string::npos);
    const double gb = std::stod(msg.substr(at + 12));
    REQUIRE(gb >= 1199.0);
    REQUIRE(gb <= 1210.0);
    REQUIRE(msg.find(" GB") != std::string::npos);
#ifdef __EMSCRIPTEN__
    REQUIRE(msg.find("of wasm memory") != std::string::npos);
    REQUIRE(msg.find("the limit is") != std::string::npos);
#else
    REQUIRE(msg.find("(this machine's memory)") != std::string::npos);
#endif
  }
  REQUIRE(f.load().config().n_layer == 2);  // the real config still loads
}

TEST_CASE("a float32 load too large for memory suggests F16 when F16 would fit", "[errors][memory][f16]") {
  // A shape whose float32 weights exceed the limit by about 30% (wasm: the module's maximum memory;
  // natively: physical memory), so that in F16 they take about 65% of it. The check runs before any
  // tensor is read, so odd-hs12's small file stands in for the weights.
  const Files f;
#ifdef __EMSCRIPTEN__
  const double limit = (double)emscripten_get_heap_max();
#else
  const double limit = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
#endif
  const int C = 4096;
  const double f32_per_layer = 12.0 * C * C * 4;  // the four linear layers of a block, float32
  const int layers = (int)std::ceil(1.3 * limit / f32_per_layer);
  json config = f.config_of_shape(C, 32, layers);
  INFO("limit " << limit / 1073741824.0 << " GB, " << layers << " layers of width " << C);
  // the refusal names the storage to ask for as the caller would ask: loadModel's option in wasm,
  // the CLI's flag natively
  const auto names_option = [](const std::string& msg, const std::string& storage) {
#ifdef __EMSCRIPTEN__
    REQUIRE(msg.find("loadModel(source, { weights: '" + storage + "' })") != std::string::npos);
#else
    REQUIRE(msg.find("--weights " + storage) != std::string::npos);
#endif
  };
  {
    const std::string msg = f.load_error(config);
    INFO(msg);
    REQUIRE(msg.find("float32 weights") != std::string::npos);
    REQUIRE(msg.find("it would fit with weights in F16") != std::string::npos);
    names_option(msg, "f16");
  }
  // twice as many layers do not fit in F16 either (2.6 x the limit in float32, 1.3 x in F16): the hint
  // is 8 bits alone (0.7 x: a quarter of float32 in the blocks, F16 in the small embedding), and the
  // F16 load names its own size and the same hint
  config["n_layer"] = 2 * layers;
  headscope::LoadOptions f16;
  f16.weights = headscope::WeightStorage::f16;
  {
    const std::string msg = f.load_error(config);
    INFO(msg);
    REQUIRE(msg.find("in F16") == std::string::npos);
    REQUIRE(msg.find("it would fit with 8-bit weights") != std::string::npos);
    names_option(msg, "q8");
  }
  REQUIRE_ERROR_CONTAINS(Model::load_buffers(config.dump(), f.weights, f.vocab, f.merges, f16), "of F16 weights");
  REQUIRE_ERROR_CONTAINS(Model::load_buffers(config.dump(), f.weights, f.vocab, f.merges, f16),
                         "it would fit with 8-bit weights");
  // four times as many fit in none: a smaller model, named by every storage's load
  config["n_layer"] = 4 * layers;
  headscope::LoadOptions q8;
  q8.weights = headscope::WeightStorage::q8;
  REQUIRE_ERROR_CONTAINS(Model::load_buffers(config.dump(), f.weights, f.vocab, f.merges), "try a smaller model");
  REQUIRE_ERROR_CONTAINS(Model::load_buffers(config.dump(), f.weights, f.vocab, f.merges, q8), "of 8-bit weights");
  REQUIRE_ERROR_CONTAINS(Model::load_buffers(config.dump(), f.weights, f.vocab, f.merges, q8), "try a smaller model");
}

TEST_CASE("F16 storage refuses a weight beyond F16's range, naming the tensor", "[errors][f16]") {
  const Files f;
  headscope::LoadOptions f16;
  f16.weights = headscope::WeightStorage::f16;
  for (const float big : {65520.0f, -1e5f}) {
    const std::vector<uint8_t> weights = edited(f.weights, [&](Parts& p) {
      const std::string t =
          p.header.contains("h.1.mlp.c_fc.weight") ? "h.1.mlp.c_fc.weight" : "transformer.h.1.mlp.c_fc.weight";
      REQUIRE(p.header[t]["dtype"] == "F32");
      const uint64_t at = p.header[t]["data_offsets"][0].get<uint64_t>() + 4 * 5;  // element 5
      std::memcpy(&p.data[at], &big, 4);
    });
    REQUIRE_ERROR_CONTAINS(Model::load_buffers(f.config, weights, f.vocab, f.merges, f16),
                           "h.1.mlp.c_fc.weight\" element 5");
    REQUIRE_ERROR_CONTAINS(Model::load_buffers(f.config, weights, f.vocab, f.merges, f16), "beyond F16's range");
    REQUIRE(Model::load_buffers(f.config, weights, f.vocab, f.merges).config().n_layer == 2);  // float32 takes it
  }
  // the largest finite F16 value and values that round to it are fine
  const std::vector<uint8_t> weights = edited(f.weights, [&](Parts& p) {
    const std::string t = p.header.contains("wte.weight") ? "wte.weight" : "transformer.wte.weight";
    const float ok[2] = {65504.0f, -65519.0f};
    std::memcpy(&p.data[p.header[t]["data_offsets"][0].get<uint64_t>()], ok, 8);
  });
  REQUIRE(Model::load_buffers(f.config, weights, f.vocab, f.merges, f16).weight_storage() ==
          headscope::WeightStorage::f16);
  REQUIRE_ERROR_CONTAINS(headscope::parse_weight_storage("f8"),
                         "weights must be \"f32\", \"f16\", \"q8\" or \"auto\", got \"f8\"");
  // auto: as the file stores its matrices (F16 and BF16 stay half precision), decided from the header
  headscope::LoadOptions automatic;
  automatic.weights = headscope::parse_weight_storage("auto");
  for (const auto& [file, want] : {std::pair{"model.safetensors", headscope::WeightStorage::f32},
                                   std::pair{"model-f16.safetensors", headscope::WeightStorage::f16},
                                   std::pair{"model-bf16.safetensors", headscope::WeightStorage::f16}}) {
    INFO(file);
    REQUIRE(test_util::load_fixture("odd-hs12", file, automatic).weight_storage() == want);
  }
}

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
TEST_CASE("the wasm module can grow past 2 GB, to wasm32's 4 GB", "[memory][wasm]") {
  // Built with -sMAXIMUM_MEMORY=4GB like the npm module: a checkpoint of gpt2-medium's shape needs
  // about 1.4 GB of weights next to its activations. Pointers above 2 GB must work (no sign bugs).
  REQUIRE(emscripten_get_heap_max() >= (4ull << 30) - (64u << 10));
  std::vector<std::vector<uint8_t>> blocks;
  for (int i = 0; i < 9; i++) blocks.emplace_back(256u << 20, (uint8_t)(i + 1));  // 2.25 GB
  REQUIRE((uintptr_t)blocks.back().data() > (2ull << 30));
  for (int i = 0; i < 9; i++) REQUIRE(blocks[i].back() == (uint8_t)(i + 1));
  // with more than 2 GB in use, the loader's memory check (malloc statistics, int fields) must still
  // see a small model fit rather than read a negative size as a huge one
  REQUIRE(Files().load().config().n_layer == 2);
}
#endif

TEST_CASE("hostile text: NUL bytes, right-to-left, combining marks, emoji, a megabyte", "[input][hostile]") {
  Model m = Files().load();  // odd-hs12: byte-level vocabulary, context 32
  for (const std::string& text :
       {std::string("a\0b\0", 4), std::string("\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d \xd8\xb9\xd8\xa7\xd9\x84\xd9\x85"),
        std::string("e\xcc\x81\xcc\x82\xcc\x83\xcc\x84"),
        std::string("\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 "
                    "\xf0\x9f\x87\xab\xf0\x9f\x87\xb7"),
        std::string("\xe2\x80\xae"
                    "reversed\xe2\x80\xac")}) {
    INFO("text bytes " << text.size());
    const auto info = m.run(text);
    REQUIRE(info.tokens == (int)std::min<std::size_t>(text.size(), 32));  // one token per byte here
    REQUIRE(m.tokens().back().byte_end == text.size());
    for (float x : m.logits_last()) REQUIRE(std::isfinite(x));
  }
  // a megabyte of pasted text: tokenized in full, the last 29 to 32 tokens kept (cut in steps of 32 / 8)
  std::string big;
  while (big.size() < (1u << 20)) big += "The chef, who trained in Paris, cooked the meal quickly. ";
  const auto info = m.run(big);
  REQUIRE(info.tokens + info.dropped_tokens == (int)big.size());
  REQUIRE(info.dropped_tokens % 4 == 0);
  REQUIRE(info.tokens <= 32);
  REQUIRE(info.tokens > 28);
  REQUIRE(info.first_byte == big.size() - info.tokens);
}
