// GPT-2's checkpoints (GPT2Model, or GPT2LMHeadModel with its "transformer." prefix): the tensor table
// and the config.json a trained model is saved with. Linear layers are Conv1D, [in, out], with biases;
// the LM head is the token embedding. Contracts in tensor_table.hpp.
#include <nlohmann/json.hpp>

#include "arch/tensor_table.hpp"

namespace headscope::arch {

TensorTable gpt2_tensor_table(const ModelConfig& c) {
  const int64_t V = c.vocab_size, C = c.n_embd, F = c.n_inner > 0 ? c.n_inner : 4 * c.n_embd;
  TensorTable t;
  auto& e = t.tensors;
  e.push_back({"wte.weight", {V, C}, Slot::embedding});
  e.push_back({"wpe.weight", {c.n_positions, C}, Slot::positions, -1, 0, Init::positions});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string p = "h." + std::to_string(l) + ".";
    e.push_back({p + "ln_1.weight", {C}, Slot::ln1_weight, l, 0, Init::ones});
    e.push_back({p + "ln_1.bias", {C}, Slot::ln1_bias, l, 0, Init::zeros});
    e.push_back({p + "attn.c_attn.weight", {C, 3 * C}, Slot::qkv_weight, l});
    e.push_back({p + "attn.c_attn.bias", {3 * C}, Slot::qkv_bias, l, 0, Init::zeros});
    e.push_back({p + "attn.c_proj.weight", {C, C}, Slot::attn_proj_weight, l, 0, Init::residual_projection});
    e.push_back({p + "attn.c_proj.bias", {C}, Slot::attn_proj_bias, l, 0, Init::zeros});
    e.push_back({p + "ln_2.weight", {C}, Slot::ln2_weight, l, 0, Init::ones});
    e.push_back({p + "ln_2.bias", {C}, Slot::ln2_bias, l, 0, Init::zeros});
    e.push_back({p + "mlp.c_fc.weight", {C, F}, Slot::fc_weight, l});
    e.push_back({p + "mlp.c_fc.bias", {F}, Slot::fc_bias, l, 0, Init::zeros});
    e.push_back({p + "mlp.c_proj.weight", {F, C}, Slot::mlp_proj_weight, l, 0, Init::residual_projection});
    e.push_back({p + "mlp.c_proj.bias", {C}, Slot::mlp_proj_bias, l, 0, Init::zeros});
  }
  e.push_back({"ln_f.weight", {C}, Slot::final_norm_weight, -1, 0, Init::ones});
  e.push_back({"ln_f.bias", {C}, Slot::final_norm_bias, -1, 0, Init::zeros});
  return t;
}

// Hugging Face GPT-2 checkpoints name tensors "h.0.attn.c_attn.weight" (GPT2Model) or
// "transformer.h.0..." (GPT2LMHeadModel); both are accepted.
std::string gpt2_checkpoint_prefix(const SafeTensors& st) {
  return !st.contains("wte.weight") && st.contains("transformer.wte.weight") ? "transformer." : "";
}

std::string gpt2_config_json(const ModelConfig& c) {
  nlohmann::ordered_json j = {{"architectures", {"GPT2LMHeadModel"}},
                              {"model_type", "gpt2"},
                              {"vocab_size", c.vocab_size},
                              {"n_positions", c.n_positions},
                              {"n_ctx", c.n_positions},
                              {"n_embd", c.n_embd},
                              {"n_layer", c.n_layer},
                              {"n_head", c.n_head},
                              {"n_inner", c.n_inner > 0 ? c.n_inner : 4 * c.n_embd},
                              {"layer_norm_epsilon", c.layer_norm_epsilon},
                              {"activation_function", c.activation == Activation::gelu_tanh ? "gelu_new" : "gelu"},
                              {"bos_token_id", 0},
                              {"eos_token_id", 0}};
  return j.dump(2) + "\n";
}

// ---- the dispatch over the families ---------------------------------------------------------------
TensorTable tensor_table(const ModelConfig& c) {
  return c.family == Family::llama ? llama_tensor_table(c) : gpt2_tensor_table(c);
}
std::string checkpoint_prefix(const ModelConfig& c, const SafeTensors& st) {
  return c.family == Family::llama ? std::string() : gpt2_checkpoint_prefix(st);
}
std::string config_json(const ModelConfig& c) {
  return c.family == Family::llama ? llama_config_json(c) : gpt2_config_json(c);
}

}  // namespace headscope::arch
