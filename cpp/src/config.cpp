#include "headscope/config.hpp"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "headscope/error.hpp"

namespace headscope {
namespace {

using json = nlohmann::json;

// Bounds: generous for every published GPT-2-family checkpoint (gpt2-xl: 1600 wide, 48 layers,
// 25 heads, 50257 tokens, 1024 positions), small enough that a hostile config cannot make the
// engine size buffers from absurd numbers.
constexpr int64_t kMaxVocab = 1 << 20;
constexpr int64_t kMaxPositions = 1 << 16;
constexpr int64_t kMaxEmbd = 1 << 14;
constexpr int64_t kMaxLayers = 256;
constexpr int64_t kMaxHeads = 1024;

int read_int(const json& j, const char* key, int64_t lo, int64_t hi, bool required = true, int fallback = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw Error(std::string("config.json: missing key \"") + key + "\"");
    return fallback;
  }
  if (!it->is_number_integer())
    throw Error(std::string("config.json: \"") + key + "\" must be an integer, got " + it->dump());
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi)
    throw Error(std::string("config.json: \"") + key + "\" = " + std::to_string(v) + " is outside [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

bool read_bool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw Error(std::string("config.json: \"") + key + "\" must be true or false");
  return it->get<bool>();
}

}  // namespace

ModelConfig parse_config(std::string_view config_json) {
  json j;
  try {
    j = json::parse(config_json.begin(), config_json.end());
  } catch (const json::exception& e) {
    throw Error(std::string("config.json: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error("config.json: expected a JSON object");
  // the model's family first: another family's config lacks GPT-2's keys, and "missing n_embd"
  // would not say what is wrong
  if (auto it = j.find("model_type"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw Error("config.json: \"model_type\" must be a string");
    const std::string type = it->get<std::string>();
    static constexpr const char* kLlamaFamily[] = {"llama", "qwen2", "qwen3", "mistral", "smollm3"};
    const bool llama = std::find(std::begin(kLlamaFamily), std::end(kLlamaFamily), type) != std::end(kLlamaFamily);
    if (type != "gpt2")
      throw Error("config.json: model_type \"" + type + "\" is not supported" +
                  (llama ? " yet (the Llama family: RMSNorm, rotary positions, shared key/value heads)" : "") +
                  ": this engine runs GPT-2 models (model_type \"gpt2\")");
  }

  ModelConfig c;
  c.vocab_size = read_int(j, "vocab_size", 1, kMaxVocab);
  if (j.contains("n_positions") && !j["n_positions"].is_null())
    c.n_positions = read_int(j, "n_positions", 1, kMaxPositions);
  else
    c.n_positions = read_int(j, "n_ctx", 1, kMaxPositions);  // older configs
  c.n_embd = read_int(j, "n_embd", 1, kMaxEmbd);
  c.n_layer = read_int(j, "n_layer", 1, kMaxLayers);
  c.n_head = read_int(j, "n_head", 1, kMaxHeads);
  c.n_inner = read_int(j, "n_inner", 1, 4 * kMaxEmbd, false, 4 * c.n_embd);
  if (c.n_embd % c.n_head != 0)
    throw Error("config.json: n_embd (" + std::to_string(c.n_embd) + ") is not divisible by n_head (" +
                std::to_string(c.n_head) + ")");

  if (auto it = j.find("layer_norm_epsilon"); it != j.end() && !it->is_null()) {
    if (!it->is_number()) throw Error("config.json: \"layer_norm_epsilon\" must be a number");
    const double eps = it->get<double>();
    if (!(eps > 0.0 && eps < 1.0))
      throw Error("config.json: \"layer_norm_epsilon\" = " + it->dump() + " must be in (0, 1)");
    c.layer_norm_epsilon = static_cast<float>(eps);
  }

  if (auto it = j.find("activation_function"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw Error("config.json: \"activation_function\" must be a string");
    c.activation_name = it->get<std::string>();
    if (c.activation_name == "gelu_new" || c.activation_name == "gelu_pytorch_tanh" ||
        c.activation_name == "gelu_fast")
      c.activation = Activation::gelu_tanh;  // all three are the tanh approximation
    else if (c.activation_name == "gelu")
      c.activation = Activation::gelu_erf;
    else
      throw Error("config.json: activation_function \"" + c.activation_name +
                  "\" is not supported (use gelu_new, gelu_pytorch_tanh or gelu)");
  }

  if (!read_bool(j, "scale_attn_weights", true))
    throw Error("config.json: scale_attn_weights=false is not supported");
  if (read_bool(j, "scale_attn_by_inverse_layer_idx", false))
    throw Error("config.json: scale_attn_by_inverse_layer_idx=true is not supported");
  if (read_bool(j, "reorder_and_upcast_attn", false))
    throw Error("config.json: reorder_and_upcast_attn=true is not supported");
  return c;
}

}  // namespace headscope
