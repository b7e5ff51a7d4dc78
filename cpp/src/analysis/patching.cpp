// Activation and attribution patching (patching.hpp): the clean run's head outputs and residual
// streams put into the corrupted run one at a time, each patched run recomputing only layers l and
// above and rows from the first differing token on; the first-order estimate from one backward pass
// of the training engine on the model's weights.
#include "headscope/patching.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "headscope/error.hpp"
#include "headscope/train.hpp"
#include "kernels/parallel.hpp"
#include "model/model_impl.hpp"

namespace headscope {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int32_t argmax(std::span<const float> logits) {
  return (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void check_ids(const ModelConfig& c, std::span<const int32_t> clean, std::span<const int32_t> corrupted) {
  if (clean.empty() || corrupted.empty())
    throw Error(std::string("the ") + (clean.empty() ? "clean" : "corrupted") + " text is empty");
  if (clean.size() != corrupted.size())
    throw Error("the clean text has " + std::to_string(clean.size()) + " tokens and the corrupted text " +
                std::to_string(corrupted.size()) + ": they must have the same number");
  if ((int)clean.size() > c.n_positions)
    throw Error(std::to_string(clean.size()) + " tokens exceed the model's context of " +
                std::to_string(c.n_positions));
  for (auto ids : {clean, corrupted})
    for (std::size_t t = 0; t < ids.size(); t++)
      if (ids[t] < 0 || ids[t] >= c.vocab_size)
        throw Error("token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) + " is outside [0, " +
                    std::to_string(c.vocab_size) + ")");
  if (std::equal(clean.begin(), clean.end(), corrupted.begin()))
    throw Error("the clean and corrupted texts have the same tokens: nothing to patch");
}

}  // namespace

struct ActivationPatching::State {
  Model& model;
  Model::Impl& m;
  PatchOptions options;
  PatchReport r;
  int L, NH, HS, QW, C, T, d;
  std::vector<float> z_clean;      // (L, T, QW) the clean run's head outputs
  std::vector<float> resid_clean;  // (L, T, C) the clean run's residual stream entering each layer
  std::vector<float> saved_row;    // (C) the corrupted row a residual patch replaces
  bool started = false;
  int cursor = 0;                 // the next exact run (run_item's order)
  uint64_t calls_after_step = 0;  // the model's forward() count when this left it

  State(Model& model_, Model::Impl& impl, std::span<const int32_t> clean, std::span<const int32_t> corrupted,
        const PatchOptions& o)
      : model(model_), m(impl), options(o) {
    const ModelConfig& c = m.config_;
    check_ids(c, clean, corrupted);
    for (const auto& id : {o.answer, o.distractor})
      if (id && (*id < 0 || *id >= c.vocab_size))
        throw Error("token id " + std::to_string(*id) + " is outside [0, " + std::to_string(c.vocab_size) + ")");
    if (o.answer && o.distractor && *o.answer == *o.distractor)
      throw Error("the answer and the distractor are the same token");
    L = c.n_layer, NH = c.n_head, HS = c.head_size(), QW = c.q_width(), C = c.n_embd, T = (int)clean.size();
    d = 0;
    while (clean[d] == corrupted[d]) d++;
    r.n_layer = L, r.n_head = NH, r.tokens = T, r.first_difference = d;
    r.ids_clean.assign(clean.begin(), clean.end());
    r.ids_corrupted.assign(corrupted.begin(), corrupted.end());
    r.heads.assign((std::size_t)L * NH, kNaN);
    r.heads_attribution.assign((std::size_t)L * NH, kNaN);
    r.resid.assign((std::size_t)L * T, kNaN);
    if (o.by_position) {
      r.heads_by_position.assign((std::size_t)L * NH * T, kNaN);
      r.heads_by_position_attribution.assign((std::size_t)L * NH * T, kNaN);
    }
    // before the first differing token both runs are the same: those patches change nothing
    for (int l = 0; l < L; l++)
      for (int p = 0; p < d; p++) {
        r.resid[(std::size_t)l * T + p] = 0.0;
        for (int h = 0; o.by_position && h < NH; h++) r.heads_by_position[((std::size_t)l * NH + h) * T + p] = 0.0;
      }
    r.exact_runs_total = L * runs_per_layer();
  }

  int runs_per_layer() const { return NH + (options.by_position ? NH * (T - d) : 0) + (T - d); }
  double total_work() const { return 6.0 + r.exact_runs_total; }  // both runs and the attribution: about 6 runs
  double progress() const { return ((started ? 6.0 : 0.0) + r.exact_runs_done) / total_work(); }
  void report_progress() {
    if (options.progress && !options.progress(progress())) throw Error("cancelled");
  }

  double ld(std::span<const float> logits) const { return (double)logits[r.answer] - (double)logits[r.distractor]; }
  double score(double ld_patched) const { return (ld_patched - r.ld_corrupted) / (r.ld_clean - r.ld_corrupted); }

  // Both runs, the default answer and distractor, and every attribution score.
  void first() {
    const ModelConfig& c = m.config_;
    model.run_ids(r.ids_clean);
    const std::size_t cap = m.cap_;  // after the run: it may have grown the activations
    const std::vector<float> logits_clean(m.logits_last_.begin(), m.logits_last_.end());
    z_clean.resize((std::size_t)L * T * QW);
    resid_clean.resize((std::size_t)L * T * C);
    for (int l = 0; l < L; l++) {
      std::copy_n(&m.head_out_[(std::size_t)l * cap * QW], (std::size_t)T * QW, &z_clean[(std::size_t)l * T * QW]);
      std::copy_n(&m.residual_[(std::size_t)l * cap * C], (std::size_t)T * C, &resid_clean[(std::size_t)l * T * C]);
    }
    model.run_ids(r.ids_corrupted);
    const std::span<const float> logits_corrupted = m.logits_last_;
    r.answer = options.answer ? *options.answer : argmax(logits_clean);
    r.distractor = options.distractor ? *options.distractor : argmax(logits_corrupted);
    if (r.answer == r.distractor)
      throw Error("the answer and the distractor are the same token (" + std::to_string(r.answer) +
                  "): both runs predict it most; name them");
    r.ld_clean = ld(logits_clean);
    r.ld_corrupted = ld(logits_corrupted);
    if (!(std::fabs(r.ld_clean - r.ld_corrupted) > 0.0))
      throw Error("the clean and corrupted runs give the same logit difference: there is nothing to bring back");
    const std::size_t cap_now = m.cap_;
    std::vector<float> z_corrupted((std::size_t)L * T * QW);
    for (int l = 0; l < L; l++)
      std::copy_n(&m.head_out_[(std::size_t)l * cap_now * QW], (std::size_t)T * QW,
                  &z_corrupted[(std::size_t)l * T * QW]);

    // dLD/dz at the corrupted run: the training engine's backward from the logit difference
    train::Trainer trainer(c, 1, T, std::size_t(3) << 30, /*optimizer_state=*/false);
    trainer.load(model);
    trainer.share_threads(model);
    std::vector<int> inputs(r.ids_corrupted.begin(), r.ids_corrupted.end()), targets(T, 0);
    trainer.forward(inputs.data(), targets.data(), 1, T);
    std::vector<float> dlogits((std::size_t)T * c.vocab_size, 0.0f);
    dlogits[(std::size_t)(T - 1) * c.vocab_size + r.answer] = 1.0f;
    dlogits[(std::size_t)(T - 1) * c.vocab_size + r.distractor] = -1.0f;
    trainer.backward_from_logits(dlogits);
    const double denominator = r.ld_clean - r.ld_corrupted;
    for (int l = 0; l < L; l++) {
      const std::span<const float> g = trainer.head_outputs_grad(l);
      for (int h = 0; h < NH; h++) {
        double whole = 0;
        for (int t = 0; t < T; t++) {
          double sum = 0;
          const std::size_t at = (std::size_t)t * QW + (std::size_t)h * HS;
          for (int i = 0; i < HS; i++)
            sum += ((double)z_clean[(std::size_t)l * T * QW + at + i] - z_corrupted[(std::size_t)l * T * QW + at + i]) *
                   g[at + i];
          whole += sum;
          if (options.by_position)
            r.heads_by_position_attribution[((std::size_t)l * NH + h) * T + t] = sum / denominator;
        }
        r.heads_attribution[(std::size_t)l * NH + h] = whole / denominator;
      }
    }
    calls_after_step = m.forward_calls_;
  }

  // Exact run `i`: layers from the last down, and in each layer every head, then (by_position) every
  // head at every position, then the residual stream at every position. In this order no run undoes
  // what a later one reads: a run at layer l rewrites layers l and above from row d on, and reads
  // the stream entering layer l (written by layer l - 1, which no earlier run touched) and the rows
  // below d (which no run writes); a residual patch restores its row after its run.
  void run_item(int i) {
    const int per_layer = runs_per_layer();
    const int l = L - 1 - i / per_layer;
    int k = i % per_layer;
    const std::size_t cap = m.cap_;
    double* out;
    if (k < NH || (options.by_position && k < NH + NH * (T - d))) {
      int h, begin, end;
      if (k < NH) {
        h = k, begin = d, end = T;
        out = &r.heads[(std::size_t)l * NH + h];
      } else {
        k -= NH;
        h = k / (T - d), begin = d + k % (T - d), end = begin + 1;
        out = &r.heads_by_position[((std::size_t)l * NH + h) * T + begin];
      }
      m.head_patch_ = {l, h, begin, end, &z_clean[(std::size_t)l * T * QW]};
      m.forward(d, T, l);
      m.head_patch_ = {};
    } else {
      const int p = d + (k - NH - (options.by_position ? NH * (T - d) : 0));
      float* row = &m.residual_[((std::size_t)l * cap + p) * C];
      saved_row.assign(row, row + C);
      std::copy_n(&resid_clean[((std::size_t)l * T + p) * C], C, row);
      m.forward(d, T, l, /*embed=*/false);
      std::copy(saved_row.begin(), saved_row.end(), row);
      out = &r.resid[(std::size_t)l * T + p];
    }
    *out = score(ld(m.logits_last_));
    r.exact_runs_done++;
  }

  bool step(int max_runs) {
    if (done()) return true;
    if (!started) {
      first();
      started = true;
      report_progress();
      leave();
      return done();
    }
    kernels::PoolScope threads(m.pool_.get());
    // another caller ran the model since: the corrupted run's activations again
    if (m.forward_calls_ != calls_after_step) model.run_ids(r.ids_corrupted);
    for (int n = 0; n < std::max(1, max_runs) && cursor < r.exact_runs_total; n++) {
      run_item(cursor++);
      report_progress();
    }
    leave();
    return done();
  }
  // What the model holds now is no run's: the next run computes every token
  void leave() {
    model.clear_cache();
    calls_after_step = m.forward_calls_;
  }
  bool done() const { return started && cursor >= r.exact_runs_total; }
};

ActivationPatching::ActivationPatching(Model& model, std::span<const int32_t> clean, std::span<const int32_t> corrupted,
                                       const PatchOptions& options)
    : s_(std::make_unique<State>(model, *model.impl_, clean, corrupted, options)) {}
ActivationPatching::ActivationPatching(ActivationPatching&&) noexcept = default;
ActivationPatching::~ActivationPatching() = default;
bool ActivationPatching::step(int max_runs) {
  try {
    return s_->step(max_runs);
  } catch (...) {
    s_->model.clear_cache();  // a run stopped half way leaves no cache to reuse
    s_->m.head_patch_ = {};
    throw;
  }
}
double ActivationPatching::progress() const { return s_->progress(); }
bool ActivationPatching::done() const { return s_->done(); }
bool ActivationPatching::attribution_ready() const { return s_->started; }
const PatchReport& ActivationPatching::report() const { return s_->r; }

PatchReport patch(Model& model, std::span<const int32_t> clean, std::span<const int32_t> corrupted,
                  const PatchOptions& options) {
  ActivationPatching p(model, clean, corrupted, options);
  while (!p.step(16)) {
  }
  return p.report();
}

PatchIds patching_ids(const Model& model, std::string_view clean, std::string_view corrupted) {
  std::vector<int32_t> ids[2];
  const std::string_view texts[2] = {clean, corrupted};
  const char* names[2] = {"clean", "corrupted"};
  std::vector<Token> tokens[2];
  for (int i = 0; i < 2; i++) {
    if (texts[i].empty()) throw Error(std::string("the ") + names[i] + " text is empty");
    tokens[i] = model.tokenizer().encode_input(texts[i]);
    for (const Token& t : tokens[i]) ids[i].push_back(t.id);
    if ((int)ids[i].size() > model.config().n_positions)
      throw Error(std::string("the ") + names[i] + " text's " + std::to_string(ids[i].size()) +
                  " tokens exceed the model's context of " + std::to_string(model.config().n_positions));
  }
  if (ids[0].size() != ids[1].size()) {
    std::size_t p = 0;
    while (p < ids[0].size() && p < ids[1].size() && ids[0][p] == ids[1][p]) p++;
    const auto shown = [&](int i) {
      return p < tokens[i].size() ? "\"" + tokens[i][p].text + "\"" : std::string("the end");
    };
    throw Error("the clean text has " + std::to_string(ids[0].size()) + " tokens and the corrupted text " +
                std::to_string(ids[1].size()) + ": they must have the same number (they first differ at token " +
                std::to_string(p) + ": " + shown(0) + " against " + shown(1) + ")");
  }
  return {std::move(ids[0]), std::move(ids[1])};
}

PatchReport patch_texts(Model& model, std::string_view clean, std::string_view corrupted, const PatchOptions& options) {
  const PatchIds ids = patching_ids(model, clean, corrupted);
  return patch(model, ids.clean, ids.corrupted, options);
}

int32_t single_token_id(const Model& model, std::string_view token) {
  if (token.empty()) throw Error("an empty token");
  const std::vector<Token> tokens = model.tokenizer().encode(token);
  if (tokens.size() != 1) {
    std::string parts;
    for (const Token& t : tokens) parts += (parts.empty() ? "\"" : ", \"") + t.text + "\"";
    throw Error("\"" + std::string(token) + "\" is " + std::to_string(tokens.size()) + " tokens (" + parts +
                "), not one");
  }
  return tokens[0].id;
}

}  // namespace headscope
