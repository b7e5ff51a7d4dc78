// TrainingRun: one training run as the page (web/demo/train/train.html, through the Worker) and
// `headscope train` drive it: a Trainer, the task that feeds it batches, the optimizer with its
// learning-rate schedule, and a fixed probe on which every head's previous-token and induction
// scores are measured between steps. The presets are defined here once, so the command line runs a
// preset exactly as the page does.
//
// Tasks:
//   induction  each sequence of T+1 tokens is a span of P distinct random tokens repeated to fill the
//              window, P drawn uniformly from [min_period, max_period] without the probe's period. The
//              period varies, so no head that looks a fixed distance back predicts the repeats: only
//              copying the token that followed the current token's previous occurrence does (an
//              induction head). Tokens of a span are distinct so that the previous occurrence is unique.
//   text       B windows of T+1 consecutive tokens at random offsets of a tokenized text.
//   batch      every step on the same explicit batch (step_on).
//
// Probe: kProbeSequences sequences of P distinct random tokens repeated twice (T = 2P), from a fixed
// seed, with P = probe_period(spec), a period the training data never has: a head that learned to
// look back by the training periods scores nothing on it, a head that matches content does. A head's scores on it, as
// web/lib/roles.json defines them:
//   previous   mean over tokens t >= 1 of A[t][t-1]
//   induction  mean over the second copy (t = P .. 2P-1) of A[t][t-P+1] (prefix matching)
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "headscope/config.hpp"
#include "headscope/tokenizer.hpp"
#include "headscope/train.hpp"

namespace headscope {
class Model;
}

namespace headscope::train {

struct RunSpec {
  ModelConfig shape;               // n_layer, n_head, n_embd, n_positions, vocab_size of a fresh model
  std::string task = "induction";  // "induction" | "text" | "batch"
  int batch_size = 16;
  int seq_len = 32;                 // T: tokens each sequence predicts (windows hold T+1)
  int steps = 1000;                 // planned steps (the schedule's horizon)
  std::string optimizer = "adamw";  // "adamw" | "sgd" (sgd: no momentum; decay and clip only if set)
  float lr = 1e-3f;
  float weight_decay = 0.0f;
  float clip = 0.0f;                    // > 0: clip the global gradient norm
  int warmup = 0;                       // steps of linear warmup from lr / warmup
  std::string schedule = "constant";    // "constant" | "cosine" (to 10% of lr at `steps`)
  uint64_t seed = 1;                    // initial weights and batches
  int min_period = 4, max_period = 16;  // induction task: training periods, probe_period excluded
  int probe_period = 0;                 // 0: the middle of [min_period, max_period]
};

struct Preset {
  std::string name, label, description;
  RunSpec spec;
};
// The page's presets; the first is the page's default ("induction").
const std::vector<Preset>& presets();
// Throws Error listing the names when there is none called `name`.
const Preset& preset(const std::string& name);
// RunSpec as JSON (the page's and the Worker's format): {"shape": {"n_layer", "n_head", "n_embd",
// "n_positions", "vocab_size"}, "task", "batch_size", "seq_len", "steps", "optimizer", "lr",
// "weight_decay", "clip", "warmup", "schedule", "seed", "min_period", "max_period", "probe_period"}.
// spec_from_json starts from `base` and overrides the keys present; unknown keys are an Error.
std::string spec_to_json(const RunSpec& spec);
RunSpec spec_from_json(const std::string& json, const RunSpec& base = RunSpec{});
// Every preset as a JSON array of {"name", "label", "description", "spec"}.
std::string presets_json();
// Checks a spec's values (positive sizes, known task and optimizer, periods that fit the window and
// the vocabulary); throws Error naming the value.
void validate(const RunSpec& spec);

inline constexpr int kProbeSequences = 4;
// The probe's period: spec.probe_period, or the middle of [min_period, max_period].
int probe_period(const RunSpec& spec);

struct HeadScores {
  int n_layer = 0, n_head = 0;
  std::vector<float> previous, induction;  // (L, NH)
};

// The tokenizer files of a model folder: GPT-2's vocab.json and merges.txt, or the Llama family's
// tokenizer.json (then the other two are empty).
struct TokenizerFiles {
  std::string vocab_json, merges_txt;
  std::string tokenizer_json;
  bool is_tokenizer_json() const { return !tokenizer_json.empty(); }
  Tokenizer load() const;  // Throws Error as the tokenizer's loaders do
};

class TrainingRun {
 public:
  // A fresh model of spec.shape (GPT-2 initialisation from spec.seed), or the weights of `init`
  // (config, safetensors and tokenizer of an existing folder; the shape then comes from its config).
  explicit TrainingRun(const RunSpec& spec);
  TrainingRun(const RunSpec& spec, const std::string& init_config_json, std::span<const uint8_t> init_safetensors,
              std::string init_vocab_json, std::string init_merges_txt);
  // The same from any folder: a GPT-2 one's vocab.json + merges.txt, a Llama-family one's tokenizer.json
  TrainingRun(const RunSpec& spec, const std::string& init_config_json, std::span<const uint8_t> init_safetensors,
              TokenizerFiles init_tokenizer);

  // The text task's tokens (already encoded). Throws Error if there are fewer than T+1 or an id is
  // outside the vocabulary.
  void set_text_ids(std::vector<int32_t> ids);
  // The text task from raw text, encoded with the run's tokenizer (the init folder's, or the byte-level
  // vocabulary of a fresh text run).
  void set_text(const std::string& text);

  // One optimizer step on the task's next batch; returns the mean loss its gradients came from.
  // Throws Error if the loss or a weight is NaN or infinite: the weights stay as they were before the
  // step (still exportable), and every later step refuses.
  float step();
  // One step on explicit rows of T+1 ids (B rows, T+1 <= n_positions).
  float step_on(const std::vector<std::vector<int32_t>>& rows);
  int steps_done() const { return steps_done_; }
  float learning_rate(int step) const;  // the schedule's rate for 0-based step `step`

  // Forward on the probe (no gradient, weights unchanged) and every head's scores.
  HeadScores probe_scores();
  // The probe's first sequence (T = 2 * probe_period) as token ids, and its attention in the last
  // probe_scores() call: (L, NH, T, T), row = query (empty before the first call).
  std::vector<int32_t> probe_ids() const;
  const std::vector<float>& probe_attention() const { return probe_attention_; }

  const RunSpec& spec() const { return spec_; }
  const ModelConfig& config() const { return trainer_->config(); }
  Trainer& trainer() { return *trainer_; }
  const Trainer& trainer() const { return *trainer_; }

  // The files of a Hugging Face folder with the current weights (F32): config.json, model.safetensors
  // and the tokenizer's (GPT-2's vocab.json and merges.txt, or the Llama family's tokenizer.json).
  // (from an init folder: its config.json with the trainer's keys written over it, so that what the
  // trainer does not model, such as bos_token_id and eos_token_id, stays the folder's)
  std::string config_json() const;
  std::vector<uint8_t> safetensors_bytes() const { return trainer_->safetensors_bytes(); }
  const TokenizerFiles& tokenizer_files() const { return tokenizer_; }
  const std::string& vocab_json() const { return tokenizer_.vocab_json; }
  const std::string& merges_txt() const { return tokenizer_.merges_txt; }
  // A Model with the current weights, for run() between steps.
  Model model() const;

 private:
  void check_not_diverged() const;
  float apply_step(float loss);
  void fill_batch(const std::vector<std::vector<int32_t>>& rows);

  RunSpec spec_;
  std::unique_ptr<Trainer> trainer_;
  TokenizerFiles tokenizer_;
  std::string init_config_json_;  // empty for a fresh model
  std::mt19937_64 rng_;
  std::vector<int32_t> text_ids_;
  std::vector<int> ids_, targets_;
  std::vector<float> backup_;  // weights before the step being taken
  std::vector<float> probe_attention_;
  int steps_done_ = 0;
  int batch_rows_ = 0;
  bool diverged_ = false;  // a step failed: later steps refuse, the weights stay readable
};

// The induction task's batch: B rows of T+1 ids (see the top of this file).
// Periods are drawn from [min_period, max_period] without `excluded` (0: none).
std::vector<std::vector<int32_t>> induction_batch(std::mt19937_64& rng, int B, int T, int V, int min_period,
                                                  int max_period, int excluded = 0);
// vocab.json and merges.txt of a synthetic vocabulary of V tokens with printable strings (single
// printable ASCII characters up to 94 tokens, otherwise "t0", "t1", ...): a valid GPT-2 tokenizer
// file pair whose merges are empty.
std::string synthetic_vocab_json(int V);
// GPT-2's 256 byte tokens (bytes_to_unicode) and no merges: any text encodes, one token per byte.
std::string byte_vocab_json();
inline const char* kEmptyMerges = "#version: 0.2\n";

}  // namespace headscope::train
