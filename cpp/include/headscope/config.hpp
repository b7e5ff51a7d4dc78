// ModelConfig: what headscope needs of a checkpoint's config.json, parsed and validated. Two
// families: GPT-2 (GPT2Config's keys) and the Llama family (LlamaConfig's and Qwen3Config's keys,
// model_type "llama" or "qwen3"), read into the same fields: n_embd is hidden_size, n_inner
// intermediate_size, n_head num_attention_heads, and so on.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace headscope {

// GPT-2: LayerNorm, learned positions, GELU MLP, biases, tied LM head.
// Llama family: RMSNorm, rotary positions, SwiGLU MLP, no biases, shared key/value heads.
enum class Family { gpt2, llama };

enum class Activation { gelu_tanh, gelu_erf, silu };

// Hugging Face's rope_scaling of type "llama3" (Llama 3.1/3.2): low frequencies divided by `factor`,
// high ones kept, a smooth blend between (modeling_rope_utils' _compute_llama3_parameters).
struct RopeScaling {
  bool llama3 = false;
  double factor = 1, low_freq_factor = 1, high_freq_factor = 4;
  int original_max_position_embeddings = 0;
};

struct ModelConfig {
  Family family = Family::gpt2;
  std::string model_type = "gpt2";
  int vocab_size = 0;
  int n_positions = 0;  // context length; "n_ctx" is accepted as a fallback (GPT-2)
  int n_embd = 0;       // C
  int n_layer = 0;      // L
  int n_head = 0;       // NH: query heads
  int n_kv_head = 0;    // KV: key/value heads; NH for GPT-2; query head h reads key/value head h / (NH / KV)
  int head_dim = 0;     // HS: the width of each head's query, key and value (C / NH unless config.json says)
  int n_inner = 0;      // MLP width; null/absent in a GPT-2 config.json means 4 * n_embd
  float layer_norm_epsilon = 1e-5f;  // LayerNorm's (GPT-2) or RMSNorm's (rms_norm_eps) epsilon
  Activation activation = Activation::gelu_tanh;
  std::string activation_name = "gelu_new";
  // the Llama family only:
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool qk_norm = false;             // Qwen3: an RMSNorm over each head's q and k before the rotation
  bool tie_word_embeddings = true;  // false: the LM head is lm_head.weight, not the embedding
  int max_position_embeddings = 0;  // as trained; n_positions is the engine's context, at most kLlamaContext
  // A config made by hand (the trainer's shapes) may leave n_kv_head and head_dim 0: GPT-2's then.
  int head_size() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int q_width() const { return n_head * head_size(); }                       // NH * HS
  int qkv_width() const { return (n_head + 2 * kv_heads()) * head_size(); }  // q | k | v per token
  int group_size() const { return n_head / kv_heads(); }                     // query heads per key/value head
  // The key/value cache a generated token adds, in float32: a key and a value of HS per key/value
  // head and layer (what grouped-query attention divides by group_size())
  uint64_t kv_cache_bytes_per_token() const { return 2ull * n_layer * kv_heads() * head_size() * sizeof(float); }
};

// The longest context a Llama-family model runs with here (its max_position_embeddings is often
// 131,072; Qwen3 is trained to 32,768). The model then lowers it at load to what its memory budget
// holds (MemoryUse), so longer texts keep their last tokens.
constexpr int kLlamaContext = 32768;

// Throws headscope::Error naming the key when a value is missing, of the wrong type, out of range,
// or inconsistent (n_embd not divisible by n_head for GPT-2, num_attention_heads not a multiple of
// num_key_value_heads); names an unsupported model_type; also rejects variants whose computation
// differs from the one implemented (GPT-2: scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn,
// no scaling; Llama: attention or MLP biases, other activations, rope_scaling types but llama3).
ModelConfig parse_config(std::string_view config_json);

}  // namespace headscope
