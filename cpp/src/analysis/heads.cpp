// Head importance and pruning curves (heads.hpp): losses from the model's forward with heads
// switched off, gate gradients from the training engine's backward on the same weights.
#include "headscope/heads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
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
    do r = rng();
    while (r >= limit);
    std::swap(order[i - 1], order[r % bound]);
  }
  return order;
}

// The measurement as a state machine over its phases, so that it can stop between model runs.
struct HeadsMeasurement::State {
  Model& model;
  std::vector<int32_t> ids;
  HeadsOptions options;
  int L, NH, n, T;
  bool exact;
  int candidates;
  double total_runs, runs_done = 0;
  train::Trainer trainer;
  std::vector<int> inputs, targets;
  std::vector<float> gates;
  HeadsReport r;
  enum class Phase { start, knockouts, greedy, random, done } phase = Phase::start;
  int i = 0;                 // knock-outs: the head; random: the order
  int j = 0;                 // random: heads off in the current order
  std::vector<HeadRef> off;  // greedy: heads off so far
  std::vector<bool> removed;
  std::vector<int> pool;  // greedy: this step's candidates, and how many are measured
  std::size_t pool_next = 0;
  int best = -1;
  double best_loss = 0;
  std::vector<HeadRef> random_order;
  std::vector<double> ranking;  // greedy: the gate gradients the candidates are ranked by

  State(Model& m, std::span<const int32_t> ids_in, const HeadsOptions& o)
      : model(m),
        ids(ids_in.begin(), ids_in.end()),
        options(o),
        L(m.config().n_layer),
        NH(m.config().n_head),
        n(L * NH),
        T((int)ids_in.size()),
        exact(n <= o.exact_limit),
        candidates(std::max(1, o.exact_candidates)),
        trainer(m, 1, std::max(1, T - 1), std::size_t(3) << 30),  // reads the model's weights: no copy of them
        inputs(ids.begin(), ids.end() - 1),
        targets(ids.begin() + 1, ids.end()),
        gates(n, 1.0f),
        removed(n, false) {
    // progress in model runs: the loss, the gradient (3), knock-outs, the greedy search, random curves
    const double greedy_runs =
        exact ? (double)n * (n + 1) / 2 : (double)n * (std::min(candidates, n) + 3.0 / std::max(1, o.gradient_every));
    total_runs = 4 + n + greedy_runs + (double)o.random_orders * n;
    r.n_layer = L;
    r.n_head = NH;
    r.tokens = T;
    r.method = exact ? "greedy, exact"
                     : "greedy, gate gradients (every " + std::to_string(std::max(1, o.gradient_every)) + " heads) + " +
                           std::to_string(candidates) + " measured per step";
  }

  double loss_off(std::span<const HeadRef> heads) {
    runs_done += 1;
    return loss_with_heads_off(model, ids, heads);
  }
  std::vector<double> gate_grads() {
    runs_done += 3;
    trainer.set_head_gates(gates);  // (a gates-only backward writes every gate's gradient anew)
    trainer.forward(inputs.data(), targets.data(), 1, T - 1);
    trainer.backward(train::Trainer::Gradients::gates);
    const auto g = trainer.head_gate_grads();
    return std::vector<double>(g.begin(), g.end());
  }
  // this greedy step's candidates: every remaining head, or the best by -dL/dxi
  void start_greedy_step() {
    pool.clear();
    for (int h = 0; h < n; h++)
      if (!removed[h]) pool.push_back(h);
    if (!exact && (int)pool.size() > candidates) {
      if (off.empty())
        ranking = r.gate_grad;
      else if (off.size() % std::max(1, options.gradient_every) == 0)
        ranking = gate_grads();
      const std::vector<double>& g = ranking;
      std::stable_sort(pool.begin(), pool.end(), [&](int a, int b) { return -g[a] < -g[b]; });
      pool.resize(candidates);
    }
    pool_next = 0;
    best = -1;
    best_loss = std::numeric_limits<double>::infinity();
  }

  // one unit of work; returns the runs it took
  void advance() {
    switch (phase) {
      case Phase::start:
        r.loss = loss_off({});
        r.gate_grad = gate_grads();
        r.pruned_loss.push_back(r.loss);
        phase = Phase::knockouts;
        return;
      case Phase::knockouts: {
        const HeadRef h{i / NH, i % NH};
        r.ablation_delta.push_back(loss_off(std::span(&h, 1)) - r.loss);
        if (++i == n) {
          phase = Phase::greedy;
          start_greedy_step();
        }
        return;
      }
      case Phase::greedy: {
        const int h = pool[pool_next++];
        off.push_back({h / NH, h % NH});
        const double loss = loss_off(off);
        off.pop_back();
        if (loss < best_loss) best_loss = loss, best = h;  // ties: the earlier head in the pool
        if (pool_next < pool.size()) return;
        removed[best] = true;
        gates[best] = 0.0f;
        off.push_back({best / NH, best % NH});
        r.order.push_back(off.back());
        r.pruned_loss.push_back(best_loss);
        if ((int)off.size() < n) {
          start_greedy_step();
        } else if (options.random_orders > 0) {
          phase = Phase::random;
          r.random_mean.assign(n + 1, 0.0);
          r.random_lo.assign(n + 1, r.loss);
          r.random_hi.assign(n + 1, r.loss);
          r.random_mean[0] = r.loss;
          i = 0;
          j = 1;
          random_order = random_head_order(L, NH, options.seed, 0);
        } else {
          phase = Phase::done;
        }
        return;
      }
      case Phase::random: {
        const double loss = loss_off(std::span(random_order.data(), j));
        if (i == 0) r.random_lo[j] = r.random_hi[j] = loss;
        r.random_mean[j] += loss / options.random_orders;
        r.random_lo[j] = std::min(r.random_lo[j], loss);
        r.random_hi[j] = std::max(r.random_hi[j], loss);
        if (++j > n) {
          j = 1;
          if (++i == options.random_orders) {
            phase = Phase::done;
            return;
          }
          random_order = random_head_order(L, NH, options.seed, i);
        }
        return;
      }
      case Phase::done:
        return;
    }
  }
};

HeadsMeasurement::HeadsMeasurement(Model& model, std::span<const int32_t> ids, const HeadsOptions& options) {
  check_ids(model, ids);
  if (options.random_orders < 0 || options.random_orders > 1000)
    throw Error("random orders must be within [0, 1000], got " + std::to_string(options.random_orders));
  try {
    s_ = std::make_unique<State>(model, ids, options);
  } catch (const std::bad_alloc&) {  // a wasm heap that already holds the model: an Error, never bad_alloc
    throw Error("measuring the heads: not enough memory for the gradients of this model on " +
                std::to_string(ids.size()) + " tokens (a shorter text needs less)");
  }
}
HeadsMeasurement::HeadsMeasurement(HeadsMeasurement&&) noexcept = default;
HeadsMeasurement::~HeadsMeasurement() = default;

bool HeadsMeasurement::step(int max_runs) {
  const double until = s_->runs_done + std::max(1, max_runs);
  while (s_->phase != State::Phase::done && s_->runs_done < until) s_->advance();
  return done();
}
double HeadsMeasurement::progress() const {
  return s_->phase == State::Phase::done ? 1.0 : std::min(0.999, s_->runs_done / s_->total_runs);
}
bool HeadsMeasurement::done() const { return s_->phase == State::Phase::done; }
const HeadsReport& HeadsMeasurement::report() const {
  if (!done()) throw Error("the head measurement is not finished");
  return s_->r;
}

HeadsReport measure_heads(Model& model, std::span<const int32_t> ids, const HeadsOptions& options) {
  HeadsMeasurement m(model, ids, options);
  while (!m.step(1))
    if (options.progress && !options.progress(m.progress())) throw Error("cancelled");
  if (options.progress) options.progress(1.0);
  return m.report();
}

}  // namespace headscope
