// What the model predicts, from its logits: the next token's most likely candidates and the mean
// next-token loss over a text. Computed here, next to the logits, so that a run hands JavaScript a
// few numbers instead of V (or T x V) floats. Shapes: T tokens, V vocabulary.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace headscope {

struct TokenProbability {
  int32_t id;
  double prob;
};

// The k most probable next tokens under softmax(logits), most probable first; ties go to the smaller
// id. logits (V). k is clamped to [0, V].
std::vector<TokenProbability> top_k_probabilities(std::span<const float> logits, int k);

// Mean next-token cross-entropy in nats: position t predicts ids[t + 1], for t = 0 .. T-2:
//   mean_t ( logsumexp(logits[t]) - logits[t][ids[t + 1]] ).
// logits (T, V) row-major, ids (T). NaN when T < 2. Throws headscope::Error if an id is outside [0, V).
// The exponentials use the SIMD build's polynomial exp (relative error 3.2e-7); sums are float.
double mean_next_token_loss(std::span<const float> logits, std::span<const int32_t> ids, int V);

// The same loss in double precision with std::exp: the reference the tests compare against.
double mean_next_token_loss_reference(std::span<const float> logits, std::span<const int32_t> ids, int V);

}  // namespace headscope
