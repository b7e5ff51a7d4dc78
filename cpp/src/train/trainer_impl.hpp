// Internal to cpp/src: what trainer.cpp (the parameters, their I/O and the optimizer) and
// trainer_passes.cpp (forward and backward) share: the weights packed for the forward's kernels.
#pragma once
#include <memory>
#include <vector>

#include "model/forward.hpp"
#include "headscope/train.hpp"
#include "kernels/parallel.hpp"

namespace headscope::train {

struct Trainer::Packed {
  std::vector<BlockWeights> blocks;
  // or a Model's packed layers, equal to the parameters (borrow_weights): the forward reads them
  const std::vector<BlockWeights>* model_blocks = nullptr;
  const std::vector<BlockWeights>& layers() const { return model_blocks ? *model_blocks : blocks; }
  std::unique_ptr<kernels::ThreadPool> pool;  // the kernels' threads (set_threads)
  kernels::ThreadPool* borrowed = nullptr;    // or a model's (share_threads)
  kernels::ThreadPool* threads() const { return borrowed ? borrowed : pool.get(); }
  // the Llama family: its rotary frequencies, a matrix's transpose on its way into the packed layout,
  // and the zero biases its packed layers carry (the forward reads a bias of every layer)
  std::vector<double> rope;
  std::vector<float> transposed, zeros;
};

}  // namespace headscope::train
