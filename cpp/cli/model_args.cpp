// headscope run, info and bench: their shared flags (model_args.hpp).
#include "model_args.hpp"

#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "options.hpp"

namespace headscope::cli {
namespace {

std::vector<headscope::HeadRef> parse_heads(const std::string& s, const std::string& flag) {
  std::vector<headscope::HeadRef> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) throw headscope::Error(flag + " expects LAYER:HEAD pairs, got \"" + item + "\"");
    try {
      out.push_back({std::stoi(item.substr(0, colon)), std::stoi(item.substr(colon + 1))});
    } catch (const std::exception&) {
      throw headscope::Error(flag + " expects LAYER:HEAD pairs, got \"" + item + "\"");
    }
    pos = comma + 1;
  }
  return out;
}

// "3,17,5": token ids (range-checked against the model later, by Model::run_ids)
std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 0 || v > INT32_MAX)
      throw headscope::Error("--ids expects comma-separated token ids (whole numbers >= 0), got \"" + item + "\"");
    out.push_back((int32_t)v);
    pos = comma + 1;
  }
  return out;
}

}  // namespace

Args parse_model_args(int argc, char** argv) {
  if (argc < 2) throw headscope::Error("missing command");
  Args a;
  a.command = argv[1];
  if (a.command != "run" && a.command != "info" && a.command != "bench")
    throw headscope::Error("unknown command \"" + a.command + "\"");
  for (int i = 2; i < argc; i++) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw headscope::Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model")
      a.model = value();
    else if (arg == "--text") {
      a.text = value();
      a.has_text = true;
    } else if (arg == "--ids")
      a.ids = parse_ids(value());
    else if (arg == "--json")
      a.json = true;
    else if (arg == "--top")
      a.top = headscope::cli::parse_int(arg, value(), 1);
    else if (arg == "--ablate")
      a.ablate = parse_heads(value(), "--ablate");
    else if (arg == "--inspect") {
      const std::string v = value();
      const auto heads = parse_heads(v, "--inspect");  // the same LAYER:HEAD syntax, exactly one pair
      if (heads.size() != 1) throw headscope::Error("--inspect expects one LAYER:HEAD pair, got \"" + v + "\"");
      a.inspect = heads[0];
    } else if (arg == "--tokens")
      a.tokens = headscope::cli::parse_int(arg, value(), 1);
    else if (arg == "--repeat")
      a.repeat = headscope::cli::parse_int(arg, value(), 1);
    else if (arg == "--threads")
      a.load.threads = headscope::cli::parse_threads(value());
    else if (arg == "--no-maps")
      a.load.attention_maps = false;
    else if (arg == "--activations")  // LoadOptions::activations
      a.load.activations = headscope::parse_activation_storage(value());
    else if (arg == "--memory")  // MB: LoadOptions::memory_limit_bytes
      a.load.memory_limit_bytes = (uint64_t)headscope::cli::parse_int(arg, value(), 1) << 20;
    else if (arg == "--weights") {
      const std::string v = value();
      if (v != "f32" && v != "f16" && v != "q8" && v != "auto")
        throw headscope::Error("--weights expects f32, f16, q8 or auto, got \"" + v + "\"");
      a.load.weights = headscope::parse_weight_storage(v);
    } else
      throw headscope::Error("unknown option \"" + arg + "\"");
  }
  if (a.model.empty()) throw headscope::Error("--model DIR is required");
  if (a.command == "run" && a.has_text == !a.ids.empty()) throw headscope::Error("run needs either --text or --ids");
  if (a.command == "bench" && a.tokens == 0) throw headscope::Error("--tokens T is required");
  return a;
}

}  // namespace headscope::cli
