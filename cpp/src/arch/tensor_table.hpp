// Internal to cpp/src: what a model family's checkpoint holds, in one table per family. The table
// names every tensor of a Hugging Face checkpoint (the only place in cpp/src that spells them),
// its shape, what it is to the engine (its Slot) and how a fresh model initializes it. The loader
// (model/model_load.cpp) reads a checkpoint through it; the trainer (train/trainer.cpp) lays out its
// flat parameters, imports a loaded model and exports safetensors through it. A new family adds one
// file here (gpt2.cpp, llama.cpp are the two), and config.cpp's keys for its config.json.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "headscope/config.hpp"
#include "headscope/safetensors.hpp"

namespace headscope::arch {

// What a tensor is to the engine. The packed linear layers (forward.hpp's BlockWeights) are
// qkv (q | k | v outputs side by side), attn_proj (W_O), fc (the MLP's first layer; the Llama family's
// gate | up) and mlp_proj; a family that stores one of them as several tensors lists each as a part
// with its first output column.
enum class Slot {
  embedding,
  positions,
  lm_head,
  final_norm_weight,
  final_norm_bias,  // the model's
  ln1_weight,
  ln1_bias,
  ln2_weight,
  ln2_bias,
  q_norm,
  k_norm,  // a block's vectors
  qkv_weight,
  qkv_bias,
  attn_proj_weight,
  attn_proj_bias,
  fc_weight,
  fc_bias,
  mlp_proj_weight,
  mlp_proj_bias,
};

// A fresh model's values (each family's _init_weights in transformers, and GPT-2's scaled residual
// projections as in its paper)
enum class Init { normal, residual_projection, positions, ones, zeros };

struct TensorEntry {
  std::string name;            // as in the checkpoint (without GPT2LMHeadModel's "transformer." prefix)
  std::vector<int64_t> shape;  // as in the checkpoint
  Slot slot;
  int layer = -1;      // the block it belongs to; -1 for the model's own tensors
  int64_t column = 0;  // for a part of a packed linear layer: its first output column there
  Init init = Init::normal;
};

struct TensorTable {
  // In the order the trainer lays the parameters out and exports them; the parts of one packed layer
  // are adjacent and in column order, so in nn.Linear's layout they are one matrix.
  std::vector<TensorEntry> tensors;
  // The linear layers' weights are nn.Linear's [out, in] (the Llama family), to transpose into the
  // kernels' [in, out]; otherwise they are Conv1D's [in, out] already (GPT-2).
  bool linear_out_in = false;
  // Tensors the checkpoint must not hold, with the reason (a tied model's separate LM head)
  std::vector<std::pair<std::string, std::string>> absent;
};

// The table of c's family
TensorTable tensor_table(const ModelConfig& c);
// The prefix of every tensor name in st ("transformer." in GPT2LMHeadModel's files, else "")
std::string checkpoint_prefix(const ModelConfig& c, const SafeTensors& st);
// The config.json a model of shape c is saved with (the trainer's export)
std::string config_json(const ModelConfig& c);

// The families' own (gpt2.cpp, llama.cpp)
TensorTable gpt2_tensor_table(const ModelConfig& c);
std::string gpt2_checkpoint_prefix(const SafeTensors& st);
std::string gpt2_config_json(const ModelConfig& c);
TensorTable llama_tensor_table(const ModelConfig& c);
std::string llama_config_json(const ModelConfig& c);

inline bool is_block_vector(Slot s) { return s >= Slot::ln1_weight && s <= Slot::k_norm; }
inline bool is_linear(Slot s) { return s >= Slot::qkv_weight; }
inline bool is_bias(Slot s) {
  return s == Slot::qkv_bias || s == Slot::attn_proj_bias || s == Slot::fc_bias || s == Slot::mlp_proj_bias;
}
// The packed layer a linear weight or bias belongs to, as its weight's slot
inline Slot linear_of(Slot s) { return is_bias(s) ? Slot((int)s - 1) : s; }

}  // namespace headscope::arch
