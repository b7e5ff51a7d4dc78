// The whole model against PyTorch (float64 references written by scripts/make_fixtures.py), the
// attention invariants, the incremental update against a full recompute, and the shipped models
// against the references their training script wrote.
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
#include "test_util.hpp"

using headscope::Model;
using headscope::RunOptions;
using nlohmann::json;
using test_util::read_bytes;
using test_util::read_text;
using test_util::fixture_dir;
using test_util::kFixtureModels;
using test_util::load_fixture;

namespace {

// |got - ref| <= abs_tol + rel_tol * |ref| for every element, reporting the first failure.
void require_close(const std::vector<float>& got, const json& ref, double abs_tol, double rel_tol, const std::string& what) {
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

// Tolerances against the float64 PyTorch reference. The engine computes in float32 with another
// summation order; PyTorch float32 on the same weights differs from the reference by at most
// 8.1e-6 (logits), 5.7e-6 (hidden), 2.1e-6 (attention) on these fixtures (tests/fixtures/README.md).
// The bounds below leave >10x margin for the SIMD order and stay far below real errors: ablating
// two heads moves logits by 3-11, F16 rounding by up to 0.02.
constexpr double kLogitAbs = 1e-4, kLogitRel = 1e-4;
constexpr double kAttentionAbs = 5e-5;
constexpr double kHiddenAbs = 1e-4, kHiddenRel = 1e-4;

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
        require_close(std::vector<float>(all.end() - (std::ptrdiff_t)V, all.end()), c["logits_last"], kLogitAbs, kLogitRel,
                      "last row of logits_all");
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
        for (int t = 0; t < T; t++) REQUIRE(norms_ablated[((std::size_t)h.layer * m.config().n_head + h.head) * T + t] == 0.0f);
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
        require_close(std::vector<float>(m.logits_last().begin(), m.logits_last().end()), c[key], kLogitAbs, kLogitRel, key);
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

TEST_CASE("incremental update equals a full recompute, bit for bit", "[model][incremental]") {
  // Rows are computed independently and in the same order whether they are computed alone or with
  // others (GEMM tiles group rows but keep each row's k order), so reuse must be exact: tolerance 0.
  // GPT-2, and the Llama family's grouped-query attention and rotary positions (Qwen3's q/k norms)
  for (const std::string& name : {std::string("odd-hs12"), std::string("hs5"), std::string("llama-gqa"), std::string("llama-mqa"), std::string("qwen3-qknorm")}) {
    Model typing = load_fixture(name);
    const std::string text = "The chef, who tr";  // 16 bytes = 16 tokens: fits hs5's context of 16
    RunOptions opt;
    opt.keep_contributions = true;
    opt.all_logits = true;
    int reused_total = 0;
    for (std::size_t len = 1; len <= text.size(); len++) {
      const std::string prefix = text.substr(0, len);
      const auto info = typing.run(prefix, opt);
      reused_total += info.reused_tokens;
      Model fresh = load_fixture(name);
      fresh.run(prefix, opt);
      INFO(name << ": prefix \"" << prefix << "\", reused " << info.reused_tokens);
      REQUIRE(typing.ids() == fresh.ids());
      REQUIRE(typing.attention_all() == fresh.attention_all());
      REQUIRE(typing.logits_all() == fresh.logits_all());
      REQUIRE(typing.hidden_states() == fresh.hidden_states());
      REQUIRE(typing.contribution_norms() == fresh.contribution_norms());
      REQUIRE(typing.contribution(0, 1) == fresh.contribution(0, 1));
    }
    REQUIRE(reused_total > 0);  // the cache was actually used
    // deleting at the end reuses everything and still gives the shorter text's results
    const auto info = typing.run("The chef", opt);
    Model fresh = load_fixture(name);
    fresh.run("The chef", opt);
    REQUIRE(info.reused_tokens == typing.T());
    REQUIRE(typing.logits_all() == fresh.logits_all());
    REQUIRE(std::vector<float>(typing.logits_last().begin(), typing.logits_last().end()) ==
            std::vector<float>(fresh.logits_last().begin(), fresh.logits_last().end()));
    // changing the switched-off heads must not reuse rows computed without them
    RunOptions ablate = opt;
    ablate.ablate = {{0, 0}};
    const auto info2 = typing.run("The chef", ablate);
    REQUIRE(info2.reused_tokens == 0);
    fresh.run("The chef", ablate);
    REQUIRE(typing.logits_all() == fresh.logits_all());
  }
}

TEST_CASE("other heads switched off on the same tokens: the layers below the first change are reused, bit for bit",
          "[model][incremental]") {
  // Layers below the first one whose switched-off heads changed computed the same numbers; the
  // layers from there on run every token as a fresh run does, in the same order: tolerance 0.
  Model m = load_fixture("odd-hs12");
  const int L = m.config().n_layer, NH = m.config().n_head;
  REQUIRE(L >= 2);
  REQUIRE(NH >= 3);
  const std::vector<int32_t> ids = {5, 17, 3, 99, 42, 7, 7, 18, 60, 2, 11};
  const auto same = [&](const RunOptions& opt, const char* what) {
    Model fresh = load_fixture("odd-hs12");
    fresh.run_ids(ids, opt);
    INFO(what);
    REQUIRE(m.attention_all() == fresh.attention_all());
    REQUIRE(m.logits_all() == fresh.logits_all());
    REQUIRE(std::vector<float>(m.logits_last().begin(), m.logits_last().end()) ==
            std::vector<float>(fresh.logits_last().begin(), fresh.logits_last().end()));
    REQUIRE(m.hidden_states() == fresh.hidden_states());
    REQUIRE(m.contribution_norms() == fresh.contribution_norms());
    REQUIRE(m.contribution(L - 1, 1) == fresh.contribution(L - 1, 1));
    REQUIRE(m.value_norms() == fresh.value_norms());
    if (opt.inspect) REQUIRE(m.head_inside().scores == fresh.head_inside().scores);
  };
  RunOptions opt;
  opt.all_logits = true;
  opt.keep_contributions = true;
  opt.ablate = {{L - 1, 0}};
  REQUIRE(m.run_ids(ids, opt).reused_layers == 0);  // nothing cached yet
  (void)m.value_norms();
  // one head more in the last layer: every layer below it comes from the cache
  opt.ablate = {{L - 1, 0}, {L - 1, 2}};
  headscope::RunInfo info = m.run_ids(ids, opt);
  REQUIRE(info.reused_layers == L - 1);
  REQUIRE(info.reused_tokens == 0);
  same(opt, "a head more in the last layer");
  // one of layer 0 switched on: nothing to reuse
  opt.ablate = {{0, 1}, {L - 1, 2}};
  REQUIRE(m.run_ids(ids, opt).reused_layers == 0);
  opt.ablate = {{0, 1}};
  REQUIRE(m.run_ids(ids, opt).reused_layers == L - 1);
  same(opt, "the last layer's head switched on again");
  // an inspected head below the change keeps its insides; other tokens reuse by prefix as before
  opt.inspect = headscope::HeadRef{0, 2};
  m.run_ids(ids, opt);
  opt.ablate = {{0, 1}, {L - 1, 1}};
  REQUIRE(m.run_ids(ids, opt).reused_layers == L - 1);
  same(opt, "with an inspected head below the change");
  const std::vector<int32_t> other = {5, 17, 3, 99, 42, 7, 7, 18, 60, 2, 12};
  opt.ablate = {{0, 1}};
  REQUIRE(m.run_ids(other, opt).reused_layers == 0);  // other tokens: no layer is the same
}

TEST_CASE("a run with every position's logits reuses a cache made without them, and the other way round", "[model][incremental]") {
  // The demo's lab computes the loss (all logits) whenever typing pauses, between keystrokes that
  // only need the last logits. Both must reuse the cached tokens, and give a fresh run's numbers
  // exactly (the LM head computes each row alone, as above: tolerance 0).
  Model typing = load_fixture("odd-hs12");
  RunOptions last_only, all;
  all.all_logits = true;
  const std::vector<std::pair<std::string, bool>> steps = {
      {"The chef, who", false}, {"The chef, who", true}, {"The chef, who tr", false}, {"The chef, who tra", true},
      {"The chef, who trained", true}, {"The chef, who", true}, {"The chef, who cooked", false}, {"The chef, who cooked.", true}};
  bool first = true;
  for (const auto& [text, with_all] : steps) {
    const auto info = typing.run(text, with_all ? all : last_only);
    Model fresh = load_fixture("odd-hs12");
    fresh.run(text, with_all ? all : last_only);
    INFO("\"" << text << "\"" << (with_all ? " with all logits" : "") << ", reused " << info.reused_tokens);
    if (!first) REQUIRE(info.reused_tokens > 0);
    first = false;
    REQUIRE(typing.attention_all() == fresh.attention_all());
    REQUIRE(std::vector<float>(typing.logits_last().begin(), typing.logits_last().end()) ==
            std::vector<float>(fresh.logits_last().begin(), fresh.logits_last().end()));
    if (with_all) REQUIRE(typing.logits_all() == fresh.logits_all());
  }
}

TEST_CASE("reserve() allocates ahead; growing drops the cache and the last results, which then throw", "[model][incremental]") {
  Model m = load_fixture("odd-hs12");  // n_positions 32
  m.run("The chef");
  const std::vector<float> before = m.attention_all();
  REQUIRE_FALSE(m.reserve(4));  // already room: nothing changes
  REQUIRE(m.attention_all() == before);
  REQUIRE(m.reserve(32));  // grows: the buffers behind the results are new
  REQUIRE_THROWS_WITH(m.attention_all(), Catch::Matchers::Contains("run"));
  const auto info = m.run("The chef, who");
  REQUIRE(info.reused_tokens == 0);
  Model fresh = load_fixture("odd-hs12");
  fresh.run("The chef, who");
  REQUIRE(m.attention_all() == fresh.attention_all());
  REQUIRE_FALSE(m.reserve(1000));  // clamped to the context, which is there already
}

TEST_CASE("attention rows in a wider block: the rows a typed token changed, patched into the old ones", "[model][incremental][rows]") {
  // What a viewer does while the reader types: keep every head's rows in a block of `stride` rows
  // of `stride` floats, and after each edit copy only the rows from the first changed token on.
  // The patched blocks must equal a full run's attention exactly (row q depends on tokens 0..q
  // only, and reuse is bit-exact, see above): tolerance 0.
  Model m = load_fixture("odd-hs12");  // n_positions 32, one token per byte
  const int L = m.config().n_layer, NH = m.config().n_head, S = 24;
  std::vector<float> blocks((std::size_t)L * NH * S * S, -1.0f);
  std::vector<int32_t> shown;  // the ids whose rows the blocks hold
  for (const std::string text : {"The chef", "The chef, who", "The chef, who tr", "The chef, wh", "The cat sat"}) {
    m.run(text);
    const int T = m.T();
    int same = 0;
    while (same < (int)shown.size() && same < T && shown[same] == m.ids()[same]) same++;
    std::vector<float> rows(m.attention_rows_floats(same, T - same, S));
    m.copy_attention_rows(rows.data(), same, T - same, S);
    for (int head = 0; head < L * NH; head++)
      std::copy_n(rows.data() + (std::size_t)head * (T - same) * S, (std::size_t)(T - same) * S, blocks.data() + ((std::size_t)head * S + same) * S);
    shown = m.ids();

    const std::vector<float> full = m.attention_all();  // (L, NH, T, T)
    INFO("\"" << text << "\": rows from " << same);
    for (int head = 0; head < L * NH; head++)
      for (int q = 0; q < T; q++)
        for (int k = 0; k < T; k++)
          REQUIRE(blocks[((std::size_t)head * S + q) * S + k] == full[((std::size_t)head * T + q) * T + k]);
  }
  // the default layout is attention_all()'s
  std::vector<float> plain(m.attention_rows_floats(0, m.T(), m.T()));
  m.copy_attention_rows(plain.data(), 0, m.T(), m.T());
  REQUIRE(plain == m.attention_all());
  // layouts that cannot hold the rows are refused before anything is written
  REQUIRE_THROWS_WITH(m.attention_rows_floats(0, m.T(), m.T() - 1), Catch::Matchers::Contains("stride must be within"));
  REQUIRE_THROWS_WITH(m.attention_rows_floats(0, m.T() - 1, m.T()), Catch::Matchers::Contains("cannot hold attention rows"));
  REQUIRE_THROWS_WITH(m.attention_rows_floats(-1, m.T(), m.T()), Catch::Matchers::Contains("must start within"));
  REQUIRE_THROWS_WITH(m.attention_rows_floats(0, 33, 33), Catch::Matchers::Contains("stride must be within"));
  REQUIRE_THROWS_WITH(m.attention_rows_floats(0, 40, 32), Catch::Matchers::Contains("at most n_positions"));
}

TEST_CASE("text longer than the context: the oldest tokens are cut in steps of an eighth of the context", "[model][truncation]") {
  Model m = load_fixture("hs5");  // n_positions 16 (steps of 2), one token per byte
  const std::string text = "abcdefghijklmnopqrstuvwxyz";
  const auto info = m.run(text);
  REQUIRE(info.tokens == 16);
  REQUIRE(info.dropped_tokens == 10);
  REQUIRE(info.first_byte == 10);
  REQUIRE(m.tokens().front().text == "k");
  REQUIRE(m.tokens().front().byte_start == 10);
  REQUIRE(m.tokens().back().byte_end == text.size());
  Model fresh = load_fixture("hs5");
  fresh.run(text.substr(10));
  REQUIRE(std::vector<float>(m.logits_last().begin(), m.logits_last().end()) ==
          std::vector<float>(fresh.logits_last().begin(), fresh.logits_last().end()));
  // one byte more: two tokens go (a whole step), and typing the next byte extends the same window
  const auto cut = m.run(text + "A");
  REQUIRE(cut.dropped_tokens == 12);
  REQUIRE(cut.tokens == 15);
  const auto typed = m.run(text + "AB");
  REQUIRE(typed.dropped_tokens == 12);
  REQUIRE(typed.tokens == 16);
  REQUIRE(typed.reused_tokens == 15);  // an incremental update, not a shift of every position
  Model again = load_fixture("hs5");
  again.run(text.substr(12) + "AB");  // the same window, run fresh: the same numbers (exact, see above)
  REQUIRE(m.attention_all() == again.attention_all());
  REQUIRE(std::vector<float>(m.logits_last().begin(), m.logits_last().end()) ==
          std::vector<float>(again.logits_last().begin(), again.logits_last().end()));
  for (int n = 1; n <= 40; n++) {
    const int d = m.tokens_to_drop(n);
    INFO(n << " tokens: " << d << " cut");
    REQUIRE(d % 2 == 0);
    REQUIRE(n - d <= 16);
    REQUIRE(n - d > (n > 16 ? 14 : 0));
  }
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

// ---- one head's insides (Model::head_inside, the "Inside this head" view) --------------------------

// The reference (tests/fixtures/models/*/inside.json, scripts/make_inside_fixtures.py) is float64
// PyTorch on the folder's own F32 and F16 weights, computed with plain tensor operations. q, k, v,
// z, the write and the value norms are float32 results of the same depth of computation as the
// hidden states and head contributions above (LayerNorm, one product over C, at most L blocks
// before), so they get those tolerances (kHiddenAbs + kHiddenRel |ref|). Scores are products over HS
// (<= 20 here) of such values: the same relative error, and absolute error scaled by |q||k|/sqrt(HS),
// which is below 10 on these fixtures: 10 kHiddenAbs. Attention is the attention tolerance.
TEST_CASE("head_inside: q, k, v, scores, attention, z, the write and value norms equal float64 PyTorch",
          "[model][pytorch][inside]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    const json ref = json::parse(read_text(fixture_dir(name) + "/inside.json"));
    REQUIRE(ref["format"] == "headscope-inside-1");
    REQUIRE(ref["cases"].size() >= 4);
    for (const json& c : ref["cases"]) {
      const std::string weights = c["weights"].get<std::string>();
      Model m = load_fixture(name, weights);
      if (weights == "model-f16.safetensors") REQUIRE(m.weight_storage() == headscope::WeightStorage::f32);
      const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
      const int layer = c["layer"].get<int>(), head = c["head"].get<int>();
      INFO("model " << name << " (" << weights << "), layer " << layer << " head " << head << ", T " << ids.size());
      RunOptions opt;
      opt.inspect = headscope::HeadRef{layer, head};
      m.run_ids(ids, opt);
      const headscope::HeadInside in = m.head_inside();
      REQUIRE(in.layer == layer);
      REQUIRE(in.head == head);
      REQUIRE(in.T == (int)ids.size());
      REQUIRE(in.head_size == c["head_size"].get<int>());
      REQUIRE(in.n_embd == c["n_embd"].get<int>());
      require_close(in.q, c["q"], kHiddenAbs, kHiddenRel, "q");
      require_close(in.k, c["k"], kHiddenAbs, kHiddenRel, "k");
      require_close(in.v, c["v"], kHiddenAbs, kHiddenRel, "v");
      // scores: the reference marks the mask with null, the engine with -infinity
      const int T = in.T;
      std::vector<float> got_scores;
      json want_scores = json::array();
      for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
          const float s = in.scores[(std::size_t)i * T + j];
          const json& r = c["scores"][i][j];
          if (j > i) {
            INFO("score (" << i << ", " << j << ") above the diagonal must be masked");
            REQUIRE(r.is_null());
            REQUIRE((std::isinf(s) && s < 0));
          } else {
            got_scores.push_back(s);
            want_scores.push_back(r);
          }
        }
      require_close(got_scores, want_scores, 10 * kHiddenAbs, kHiddenRel, "scores");
      require_close(in.attention, c["attention"], kAttentionAbs, 0.0, "attention");
      require_close(in.z, c["z"], kHiddenAbs, kHiddenRel, "z");
      require_close(in.out, c["out"], kHiddenAbs, kHiddenRel, "out (the head's write)");
      require_close(in.value_norm, c["value_norm"], kHiddenAbs, kHiddenRel, "value_norm");
    }
  }
}

TEST_CASE("head_inside comes from the forward pass: equal to the run's own maps and writes, and typing keeps it",
          "[model][inside]") {
  Model m = load_fixture("odd-hs12");
  const std::vector<int32_t> ids = {5, 17, 3, 99, 42, 7, 7, 18, 60};
  const int L = m.config().n_layer - 1, H = 2;
  RunOptions opt;
  opt.inspect = headscope::HeadRef{L, H};
  opt.keep_contributions = true;
  m.run_ids(ids, opt);
  const headscope::HeadInside full = m.head_inside();
  // the very numbers the other views show, bit for bit
  REQUIRE(full.attention == m.attention(L, H));
  REQUIRE(full.out == m.contribution(L, H));
  // softmax of the scores, row by row, is the attention (float64 softmax of float32 scores:
  // within the attention kernel's exp error, 3.2e-7 relative, and T roundings)
  for (int i = 0; i < full.T; i++) {
    double mx = -1e30, sum = 0;
    for (int j = 0; j <= i; j++) mx = std::max(mx, (double)full.scores[(std::size_t)i * full.T + j]);
    for (int j = 0; j <= i; j++) sum += std::exp(full.scores[(std::size_t)i * full.T + j] - mx);
    for (int j = 0; j <= i; j++) {
      const double p = std::exp(full.scores[(std::size_t)i * full.T + j] - mx) / sum;
      REQUIRE(std::fabs(full.attention[(std::size_t)i * full.T + j] - p) <= 1e-6);
    }
  }
  // typing at the end (an incremental run on the cache) gives the same insides as a full run, bit for bit
  Model typed = load_fixture("odd-hs12");
  RunOptions inspect_only;
  inspect_only.inspect = headscope::HeadRef{L, H};
  typed.run_ids(std::span<const int32_t>(ids.data(), ids.size() - 3), inspect_only);
  const headscope::RunInfo info = typed.run_ids(ids, inspect_only);
  REQUIRE(info.reused_tokens == (int)ids.size() - 3);
  // every array of the insides equal to the full run's, bit for bit
  const auto same_as_full = [&](const headscope::HeadInside& in) {
    REQUIRE(in.q == full.q);
    REQUIRE(in.k == full.k);
    REQUIRE(in.v == full.v);
    REQUIRE(in.scores == full.scores);
    REQUIRE(in.attention == full.attention);
    REQUIRE(in.z == full.z);
    REQUIRE(in.out == full.out);
    REQUIRE(in.value_norm == full.value_norm);
  };
  same_as_full(typed.head_inside());
  // the insides come from the cache, not from what the run kept: after a run that inspected another
  // head, or none (the page's typing), inspecting this one computes only the new token, and its
  // insides are a full run's, bit for bit
  for (const bool another : {true, false}) {
    INFO((another ? "after a run that inspected another head" : "after a plain run"));
    RunOptions before;
    if (another) before.inspect = headscope::HeadRef{0, 0};
    typed.run_ids(std::span<const int32_t>(ids.data(), ids.size() - 1), before);
    REQUIRE(typed.run_ids(ids, inspect_only).reused_tokens == (int)ids.size() - 1);
    same_as_full(typed.head_inside());
  }
}

TEST_CASE("head_inside: bad heads and a run without inspect are errors", "[model][inside][errors]") {
  Model m = load_fixture("tiny-hs4");
  const std::vector<int32_t> ids = {1, 2, 3};
  RunOptions opt;
  opt.inspect = headscope::HeadRef{m.config().n_layer, 0};
  REQUIRE_THROWS_WITH(m.run_ids(ids, opt), Catch::Contains("layer 2 is outside [0, 2)"));
  opt.inspect = headscope::HeadRef{0, -1};
  REQUIRE_THROWS_WITH(m.run_ids(ids, opt), Catch::Contains("head -1 is outside"));
  REQUIRE_THROWS_WITH(m.head_inside(), Catch::Contains("no results yet"));
  m.run_ids(ids);
  REQUIRE_THROWS_WITH(m.head_inside(), Catch::Contains("no head was inspected"));
}

// ---- every head's value sizes (Model::value_norms, "weight x value size" in every view) -------------

// The same float64 references as head_inside's value norms (inside.json), with their tolerance, but
// from a plain run: value_norms() reads the run's own values, no inspect needed.
TEST_CASE("value_norms: every head's || v_j W_O^h || from a plain run equals float64 PyTorch and head_inside's",
          "[model][pytorch][inside]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    const json ref = json::parse(read_text(fixture_dir(name) + "/inside.json"));
    for (const json& c : ref["cases"]) {
      Model m = load_fixture(name, c["weights"].get<std::string>());
      const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
      const int layer = c["layer"].get<int>(), head = c["head"].get<int>(), T = (int)ids.size();
      const int NH = m.config().n_head;
      INFO("model " << name << " (" << c["weights"] << "), layer " << layer << " head " << head);
      m.run_ids(ids);
      const std::vector<float> all = m.value_norms();
      REQUIRE(all.size() == (std::size_t)m.config().n_layer * NH * T);
      const std::size_t at = ((std::size_t)layer * NH + head) * T;
      const std::vector<float> got(all.begin() + (std::ptrdiff_t)at, all.begin() + (std::ptrdiff_t)(at + T));
      require_close(got, c["value_norm"], kHiddenAbs, kHiddenRel, "value_norms");
      // the inspect path computes the same rows by the same kernel: bit for bit
      RunOptions opt;
      opt.inspect = headscope::HeadRef{layer, head};
      m.run_ids(ids, opt);
      REQUIRE(m.head_inside().value_norm == got);
    }
  }
}

TEST_CASE("value_norms: kept with the cache while typing, and from the run's own values when heads are off",
          "[model][inside][incremental]") {
  const std::string name = "odd-hs12";
  Model m = load_fixture(name);
  const int L = m.config().n_layer, NH = m.config().n_head, C = m.config().n_embd, HS = C / NH;
  REQUIRE(L >= 2);
  const std::vector<int32_t> ids = {5, 17, 3, 99, 42, 7, 7, 18, 60, 2, 11};
  const std::span<const int32_t> all(ids), prefix(ids.data(), ids.size() - 4);
  Model fresh = load_fixture(name);
  fresh.run_ids(all);
  const std::vector<float> full = fresh.value_norms();
  // asked for before typing (rows kept), then typed: only the new rows are computed, bit for bit
  m.run_ids(prefix);
  (void)m.value_norms();
  REQUIRE(m.run_ids(all).reused_tokens == (int)prefix.size());
  REQUIRE(m.value_norms() == full);
  // not asked for before typing: all rows computed after
  Model late = load_fixture(name);
  late.run_ids(prefix);
  late.run_ids(all);
  REQUIRE(late.value_norms() == full);

  // a head of layer 0 switched off: layer 0's values are unchanged (bit for bit), later layers' come from
  // the changed residual stream. Reference: the run's own hidden states through ln_1, W_V and W_O^h in
  // double, from the weights file; one LayerNorm and two products in float32 on the engine's side,
  // the same depth as head_inside's values: kHiddenAbs + kHiddenRel |ref|.
  RunOptions off;
  off.ablate = {{0, 1}};
  m.run_ids(all, off);
  const std::vector<float> ablated = m.value_norms();
  const int T = (int)ids.size();
  REQUIRE(std::equal(ablated.begin(), ablated.begin() + (std::ptrdiff_t)NH * T, full.begin()));
  double moved_most = 0;
  const std::vector<float> hidden = m.hidden_states();
  const std::vector<uint8_t> bytes = read_bytes(fixture_dir(name) + "/model.safetensors");
  const headscope::SafeTensors st(bytes, "model.safetensors");
  const std::string pre = st.contains("wte.weight") ? "" : "transformer.";
  for (int l = 1; l < L; l++) {
    const std::string b = pre + "h." + std::to_string(l) + ".";
    const std::vector<float> g = st.read_f32(b + "ln_1.weight", {C}), beta = st.read_f32(b + "ln_1.bias", {C});
    const std::vector<float> w_attn = st.read_f32(b + "attn.c_attn.weight", {C, 3 * C});
    const std::vector<float> b_attn = st.read_f32(b + "attn.c_attn.bias", {3 * C});
    const std::vector<float> w_o = st.read_f32(b + "attn.c_proj.weight", {C, C});
    for (int h = 0; h < NH; h++) {
      json want = json::array();
      std::vector<float> got;
      for (int t = 0; t < T; t++) {
        const float* x = &hidden[((std::size_t)l * T + t) * C];
        double mean = 0, var = 0;
        for (int i = 0; i < C; i++) mean += x[i];
        mean /= C;
        for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
        const double rstd = 1 / std::sqrt(var / C + m.config().layer_norm_epsilon);
        std::vector<double> v(HS, 0.0), out(C, 0.0);
        for (int d = 0; d < HS; d++) {
          const int col = 2 * C + h * HS + d;
          double acc = b_attn[col];
          for (int i = 0; i < C; i++) acc += ((x[i] - mean) * rstd * g[i] + beta[i]) * w_attn[(std::size_t)i * 3 * C + col];
          v[d] = acc;
        }
        double norm = 0;
        for (int o = 0; o < C; o++) {
          double acc = 0;
          for (int d = 0; d < HS; d++) acc += v[d] * w_o[(std::size_t)(h * HS + d) * C + o];
          norm += acc * acc;
        }
        want.push_back(std::sqrt(norm));
        got.push_back(ablated[((std::size_t)l * NH + h) * T + t]);
        moved_most = std::max(moved_most, (double)std::fabs(ablated[((std::size_t)l * NH + h) * T + t] - full[((std::size_t)l * NH + h) * T + t]));
      }
      INFO("layer " << l << " head " << h << " with head 0:1 switched off");
      require_close(got, want, kHiddenAbs, kHiddenRel, "value_norms");
    }
  }
  // and the switch made a difference the check could see (far above the tolerance)
  REQUIRE(moved_most > 100 * kHiddenAbs);
}

TEST_CASE("value_norms: before any run it is an error", "[model][inside][errors]") {
  Model m = load_fixture("tiny-hs4");
  REQUIRE_THROWS_WITH(m.value_norms(), Catch::Contains("no results yet"));
}

// ---- direct logit attribution (Model::logit_attribution) ---------------------------------------------

TEST_CASE("logit attribution: the parts sum to the logit, and a head's part is its write through the final LayerNorm",
          "[model][attribution]") {
  for (const std::string& name : test_util::all_fixture_models()) {
    Model m = load_fixture(name);
    const json ref = json::parse(read_text(fixture_dir(name) + "/reference.json"));
    const std::vector<int32_t> ids = ref["cases"][0]["ids"].get<std::vector<int32_t>>();
    RunOptions opt;
    opt.keep_contributions = true;
    opt.all_logits = true;
    m.run_ids(ids, opt);
    const int T = m.T(), C = m.config().n_embd, L = m.config().n_layer, NH = m.config().n_head;
    const std::vector<float> logits = m.logits_all();
    const std::vector<float> hidden = m.hidden_states();
    const std::vector<uint8_t> bytes = read_bytes(fixture_dir(name) + "/model.safetensors");
    const headscope::SafeTensors st(bytes, "model.safetensors");
    // GPT-2: LayerNorm and the tied wte; the Llama family: RMSNorm (no centering) and its LM head
    const bool llama = m.config().family == headscope::Family::llama;
    const std::string pre = st.contains("wte.weight") ? "" : "transformer.";
    const std::string unembedding = !llama ? pre + "wte.weight" : st.contains("lm_head.weight") ? "lm_head.weight" : "model.embed_tokens.weight";
    const std::vector<float> wte = st.read_f32(unembedding, {m.config().vocab_size, C});
    const std::vector<float> gamma = st.read_f32(llama ? "model.norm.weight" : pre + "ln_f.weight", {C});
    for (int t : {0, T / 2, T - 1})
      for (int token : {ids[std::min(t + 1, T - 1)], 7}) {
        INFO("model " << name << " position " << t << " token " << token);
        const headscope::LogitAttribution a = m.logit_attribution(t, token);
        REQUIRE((int)a.heads.size() == L * NH);
        REQUIRE((int)a.mlp.size() == L);
        const double logit = logits[(std::size_t)t * m.config().vocab_size + token];
        REQUIRE(a.logit == logit);
        // The parts are linear in what each writes and add up to the final residual stream, so their
        // sum is LayerNorm(x) . wte[token] computed in double; the model's float32 logit is the same
        // C-term dot product after a float32 LayerNorm: (C + 8) u relative to the sum of |terms| bounds both.
        const float* x = &hidden[((std::size_t)L * T + t) * C];
        double mean = 0, var = 0, terms = 0;
        for (int i = 0; i < C && !llama; i++) mean += x[i];
        mean /= C;
        for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
        const double rstd = 1 / std::sqrt(var / C + m.config().layer_norm_epsilon);
        for (int i = 0; i < C; i++) terms += std::fabs((x[i] - mean) * rstd * gamma[i] * wte[(std::size_t)token * C + i]);
        const double tol = 2.0 * (C + 8) * 5.96e-8 * (terms + 1) + 1e-6;
        REQUIRE(std::fabs(a.total() - logit) <= tol);
        // a head's part from the public contribution and the checkpoint's tensors
        for (int l = 0; l < L; l++)
          for (int h = 0; h < NH; h++) {
            const std::vector<float> cv = m.contribution(l, h);
            double cm = 0, s = 0;
            for (int i = 0; i < C && !llama; i++) cm += cv[(std::size_t)t * C + i];
            cm /= C;
            for (int i = 0; i < C; i++) s += (cv[(std::size_t)t * C + i] - cm) * gamma[i] * wte[(std::size_t)token * C + i];
            REQUIRE(std::fabs(a.heads[(std::size_t)l * NH + h] - s * rstd) <= 1e-9 * (1 + std::fabs(s * rstd)));
          }
      }
    REQUIRE_THROWS_WITH(m.logit_attribution(T, 0), Catch::Contains("position"));
    REQUIRE_THROWS_WITH(m.logit_attribution(0, m.config().vocab_size), Catch::Contains("token"));
    // without kept contributions (the page's runs) the parts are the same, bit for bit
    const headscope::LogitAttribution kept = m.logit_attribution(T - 1, 7);
    m.run_ids(ids);
    const headscope::LogitAttribution plain = m.logit_attribution(T - 1, 7);
    REQUIRE(plain.heads == kept.heads);
    REQUIRE(plain.mlp == kept.mlp);
  }
}
