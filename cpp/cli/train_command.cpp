// headscope train: trains a GPT-2-family model with the engine's Trainer and writes a folder in the
// Hugging Face GPT-2 layout (config.json, model.safetensors in F32, vocab.json, merges.txt) that
// `headscope run`, loadModel() and the demo open.
//
//   headscope train (--config FILE.json | --init DIR) (--task induction|text:FILE | --batch FILE.json)
//                   --steps N [--optimizer adamw|sgd] [--lr X] [--weight-decay X] [--clip X]
//                   [--batch-size B] [--seq-len T] [--seed S] [--log-every K] --out DIR
//
// stdout: one JSON line per logged step, {"step": s, "loss": x, "tokens_per_s": y} (step counts from 1;
// the loss is the one the step's gradients came from), then {"done": true, "out": DIR, ...}.
// Errors go to stderr with a non-zero exit and nothing is written.
//
// --batch FILE.json: a JSON array of token-id sequences of equal length T+1; every step trains on
//   it, predicting ids[1..T] from ids[0..T-1] (mean cross-entropy over every sequence and position).
// --task induction: each sequence of T+1 tokens is a span of P random tokens (uniform over the
//   vocabulary) repeated to fill the window, P drawn uniformly from [4, min(16, (T+1)/2)] per sequence,
//   so the period varies and only copying from the previous occurrence predicts the repeats. A fresh
//   batch every step, from --seed.
// --task text:FILE: the file, encoded with the tokenizer of --init DIR (its vocab.json and merges.txt),
//   gives each step B windows of T+1 consecutive tokens at random offsets. The text needs at least
//   T+1 tokens. The output folder gets the same vocab.json and merges.txt.
// SGD has no momentum, decay or clipping unless asked: --optimizer sgd --lr 1 --steps 1 moves every
// weight by exactly minus its gradient (--clip and --weight-decay apply to SGD too when given).
#include "train_command.hpp"

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

namespace headscope::cli {

namespace {

namespace fs = std::filesystem;
using headscope::Error;

const char* kTrainUsage =
    "usage:\n"
    "  headscope train (--config FILE.json | --init DIR) (--task induction|text:FILE | --batch FILE.json)\n"
    "                  --steps N [--optimizer adamw|sgd] [--lr X] [--weight-decay X] [--clip X]\n"
    "                  [--batch-size B] [--seq-len T] [--seed S] [--log-every K] --out DIR\n";

struct TrainArgs {
  std::string config, init, task, batch, out, optimizer = "adamw";
  int steps = -1, batch_size = 8, seq_len = 0, log_every = 1;
  uint64_t seed = 1;
  float lr = 1e-3f, weight_decay = 0.0f, clip = 0.0f;
  bool has_weight_decay = false;
};

std::string read_file(const fs::path& p, const std::string& what) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(what + " " + p.string() + " not found or not readable");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <typename T>
T number(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    double d = std::stod(v, &used);
    if (used != v.size() || !std::isfinite(d)) throw std::invalid_argument(v);
    if constexpr (std::is_integral_v<T>) {
      if (d != std::floor(d) || d < 0 || d > 2e9) throw std::invalid_argument(v);
    }
    return (T)d;
  } catch (const std::exception&) {
    throw Error(flag + " expects a " + (std::is_integral_v<T> ? "non-negative integer" : "number") + ", got \"" + v +
                "\"");
  }
}

TrainArgs parse(int argc, char** argv) {
  TrainArgs a;
  for (int i = 2; i < argc; i++) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--config") a.config = value();
    else if (arg == "--init") a.init = value();
    else if (arg == "--task") a.task = value();
    else if (arg == "--batch") a.batch = value();
    else if (arg == "--out") a.out = value();
    else if (arg == "--optimizer") a.optimizer = value();
    else if (arg == "--steps") a.steps = number<int>(arg, value());
    else if (arg == "--batch-size") a.batch_size = number<int>(arg, value());
    else if (arg == "--seq-len") a.seq_len = number<int>(arg, value());
    else if (arg == "--log-every") a.log_every = number<int>(arg, value());
    else if (arg == "--seed") a.seed = number<uint64_t>(arg, value());
    else if (arg == "--lr") a.lr = number<float>(arg, value());
    else if (arg == "--weight-decay") { a.weight_decay = number<float>(arg, value()); a.has_weight_decay = true; }
    else if (arg == "--clip") a.clip = number<float>(arg, value());
    else throw Error("train: unknown option \"" + arg + "\"");
  }
  if (a.config.empty() == a.init.empty()) throw Error("train: give exactly one of --config FILE.json and --init DIR");
  if (a.task.empty() == a.batch.empty()) throw Error("train: give exactly one of --task and --batch FILE.json");
  if (!a.task.empty() && a.task != "induction" && !a.task.starts_with("text:"))
    throw Error("train: unknown task \"" + a.task + "\" (induction or text:FILE)");
  if (a.task.starts_with("text:") && a.init.empty())
    throw Error("train: --task text:FILE needs --init DIR, whose vocab.json and merges.txt tokenize the text");
  if (a.steps < 1) throw Error("train: --steps N (at least 1) is required");
  if (a.out.empty()) throw Error("train: --out DIR is required");
  if (a.optimizer != "adamw" && a.optimizer != "sgd")
    throw Error("train: --optimizer must be adamw or sgd, got \"" + a.optimizer + "\"");
  if (!(a.lr > 0)) throw Error("train: --lr must be positive");
  if (a.weight_decay < 0 || a.clip < 0) throw Error("train: --weight-decay and --clip must not be negative");
  if (a.batch_size < 1) throw Error("train: --batch-size must be at least 1");
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

// the induction task (see the top of this file): B sequences of T+1 ids
std::vector<std::vector<int>> induction_batch(std::mt19937& rng, int B, int T, int V) {
  std::vector<std::vector<int>> rows(B, std::vector<int>(T + 1));
  const int max_p = std::max(1, std::min(16, (T + 1) / 2));
  const int min_p = std::min(4, max_p);
  for (auto& row : rows) {
    const int P = min_p + (int)(rng() % (uint32_t)(max_p - min_p + 1));
    std::vector<int> span(P);
    for (int& s : span) s = (int)(rng() % (uint32_t)V);
    for (int t = 0; t <= T; t++) row[t] = span[t % P];
  }
  return rows;
}

// vocab.json with a printable string per id: single printable ASCII characters for vocabularies up to
// 94 tokens (so `headscope run --text "!#%"` works), otherwise "t0", "t1", ...; merges.txt has none.
void write_synthetic_vocab(const fs::path& dir, int V) {
  nlohmann::ordered_json vocab;
  for (int i = 0; i < V; i++) vocab[V <= 94 ? std::string(1, (char)(33 + i)) : "t" + std::to_string(i)] = i;
  std::ofstream(dir / "vocab.json") << vocab.dump() << "\n";
  std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
}

int train(const TrainArgs& a) {
  namespace tr = headscope::train;
  // shape and starting weights
  ModelConfig config;
  std::string init_weights;
  if (!a.init.empty()) {
    const fs::path dir(a.init);
    if (!fs::is_directory(dir) || !fs::exists(dir / "config.json") || !fs::exists(dir / "model.safetensors"))
      throw Error("--init " + a.init + " is not a model folder (it needs config.json and model.safetensors)");
    try {
      config = parse_config(read_file(dir / "config.json", "config.json"));
    } catch (const Error& e) {
      throw Error("--init " + a.init + ": " + e.what());
    }
    init_weights = read_file(dir / "model.safetensors", "model.safetensors");
  } else {
    config = parse_config(read_file(a.config, "--config file"));
  }

  std::vector<std::vector<int>> fixed;
  if (!a.batch.empty()) fixed = read_batch(a.batch, config.vocab_size, config.n_positions);
  std::vector<int32_t> text_ids;
  if (a.task.starts_with("text:")) {
    const std::string path = a.task.substr(5);
    const fs::path dir(a.init);
    const Tokenizer tok = Tokenizer::from_json(read_file(dir / "vocab.json", "--init vocab.json"),
                                               read_file(dir / "merges.txt", "--init merges.txt"));
    text_ids = tok.encode_ids(read_file(path, "--task text file"));
    if (text_ids.empty()) throw Error("--task text:" + path + ": the text is empty");
    for (int32_t id : text_ids)
      if (id >= config.vocab_size)
        throw Error("--task text:" + path + ": token id " + std::to_string(id) + " is outside the model's vocab_size " +
                    std::to_string(config.vocab_size));
  }
  const int B = fixed.empty() ? a.batch_size : (int)fixed.size();
  const int T = fixed.empty() ? (a.seq_len > 0 ? a.seq_len : std::min(config.n_positions, 64))
                              : (int)fixed[0].size() - 1;
  if (!fixed.empty() && a.seq_len > 0 && a.seq_len != T)
    throw Error("--seq-len " + std::to_string(a.seq_len) + " differs from the --batch file's T = " + std::to_string(T));
  if (T > config.n_positions)
    throw Error("--seq-len " + std::to_string(T) + " exceeds the model's n_positions " +
                std::to_string(config.n_positions));

  if (!text_ids.empty() && (int)text_ids.size() < T + 1)
    throw Error("--task " + a.task + ": the text is too short: " + std::to_string(text_ids.size()) +
                " tokens, a window needs T+1 = " + std::to_string(T + 1) + " (give a longer text or a smaller --seq-len)");
  tr::Trainer trainer(config, B, T);
  if (!init_weights.empty()) {
    const std::span<const uint8_t> bytes((const uint8_t*)init_weights.data(), init_weights.size());
    trainer.load(SafeTensors(bytes, a.init + "/model.safetensors"));
  } else {
    trainer.init_random(a.seed);
  }

  tr::AdamW adamw;
  adamw.lr = a.lr;
  adamw.weight_decay = a.has_weight_decay ? a.weight_decay : 0.0f;
  adamw.clip = a.clip;
  std::mt19937 rng((uint32_t)(a.seed * 2654435761u + 17));
  std::vector<int> ids((std::size_t)B * T), targets((std::size_t)B * T);
  auto fill = [&](const std::vector<std::vector<int>>& rows) {
    for (int b = 0; b < B; b++)
      for (int t = 0; t < T; t++) {
        ids[(std::size_t)b * T + t] = rows[b][t];
        targets[(std::size_t)b * T + t] = rows[b][t + 1];
      }
  };
  if (!fixed.empty()) fill(fixed);

  auto start = std::chrono::steady_clock::now();
  long long tokens_since = 0;
  float loss = 0;
  for (int step = 1; step <= a.steps; step++) {
    if (!text_ids.empty()) {
      std::vector<std::vector<int>> rows(B);
      const uint32_t starts = (uint32_t)(text_ids.size() - T);  // offsets 0 .. size - (T+1)
      for (auto& row : rows) {
        const std::size_t o = rng() % starts;
        row.assign(text_ids.begin() + o, text_ids.begin() + o + T + 1);
      }
      fill(rows);
    } else if (fixed.empty()) {
      fill(induction_batch(rng, B, T, config.vocab_size));
    }
    trainer.zero_grad();
    loss = trainer.forward(ids.data(), targets.data(), B, T);
    if (!std::isfinite(loss))
      throw Error("train: the loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") + " at step " +
                  std::to_string(step) + ": training diverged; lower --lr (now " + std::to_string(a.lr) +
                  ") or set --clip. Nothing was written.");
    trainer.backward();
    if (a.optimizer == "adamw") {
      trainer.adamw_step(adamw);
    } else {
      if (a.clip > 0) {
        const double norm = trainer.grad_norm();
        if (a.clip / (norm + 1e-6) < 1.0)
          for (float& g : trainer.grads()) g = (float)(g * (a.clip / (norm + 1e-6)));
      }
      if (a.has_weight_decay && a.weight_decay > 0)
        for (std::size_t i = 0; i < trainer.params().size(); i++)
          trainer.params()[i] -= a.lr * a.weight_decay * trainer.params()[i];
      trainer.sgd_step(a.lr);
    }
    tokens_since += (long long)B * T;
    if (step % a.log_every == 0 || step == a.steps) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - start).count();
      nlohmann::ordered_json line = {{"step", step}, {"loss", loss},
                                     {"tokens_per_s", secs > 0 ? tokens_since / secs : 0.0}};
      std::cout << line.dump() << "\n" << std::flush;
      start = now;
      tokens_since = 0;
    }
  }
  for (float p : trainer.params())
    if (!std::isfinite(p))
      throw Error("train: a weight became NaN or infinite in the last step: training diverged; lower --lr (now " +
                  std::to_string(a.lr) + "). Nothing was written.");

  const fs::path out(a.out);
  fs::create_directories(out);
  {
    const auto bytes = trainer.safetensors_bytes();
    std::ofstream f(out / "model.safetensors", std::ios::binary);
    f.write((const char*)bytes.data(), (std::streamsize)bytes.size());
    if (!f) throw Error("train: could not write " + (out / "model.safetensors").string());
  }
  std::ofstream(out / "config.json") << trainer.config_json();
  const fs::path init(a.init);
  if (!a.init.empty() && fs::exists(init / "vocab.json") && fs::exists(init / "merges.txt")) {
    fs::copy_file(init / "vocab.json", out / "vocab.json", fs::copy_options::overwrite_existing);
    fs::copy_file(init / "merges.txt", out / "merges.txt", fs::copy_options::overwrite_existing);
  } else {
    write_synthetic_vocab(out, config.vocab_size);
  }
  nlohmann::ordered_json done = {{"done", true}, {"out", out.string()}, {"steps", a.steps}, {"loss", loss}};
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
  try {
    return train(parse(argc, argv));
  } catch (const Error& e) {
    std::cerr << "headscope: " << e.what() << "\n";
    if (std::string(e.what()).find("unknown option") != std::string::npos ||
        std::string(e.what()).find("required") != std::string::npos ||
        std::string(e.what()).find("exactly one") != std::string::npos)
      std::cerr << kTrainUsage;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "headscope: unexpected error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace headscope::cli
