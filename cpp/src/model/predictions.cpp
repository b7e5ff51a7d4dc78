#include "headscope/predictions.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "headscope/error.hpp"
#include "kernels/kernels.hpp"

namespace headscope {

namespace {

float row_max(const float* row, int V) {
  float m = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < V; i++) m = std::max(m, row[i]);
  return m;
}

void check_ids(std::span<const float> logits, std::span<const int32_t> ids, int V) {
  if (V <= 0) throw Error("vocabulary size must be positive");
  if (logits.size() < ids.size() * (std::size_t)V)
    throw Error("logits hold " + std::to_string(logits.size()) +
                " floats, fewer than T x V = " + std::to_string(ids.size()) + " x " + std::to_string(V));
  for (std::size_t t = 1; t < ids.size(); t++)
    if (ids[t] < 0 || ids[t] >= V)
      throw Error("token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) + " is outside [0, " +
                  std::to_string(V) + ")");
}

}  // namespace

std::vector<TokenProbability> top_k_probabilities(std::span<const float> logits, int k) {
  const int V = (int)logits.size();
  k = std::clamp(k, 0, V);
  if (k == 0) return {};
  const float maxv = row_max(logits.data(), V);
  double sum = 0.0;
  for (int i = 0; i < V; i++) sum += std::exp((double)logits[i] - maxv);
  // the k largest logits are the k largest probabilities: select on the logits, then normalise
  std::vector<int32_t> order((std::size_t)V);
  for (int i = 0; i < V; i++) order[(std::size_t)i] = i;
  const auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), better);
  std::vector<TokenProbability> out;
  out.reserve((std::size_t)k);
  for (int i = 0; i < k; i++) {
    const int32_t id = order[(std::size_t)i];
    out.push_back({id, std::exp((double)logits[id] - maxv) / sum});
  }
  return out;
}

double mean_next_token_loss(std::span<const float> logits, std::span<const int32_t> ids, int V) {
  const std::size_t T = ids.size();
  if (T < 2) return std::numeric_limits<double>::quiet_NaN();
  check_ids(logits, ids, V);
  std::vector<float> shifted((std::size_t)V);
  double total = 0.0;
  for (std::size_t t = 0; t + 1 < T; t++) {
    const float* row = logits.data() + t * (std::size_t)V;
    const float maxv = row_max(row, V);
    for (int i = 0; i < V; i++) shifted[(std::size_t)i] = row[i] - maxv;  // <= 0: the polynomial exp's range
    kernels::exp_nonpositive_forward(shifted.data(), shifted.data(), (std::size_t)V);
    float sum = 0.0f;
    for (int i = 0; i < V; i++) sum += shifted[(std::size_t)i];
    total += std::log((double)sum) + maxv - row[ids[t + 1]];
  }
  return total / (double)(T - 1);
}

double mean_next_token_loss_reference(std::span<const float> logits, std::span<const int32_t> ids, int V) {
  const std::size_t T = ids.size();
  if (T < 2) return std::numeric_limits<double>::quiet_NaN();
  check_ids(logits, ids, V);
  double total = 0.0;
  for (std::size_t t = 0; t + 1 < T; t++) {
    const float* row = logits.data() + t * (std::size_t)V;
    const double maxv = row_max(row, V);
    double sum = 0.0;
    for (int i = 0; i < V; i++) sum += std::exp((double)row[i] - maxv);
    total += std::log(sum) + maxv - row[ids[t + 1]];
  }
  return total / (double)(T - 1);
}

}  // namespace headscope
