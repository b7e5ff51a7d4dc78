// The whole model against PyTorch (float64 references written by scripts/fixtures/reference.py) for both
// families' fixtures, F16 and BF16 checkpoints, text through the tokenizer, the attention invariants,
// and the shipped models against the references their training script wrote. Runs that reuse the
// cache are tested in test_incremental.cpp; one head's insides, the value sizes and the logit
// attribution in test_inside.cpp.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/safetensors.hpp"
#include "reference_checks.hpp"
#include "test_util.hpp"

namespace {

void require_attention_invariants(const Model& m) {
  const int T = m.T(), L = m.config().n_layer, NH = m.config().n_head;
  for (int l = 0; l < L; l++)
    for (int h = 0; h < NH; h++) {
      const std::vector<float> a = m.attention(l, h);
      for (int t = 0; t < T; t++) {
        double sum = 0;
        for (int j = 0; j < T; j++) {
          const float p = a[(std::size_t)t * T + j];
          INFO("layer " << l << " head " << h << " row " << t << " column " << j);
          if (j > t) REQUIRE(p == 0.0f);  // causal: exactly zero, not merely small
          REQUIRE(p >= 0.0f);
          sum += p;
        }
        // t+1 float32 probabilities, each rounded: the sum is 1 within (t+1) ulp-ish; 1e-5 at T <= 1024.
        INFO("layer " << l << " head " << h << " row " << t);
        REQUIRE(std::fabs(sum - 1.0) <= 1e-5);
      }
    }
}

}  // namespace

TEST_CASE("fixture models match the PyTorch float64 reference", "[model][pytorch]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    Model m = load_fixture(name);
    const json ref = json::parse(read_text(fixture_dir(name) + "/reference.json"));
    REQUIRE(ref["format"] == "headscope-reference-1");
    for (const json& c : ref["cases"]) {
      const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
      INFO("model " << name << ", text \"" << c["text"].get<std::string>() << "\", T " << ids.size());
      RunOptions opt;
      opt.all_logits = true;
      opt.keep_contributions = true;
      m.run_ids(ids, opt);
      // "logits" holds only the rows listed in "logits_positions" of the (T, V) logits; the last
      // row is checked against "logits_last"
      {
        const std::vector<float> all = m.logits_all();
        const std::size_t V = (std::size_t)m.config().vocab_size, T = ids.size();
        REQUIRE(all.size() == T * V);
        std::vector<float> rows;
        for (const json& p : c["logits_positions"]) {
          const std::size_t t = p.get<std::size_t>();
          REQUIRE(t < T);
          rows.insert(rows.end(), all.begin() + (std::ptrdiff_t)(t * V), all.begin() + (std::ptrdiff_t)((t + 1) * V));
        }
        REQUIRE(!rows.empty());
        require_close(rows, c["logits"], kLogitAbs, kLogitRel, "logits (stored rows)");
        require_close(std::vector<float>(all.end() - (std::ptrdiff_t)V, all.end()), c["logits_last"], kLogitAbs,
                      kLogitRel, "last row of logits_all");
      }
      require_close(std::vector<float>(m.logits_last().begin(), m.logits_last().end()), c["logits_last"], kLogitAbs,
                    kLogitRel, "logits_last");
      require_close(m.attention_all(), c["attention"], kAttentionAbs, 0.0, "attention");
      require_close(m.hidden_states(), c["hidden"], kHiddenAbs, kHiddenRel, "hidden states");
      std::vector<float> contrib;
      for (int l = 0; l < m.config().n_layer; l++)
        for (int h = 0; h < m.config().n_head; h++) {
          const auto v = m.contribution(l, h);
          contrib.insert(contrib.end(), v.begin(), v.end());
        }
      require_close(contrib, c["contrib"], kHiddenAbs, kHiddenRel, "head contributions");

      // the norms the UI shows are the norms of those same vectors
      const std::vector<float> norms = m.contribution_norms();
      const int T = m.T(), C = m.config().n_embd;
      for (std::size_t lh = 0; lh < norms.size() / T; lh++)
        for (int t = 0; t < T; t++) {
          double s = 0;
          for (int d = 0; d < C; d++) s += std::pow(contrib[(lh * T + t) * C + d], 2);
          REQUIRE(std::fabs(norms[lh * T + t] - std::sqrt(s)) <= 1e-5 * (1 + std::sqrt(s)));
        }
      require_attention_invariants(m);

      // switched-off heads, as PyTorch with the same heads' outputs zeroed before c_proj
      RunOptions ablate;
      for (const json& h : c["ablated"]["heads"]) ablate.ablate.push_back({h[0].get<int>(), h[1].get<int>()});
      m.run_ids(ids, ablate);
      require_close(std::vector<float>(m.logits_last().begin(), m.logits_last().end()), c["ablated"]["logits_last"],
                    kLogitAbs, kLogitRel, "ablated logits_last");
      for (const auto& h : ablate.ablate) {
        const auto norms_ablated = m.contribution_norms();
        for (int t = 0; t < T; t++)
          REQUIRE(norms_ablated[((std::size_t)h.layer * m.config().n_head + h.head) * T + t] == 0.0f);
      }
    }
  }
}

TEST_CASE("F16 and BF16 checkpoints load and match their own rounded-weight references", "[model][pytorch][dtype]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    const json ref = json::parse(read_text(fixture_dir(name) + "/reference.json"));
    for (const auto& [file, key] : {std::pair{"model-f16.safetensors", "f16_logits_last"},
                                    std::pair{"model-bf16.safetensors", "bf16_logits_last"}}) {
      Model m = load_fixture(name, file);
      for (const json& c : ref["cases"]) {
        INFO("model " << name << " " << file << " text \"" << c["text"].get<std::string>() << "\"");
        m.run_ids(c["ids"].get<std::vector<int32_t>>());
        require_close(std::vector<float>(m.logits_last().begin(), m.logits_last().end()), c[key], kLogitAbs, kLogitRel,
                      key);
      }
    }
  }
}

TEST_CASE("text goes through the tokenizer to the same ids as the reference", "[model][tokenizer]") {
  Model m = Model::load_directory(fixture_dir("odd-hs12"));
  const json ref = json::parse(read_text(fixture_dir("odd-hs12") + "/reference.json"));
  const json& c = ref["cases"][1];  // "a": short enough not to be truncated
  const auto info = m.run(c["text"].get<std::string>());
  REQUIRE(m.ids() == c["ids"].get<std::vector<int32_t>>());
  REQUIRE(info.dropped_tokens == 0);
  require_close(std::vector<float>(m.logits_last().begin(), m.logits_last().end()), c["logits_last"], kLogitAbs,
                kLogitRel, "logits_last");
}

TEST_CASE("shipped models match the references their training script wrote", "[model][shipped]") {
  const std::filesystem::path models_dir(HEADSCOPE_MODELS_DIR);
  // the default model must be there; every shipped model folder is checked
  REQUIRE(std::filesystem::exists(models_dir / "headscope-base" / "model.safetensors"));
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(models_dir))
    if (std::filesystem::exists(entry.path() / "model.safetensors")) names.push_back(entry.path().filename().string());
  for (const std::string& name : names) {
    REQUIRE(std::filesystem::exists(models_dir / name / "reference.json"));
    Model m = Model::load_directory(models_dir / name);
    const json ref = json::parse(read_text((models_dir / name / "reference.json").string()));
    for (const json& c : ref["cases"]) {
      INFO("shipped model " << name << ", text \"" << c["text"].get<std::string>() << "\"");
      m.run(c["text"].get<std::string>());
      // the C++ tokenizer must give the training script's Python tokenizer's ids exactly
      REQUIRE(m.ids() == c["ids"].get<std::vector<int32_t>>());
      // The reference is PyTorch float32 on the same F16-rounded weights: two float32 computations
      // in different orders, through 4+ layers: 2e-3 absolute on logits of magnitude ~10.
      require_close(std::vector<float>(m.logits_last().begin(), m.logits_last().end()), c["logits_last"], 2e-3, 1e-4,
                    "logits_last");
      require_close(m.attention_all(), c["attention"], 2e-4, 0.0, "attention");
      require_attention_invariants(m);
    }
  }
}
