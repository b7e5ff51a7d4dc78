// Internal to cpp/src: the one forward pass of a block (GPT-2's or the Llama family's), run by the Model (one sequence,
// rows [t_begin, T) on top of its key/value cache) and by the Trainer (a batch of B sequences from position 0, keeping
// every activation its backward needs). Both call the same kernels in the same order, so every checkpoint the model
// runs can be trained further, and an op exists once. Legend: B sequences, T tokens, n rows computed (T - t_begin for
// one sequence, B*T for a batch), C n_embd, NH query heads, KV key/value heads, HS head size, QW = NH*HS the heads'
// outputs side by side (C for GPT-2), W = (NH + 2 KV) HS a token's q | k | v (3C for GPT-2), F n_inner; `stride` rows
// per sequence in the per-sequence buffers.
#pragma once
#include <cstdint>
#include <vector>

#include "headscope/config.hpp"
#include "kernels/kernels.hpp"

namespace headscope {

// The weights of one block, packed for the kernels. The Llama family's have no biases (the packed
// layers' are 0, the norms' empty); their mlp_in is the gate and up projections side by side (arch/llama.cpp).
struct BlockWeights {
  std::vector<float> norm1_weight, norm1_bias;  // (C): LayerNorm 1, or the RMSNorm before attention (no bias)
  kernels::PackedLinear attn_in;                // (C, W) -> q | k | v
  kernels::PackedLinear attn_out;               // (QW, C)  W_O, rows h*HS..(h+1)*HS belong to query head h
  std::vector<float> norm2_weight, norm2_bias;  // (C): LayerNorm 2, or the RMSNorm before the MLP
  kernels::PackedLinear mlp_in;                 // (C, F) GPT-2; (C, 2F) [gate | up] Llama
  kernels::PackedLinear mlp_out;                // (F, C)
  std::vector<float> q_norm, k_norm;            // (HS) Qwen3's RMSNorm of each head's q and k; else empty
};

// One head's output taken from another run, at rows [begin, end)
struct ZPatch {
  const float* z = nullptr;  // (rows, QW) that run's head outputs of the layer, row t at t * QW
  int head = -1, begin = 0, end = 0;
};

// Where one block reads and writes. Row pointers (n rows) point at the first computed row; the
// per-sequence buffers (qkv, head_out, att, contrib, norms) at the sequence's row 0, because
// attention reads the cached rows below t_begin. Several outputs may share storage where the caller
// keeps no copy: the model passes one residual buffer as res_mid and res_out, one LayerNorm buffer
// as ln1 and ln2, and one buffer as fc_pre and fc_act (GELU in place).
struct BlockBuffers {
  const float* x = nullptr;   // (n, C) residual stream entering the block
  float* ln1 = nullptr;       // (n, C) LayerNorm 1
  float* ln1_mean = nullptr;  // (n) or null; with ln1_rstd, what LayerNorm's backward needs
  float* ln1_rstd = nullptr;  // (n) or null
  float* qkv = nullptr;       // (B, stride, W): q | k | v (Llama: after q/k norm and rotation); rows
                              // below t_begin are the key/value cache
  float* qkv_raw = nullptr;   // Qwen3 only, or null: (B, stride, W) q | k | v before the q/k norms
  float* qk_rstd = nullptr;   // Qwen3 only, or null: (B, stride, NH + KV) each head's q/k norm's rstd
                              // (the two are what the trainer's backward of those norms reads)
  float* att = nullptr;       // (B, NH, stride, stride) attention probabilities, row = query; with
                              // att_block, one sequence's (NH, att_block, stride): no map kept
  int att_block = 0;          // 0, or kernels::attention_block_rows() (one sequence, not packed)
  const kernels::AttentionPool* pool = nullptr;  // one sequence: every head's thumbnail, raised by each row computed
  const kernels::AttentionRowStats* row_stats = nullptr;  // one sequence: each row's role statistics
  float* key_panels = nullptr;  // kernels::attention_key_panels_floats(stride, shape): the attention kernel's key cache
  float* head_out = nullptr;    // (B, stride, QW) every head's output, concatenated (a switched-off head's is 0)
  float* head_proj = nullptr;   // (n, C) scratch: one head's output through its rows of W_O
  float* attn_proj = nullptr;   // (n, C) the attention layer's output: W_O's bias plus every head's write
  float* res_mid = nullptr;     // (n, C) x + attn_proj
  float* ln2 = nullptr;         // (n, C) LayerNorm 2
  float* ln2_mean = nullptr;    // (n) or null
  float* ln2_rstd = nullptr;    // (n) or null
  float* fc_pre = nullptr;      // (n, F) before the GELU; Llama (n, 2F): gate | up
  float* fc_act = nullptr;      // (n, F) after it (may be fc_pre for GPT-2, not for Llama)
  const double* rope_inv_freq = nullptr;  // (HS/2) Llama: the rotary frequencies (kernels::rope_forward)
  float* mlp_out = nullptr;               // (n, C) the MLP's output (may be attn_proj: it is read before)
  float* res_out = nullptr;               // (n, C) res_mid + mlp_out (may be res_mid)
  // optional, one sequence only (the model's views):
  const uint8_t* ablate = nullptr;  // (NH) 1 = head switched off, or null
  float* contrib = nullptr;      // (NH, stride, C) each head's write through W_O, or null (then head_proj is scratch)
  float* norms = nullptr;        // (NH, stride) L2 norm of each head's write per row, or null
  const float* gates = nullptr;  // (NH) or null: head h's write through W_O is scaled by gates[h] (the
                                 // trainer's head gates; 0 skips it, but unlike ablate keeps its output)
  // activation patching (analysis/patching.cpp): patches, or null: sequence s's head patches[s].head
  // output at rows [begin, end) is replaced by patches[s].z's rows (stride, QW: another run's head
  // outputs) before W_O reads it (patches[s].z null: none)
  const ZPatch* patches = nullptr;
  // Packed sequences (B >= 1, analysis/patching.cpp): sequence s computes rows [seq_begin[s], T) on top
  // of the rows below in its own qkv, head_out and key_panels (at s * stride rows, s *
  // attention_key_panels_floats(stride) floats); the row buffers (x, ln, proj, fc, res) hold those
  // rows one sequence after another; att is one sequence's scratch, shared; contrib and norms null.
  // Each row is computed as a single sequence's run computes it, bit for bit.
  const int* seq_begin = nullptr;
  float* rows_scratch = nullptr;  // packed only: (rows, max(W, QW)) the q | k | v rows, then the heads' rows
  bool attention_ready = false;   // packed only: head_out's rows already hold the attention's output
  bool last_rows_only = false;    // packed only: after the attention only each sequence's row T-1 goes on
                                  // (x's last rows are gathered into res_mid; res_out holds B rows)
};

// The Llama family's rotary frequencies (HS/2), in double: theta^(-2i/HS), rescaled when the config
// has llama3's rope_scaling (transformers' modeling_rope_utils). The model and the trainer rotate by them.
std::vector<double> rope_frequencies(const ModelConfig& c);

// Rows [t_begin, T) of B sequences through one block. B > 1 requires t_begin == 0 and stride == T,
// so that the rows of every sequence are contiguous for the linear layers, unless the sequences are
// packed (BlockBuffers::seq_begin; t_begin is then ignored).
void block_forward(const ModelConfig& c, const BlockWeights& w, const BlockBuffers& b, int B, int t_begin, int T,
                   int stride) noexcept;

}  // namespace headscope
