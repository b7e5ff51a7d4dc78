// headscope train: trains a model with the engine's TrainingRun (the same code the page runs in its
// Worker) and writes a folder in the Hugging Face layout (config.json, model.safetensors in F32, and
// vocab.json + merges.txt, or for a Llama-family --init folder its tokenizer.json) that `headscope run`,
// loadModel() and the demo open.
//
//   headscope train [--preset NAME] [--config FILE.json | --init DIR] [--task induction|text:FILE | --batch FILE.json]
//                   [--steps N] [--optimizer adamw|sgd] [--lr X] [--weight-decay X] [--clip X]
//                   [--batch-size B] [--seq-len T] [--seed S] [--periods MIN:MAX] [--log-every K] [--scores]
//                   [--threads N] --out DIR
//
// --preset NAME runs one of the page's presets (training_spec.cpp: shape, task, optimizer, learning
//   rate, warmup, schedule, steps, seed) exactly as the page does; any other flag overrides its value.
//   Without a preset: --config or --init, --task or --batch and --steps are required; AdamW at lr 1e-3,
//   batch 8, T = min(n_positions, 64), no warmup, constant rate, no clipping, no weight decay.
// stdout: one JSON line per logged step, {"step": s, "loss": x, "tokens_per_s": y, "lr": r} (step counts
//   from 1; the loss is the one the step's gradients came from; with --scores also the probe's best
//   previous-token and induction scores), then {"done": true, "out": DIR, ..., "previous": [L*NH],
//   "induction": [L*NH]} with every head's scores on the probe (training_run.hpp).
// Errors go to stderr with a non-zero exit and nothing is written.
//
// --batch FILE.json: a JSON array of token-id sequences of equal length T+1; every step trains on
//   it, predicting ids[1..T] from ids[0..T-1] (mean cross-entropy over every sequence and position).
// --task induction: spans of P distinct random tokens repeated to fill the window, P uniform in
//   --periods (default 4:16; the probe period, their middle, excluded) per sequence (training_run.hpp). A fresh batch
//   every step, from --seed.
// --init DIR: a GPT-2 or Llama-family folder (llama, qwen3: its tokenizer.json is required).
// --task text:FILE: the file, encoded with the tokenizer of --init DIR (its vocab.json and merges.txt, or
// tokenizer.json),
//   or for a fresh model with one token per byte (vocab_size 256, as --preset text), gives each step
//   B windows of T+1 consecutive tokens at random offsets. The text needs at least T+1 tokens. The
//   output folder gets the tokenizer it was encoded with.
// SGD has no momentum, decay or clipping unless asked: --optimizer sgd --lr 1 --steps 1 moves every
// weight by exactly minus its gradient (--clip and --weight-decay apply to SGD too when given).
#include "train_command.hpp"

#include "options.hpp"
#include "report_errors.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "headscope/config.hpp"
#include "headscope/error.hpp"
#include "headscope/safetensors.hpp"
#include "headscope/tokenizer.hpp"
#include "headscope/train.hpp"
#include "headscope/training_run.hpp"

namespace headscope::cli {

namespace {

namespace fs = std::filesystem;
using headscope::Error;

const char* kTrainUsage =
    "usage:\n"
    "  headscope train [--preset NAME] [--config FILE.json | --init DIR] [--task induction|text:FILE | --batch "
    "FILE.json]\n"
    "                  [--steps N] [--optimizer adamw|sgd] [--lr X] [--weight-decay X] [--clip X]\n"
    "                  [--batch-size B] [--seq-len T] [--seed S] [--periods MIN:MAX] [--log-every K] [--scores]\n"
    "                  [--threads N] --out DIR\n"
    "  presets: induction (the page's default), induction-1-layer, induction-1-head, text\n";

// Values left unset (0, empty, has_* false) come from the preset, or from RunSpec's defaults.
struct TrainArgs {
  std::string preset, config, init, task, batch, out, optimizer;
  int steps = 0, batch_size = 0, seq_len = 0, log_every = 1, min_period = 0, max_period = 0, threads = 0;
  uint64_t seed = 1;
  float lr = 0.0f, weight_decay = 0.0f, clip = 0.0f;
  bool has_weight_decay = false, has_clip = false, has_seed = false, scores = false;
};

std::string read_file(const fs::path& p, const std::string& what) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(what + " " + p.string() + " not found or not readable");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TrainArgs parse(int argc, char** argv) {
  TrainArgs a;
  for (int i = 2; i < argc; i++) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--preset")
      a.preset = value();
    else if (arg == "--scores")
      a.scores = true;
    else if (arg == "--periods") {
      const std::string v = value();
      const std::size_t colon = v.find(':');
      if (colon == std::string::npos) throw Error("--periods expects MIN:MAX, got \"" + v + "\"");
      a.min_period = parse_int(arg, v.substr(0, colon));
      a.max_period = parse_int(arg, v.substr(colon + 1));
      if (a.min_period < 2 || a.max_period < a.min_period)
        throw Error("--periods expects 2 <= MIN <= MAX, got \"" + v + "\"");
    } else if (arg == "--config")
      a.config = value();
    else if (arg == "--init")
      a.init = value();
    else if (arg == "--task")
      a.task = value();
    else if (arg == "--batch")
      a.batch = value();
    else if (arg == "--out")
      a.out = value();
    else if (arg == "--optimizer")
      a.optimizer = value();
    else if (arg == "--steps") {
      if ((a.steps = parse_int(arg, value())) < 1) throw Error("train: --steps must be at least 1");
    } else if (arg == "--batch-size") {
      if ((a.batch_size = parse_int(arg, value())) < 1) throw Error("train: --batch-size must be at least 1");
    } else if (arg == "--seq-len")
      a.seq_len = parse_int(arg, value());
    else if (arg == "--log-every")
      a.log_every = parse_int(arg, value());
    else if (arg == "--threads")
      a.threads = parse_threads(value());
    else if (arg == "--seed") {
      a.seed = (uint64_t)parse_whole(arg, value(), 0, 1LL << 53);
      a.has_seed = true;
    } else if (arg == "--lr") {
      if (!((a.lr = (float)parse_number(arg, value())) > 0)) throw Error("train: --lr must be positive");
    } else if (arg == "--weight-decay") {
      a.weight_decay = (float)parse_number(arg, value());
      a.has_weight_decay = true;
    } else if (arg == "--clip") {
      a.clip = (float)parse_number(arg, value());
      a.has_clip = true;
    } else
      throw Error("train: unknown option \"" + arg + "\"");
  }
  if (!a.preset.empty()) headscope::train::preset(a.preset);  // an unknown name fails here, listing the presets
  if (!a.config.empty() && !a.init.empty()) throw Error("train: give at most one of --config FILE.json and --init DIR");
  if (a.preset.empty() && a.config.empty() && a.init.empty())
    throw Error("train: give --preset NAME, --config FILE.json or --init DIR");
  if (!a.task.empty() && !a.batch.empty()) throw Error("train: give exactly one of --task and --batch FILE.json");
  if (a.preset.empty() && a.task.empty() && a.batch.empty())
    throw Error("train: give exactly one of --task and --batch FILE.json");
  if (!a.task.empty() && a.task != "induction" && !a.task.starts_with("text:"))
    throw Error("train: unknown task \"" + a.task + "\" (induction or text:FILE)");
  if (a.preset.empty() && a.steps < 1) throw Error("train: --steps N (at least 1) is required");
  if (a.out.empty()) throw Error("train: --out DIR is required");
  if (!a.optimizer.empty() && a.optimizer != "adamw" && a.optimizer != "sgd")
    throw Error("train: --optimizer must be adamw or sgd, got \"" + a.optimizer + "\"");
  if (a.weight_decay < 0 || a.clip < 0) throw Error("train: --weight-decay and --clip must not be negative");
  if (a.log_every < 1) throw Error("train: --log-every must be at least 1");
  return a;
}

// --batch FILE.json -> rows of equal length T+1, every id in [0, V)
std::vector<std::vector<int>> read_batch(const std::string& path, int V, int max_T) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path, "--batch file"));
  } catch (const nlohmann::json::exception& e) {
    throw Error("--batch " + path + ": not valid JSON: " + e.what());
  }
  if (!j.is_array() || j.empty()) throw Error("--batch " + path + ": expected a non-empty JSON array of id sequences");
  std::vector<std::vector<int>> rows;
  for (std::size_t r = 0; r < j.size(); r++) {
    if (!j[r].is_array()) throw Error("--batch " + path + ": row " + std::to_string(r) + " is not an array of ids");
    std::vector<int> row;
    for (std::size_t t = 0; t < j[r].size(); t++) {
      const auto& v = j[r][t];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= V)
        throw Error("--batch " + path + ": row " + std::to_string(r) + ", position " + std::to_string(t) + ": " +
                    v.dump() + " is not a token id in [0, " + std::to_string(V) + ")");
      row.push_back(v.get<int>());
    }
    if (row.size() < 2)
      throw Error("--batch " + path + ": row " + std::to_string(r) + " has " + std::to_string(row.size()) +
                  " ids; each needs at least 2 (inputs and the next-token targets)");
    if (!rows.empty() && row.size() != rows[0].size())
      throw Error("--batch " + path + ": ragged rows: row " + std::to_string(r) + " has " + std::to_string(row.size()) +
                  " ids, row 0 has " + std::to_string(rows[0].size()) + "; all need the same length T+1");
    rows.push_back(std::move(row));
  }
  if ((int)rows[0].size() - 1 > max_T)
    throw Error("--batch " + path + ": sequences of " + std::to_string(rows[0].size()) + " ids give T = " +
                std::to_string(rows[0].size() - 1) + ", more than n_positions " + std::to_string(max_T));
  return rows;
}

int train(const TrainArgs& a) {
  namespace tr = headscope::train;
  // the spec: a preset's, or the defaults, then every flag given
  tr::RunSpec spec;
  spec.batch_size = 8;
  if (!a.preset.empty()) spec = tr::preset(a.preset).spec;
  if (!a.config.empty()) spec.shape = parse_config(read_file(a.config, "--config file"));
  if (!a.task.empty()) spec.task = a.task.starts_with("text:") ? "text" : a.task;
  if (!a.batch.empty()) spec.task = "batch";
  if (a.steps > 0) spec.steps = a.steps;
  if (a.batch_size > 0) spec.batch_size = a.batch_size;
  if (!a.optimizer.empty()) spec.optimizer = a.optimizer;
  if (a.lr > 0) spec.lr = a.lr;
  if (a.has_weight_decay) spec.weight_decay = a.weight_decay;
  if (a.has_clip) spec.clip = a.clip;
  if (a.has_seed) spec.seed = a.seed;
  if (a.min_period > 0) {
    spec.min_period = a.min_period;
    spec.max_period = a.max_period;
  }

  // the model's shape and starting weights (from --init, the shape is the folder's)
  std::string init_config, init_weights;
  tr::TokenizerFiles init_tokenizer;
  if (!a.init.empty()) {
    const fs::path dir(a.init);
    if (!fs::is_directory(dir) || !fs::exists(dir / "config.json") || !fs::exists(dir / "model.safetensors"))
      throw Error("--init " + a.init + " is not a model folder (it needs config.json and model.safetensors)");
    init_config = read_file(dir / "config.json", "config.json");
    try {
      spec.shape = parse_config(init_config);
    } catch (const Error& e) {
      throw Error("--init " + a.init + ": " + e.what());
    }
    init_weights = read_file(dir / "model.safetensors", "model.safetensors");
    if (spec.shape.family == headscope::Family::llama) {
      if (!fs::exists(dir / "tokenizer.json"))
        throw Error("--init " + a.init + " is a Llama-family folder (model_type \"" + spec.shape.model_type +
                    "\") without its tokenizer.json");
      init_tokenizer.tokenizer_json = read_file(dir / "tokenizer.json", "--init tokenizer.json");
    } else if (fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt")) {
      init_tokenizer.vocab_json = read_file(dir / "vocab.json", "--init vocab.json");
      init_tokenizer.merges_txt = read_file(dir / "merges.txt", "--init merges.txt");
    } else {
      if (spec.task == "text") throw Error("--task text:FILE needs the vocab.json and merges.txt of --init " + a.init);
      init_tokenizer.vocab_json = tr::synthetic_vocab_json(spec.shape.vocab_size);
      init_tokenizer.merges_txt = tr::kEmptyMerges;
    }
  }

  std::vector<std::vector<int32_t>> fixed;
  if (!a.batch.empty()) fixed = read_batch(a.batch, spec.shape.vocab_size, spec.shape.n_positions);
  if (!fixed.empty()) {
    const int T = (int)fixed[0].size() - 1;
    if (a.seq_len > 0 && a.seq_len != T)
      throw Error("--seq-len " + std::to_string(a.seq_len) +
                  " differs from the --batch file's T = " + std::to_string(T));
    spec.seq_len = T;
    spec.batch_size = (int)fixed.size();
  } else if (a.seq_len > 0) {
    spec.seq_len = a.seq_len;
  } else if (a.preset.empty()) {
    spec.seq_len = std::min(spec.shape.n_positions, 64);
  }
  if (spec.seq_len > spec.shape.n_positions)
    throw Error("--seq-len " + std::to_string(spec.seq_len) + " exceeds the model's n_positions " +
                std::to_string(spec.shape.n_positions));

  std::unique_ptr<tr::TrainingRun> run;
  if (!a.init.empty()) {
    const std::span<const uint8_t> bytes((const uint8_t*)init_weights.data(), init_weights.size());
    run = std::make_unique<tr::TrainingRun>(spec, init_config, bytes, init_tokenizer);
  } else {
    run = std::make_unique<tr::TrainingRun>(spec);
  }
  run->trainer().set_threads(a.threads);
  if (spec.task == "text") {
    const std::string path = a.task.starts_with("text:") ? a.task.substr(5) : "";
    if (path.empty()) throw Error("train: the text task needs --task text:FILE");
    try {
      run->set_text(read_file(path, "--task text file"));
    } catch (const Error& e) {
      throw Error("--task text:" + path + ": " + e.what());
    }
  }

  auto start = std::chrono::steady_clock::now();
  long long tokens_since = 0;
  float loss = 0;
  for (int step = 1; step <= spec.steps; step++) {
    loss = fixed.empty() ? run->step() : run->step_on(fixed);
    tokens_since += (long long)spec.batch_size * spec.seq_len;
    if (step % a.log_every == 0 || step == spec.steps) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - start).count();
      nlohmann::ordered_json line = {{"step", step},
                                     {"loss", loss},
                                     {"tokens_per_s", secs > 0 ? tokens_since / secs : 0.0},
                                     {"lr", run->learning_rate(step - 1)}};
      if (a.scores) {
        const tr::HeadScores s = run->probe_scores();
        line["previous_max"] = *std::max_element(s.previous.begin(), s.previous.end());
        line["induction_max"] = *std::max_element(s.induction.begin(), s.induction.end());
      }
      std::cout << line.dump() << "\n" << std::flush;
      start = std::chrono::steady_clock::now();  // probing is not training time
      tokens_since = 0;
    }
  }

  nlohmann::ordered_json done = {{"done", true}, {"out", a.out}, {"steps", spec.steps}, {"loss", loss}};
  if (tr::probe_period(spec) >= 2) {
    const tr::HeadScores s = run->probe_scores();
    done["probe_period"] = tr::probe_period(spec);
    done["previous"] = s.previous;
    done["induction"] = s.induction;
  }
  const fs::path out(a.out);
  fs::create_directories(out);
  {
    const auto bytes = run->safetensors_bytes();
    std::ofstream f(out / "model.safetensors", std::ios::binary);
    f.write((const char*)bytes.data(), (std::streamsize)bytes.size());
    if (!f) throw Error("train: could not write " + (out / "model.safetensors").string());
  }
  std::ofstream(out / "config.json") << run->config_json();
  if (run->tokenizer_files().is_tokenizer_json()) {
    std::ofstream(out / "tokenizer.json") << run->tokenizer_files().tokenizer_json;
  } else {
    std::ofstream(out / "vocab.json") << run->vocab_json() << "\n";
    std::ofstream(out / "merges.txt") << run->merges_txt();
  }
  std::cout << done.dump() << "\n";
  return 0;
}

}  // namespace

int train_command(int argc, char** argv) {
  for (int i = 2; i < argc; i++)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kTrainUsage;
      return 0;
    }
  return report_errors([&] { return train(parse(argc, argv)); }, kTrainUsage,
                       {"unknown option", "required", "exactly one", "give --preset"});
}

}  // namespace headscope::cli
