// headscope generate: the model continues a text (headscope/generate.hpp).
//
//   headscope generate --model DIR --text T --tokens N [--temperature X] [--top-k K] [--top-p P] [--seed S]
//                      [--weights f32|f16|q8|auto] [--threads N] [--json]
// Defaults: temperature 1, top-k 0 (off), top-p 1 (off), seed 0. Without --json the whole text is printed;
// with --json one document: {"ids": [the prompt's ids, then the generated ones], "generated": [ids], "text": "..."}.
#include "generate_command.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "headscope/error.hpp"
#include "headscope/generate.hpp"
#include "headscope/model.hpp"
#include "options.hpp"
#include "report_errors.hpp"

namespace headscope::cli {
namespace {

const char* kGenerateUsage =
    "usage: headscope generate --model DIR --text TEXT --tokens N [--temperature X] [--top-k K] [--top-p P]\n"
    "                          [--seed S] [--weights f32|f16|q8|auto] [--threads N] [--json]\n"
    "  Continues TEXT by N tokens drawn from softmax(logits / temperature), restricted to the K most likely\n"
    "  tokens and to the smallest set whose probability reaches P. Temperature 0 is greedy. Defaults:\n"
    "  temperature 1, top-k 0 (off), top-p 1 (off), seed 0; one seed gives one continuation.\n";

int run_generate(int argc, char** argv) {
  std::string model_dir, text;
  bool has_text = false, json = false;
  int tokens = -1;
  SamplingOptions o;
  LoadOptions load;
  parse_options(argc, argv, model_dir, json, load, [&](const std::string& arg, const auto& value) {
    if (arg == "--text")
      text = value(), has_text = true;
    else if (arg == "--tokens")
      tokens = parse_int(arg, value());
    else if (arg == "--temperature")
      o.temperature = parse_number(arg, value());
    else if (arg == "--top-k")
      o.top_k = parse_int(arg, value());
    else if (arg == "--top-p")
      o.top_p = parse_number(arg, value());
    else if (arg == "--seed")
      o.seed = (uint64_t)parse_whole(arg, value(), 0, 1LL << 53);
    else
      return false;
    return true;
  });
  if (model_dir.empty()) throw Error("--model DIR is required");
  if (!has_text) throw Error("--text TEXT is required");
  if (tokens < 0) throw Error("--tokens N is required");
  check_sampling_options(o);
  Model model = Model::load_directory(model_dir, load);
  const GenerateResult r = generate(model, text, tokens, o);
  if (json) {
    nlohmann::json j;
    j["ids"] = r.ids;
    j["generated"] = r.generated;
    j["text"] = r.text;
    // a continuation may end inside a UTF-8 character: replaced, not thrown
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << r.text << "\n";
  }
  return 0;
}

}  // namespace

int generate_command(int argc, char** argv) {
  return command_main(argc, argv, kGenerateUsage, [&] { return run_generate(argc, argv); });
}

}  // namespace headscope::cli
