// Head importance and pruning curves (heads.hpp): losses from the model's forward with heads
// switched off, gate gradients from the training engine's backward on the same weights.
#include "headscope/heads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "headscope/error.hpp"
#include "headscope/predictions.hpp"
#include "headscope/train.hpp"

namespace headscope {

namespace {

void check_ids(const Model& model, std::span<const int32_t> ids) {
  if (ids.size() < 2) throw Error("the text needs at least 2 tokens to have a next-token loss");
  if ((int)ids.size() > model.config().n_positions)
    throw Error(std::to_string(ids.size()) + " tokens exceed the model's context of " +
                std::to_string(model.config().n_positions));
}

// Reports progress; throws when the caller asked to stop.
struct Progress {
  const HeadsOptions& options;
  double total, done = 0;
  void step(double amount = 1) {
    done += amount;
    if (options.progress && !options.progress(std::min(1.0, done / total))) throw Error("cancelled");
  }
};

}  // namespace

double loss_with_heads_off(Model& model, std::span<const int32_t> ids, std::span<const HeadRef> off) {
  check_ids(model, ids);
  RunOptions opt;
  opt.all_logits = true;
  opt.ablate.assign(off.begin(), off.end());
  model.run_ids(ids, opt);
  return mean_next_token_loss(model.logits_all(), ids, model.config().vocab_size);
}

std::vector<HeadRef> random_head_order(int n_layer, int n_head, uint64_t seed, int index) {
  std::vector<HeadRef> order;
  for (int l = 0; l < n_layer; l++)
    for (int h = 0; h < n_head; h++) order.push_back({l, h});
  // one generator per order, seeded from (seed, index), so each order is reproducible on its own;
  // Fisher-Yates with an explicit modulo-free draw (std::uniform_int_distribution differs between
  // standard libraries, and the native and wasm builds must give the same orders)
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + (uint64_t)index + 1);
  for (std::size_t i = order.size(); i > 1; i--) {
    const uint64_t bound = i, limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do r = rng(); while (r >= limit);
    std::swap(order[i - 1], order[r % bound]);
  }
  return order;
}

HeadsReport measure_heads(Model& model, std::span<const int32_t> ids, const HeadsOptions& options) {
  check_ids(model, ids);
  const ModelConfig& c = model.config();
  const int L = c.n_layer, NH = c.n_head, n = L * NH, T = (int)ids.size();
  if (options.random_orders < 0 || options.random_orders > 1000)
    throw Error("random orders must be within [0, 1000], got " + std::to_string(options.random_orders));
  const bool exact = n <= options.exact_limit;
  const int candidates = std::max(1, options.exact_candidates);
  // progress in model runs: knock-outs, the greedy search, the random curves (a gradient counts as 3)
  const double greedy_runs = exact ? (double)n * (n + 1) / 2 : (double)n * (candidates + 3);
  Progress progress{options, 1 + n + greedy_runs + (double)options.random_orders * n + 3};

  HeadsReport r;
  r.n_layer = L;
  r.n_head = NH;
  r.tokens = T;
  r.method = exact ? "greedy, exact" : "greedy, gate gradients + " + std::to_string(candidates) + " measured per step";
  r.loss = loss_with_heads_off(model, ids, {});
  progress.step();

  // the training engine on the model's weights, without optimizer state: one sequence of T - 1
  // inputs predicting ids[1..T-1]
  train::Trainer trainer(c, 1, T - 1, std::size_t(3) << 30, /*optimizer_state=*/false);
  trainer.load(model);
  const std::vector<int> inputs(ids.begin(), ids.end() - 1), targets(ids.begin() + 1, ids.end());
  std::vector<float> gates(n, 1.0f);
  const auto gate_grads = [&]() {
    trainer.set_head_gates(gates);
    trainer.zero_grad();
    trainer.forward(inputs.data(), targets.data(), 1, T - 1);
    trainer.backward();
    const auto g = trainer.head_gate_grads();
    return std::vector<double>(g.begin(), g.end());
  };
  r.gate_grad = gate_grads();
  progress.step(3);

  for (int i = 0; i < n; i++) {
    const HeadRef h{i / NH, i % NH};
    r.ablation_delta.push_back(loss_with_heads_off(model, ids, std::span(&h, 1)) - r.loss);
    progress.step();
  }

  // greedy: the head whose removal raises the loss least, among every remaining head (exact) or the
  // best candidates by the recomputed first-order estimate -dL/dxi
  std::vector<HeadRef> off;
  std::vector<bool> removed(n, false);
  r.pruned_loss.push_back(r.loss);
  for (int step = 0; step < n; step++) {
    std::vector<int> pool;
    for (int i = 0; i < n; i++)
      if (!removed[i]) pool.push_back(i);
    if (!exact && (int)pool.size() > candidates) {
      const std::vector<double> g = step == 0 ? r.gate_grad : gate_grads();
      if (step > 0) progress.step(3);
      std::stable_sort(pool.begin(), pool.end(), [&](int a, int b) { return -g[a] < -g[b]; });
      pool.resize(candidates);
    }
    int best = -1;
    double best_loss = std::numeric_limits<double>::infinity();
    for (int i : pool) {
      off.push_back({i / NH, i % NH});
      const double loss = loss_with_heads_off(model, ids, off);
      off.pop_back();
      progress.step();
      if (loss < best_loss) best_loss = loss, best = i;  // ties: the earlier head in the pool
    }
    removed[best] = true;
    gates[best] = 0.0f;
    off.push_back({best / NH, best % NH});
    r.order.push_back(off.back());
    r.pruned_loss.push_back(best_loss);
  }

  if (options.random_orders > 0) {
    r.random_mean.assign(n + 1, 0.0);
    r.random_lo.assign(n + 1, std::numeric_limits<double>::infinity());
    r.random_hi.assign(n + 1, -std::numeric_limits<double>::infinity());
    for (int k = 0; k < options.random_orders; k++) {
      const std::vector<HeadRef> order = random_head_order(L, NH, options.seed, k);
      for (int j = 0; j <= n; j++) {
        const double loss = j == 0 ? r.loss : loss_with_heads_off(model, ids, std::span(order.data(), j));
        if (j > 0) progress.step();
        r.random_mean[j] += loss / options.random_orders;
        r.random_lo[j] = std::min(r.random_lo[j], loss);
        r.random_hi[j] = std::max(r.random_hi[j], loss);
      }
    }
  }
  return r;
}

}  // namespace headscope
