// Sampling and generation (generate.hpp).
#include "headscope/generate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "headscope/error.hpp"

namespace headscope {

void check_sampling_options(const SamplingOptions& o) {
  if (!(o.temperature >= 0 && o.temperature <= 1e4))
    throw Error("temperature must be within [0, 10000], got " + std::to_string(o.temperature));
  if (o.top_k < 0) throw Error("top-k must be at least 0 (0: off), got " + std::to_string(o.top_k));
  if (!(o.top_p > 0 && o.top_p <= 1)) throw Error("top-p must be within (0, 1], got " + std::to_string(o.top_p));
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

SamplingDistribution sampling_distribution(std::span<const float> logits, const SamplingOptions& o) {
  check_sampling_options(o);
  const int V = (int)logits.size();
  if (V == 0) throw Error("no logits to sample from");
  SamplingDistribution d;
  // most likely first, ties by the lower id: one order for greedy, top-k, top-p and the draw
  std::vector<int32_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  const auto before = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (o.temperature == 0) {
    d.ids.push_back(*std::min_element(order.begin(), order.end(), before));
    d.probs.push_back(1.0);
    return d;
  }
  const int keep = o.top_k > 0 ? std::min(o.top_k, V) : V;
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), before);
  order.resize(keep);
  // softmax(logits / temperature) over the kept tokens, in double
  const double top = logits[order[0]] / o.temperature;
  std::vector<double> p(keep);
  double sum = 0;
  for (int i = 0; i < keep; i++) sum += (p[i] = std::exp(logits[order[i]] / o.temperature - top));
  for (double& x : p) x /= sum;
  // the nucleus: the smallest prefix whose probability reaches top_p
  int n = keep;
  if (o.top_p < 1) {
    double cum = 0;
    for (n = 0; n < keep;) {
      cum += p[n++];
      if (cum >= o.top_p) break;
    }
  }
  double kept = 0;
  for (int i = 0; i < n; i++) kept += p[i];
  d.ids.assign(order.begin(), order.begin() + n);
  d.probs.resize(n);
  for (int i = 0; i < n; i++) d.probs[i] = p[i] / kept;
  return d;
}

int32_t draw(const SamplingDistribution& d, double u) {
  double cum = 0;
  for (std::size_t i = 0; i < d.ids.size(); i++) {
    cum += d.probs[i];
    if (u < cum) return d.ids[i];
  }
  return d.ids.back();  // u within rounding of 1
}

Generation::Generation(Model& model, std::string_view text, const SamplingOptions& options, std::vector<HeadRef> ablate)
    : model_(model), options_(options), rng_(options.seed) {
  run_options_.ablate = std::move(ablate);
  check_sampling_options(options);
  if (text.empty()) throw Error("text is empty");
  for (const Token& t : model.tokenizer().encode_input(text)) r_.ids.push_back(t.id);
  if (r_.ids.empty()) throw Error("text is empty");
  r_.text = std::string(text);
  run_window();
}

// the window the model runs: the sequence's last tokens that fit, cut as typing cuts
void Generation::run_window() {
  if (model_.tokens_to_drop((int)r_.ids.size()) == 0) {
    model_.run_ids(r_.ids, run_options_);
    return;
  }
  const std::vector<int32_t> window = model_.context_window(r_.ids);  // the BOS stays first
  model_.run_ids(window, run_options_);
}

GeneratedToken Generation::next() {
  GeneratedToken g;
  g.distribution = sampling_distribution(model_.logits_last(), options_);
  const double u = options_.temperature == 0 ? 0.0 : rng_.uniform();
  g.id = draw(g.distribution, u);
  for (std::size_t j = 0; j < g.distribution.ids.size(); j++)
    if (g.distribution.ids[j] == g.id) g.prob = g.distribution.probs[j];
  g.token = model_.tokenizer().token_display(g.id);
  r_.ids.push_back(g.id);
  r_.generated.push_back(g.id);
  r_.text += model_.tokenizer().token_bytes(g.id);
  run_window();  // one incremental step on the cache
  return g;
}

GenerateResult generate(Model& model, std::string_view text, int tokens, const SamplingOptions& options,
                        const std::function<bool(const GeneratedToken&)>& on_token) {
  if (tokens < 0 || tokens > 100000) throw Error("tokens must be within [0, 100000], got " + std::to_string(tokens));
  Generation gen(model, text, options);
  for (int i = 0; i < tokens; i++) {
    const GeneratedToken g = gen.next();
    if (on_token && !on_token(g)) break;
  }
  return gen.result();
}

}  // namespace headscope
