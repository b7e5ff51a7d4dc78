// TrainingRun: the induction task's batches, the probe's scores against the inference engine's own
// attention, the schedule, divergence and bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/training_run.hpp"

using namespace headscope;
using namespace headscope::train;

namespace {
RunSpec small_spec() {
  RunSpec s = preset("induction").spec;
  s.shape.n_embd = 16;
  s.shape.n_head = 2;
  s.batch_size = 4;
  return s;
}
}  // namespace

TEST_CASE("training run: induction batches repeat spans of distinct tokens, never at the probe's period",
          "[training_run][task]") {
  std::mt19937_64 rng(7);
  std::set<int> periods;
  for (int rep = 0; rep < 50; rep++) {
    const auto rows = induction_batch(rng, 8, 32, 48, 4, 16, 10);
    REQUIRE(rows.size() == 8);
    for (const auto& row : rows) {
      REQUIRE(row.size() == 33);
      // the period is the first repeat of row[0]; the span before it is distinct
      const int P = (int)(std::find(row.begin() + 1, row.end(), row[0]) - row.begin());
      REQUIRE(P >= 4);
      REQUIRE(P <= 16);
      REQUIRE(P != 10);
      periods.insert(P);
      std::set<int> span(row.begin(), row.begin() + P);
      CHECK((int)span.size() == P);
      for (int t = P; t < 33; t++) REQUIRE(row[t] == row[t - P]);
      for (int id : row) REQUIRE((id >= 0 && id < 48));
    }
  }
  CHECK(periods.size() == 12);  // every allowed period occurs (400 draws of 12 choices)
}

TEST_CASE("training run: probe scores equal the formulas on the inference engine's attention",
          "[training_run][probe]") {
  TrainingRun run(small_spec());
  for (int i = 0; i < 30; i++) run.step();
  const HeadScores s = run.probe_scores();
  const int P = probe_period(run.spec()), T = 2 * P, L = run.config().n_layer, NH = run.config().n_head;
  REQUIRE(P == 10);
  // the same probe sequences, through Model (the forward the page uses, independent of the Trainer's)
  std::mt19937_64 rng(0x5EED0FBEull);
  const auto rows = induction_batch(rng, kProbeSequences, T - 1, run.config().vocab_size, P, P);
  CHECK(rows[0] == run.probe_ids());
  std::vector<double> prev((std::size_t)L * NH, 0), ind((std::size_t)L * NH, 0);
  Model model = run.model();
  for (const auto& row : rows) {
    model.run_ids(row);
    for (int l = 0; l < L; l++)
      for (int h = 0; h < NH; h++) {
        const std::vector<float> A = model.attention(l, h);
        for (int t = 1; t < T; t++) prev[l * NH + h] += A[t * T + t - 1] / (double)(kProbeSequences * (T - 1));
        for (int t = P; t < T; t++) ind[l * NH + h] += A[t * T + t - P + 1] / (double)(kProbeSequences * P);
      }
  }
  // Scores are means of probabilities in [0, 1] from two float32 forwards whose sums run in different
  // orders: they agree to a few float32 ulps of 1, far below the 0.4 and 0.5 role thresholds.
  for (int i = 0; i < L * NH; i++) {
    CHECK(s.previous[i] == Approx(prev[i]).margin(2e-5));
    CHECK(s.induction[i] == Approx(ind[i]).margin(2e-5));
  }
}

TEST_CASE("training run: warmup then constant or cosine learning rate", "[training_run][schedule]") {
  RunSpec s = small_spec();
  s.lr = 1e-3f;
  s.warmup = 10;
  s.steps = 110;
  s.schedule = "constant";
  {
    TrainingRun run(s);
    CHECK(run.learning_rate(0) == Approx(1e-4));
    CHECK(run.learning_rate(9) == Approx(1e-3));
    CHECK(run.learning_rate(100) == Approx(1e-3));
  }
  s.schedule = "cosine";
  TrainingRun run(s);
  CHECK(run.learning_rate(10) == Approx(1e-3));
  CHECK(run.learning_rate(60) == Approx(1e-4 + 0.5 * 9e-4));  // halfway: the midpoint of lr and its 10% floor
  CHECK(run.learning_rate(110) == Approx(1e-4));
}

TEST_CASE("training run: a diverging step keeps the weights and refuses further steps", "[training_run][errors]") {
  RunSpec s = small_spec();
  s.optimizer = "sgd";
  s.clip = 0;
  s.lr = 1e30f;
  TrainingRun run(s);
  std::vector<float> before;
  bool threw = false;
  for (int i = 0; i < 6 && !threw; i++) {
    before.assign(run.trainer().params().begin(), run.trainer().params().end());
    try {
      run.step();
    } catch (const Error& e) {
      threw = true;
      CHECK(std::string(e.what()).find("training diverged") != std::string::npos);
    }
  }
  REQUIRE(threw);
  const auto after = run.trainer().params();
  REQUIRE(std::equal(after.begin(), after.end(), before.begin()));  // the weights before the failed step
  CHECK_THROWS_WITH(run.step(), Catch::Contains("this run diverged"));
}

TEST_CASE("training run: bad specs and texts get clear errors", "[training_run][errors]") {
  RunSpec s = small_spec();
  s.shape.n_embd = 15;
  CHECK_THROWS_WITH(TrainingRun(s), Catch::Contains("multiple of n_head"));
  s = small_spec();
  s.max_period = 40;
  CHECK_THROWS_WITH(TrainingRun(s), Catch::Contains("must repeat at least once"));
  s = small_spec();
  s.lr = -1;
  CHECK_THROWS_WITH(TrainingRun(s), Catch::Contains("learning rate must be a positive number"));
  s = small_spec();
  s.shape.n_embd = 4096;
  s.shape.n_layer = 48;
  s.shape.vocab_size = 50257;
  s.shape.n_head = 16;
  CHECK_THROWS_WITH(TrainingRun(s), Catch::Contains("MiB"));
  RunSpec t = preset("text").spec;
  TrainingRun text(t);
  CHECK_THROWS_WITH(text.step(), Catch::Contains("no text yet"));
  CHECK_THROWS_WITH(text.set_text(""), Catch::Contains("the text is empty"));
  CHECK_THROWS_WITH(text.set_text("too short"),
                    Catch::Contains("the text is too short: 9 tokens, a window needs T+1 = 65"));
  text.set_text(std::string(200, 'a') + "The chef, who trained in Paris, cooked the meal quickly.");
  CHECK(std::isfinite(text.step()));
  CHECK_THROWS_WITH(text.step_on({{1, 2, 3}, {4, 5}}), Catch::Contains("ragged batch"));
  CHECK_THROWS_WITH(text.step_on({{1, 2, 300}}), Catch::Contains("token id 300 in the batch is outside"));
  CHECK_THROWS_WITH(preset("nope"), Catch::Contains("presets: induction"));
}
