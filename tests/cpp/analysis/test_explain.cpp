// Why a head attends and which heads work together (headscope/explain.hpp): the score split, its
// contrasts, the value side, the composition and copying scores against the float64 reference
// tests/fixtures/models/*/explain.json (scripts/fixtures/explain.py, written from the definitions),
// GPT-2 and the Llama family (grouped-query, multi-query, Qwen3's q/k norms, odd head sizes, F16
// weights); the table's cells against the engine's own score; the refusals.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/explain.hpp"
#include "headscope/model.hpp"
#include "test_util.hpp"

using headscope::Model;
using nlohmann::json;

namespace {

std::vector<double> flat(const json& j) {
  std::vector<double> out;
  const std::function<void(const json&)> add = [&](const json& x) {
    if (x.is_array())
      for (const json& y : x) add(y);
    else
      out.push_back(x.is_null() ? std::nan("") : x.get<double>());
  };
  add(j);
  return out;
}

// The engine runs in float32 and reads its own activations; a float32 PyTorch copy of these models
// lands within 6.8e-6 of the float64 score and within 4.2e-6 of every table, contrast and value cell
// (values up to about 21; explain.py prints the figures): 2e-5 + 1e-5 |ref| is a margin of 3 and
// more, while a part in the wrong place moves a cell by O(0.1) and more.
double cell_tol(double ref) { return 2e-5 + 1e-5 * std::fabs(ref); }

void require_near(const std::vector<double>& got, const std::vector<double>& want, double tol(double),
                  const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); i++) {
    INFO(what << " [" << i << "]: got " << got[i] << ", float64 " << want[i]);
    if (std::isnan(want[i]))
      REQUIRE(std::isnan(got[i]));
    else
      REQUIRE(std::fabs(got[i] - want[i]) <= tol(want[i]));
  }
}

const char* weights_file(const std::string& w) { return w == "f16" ? "model-f16.safetensors" : "model.safetensors"; }

}  // namespace

TEST_CASE("explain: the score split, its contrasts and the value side equal the float64 reference",
          "[explain][pytorch]") {
  int cases = 0;
  for (const std::string& name : test_util::all_fixture_models()) {
    const json ref = json::parse(test_util::read_text(test_util::fixture_dir(name) + "/explain.json"));
    REQUIRE(ref["format"] == "headscope-explain-1");
    for (const char* set : {"cases", "cases_f16"}) {
      if (!ref.contains(set)) continue;
      for (const json& c : ref[set]) {
        INFO("model " << name << ", " << set << ", head L" << c["layer"] << "H" << c["head"] << ", query " << c["query"]
                      << ", key " << c["key"]);
        Model m = test_util::load_fixture(name, weights_file(c["weights"].get<std::string>()));
        m.run_ids(c["ids"].get<std::vector<int32_t>>());
        const int L = c["layer"], H = c["head"], t = c["query"], s = c["key"];
        headscope::ExplainOptions o;
        o.versus = c["versus"].get<int>();
        o.token = c["value"]["token"].get<int32_t>();
        const headscope::ScoreSplit r = headscope::explain_score(m, L, H, t, s, o);
        REQUIRE(r.components == c["components"].get<std::vector<std::string>>());
        REQUIRE(std::fabs(r.score - c["score"].get<double>()) <= cell_tol(c["score"].get<double>()));
        require_near(r.table, flat(c["table"]), cell_tol, "table");
        require_near(r.contrast, flat(c["contrast_versus"]), cell_tol, "contrast against another key");
        require_near(r.value_by_token, flat(c["value"]["by_token"]), cell_tol, "value by token");
        require_near(r.value_by_part, flat(c["value"]["by_part"]), cell_tol, "value by part");
        REQUIRE(std::fabs(r.value_total - c["value"]["total"].get<double>()) <=
                cell_tol(c["value"]["total"].get<double>()));
        // the cells sum to the forward pass's own score: both are double sums of the same float32
        // activations, apart from q and k's own float32 rounding in the cache (|q||k| 2^-24 each
        // way, |q||k| / sqrt(HS) <= the sum of |cells|): 1e-6 of the cells' sizes is a margin of 8
        double sum = 0, size = 0;
        for (double x : r.table) sum += x, size += std::fabs(x);
        REQUIRE(std::fabs(sum - r.score) <= 1e-6 * (1 + size));
        // without `versus`: against the mean over the keys 0..t
        o.versus.reset();
        const headscope::ScoreSplit mean = headscope::explain_score(m, L, H, t, s, o);
        REQUIRE(mean.versus == -1);
        REQUIRE(mean.table == r.table);
        require_near(mean.contrast, flat(c["contrast_mean"]), cell_tol, "contrast against the mean");
        cases++;
      }
    }
  }
  REQUIRE(cases >= 24);
}

TEST_CASE("circuits: composition and copying scores equal the float64 reference; the baseline its spread",
          "[explain][pytorch]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    const json ref = json::parse(test_util::read_text(test_util::fixture_dir(name) + "/explain.json"));
    for (const auto& [set, file] :
         {std::pair{"circuits", "model.safetensors"}, {"circuits_f16", "model-f16.safetensors"}}) {
      if (!ref.contains(set)) continue;
      INFO("model " << name << ", " << set);
      const json& c = ref[set];
      Model m = test_util::load_fixture(name, file);
      const headscope::Circuits r = headscope::circuits(m, 16);
      // weights only, in double from the same float32 weights (a float32 copy lands within 5e-8 and
      // 7.9e-7): 1e-6 absolute for the compositions, 2e-5 for the copying scores (U E comes from
      // float32 products summed over the vocabulary)
      require_near(
          r.q, flat(c["composition"]["Q"]), [](double) { return 1e-6; }, "Q-composition");
      require_near(
          r.k, flat(c["composition"]["K"]), [](double) { return 1e-6; }, "K-composition");
      require_near(
          r.v, flat(c["composition"]["V"]), [](double) { return 1e-6; }, "V-composition");
      require_near(
          r.copying, flat(c["copying"]), [](double) { return 2e-5; }, "copying");
      // the baseline draws its own random matrices: two means of 16 draws differ by about
      // sqrt(2) / 4 = 0.35 standard deviations of one draw; 2 standard deviations is 5.7 of those
      for (const auto& [got, key] : {std::pair{r.baseline_q, "Q"}, {r.baseline_k, "K"}, {r.baseline_v, "V"}}) {
        INFO("baseline " << key << ": " << got << " against " << c["baseline"][key]);
        REQUIRE(std::fabs(got - c["baseline"][key].get<double>()) <= 2 * c["baseline_std"][key].get<double>());
      }
    }
  }
}

TEST_CASE("explain: out-of-range layers, heads, positions and tokens, and a key after the query, are refused",
          "[explain]") {
  Model m = test_util::load_fixture("odd-hs12");
  REQUIRE_THROWS_WITH(headscope::explain_score(m, 0, 0, 0, 0), Catch::Matchers::Contains("run"));
  m.run_ids(std::vector<int32_t>{5, 6, 7, 8});
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(headscope::explain_score(m, 9, 0, 1, 0), Contains("layer 9"));
  REQUIRE_THROWS_WITH(headscope::explain_score(m, 0, 9, 1, 0), Contains("head 9"));
  REQUIRE_THROWS_WITH(headscope::explain_score(m, 0, 0, 4, 0), Contains("query 4 is outside the run's tokens [0, 4)"));
  REQUIRE_THROWS_WITH(headscope::explain_score(m, 0, 0, 1, 2), Contains("key 2 comes after query 1"));
  headscope::ExplainOptions o;
  o.versus = 3;
  REQUIRE_THROWS_WITH(headscope::explain_score(m, 0, 0, 2, 1, o), Contains("versus 3 comes after query 2"));
  o.versus.reset();
  o.token = m.config().vocab_size;
  REQUIRE_THROWS_WITH(headscope::explain_score(m, 0, 0, 2, 1, o), Contains("token"));
}
