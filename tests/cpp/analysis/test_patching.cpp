// Activation and attribution patching (headscope/patching.hpp): every number against the float64
// reference tests/fixtures/models/*/patching.json (scripts/fixtures/patching.py, written from the
// definitions), GPT-2 and the Llama family (grouped-query, multi-query, Qwen3's q/k norms, odd head
// sizes, F16 weights); and the identities that hold exactly in any model, the steps, the threads and
// the refusals.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/patching.hpp"
#include "test_util.hpp"

using headscope::ActivationPatching;
using headscope::Model;
using headscope::PatchOptions;
using headscope::PatchReport;
using nlohmann::json;

namespace {

// A clean text of T random ids and a corrupted one that differs at the positions `at`
std::pair<std::vector<int32_t>, std::vector<int32_t>> random_pair(const Model& m, int T, std::vector<int> at,
                                                                  uint32_t seed) {
  std::mt19937 rng(seed);
  const int V = m.config().vocab_size;
  std::vector<int32_t> clean(T), corrupted;
  for (int& id : clean) id = (int32_t)(rng() % (uint32_t)V);
  corrupted = clean;
  for (int p : at) corrupted[p] = (clean[p] + 1 + (int32_t)(rng() % (uint32_t)(V - 1))) % V;
  return {clean, corrupted};
}

// Two distinct ids the model can be asked about
PatchOptions named(int32_t answer, int32_t distractor) {
  PatchOptions o;
  o.answer = answer;
  o.distractor = distractor;
  return o;
}

// Models that live side by side take their threads explicitly: in the threaded wasm build the
// workers are a fixed pool, and a model with the default (one per core) would hold them all
headscope::LoadOptions threads(int n) {
  headscope::LoadOptions o;
  o.threads = n;
  return o;
}

void require_same_bits(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); i++) {
    INFO(what << " " << i << ": " << a[i] << " against " << b[i]);
    REQUIRE((a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))));
  }
}

void require_same_report(const PatchReport& a, const PatchReport& b) {
  REQUIRE(a.answer == b.answer);
  REQUIRE(a.distractor == b.distractor);
  REQUIRE(a.ld_clean == b.ld_clean);
  REQUIRE(a.ld_corrupted == b.ld_corrupted);
  require_same_bits(a.heads, b.heads, "heads");
  require_same_bits(a.heads_attribution, b.heads_attribution, "heads_attribution");
  require_same_bits(a.resid, b.resid, "resid");
  require_same_bits(a.heads_by_position, b.heads_by_position, "heads_by_position");
  require_same_bits(a.heads_by_position_attribution, b.heads_by_position_attribution, "heads_by_position_attribution");
}

}  // namespace

TEST_CASE("patching: identities that hold exactly, in every fixture model", "[patching]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    Model m = test_util::load_fixture(name);
    const int L = m.config().n_layer, NH = m.config().n_head, T = 9, d = 4;
    const auto [clean, corrupted] = random_pair(m, T, {d}, 7);
    PatchOptions o = named(1, 2);
    o.by_position = true;
    INFO("model " << name);
    const PatchReport r = headscope::patch(m, clean, corrupted, o);
    REQUIRE(r.first_difference == d);
    REQUIRE(r.exact_runs_done == r.exact_runs_total);
    REQUIRE(r.exact_runs_total == L * (NH + NH * (T - d) + (T - d)));
    for (int l = 0; l < L; l++)
      for (int p = 0; p < T; p++) {
        INFO("layer " << l << ", position " << p);
        // the stream entering layer 0 at the only differing position is all that differs: patching it
        // is the clean run (its rows from d on computed on top of the same cache: the same floats)
        if (l == 0 && p == d) REQUIRE(r.resid[0 * T + p] == 1.0);
        // elsewhere at layer 0, and anywhere before d, the two runs' streams are the same
        if ((l == 0 && p != d) || p < d) REQUIRE(r.resid[(std::size_t)l * T + p] == 0.0);
        for (int h = 0; h < NH && p < d; h++) {
          REQUIRE(r.heads_by_position[((std::size_t)l * NH + h) * T + p] == 0.0);
          REQUIRE(r.heads_by_position_attribution[((std::size_t)l * NH + h) * T + p] == 0.0);
        }
      }
    for (double s : r.heads) REQUIRE(std::isfinite(s));
    for (double s : r.heads_attribution) REQUIRE(std::isfinite(s));
  }
}

TEST_CASE("patching: in steps, with other runs between them and on other thread counts, the same numbers",
          "[patching]") {
  for (const std::string name : {"odd-hs12", "llama-gqa"}) {
    INFO("model " << name);
    Model m = test_util::load_fixture(name, "model.safetensors", threads(1));
    const auto [clean, corrupted] = random_pair(m, 10, {3, 6}, 11);
    PatchOptions o = named(5, 9);
    o.by_position = true;
    const PatchReport whole = headscope::patch(m, clean, corrupted, o);
    REQUIRE(whole.first_difference == 3);

    // the first step: both runs and the attribution map; the exact scores not yet
    ActivationPatching p(m, clean, corrupted, o);
    REQUIRE_FALSE(p.attribution_ready());
    REQUIRE_FALSE(p.step(3));
    REQUIRE(p.attribution_ready());
    require_same_bits(p.report().heads_attribution, whole.heads_attribution, "attribution after the first step");
    REQUIRE(std::isnan(p.report().heads[0]));
    // another text runs between every step (the page typing while the Worker patches)
    const std::vector<int32_t> other = random_pair(m, 7, {}, 3).first;
    int steps = 1;
    while (!p.step(3)) {
      m.run_ids(other);
      steps++;
      REQUIRE(p.progress() < 1.0);
    }
    REQUIRE(steps > 3);
    REQUIRE(p.progress() == 1.0);
    require_same_report(p.report(), whole);

    // two threads split every kernel by outputs only: the same floats
    Model m2 = test_util::load_fixture(name, "model.safetensors", threads(2));
    require_same_report(headscope::patch(m2, clean, corrupted, o), whole);

    // the model is left as if fresh: a run after the patching equals a new model's
    m.run_ids(clean);
    Model fresh = test_util::load_fixture(name, "model.safetensors", threads(1));
    fresh.run_ids(clean);
    for (std::size_t i = 0; i < fresh.logits_last().size(); i++) REQUIRE(m.logits_last()[i] == fresh.logits_last()[i]);
  }
}

TEST_CASE("patching: bad input is refused with a message, and cancelling leaves the model usable",
          "[patching][errors]") {
  Model m = test_util::load_fixture("tiny-hs4", "model.safetensors", threads(1));
  const auto [clean, corrupted] = random_pair(m, 8, {2}, 5);
  const int V = m.config().vocab_size;
  std::vector<int32_t> shorter(clean.begin(), clean.end() - 1);
  REQUIRE_THROWS_WITH(ActivationPatching(m, clean, shorter),
                      Catch::Matchers::Contains("tokens and the corrupted text"));
  REQUIRE_THROWS_WITH(ActivationPatching(m, clean, clean), Catch::Matchers::Contains("the same tokens"));
  REQUIRE_THROWS_WITH(ActivationPatching(m, {}, {}), Catch::Matchers::Contains("is empty"));
  REQUIRE_THROWS_WITH(ActivationPatching(m, clean, corrupted, named(3, 3)),
                      Catch::Matchers::Contains("the same token"));
  REQUIRE_THROWS_WITH(ActivationPatching(m, clean, corrupted, named(V, 3)), Catch::Matchers::Contains("outside"));
  std::vector<int32_t> long_clean(m.config().n_positions + 1, 1), long_corrupted = long_clean;
  long_corrupted[0] = 2;
  REQUIRE_THROWS_WITH(ActivationPatching(m, long_clean, long_corrupted),
                      Catch::Matchers::Contains("exceed the model's context"));
  // texts: different token counts name both counts and the first difference
  REQUIRE_THROWS_WITH(headscope::patch_texts(m, "a b c", "a b"),
                      Catch::Matchers::Contains("they first differ at token"));
  REQUIRE_THROWS_WITH(headscope::patch_texts(m, "", "a"), Catch::Matchers::Contains("the clean text is empty"));
  REQUIRE_THROWS_WITH(headscope::single_token_id(m, ""), Catch::Matchers::Contains("empty"));

  PatchOptions cancel = named(1, 2);
  int calls = 0;
  cancel.progress = [&](double) { return ++calls < 3; };
  REQUIRE_THROWS_WITH(headscope::patch(m, clean, corrupted, cancel), Catch::Matchers::Contains("cancelled"));
  m.run_ids(clean);
  Model fresh = test_util::load_fixture("tiny-hs4", "model.safetensors", threads(1));
  fresh.run_ids(clean);
  for (std::size_t i = 0; i < fresh.logits_last().size(); i++) REQUIRE(m.logits_last()[i] == fresh.logits_last()[i]);
}

namespace {

// Logit differences: float32 logits agree with float64 PyTorch within ~1e-5 (tests/fixtures/README.md:
// 8.1e-6 measured; a float32 PyTorch copy of these models lands within 1.4e-5 of the float64 LDs);
// 1e-4 + 1e-5 |LD| leaves a margin of 7 and more, while a wrong head or position moves LD by O(1).
double ld_tol(double ref) { return 1e-4 + 1e-5 * std::fabs(ref); }

void require_near(const std::vector<double>& got, const json& want, double tol_of(double, double), double scale,
                  const char* what) {
  std::vector<double> flat;
  const std::function<void(const json&)> add = [&](const json& j) {
    if (j.is_array())
      for (const json& x : j) add(x);
    else
      flat.push_back(j.get<double>());
  };
  add(want);
  REQUIRE(got.size() == flat.size());
  for (std::size_t i = 0; i < got.size(); i++) {
    INFO(what << " [" << i << "]: got " << got[i] << ", float64 " << flat[i]);
    REQUIRE(std::fabs(got[i] - flat[i]) <= tol_of(flat[i], scale));
  }
}

// A score is (LD_p - LD_x) / (LD_c - LD_x): with each LD within ld_tol, it is off by at most
// (2 + 2 |score|) ld_tol / |LD_c - LD_x| to first order (|LD_c - LD_x| >= 2.8 in these cases).
// unit: ld_tol of the case's larger |LD| over |LD_c - LD_x|
double score_tol(double ref, double unit) { return (2 + 2 * std::fabs(ref)) * unit; }
// Attribution: float32 products and sums along the backward's chain; a float32 PyTorch copy lands
// within 7.5e-6 of float64's; 1e-4 + 1e-4 |ref| is a margin of 13 and more.
double attribution_tol(double ref, double) { return 1e-4 + 1e-4 * std::fabs(ref); }

}  // namespace

TEST_CASE("patching: every score and attribution equals the float64 reference", "[patching][pytorch]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    const json ref = json::parse(test_util::read_text(test_util::fixture_dir(name) + "/patching.json"));
    REQUIRE(ref["format"] == "headscope-patching-1");
    for (const char* set : {"cases", "cases_f16"}) {
      if (!ref.contains(set)) continue;  // F16 cases: odd-hs12 and llama-gqa (checked below that both have them)
      for (const json& c : ref[set]) {
        INFO("model " << name << ", " << set << ", weights " << c["weights"].get<std::string>());
        Model m = test_util::load_fixture(name, c["weights"].get<std::string>());
        PatchOptions o;
        if (!c["answer"].is_null()) o.answer = c["answer"].get<int32_t>();
        if (!c["distractor"].is_null()) o.distractor = c["distractor"].get<int32_t>();
        o.by_position = true;
        const auto clean = c["ids_clean"].get<std::vector<int32_t>>();
        const auto corrupted = c["ids_corrupted"].get<std::vector<int32_t>>();
        const PatchReport r = headscope::patch(m, clean, corrupted, o);
        REQUIRE(r.answer == c["expect_answer"].get<int32_t>());
        REQUIRE(r.distractor == c["expect_distractor"].get<int32_t>());
        REQUIRE(r.first_difference == c["first_difference"].get<int>());
        const double ldc = c["ld_clean"].get<double>(), ldx = c["ld_corrupted"].get<double>();
        REQUIRE(std::fabs(r.ld_clean - ldc) <= ld_tol(ldc));
        REQUIRE(std::fabs(r.ld_corrupted - ldx) <= ld_tol(ldx));
        const double unit = ld_tol(std::max(std::fabs(ldc), std::fabs(ldx))) / std::fabs(ldc - ldx);
        require_near(r.heads, c["heads"], score_tol, unit, "heads");
        require_near(r.resid, c["resid"], score_tol, unit, "resid");
        require_near(r.heads_by_position, c["heads_by_position"], score_tol, unit, "heads_by_position");
        require_near(r.heads_attribution, c["heads_attribution"], attribution_tol, 0, "heads_attribution");
        require_near(r.heads_by_position_attribution, c["heads_by_position_attribution"], attribution_tol, 0,
                     "heads_by_position_attribution");
      }
    }
  }
  for (const char* name : {"odd-hs12", "llama-gqa"})
    REQUIRE(json::parse(test_util::read_text(test_util::fixture_dir(name) + "/patching.json")).contains("cases_f16"));
}

// RunOptions::patch (a whole run with one head patched, what the demo's views show) is the same
// patching through the ordinary forward pass, not the batched one: each head's score from its own
// patched run against the float64 reference, with the tolerance above; a plain run after it computes
// every token and equals a fresh model's; a text of another token count is refused.
TEST_CASE("patching: a run with one head patched (RunOptions::patch) scores as the float64 reference",
          "[patching][pytorch]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    const json ref = json::parse(test_util::read_text(test_util::fixture_dir(name) + "/patching.json"));
    const json& c = ref["cases"][0];
    INFO("model " << name);
    Model m = test_util::load_fixture(name, c["weights"].get<std::string>());
    const auto clean = c["ids_clean"].get<std::vector<int32_t>>();
    const auto corrupted = c["ids_corrupted"].get<std::vector<int32_t>>();
    const int32_t a = c["expect_answer"].get<int32_t>(), d = c["expect_distractor"].get<int32_t>();
    const double ldc = c["ld_clean"].get<double>(), ldx = c["ld_corrupted"].get<double>();
    const double unit = ld_tol(std::max(std::fabs(ldc), std::fabs(ldx))) / std::fabs(ldc - ldx);
    std::vector<double> scores;
    for (int l = 0; l < m.config().n_layer; l++)
      for (int h = 0; h < m.config().n_head; h++) {
        headscope::RunOptions o;
        o.patch = headscope::RunPatch{clean, {l, h}};
        const headscope::RunInfo info = m.run_ids(corrupted, o);
        REQUIRE(info.reused_tokens == 0);
        const std::span<const float> z = m.logits_last();
        scores.push_back(((double)z[a] - z[d] - ldx) / (ldc - ldx));
      }
    require_near(scores, c["heads"], score_tol, unit, "heads by RunOptions::patch");
    // after a patched run, a plain run of the same ids computes every token and is a plain run
    const headscope::RunInfo plain = m.run_ids(corrupted, {});
    REQUIRE(plain.reused_tokens == 0);
    Model fresh = test_util::load_fixture(name, c["weights"].get<std::string>());
    fresh.run_ids(corrupted, {});
    REQUIRE(std::equal(m.logits_last().begin(), m.logits_last().end(), fresh.logits_last().begin()));
    headscope::RunOptions bad;
    bad.patch = headscope::RunPatch{std::vector<int32_t>(clean.begin(), clean.end() - 1), {0, 0}};
    REQUIRE_THROWS_WITH(m.run_ids(corrupted, bad),
                        Catch::Matchers::Contains("a head is patched between texts of as many tokens"));
    bad.patch = headscope::RunPatch{clean, {m.config().n_layer, 0}};
    REQUIRE_THROWS_WITH(m.run_ids(corrupted, bad), Catch::Matchers::Contains("layer"));
  }
}
