// Which heads carry an answer: activation patching and attribution patching between two texts
// (`headscope patch`, model.patch() in JavaScript).
//
// Definitions (the tests check each against a float64 reference written from them):
//   z^{l,h}       head h of layer l's output before W_O, z_i = sum_j a_ij v_j (T x HS; per query head
//                 for grouped-query models)
//   LD            logit[answer] - logit[distractor] at the last position
//   patching (l, h)  the corrupted text run with head (l, h)'s z taken from the clean run, at every
//                 position (heads) or at one position p (heads_by_position); every other head keeps its
//                 corrupted z, every later layer is recomputed
//   residual patching (l, p)  the clean run's residual stream entering layer l at position p put into
//                 the corrupted run (resid: the layer x position map)
//   score         (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted): 1 means the patch alone brings
//                 back the clean answer, 0 that it changes nothing
//   attribution   the same score estimated to first order from one backward pass of the corrupted run:
//                 sum over the head's dimensions (and positions, for the whole head) of
//                 (z_clean - z_corrupted) . dLD/dz at the corrupted run, over (LD_clean - LD_corrupted)
// The texts must have the same number of tokens. Positions before the first token where they differ
// have equal activations in both runs, so their patches change nothing: their scores are exactly 0 and
// no run is spent on them; every patched run recomputes only the rows from that token on, and only
// layers l and above (below l a patched run is the corrupted run).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headscope/model.hpp"

namespace headscope {

struct PatchOptions {
  // token ids; by default the clean and the corrupted runs' most likely next tokens
  std::optional<int32_t> answer, distractor;
  bool by_position = false;  // also patch each head at each position (L x NH x T more runs)
  // called with the fraction done (0..1) after the first step and after every layer of every batch of
  // patched runs; returning false stops with Error("cancelled")
  std::function<bool(double)> progress;
};

struct PatchReport {
  int n_layer = 0, n_head = 0, tokens = 0;
  int first_difference = 0;  // the first position whose tokens differ
  std::vector<int32_t> ids_clean, ids_corrupted;
  int32_t answer = 0, distractor = 0;
  double ld_clean = 0, ld_corrupted = 0;
  // Scores, row-major; NaN where an exact one is not computed yet (a report read between steps)
  std::vector<double> heads;                          // (L, NH)
  std::vector<double> heads_attribution;              // (L, NH)
  std::vector<double> resid;                          // (L, T)
  std::vector<double> heads_by_position;              // (L, NH, T), with by_position; else empty
  std::vector<double> heads_by_position_attribution;  // (L, NH, T), with by_position; else empty
  int exact_runs_done = 0, exact_runs_total = 0;
};

// The patching in steps, for a caller that must stay responsive (a Web Worker that reads a cancel
// between steps). The first step runs both texts and the attribution estimate (one forward and one
// backward of the training engine on the model's weights): after it, report() holds LD_clean,
// LD_corrupted and every attribution score, and the exact scores fill in, at least `max_runs` patched
// runs per step, each layer's from the last layer down. Runs go in batches of one layer's runs (about
// a thousand rows times layers computed each, at GPT-2 small's width about 7 GMAC) and a step ends
// with a batch. The model may run other texts between steps
// (the patching then runs the corrupted text again first); after a step the model's last-run results
// are unspecified until its next run, and its cache is cleared.
class ActivationPatching {
 public:
  // ids: equal sizes, 1 <= size <= n_positions, not identical; throws Error otherwise (and for an
  // answer equal to the distractor, or an id outside the vocabulary)
  ActivationPatching(Model& model, std::span<const int32_t> clean, std::span<const int32_t> corrupted,
                     const PatchOptions& options = {});
  ActivationPatching(ActivationPatching&&) noexcept;
  ~ActivationPatching();
  bool step(int max_runs);  // true when the report is complete
  double progress() const;  // 0..1
  bool done() const;
  bool attribution_ready() const;  // after the first step
  const PatchReport& report() const;

  struct State;  // analysis/patching.cpp

 private:
  std::unique_ptr<State> s_;
};

// The whole patching in one call.
PatchReport patch(Model& model, std::span<const int32_t> clean, std::span<const int32_t> corrupted,
                  const PatchOptions& options = {});
// The two texts' ids, tokenized as Model::run tokenizes them (Tokenizer::encode_input). An empty
// text and a text past the context are refused, and texts of different token counts are refused
// naming both counts and the first position where their tokens differ.
struct PatchIds {
  std::vector<int32_t> clean, corrupted;
};
PatchIds patching_ids(const Model& model, std::string_view clean, std::string_view corrupted);
// patch() on texts, tokenized by patching_ids()
PatchReport patch_texts(Model& model, std::string_view clean, std::string_view corrupted,
                        const PatchOptions& options = {});
// The id of `token` if it is exactly one token of the model's vocabulary (encoded without the
// tokenizer's leading special tokens); throws Error naming the tokens it splits into otherwise.
int32_t single_token_id(const Model& model, std::string_view token);

}  // namespace headscope
