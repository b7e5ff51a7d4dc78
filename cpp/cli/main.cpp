// headscope: the native command-line tool.
//   headscope run --model DIR (--text "..." | --ids 3,17,5) [--json] [--top K] [--ablate L:H[,L:H...]] [--inspect L:H]
//                 [--weights f32|f16] [--threads N]
//   headscope info --model DIR [--weights f32|f16]
//   headscope bench --model DIR --tokens T [--repeat N] [--weights f32|f16] [--threads N]
// --weights f16 holds the large weight matrices in half precision (about half the memory).
// --threads N splits each run over N threads (default 0: one per core); results are the same floats.
// --json prints exactly one JSON document on stdout (other tools rely on it, keep it stable):
//   {"tokens": [strings], "ids": [ints], "logits_last": [V floats], "attention": [L][H][T][T],
//    "dropped_tokens": int}, and with --inspect L:H also "inside": {"layer", "head", "q", "k", "v" ([T][HS]),
//    "scores" ([T][T], q_i.k_j/sqrt(HS), null where masked), "attention" ([T][T]), "z" ([T][HS]),
//    "out" ([T][C], the head's write through W_O), "value_norm" ([T], ||v_j W_O^h||)}
// bench prints one JSON line: {"tokens", "repeat", "load_ms", "forward_ms", "incremental_ms",
//   "forward_cpu_ms", "incremental_cpu_ms", "rss_after_load_mb", "peak_rss_mb", "weight_mb", "weights", "simd"}; forward_ms is the
//   median full run of T tokens from an empty cache, incremental_ms the median one-token update at T
//   (T-1 tokens cached), *_cpu_ms the same in process CPU time, rss_after_load_mb VmRSS right after
//   loading, peak_rss_mb VmHWM at the end (the activations for T tokens included), weights the storage ("f32"/"f16").
// --ids runs token ids directly, without the tokenizer (the synthetic tasks of `headscope train` have
//   vocabularies that no text encodes to).
// Errors go to stderr with a non-zero exit code.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/predictions.hpp"
#include "options.hpp"
#include "report_errors.hpp"
#include "generate_command.hpp"
#include "heads_command.hpp"
#include "train_command.hpp"

namespace {

const char* kUsage =
    "usage:\n"
    "  headscope run --model DIR (--text TEXT | --ids ID,ID,...) [--json] [--top K] [--ablate L:H[,L:H...]]\n"
    "                [--inspect L:H] [--weights f32|f16] [--threads N]\n"
    "  headscope info --model DIR [--weights f32|f16]\n"
    "  headscope bench --model DIR --tokens T [--repeat N] [--weights f32|f16] [--threads N]\n"
    "  headscope train ... (headscope train --help)\n"
    "  headscope heads --model DIR --text-file F [--random-orders N] [--seed S] [--json] (headscope heads --help)\n"
    "  headscope generate --model DIR --text TEXT --tokens N [--temperature X] [--top-k K] [--top-p P] [--seed S] [--json]\n"
    "DIR is a folder in the Hugging Face GPT-2 layout (config.json, model.safetensors, vocab.json, merges.txt).\n"
    "--weights f16 keeps the large weight matrices in half precision: about half the memory (default f32).\n"
    "--threads N splits each run over N threads (default 0: one per core; run, bench, heads, generate, train).\n";

struct Args {
  std::string command, model, text;
  bool json = false, has_text = false;
  std::vector<int32_t> ids;  // --ids
  int top = 10;
  int tokens = 0, repeat = 5;
  std::vector<headscope::HeadRef> ablate;
  std::optional<headscope::HeadRef> inspect;  // --inspect L:H
  headscope::LoadOptions load;
};

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
    try { v = std::stoll(item, &used); } catch (const std::exception&) { used = 0; }
    if (item.empty() || used != item.size() || v < 0 || v > INT32_MAX)
      throw headscope::Error("--ids expects comma-separated token ids (whole numbers >= 0), got \"" + item + "\"");
    out.push_back((int32_t)v);
    pos = comma + 1;
  }
  return out;
}


Args parse_args(int argc, char** argv) {
  if (argc < 2) throw headscope::Error("missing command");
  Args a;
  a.command = argv[1];
  if (a.command != "run" && a.command != "info" && a.command != "bench") throw headscope::Error("unknown command \"" + a.command + "\"");
  for (int i = 2; i < argc; i++) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw headscope::Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model") a.model = value();
    else if (arg == "--text") { a.text = value(); a.has_text = true; }
    else if (arg == "--ids") a.ids = parse_ids(value());
    else if (arg == "--json") a.json = true;
    else if (arg == "--top") a.top = headscope::cli::parse_int(arg, value(), 1);
    else if (arg == "--ablate") a.ablate = parse_heads(value(), "--ablate");
    else if (arg == "--inspect") {
      const std::string v = value();
      const auto heads = parse_heads(v, "--inspect");  // the same LAYER:HEAD syntax, exactly one pair
      if (heads.size() != 1) throw headscope::Error("--inspect expects one LAYER:HEAD pair, got \"" + v + "\"");
      a.inspect = heads[0];
    }
    else if (arg == "--tokens") a.tokens = headscope::cli::parse_int(arg, value(), 1);
    else if (arg == "--repeat") a.repeat = headscope::cli::parse_int(arg, value(), 1);
    else if (arg == "--threads") a.load.threads = headscope::cli::parse_threads(value());
    else if (arg == "--weights") {
      const std::string v = value();
      if (v != "f32" && v != "f16") throw headscope::Error("--weights expects f32 or f16, got \"" + v + "\"");
      a.load.weights = headscope::parse_weight_storage(v);
    }
    else throw headscope::Error("unknown option \"" + arg + "\"");
  }
  if (a.model.empty()) throw headscope::Error("--model DIR is required");
  if (a.command == "run" && a.has_text == !a.ids.empty()) throw headscope::Error("run needs either --text or --ids");
  if (a.command == "bench" && a.tokens == 0) throw headscope::Error("--tokens T is required");
  return a;
}


// A memory figure of this process from /proc/self/status ("VmHWM" peak resident, "VmRSS" resident
// now), in MB; -1 where /proc is unavailable.
double status_mb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;  // "VmHWM:  123 kB"
  return -1;
}

// CPU time of this process: on cores shared with other jobs, wall time also counts the time the
// process waited for a core; both are reported.
double process_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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

int bench(const Args& a) {
  using clk = std::chrono::steady_clock;
  const auto ms_since = [](clk::time_point t0) { return std::chrono::duration<double, std::milli>(clk::now() - t0).count(); };
  const auto t_load = clk::now();
  headscope::Model model = headscope::Model::load_directory(a.model, a.load);
  const double load_ms = ms_since(t_load);
  const double rss_after_load_mb = status_mb("VmRSS");
  const auto& c = model.config();
  const int T = a.tokens;
  if (T > c.n_positions)
    throw headscope::Error("--tokens " + std::to_string(T) + " exceeds the model's context of " + std::to_string(c.n_positions));
  // Token ids spread over the vocabulary; speed does not depend on which ids they are.
  std::vector<int32_t> ids(T);
  for (int i = 0; i < T; i++) ids[i] = (int32_t)(((int64_t)i * 7919 + 13) % c.vocab_size);
  const std::span<const int32_t> all(ids), prefix(ids.data(), T - 1);
  std::vector<double> full, inc, full_cpu, inc_cpu;
  model.run_ids(all);  // warm-up: allocates the activations for T positions
  for (int r = 0; r < a.repeat; r++) {
    model.clear_cache();
    auto t0 = clk::now();
    double c0 = process_cpu_ms();
    model.run_ids(all);
    full.push_back(ms_since(t0));
    full_cpu.push_back(process_cpu_ms() - c0);
    if (T > 1) {
      model.clear_cache();
      model.run_ids(prefix);
      t0 = clk::now();
      c0 = process_cpu_ms();
      model.run_ids(all);
      inc.push_back(ms_since(t0));
      inc_cpu.push_back(process_cpu_ms() - c0);
    }
  }
  nlohmann::json j;
  j["tokens"] = T;
  j["repeat"] = a.repeat;
  j["load_ms"] = load_ms;
  j["forward_ms"] = median(full);
  j["incremental_ms"] = inc.empty() ? nullptr : nlohmann::json(median(inc));
  j["forward_cpu_ms"] = median(full_cpu);
  j["incremental_cpu_ms"] = inc_cpu.empty() ? nullptr : nlohmann::json(median(inc_cpu));
  j["rss_after_load_mb"] = rss_after_load_mb;
  j["peak_rss_mb"] = status_mb("VmHWM");
  j["weight_mb"] = model.weight_bytes() / 1048576.0;
  j["threads"] = model.threads();
  j["weights"] = headscope::weight_storage_name(model.weight_storage());
  j["simd"] = headscope::simd_info().arch;
  std::cout << j.dump() << "\n";
  return 0;
}

int run(const Args& a) {
  if (a.command == "bench") return bench(a);
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
  if (info.dropped_tokens) std::printf(" (the first %d were cut to fit the context of %d)", info.dropped_tokens, c.n_positions);
  std::printf(":\n");
  for (const auto& t : model.tokens()) std::printf("  %6d  [%u, %u)  \"%s\"\n", t.id, t.byte_start, t.byte_end, t.text.c_str());
  // the engine's own top-k (predictions.hpp), as the package's topNext: ties to the smaller id
  const std::vector<headscope::TokenProbability> top = headscope::top_k_probabilities(logits, a.top);
  std::printf("top %d next tokens:\n", (int)top.size());
  for (const auto& t : top) std::printf("  %6.2f%%  \"%s\"\n", 100.0 * t.prob, model.tokenizer().token_display(t.id).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "train") return headscope::cli::train_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "heads") return headscope::cli::heads_command(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "generate") return headscope::cli::generate_command(argc, argv);
  return headscope::cli::report_errors([&] { return run(parse_args(argc, argv)); }, kUsage, {"missing command", "unknown"});
}
