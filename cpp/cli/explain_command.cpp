// headscope explain: why a head attends where it does, the score of one query and key split into the
// residual stream's parts on both sides (explain_score, headscope/explain.hpp, where every number is
// defined). --json prints one document on stdout:
//   {"query_token": {"text", "id"}, "key_token": {...}, "components": [P names], "score": x,
//    "table": [P][P], "contrast": {"against": s2 | "mean", "table": [P][P]},
//    "value": {"token": {"text", "id"}, "by_token": [T], "by_part": [P], "total": x}}
// Without --json, the largest cells of the table.
// headscope circuits: which heads work together, from the weights alone (circuits()):
//   {"copying": [L][H], "composition": {"Q", "K", "V": [L*H][L*H], null unless layer(A) < layer(B)},
//    "baseline": {"Q", "K", "V"}, "seeds": n}
#include "explain_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/explain.hpp"
#include "headscope/model.hpp"
#include "headscope/patching.hpp"
#include "options.hpp"
#include "report_errors.hpp"

namespace headscope::cli {
namespace {

const char* kExplainUsage =
    "usage: headscope explain --model DIR --text TEXT --head L:H --query T --key S [--versus S2|mean]\n"
    "                         [--token TOKEN] [--weights f32|f16|q8|auto] [--threads N] [--json]\n"
    "  Splits head L:H's pre-softmax score of query token T on key token S (S <= T, counted from 0)\n"
    "  into what each earlier part of the model wrote into the residual stream, on the query side and\n"
    "  on the key side: a table whose cells sum to the score. The contrast subtracts the same table at\n"
    "  key S2, or its mean over the keys T sees (the default): softmax ignores what every key shares.\n"
    "  The value side splits the head's write at T by source token and part, as a push on TOKEN's\n"
    "  logit (one token, e.g. \" chef\"; default: the most likely next token at T).\n";

const char* kCircuitsUsage =
    "usage: headscope circuits --model DIR [--seeds N] [--weights f32|f16|q8|auto] [--threads N] [--json]\n"
    "  From the weights alone: each head's copying score (above 0: it copies the tokens it attends\n"
    "  to) and the Q-, K- and V-composition of every pair of heads in different layers, beside the\n"
    "  same scores for random matrices of the same shapes (the mean over N seeds, default 16).\n";

struct ExplainArgs {
  std::string model, text, head, token, versus = "mean";
  int query = -1, key = -1;
  bool have_text = false, json = false;
  LoadOptions load;
};

HeadRef parse_head(const std::string& s) {
  const std::size_t colon = s.find(':');
  if (colon == std::string::npos) throw Error("--head expects LAYER:HEAD, got \"" + s + "\"");
  return {parse_int("--head", s.substr(0, colon)), parse_int("--head", s.substr(colon + 1))};
}

nlohmann::json rows(const std::vector<double>& v, int n) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t r = 0; r < v.size(); r += n) {
    nlohmann::json row = nlohmann::json::array();
    for (int i = 0; i < n; i++) {
      const double x = v[r + i];
      row.push_back(std::isnan(x) ? nlohmann::json() : nlohmann::json(x));
    }
    out.push_back(row);
  }
  return out;
}

int run_explain(const ExplainArgs& a) {
  Model model = Model::load_directory(a.model, a.load);
  const HeadRef head = parse_head(a.head);
  model.run(a.text);
  ExplainOptions o;
  if (a.versus != "mean") o.versus = parse_int("--versus", a.versus);
  if (!a.token.empty()) o.token = single_token_id(model, a.token);
  const ScoreSplit r = explain_score(model, head.layer, head.head, a.query, a.key, o);
  const Tokenizer& tok = model.tokenizer();
  const std::vector<Token>& tokens = model.tokens();
  const auto token = [&](int32_t id) { return nlohmann::json{{"text", tok.token_display(id)}, {"id", id}}; };
  const int P = (int)r.components.size();
  if (a.json) {
    nlohmann::json j;
    j["query_token"] = token(tokens[r.query].id);
    j["key_token"] = token(tokens[r.key].id);
    j["components"] = r.components;
    j["score"] = r.score;
    j["table"] = rows(r.table, P);
    j["contrast"] = {{"against", r.versus < 0 ? nlohmann::json("mean") : nlohmann::json(r.versus)},
                     {"table", rows(r.contrast, P)}};
    j["value"] = {{"token", token(r.token)},
                  {"by_token", r.value_by_token},
                  {"by_part", r.value_by_part},
                  {"total", r.value_total}};
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("L%dH%d, query %d \"%s\", key %d \"%s\": score %.4f, the sum of %d x %d cells; the largest:\n", r.layer,
              r.head, r.query, tokens[r.query].text.c_str(), r.key, tokens[r.key].text.c_str(), r.score, P, P);
  std::vector<int> order(r.table.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int x, int y) { return std::fabs(r.table[x]) > std::fabs(r.table[y]); });
  for (int i = 0; i < std::min<int>(8, (int)order.size()); i++)
    std::printf("  query %-14s x key %-14s %+9.4f\n", r.components[order[i] / P].c_str(),
                r.components[order[i] % P].c_str(), r.table[order[i]]);
  return 0;
}

int run_circuits(const std::string& dir, const LoadOptions& load, int seeds, bool json) {
  Model model = Model::load_directory(dir, load);
  const Circuits r = circuits(model, seeds);
  const int L = r.n_layer, NH = r.n_head;
  if (json) {
    nlohmann::json j;
    j["copying"] = rows(r.copying, NH);
    j["composition"] = {{"Q", rows(r.q, L * NH)}, {"K", rows(r.k, L * NH)}, {"V", rows(r.v, L * NH)}};
    j["baseline"] = {{"Q", r.baseline_q}, {"K", r.baseline_k}, {"V", r.baseline_v}};
    j["seeds"] = r.seeds;
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("baseline (random matrices, %d seeds): Q %.4f, K %.4f, V %.4f\n", r.seeds, r.baseline_q, r.baseline_k,
              r.baseline_v);
  std::printf("head    copying  strongest Q / K / V composition into a later head\n");
  for (int a = 0; a < L * NH; a++) {
    std::printf("L%dH%-4d %+7.3f", a / NH, a % NH, r.copying[a]);
    for (const auto* s : {&r.q, &r.k, &r.v}) {
      int best = -1;
      for (int b = 0; b < L * NH; b++)
        if (!std::isnan((*s)[a * L * NH + b]) && (best < 0 || (*s)[a * L * NH + b] > (*s)[a * L * NH + best])) best = b;
      if (best >= 0)
        std::printf("  L%dH%d %.3f", best / NH, best % NH, (*s)[a * L * NH + best]);
      else
        std::printf("  -");
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int explain_command(int argc, char** argv) {
  return command_main(argc, argv, kExplainUsage, [&] {
    ExplainArgs a;
    parse_options(argc, argv, a.model, a.json, a.load, [&](const std::string& arg, const auto& value) {
      if (arg == "--text")
        a.text = value(), a.have_text = true;
      else if (arg == "--head")
        a.head = value();
      else if (arg == "--query")
        a.query = parse_int("--query", value());
      else if (arg == "--key")
        a.key = parse_int("--key", value());
      else if (arg == "--versus")
        a.versus = value();
      else if (arg == "--token")
        a.token = value();
      else
        return false;
      return true;
    });
    if (a.model.empty()) throw Error("--model DIR is required");
    if (!a.have_text || a.head.empty() || a.query < 0 || a.key < 0)
      throw Error("--text TEXT, --head L:H, --query T and --key S are required");
    return run_explain(a);
  });
}

int circuits_command(int argc, char** argv) {
  return command_main(argc, argv, kCircuitsUsage, [&] {
    std::string model;
    bool json = false;
    int seeds = 16;
    LoadOptions load;
    parse_options(argc, argv, model, json, load, [&](const std::string& arg, const auto& value) {
      if (arg != "--seeds") return false;
      seeds = parse_int("--seeds", value(), 1);
      return true;
    });
    if (model.empty()) throw Error("--model DIR is required");
    return run_circuits(model, load, seeds, json);
  });
}

}  // namespace headscope::cli
