// What a run keeps of a text's activations (LoadOptions::activations). A model that keeps only the
// views' (every layer's queries, in F16, and key/value cache) must give every result the forward pass
// computes (logits, role scores, value and write norms, the run's thumbnails) of one that keeps
// everything, bit for bit. What the views recompute later (maps, tiles, thumbnails of another size)
// comes from the F16 queries: each row equals a float64 reference of that definition within float32
// rounding, and the kept-whole model's row within the bound derived below. The analyses that need
// every layer's activations refuse, naming the option. "auto" keeps everything while it takes at most
// a quarter of the memory limit, and the views' alone past that.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/explain.hpp"
#include "headscope/model.hpp"
#include "headscope/patching.hpp"
#include "test_util.hpp"

using headscope::ActivationStorage;
using headscope::Model;
using test_util::load_fixture;
using test_util::require_same_bits;

namespace {

// x rounded to F16 (nearest, ties to even), written from the format rather than the engine's code: the
// spacing is 2^(e - 10) for |x| in [2^e, 2^(e+1)), e >= -14, and 2^-24 below (subnormals); |x| <= 1 here
double round_to_f16(double x) {
  if (x == 0.0) return 0.0;
  const int e = std::max(-14, (int)std::floor(std::log2(std::fabs(x))));
  const double spacing = std::ldexp(1.0, e - 10);
  return std::nearbyint(x / spacing) * spacing;  // the default rounding mode: to nearest, ties to even
}

// Every head's map on `views` (a views-only model after running `text` with `o`) against a float64
// reference of the rule it keeps its queries by (model_impl.hpp, queries_f16_): q~ = F16(q / s) * s,
// s the power of two that puts the row's largest |q| (over the layer's query heads) in [0.5, 1). The
// queries and keys come from a model that keeps everything, run the same way and inspecting each head.
//   - against the reference: the engine computes the scores q~ . k / sqrt(HS) in float32 from the same
//     q~ (exact in float32) and k, each within gamma(HS) sum|q~ k| / sqrt(HS) (Higham), so each weight
//     within p (exp(2 d + (t + 4) u) - 1), d that bound's largest over the row and the softmax's own
//     exp, sum and division (t + 4) roundings of u = 2^-24; plus 1e-9 for weights that underflow.
//   - against the kept-whole model's row p: the queries moved by at most 2^-11 |q| (relative;
//     2^-25 s below F16's normal range), so each score by at most D = sum (2^-11 |q| + 2^-25 s) |k| /
//     sqrt(HS), each weight by at most p (exp(2 (D + 2 d) + (t + 4) u) - 1) + 1e-9.
void require_views_maps_within_bound(const std::string& fixture, const char* text, headscope::RunOptions o,
                                     const Model& views) {
  Model all = load_fixture(fixture);
  const int T = views.T(), L = views.config().n_layer, NH = views.config().n_head;
  const int HS = views.config().head_size();
  const std::vector<float> maps = views.attention_all();  // (L, NH, T, T)
  const double u = test_util::kUnitRoundoff, gamma = HS * u / (1 - HS * u), isq = 1.0 / std::sqrt((double)HS);
  for (int l = 0; l < L; l++) {
    std::vector<headscope::HeadInside> heads;
    for (int h = 0; h < NH; h++) {
      o.inspect = headscope::HeadRef{l, h};
      all.run(text, o);
      REQUIRE(all.T() == T);
      heads.push_back(all.head_inside());
    }
    for (int t = 0; t < T; t++) {
      double most = 0;
      for (const auto& hi : heads)
        for (int i = 0; i < HS; i++) most = std::max(most, std::fabs((double)hi.q[(std::size_t)t * HS + i]));
      int e = 0;
      std::frexp(most, &e);
      const double scale = most > 0 ? std::ldexp(1.0, e) : 1.0;
      for (int h = 0; h < NH; h++) {
        const auto& hi = heads[h];
        std::vector<double> ref(t + 1), d(t + 1), moved(t + 1);
        double top = -INFINITY;
        for (int j = 0; j <= t; j++) {
          double sc = 0, abs_sc = 0, mv = 0;
          for (int i = 0; i < HS; i++) {
            const double q = hi.q[(std::size_t)t * HS + i], k = hi.k[(std::size_t)j * HS + i];
            const double qq = round_to_f16(q / scale) * scale;
            sc += qq * k;
            abs_sc += std::fabs(qq * k);
            mv += (std::ldexp(std::fabs(q), -11) + std::ldexp(scale, -25)) * std::fabs(k);
          }
          ref[j] = sc * isq;
          d[j] = gamma * abs_sc * isq;
          moved[j] = mv * isq;
          top = std::max(top, ref[j]);
        }
        double sum = 0;
        for (int j = 0; j <= t; j++) sum += (ref[j] = std::exp(ref[j] - top));
        const double dmax = *std::max_element(d.begin(), d.end()),
                     dmoved = *std::max_element(moved.begin(), moved.end());
        for (int j = 0; j < T; j++) {
          const double got = maps[(((std::size_t)l * NH + h) * T + t) * T + j];
          const double whole = hi.attention[(std::size_t)t * T + j];
          INFO("layer " << l << " head " << h << " row " << t << " key " << j);
          if (j > t) {
            REQUIRE(got == 0.0);
            continue;
          }
          const double p = ref[j] / sum, rounding = (t + 4) * u;
          REQUIRE(std::fabs(got - p) <= p * std::expm1(2 * dmax + rounding) + 1e-9);
          REQUIRE(std::fabs(got - whole) <= whole * std::expm1(2 * (dmoved + 2 * dmax) + rounding) + 1e-9);
        }
      }
    }
  }
}

// a thumbnail or tile cell is the largest weight of its block of the map: pooled here from the map
void require_pooled(const std::vector<float>& got, const std::vector<float>& maps, int T, int map_index, int row_begin,
                    int row_end, int col_begin, int col_end, int bin, const char* what) {
  const int rows = (row_end - row_begin + bin - 1) / bin, cols = (col_end - col_begin + bin - 1) / bin;
  REQUIRE(got.size() >= (std::size_t)rows * cols);
  for (int a = 0; a < rows; a++)
    for (int b = 0; b < cols; b++) {
      float want = 0.0f;
      for (int r = row_begin + a * bin; r < std::min(row_end, row_begin + (a + 1) * bin); r++)
        for (int c = col_begin + b * bin; c < std::min(col_end, col_begin + (b + 1) * bin); c++)
          want = std::max(want, maps[((std::size_t)map_index * T + r) * T + c]);
      INFO(what << " cell (" << a << ", " << b << ")");
      REQUIRE(test_util::bits_of(got[(std::size_t)a * cols + b]) == test_util::bits_of(want));
    }
}

// every result the forward pass computes, the same on both models after the same run; what the views
// recompute from the F16 queries (maps, tiles, another thumbnail size) pooled from the views' own maps,
// which require_views_maps_within_bound holds to the reference
void require_same_views(const Model& all, const Model& views) {
  const int T = all.T(), L = all.config().n_layer, NH = all.config().n_head;
  REQUIRE(views.T() == T);
  const auto la = all.logits_last(), lb = views.logits_last();
  require_same_bits({lb.begin(), lb.end()}, {la.begin(), la.end()}, "logits");
  require_same_bits(views.value_norms(), all.value_norms(), "value sizes");
  require_same_bits(views.contribution_norms(), all.contribution_norms(), "write norms");
  // role scores are NaN where no row counts (no repeated token for the induction score): compared as bits
  const std::vector<double> ra = all.head_role_scores(), rb = views.head_role_scores();
  REQUIRE(rb.size() == ra.size());
  REQUIRE(std::memcmp(rb.data(), ra.data(), ra.size() * sizeof(double)) == 0);
  // the run's own thumbnails (LoadOptions::thumbnail_size) are the forward's: the same bits
  int bin_a = 0, bin_b = 0;
  const int size = headscope::LoadOptions{}.thumbnail_size;
  require_same_bits(views.attention_thumbnails(size, &bin_b), all.attention_thumbnails(size, &bin_a), "thumbnails");
  const std::vector<float> maps = views.attention_all();
  int bin = 0;
  const std::vector<float> small = views.attention_thumbnails(4, &bin);  // another size: recomputed
  const int n = (T + bin - 1) / bin;
  for (int lh = 0; lh < L * NH; lh++)
    require_pooled({small.begin() + (std::ptrdiff_t)lh * n * n, small.begin() + (std::ptrdiff_t)(lh + 1) * n * n}, maps,
                   T, lh, 0, T, 0, T, bin, "thumbnail of size 4");
  const headscope::AttentionTile tile = views.attention_tile(L - 1, NH - 1, T / 2, T, 0, T, 2);
  require_pooled(tile.values, maps, T, L * NH - 1, T / 2, T, 0, T, 2, "a tile");
}

// the analyses that read every layer's activations, each refused with the option named
void require_analyses_refused(Model& m) {
  using Catch::Matchers::Contains;
  const int T = m.T(), L = m.config().n_layer;
  REQUIRE_THROWS_WITH(m.hidden_states(), Contains("hidden_states needs every layer's activations") &&
                                             Contains("load the model with activations \"all\""));
  REQUIRE_THROWS_WITH(m.logit_attribution(T - 1, 0), Contains("logit attribution needs every layer's"));
  REQUIRE_THROWS_WITH(headscope::explain_score(m, L - 1, 0, T - 1, 0), Contains("explaining a score needs"));
}

}  // namespace

TEST_CASE("activation storage names", "[model][activations]") {
  for (ActivationStorage s : {ActivationStorage::all, ActivationStorage::views, ActivationStorage::automatic})
    REQUIRE(headscope::parse_activation_storage(headscope::activation_storage_name(s)) == s);
  REQUIRE_THROWS_WITH(headscope::parse_activation_storage("lean"),
                      "activations must be \"all\", \"views\" or \"auto\", got \"lean\"");
}

TEST_CASE("a model that keeps the views' activations alone: the forward's results bit for bit, maps within a bound",
          "[model][activations]") {
  headscope::LoadOptions lean;
  lean.attention_maps = false;
  lean.activations = ActivationStorage::views;
  for (const std::string& name : test_util::all_fixture_models()) {
    INFO("model " << name);
    Model all = load_fixture(name);
    Model views = load_fixture(name, "model.safetensors", lean);
    const int L = all.config().n_layer, NH = all.config().n_head;
    // typing at the end, a change in the middle, then heads switched off (a model that keeps every
    // layer starts at the first layer that changed; the lean one computes every layer, to the same bits)
    const char* texts[] = {"The chef", "The chef cooked", "The cook cooked", "The cook cooked"};
    for (int i = 0; i < 4; i++) {
      const char* text = texts[i];
      INFO("text " << text << (i == 3 ? ", the last head off" : ""));
      headscope::RunOptions o;
      if (i == 3) o.ablate = {headscope::HeadRef{L - 1, NH - 1}};
      const headscope::RunInfo a = all.run(text, o), b = views.run(text, o);
      REQUIRE(b.reused_tokens == a.reused_tokens);
      REQUIRE(b.reused_layers == 0);
      REQUIRE(views.memory().views_only);
      REQUIRE_FALSE(all.memory().views_only);
      require_same_views(all, views);
      require_views_maps_within_bound(name, text, o, views);
      require_analyses_refused(views);
    }
    // every position's logits come from the final stream, which both keep
    headscope::RunOptions every;
    every.all_logits = true;
    all.run("The chef cooked the", every);
    views.run("The chef cooked the", every);
    require_same_bits(views.logits_all(), all.logits_all(), "every position's logits");
    // inspecting a head and patching one between texts read every layer's: refused
    headscope::RunOptions inspect;
    inspect.inspect = headscope::HeadRef{0, 0};
    views.run("The chef", inspect);
    REQUIRE_THROWS_WITH(views.head_inside(), Catch::Matchers::Contains("looking inside a head needs every layer's"));
    const std::vector<int32_t> clean = {5, 6, 7, 8}, corrupted = {5, 6, 9, 8};
    REQUIRE_THROWS_WITH(headscope::patch(views, clean, corrupted),
                        Catch::Matchers::Contains("activation patching needs every layer's"));
    // the model keeps working after a refusal
    views.run("The chef cooked", {});
    all.run("The chef cooked", {});
    require_same_views(all, views);
    require_views_maps_within_bound(name, "The chef cooked", {}, views);
  }
}

TEST_CASE("typing with thumbnail cells of several rows: a views-only model's thumbnails are the forward's, bit for bit",
          "[model][activations][thumbnails]") {
  // With cells of 2^shift rows, a run that changes a token inside the last cell row keeps that cell
  // row's earlier rows: their part must be the forward's (float32 queries; the model's tail of the
  // last cell row's rows, each pooled alone), not rows recomputed from the F16 queries a views-only
  // model keeps, or a typed text's thumbnails differ from a fresh run's (they did: 0.88057 against
  // 0.880665 on tiny-hs4). An edit before the last cell row pools the kept rows of its cell row again
  // from the cache: exact when every layer is kept, within the F16 queries' bound (the maps' test
  // above) on a views-only model, so only the model that keeps everything is held to the bits there.
  // Thumbnails of 4 x 4 cells: these texts make cells of several rows.
  headscope::LoadOptions small, lean;
  small.thumbnail_size = lean.thumbnail_size = 4;
  small.attention_maps = lean.attention_maps = false;
  lean.activations = ActivationStorage::views;
  struct Step {
    const char* text;
    bool at_end;  // the edit is inside the last cell row (typing, deleting back, the last word changed)
  };
  const Step steps[] = {{"The chef, who trained in Paris, cooked the meal", true},
                        {"The chef, who trained in Paris, cooked the meat", true},
                        {"The chef, who trained in Paris, cooked the meat quickly", true},
                        {"The chef, who trained in Paris, cooked the meat quick", true},
                        {"The chef, who trained in Paris, cooked the meat quickly and well.", true},
                        {"The chef, who trained in Rome, cooked the meat quickly and well.", false},
                        {"The chef, who trained in Rome, cooked the meat quickly and well. Then", true}};
  for (const std::string& name : test_util::all_fixture_models()) {
    INFO("model " << name);
    Model all = load_fixture(name, "model.safetensors", small);
    Model views = load_fixture(name, "model.safetensors", lean);
    Model fresh = load_fixture(name, "model.safetensors", small);
    int in_cell = 0;  // steps whose kept rows share the first computed row's cell row
    for (const Step& step : steps) {
      INFO("text " << step.text);
      const headscope::RunInfo typed = all.run(step.text, {});
      views.run(step.text, {});
      fresh.clear_cache();
      fresh.run(step.text, {});
      REQUIRE(views.memory().views_only);
      int bin_v = 0, bin_a = 0, bin_f = 0;
      const std::vector<float> tv = views.attention_thumbnails(4, &bin_v), ta = all.attention_thumbnails(4, &bin_a),
                               tf = fresh.attention_thumbnails(4, &bin_f);
      REQUIRE(bin_v > 1);  // cells of several rows: the case under test
      REQUIRE(bin_v == bin_f);
      if (typed.reused_tokens % bin_v != 0) in_cell++;
      require_same_bits(ta, tf, "a typed text's thumbnails against a fresh run's (keeping everything)");
      if (step.at_end) require_same_bits(tv, tf, "a typed text's thumbnails against a fresh run's (views only)");
    }
    REQUIRE(in_cell >= 1);  // the case under test happened
  }
}

TEST_CASE("memory(): the views' activations alone cost less, and reach a longer context", "[model][activations]") {
  headscope::LoadOptions lean;
  lean.attention_maps = false;
  lean.activations = ActivationStorage::views;
  headscope::LoadOptions none;
  none.attention_maps = false;
  for (const std::string& name : {std::string("odd-hs12"), std::string("llama-gqa")}) {
    INFO("model " << name);
    Model all = load_fixture(name, "model.safetensors", none);
    Model views = load_fixture(name, "model.safetensors", lean);
    all.run("The chef cooked the meal");
    views.run("The chef cooked the meal");
    const headscope::MemoryUse a = all.memory(), b = views.memory();
    REQUIRE(a.activations == ActivationStorage::all);
    REQUIRE(b.activations == ActivationStorage::views);
    REQUIRE(b.full_activation_tokens == 0);
    REQUIRE(a.full_activation_tokens == all.config().n_positions);
    REQUIRE(b.capacity_tokens == a.capacity_tokens);
    // what the views drop, by its definition: of every layer's residual stream, q | k | v and head
    // outputs, they keep the queries (in F16, half a float each, with a float scale per row), the final
    // stream and two buffers of the rows the forward pass takes through the layers at a time (at most
    // 512), one layer's q | k | v and outputs
    const headscope::ModelConfig& c = all.config();
    const uint64_t n = a.capacity_tokens, L = c.n_layer, C = c.n_embd, W = c.qkv_width(), QW = c.q_width();
    const uint64_t kept_all = (L + 1) * n * C + L * n * W + L * n * QW;
    const uint64_t R = std::min<uint64_t>(n, 512);
    const uint64_t kept_views = (2 * R + n) * C + n * W + (L * n * QW + 1) / 2 + L * n + n * QW;
    REQUIRE(a.activation_bytes - b.activation_bytes == 4 * (kept_all - kept_views));
  }
}

TEST_CASE("activations \"auto\": everything while it takes a quarter of the memory limit, the views' past that",
          "[model][activations]") {
  // llama-gqa with a context of 100,000 tokens (rotary positions: any context runs), keeping its maps
  // (L x NH x T² floats), and a memory limit of what the process holds now (wasm: earlier tests' leftovers;
  // natively 0), the 64 MB reserve and 160 MB: about 1,500 tokens take a quarter of it (the reserve is at
  // least 64 MB, so a much smaller limit leaves less than a quarter for activations)
  const std::string dir = test_util::fixture_dir("llama-gqa");
  std::string config = test_util::read_text(dir + "/config.json");
  const std::string key = "\"max_position_embeddings\":";
  const std::size_t at = config.find(key);
  REQUIRE(at != std::string::npos);
  const std::size_t end = config.find_first_of(",}", at);
  config.replace(at, end - at, key + " 100000");
  headscope::LoadOptions o;
  const auto load = [&](const headscope::LoadOptions& options) {
    return Model::load_buffers_tokenizer_json(config, test_util::read_bytes(dir + "/model.safetensors"),
                                              test_util::read_text(dir + "/tokenizer.json"), options);
  };
  const uint64_t in_use = load({}).memory().in_use_at_load_bytes;
  o.memory_limit_bytes = in_use + (224ull << 20);
  o.activations = ActivationStorage::automatic;
  Model m = load(o);
  headscope::LoadOptions all_options = o;
  all_options.activations = ActivationStorage::all;
  Model all = load(all_options);
  const headscope::MemoryUse u = m.memory();
  const int full = u.full_activation_tokens;
  INFO("kept whole up to " << full << " tokens, context " << u.context_tokens << ", the all model's "
                           << all.memory().context_tokens);
  REQUIRE(u.reserve_bytes == 64ull << 20);  // the test's premise: the limit is under 1 GB
  REQUIRE(full > 64);
  REQUIRE(full < u.context_tokens);
  // the views' alone reach further than everything kept
  REQUIRE(u.context_tokens > all.memory().context_tokens);
  const std::vector<int32_t> ids(full + 1, 5);
  // at `full` tokens everything is kept, and takes at most a quarter of the limit
  m.run_ids({ids.data(), (std::size_t)full});
  REQUIRE_FALSE(m.memory().views_only);
  REQUIRE(m.memory().activation_bytes <= o.memory_limit_bytes / 4);
  REQUIRE_NOTHROW(m.hidden_states());
  // one more, and only the views' are kept: the analyses say where the line is
  m.run_ids(ids);
  REQUIRE(m.memory().views_only);
  REQUIRE_THROWS_WITH(m.hidden_states(),
                      Catch::Matchers::Contains("every layer's up to " + std::to_string(full) +
                                                " tokens, this text has " + std::to_string(full + 1)));
  all.run_ids(ids);
  require_same_views(all, m);
  // the forward pass takes rows through the layers 512 at a time: a text run in other pieces (700
  // tokens, then the rest on the cache) gives the same bits
  Model pieces = load({});          // every layer's, no memory limit (in wasm the models above hold memory now)
  pieces.reserve((int)ids.size());  // room for the whole text: the second run keeps the first's cache
  pieces.run_ids({ids.data(), 700});
  REQUIRE(pieces.run_ids(ids).reused_tokens == 700);
  require_same_views(all, pieces);
  // a long text run in steps from its start (reserve, then its prefixes: the worker's first run)
  // keeps the allocation it reserved, whose steps are within the line
  m.clear_cache();
  m.reserve((int)ids.size());
  m.run_ids({ids.data(), 40});
  REQUIRE(m.memory().views_only);
  REQUIRE(m.run_ids(ids).reused_tokens == 40);
  // a text within the line again: everything is kept again, and the analyses work on it
  m.run_ids({ids.data(), 40});
  REQUIRE_FALSE(m.memory().views_only);
  all.run_ids({ids.data(), 40});
  require_same_bits(m.hidden_states(), all.hidden_states(), "hidden states after a long text");
}
