// What a training run is made of, before it runs: the presets, the checks and JSON form of a RunSpec,
// the induction task's batches and the synthetic and byte-level vocabularies (training_run.hpp).
#include "headscope/training_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <iterator>
#include <numeric>

#include "headscope/error.hpp"

namespace headscope::train {

namespace {

ModelConfig shape(int n_layer, int n_head, int n_embd, int n_positions, int vocab_size) {
  ModelConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.n_positions = n_positions;
  c.vocab_size = vocab_size;
  c.n_inner = 4 * n_embd;
  return c;
}

RunSpec induction_spec(int n_layer, int n_head) {
  RunSpec s;
  s.shape = shape(n_layer, n_head, 64, 32, 48);
  s.task = "induction";
  s.batch_size = 16;
  s.seq_len = 32;
  s.steps = 1500;
  s.optimizer = "adamw";
  s.lr = 1e-3f;
  s.weight_decay = 0.0f;
  s.clip = 1.0f;
  s.warmup = 50;
  s.schedule = "constant";
  s.seed = 1;
  s.min_period = 4;
  s.max_period = 16;
  return s;
}

std::vector<Preset> make_presets() {
  std::vector<Preset> p;
  p.push_back({"induction", "2 layers x 4 heads, repeated random spans",
               "Sequences of random tokens in which a span repeats. Predicting the repeats needs an induction "
               "head: one head moves each token's predecessor into its position, a head in the next layer "
               "finds the earlier copy of the current token and reads the token after it.",
               induction_spec(2, 4)});
  p.push_back({"induction-1-layer", "1 layer x 4 heads, repeated random spans",
               "The same task with one layer: no head can build on another head's output, so no induction "
               "head can form, and the loss on the repeats stays high.",
               induction_spec(1, 4)});
  p.push_back({"induction-1-head", "2 layers x 1 head, repeated random spans",
               "The same task with one head per layer: the previous-token and the induction job each need a "
               "head of their own.",
               induction_spec(2, 1)});
  RunSpec text;
  text.shape = shape(2, 4, 64, 64, 256);
  text.task = "text";
  text.batch_size = 8;
  text.seq_len = 64;
  text.steps = 2000;
  text.lr = 3e-3f;
  text.clip = 1.0f;
  text.warmup = 50;
  text.seed = 1;
  p.push_back({"text", "2 layers x 4 heads, a text, one token per byte",
               "Next-byte prediction on a text of your own (one token per byte, so any text works).", text});
  return p;
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to U+0100 and up.
std::string byte_token(int b) {
  static const std::vector<int> table = [] {
    std::vector<int> bs, cs;
    for (int i = '!'; i <= '~'; i++) bs.push_back(i);
    for (int i = 0xA1; i <= 0xAC; i++) bs.push_back(i);
    for (int i = 0xAE; i <= 0xFF; i++) bs.push_back(i);
    cs = bs;
    int n = 0;
    for (int i = 0; i < 256; i++)
      if (std::find(bs.begin(), bs.end(), i) == bs.end()) {
        bs.push_back(i);
        cs.push_back(256 + n++);
      }
    std::vector<int> t(256);
    for (std::size_t i = 0; i < bs.size(); i++) t[bs[i]] = cs[i];
    return t;
  }();
  const int cp = table[b];
  std::string s;
  if (cp < 0x80) {
    s += (char)cp;
  } else {
    s += (char)(0xC0 | (cp >> 6));
    s += (char)(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = make_presets();
  return p;
}

const Preset& preset(const std::string& name) {
  for (const Preset& p : presets())
    if (p.name == name) return p;
  std::string names;
  for (const Preset& p : presets()) names += (names.empty() ? "" : ", ") + p.name;
  throw Error("unknown preset \"" + name + "\" (presets: " + names + ")");
}

int probe_period(const RunSpec& s) {
  const int P = s.probe_period > 0 ? s.probe_period : (s.min_period + s.max_period + 1) / 2;
  // other tasks' models may be too short or have too few tokens for it
  return std::max(1, std::min({P, s.shape.n_positions / 2, s.shape.vocab_size}));
}

void validate(const RunSpec& s) {
  const ModelConfig& c = s.shape;
  if (c.n_layer < 1 || c.n_layer > 48) throw Error("train: n_layer must be 1 to 48, got " + std::to_string(c.n_layer));
  if (c.n_head < 1 || c.n_head > 64) throw Error("train: n_head must be 1 to 64, got " + std::to_string(c.n_head));
  if (c.n_embd < 1 || (c.family == Family::gpt2 && c.n_embd % c.n_head != 0))
    throw Error("train: n_embd (" + std::to_string(c.n_embd) + ") must be a positive multiple of n_head (" +
                std::to_string(c.n_head) + ")");
  if (c.vocab_size < 2) throw Error("train: vocab_size must be at least 2");
  if (s.batch_size < 1) throw Error("train: the batch size must be at least 1");
  if (s.seq_len < 2 || s.seq_len > c.n_positions)
    throw Error("train: the sequence length must be 2 to n_positions (" + std::to_string(c.n_positions) + "), got " +
                std::to_string(s.seq_len));
  if (s.steps < 1) throw Error("train: steps must be at least 1");
  if (s.optimizer != "adamw" && s.optimizer != "sgd")
    throw Error("train: the optimizer must be adamw or sgd, got \"" + s.optimizer + "\"");
  if (!(s.lr > 0) || !std::isfinite(s.lr)) throw Error("train: the learning rate must be a positive number");
  if (!(s.weight_decay >= 0) || !(s.clip >= 0)) throw Error("train: weight decay and clip must not be negative");
  if (s.warmup < 0) throw Error("train: warmup must not be negative");
  if (s.schedule != "constant" && s.schedule != "cosine")
    throw Error("train: the schedule must be constant or cosine, got \"" + s.schedule + "\"");
  if (s.task != "induction" && s.task != "text" && s.task != "batch")
    throw Error("train: unknown task \"" + s.task + "\" (induction, text or batch)");
  if (s.task == "induction") {
    if (s.min_period < 2 || s.max_period < s.min_period + 2)
      throw Error(
          "train: induction periods must satisfy 2 <= min and min + 2 <= max (the probe's period lies "
          "between them), got " +
          std::to_string(s.min_period) + ":" + std::to_string(s.max_period));
    const int pp = s.probe_period > 0 ? s.probe_period : (s.min_period + s.max_period + 1) / 2;
    if (pp <= s.min_period || pp >= s.max_period)
      throw Error("train: the probe's period " + std::to_string(pp) +
                  " must lie strictly between the training periods " + std::to_string(s.min_period) + " and " +
                  std::to_string(s.max_period));
    if (2 * s.max_period > s.seq_len + 1)
      throw Error("train: the induction task's longest period (" + std::to_string(s.max_period) +
                  ") must repeat at least once in a window of " + std::to_string(s.seq_len + 1) + " tokens");
    if (s.max_period > c.vocab_size)
      throw Error("train: the induction task needs at least " + std::to_string(s.max_period) +
                  " distinct tokens, the vocabulary has " + std::to_string(c.vocab_size));
  }
}

// ---- JSON ------------------------------------------------------------------------------------------------

std::string spec_to_json(const RunSpec& s) {
  const ModelConfig& c = s.shape;
  // a float's shortest decimal (1e-3f prints as 0.001, not 0.0010000000474974513)
  const auto dec = [](float x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.7g", x);
    return std::strtod(buf, nullptr);
  };
  nlohmann::ordered_json j = {{"shape",
                               {{"n_layer", c.n_layer},
                                {"n_head", c.n_head},
                                {"n_embd", c.n_embd},
                                {"n_positions", c.n_positions},
                                {"vocab_size", c.vocab_size}}},
                              {"task", s.task},
                              {"batch_size", s.batch_size},
                              {"seq_len", s.seq_len},
                              {"steps", s.steps},
                              {"optimizer", s.optimizer},
                              {"lr", dec(s.lr)},
                              {"weight_decay", dec(s.weight_decay)},
                              {"clip", dec(s.clip)},
                              {"warmup", s.warmup},
                              {"schedule", s.schedule},
                              {"seed", s.seed},
                              {"min_period", s.min_period},
                              {"max_period", s.max_period},
                              {"probe_period", probe_period(s)}};
  return j.dump();
}

RunSpec spec_from_json(const std::string& text, const RunSpec& base) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("train: the run's options are not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error("train: the run's options must be an object");
  RunSpec s = base;
  const auto integer = [](const nlohmann::json& v, const std::string& key) {
    if (!v.is_number() || v.get<double>() != std::floor(v.get<double>()) || std::fabs(v.get<double>()) > 2e9)
      throw Error("train: " + key + " must be a whole number, got " + v.dump());
    return v.get<int>();
  };
  const auto number = [](const nlohmann::json& v, const std::string& key) {
    if (!v.is_number()) throw Error("train: " + key + " must be a number, got " + v.dump());
    return v.get<float>();
  };
  const auto string = [](const nlohmann::json& v, const std::string& key) {
    if (!v.is_string()) throw Error("train: " + key + " must be a string, got " + v.dump());
    return v.get<std::string>();
  };
  // the options that are one field each, by their kind
  static constexpr std::pair<const char*, int RunSpec::*> kIntegers[] = {{"batch_size", &RunSpec::batch_size},
                                                                         {"seq_len", &RunSpec::seq_len},
                                                                         {"steps", &RunSpec::steps},
                                                                         {"warmup", &RunSpec::warmup},
                                                                         {"min_period", &RunSpec::min_period},
                                                                         {"max_period", &RunSpec::max_period},
                                                                         {"probe_period", &RunSpec::probe_period}};
  static constexpr std::pair<const char*, float RunSpec::*> kNumbers[] = {
      {"lr", &RunSpec::lr}, {"weight_decay", &RunSpec::weight_decay}, {"clip", &RunSpec::clip}};
  static constexpr std::pair<const char*, std::string RunSpec::*> kStrings[] = {
      {"task", &RunSpec::task}, {"optimizer", &RunSpec::optimizer}, {"schedule", &RunSpec::schedule}};
  for (const auto& [key, v] : j.items()) {
    const auto named = [&key = key](const auto& option) { return key == option.first; };
    if (key == "shape") {
      if (!v.is_object()) throw Error("train: shape must be an object");
      for (const auto& [k, x] : v.items()) {
        int& field = k == "n_layer"       ? s.shape.n_layer
                     : k == "n_head"      ? s.shape.n_head
                     : k == "n_embd"      ? s.shape.n_embd
                     : k == "n_positions" ? s.shape.n_positions
                     : k == "vocab_size"  ? s.shape.vocab_size
                                          : throw Error("train: unknown shape key \"" + k + "\"");
        field = integer(x, k);
      }
      s.shape.n_inner = 4 * s.shape.n_embd;
    } else if (const auto i = std::find_if(std::begin(kIntegers), std::end(kIntegers), named); i != std::end(kIntegers))
      s.*(i->second) = integer(v, key);
    else if (const auto f = std::find_if(std::begin(kNumbers), std::end(kNumbers), named); f != std::end(kNumbers))
      s.*(f->second) = number(v, key);
    else if (const auto t = std::find_if(std::begin(kStrings), std::end(kStrings), named); t != std::end(kStrings))
      s.*(t->second) = string(v, key);
    else if (key == "seed")
      s.seed = (uint64_t)std::max(0, integer(v, key));
    else
      throw Error("train: unknown option \"" + key + "\"");
  }
  return s;
}

std::string presets_json() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Preset& p : presets())
    out.push_back({{"name", p.name},
                   {"label", p.label},
                   {"description", p.description},
                   {"spec", nlohmann::ordered_json::parse(spec_to_json(p.spec))}});
  return out.dump();
}

// ---- tasks ---------------------------------------------------------------------------------------------

// The induction task: each window is a span of P distinct random tokens repeated until it is full, P
// drawn per sequence from [min_period, max_period] except `excluded` (the probe's period, 10, which the
// task never trains on). A head that looks a fixed distance back cannot predict the repeats; copying
// the token after the current token's previous occurrence can. The probe (training_run.cpp) is four
// sequences of 10 distinct tokens repeated twice, scored with web/lib/roles.json's formulas.
std::vector<std::vector<int32_t>> induction_batch(std::mt19937_64& rng, int B, int T, int V, int min_period,
                                                  int max_period, int excluded) {
  std::vector<std::vector<int32_t>> rows(B, std::vector<int32_t>(T + 1));
  std::vector<int32_t> pool(V);
  const bool skip = excluded >= min_period && excluded <= max_period;
  const int choices = max_period - min_period + 1 - (skip ? 1 : 0);
  for (auto& row : rows) {
    int P = min_period + (int)(rng() % (uint64_t)choices);
    if (skip && P >= excluded) P++;
    // P distinct tokens: the first P of a partial Fisher-Yates shuffle
    std::iota(pool.begin(), pool.end(), 0);
    for (int i = 0; i < P; i++) std::swap(pool[i], pool[i + rng() % (uint64_t)(V - i)]);
    for (int t = 0; t <= T; t++) row[t] = pool[t % P];
  }
  return rows;
}

std::string synthetic_vocab_json(int V) {
  nlohmann::ordered_json vocab;
  for (int i = 0; i < V; i++) vocab[V <= 94 ? std::string(1, (char)(33 + i)) : "t" + std::to_string(i)] = i;
  return vocab.dump();
}

std::string byte_vocab_json() {
  nlohmann::ordered_json vocab;
  for (int b = 0; b < 256; b++) vocab[byte_token(b)] = b;
  return vocab.dump();
}

}  // namespace headscope::train
