// Activation and attribution patching (patching.hpp): the clean run's head outputs and residual
// streams put into the corrupted run one at a time, each patched run recomputing only layers l and
// above and the rows its patch changes; the first-order estimate from one backward pass of the
// training engine on the model's weights.
//
// The patched runs of one layer go through the blocks together, as one batch of sequences
// (block_forward's packed sequences): the linear layers then see every run's rows at once, so each
// weight is read once per batch instead of once per run. Each row is computed exactly as a run of
// its own computes it, so a score does not depend on the batch it was in. Only the two logits LD
// reads are computed, and at the last layer only the last position goes past the attention.
#include "headscope/patching.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

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

// A patched run: a head's output (at every position from `begin`, or at `begin` alone) or the stream
// entering `layer` at position `begin`, put into the corrupted run; rows below `begin` are unchanged
struct PatchRun {
  int layer, head;  // head -1: a residual patch
  int begin, end;   // the patched rows; the run computes rows [begin, T)
  double* out;
};

// The batch of patched runs going through the blocks: the stream leaving the last computed layer, one
// sequence's rows after another's
struct PatchBatch {
  std::size_t first = 0, count = 0;  // runs [first, first + count) of State::runs
  int layer0 = 0, layer = 0;         // the runs' layer, and the next layer to compute
  int stride = 0;                    // the model's cap_ when the batch started: its buffers' row stride
  std::vector<int> begin;            // (count)
  std::vector<ZPatch> patches;       // (count)
  std::vector<float> x;              // (rows, C)
  int rows = 0;
};

struct ActivationPatching::State {
  Model& model;
  Model::Impl& m;
  PatchOptions options;
  PatchReport r;
  int L, NH, HS, QW, C, T, d;
  std::vector<float> z_clean;      // (L, T, QW) the clean run's head outputs
  std::vector<float> resid_clean;  // (L, T, C) the clean run's residual stream entering each layer
  bool started = false;
  std::vector<PatchRun> runs;  // every exact run, in the order they are done
  std::size_t cursor = 0;      // the first run not in a batch yet
  std::optional<PatchBatch> batch;
  uint64_t calls_after_step = 0;  // the model's forward() count when this left it
  // the batch's buffers: per sequence (stride rows) and per row
  std::vector<float> seq_qkv, seq_head_out, seq_panels, att, rows_ln, rows_scratch, rows_proj, rows_head, rows_fc,
      rows_out, final_row, lm_row;

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
    // layers from the last down (the cheapest runs first), each layer's head patches, then its
    // residual ones: a batch holds runs of one layer and one kind
    for (int l = L - 1; l >= 0; l--) {
      for (int h = 0; h < NH; h++) runs.push_back({l, h, d, T, &r.heads[(std::size_t)l * NH + h]});
      for (int h = 0; o.by_position && h < NH; h++)
        for (int p = d; p < T; p++)
          runs.push_back({l, h, p, p + 1, &r.heads_by_position[((std::size_t)l * NH + h) * T + p]});
      for (int p = d; p < T; p++) runs.push_back({l, -1, p, p + 1, &r.resid[(std::size_t)l * T + p]});
    }
    r.exact_runs_total = (int)runs.size();
  }

  // the batch's fraction of its layers done counts as that fraction of its runs
  double runs_done() const {
    double done = r.exact_runs_done;
    if (batch) done += (double)batch->count * (batch->layer - batch->layer0) / (L - batch->layer0);
    return done;
  }
  double total_work() const { return 6.0 + r.exact_runs_total; }  // both runs and the attribution: about 6 runs
  double progress() const { return ((started ? 6.0 : 0.0) + runs_done()) / total_work(); }
  void report_progress() {
    if (options.progress && !options.progress(progress())) throw Error("cancelled");
  }

  // LD from the stream leaving the last block at one position: the final norm as the model's forward
  // computes it, then the answer's and the distractor's rows of the LM head, in double
  double ld_of_stream(const float* x) {
    const ModelConfig& c = m.config_;
    final_row.resize(C);
    if (c.family == Family::llama)
      kernels::rmsnorm_forward(final_row.data(), nullptr, x, m.final_norm_weight_.data(), 1, C, c.layer_norm_epsilon);
    else
      kernels::layernorm_forward(final_row.data(), nullptr, nullptr, x, m.final_norm_weight_.data(),
                                 m.final_norm_bias_.data(), 1, C, c.layer_norm_epsilon);
    const bool untied = !m.lm_head_.empty() || !m.lm_head_f16_.empty();
    const auto logit = [&](int32_t token) {
      const float* w;
      if (m.wte_f16_.empty()) {
        w = (untied ? m.lm_head_.data() : m.wte_.data()) + (std::size_t)token * C;
      } else {
        lm_row.resize(C);
        kernels::f16_unpack_forward(lm_row.data(),
                                    (untied ? m.lm_head_f16_.data() : m.wte_f16_.data()) + (std::size_t)token * C, C);
        w = lm_row.data();
      }
      double sum = 0;
      for (int i = 0; i < C; i++) sum += (double)final_row[i] * w[i];
      return sum;
    };
    return logit(r.answer) - logit(r.distractor);
  }
  const float* last_stream() const { return &m.residual_[((std::size_t)L * m.cap_ + T - 1) * C]; }
  double score(double ld_patched) const { return (ld_patched - r.ld_corrupted) / (r.ld_clean - r.ld_corrupted); }

  // Both runs, the default answer and distractor, and every attribution score.
  void first() {
    const ModelConfig& c = m.config_;
    model.run_ids(r.ids_clean);
    m.require_activations("activation patching");
    const std::size_t cap = m.cap_;  // after the run: it may have grown the activations
    const std::vector<float> logits_clean(m.logits_last_.begin(), m.logits_last_.end());
    const std::vector<float> stream_clean(last_stream(), last_stream() + C);
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
    // computed as the patched runs' are, so that a patch that changes no float scores exactly 0 (or 1)
    r.ld_clean = ld_of_stream(stream_clean.data());
    r.ld_corrupted = ld_of_stream(last_stream());
    if (!(std::fabs(r.ld_clean - r.ld_corrupted) > 0.0))
      throw Error("the clean and corrupted runs give the same logit difference: there is nothing to bring back");
    const std::size_t cap_now = m.cap_;
    std::vector<float> z_corrupted((std::size_t)L * T * QW);
    for (int l = 0; l < L; l++)
      std::copy_n(&m.head_out_[(std::size_t)l * cap_now * QW], (std::size_t)T * QW,
                  &z_corrupted[(std::size_t)l * T * QW]);

    // dLD/dz at the corrupted run: the training engine's backward from the logit difference
    train::Trainer trainer(model, 1, T, std::size_t(3) << 30);  // reads the model's weights: no copy of them
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

  // Per-sequence and per-row floats of a batch at stride `stride`
  std::size_t sequence_floats(int stride) const {
    const ModelConfig& c = m.config_;
    return (std::size_t)stride * (c.qkv_width() + QW) +
           kernels::attention_key_panels_floats(stride, {NH, c.kv_heads(), HS});
  }
  std::size_t row_floats() const {
    const ModelConfig& c = m.config_;
    const std::size_t fc = (std::size_t)c.n_inner * (c.family == Family::llama ? 3 : 1);
    return 5 * (std::size_t)C + fc + std::max<std::size_t>(c.qkv_width(), QW);
  }

  // The next batch: runs of one layer and one kind from the cursor on, as many as fit in kBatchRows
  // rows, kBatchRowLayers rows times layers to compute (a step's length: a step finishes its batch)
  // and kBatchFloats floats, at least one. A hundred rows or so keep the linear layers busy.
  void start_batch() {
    static constexpr int kBatchRows = 256, kBatchRowLayers = 1024;
    static constexpr std::size_t kBatchFloats = std::size_t(32) << 20;  // 128 MB
    PatchBatch b;
    b.first = cursor;
    b.stride = m.cap_;
    b.layer0 = b.layer = runs[cursor].layer;
    const bool heads = runs[cursor].head >= 0;
    const std::size_t per_sequence = sequence_floats(b.stride);
    std::size_t floats = 0;
    for (std::size_t i = cursor; i < runs.size(); i++) {
      const PatchRun& run = runs[i];
      if (run.layer != b.layer0 || (run.head >= 0) != heads) break;
      const int rows = T - run.begin;
      const std::size_t more = per_sequence + (std::size_t)rows * row_floats();
      if (b.count > 0 &&
          (b.rows + rows > std::min(kBatchRows, kBatchRowLayers / (L - b.layer0)) || floats + more > kBatchFloats))
        break;
      b.count++, b.rows += rows, floats += more;
    }
    const std::size_t cap = b.stride;
    b.x.resize((std::size_t)b.rows * C);
    float* x = b.x.data();
    for (std::size_t s = 0; s < b.count; s++) {
      const PatchRun& run = runs[b.first + s];
      b.begin.push_back(run.begin);
      // the stream entering the layer: the corrupted run's, with the clean run's row for a residual patch
      std::copy_n(&m.residual_[((std::size_t)b.layer0 * cap + run.begin) * C], (std::size_t)(T - run.begin) * C, x);
      if (run.head < 0)
        std::copy_n(&resid_clean[((std::size_t)b.layer0 * T + run.begin) * C], C, x);
      else
        b.patches.push_back({&z_clean[(std::size_t)b.layer0 * T * QW], run.head, run.begin, run.end});
      x += (std::size_t)(T - run.begin) * C;
    }
    batch = std::move(b);
    cursor += batch->count;
  }

  // One layer of the batch; after the last, its scores
  void batch_layer() {
    const ModelConfig& c = m.config_;
    PatchBatch& b = *batch;
    const int B = (int)b.count, l = b.layer, rows = b.rows;
    const std::size_t cap = b.stride, W = c.qkv_width();
    const std::size_t panels = kernels::attention_key_panels_floats((int)cap, {NH, c.kv_heads(), HS});
    seq_qkv.resize(B * cap * W);
    seq_head_out.resize(B * cap * QW);
    seq_panels.resize(B * panels);
    att.resize((std::size_t)NH * cap * cap);
    const std::size_t n = rows;
    rows_ln.resize(n * C);
    rows_proj.resize(n * C);
    rows_head.resize(n * C);
    rows_out.resize(n * C);
    rows_scratch.resize(n * std::max<std::size_t>(W, QW));
    const std::size_t F = c.n_inner;
    const bool llama = c.family == Family::llama;
    rows_fc.resize(n * F * (llama ? 3 : 1));
    // a head patch's layer: the attention is the corrupted run's (its output is what the patch replaces)
    const bool ready = l == b.layer0 && !b.patches.empty();
    for (int s = 0; s < B; s++) {
      const int begin = b.begin[s];
      if (ready) {
        std::copy_n(&m.head_out_[((std::size_t)l * cap + begin) * QW], (std::size_t)(T - begin) * QW,
                    &seq_head_out[((std::size_t)s * cap + begin) * QW]);
      } else {  // the corrupted run's keys and values below the sequence's first row, and the kernel's cache of them
        std::copy_n(&m.qkv_[(std::size_t)l * cap * W], (std::size_t)begin * W, &seq_qkv[(std::size_t)s * cap * W]);
        std::copy_n(&m.key_panels_[(std::size_t)l * panels], panels, &seq_panels[(std::size_t)s * panels]);
      }
    }
    BlockBuffers io;
    io.x = b.x.data();
    io.ln1 = io.ln2 = rows_ln.data();
    io.qkv = seq_qkv.data();
    io.att = att.data();
    io.key_panels = seq_panels.data();
    io.head_out = seq_head_out.data();
    io.head_proj = rows_head.data();
    io.attn_proj = io.mlp_out = rows_proj.data();
    io.res_mid = io.res_out = rows_out.data();
    io.fc_pre = io.fc_act = rows_fc.data();
    if (llama) io.fc_act += n * 2 * F;
    io.rope_inv_freq = m.rope_inv_freq_.data();
    // the model's switched-off heads as its runs have them (none for the corrupted run): each row's
    // W_O is then summed head by head, as the model's runs sum it
    io.ablate = &m.ablate_mask_[(std::size_t)l * NH];
    io.patches = l == b.layer0 && !b.patches.empty() ? b.patches.data() : nullptr;
    io.seq_begin = b.begin.data();
    io.rows_scratch = rows_scratch.data();
    io.attention_ready = ready;
    io.last_rows_only = l == L - 1;
    block_forward(c, m.blocks_[l], io, B, 0, T, (int)cap);
    const std::size_t out_rows = l == L - 1 ? (std::size_t)B : n;
    std::copy_n(rows_out.data(), out_rows * C, b.x.data());
    b.layer++;
    if (b.layer < L) return;
    for (int s = 0; s < B; s++) {
      *runs[b.first + s].out = score(ld_of_stream(&b.x[(std::size_t)s * C]));
      r.exact_runs_done++;
    }
    batch.reset();
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
    // a batch a cancel interrupted: again from its first layer
    if (batch) {
      cursor = batch->first;
      batch.reset();
    }
    const int before = r.exact_runs_done;
    do {
      start_batch();
      while (batch) {
        batch_layer();
        report_progress();
      }
    } while (r.exact_runs_done - before < std::max(1, max_runs) && !done());
    leave();
    return done();
  }
  // What the model holds now is no run's: the next run computes every token
  void leave() {
    model.clear_cache();
    calls_after_step = m.forward_calls_;
  }
  bool done() const { return started && !batch && cursor >= runs.size(); }
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
