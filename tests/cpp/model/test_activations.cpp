// What a run keeps of a text's activations (LoadOptions::activations). A model that keeps only the
// views' (every layer's queries and key/value cache) must give every view's result of one that keeps
// everything, bit for bit: the same kernels compute the same rows, and the views recompute maps from
// the queries and the key cache as a model without maps does (test_tiles.cpp). The analyses that need
// every layer's activations refuse, naming the option. "auto" keeps everything while it takes at most
// a quarter of the memory limit, and the views' alone past that.
#include <catch2/catch.hpp>
#include <algorithm>
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

// every result a view reads, the same on both models after the same run
void require_same_views(const Model& all, const Model& views) {
  const int T = all.T(), L = all.config().n_layer, NH = all.config().n_head;
  REQUIRE(views.T() == T);
  const auto la = all.logits_last(), lb = views.logits_last();
  require_same_bits({lb.begin(), lb.end()}, {la.begin(), la.end()}, "logits");
  require_same_bits(views.attention_all(), all.attention_all(), "every map");
  require_same_bits(views.value_norms(), all.value_norms(), "value sizes");
  require_same_bits(views.contribution_norms(), all.contribution_norms(), "write norms");
  // role scores are NaN where no row counts (no repeated token for the induction score): compared as bits
  const std::vector<double> ra = all.head_role_scores(), rb = views.head_role_scores();
  REQUIRE(rb.size() == ra.size());
  REQUIRE(std::memcmp(rb.data(), ra.data(), ra.size() * sizeof(double)) == 0);
  int bin_a = 0, bin_b = 0;
  require_same_bits(views.attention_thumbnails(4, &bin_b), all.attention_thumbnails(4, &bin_a), "thumbnails");
  const headscope::AttentionTile ta = all.attention_tile(L - 1, NH - 1, T / 2, T, 0, T, 2);
  const headscope::AttentionTile tb = views.attention_tile(L - 1, NH - 1, T / 2, T, 0, T, 2);
  require_same_bits(tb.values, ta.values, "a tile");
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

TEST_CASE("a model that keeps the views' activations alone gives every view's result, bit for bit",
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
    // outputs, they keep the queries, the final stream and two buffers of the rows the forward pass
    // takes through the layers at a time (at most 512), one layer's q | k | v and outputs
    const headscope::ModelConfig& c = all.config();
    const uint64_t n = a.capacity_tokens, L = c.n_layer, C = c.n_embd, W = c.qkv_width(), QW = c.q_width();
    const uint64_t kept_all = (L + 1) * n * C + L * n * W + L * n * QW;
    const uint64_t R = std::min<uint64_t>(n, 512);
    const uint64_t kept_views = (2 * R + n) * C + n * W + L * n * QW + n * QW;
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
