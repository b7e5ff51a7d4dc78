// headscope heads: how much each head matters to a text, and how many heads the model can lose
// (measure_heads, headscope/heads.hpp).
//
//   headscope heads --model DIR --text-file F [--random-orders N] [--seed S] [--exact-limit N] [--candidates K]
//                   [--gradient-every G]
//                   [--weights f32|f16|q8|auto] [--threads N] [--json]
//
// --json prints one document on stdout:
//   {"tokens": T, "dropped_tokens": D, "method": "...", "loss": x, "gate_grad": [L][H], "ablation_delta": [L][H],
//    "order": [[l, h], ...every head once], "pruned_loss": [L*H+1], "random_loss_mean": [L*H+1],
//    "random_loss_band": [[lo, hi], ...L*H+1]}
// Without --json, a short table. A text longer than the context is cut at the start, as `run` cuts it,
// and stderr says how many tokens were cut. Progress goes to stderr when it is a terminal.
#include "heads_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/heads.hpp"
#include "headscope/model.hpp"
#include "options.hpp"
#include "report_errors.hpp"

namespace headscope::cli {
namespace {

const char* kHeadsUsage =
    "usage: headscope heads --model DIR --text-file F [--random-orders N] [--seed S] [--exact-limit N]\n"
    "                       [--candidates K] [--gradient-every G] [--weights f32|f16|q8|auto] [--threads N] [--json]\n"
    "  Each head's importance on the text (gate gradient dL/dxi and the loss change when it alone is\n"
    "  switched off), and the loss as heads are switched off one at a time, greedily by measured loss,\n"
    "  beside N seeded random orders (default 8). The loss is the mean next-token cross-entropy.\n"
    "  Up to --exact-limit heads (default 64) every remaining head is tried at each step; above, the\n"
    "  --candidates best by gate gradients (default 4), recomputed every --gradient-every heads removed (default 4).\n";

struct HeadsArgs {
  std::string model, text_file;
  bool json = false;
  HeadsOptions options;
  LoadOptions load;
};

HeadsArgs parse(int argc, char** argv) {
  HeadsArgs a;
  parse_options(argc, argv, a.model, a.json, a.load, [&](const std::string& arg, const auto& value) {
    if (arg == "--text-file")
      a.text_file = value();
    else if (arg == "--random-orders")
      a.options.random_orders = parse_int(arg, value());
    else if (arg == "--seed")
      a.options.seed = (uint64_t)parse_int(arg, value());
    else if (arg == "--exact-limit")
      a.options.exact_limit = parse_int(arg, value());
    else if (arg == "--candidates")
      a.options.exact_candidates = std::max(1, parse_int(arg, value()));
    else if (arg == "--gradient-every")
      a.options.gradient_every = std::max(1, parse_int(arg, value()));
    else
      return false;
    return true;
  });
  if (a.model.empty()) throw Error("--model DIR is required");
  if (a.text_file.empty()) throw Error("--text-file F is required");
  return a;
}

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open the text file " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::json per_head(const std::vector<double>& v, int L, int NH) {
  nlohmann::json out = nlohmann::json::array();
  for (int l = 0; l < L; l++) out.push_back(std::vector<double>(v.begin() + l * NH, v.begin() + (l + 1) * NH));
  return out;
}

int run_heads(const HeadsArgs& a) {
  const std::string text = read_text_file(a.text_file);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw Error("the text file " + a.text_file + " is empty");
  Model model = Model::load_directory(a.model, a.load);
  std::vector<Token> tokens = model.tokenizer().encode_input(text);
  const int dropped = model.tokens_to_drop((int)tokens.size());
  if (dropped)
    std::cerr << "headscope heads: the text has " << tokens.size() << " tokens; the first " << dropped
              << " were cut to fit the context of " << model.config().n_positions << "\n";
  std::vector<int32_t> ids;
  for (std::size_t i = dropped; i < tokens.size(); i++) ids.push_back(tokens[i].id);
  HeadsOptions options = a.options;
  TerminalProgress progress("heads");
  options.progress = progress.callback();
  const HeadsReport r = measure_heads(model, ids, options);
  progress.done();
  const int L = r.n_layer, NH = r.n_head;
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = r.tokens;
    j["dropped_tokens"] = dropped;
    j["method"] = r.method;
    j["loss"] = r.loss;
    j["gate_grad"] = per_head(r.gate_grad, L, NH);
    j["ablation_delta"] = per_head(r.ablation_delta, L, NH);
    j["order"] = nlohmann::json::array();
    for (const HeadRef& h : r.order) j["order"].push_back({h.layer, h.head});
    j["pruned_loss"] = r.pruned_loss;
    j["random_loss_mean"] = r.random_mean;
    j["random_loss_band"] = nlohmann::json::array();
    for (std::size_t k = 0; k < r.random_mean.size(); k++)
      j["random_loss_band"].push_back({r.random_lo[k], r.random_hi[k]});
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("%d tokens, loss %.4f nats; order: %s\n", r.tokens, r.loss, r.method.c_str());
  std::printf("head   gate grad   alone off\n");
  for (int i = 0; i < L * NH; i++)
    std::printf("L%dH%-3d %+10.4f  %+10.4f\n", i / NH, i % NH, r.gate_grad[i], r.ablation_delta[i]);
  std::printf("heads off   loss (greedy)%s\n", r.random_mean.empty() ? "" : "   random mean [lowest, highest]");
  for (std::size_t k = 0; k < r.pruned_loss.size(); k++) {
    std::printf("%9zu   %.4f", k, r.pruned_loss[k]);
    if (!r.random_mean.empty())
      std::printf("          %.4f [%.4f, %.4f]", r.random_mean[k], r.random_lo[k], r.random_hi[k]);
    std::printf(
        "%s\n",
        k ? ("   off: L" + std::to_string(r.order[k - 1].layer) + "H" + std::to_string(r.order[k - 1].head)).c_str()
          : "");
  }
  return 0;
}

}  // namespace

int heads_command(int argc, char** argv) {
  return command_main(argc, argv, kHeadsUsage, [&] { return run_heads(parse(argc, argv)); });
}

}  // namespace headscope::cli
