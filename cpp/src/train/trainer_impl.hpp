// Internal to cpp/src: what trainer.cpp (the parameters, their I/O and the optimizer) and
// trainer_passes.cpp (forward and backward) share: the weights packed for the forward's kernels.
#pragma once
#include <memory>
#include <vector>

#include "model/forward.hpp"
#include "model/model_impl.hpp"
#include "headscope/train.hpp"
#include "kernels/parallel.hpp"

namespace headscope::train {

struct Trainer::Packed {
  std::vector<BlockWeights> blocks;
  // or a Model's own (the borrowing constructor): its packed layers, embedding, norms and LM head
  const Model::Impl* model = nullptr;
  const std::vector<BlockWeights>& layers() const { return model ? model->blocks_ : blocks; }
  std::unique_ptr<kernels::ThreadPool> pool;  // the kernels' threads (set_threads)
  kernels::ThreadPool* borrowed = nullptr;    // or a model's (share_threads)
  kernels::ThreadPool* threads() const { return borrowed ? borrowed : pool.get(); }
  // the Llama family: its rotary frequencies, a matrix's transpose on its way into the packed layout
  // (when borrowing, of both families: a borrowed layer transposed for its input's gradient), and the
  // zero biases its packed layers carry (the forward reads a bias of every layer)
  std::vector<double> rope;
  std::vector<float> transposed, zeros;
  // a borrowed model's F16 LM head: rows widened for its forward (matmul_transposed_f16_forward) and
  // for its backward, a block of them with the matching columns of dlogits
  std::vector<float> head_rows, head_dlogits;
  // the borrowed model's LM head (V, C), as Model::Impl::lm_head reads it: its own matrix when untied,
  // else the embedding; float32 or F16 (the other null)
  struct Head {
    const float* f32;
    const uint16_t* f16;
  };
  Head head() const {
    const bool untied = !model->lm_head_.empty() || !model->lm_head_f16_.empty();
    const std::vector<float>& f32 = untied ? model->lm_head_ : model->wte_;
    const std::vector<uint16_t>& f16 = untied ? model->lm_head_f16_ : model->wte_f16_;
    return {f32.empty() ? nullptr : f32.data(), f16.empty() ? nullptr : f16.data()};
  }
};

// What the passes read besides the linear layers and the embeddings: the trainer's parameters at their
// offsets, or a borrowed model's vectors (null where the family has none)
struct Trainer::Reads {
  const float *wpe = nullptr, *lnfw = nullptr, *lnfb = nullptr;
  struct Block {
    const float *ln1w, *ln1b, *ln2w, *ln2b, *qnorm, *knorm;
  };
  std::vector<Block> blocks;
};

}  // namespace headscope::train
