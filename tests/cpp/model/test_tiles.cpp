// Parts of the attention maps a view pulls from the engine (Model::attention_tile,
// Model::attention_thumbnails) against the full maps the run kept (Model::attention): a tile at bin 1
// is the map's cells bit for bit (the forward pass's own kernel recomputes them from the key cache);
// a pooled tile and every thumbnail are the stated reduction (each cell the largest weight of its
// bin x bin block) of the full map, computed here independently: maxima of the same floats, so exact.
// GPT-2 and Llama-family fixtures, after a full run and after typing at the end (the cache appended).
// A model that keeps no maps (LoadOptions::attention_maps = false) recomputes every row it is asked
// for with the same kernel: all it gives equals the keeping model's, bit for bit.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/explain.hpp"
#include "headscope/model.hpp"
#include "kernels/kernels.hpp"
#include "test_util.hpp"

using headscope::AttentionTile;
using headscope::Model;
using test_util::load_fixture;

namespace {

// cell (a, b) = max of map[r][j] over r in [r0 + a bin, ...) and j in [c0 + b bin, ...), clipped to the range
std::vector<float> pooled(const std::vector<float>& map, int T, int r0, int r1, int c0, int c1, int bin) {
  const int rows = (r1 - r0 + bin - 1) / bin, cols = (c1 - c0 + bin - 1) / bin;
  std::vector<float> out((std::size_t)rows * cols, 0.0f);
  for (int a = 0; a < rows; a++)
    for (int b = 0; b < cols; b++) {
      float m = 0.0f;  // attention weights are >= 0; a block above the diagonal is all 0
      for (int r = r0 + a * bin; r < std::min(r1, r0 + (a + 1) * bin); r++)
        for (int j = c0 + b * bin; j < std::min(c1, c0 + (b + 1) * bin); j++)
          m = std::max(m, map[(std::size_t)r * T + j]);
      out[(std::size_t)a * cols + b] = m;
    }
  return out;
}

// attention_thumbnails(size) against its definition: the bin the smallest power of two that fits T in
// `size` cells, each head's cells the max-pooling of its full map (exact)
void check_thumbnails(const Model& m, int size) {
  const int T = m.T(), L = m.config().n_layer, NH = m.config().n_head;
  int bin = 0;
  const std::vector<float> thumbs = m.attention_thumbnails(size, &bin);
  REQUIRE(
      ((bin & (bin - 1)) == 0 && (T + bin - 1) / bin <= size && (bin == 1 || (T + bin / 2 - 1) / (bin / 2) > size)));
  REQUIRE(bin == headscope::attention_thumbnail_bin(T, size));
  const int n = (T + bin - 1) / bin;
  REQUIRE(thumbs.size() == (std::size_t)L * NH * n * n);
  for (int lh = 0; lh < L * NH; lh++) {
    const std::vector<float> want = pooled(m.attention(lh / NH, lh % NH), T, 0, T, 0, T, bin);
    const std::vector<float> got(thumbs.begin() + (std::ptrdiff_t)lh * n * n,
                                 thumbs.begin() + (std::ptrdiff_t)(lh + 1) * n * n);
    test_util::require_same_bits(got, want, "head " + std::to_string(lh) + "'s thumbnail, bin " + std::to_string(bin));
  }
  // from a cell row on (typing sends those): each head's rows [r, n) of the whole, bit for bit
  for (const int r : {1, n / 2, n - 1, n}) {
    if (r < 0 || r > n) continue;
    const std::vector<float> part = m.attention_thumbnails(size, nullptr, r);
    REQUIRE(part.size() == (std::size_t)L * NH * (n - r) * n);
    for (int lh = 0; lh < L * NH; lh++)
      test_util::require_same_bits(std::vector<float>(part.begin() + (std::ptrdiff_t)lh * (n - r) * n,
                                                      part.begin() + (std::ptrdiff_t)(lh + 1) * (n - r) * n),
                                   std::vector<float>(thumbs.begin() + (std::ptrdiff_t)(lh * n + r) * n,
                                                      thumbs.begin() + (std::ptrdiff_t)(lh + 1) * n * n),
                                   "head " + std::to_string(lh) + "'s thumbnail from cell row " + std::to_string(r));
  }
  REQUIRE_THROWS_WITH(m.attention_thumbnails(size, nullptr, n + 1), Catch::Matchers::Contains("outside [0, "));
  REQUIRE_THROWS_WITH(m.attention_thumbnails(size, nullptr, -1), Catch::Matchers::Contains("outside [0, "));
}

void check_tiles(const Model& m, std::mt19937& rng) {
  const int T = m.T(), L = m.config().n_layer, NH = m.config().n_head;
  for (int layer = 0; layer < L; layer++)
    for (int head = 0; head < NH; head++) {
      const std::vector<float> map = m.attention(layer, head);
      INFO("layer " << layer << " head " << head << " T " << T);
      // the whole map at bin 1: the kept map, bit for bit
      const AttentionTile all = m.attention_tile(layer, head, 0, T, 0, T, 1);
      REQUIRE(all.rows == T);
      REQUIRE(all.cols == T);
      test_util::require_same_bits(all.values, map, "the whole map as a tile");
      for (int trial = 0; trial < 4; trial++) {
        std::uniform_int_distribution<int> pos(0, T - 1);
        int r0 = pos(rng), r1 = pos(rng), c0 = pos(rng), c1 = pos(rng);
        if (r0 > r1) std::swap(r0, r1);
        if (c0 > c1) std::swap(c0, c1);
        r1++, c1++;
        const int bin = std::uniform_int_distribution<int>(1, std::max(1, T / 2))(rng);
        INFO("rows [" << r0 << ", " << r1 << ") columns [" << c0 << ", " << c1 << ") bin " << bin);
        const AttentionTile tile = m.attention_tile(layer, head, r0, r1, c0, c1, bin);
        REQUIRE(tile.rows == (r1 - r0 + bin - 1) / bin);
        REQUIRE(tile.cols == (c1 - c0 + bin - 1) / bin);
        test_util::require_same_bits(tile.values, pooled(map, T, r0, r1, c0, c1, bin), "a pooled tile");
      }
    }
  for (int size : {1, 3, 8, 128}) {
    INFO("thumbnails of size " << size << ", T " << T);
    check_thumbnails(m, size);
  }
}

}  // namespace

TEST_CASE("attention tiles and thumbnails equal the full maps' cells and their max-pooling", "[model][tiles]") {
  std::mt19937 rng(31);
  for (const std::string& name : test_util::all_fixture_models()) {
    INFO("model " << name);
    Model m = load_fixture(name);
    m.run("The chef");
    check_tiles(m, rng);
    // typing at the end: the new rows come from the appended cache
    const headscope::RunInfo info = m.run("The chef cooked");
    REQUIRE(info.reused_tokens > 0);
    check_tiles(m, rng);
  }
}

TEST_CASE("the thumbnails a run keeps follow every edit of the text and every head switched off", "[model][tiles]") {
  // The thumbnails are raised row by row by the forward pass and carried from run to run: appended
  // rows raise their cells, a bin that doubles pools 2 x 2 cells, a deleted or changed ending clears
  // its cells (the kept rows of a shared cell row pooled again from the cache), a shorter bin and a
  // change of switched-off heads pool again. After each run they must equal the pooling of that
  // run's full maps, computed here (tolerance 0: maxima of the same floats), with a kept size of 4
  // so that these short texts cross several bins, keeping the maps and keeping none.
  for (const bool maps : {true, false}) {
    headscope::LoadOptions o;
    o.thumbnail_size = 4;
    o.attention_maps = maps;
    for (const std::string& name : {std::string("tiny-hs4"), std::string("llama-gqa")}) {
      INFO("model " << name << (maps ? " keeping the maps" : " keeping none"));
      Model m = load_fixture(name, "model.safetensors", o);
      const int L = m.config().n_layer, NH = m.config().n_head;
      struct Step {
        const char* text;
        std::vector<headscope::HeadRef> ablate;
      };
      const std::vector<Step> steps = {
          {"The chef", {}},
          {"The chef, who", {}},                                                      // typing: bin 1 to 2 or 4
          {"The chef, who trained in Paris, cooked the meal quickly.", {}},           // a pasted ending
          {"The chef, who trained in Paris, cooked the meal quick", {}},              // deleted at the end
          {"The chef, who trained in Paris, cooked the meal quick", {{L - 1, 0}}},    // a head off in the last layer
          {"The chef, who trained in Paris, cooked the meal quick", {{0, NH - 1}}},   // another, in the first
          {"The chef, who trained in London, cooked the meal quick", {{0, NH - 1}}},  // changed in the middle
          {"The chef, who", {}},                                                      // a shorter bin again
          {"The cook", {}},
      };
      for (const Step& step : steps) {
        headscope::RunOptions ro;
        ro.ablate = step.ablate;
        m.run(step.text, ro);
        INFO("text \"" << step.text << "\", T " << m.T() << ", heads off " << step.ablate.size());
        check_thumbnails(m, 4);  // the kept size: the thumbnails the runs carried
      }
    }
  }
}

namespace {
// the page's role scores of one head, from its map and the ids, written from their definition
// (web/lib/analysis.js): per row t >= 1 the weight on t-1, on 0, on t, summed over earlier copies of
// token t, on the token after its last earlier copy, and the entropy over log(t + 1); each score the
// mean over the rows it counts in (NaN when none), all in double
std::vector<double> role_scores(const std::vector<float>& map, const std::vector<int32_t>& ids) {
  const int T = (int)ids.size();
  std::vector<double> sum(6, 0.0);
  std::vector<int> n(6, 0);
  const auto add = [&](int i, double v) { sum[i] += v, n[i]++; };
  for (int t = 1; t < T; t++) {
    const float* a = &map[(std::size_t)t * T];
    add(0, a[t - 1]);
    add(1, a[0]);
    add(2, a[t]);
    int last = -1;
    double dup = 0;
    for (int j = 0; j < t; j++)
      if (ids[j] == ids[t]) dup += a[j], last = j;
    if (last >= 0) add(3, dup);
    if (last >= 0 && last + 1 < t) add(4, a[last + 1]);
    double h = 0;
    for (int j = 0; j <= t; j++)
      if (a[j] > 0) h -= a[j] * std::log((double)a[j]);
    add(5, std::min(1.0, h / std::log(t + 1.0)));
  }
  std::vector<double> out(6);
  for (int i = 0; i < 6; i++) out[i] = n[i] ? sum[i] / n[i] : std::nan("");
  return out;
}
}  // namespace

TEST_CASE("the role scores the forward pass counts equal their definition on the full maps, while typing",
          "[model][tiles][roles]") {
  // head_role_scores comes from each row's statistics written by the attention kernel as it computes
  // the row (the entropy from the scores, without a log per weight), kept across typing; here from
  // the kept full maps by the definition. Tolerance: the weights are the same floats; the row values
  // are float32 (the entropy a difference of sums of up to T terms of size |s| < 20 in double, then
  // rounded: about 1e-7 relative), and means of them: 1e-5 absolute is far above that and far below
  // any difference a badge could show.
  for (const bool maps : {true, false}) {
    headscope::LoadOptions o;
    o.attention_maps = maps;
    for (const std::string& name : test_util::all_fixture_models()) {
      INFO("model " << name << (maps ? "" : " keeping no maps"));
      Model m = load_fixture(name, "model.safetensors", o);
      const int L = m.config().n_layer, NH = m.config().n_head;
      for (const char* text : {"the chef the chef the cook", "the chef the chef the cook the chef", "the chef a"}) {
        m.run(text);
        INFO("text " << text);
        const std::vector<double> got = m.head_role_scores();
        REQUIRE(got.size() == (std::size_t)L * NH * headscope::kRoleScores);
        const std::vector<int32_t> ids(m.ids().begin(), m.ids().end());
        for (int lh = 0; lh < L * NH; lh++) {
          const std::vector<double> want = role_scores(m.attention(lh / NH, lh % NH), ids);
          for (int i = 0; i < 6; i++) {
            INFO("head " << lh << " score " << i << ": " << got[lh * 6 + i] << " vs " << want[i]);
            if (std::isnan(want[i]))
              REQUIRE(std::isnan(got[lh * 6 + i]));
            else
              REQUIRE(std::abs(got[lh * 6 + i] - want[i]) < 1e-5);
          }
        }
      }
    }
  }
}

TEST_CASE("role scores kept across typing equal a fresh model's, bit for bit", "[model][tiles][roles]") {
  // head_role_scores keeps its sums over the rows a typed token leaves as they were, and adds the rest
  // at each call (model_impl.hpp, role_sums_); the same additions in the same order as a fresh
  // model's over every row, so the scores are equal exactly (NaN where no row counts). A text well
  // past the rows it leaves open (32), then words typed, a last word changed, words deleted, heads
  // switched off and on again, and another text.
  // the shipped GPT-2 model and the grouped-query Llama one: contexts of 128 tokens (the fixtures' 32
  // leave no row to keep)
  const auto load = [](const std::string& name) {
    return test_util::load_dir(std::string(HEADSCOPE_MODELS_DIR) + "/" + name);
  };
  for (const std::string& name : {std::string("headscope-base"), std::string("kv-2")}) {
    INFO("model " << name);
    Model typing = load(name);
    std::string text;
    for (int i = 0; i < 30; i++) text += i % 3 ? " the chef cooked" : " a meal";
    headscope::RunOptions plain, off;
    off.ablate = {{0, 0}};
    const std::vector<std::pair<std::string, headscope::RunOptions>> steps = {{text, plain},
                                                                              {text + " and", plain},
                                                                              {text + " and the", plain},
                                                                              {text + " and thy", plain},
                                                                              {text + " and", plain},
                                                                              {text, off},
                                                                              {text + " and", off},
                                                                              {text + " and", plain},
                                                                              {"the cook", plain},
                                                                              {text, plain}};
    for (const auto& [t, o] : steps) {
      typing.run(t, o);
      if (t.size() > 100) REQUIRE(typing.T() >= 64);  // rows kept in the sums, and rows after them
      Model fresh = load(name);
      fresh.run(t, o);
      const std::vector<double> got = typing.head_role_scores(), want = fresh.head_role_scores();
      INFO("text of " << typing.T() << " tokens, " << o.ablate.size() << " heads off");
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); i++) {
        INFO("score " << i << ": " << got[i] << " vs " << want[i]);
        REQUIRE((std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]));
      }
    }
  }
}

TEST_CASE("attention tiles refuse what is not there", "[model][tiles]") {
  Model m = load_fixture("tiny-hs4");
  REQUIRE_THROWS_WITH(m.attention_tile(0, 0, 0, 1, 0, 1), Catch::Matchers::Contains("call run() first"));
  m.run("The chef cooked");
  const int T = m.T();
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(m.attention_tile(m.config().n_layer, 0, 0, 1, 0, 1), Contains("layer"));
  REQUIRE_THROWS_WITH(m.attention_tile(0, m.config().n_head, 0, 1, 0, 1), Contains("head"));
  REQUIRE_THROWS_WITH(m.attention_tile(0, 0, 0, T + 1, 0, 1), Contains("rows [0, " + std::to_string(T + 1) + ")"));
  REQUIRE_THROWS_WITH(m.attention_tile(0, 0, 2, 2, 0, 1), Contains("non-empty range"));
  REQUIRE_THROWS_WITH(m.attention_tile(0, 0, 0, 1, -1, 1), Contains("columns"));
  REQUIRE_THROWS_WITH(m.attention_tile(0, 0, 0, 1, 0, 1, 0), Contains("bin must be within [1, "));
  REQUIRE_THROWS_WITH(m.attention_thumbnails(0), Contains("size must be at least 1"));
  headscope::LoadOptions big;
  big.thumbnail_size = headscope::kMaxThumbnailSize + 1;
  REQUIRE_THROWS_WITH(load_fixture("tiny-hs4", "model.safetensors", big), Contains("thumbnail_size must be within"));
}

TEST_CASE("a model that keeps no attention maps gives every result of one that does, bit for bit",
          "[model][tiles][maps]") {
  headscope::LoadOptions none;
  none.attention_maps = false;
  std::mt19937 rng(37);
  for (const std::string& name : test_util::all_fixture_models()) {
    INFO("model " << name);
    Model kept = load_fixture(name);
    Model bare = load_fixture(name, "model.safetensors", none);
    const int L = kept.config().n_layer, NH = kept.config().n_head;
    REQUIRE(bare.config().n_positions >= kept.config().n_positions);        // a Llama context is what fits
    for (const char* text : {"The chef", "The chef cooked", "The cook"}) {  // typing at the end, then a change
      INFO("text " << text);
      headscope::RunOptions o;
      o.inspect = headscope::HeadRef{L - 1, NH - 1};
      const headscope::RunInfo a = kept.run(text, o), b = bare.run(text, o);
      REQUIRE(a.reused_tokens == b.reused_tokens);
      const auto la = kept.logits_last(), lb = bare.logits_last();
      test_util::require_same_bits({la.begin(), la.end()}, {lb.begin(), lb.end()}, "logits");
      test_util::require_same_bits(bare.attention_all(), kept.attention_all(), "every map");
      test_util::require_same_bits(bare.hidden_states(), kept.hidden_states(), "hidden states");
      test_util::require_same_bits(bare.value_norms(), kept.value_norms(), "value sizes");
      const headscope::HeadInside ia = kept.head_inside(), ib = bare.head_inside();
      test_util::require_same_bits(ib.attention, ia.attention, "inside: attention");
      test_util::require_same_bits(ib.z, ia.z, "inside: z");
      test_util::require_same_bits(ib.out, ia.out, "inside: the write");
      const int T = kept.T();
      const headscope::ScoreSplit sa = headscope::explain_score(kept, L - 1, 0, T - 1, 0);
      const headscope::ScoreSplit sb = headscope::explain_score(bare, L - 1, 0, T - 1, 0);
      REQUIRE(sb.table == sa.table);
      REQUIRE(sb.value_by_token == sa.value_by_token);
      check_tiles(bare, rng);  // against its own attention(): recomputed both ways
      int bin_a = 0, bin_b = 0;
      test_util::require_same_bits(bare.attention_thumbnails(4, &bin_b), kept.attention_thumbnails(4, &bin_a),
                                   "thumbnails");
    }
  }
}

TEST_CASE("memory(): the budget, and what the maps cost at the context", "[model][maps]") {
  headscope::LoadOptions none;
  none.attention_maps = false;
  for (const std::string& name : {std::string("odd-hs12"), std::string("llama-gqa")}) {
    INFO("model " << name);
    Model kept = load_fixture(name);
    Model bare = load_fixture(name, "model.safetensors", none);
    const headscope::MemoryUse a = kept.memory(), b = bare.memory();
    REQUIRE(a.attention_maps);
    REQUIRE_FALSE(b.attention_maps);
    REQUIRE(a.weight_bytes == kept.weight_bytes());
    REQUIRE(a.capacity_tokens == 0);  // nothing allocated before a run
    REQUIRE(a.activation_bytes == 0);
    REQUIRE(a.bytes_at_context <= a.activation_budget_bytes);
    REQUIRE(b.bytes_at_context <= b.activation_budget_bytes);
    // the maps' cost by their definition: L x NH x n² floats kept, against one block of rows per head
    const uint64_t L = kept.config().n_layer, NH = kept.config().n_head;
    if (kept.config().n_positions == bare.config().n_positions) {
      const uint64_t n = kept.config().n_positions;
      const uint64_t block = NH * (uint64_t)headscope::kernels::attention_block_rows() * n;
      REQUIRE(a.bytes_at_context - b.bytes_at_context == 4 * (L * NH * n * n - block));
    }
    kept.run("The chef cooked the meal");
    const headscope::MemoryUse after = kept.memory();
    REQUIRE(after.capacity_tokens >= kept.T());
    REQUIRE(after.activation_bytes > 0);
    REQUIRE(after.activation_bytes <= after.activation_budget_bytes);
  }
}
