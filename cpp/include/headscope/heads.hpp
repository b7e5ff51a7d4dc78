// How much each head matters to a text, and how many heads a model can lose (`headscope heads`).
//
// For a text of T tokens the loss is the mean next-token cross-entropy over its T - 1 predictions
// (the lab's loss). A gate xi_h multiplies head h's output before W_O; xi_h = 0 is RunOptions::ablate.
//   gate_grad       dL / dxi_h at xi = 1 (Michel et al. 2019), from one forward and one backward of the
//                   training engine on the model's weights
//   ablation_delta  L(head h alone off) - L, measured
//   order, pruned_loss   heads switched off one at a time in `order`; pruned_loss[k] is the loss with the
//                   first k off (L*NH + 1 values, pruned_loss[0] = loss)
//   random_*        the same curve for N seeded random orders: mean, lowest and highest at each k
// The order is greedy by measured loss: at each step the head whose removal raises the loss least.
// Up to `exact_limit` heads every remaining head is tried at every step (exact); above it the
// candidates are ranked by the gate gradients recomputed with the heads removed so far (the
// first-order change of removing h is -dL/dxi_h) and the best `exact_candidates` of them are measured.
// Why measure, and why these defaults (2026-12-01, headscope-base's heldout.txt forced into this mode
// with exact_limit 0): half the heads removed in the exact order cost +0.032 nats; with 4 candidates
// measured per step +0.047 (gradients after every head) or +0.037 (every 4 heads); with 2 candidates
// +0.072; by the recomputed gradients alone (1 candidate) +0.231; random orders +0.350 on average.
// On heads-8 the exact order and 4 candidates (gradients every head or every 4) all cost +0.043,
// random +0.328. A gradient costs about five runs, so recomputing it every 4 heads makes GPT-2
// small's search about twice as fast at the same quality. The first-order estimate alone misses what
// heads do together (L0H7's gradient predicts a gain where removing it costs 0.67 nats on the
// article's sentence).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "headscope/model.hpp"

namespace headscope {

struct HeadsOptions {
  int random_orders = 8;     // N random orders for the band (0: none)
  uint64_t seed = 0;         // of the random orders (std::mt19937_64, Fisher-Yates from the last index)
  int exact_limit = 64;      // at most this many heads: exact greedy
  int exact_candidates = 4;  // above it: candidates measured per step
  int gradient_every = 4;    // above it: gate gradients recomputed every this many heads removed
  // called with the fraction done (0..1); returning false stops the measurement with Error("cancelled")
  std::function<bool(double)> progress;
};

struct HeadsReport {
  int n_layer = 0, n_head = 0, tokens = 0;
  std::string method;  // "greedy, exact" or "greedy, gate gradients (every K heads) + N measured per step"
  double loss = 0;
  std::vector<double> gate_grad;                          // (L*NH), row-major by layer
  std::vector<double> ablation_delta;                     // (L*NH)
  std::vector<HeadRef> order;                             // every head once
  std::vector<double> pruned_loss;                        // (L*NH + 1)
  std::vector<double> random_mean, random_lo, random_hi;  // (L*NH + 1) each, empty without random orders
};

// The measurement in steps, for a caller that must stay responsive (a Web Worker that reads a cancel
// between steps): each step() does at most `max_runs` model runs (a gradient counts as 3) and
// returns true when the report is complete. The model may run other texts between steps: every run
// here is a full run of `ids` with its heads off. Holds a training engine on the model's weights for
// the gradients (about twice the model's weights in memory) until it is destroyed.
class HeadsMeasurement {
 public:
  // ids: 2 <= size <= n_positions; throws Error otherwise
  HeadsMeasurement(Model& model, std::span<const int32_t> ids, const HeadsOptions& options = {});
  HeadsMeasurement(HeadsMeasurement&&) noexcept;
  ~HeadsMeasurement();
  bool step(int max_runs);
  double progress() const;  // 0..1
  bool done() const;
  const HeadsReport& report() const;  // complete once done()

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The whole measurement in one call (options.progress is called after every run).
HeadsReport measure_heads(Model& model, std::span<const int32_t> ids, const HeadsOptions& options = {});

// The loss of ids with the given heads off (the model's forward; mean over T - 1 predictions).
double loss_with_heads_off(Model& model, std::span<const int32_t> ids, std::span<const HeadRef> off);

// A random order of every head: the one measure_heads uses for random order `index` with `seed`.
std::vector<HeadRef> random_head_order(int n_layer, int n_head, uint64_t seed, int index);

}  // namespace headscope
