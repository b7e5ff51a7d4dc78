// The model writes: sampling the next token from its logits, and generation on the key/value cache
// (`headscope generate`). Each new token costs one incremental step of the model.
//
// The distribution a token is drawn from, from the last position's logits:
//   1. temperature: softmax(logits / temperature); temperature 0 is greedy (the most likely token,
//      ties to the lowest id) and skips the rest;
//   2. top-k (k > 0): only the k most likely tokens (ties broken by the lower id), renormalized;
//   3. top-p (p < 1): the smallest set of most likely tokens whose probability reaches p, renormalized.
// The random source is specified so that one seed gives one continuation wherever the engine runs:
// splitmix64 from the seed, each draw u = (x >> 11) * 2^-53 in [0, 1); the token is the first one,
// in the distribution's order (most likely first, ties by lower id), whose cumulative probability
// exceeds u. (Native and wasm logits differ in their last bits, so a draw that lands within that
// distance of a boundary could differ; the tests check real continuations agree.)
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "headscope/model.hpp"

namespace headscope {

struct SamplingOptions {
  double temperature = 1.0;  // >= 0; 0: greedy
  int top_k = 0;             // 0: off
  double top_p = 1.0;        // in (0, 1]; 1: off
  uint64_t seed = 0;
};
// Throws Error naming the option when a value is out of range.
void check_sampling_options(const SamplingOptions& o);

// Tokens that can be drawn, most likely first (ties by lower id), with probabilities summing to 1.
struct SamplingDistribution {
  std::vector<int32_t> ids;
  std::vector<double> probs;
};
SamplingDistribution sampling_distribution(std::span<const float> logits, const SamplingOptions& o);

// The specified random source (splitmix64).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform() { return (double)(next() >> 11) * 0x1.0p-53; }  // [0, 1)
 private:
  uint64_t state_;
};

// The token of `d` that the draw u in [0, 1) picks.
int32_t draw(const SamplingDistribution& d, double u);

struct GeneratedToken {
  int32_t id = 0;
  std::string token;  // its display text
  double prob = 0;    // its probability in the distribution it was drawn from
  SamplingDistribution distribution;
};

struct GenerateResult {
  std::vector<int32_t> ids;        // the prompt's ids, then the generated ones (the whole sequence)
  std::vector<int32_t> generated;  // the generated ids
  std::string text;                // the whole text: the prompt, then the generated tokens' bytes
};

// Generation one token at a time (for a caller that updates views between tokens, or stops): the
// constructor runs `text`; each next() draws a token from the last run's logits, appends it and runs
// the model one incremental step on (a full run right after a cut past the context). `ablate`: the
// heads switched off in every run (the model writes as it is shown with those heads off).
class Generation {
 public:
  Generation(Model& model, std::string_view text, const SamplingOptions& options, std::vector<HeadRef> ablate = {});
  GeneratedToken next();
  // Runs the sequence so far again, for a caller that ran other texts on the model between two
  // next(): next() draws from the model's last run. Incremental: the cache's shared prefix is reused.
  void restore() { run_window(); }
  const GenerateResult& result() const { return r_; }

 private:
  void run_window();
  Model& model_;
  SamplingOptions options_;
  RunOptions run_options_;
  SplitMix64 rng_;
  GenerateResult r_;
};

// Generates `tokens` tokens after `text`. on_token, if set, is called after each token with the
// model holding the run of the sequence so far (its attention, predictions...); returning false stops.
// Past the context, the oldest tokens are cut in steps of n_positions / 8, as typing cuts them.
GenerateResult generate(Model& model, std::string_view text, int tokens, const SamplingOptions& options,
                        const std::function<bool(const GeneratedToken&)>& on_token = {});

}  // namespace headscope
