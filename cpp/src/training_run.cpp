// TrainingRun: task batches, schedule, optimizer steps and head probes around a Trainer (see
// training_run.hpp for the tasks and the probe's definition).
#include "headscope/training_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <new>
#include <numeric>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/safetensors.hpp"
#include "headscope/tokenizer.hpp"

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
  if (c.n_embd < 1 || c.n_embd % c.n_head != 0)
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
      throw Error("train: induction periods must satisfy 2 <= min and min + 2 <= max (the probe's period lies "
                  "between them), got " + std::to_string(s.min_period) + ":" + std::to_string(s.max_period));
    const int pp = s.probe_period > 0 ? s.probe_period : (s.min_period + s.max_period + 1) / 2;
    if (pp <= s.min_period || pp >= s.max_period)
      throw Error("train: the probe's period " + std::to_string(pp) + " must lie strictly between the training periods " +
                  std::to_string(s.min_period) + " and " + std::to_string(s.max_period));
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
  nlohmann::ordered_json j = {
      {"shape", {{"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_embd", c.n_embd}, {"n_positions", c.n_positions},
                 {"vocab_size", c.vocab_size}}},
      {"task", s.task}, {"batch_size", s.batch_size}, {"seq_len", s.seq_len}, {"steps", s.steps},
      {"optimizer", s.optimizer}, {"lr", dec(s.lr)}, {"weight_decay", dec(s.weight_decay)}, {"clip", dec(s.clip)},
      {"warmup", s.warmup}, {"schedule", s.schedule}, {"seed", s.seed}, {"min_period", s.min_period},
      {"max_period", s.max_period}, {"probe_period", probe_period(s)}};
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
  for (const auto& [key, v] : j.items()) {
    if (key == "shape") {
      if (!v.is_object()) throw Error("train: shape must be an object");
      for (const auto& [k, x] : v.items()) {
        int& field = k == "n_layer" ? s.shape.n_layer : k == "n_head" ? s.shape.n_head : k == "n_embd" ? s.shape.n_embd
                   : k == "n_positions" ? s.shape.n_positions : k == "vocab_size" ? s.shape.vocab_size
                   : throw Error("train: unknown shape key \"" + k + "\"");
        field = integer(x, k);
      }
      s.shape.n_inner = 4 * s.shape.n_embd;
    } else if (key == "task") s.task = string(v, key);
    else if (key == "batch_size") s.batch_size = integer(v, key);
    else if (key == "seq_len") s.seq_len = integer(v, key);
    else if (key == "steps") s.steps = integer(v, key);
    else if (key == "optimizer") s.optimizer = string(v, key);
    else if (key == "lr") s.lr = number(v, key);
    else if (key == "weight_decay") s.weight_decay = number(v, key);
    else if (key == "clip") s.clip = number(v, key);
    else if (key == "warmup") s.warmup = integer(v, key);
    else if (key == "schedule") s.schedule = string(v, key);
    else if (key == "seed") s.seed = (uint64_t)std::max(0, integer(v, key));
    else if (key == "min_period") s.min_period = integer(v, key);
    else if (key == "max_period") s.max_period = integer(v, key);
    else if (key == "probe_period") s.probe_period = integer(v, key);
    else throw Error("train: unknown option \"" + key + "\"");
  }
  return s;
}

std::string presets_json() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Preset& p : presets())
    out.push_back({{"name", p.name}, {"label", p.label}, {"description", p.description},
                   {"spec", nlohmann::ordered_json::parse(spec_to_json(p.spec))}});
  return out.dump();
}

// ---- tasks ---------------------------------------------------------------------------------------------

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

// ---- the run ---------------------------------------------------------------------------------------------

namespace {
// The Trainer refuses shapes above its byte limit itself; below it, an allocation can still fail
// (a wasm heap that already holds models): that is an Error with the shape, never std::bad_alloc.
std::unique_ptr<Trainer> make_trainer(const RunSpec& s) {
  try {
    return std::make_unique<Trainer>(s.shape, s.batch_size, std::max(s.seq_len, 2 * probe_period(s)));
  } catch (const std::bad_alloc&) {
    throw Error("train: not enough memory for this shape (" + std::to_string(s.shape.n_layer) + " layers, n_embd " +
                std::to_string(s.shape.n_embd) + ", vocabulary " + std::to_string(s.shape.vocab_size) + ", batch " +
                std::to_string(s.batch_size) + " x " + std::to_string(s.seq_len) +
                "): reduce the width, the layers, the batch or the sequence length");
  }
}
}  // namespace

TrainingRun::TrainingRun(const RunSpec& spec) : spec_(spec), rng_(spec.seed * 0x9E3779B97F4A7C15ull + 17) {
  validate(spec_);
  if (spec_.task == "text" && spec_.shape.vocab_size != 256)
    throw Error("train: a text run from scratch uses one token per byte: vocab_size must be 256, got " +
                std::to_string(spec_.shape.vocab_size) + " (or start from a model folder, whose tokenizer it uses)");
  trainer_ = make_trainer(spec_);
  trainer_->init_random(spec_.seed);
  vocab_json_ = spec_.task == "text" ? byte_vocab_json() : synthetic_vocab_json(spec_.shape.vocab_size);
  merges_txt_ = kEmptyMerges;
}

TrainingRun::TrainingRun(const RunSpec& spec, const std::string& init_config_json,
                         std::span<const uint8_t> init_safetensors, std::string init_vocab_json,
                         std::string init_merges_txt)
    : spec_(spec), vocab_json_(std::move(init_vocab_json)), merges_txt_(std::move(init_merges_txt)),
      rng_(spec.seed * 0x9E3779B97F4A7C15ull + 17) {
  spec_.shape = parse_config(init_config_json);
  validate(spec_);
  // the tokenizer must read before any training starts
  (void)Tokenizer::from_json(vocab_json_, merges_txt_);
  trainer_ = make_trainer(spec_);
  trainer_->load(SafeTensors(init_safetensors, "model.safetensors"));
}

void TrainingRun::set_text_ids(std::vector<int32_t> ids) {
  if (ids.empty()) throw Error("train: the text is empty");
  for (int32_t id : ids)
    if (id < 0 || id >= spec_.shape.vocab_size)
      throw Error("train: token id " + std::to_string(id) + " of the text is outside the vocabulary [0, " +
                  std::to_string(spec_.shape.vocab_size) + ")");
  if ((int)ids.size() < spec_.seq_len + 1)
    throw Error("train: the text is too short: " + std::to_string(ids.size()) + " tokens, a window needs T+1 = " +
                std::to_string(spec_.seq_len + 1) + " (give a longer text or a shorter sequence length)");
  text_ids_ = std::move(ids);
}

void TrainingRun::set_text(const std::string& text) {
  const Tokenizer tok = Tokenizer::from_json(vocab_json_, merges_txt_);
  set_text_ids(tok.encode_ids(text));
}

float TrainingRun::learning_rate(int step) const {
  const RunSpec& s = spec_;
  if (step < s.warmup) return s.lr * (float)(step + 1) / (float)s.warmup;
  if (s.schedule == "constant") return s.lr;
  const double p = std::min(1.0, (double)(step - s.warmup) / std::max(1, s.steps - s.warmup));
  const double lo = 0.1 * s.lr;
  return (float)(lo + 0.5 * (s.lr - lo) * (1.0 + std::cos(3.141592653589793 * p)));
}

void TrainingRun::fill_batch(const std::vector<std::vector<int32_t>>& rows) {
  const int B = (int)rows.size();
  if (B < 1 || B > trainer_->max_batch())
    throw Error("train: a batch needs 1 to " + std::to_string(trainer_->max_batch()) + " rows, got " + std::to_string(B));
  const int T = (int)rows[0].size() - 1;
  if (T < 1 || T > trainer_->max_seq())
    throw Error("train: batch rows need 2 to " + std::to_string(trainer_->max_seq() + 1) + " ids, got " +
                std::to_string(rows[0].size()));
  ids_.resize((std::size_t)B * T);
  targets_.resize((std::size_t)B * T);
  for (int b = 0; b < B; b++) {
    if ((int)rows[b].size() != T + 1)
      throw Error("train: ragged batch: row " + std::to_string(b) + " has " + std::to_string(rows[b].size()) +
                  " ids, row 0 has " + std::to_string(T + 1));
    for (int t = 0; t < T; t++) {
      ids_[(std::size_t)b * T + t] = rows[b][t];
      targets_[(std::size_t)b * T + t] = rows[b][t + 1];
    }
  }
  batch_rows_ = B;
}

float TrainingRun::step() {
  check_not_diverged();
  const int B = spec_.batch_size, T = spec_.seq_len;
  if (spec_.task == "induction") {
    fill_batch(induction_batch(rng_, B, T, spec_.shape.vocab_size, spec_.min_period, spec_.max_period,
                               probe_period(spec_)));
  } else if (spec_.task == "text") {
    if (text_ids_.empty()) throw Error("train: the text task has no text yet");
    std::vector<std::vector<int32_t>> rows(B);
    const uint64_t starts = text_ids_.size() - T;  // offsets 0 .. size - (T+1)
    for (auto& row : rows) {
      const std::size_t o = rng_() % starts;
      row.assign(text_ids_.begin() + o, text_ids_.begin() + o + T + 1);
    }
    fill_batch(rows);
  } else {
    throw Error("train: the batch task steps on explicit batches only");
  }
  const int n = (int)ids_.size() / batch_rows_;
  return apply_step(trainer_->forward(ids_.data(), targets_.data(), batch_rows_, n));
}

float TrainingRun::step_on(const std::vector<std::vector<int32_t>>& rows) {
  check_not_diverged();
  if (rows.empty()) throw Error("train: the batch is empty");
  for (const auto& row : rows)
    for (int32_t id : row)
      if (id < 0 || id >= spec_.shape.vocab_size)
        throw Error("train: token id " + std::to_string(id) + " in the batch is outside the vocabulary [0, " +
                    std::to_string(spec_.shape.vocab_size) + ")");
  fill_batch(rows);
  const int n = (int)ids_.size() / batch_rows_;
  return apply_step(trainer_->forward(ids_.data(), targets_.data(), batch_rows_, n));
}

void TrainingRun::check_not_diverged() const {
  if (diverged_)
    throw Error("train: this run diverged; its weights are those before the failed step. Start again with a lower "
                "learning rate");
}

float TrainingRun::apply_step(float loss) {
  Trainer& tr = *trainer_;
  const auto diverged = [&](const std::string& what) {
    diverged_ = true;
    return Error("train: " + what + " at step " + std::to_string(steps_done_ + 1) +
                 ": training diverged; lower the learning rate (now " + std::to_string(spec_.lr) +
                 ") or clip the gradients. The weights are those before this step.");
  };
  if (!std::isfinite(loss)) throw diverged(std::string("the loss is ") + (std::isnan(loss) ? "NaN" : "infinite"));
  tr.zero_grad();
  tr.backward();
  backup_.assign(tr.params().begin(), tr.params().end());
  const float lr = learning_rate(steps_done_);
  if (spec_.optimizer == "adamw") {
    AdamW hp;
    hp.lr = lr;
    hp.beta1 = 0.9f;
    hp.beta2 = 0.999f;
    hp.weight_decay = spec_.weight_decay;
    hp.clip = spec_.clip;
    tr.adamw_step(hp);
  } else {
    if (spec_.clip > 0) {
      const double norm = tr.grad_norm();
      const double scale = spec_.clip / (norm + 1e-6);
      if (scale < 1.0)
        for (float& g : tr.grads()) g = (float)(g * scale);
    }
    if (spec_.weight_decay > 0)
      for (float& p : tr.params()) p -= lr * spec_.weight_decay * p;
    tr.sgd_step(lr);
  }
  for (float p : tr.params())
    if (!std::isfinite(p)) {
      std::copy(backup_.begin(), backup_.end(), tr.params().begin());
      throw diverged("a weight became NaN or infinite");
    }
  steps_done_++;
  return loss;
}

std::vector<int32_t> TrainingRun::probe_ids() const {
  const int P = probe_period(spec_);
  std::mt19937_64 rng(0x5EED0FBEull);
  return induction_batch(rng, 1, 2 * P - 1, spec_.shape.vocab_size, P, P)[0];
}

HeadScores TrainingRun::probe_scores() {
  const int P = probe_period(spec_), T = 2 * P, L = config().n_layer, NH = config().n_head;
  if (P < 2) throw Error("train: this model's context or vocabulary is too small for the induction probe");
  const int B = std::min(kProbeSequences, trainer_->max_batch());
  std::mt19937_64 rng(0x5EED0FBEull);
  const auto rows = induction_batch(rng, B, T - 1, spec_.shape.vocab_size, P, P);  // rows of T ids
  std::vector<int> ids((std::size_t)B * T), targets((std::size_t)B * T);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      ids[(std::size_t)b * T + t] = rows[b][t];
      targets[(std::size_t)b * T + t] = rows[b][(t + 1) % T];  // unused by the scores
    }
  trainer_->forward(ids.data(), targets.data(), B, T);
  HeadScores s;
  s.n_layer = L;
  s.n_head = NH;
  s.previous.assign((std::size_t)L * NH, 0.0f);
  s.induction.assign((std::size_t)L * NH, 0.0f);
  probe_attention_.assign((std::size_t)L * NH * T * T, 0.0f);
  for (int l = 0; l < L; l++) {
    const std::span<const float> att = trainer_->attention(l);  // (B, NH, T, T)
    for (int h = 0; h < NH; h++) {
      double prev = 0, ind = 0;
      for (int b = 0; b < B; b++) {
        const float* A = att.data() + ((std::size_t)b * NH + h) * T * T;
        if (b == 0) std::copy(A, A + (std::size_t)T * T, probe_attention_.begin() + ((std::size_t)l * NH + h) * T * T);
        for (int t = 1; t < T; t++) prev += A[(std::size_t)t * T + t - 1];
        for (int t = P; t < T; t++) ind += A[(std::size_t)t * T + t - P + 1];
      }
      s.previous[(std::size_t)l * NH + h] = (float)(prev / ((double)B * (T - 1)));
      s.induction[(std::size_t)l * NH + h] = (float)(ind / ((double)B * P));
    }
  }
  return s;
}

Model TrainingRun::model() const {
  const std::vector<uint8_t> weights = safetensors_bytes();
  return Model::load_buffers(config_json(), weights, vocab_json_, merges_txt_);
}

}  // namespace headscope::train
