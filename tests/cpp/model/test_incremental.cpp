// Runs that reuse the cache, each against a fresh run, bit for bit: typing (the incremental update),
// other heads switched off on the same tokens (the layers below the first change reused), runs with and
// without every position's logits, reserve(), attention rows patched into a wider block, and text
// longer than the context, cut in steps.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/safetensors.hpp"
#include "reference_checks.hpp"
#include "test_util.hpp"

TEST_CASE("incremental update equals a full recompute, bit for bit", "[model][incremental]") {
  // Rows are computed independently and in the same order whether they are computed alone or with
  // others (GEMM tiles group rows but keep each row's k order), so reuse must be exact: tolerance 0.
  // GPT-2, and the Llama family's grouped-query attention and rotary positions (Qwen3's q/k norms)
  for (const std::string& name : {std::string("odd-hs12"), std::string("hs5"), std::string("llama-gqa"),
                                  std::string("llama-mqa"), std::string("qwen3-qknorm")}) {
    Model typing = load_fixture(name);
    const std::string text = "The chef, who tr";  // 16 bytes = 16 tokens: fits hs5's context of 16
    RunOptions opt;
    opt.keep_contributions = true;
    opt.all_logits = true;
    INFO("model " << name);
    const int reused_total = require_typing_equals_fresh(
        typing, [&] { return load_fixture(name); }, text, opt,
        [](const Model& typed, const Model& fresh) {
          REQUIRE(typed.ids() == fresh.ids());
          REQUIRE(typed.contribution_norms() == fresh.contribution_norms());
          // the columns from a token on (what typing sends): those of the whole, head by head
          const int T = (int)fresh.ids().size(), LH = (int)(fresh.contribution_norms().size() / T);
          for (int from : {0, T / 2, T - 1, T}) {
            const std::vector<float> all = fresh.contribution_norms(), cols = typed.contribution_norms(from);
            REQUIRE(cols.size() == (std::size_t)LH * (T - from));
            for (int lh = 0; lh < LH; lh++)
              REQUIRE(std::equal(cols.begin() + (std::ptrdiff_t)lh * (T - from),
                                 cols.begin() + (std::ptrdiff_t)(lh + 1) * (T - from),
                                 all.begin() + (std::ptrdiff_t)lh * T + from));
          }
          REQUIRE_THROWS_WITH(typed.contribution_norms(T + 1), Catch::Contains("outside [0, " + std::to_string(T)));
          REQUIRE_THROWS_WITH(typed.contribution_norms(-1), Catch::Contains("outside"));
        });
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

TEST_CASE("a run with every position's logits reuses a cache made without them, and the other way round",
          "[model][incremental]") {
  // The demo's lab computes the loss (all logits) whenever typing pauses, between keystrokes that
  // only need the last logits. Both must reuse the cached tokens, and give a fresh run's numbers
  // exactly (the LM head computes each row alone, as above: tolerance 0).
  Model typing = load_fixture("odd-hs12");
  RunOptions last_only, all;
  all.all_logits = true;
  const std::vector<std::pair<std::string, bool>> steps = {
      {"The chef, who", false},        {"The chef, who", true},         {"The chef, who tr", false},
      {"The chef, who tra", true},     {"The chef, who trained", true}, {"The chef, who", true},
      {"The chef, who cooked", false}, {"The chef, who cooked.", true}};
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

TEST_CASE("a run of the tokens the cache holds keeps the last logits; a run that changes the last row recomputes them",
          "[model][incremental]") {
  // A view's tile or pull runs the text on screen again, which recomputes no row, so its last logits
  // are kept rather than computed again (a whole LM head). Every other way to reach the same token
  // count with another last row must recompute them: deleting back to a shorter text (its last row
  // was computed, its logits were not), other heads switched off on the same tokens (the layers from
  // the first change are recomputed), a cleared cache. Each step against a fresh run, tolerance 0
  // (the LM head computes each row alone, as above).
  for (const std::string& name : {std::string("odd-hs12"), std::string("llama-gqa")}) {
    Model typing = load_fixture(name);
    RunOptions plain, ablated;
    ablated.ablate = {{0, 0}};
    // text, heads off, whether the cache may serve it (false: other heads off than the last run's,
    // so no token is reused and the layers below the first change are)
    const std::vector<std::tuple<std::string, bool, bool>> steps = {
        {"The chef", false, true},     {"The chef", false, true},  {"The chef, w", false, true},
        {"The chef", false, true},     {"The chef", false, true},  {"The chef", true, false},
        {"The chef", true, true},      {"The chef", false, false}, {"The chef, who", false, true},
        {"The chef, who", false, true}};
    std::vector<int32_t> last;  // the last run's tokens
    int kept_whole = 0;         // steps that reused every token
    for (const auto& [text, off, cacheable] : steps) {
      const auto info = typing.run(text, off ? ablated : plain);
      Model fresh = load_fixture(name);
      fresh.run(text, off ? ablated : plain);
      INFO(name << ": \"" << text << "\"" << (off ? " with head 0.0 off" : "") << ", reused " << info.reused_tokens);
      // the tokens reused are those the last run shares with this one, as tokenized
      const std::vector<int32_t> ids = fresh.ids();
      int shared = 0;
      while (cacheable && shared < (int)std::min(ids.size(), last.size()) && ids[shared] == last[shared]) shared++;
      REQUIRE(info.reused_tokens == shared);
      kept_whole += shared == (int)ids.size();
      last = ids;
      REQUIRE(std::vector<float>(typing.logits_last().begin(), typing.logits_last().end()) ==
              std::vector<float>(fresh.logits_last().begin(), fresh.logits_last().end()));
    }
    // the runs that compute no row: the repeats, and (as byte-level odd-hs12 tokenizes) deleting back
    REQUIRE(kept_whole >= (name == "odd-hs12" ? 4 : 3));
    typing.clear_cache();
    typing.run("The chef, w", plain);
    Model fresh = load_fixture(name);
    fresh.run("The chef, w", plain);
    REQUIRE(std::vector<float>(typing.logits_last().begin(), typing.logits_last().end()) ==
            std::vector<float>(fresh.logits_last().begin(), fresh.logits_last().end()));
  }
}

TEST_CASE("reserve() allocates ahead; growing drops the cache and the last results, which then throw",
          "[model][incremental]") {
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

TEST_CASE("attention rows in a wider block: the rows a typed token changed, patched into the old ones",
          "[model][incremental][rows]") {
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
      std::copy_n(rows.data() + (std::size_t)head * (T - same) * S, (std::size_t)(T - same) * S,
                  blocks.data() + ((std::size_t)head * S + same) * S);
    shown = m.ids();
    // one head's block alone (what the JavaScript binding copies out a head at a time) is that head's
    // block of the whole copy, exactly: the same rows copied
    std::vector<float> one((std::size_t)(T - same) * S, -2.0f);
    for (int l = 0; l < L; l++)
      for (int h = 0; h < NH; h++) {
        m.copy_head_attention_rows(one.data(), l, h, same, T - same, S);
        REQUIRE(std::equal(one.begin(), one.end(), rows.begin() + (std::ptrdiff_t)((l * NH + h) * one.size())));
      }

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
  REQUIRE_THROWS_WITH(m.attention_rows_floats(0, m.T() - 1, m.T()),
                      Catch::Matchers::Contains("cannot hold attention rows"));
  REQUIRE_THROWS_WITH(m.attention_rows_floats(-1, m.T(), m.T()), Catch::Matchers::Contains("must start within"));
  REQUIRE_THROWS_WITH(m.attention_rows_floats(0, 33, 33), Catch::Matchers::Contains("stride must be within"));
  REQUIRE_THROWS_WITH(m.attention_rows_floats(0, 40, 32), Catch::Matchers::Contains("at most n_positions"));
  std::vector<float> one((std::size_t)m.T() * m.T());
  REQUIRE_THROWS_WITH(m.copy_head_attention_rows(one.data(), L, 0, 0, m.T(), m.T()),
                      Catch::Matchers::Contains("is outside [0, "));
  REQUIRE_THROWS_WITH(m.copy_head_attention_rows(one.data(), 0, NH, 0, m.T(), m.T()),
                      Catch::Matchers::Contains("is outside [0, "));
  REQUIRE_THROWS_WITH(m.copy_head_attention_rows(one.data(), 0, 0, 0, m.T(), m.T() - 1),
                      Catch::Matchers::Contains("stride must be within"));
}

TEST_CASE("text longer than the context: the oldest tokens are cut in steps of an eighth of the context",
          "[model][truncation]") {
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
