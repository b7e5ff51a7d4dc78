// F16 weight storage (LoadOptions::weights, cpp/src/model/model_load.cpp): whole models in F16 storage
// against the same models in float32, and the bytes F16 storage saves. The conversions and the F16
// kernels are tested in tests/cpp/kernels/test_f16.cpp.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "headscope/model.hpp"
#include "reference_checks.hpp"
#include "test_util.hpp"

namespace k = headscope::kernels;
using headscope::LoadOptions;
using headscope::WeightStorage;
using test_util::require_same_bits;

namespace {

Model load_stored(const std::string& name, WeightStorage storage, const std::string& file = "model.safetensors") {
  LoadOptions opt;
  opt.weights = storage;
  return test_util::load_fixture(name, file, opt);
}

std::vector<float> logits_last(const Model& m) { return {m.logits_last().begin(), m.logits_last().end()}; }

}  // namespace

TEST_CASE("an F16 checkpoint gives the same bits in F16 storage as in float32 storage", "[f16][model]") {
  // The fixtures' model-f16.safetensors holds every tensor in F16. Kept as they are (no second
  // rounding) and widened exactly by the kernels, they must give bit-identical results to the
  // float32 storage of the same values: tolerance 0 on every output.
  for (const std::string& name : test_util::all_fixture_models()) {
    Model a = load_stored(name, WeightStorage::f32, "model-f16.safetensors");
    Model b = load_stored(name, WeightStorage::f16, "model-f16.safetensors");
    REQUIRE(b.weight_storage() == WeightStorage::f16);
    const json ref = json::parse(read_text(fixture_dir(name) + "/reference.json"));
    for (const json& c : ref["cases"]) {
      INFO("model " << name << ", text \"" << c["text"].get<std::string>() << "\"");
      RunOptions opt;
      opt.all_logits = true;
      opt.keep_contributions = true;
      const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
      a.run_ids(ids, opt);
      b.run_ids(ids, opt);
      require_same_bits(a.logits_all(), b.logits_all(), "logits_all");
      require_same_bits(logits_last(a), logits_last(b), "logits_last");
      require_same_bits(a.attention_all(), b.attention_all(), "attention");
      require_same_bits(a.hidden_states(), b.hidden_states(), "hidden states");
      require_same_bits(a.contribution_norms(), b.contribution_norms(), "contribution norms");
    }
  }
}

TEST_CASE("float32 checkpoints in F16 storage stay within F16's rounding of the float32 results", "[f16][model]") {
  // Error bound, first order. Rounding a weight to F16 changes it by a relative |delta| <= u = 2^-11.
  // A product y_n = sum_k x_k w_kn then moves by at most u * sum_k |x_k w_kn| =: u * S_n. The model
  // has M = 4L + 2 such products in its path (four per block, the embedding lookup and the LM head);
  // a LayerNorm rescales the stream to unit variance, and each block adds its update to the
  // residual, so to first order the errors add up over the M products with a gain that is at most
  // the ratio S_n / |y_n| (cancellation) times the LayerNorm's amplification. We bound that gain by
  // G = 4 and state the bound on a logit as M * u * G * (1 + max |logit|); attention probabilities
  // (in [0, 1]) by M * u * G. Measured on these fixtures, the gain is at most 0.45 for logits (worst
  // 0.020 at max |logit| 8.9, L = 2) and 0.7 for attention (worst 0.0034): G = 4 leaves >= 5x margin,
  // while a wrong widening (a wrong exponent bias, swapped halves of a group) moves logits by O(1).
  const double u = std::ldexp(1.0, -11), G = 4.0;
  for (const std::string& name : test_util::all_fixture_models()) {
    Model a = load_stored(name, WeightStorage::f32);
    Model b = load_stored(name, WeightStorage::f16);
    const int L = a.config().n_layer;
    const double M = 4.0 * L + 2.0;
    const json ref = json::parse(read_text(fixture_dir(name) + "/reference.json"));
    for (const json& c : ref["cases"]) {
      const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
      RunOptions opt;
      opt.all_logits = true;
      a.run_ids(ids, opt);
      b.run_ids(ids, opt);
      const std::vector<float> la = a.logits_all(), lb = b.logits_all();
      double max_logit = 0, worst_logit = 0;
      for (float v : la) max_logit = std::max(max_logit, (double)std::fabs(v));
      for (std::size_t i = 0; i < la.size(); i++) worst_logit = std::max(worst_logit, (double)std::fabs(la[i] - lb[i]));
      const std::vector<float> aa = a.attention_all(), ab = b.attention_all();
      double worst_att = 0;
      for (std::size_t i = 0; i < aa.size(); i++) worst_att = std::max(worst_att, (double)std::fabs(aa[i] - ab[i]));
      const double logit_bound = M * u * G * (1.0 + max_logit), att_bound = M * u * G;
      INFO("model " << name << ", T " << ids.size() << ": logits differ by up to " << worst_logit << " (bound "
                    << logit_bound << ", max |logit| " << max_logit << "), attention by up to " << worst_att
                    << " (bound " << att_bound << ")");
      REQUIRE(worst_logit <= logit_bound);
      REQUIRE(worst_att <= att_bound);
      REQUIRE(worst_logit > 0.0);  // the weights really were rounded
    }
  }
}

TEST_CASE("F16 storage: typing one token at a time equals a full run, bit for bit", "[f16][model][incremental]") {
  for (const std::string& name : {std::string("odd-hs12"), std::string("hs5")}) {
    Model typing = load_stored(name, WeightStorage::f16);
    const std::string text = "The chef, who tr";  // 16 tokens: fits hs5's context of 16
    RunOptions opt;
    opt.keep_contributions = true;
    opt.all_logits = true;
    INFO("model " << name);
    const int reused_total = require_typing_equals_fresh(
        typing, [&] { return load_stored(name, WeightStorage::f16); }, text, opt, [](const Model&, const Model&) {});
    REQUIRE(reused_total > 0);
  }
}

TEST_CASE("weight_bytes: F16 storage halves the large matrices and nothing else", "[f16][model]") {
  for (const std::string& name : kFixtureModels) {
    const Model a = load_stored(name, WeightStorage::f32);
    const Model b = load_stored(name, WeightStorage::f16);
    const auto& c = a.config();
    const std::size_t C = c.n_embd, F = c.n_inner, V = c.vocab_size, L = c.n_layer;
    const std::size_t P = std::max(1, k::linear_panel_width());
    const auto padded = [&](std::size_t K, std::size_t N) {  // packed panels: N rounded up to whole panels
      return k::linear_panel_width() > 0 ? K * ((N + P - 1) / P) * P : K * N;
    };
    const std::size_t large = V * C + L * (padded(C, 3 * C) + padded(C, C) + padded(C, F) + padded(F, C));
    INFO("model " << name << ": " << a.weight_bytes() << " -> " << b.weight_bytes() << " bytes");
    REQUIRE(a.weight_bytes() - b.weight_bytes() == 2 * large);
    REQUIRE(a.weight_storage() == WeightStorage::f32);
  }
}
