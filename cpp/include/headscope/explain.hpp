// Why a head attends, and which heads work together (`headscope explain`, `headscope circuits`;
// model.explainScore() and model.circuits() in JavaScript).
//
// Definitions (the tests check each against a float64 reference written from them):
//   parts      what the residual stream entering layer L is the sum of, exactly: `embed` (the token
//              embeddings), `pos` (GPT-2's position embeddings), for every earlier layer l' in order
//              `L{l'}H{h}` (head h's write z W_O^h), `L{l'}.attn_bias` (W_O's bias; GPT-2) and
//              `L{l'}.mlp` (the MLP's output with its bias), and last `bias` (GPT-2: the norm's beta
//              and the projections' own biases)
//   frozen norm  the layer's input norm with its scale at the run's value is affine: LayerNorm
//              takes part c to (c - mean(c)) / sigma * gamma (beta is the part `bias`), RMSNorm to
//              c / rms * gamma; each part then goes through the head's W_Q (query side) or its key
//              head's W_K, Qwen3's per-head q/k norm with its scale frozen too, and the rotation at
//              the token's position
//   table      table[a][b] = q_a(t) . k_b(s) / sqrt(HS): the cells sum to the pre-softmax score
//   contrast   softmax ignores what every key shares: the table minus its mean over the keys the
//              query sees (s' = 0..t), or minus the table at another key
//   value side the head's write at t, sum_s alpha_ts v_s W_O^h, split by source token and by part
//              (v's parts with the norm frozen at s), each projected on token u's unembedding through
//              the final norm frozen at t (as Model::logit_attribution reads the logit)
//   composition  from the weights, each head's input-norm weight folded into W_Q, W_K, W_V, nothing
//              centred, biases and the rotation left out: OV = W_V W_O, QK = W_Q W_K^T (d x d);
//              comp(X, Y) = |X Y|_F / (|X|_F |Y|_F); Q: comp(OV^A, QK^B), K: comp(OV^A, QK^B^T),
//              V: comp(OV^A, OV^B), for layer(A) < layer(B); the baseline is the same for random
//              Gaussian factors of the same shapes (mean over seeds)
//   copying    of head h: the eigenvalues of W_O^h diag(gamma_final) U E W_V^h (HS x HS; E the
//              token embedding, U the unembedding), sum Re(lambda) / sum |lambda| in [-1, 1]
// A grouped-query head's key and value are its shared key/value head's.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headscope/model.hpp"

namespace headscope {

struct ExplainOptions {
  std::optional<int> versus;     // the contrast's other key; none: the mean over keys 0..t
  std::optional<int32_t> token;  // the value side's token; none: the most likely next token at t
};

struct ScoreSplit {
  int layer = 0, head = 0, query = 0, key = 0, tokens = 0;
  std::vector<std::string> components;  // P parts, in the order above
  double score = 0;                     // the forward pass's own q(t) . k(s) / sqrt(HS)
  std::vector<double> table;            // (P, P): row a the query's part, column b the key's
  int versus = -1;                      // the contrast's other key, or -1: the mean over keys 0..t
  std::vector<double> contrast;         // (P, P)
  int32_t token = 0;                    // the value side's token u
  std::vector<double> value_by_token;   // (T): alpha_ts proj_u(v_s W_O^h); 0 after t
  std::vector<double> value_by_part;    // (P)
  double value_total = 0;               // proj_u of the head's write at t
};

// The split of the last run's score of head (layer, head) at query `query` and key `key` <= query.
// Throws Error for a layer, head, position or token out of range, a key after the query, or no run.
ScoreSplit explain_score(const Model& model, int layer, int head, int query, int key,
                         const ExplainOptions& options = {});

struct Circuits {
  int n_layer = 0, n_head = 0;
  std::vector<double> copying;  // (L, NH)
  std::vector<double> q, k, v;  // (L*NH, L*NH), row A, column B; NaN unless layer(A) < layer(B)
  double baseline_q = 0, baseline_k = 0, baseline_v = 0;  // random factors, mean over `seeds`
  int seeds = 0;
};

// Weights only: every head's copying score and the composition scores of every pair of heads.
Circuits circuits(const Model& model, int seeds = 16);

}  // namespace headscope
