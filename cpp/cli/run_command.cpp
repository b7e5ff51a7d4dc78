// headscope run --model DIR (--text "..." | --ids 3,17,5) [--json] [--top K] [--ablate L:H,...] [--inspect L:H]
// and headscope info --model DIR: the JSON document run --json prints is described in main.cpp.
#include "run_command.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/predictions.hpp"

namespace headscope::cli {
namespace {

// rows x cols floats as nested arrays; masked cells (-infinity, the scores above the diagonal) as null
nlohmann::json matrix_json(const std::vector<float>& m, int rows, int cols) {
  nlohmann::json out = nlohmann::json::array();
  for (int r = 0; r < rows; r++) {
    nlohmann::json row = nlohmann::json::array();
    for (int c = 0; c < cols; c++) {
      const float x = m[(std::size_t)r * cols + c];
      row.push_back(std::isinf(x) && x < 0 ? nlohmann::json(nullptr) : nlohmann::json(x));
    }
    out.push_back(std::move(row));
  }
  return out;
}

nlohmann::json inside_json(const headscope::HeadInside& h) {
  nlohmann::json j;
  j["layer"] = h.layer;
  j["head"] = h.head;
  j["q"] = matrix_json(h.q, h.T, h.head_size);
  j["k"] = matrix_json(h.k, h.T, h.head_size);
  j["v"] = matrix_json(h.v, h.T, h.head_size);
  j["scores"] = matrix_json(h.scores, h.T, h.T);
  j["attention"] = matrix_json(h.attention, h.T, h.T);
  j["z"] = matrix_json(h.z, h.T, h.head_size);
  j["out"] = matrix_json(h.out, h.T, h.n_embd);
  j["value_norm"] = h.value_norm;
  return j;
}

}  // namespace

int run_command(const Args& a) {
  headscope::Model model = headscope::Model::load_directory(a.model, a.load);
  const auto& c = model.config();
  if (a.command == "info") {
    std::printf("%s: layers %d, heads %d, n_embd %d (head size %d), context %d, vocab %d, parameters %zu\n",
                c.model_type.c_str(), c.n_layer, c.n_head, c.n_embd, c.head_size(), c.n_positions, c.vocab_size,
                model.parameter_count());
    if (c.kv_heads() != c.n_head)
      std::printf("key/value heads %d: each shared by %d query heads (heads 0-%d share key/value head 0, ...)\n",
                  c.kv_heads(), c.group_size(), c.group_size() - 1);
    std::printf("key/value cache %llu bytes per token (float32)\n", (unsigned long long)c.kv_cache_bytes_per_token());
    std::printf("weights %s, %.1f MB\n", headscope::weight_storage_name(model.weight_storage()),
                model.weight_bytes() / 1048576.0);
    const headscope::MemoryUse mem = model.memory();
    const auto mb = [](uint64_t b) { return b / 1048576.0; };
    std::printf(
        "memory limit %.1f MB: weights %.1f MB, in use before them %.1f MB, kept free %.1f MB, "
        "activations' budget %.1f MB\n",
        mb(mem.limit_bytes), mb(mem.weight_bytes), mb(mem.in_use_at_load_bytes), mb(mem.reserve_bytes),
        mb(mem.activation_budget_bytes));
    std::printf("activations at the context of %d tokens %.1f MB (attention maps %s)\n", mem.context_tokens,
                mb(mem.bytes_at_context), mem.attention_maps ? "kept" : "not kept: recomputed when read");
    if (mem.activations == headscope::ActivationStorage::automatic)
      std::printf("activations kept: auto (every layer's up to %d tokens, the views' alone past that)\n",
                  mem.full_activation_tokens);
    else
      std::printf("activations kept: %s\n", mem.activations == headscope::ActivationStorage::all
                                                ? "all (every layer's)"
                                                : "views (every layer's queries and key/value cache alone)");
    return 0;
  }
  headscope::RunOptions opt;
  opt.ablate = a.ablate;
  opt.inspect = a.inspect;
  const headscope::RunInfo info = a.ids.empty() ? model.run(a.text, opt) : model.run_ids(a.ids, opt);
  const auto logits = model.logits_last();
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = nlohmann::json::array();
    for (const auto& t : model.tokens()) j["tokens"].push_back(t.text);
    j["ids"] = model.ids();
    j["logits_last"] = std::vector<float>(logits.begin(), logits.end());
    const int T = model.T();
    const std::vector<float> att = model.attention_all();
    nlohmann::json layers = nlohmann::json::array();
    for (int l = 0; l < c.n_layer; l++) {
      nlohmann::json heads = nlohmann::json::array();
      for (int h = 0; h < c.n_head; h++) {
        nlohmann::json rows = nlohmann::json::array();
        for (int t = 0; t < T; t++) {
          const float* row = &att[(((std::size_t)l * c.n_head + h) * T + t) * T];
          rows.push_back(std::vector<float>(row, row + T));
        }
        heads.push_back(std::move(rows));
      }
      layers.push_back(std::move(heads));
    }
    j["attention"] = std::move(layers);
    j["dropped_tokens"] = info.dropped_tokens;
    if (a.inspect) j["inside"] = inside_json(model.head_inside());
    // replace, not throw, if a token's display text were invalid UTF-8
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::printf("%d tokens", model.T());
  if (info.dropped_tokens)
    std::printf(" (the first %d were cut to fit the context of %d)", info.dropped_tokens, c.n_positions);
  std::printf(":\n");
  for (const auto& t : model.tokens())
    std::printf("  %6d  [%u, %u)  \"%s\"\n", t.id, t.byte_start, t.byte_end, t.text.c_str());
  // the engine's own top-k (predictions.hpp), as the package's topNext: ties to the smaller id
  const std::vector<headscope::TokenProbability> top = headscope::top_k_probabilities(logits, a.top);
  std::printf("top %d next tokens:\n", (int)top.size());
  for (const auto& t : top)
    std::printf("  %6.2f%%  \"%s\"\n", 100.0 * t.prob, model.tokenizer().token_display(t.id).c_str());
  return 0;
}

}  // namespace headscope::cli
