// The predictions computed next to the logits (cpp/src/model/predictions.cpp): the mean next-token loss
// against its double-precision reference, and the top-k against a full sort of a double softmax.
// Each check states its tolerance and why.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/predictions.hpp"
#include "test_util.hpp"

using headscope::mean_next_token_loss;
using headscope::mean_next_token_loss_reference;
using headscope::top_k_probabilities;

namespace {

using test_util::kUnitRoundoff;

std::vector<float> random_logits(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("mean_next_token_loss equals its double-precision reference", "[predictions]") {
  std::mt19937 rng(7);
  for (int V : {1, 3, 4, 5, 8, 9, 16, 17, 33, 257, 5120}) {
    for (int T : {2, 3, 17}) {
      const float scale = 4.0f;  // logits spread like a trained model's (a few units)
      const std::vector<float> logits = random_logits((std::size_t)T * V, rng, scale);
      std::vector<int32_t> ids((std::size_t)T);
      for (auto& id : ids) id = (int32_t)(rng() % (unsigned)V);
      const double got = mean_next_token_loss(logits, ids, V);
      const double want = mean_next_token_loss_reference(logits, ids, V);
      // Per row the loss is log(S) + max - x_target, and only S carries error: its V terms are
      // exp(x - max) with the float subtraction's rounding (u |x - max|, relative, in the exponent's
      // argument) and the exp's own 3.2e-7, then a float sum of V positive terms (recursive summation:
      // (V - 1) u relative, Higham 4.2). log turns S's relative error into the same absolute error,
      // and the mean of rows keeps the largest. The spread bounds |x - max| by the row's range.
      double range = 0.0;
      for (int t = 0; t < T; t++) {
        const auto row = logits.begin() + (std::ptrdiff_t)t * V;
        range = std::max(range, (double)(*std::max_element(row, row + V) - *std::min_element(row, row + V)));
      }
      const double tol = (V - 1) * kUnitRoundoff + 3.2e-7 + kUnitRoundoff * range + 1e-12;
      INFO("V " << V << " T " << T << " got " << got << " want " << want << " tol " << tol);
      CHECK(std::abs(got - want) <= tol);
    }
  }
}

TEST_CASE("mean_next_token_loss: short texts and bad ids", "[predictions]") {
  const std::vector<float> logits(12, 0.5f);
  CHECK(std::isnan(mean_next_token_loss(logits, std::vector<int32_t>{1}, 4)));
  // uniform logits: every prediction costs log V
  CHECK(mean_next_token_loss(logits, std::vector<int32_t>{0, 1, 3}, 4) == Approx(std::log(4.0)).epsilon(1e-6));
  CHECK_THROWS_WITH(mean_next_token_loss(logits, std::vector<int32_t>{0, 4, 1}, 4),
                    Catch::Contains("token id 4 at position 1 is outside [0, 4)"));
  CHECK_THROWS_WITH(mean_next_token_loss(logits, std::vector<int32_t>{0, 1, 2, 3}, 4),
                    Catch::Contains("fewer than T x V"));
}

TEST_CASE("top_k_probabilities: the k most probable tokens of a double softmax, ties to the smaller id",
          "[predictions]") {
  std::mt19937 rng(11);
  for (int V : {1, 2, 7, 64, 5120}) {
    std::vector<float> logits = random_logits((std::size_t)V, rng, 3.0f);
    if (V >= 7) logits[5] = logits[2] = *std::max_element(logits.begin(), logits.end()) + 1.0f;  // a tie at the top
    double maxv = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float x : logits) sum += std::exp(x - maxv);
    std::vector<int> order((std::size_t)V);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
    for (int k : {0, 1, 3, 10, V + 5}) {
      const auto top = top_k_probabilities(logits, k);
      REQUIRE(top.size() == (std::size_t)std::clamp(k, 0, V));
      for (std::size_t i = 0; i < top.size(); i++) {
        INFO("V " << V << " k " << k << " rank " << i);
        CHECK(top[i].id == order[i]);
        // the same formula in the same precision: equal to double rounding
        CHECK(top[i].prob == Approx(std::exp(logits[order[i]] - maxv) / sum).epsilon(1e-12));
      }
    }
    if (V >= 7) {
      const auto top = top_k_probabilities(logits, 2);
      CHECK(top[0].id == 2);
      CHECK(top[1].id == 5);
    }
  }
}
