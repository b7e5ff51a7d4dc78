// headscope: the native command-line tool.
//   headscope run --model DIR --text "..." [--json] [--top K] [--ablate L:H[,L:H...]]
//   headscope info --model DIR
// --json prints exactly one JSON document on stdout (other tools rely on it, keep it stable):
//   {"tokens": [strings], "ids": [ints], "logits_last": [V floats], "attention": [L][H][T][T],
//    "dropped_tokens": int}
// Errors go to stderr with a non-zero exit code.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "train_command.hpp"

namespace {

const char* kUsage =
    "usage:\n"
    "  headscope run --model DIR --text TEXT [--json] [--top K] [--ablate L:H[,L:H...]]\n"
    "  headscope info --model DIR\n"
    "  headscope train ... (headscope train --help)\n"
    "DIR is a folder in the Hugging Face GPT-2 layout (config.json, model.safetensors, vocab.json, merges.txt).\n";

struct Args {
  std::string command, model, text;
  bool json = false, has_text = false;
  int top = 10;
  std::vector<headscope::HeadRef> ablate;
};

std::vector<headscope::HeadRef> parse_ablate(const std::string& s) {
  std::vector<headscope::HeadRef> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) throw headscope::Error("--ablate expects LAYER:HEAD pairs, got \"" + item + "\"");
    try {
      out.push_back({std::stoi(item.substr(0, colon)), std::stoi(item.substr(colon + 1))});
    } catch (const std::exception&) {
      throw headscope::Error("--ablate expects LAYER:HEAD pairs, got \"" + item + "\"");
    }
    pos = comma + 1;
  }
  return out;
}

Args parse_args(int argc, char** argv) {
  if (argc < 2) throw headscope::Error("missing command");
  Args a;
  a.command = argv[1];
  if (a.command != "run" && a.command != "info") throw headscope::Error("unknown command \"" + a.command + "\"");
  for (int i = 2; i < argc; i++) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw headscope::Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model") a.model = value();
    else if (arg == "--text") { a.text = value(); a.has_text = true; }
    else if (arg == "--json") a.json = true;
    else if (arg == "--top") {
      const std::string v = value();
      try { a.top = std::stoi(v); } catch (const std::exception&) { throw headscope::Error("--top expects a number, got \"" + v + "\""); }
      if (a.top < 1) throw headscope::Error("--top must be at least 1");
    }
    else if (arg == "--ablate") a.ablate = parse_ablate(value());
    else throw headscope::Error("unknown option \"" + arg + "\"");
  }
  if (a.model.empty()) throw headscope::Error("--model DIR is required");
  if (a.command == "run" && !a.has_text) throw headscope::Error("--text is required");
  return a;
}

std::vector<float> softmax(std::span<const float> logits) {
  const float m = *std::max_element(logits.begin(), logits.end());
  std::vector<float> p(logits.size());
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); i++) sum += (p[i] = std::exp(logits[i] - m));
  for (float& x : p) x = (float)(x / sum);
  return p;
}

int run(const Args& a) {
  headscope::Model model = headscope::Model::load_directory(a.model);
  const auto& c = model.config();
  if (a.command == "info") {
    std::printf("layers %d, heads %d, n_embd %d (head size %d), context %d, vocab %d, parameters %zu\n", c.n_layer,
                c.n_head, c.n_embd, c.head_size(), c.n_positions, c.vocab_size, model.parameter_count());
    return 0;
  }
  headscope::RunOptions opt;
  opt.ablate = a.ablate;
  const headscope::RunInfo info = model.run(a.text, opt);
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
    // replace, not throw, if a token's display text were invalid UTF-8
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::printf("%d tokens", model.T());
  if (info.dropped_tokens) std::printf(" (the first %d were cut to fit the context of %d)", info.dropped_tokens, c.n_positions);
  std::printf(":\n");
  for (const auto& t : model.tokens()) std::printf("  %6d  [%u, %u)  \"%s\"\n", t.id, t.byte_start, t.byte_end, t.text.c_str());
  const std::vector<float> p = softmax(logits);
  std::vector<int> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  const int k = std::min<int>(a.top, (int)p.size());
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int x, int y) { return p[x] > p[y]; });
  std::printf("top %d next tokens:\n", k);
  for (int i = 0; i < k; i++)
    std::printf("  %6.2f%%  \"%s\"\n", 100.0 * p[order[i]], model.tokenizer().token_display(order[i]).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "train") return headscope::cli::train_command(argc, argv);
  try {
    return run(parse_args(argc, argv));
  } catch (const headscope::Error& e) {
    std::cerr << "headscope: " << e.what() << "\n";
    if (std::string(e.what()).find("missing command") != std::string::npos ||
        std::string(e.what()).find("unknown") != std::string::npos)
      std::cerr << kUsage;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "headscope: unexpected error: " << e.what() << "\n";
    return 2;
  }
}
