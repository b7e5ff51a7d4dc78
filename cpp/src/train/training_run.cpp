// TrainingRun: batches, schedule, optimizer steps and head probes around a Trainer (see
// training_run.hpp for the tasks and the probe's definition; presets, checks and JSON in training_spec.cpp).
#include "headscope/training_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>

#include "headscope/error.hpp"
#include "headscope/model.hpp"
#include "headscope/safetensors.hpp"
#include "headscope/tokenizer.hpp"

namespace headscope::train {

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
  tokenizer_.vocab_json = spec_.task == "text" ? byte_vocab_json() : synthetic_vocab_json(spec_.shape.vocab_size);
  tokenizer_.merges_txt = kEmptyMerges;
}

Tokenizer TokenizerFiles::load() const {
  return is_tokenizer_json() ? Tokenizer::from_tokenizer_json(tokenizer_json)
                             : Tokenizer::from_json(vocab_json, merges_txt);
}

TrainingRun::TrainingRun(const RunSpec& spec, const std::string& init_config_json,
                         std::span<const uint8_t> init_safetensors, std::string init_vocab_json,
                         std::string init_merges_txt)
    : TrainingRun(spec, init_config_json, init_safetensors,
                  TokenizerFiles{std::move(init_vocab_json), std::move(init_merges_txt), ""}) {}

TrainingRun::TrainingRun(const RunSpec& spec, const std::string& init_config_json,
                         std::span<const uint8_t> init_safetensors, TokenizerFiles init_tokenizer)
    : spec_(spec),
      tokenizer_(std::move(init_tokenizer)),
      init_config_json_(init_config_json),
      rng_(spec.seed * 0x9E3779B97F4A7C15ull + 17) {
  spec_.shape = parse_config(init_config_json);
  const bool llama = spec_.shape.family == Family::llama;
  if (llama && !tokenizer_.is_tokenizer_json())
    throw Error("train: a Llama-family model (model_type \"" + spec_.shape.model_type +
                "\") reads its tokenizer from tokenizer.json, not vocab.json and merges.txt");
  if (!llama && tokenizer_.is_tokenizer_json())
    throw Error("train: a GPT-2 model reads its tokenizer from vocab.json and merges.txt, not tokenizer.json");
  validate(spec_);
  // the tokenizer must read before any training starts
  (void)tokenizer_.load();
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
  // as the model reads a text (encode_input: Llama 3's <|begin_of_text|> first), so windows from the
  // text's start are what a run of it sees
  const std::vector<Token> tokens = tokenizer_.load().encode_input(text);
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (const Token& t : tokens) ids.push_back(t.id);
  set_text_ids(std::move(ids));
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
    throw Error("train: a batch needs 1 to " + std::to_string(trainer_->max_batch()) + " rows, got " +
                std::to_string(B));
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
    fill_batch(
        induction_batch(rng_, B, T, spec_.shape.vocab_size, spec_.min_period, spec_.max_period, probe_period(spec_)));
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
    throw Error(
        "train: this run diverged; its weights are those before the failed step. Start again with a lower "
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

std::string TrainingRun::config_json() const {
  const std::string own = trainer_->config_json();
  if (init_config_json_.empty()) return own;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(init_config_json_);  // parse_config read it already
  const nlohmann::ordered_json mine = nlohmann::ordered_json::parse(own);
  for (auto it = mine.begin(); it != mine.end(); ++it) j[it.key()] = it.value();
  // newer configs nest the rotation in rope_parameters; the trainer writes rope_theta and rope_scaling
  if (mine.contains("rope_theta")) j.erase("rope_parameters");
  return j.dump(2) + "\n";
}

Model TrainingRun::model() const {
  const std::vector<uint8_t> weights = safetensors_bytes();
  if (tokenizer_.is_tokenizer_json())
    return Model::load_buffers_tokenizer_json(config_json(), weights, tokenizer_.tokenizer_json);
  return Model::load_buffers(config_json(), weights, tokenizer_.vocab_json, tokenizer_.merges_txt);
}

}  // namespace headscope::train
