// Inside the model's heads, against float64 PyTorch (inside.json) and against the forward pass's own
// results: one head's q, k, v, scores, attention, z and write (Model::head_inside), every head's value
// sizes (Model::value_norms), and the direct logit attribution (Model::logit_attribution).
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

// ---- one head's insides (Model::head_inside, the "Inside this head" view) --------------------------

// The reference (tests/fixtures/models/*/inside.json, scripts/fixtures/inside.py) is float64
// PyTorch on the folder's own F32 and F16 weights, computed with plain tensor operations. q, k, v,
// z, the write and the value norms are float32 results of the same depth of computation as the
// hidden states and head contributions (test_model.cpp: LayerNorm, one product over C, at most L blocks
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
          for (int i = 0; i < C; i++)
            acc += ((x[i] - mean) * rstd * g[i] + beta[i]) * w_attn[(std::size_t)i * 3 * C + col];
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
        moved_most = std::max(moved_most, (double)std::fabs(ablated[((std::size_t)l * NH + h) * T + t] -
                                                            full[((std::size_t)l * NH + h) * T + t]));
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
    const std::string unembedding = !llama                          ? pre + "wte.weight"
                                    : st.contains("lm_head.weight") ? "lm_head.weight"
                                                                    : "model.embed_tokens.weight";
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
        for (int i = 0; i < C; i++)
          terms += std::fabs((x[i] - mean) * rstd * gamma[i] * wte[(std::size_t)token * C + i]);
        const double tol = 2.0 * (C + 8) * 5.96e-8 * (terms + 1) + 1e-6;
        REQUIRE(std::fabs(a.total() - logit) <= tol);
        // a head's part from the public contribution and the checkpoint's tensors
        for (int l = 0; l < L; l++)
          for (int h = 0; h < NH; h++) {
            const std::vector<float> cv = m.contribution(l, h);
            double cm = 0, s = 0;
            for (int i = 0; i < C && !llama; i++) cm += cv[(std::size_t)t * C + i];
            cm /= C;
            for (int i = 0; i < C; i++)
              s += (cv[(std::size_t)t * C + i] - cm) * gamma[i] * wte[(std::size_t)token * C + i];
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
