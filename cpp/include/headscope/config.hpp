// ModelConfig: the GPT2Config keys headscope needs, parsed and validated from config.json.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace headscope {

enum class Activation { gelu_tanh, gelu_erf };

struct ModelConfig {
  int vocab_size = 0;
  int n_positions = 0;  // context length; "n_ctx" is accepted as a fallback
  int n_embd = 0;       // C
  int n_layer = 0;      // L
  int n_head = 0;       // NH
  int n_inner = 0;      // MLP width; null/absent in config.json means 4 * n_embd
  float layer_norm_epsilon = 1e-5f;
  Activation activation = Activation::gelu_tanh;
  std::string activation_name = "gelu_new";
  int head_size() const { return n_embd / n_head; }
};

// Throws headscope::Error naming the key when a value is missing, of the wrong type, out of range,
// or when n_embd is not divisible by n_head; also rejects GPT-2 variants whose attention differs
// from the one implemented (scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn, no scaling).
ModelConfig parse_config(std::string_view config_json);

}  // namespace headscope
