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

// A number in (lo, hi), or `fallback` when absent.
double read_number(const json& j, const char* key, double lo, double hi, double fallback, const char* where = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw Error(std::string("config.json: ") + where + "\"" + key + "\" must be a number");
  const double v = it->get<double>();
  if (!(v > lo && v < hi))
    throw Error(std::string("config.json: ") + where + "\"" + key + "\" = " + it->dump() + " is outside (" +
                json(lo).dump() + ", " + json(hi).dump() + ")");
  return v;
}

// LlamaConfig's and Qwen3Config's keys (transformers' configuration_llama.py / configuration_qwen3.py,
// with their defaults where a key may be absent).
ModelConfig parse_llama(const json& j, const std::string& type) {
  ModelConfig c;
  c.family = Family::llama;
  c.model_type = type;
  c.vocab_size = read_int(j, "vocab_size", 1, kMaxVocab);
  c.n_embd = read_int(j, "hidden_size", 1, kMaxEmbd);
  c.n_inner = read_int(j, "intermediate_size", 1, 8 * kMaxEmbd);
  c.n_layer = read_int(j, "num_hidden_layers", 1, kMaxLayers);
  c.n_head = read_int(j, "num_attention_heads", 1, kMaxHeads);
  // Qwen3Config's num_key_value_heads defaults to 32, LlamaConfig's to num_attention_heads
  c.n_kv_head = read_int(j, "num_key_value_heads", 1, kMaxHeads, false, type == "qwen3" ? 32 : c.n_head);
  if (c.n_head % c.n_kv_head != 0)
    throw Error("config.json: num_attention_heads (" + std::to_string(c.n_head) +
                ") is not a multiple of num_key_value_heads (" + std::to_string(c.n_kv_head) + ")");
  // Qwen3Config's head_dim defaults to 128; LlamaConfig's to hidden_size / num_attention_heads
  if (type == "qwen3")
    c.head_dim = read_int(j, "head_dim", 2, 1024, false, 128);
  else if (j.contains("head_dim") && !j["head_dim"].is_null())
    c.head_dim = read_int(j, "head_dim", 2, 1024);
  else {
    if (c.n_embd % c.n_head != 0)
      throw Error("config.json: hidden_size (" + std::to_string(c.n_embd) +
                  ") is not divisible by num_attention_heads (" + std::to_string(c.n_head) +
                  ") and there is no head_dim");
    c.head_dim = c.n_embd / c.n_head;
  }
  if (c.head_dim % 2 != 0)
    throw Error("config.json: head_dim = " + std::to_string(c.head_dim) + " is odd; rotary positions rotate pairs");
  if ((int64_t)c.n_head * c.head_dim > 4 * kMaxEmbd)
    throw Error("config.json: num_attention_heads x head_dim = " + std::to_string((int64_t)c.n_head * c.head_dim) +
                " is too wide");
  c.max_position_embeddings = read_int(j, "max_position_embeddings", 1, 1 << 24);
  c.n_positions = std::min(c.max_position_embeddings, kLlamaContext);
  c.layer_norm_epsilon = (float)read_number(j, "rms_norm_eps", 0.0, 1.0, 1e-6);
  c.rope_theta = read_number(j, "rope_theta", 0.0, 1e12, 10000.0);
  c.tie_word_embeddings = read_bool(j, "tie_word_embeddings", false);
  c.qk_norm = type == "qwen3";
  c.activation = Activation::silu;
  c.activation_name = "silu";
  if (auto it = j.find("hidden_act"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw Error("config.json: \"hidden_act\" must be a string");
    c.activation_name = it->get<std::string>();
    if (c.activation_name != "silu")
      throw Error("config.json: hidden_act \"" + c.activation_name +
                  "\" is not supported (the Llama family's MLP is silu)");
  }
  if (read_bool(j, "attention_bias", false)) throw Error("config.json: attention_bias=true is not supported");
  if (read_bool(j, "mlp_bias", false)) throw Error("config.json: mlp_bias=true is not supported");
  if (read_bool(j, "use_sliding_window", false)) throw Error("config.json: use_sliding_window=true is not supported");
  if (read_number(j, "partial_rotary_factor", 0.0, 1.0 + 1e-9, 1.0) != 1.0)
    throw Error("config.json: partial_rotary_factor below 1 is not supported (every dimension rotates here)");
  // the rotary settings: rope_theta and rope_scaling at the top (transformers 4), or both inside
  // rope_parameters (newer files)
  const json* rope = nullptr;
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) throw Error("config.json: \"rope_scaling\" must be an object or null");
    rope = &*it;
  }
  if (auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) throw Error("config.json: \"rope_parameters\" must be an object or null");
    c.rope_theta = read_number(*it, "rope_theta", 0.0, 1e12, c.rope_theta, "rope_parameters ");
    if (!rope) rope = &*it;
  }
  if (rope) {
    const json& r = *rope;
    std::string kind;
    for (const char* key : {"rope_type", "type"})  // older files say "type"
      if (auto k = r.find(key); k != r.end() && k->is_string()) {
        kind = k->get<std::string>();
        break;
      }
    if (kind != "llama3" && kind != "default")
      throw Error("config.json: rope_scaling of type \"" + kind +
                  "\" is not supported (only \"llama3\", as Llama 3.1 and 3.2 ship it)");
    if (kind == "llama3") {
      RopeScaling& s = c.rope_scaling;
      s.llama3 = true;
      s.factor = read_number(r, "factor", 0.0, 1e6, -1, "rope_scaling ");
      if (s.factor >= 0 && s.factor < 1) throw Error("config.json: rope_scaling's factor must be at least 1");
      s.low_freq_factor = read_number(r, "low_freq_factor", 0.0, 1e6, -1, "rope_scaling ");
      s.high_freq_factor = read_number(r, "high_freq_factor", 0.0, 1e6, -1, "rope_scaling ");
      if (s.factor < 0 || s.low_freq_factor < 0 || s.high_freq_factor < 0)
        throw Error("config.json: rope_scaling of type llama3 needs factor, low_freq_factor and high_freq_factor");
      s.original_max_position_embeddings = read_int(r, "original_max_position_embeddings", 1, 1 << 24);
      if (!(s.high_freq_factor > s.low_freq_factor))
        throw Error("config.json: rope_scaling's high_freq_factor must be above its low_freq_factor");
    }
  }
  return c;
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
    if (type == "llama" || type == "qwen3") return parse_llama(j, type);
    // relatives whose computation differs: Qwen2's q/k/v biases, Mistral's sliding window, ...
    static constexpr const char* kRelatives[] = {"qwen2", "mistral", "smollm3", "gemma", "gemma2", "phi3"};
    const bool relative = std::find(std::begin(kRelatives), std::end(kRelatives), type) != std::end(kRelatives);
    if (type != "gpt2")
      throw Error("config.json: model_type \"" + type + "\" is not supported" +
                  (relative ? " yet (a relative of the Llama family whose layers differ)" : "") +
                  ": this engine runs GPT-2 (model_type \"gpt2\") and the Llama family (\"llama\", \"qwen3\")");
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
  c.n_kv_head = c.n_head;
  c.head_dim = c.n_embd / c.n_head;

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
    if (c.activation_name == "gelu_new" || c.activation_name == "gelu_pytorch_tanh" || c.activation_name == "gelu_fast")
      c.activation = Activation::gelu_tanh;  // all three are the tanh approximation
    else if (c.activation_name == "gelu")
      c.activation = Activation::gelu_erf;
    else
      throw Error("config.json: activation_function \"" + c.activation_name +
                  "\" is not supported (use gelu_new, gelu_pytorch_tanh or gelu)");
  }

  if (!read_bool(j, "scale_attn_weights", true)) throw Error("config.json: scale_attn_weights=false is not supported");
  if (read_bool(j, "scale_attn_by_inverse_layer_idx", false))
    throw Error("config.json: scale_attn_by_inverse_layer_idx=true is not supported");
  if (read_bool(j, "reorder_and_upcast_attn", false))
    throw Error("config.json: reorder_and_upcast_attn=true is not supported");
  return c;
}

}  // namespace headscope
