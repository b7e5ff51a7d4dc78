// The Llama family's checkpoints (LlamaForCausalLM: Llama 3, SmolLM2; Qwen3ForCausalLM, whose q_norm
// and k_norm tell it apart): the tensor table and the config.json a trained model is saved with.
// Linear layers are nn.Linear, [out, in], without biases (config.cpp refuses attention_bias and
// mlp_bias); q_proj, k_proj, v_proj are one packed layer, gate_proj and up_proj another. Positions are
// rotary (no table). Contracts in tensor_table.hpp.
#include <nlohmann/json.hpp>

#include "arch/tensor_table.hpp"

namespace headscope::arch {

// In an order that keeps q_proj, k_proj, v_proj (and gate_proj, up_proj) adjacent: in nn.Linear's
// [out, in] layout each run of consecutive parts is then one matrix with the outputs side by side,
// as the forward's packed q | k | v and gate | up read them.
TensorTable llama_tensor_table(const ModelConfig& c) {
  const int64_t V = c.vocab_size, C = c.n_embd, F = c.n_inner, HS = c.head_size();
  const int64_t QW = c.q_width(), KVW = (int64_t)c.kv_heads() * HS;
  TensorTable t;
  t.linear_out_in = true;
  auto& e = t.tensors;
  e.push_back({"model.embed_tokens.weight", {V, C}, Slot::embedding});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    e.push_back({p + "input_layernorm.weight", {C}, Slot::ln1_weight, l, 0, Init::ones});
    e.push_back({p + "self_attn.q_proj.weight", {QW, C}, Slot::qkv_weight, l, 0});
    e.push_back({p + "self_attn.k_proj.weight", {KVW, C}, Slot::qkv_weight, l, QW});
    e.push_back({p + "self_attn.v_proj.weight", {KVW, C}, Slot::qkv_weight, l, QW + KVW});
    e.push_back({p + "self_attn.o_proj.weight", {C, QW}, Slot::attn_proj_weight, l});
    if (c.qk_norm) {
      e.push_back({p + "self_attn.q_norm.weight", {HS}, Slot::q_norm, l, 0, Init::ones});
      e.push_back({p + "self_attn.k_norm.weight", {HS}, Slot::k_norm, l, 0, Init::ones});
    }
    e.push_back({p + "post_attention_layernorm.weight", {C}, Slot::ln2_weight, l, 0, Init::ones});
    e.push_back({p + "mlp.gate_proj.weight", {F, C}, Slot::fc_weight, l, 0});
    e.push_back({p + "mlp.up_proj.weight", {F, C}, Slot::fc_weight, l, F});
    e.push_back({p + "mlp.down_proj.weight", {C, F}, Slot::mlp_proj_weight, l});
  }
  e.push_back({"model.norm.weight", {C}, Slot::final_norm_weight, -1, 0, Init::ones});
  if (c.tie_word_embeddings)
    t.absent.push_back({"lm_head.weight", "config.json says tie_word_embeddings=true"});
  else
    e.push_back({"lm_head.weight", {V, C}, Slot::lm_head});
  return t;
}

std::string llama_config_json(const ModelConfig& c) {
  const bool qwen = c.qk_norm;  // Qwen3's q/k norms are what tells the two apart
  nlohmann::ordered_json rope = nullptr;
  if (c.rope_scaling.llama3)
    rope = {{"rope_type", "llama3"},
            {"factor", c.rope_scaling.factor},
            {"low_freq_factor", c.rope_scaling.low_freq_factor},
            {"high_freq_factor", c.rope_scaling.high_freq_factor},
            {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  nlohmann::ordered_json j = {
      {"architectures", {qwen ? "Qwen3ForCausalLM" : "LlamaForCausalLM"}},
      {"model_type", qwen ? "qwen3" : "llama"},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.n_embd},
      {"intermediate_size", c.n_inner},
      {"num_hidden_layers", c.n_layer},
      {"num_attention_heads", c.n_head},
      {"num_key_value_heads", c.kv_heads()},
      {"head_dim", c.head_size()},
      {"hidden_act", "silu"},
      {"max_position_embeddings", c.max_position_embeddings > 0 ? c.max_position_embeddings : c.n_positions},
      {"rms_norm_eps", c.layer_norm_epsilon},
      {"rope_theta", c.rope_theta},
      {"rope_scaling", rope},
      {"attention_bias", false},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"torch_dtype", "float32"}};
  if (!qwen)
    j["mlp_bias"] = false;
  else
    j["use_sliding_window"] = false;
  return j.dump(2) + "\n";
}

}  // namespace headscope::arch
