// Training: a Trainer that owns its parameters, gradients, optimizer state and activations
// (llm.c's train_gpt2.c layout), and its optimizer settings. Its kernels are the engine's kernel
// library (cpp/src/kernels/); it reads weights with the same loaders and writes Hugging Face folders,
// GPT-2's or the Llama family's (Llama, Qwen3: grouped-query attention, rotary positions, SwiGLU).
// Legend: B batch, T tokens, N = B*T rows, C n_embd, NH (query) heads, KV key/value heads, HS head
// size, QW = NH HS, W = (NH + 2 KV) HS, F the MLP's width, V vocabulary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "headscope/config.hpp"

namespace headscope {
class SafeTensors;
class Model;
}  // namespace headscope

namespace headscope::train {

// ---- optimizers --------------------------------------------------------------------------------------
struct AdamW {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  float clip = 0.0f;  // > 0: scale gradients by clip / (norm + 1e-6) when their global norm exceeds clip
};

// ---- the trainer --------------------------------------------------------------------------------------
struct NamedTensor {
  std::string name;  // Hugging Face name: GPT-2's without "transformer." ("h.0.attn.attn_in.weight",
                     // Conv1D [in, out]) or the Llama family's ("model.layers.0.self_attn.q_proj.weight",
                     // nn.Linear [out, in])
  std::vector<int64_t> shape;
  std::size_t offset = 0;  // into the flat parameter (and gradient) array
  std::size_t size() const;
};

class Trainer {
 public:
  // Allocates parameters, gradients, optimizer state and activations for batches up to (B, T).
  // Throws headscope::Error when a size is out of range or the buffers would exceed max_bytes.
  // optimizer_state false: no AdamW moments, and no weight gradients until a backward asks for them
  // (a quarter of the parameter memory), for the gates' and activations' gradients of a copy of the
  // weights that may then change; adamw_step() then throws. (The analyses borrow a model's weights:
  // the constructor below.)
  Trainer(const ModelConfig& config, int B, int T, std::size_t max_bytes = std::size_t(1) << 31,
          bool optimizer_state = true);
  // A trainer that reads a loaded Model's own weights where the model holds them (its packed layers in
  // any storage, its embedding, norms and LM head) and runs on the model's threads: activations and
  // their gradients only, no parameters of its own (params() is empty), no weight gradients, no steps,
  // no load. For an analysis's gradients (attribution patching) at any size the model opens, where a
  // float32 copy of the weights would double the memory. The model must outlive it and keep its
  // weights. Its forward is the model's own in every storage: W_O head by head, as Model::run takes it
  // (8-bit: inputs quantized per row); the backward goes through the weights as unpack_linear gives
  // them (8-bit: dequantized), as a trainer that load()ed the model does. Against such a trainer with
  // some head gate not 1 (both then take W_O head by head) its passes are the same bits in float32; an
  // F16 LM head's backward sums the vocabulary in blocks, the same terms in another order.
  Trainer(const Model& model, int B, int T, std::size_t max_bytes = std::size_t(1) << 31);
  bool borrowing() const;
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;
  ~Trainer();

  const ModelConfig& config() const { return config_; }
  // Threads the kernels split forward and backward over (one per core at construction; 0 = one per
  // core; at most kMaxThreads). Every result is bit-identical for every count.
  void set_threads(int threads);
  // Runs on `model`'s threads instead (its pool, which must outlive this trainer's steps): for a
  // trainer whose steps alternate with the model's runs, as the head measurement's do. In the
  // threaded wasm build a second pool of the same size could not start: the model holds the workers.
  void share_threads(const Model& model);
  int threads() const;
  int max_batch() const { return B_; }
  int max_seq() const { return T_; }
  std::size_t bytes() const;

  // GPT-2's initialisation (normal 0.02, residual projections 0.02/sqrt(2L), LayerNorm 1 and 0); the
  // Llama family's as transformers' (every matrix normal 0.02, every norm's gain 1).
  void init_random(uint64_t seed);
  // Every parameter from a checkpoint, names with or without "transformer." (GPT-2); F32/F16/BF16. A
  // tied Llama-family checkpoint's lm_head.weight, if any, is ignored (as transformers ties it).
  void load(const SafeTensors& weights);
  // Every parameter from a loaded Model of the same config (its packed weights unpacked; F16 widened).
  void load(const Model& model);

  // Head gates (L*NH, row-major by layer; 1 at construction): head h's output is multiplied by its
  // gate before W_O. A gate of 0 switches the head off as RunOptions::ablate does.
  void set_head_gates(std::span<const float> gates);
  // d(mean loss)/d(gate) of every head from the last backward() (L*NH): the Michel et al. importance
  std::span<const float> head_gate_grads() const { return gate_grads_; }

  // The model's forward pass (the same code as Model::run) on ids (B,T) with targets (B,T), keeping
  // every activation; returns the mean cross-entropy. Ids are checked. Both GELU forms train.
  float forward(const int* ids, const int* targets, int B, int T);
  void zero_grad();
  // Gradients of the last forward's mean loss, accumulated into grads(). With Gradients::gates only the
  // head gates' (head_gate_grads()) are computed: no weight's, for about half the backward's work, and
  // grads() is then left unspecified (zero_grad() before the next training step's backward).
  enum class Gradients { all, gates };
  void backward(Gradients which = Gradients::all);
  // The same for another function of the last forward's logits: dlogits (B, T, V) is its gradient
  // with respect to them (activation patching seeds the logit difference at the last position).
  void backward_from_logits(std::span<const float> dlogits, Gradients which = Gradients::gates);
  // After a backward: the gradient with respect to each head's output before W_O at `layer`,
  // (B, T, QW) with query head h at columns [h*HS, (h+1)*HS) (its gate applied after it)
  std::span<const float> head_outputs_grad(int layer) const;
  double grad_norm() const;
  void sgd_step(float lr);
  void adamw_step(const AdamW& hp);
  int steps_taken() const { return adam_t_; }

  const std::vector<NamedTensor>& tensors() const { return tensors_; }
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  std::span<float> grads() {
    ensure_grads();
    return grads_;
  }
  std::span<const float> grads() const { return grads_; }
  const float* logits() const { return logits_.data(); }  // (B,T,V) of the last forward
  // attention probabilities of one layer in the last forward: (B, NH, T, T), row = query
  std::span<const float> attention(int layer) const;

  // model.safetensors (F32, GPT2LMHeadModel's or LlamaForCausalLM's names) and config.json contents of
  // the current weights
  std::vector<uint8_t> safetensors_bytes() const;
  std::string config_json() const;

 private:
  struct Layer {  // offsets into the flat arrays (the Llama family: no biases; qkvw is q_proj, with
                  // k_proj and v_proj right after it, so the three are one (W, C) matrix; fcw is gate_proj
                  // with up_proj after it, one (2F, C) matrix; qnorm, knorm Qwen3's)
    std::size_t ln1w = 0, ln1b = 0, qkvw = 0, qkvb = 0, attprojw = 0, attprojb = 0, ln2w = 0, ln2b = 0, fcw = 0,
                fcb = 0, fcprojw = 0, fcprojb = 0, qnorm = 0, knorm = 0;
  };
  struct LayerActs {
    std::vector<float> ln1, ln1_mean, ln1_rstd, qkv, att, atty, attproj, res2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu,
        fcproj, res3, qkv_raw, qk_rstd;
  };
  bool llama() const { return config_.family == Family::llama; }
  std::size_t add_tensor(const std::string& name, std::vector<int64_t> shape);
  void layout();        // the parameters in the family's tensor table (cpp/src/arch/)
  void pack_weights();  // the current parameters into the kernels' packed layout (packed_)
  // the attention output's backward through W_O and the head gates of layer l (both families)
  void output_projection_backward(int l, bool weights);
  void backward_seeded(Gradients which, std::span<const float> dlogits);  // dlogits empty: the mean loss's
  // which arrays the trainer owns: parameters, gradients and moments; no moments; or none (borrowing)
  enum class Owns { everything, no_moments, nothing };
  Trainer(const ModelConfig& config, int B, int T, std::size_t max_bytes, Owns owns);
  // what the passes read besides the linear layers, from the parameters or a borrowed model (passes.cpp)
  struct Reads;
  Reads reads() const;
  void embed(int N, int T, const float* wpe);  // encoded_ <- the rows' token (and GPT-2's position) embeddings
  void head_forward(int N);                    // logits_ <- lnf_ through the LM head
  void head_backward(int N, bool weights);     // dlnf_ (and the head's weight gradient) += from dlogits_
  enum class Linear { attn_in, attn_out, mlp_in, mlp_out };
  // dinp += dout @ W^T through layer l's linear layer, and its weight's and bias's gradients with weights
  void linear_backward(int l, Linear which, float* dinp, const float* dout, const float* inp, int N, bool weights);
  void require_own_parameters(const char* what) const;

  ModelConfig config_;
  int B_, T_;
  int cur_B_ = 0, cur_T_ = 0;
  std::vector<NamedTensor> tensors_;
  std::size_t wte_ = 0, wpe_ = 0, lnfw_ = 0, lnfb_ = 0;
  std::size_t head_ = 0;  // the LM head's (V, C): wte_, or an untied lm_head.weight
  std::vector<Layer> layers_;
  std::vector<float> params_, grads_, adam_m_, adam_v_;
  std::vector<float> norm_grads_discarded_;  // (C) the norms' weight gradients of a backward without weights'
  void ensure_grads();                       // grads_ allocated (zero) if they are not yet
  int adam_t_ = 0;
  // activations of the last forward and their gradients (same shapes)
  std::vector<int> ids_, targets_;
  std::vector<float> encoded_, lnf_, lnf_mean_, lnf_rstd_, logits_, probs_, losses_;
  std::vector<LayerActs> acts_, dacts_;
  std::vector<float> dencoded_, dlnf_, dlogits_, scratch_, head_proj_, key_panels_;
  std::vector<float> gates_, gate_grads_;        // (L*NH)
  bool gated_ = false;                           // some gate is not 1
  std::vector<float> gated_atty_, dgated_atty_;  // (N, QW) scratch of the gated backward
  struct Packed;  // the layers' weights as the forward's kernels read them (trainer_impl.hpp)
  std::unique_ptr<Packed> packed_;
};

}  // namespace headscope::train
