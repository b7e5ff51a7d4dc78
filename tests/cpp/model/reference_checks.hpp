// What the model's tests share (test_model.cpp, test_inside.cpp, test_incremental.cpp, test_f16_storage.cpp):
// the names they use, the comparison of float32 results with a float64 PyTorch reference array and its
// tolerances, and typing a text one byte at a time against fresh runs.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "headscope/model.hpp"
#include "test_util.hpp"

using headscope::Model;
using headscope::RunOptions;
using nlohmann::json;
using test_util::fixture_dir;
using test_util::kFixtureModels;
using test_util::load_fixture;
using test_util::read_bytes;
using test_util::read_text;

namespace reference_checks {

// |got - ref| <= abs_tol + rel_tol * |ref| for every element, reporting the first failure.
inline void require_close(const std::vector<float>& got, const nlohmann::json& ref, double abs_tol, double rel_tol,
                          const std::string& what) {
  REQUIRE(got.size() == ref.size());
  std::size_t worst = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < got.size(); i++) {
    const double r = ref[i].get<double>();
    const double excess = std::fabs(got[i] - r) - (abs_tol + rel_tol * std::fabs(r));
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  INFO(what << ": worst element " << worst << " got " << got[worst] << " expected " << ref[worst].get<double>()
            << " (tolerance " << abs_tol << " + " << rel_tol << " * |ref|)");
  REQUIRE(worst_excess <= 0.0);
}

// Tolerances against the float64 PyTorch reference. The engine computes in float32 with another
// summation order; PyTorch float32 on the same weights differs from the reference by at most
// 8.1e-6 (logits), 5.7e-6 (hidden), 2.1e-6 (attention) on these fixtures (tests/fixtures/README.md).
// The bounds below leave >10x margin for the SIMD order and stay far below real errors: ablating
// two heads moves logits by 3-11, F16 rounding by up to 0.02.
inline constexpr double kLogitAbs = 1e-4, kLogitRel = 1e-4;
inline constexpr double kAttentionAbs = 5e-5;
inline constexpr double kHiddenAbs = 1e-4, kHiddenRel = 1e-4;

// Runs `text` through `typing` one byte longer at a time, reusing its cache, and each prefix through a
// fresh model from load(): the attention, the logits, the hidden states and a head's contribution must
// be the same bits; more(typing, fresh) adds the caller's checks. Returns the tokens the runs reused.
template <typename Load, typename More>
int require_typing_equals_fresh(Model& typing, const Load& load, const std::string& text, const RunOptions& opt,
                                const More& more) {
  int reused_total = 0;
  for (std::size_t len = 1; len <= text.size(); len++) {
    const std::string prefix = text.substr(0, len);
    const auto info = typing.run(prefix, opt);
    reused_total += info.reused_tokens;
    Model fresh = load();
    fresh.run(prefix, opt);
    INFO("prefix \"" << prefix << "\", reused " << info.reused_tokens);
    more(typing, fresh);
    REQUIRE(typing.attention_all() == fresh.attention_all());
    REQUIRE(typing.logits_all() == fresh.logits_all());
    REQUIRE(typing.hidden_states() == fresh.hidden_states());
    REQUIRE(typing.contribution(0, 1) == fresh.contribution(0, 1));
  }
  return reused_total;
}

}  // namespace reference_checks

using namespace reference_checks;
