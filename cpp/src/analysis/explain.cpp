// Why a head attends: its pre-softmax score split into the residual stream's parts on both sides,
// and its write split by source token and part (definitions in headscope/explain.hpp). Everything
// is read from the last run's own buffers (the residual stream entering each layer, every head's
// output before W_O, the attention weights, the key/value cache) and computed in double.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../kernels/kernels.hpp"
#include "../model/model_impl.hpp"
#include "analysis_access.hpp"
#include "headscope/error.hpp"
#include "headscope/explain.hpp"

namespace headscope {

namespace explain_parts {  // named: the unity build batches this file with others

using Impl = AnalysisAccess::Impl;

// A row of a (V, C) table held as float32 or F16, widened
// row `row` of a (rows, C) table held in float32 or F16, into out (C floats)
void table_row_into(const std::vector<float>& f32, const std::vector<uint16_t>& f16, int row, int C, float* out) {
  if (f16.empty())
    std::copy_n(&f32[(std::size_t)row * C], C, out);
  else
    kernels::f16_unpack_forward(out, &f16[(std::size_t)row * C], C);
}

std::vector<double> table_row(const std::vector<float>& f32, const std::vector<uint16_t>& f16, int row, int C) {
  std::vector<float> r(C);
  table_row_into(f32, f16, row, C, r.data());
  return {r.begin(), r.end()};
}

// The unembedding of token u into out (C floats): the untied LM head's row, else the token embedding's
void unembedding_into(const Impl& m, int u, float* out) {
  const bool untied = !m.lm_head_.empty() || !m.lm_head_f16_.empty();
  if (untied)
    table_row_into(m.lm_head_, m.lm_head_f16_, u, m.config_.n_embd, out);
  else
    table_row_into(m.wte_, m.wte_f16_, u, m.config_.n_embd, out);
}
std::vector<double> unembedding(const Impl& m, int u) {
  const bool untied = !m.lm_head_.empty() || !m.lm_head_f16_.empty();
  return untied ? table_row(m.lm_head_, m.lm_head_f16_, u, m.config_.n_embd)
                : table_row(m.wte_, m.wte_f16_, u, m.config_.n_embd);
}

bool has_bias_part(const Impl& m) {
  return m.config_.family != Family::llama;  // GPT-2: LayerNorm's beta and the projections' biases
}

// The parts' names entering layer L, in order (without `bias`, which comes last)
std::vector<std::string> part_names(const Impl& m, int L) {
  const ModelConfig& c = m.config_;
  const bool gpt2 = c.family != Family::llama;
  std::vector<std::string> names{"embed"};
  if (gpt2) names.push_back("pos");
  for (int l = 0; l < L; l++) {
    for (int h = 0; h < c.n_head; h++) names.push_back("L" + std::to_string(l) + "H" + std::to_string(h));
    if (gpt2) names.push_back("L" + std::to_string(l) + ".attn_bias");
    names.push_back("L" + std::to_string(l) + ".mlp");
  }
  return names;
}

// The parts (P0, C) of the residual stream entering layer L at position p: they sum to it exactly
// (the MLP's part is what the block added beyond its attention)
std::vector<double> stream_parts(const Impl& m, int L, int p) {
  const ModelConfig& c = m.config_;
  const int C = c.n_embd, NH = c.n_head, HS = c.head_size(), QW = c.q_width();
  const bool gpt2 = c.family != Family::llama;
  const std::size_t cap = m.cap_;
  std::vector<double> x;
  const auto add = [&](const auto& row) { x.insert(x.end(), row.begin(), row.end()); };
  add(table_row(m.wte_, m.wte_f16_, m.ids_[p], C));
  if (gpt2) add(std::vector<double>(&m.wpe_[(std::size_t)p * C], &m.wpe_[(std::size_t)(p + 1) * C]));
  std::vector<float> ch(C);
  std::vector<double> attn(C);
  for (int l = 0; l < L; l++) {
    std::fill(attn.begin(), attn.end(), 0.0);
    for (int h = 0; h < NH; h++) {
      // the forward's own kernel on the head's output row (0 if switched off), as logit_attribution
      std::fill(ch.begin(), ch.end(), 0.0f);
      if (!m.ablate_mask_[(std::size_t)l * NH + h])
        kernels::matmul_rows_forward(ch.data(), &m.head_out_[(l * cap + p) * QW], QW, m.blocks_[l].attn_out, h * HS,
                                     (h + 1) * HS, 1);
      for (int i = 0; i < C; i++) attn[i] += ch[i];
      add(ch);
    }
    if (gpt2) {
      // the packed layer's bias is padded past C to its panels' width
      const std::vector<float> b(m.blocks_[l].attn_out.bias.begin(), m.blocks_[l].attn_out.bias.begin() + C);
      for (int i = 0; i < C; i++) attn[i] += b[i];
      add(b);
    }
    const float* in = &m.residual_[((std::size_t)l * cap + p) * C];
    const float* out = &m.residual_[((std::size_t)(l + 1) * cap + p) * C];
    std::vector<double> mlp(C);
    for (int i = 0; i < C; i++) mlp[i] = (double)out[i] - in[i] - attn[i];
    add(mlp);
  }
  return x;
}

// A norm frozen at one position: (v - mean(v)) * rstd (LayerNorm) or v * rstd (RMSNorm), from the
// stream x it normalized there
struct Frozen {
  bool centre = false;
  double rstd = 1;
  Frozen(const float* x, int C, bool layernorm, double eps) : centre(layernorm) {
    double mean = 0, var = 0;
    if (centre) {
      for (int i = 0; i < C; i++) mean += x[i];
      mean /= C;
    }
    for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
    rstd = 1.0 / std::sqrt(var / C + eps);
  }
  void apply(double* v, int C) const {
    double mean = 0;
    if (centre) {
      for (int i = 0; i < C; i++) mean += v[i];
      mean /= C;
    }
    for (int i = 0; i < C; i++) v[i] = (v[i] - mean) * rstd;
  }
};

// The parts at p through the layer's frozen input norm and its weight: (P, C), with the `bias` part
// (the norm's beta) last where the family has one
std::vector<double> normalized_parts(const Impl& m, int L, int p) {
  const ModelConfig& c = m.config_;
  const int C = c.n_embd;
  const BlockWeights& b = m.blocks_[L];
  std::vector<double> parts = stream_parts(m, L, p);
  const int P0 = (int)(parts.size() / C);
  const Frozen norm(&m.residual_[((std::size_t)L * m.cap_ + p) * C], C, c.family != Family::llama,
                    c.layer_norm_epsilon);
  for (int a = 0; a < P0; a++) {
    double* v = &parts[(std::size_t)a * C];
    norm.apply(v, C);
    for (int i = 0; i < C; i++) v[i] *= b.norm1_weight[i];
  }
  if (has_bias_part(m))
    for (int i = 0; i < C; i++) parts.push_back(b.norm1_bias.empty() ? 0.0 : b.norm1_bias[i]);
  return parts;
}

// sum_s w_s normalized_parts(s) for s = 0..w.size()-1, without computing any position's parts: the
// frozen norm is linear in each part once its scale is fixed, so with c_s = w_s / sigma_s the sum is
// gamma (centred (sum_s c_s raw_a(s))); a head's raw part is z W_O^h, so its sum is (sum_s c_s z(s)) W_O^h,
// and an MLP's what the block added beyond its attention, summed the same way
std::vector<double> weighted_normalized_parts(const Impl& m, int L, const std::vector<double>& w) {
  const ModelConfig& c = m.config_;
  const int C = c.n_embd, NH = c.n_head, HS = c.head_size(), QW = c.q_width(), n = (int)w.size();
  const bool gpt2 = c.family != Family::llama;
  const std::size_t cap = m.cap_;
  std::vector<double> cs(n);
  double wsum = 0, csum = 0;
  for (int s = 0; s < n; s++) {
    const Frozen f(&m.residual_[((std::size_t)L * cap + s) * C], C, gpt2, c.layer_norm_epsilon);
    cs[s] = w[s] * f.rstd;
    wsum += w[s];
    csum += cs[s];
  }
  std::vector<double> x;
  std::vector<double> acc(C);
  const auto push = [&](const std::vector<double>& v) { x.insert(x.end(), v.begin(), v.end()); };
  std::fill(acc.begin(), acc.end(), 0.0);
  for (int s = 0; s < n; s++) {
    const std::vector<double> row = table_row(m.wte_, m.wte_f16_, m.ids_[s], C);
    for (int i = 0; i < C; i++) acc[i] += cs[s] * row[i];
  }
  push(acc);
  if (gpt2) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int s = 0; s < n; s++)
      for (int i = 0; i < C; i++) acc[i] += cs[s] * m.wpe_[(std::size_t)s * C + i];
    push(acc);
  }
  std::vector<float> w_out((std::size_t)QW * C);
  for (int l = 0; l < L; l++) {
    kernels::unpack_linear(w_out.data(), nullptr, m.blocks_[l].attn_out);
    std::vector<double> mlp(C, 0.0);
    for (int s = 0; s < n; s++) {
      const float* in = &m.residual_[((std::size_t)l * cap + s) * C];
      const float* out = &m.residual_[((std::size_t)(l + 1) * cap + s) * C];
      for (int i = 0; i < C; i++) mlp[i] += cs[s] * ((double)out[i] - in[i]);
    }
    for (int h = 0; h < NH; h++) {
      std::vector<double> write(C, 0.0);
      if (!m.ablate_mask_[(std::size_t)l * NH + h])
        for (int j = 0; j < HS; j++) {
          double zbar = 0;
          for (int s = 0; s < n; s++) zbar += cs[s] * m.head_out_[(l * cap + s) * QW + (std::size_t)h * HS + j];
          const float* row = &w_out[(std::size_t)(h * HS + j) * C];
          for (int i = 0; i < C; i++) write[i] += zbar * row[i];
        }
      for (int i = 0; i < C; i++) mlp[i] -= write[i];
      push(write);
    }
    if (gpt2) {
      std::vector<double> b(C);
      for (int i = 0; i < C; i++) b[i] = csum * m.blocks_[l].attn_out.bias[i], mlp[i] -= b[i];
      push(b);
    }
    push(mlp);
  }
  // centred (LayerNorm) and scaled by the norm's weight; the norm's beta as the `bias` part
  const BlockWeights& b = m.blocks_[L];
  const int P0 = (int)(x.size() / C);
  for (int a = 0; a < P0; a++) {
    double* v = &x[(std::size_t)a * C];
    double mean = 0;
    if (gpt2) {
      for (int i = 0; i < C; i++) mean += v[i];
      mean /= C;
    }
    for (int i = 0; i < C; i++) v[i] = (v[i] - mean) * b.norm1_weight[i];
  }
  if (has_bias_part(m))
    for (int i = 0; i < C; i++) x.push_back(wsum * (b.norm1_bias.empty() ? 0.0 : b.norm1_bias[i]));
  return x;
}

// Normalized parts (P, C) through one head's columns of attn_in (`column` in units of HS: q heads,
// then k heads, then v heads; the projection's bias goes to the `bias` part), then for q and k
// Qwen3's frozen per-head norm (`qk_norm`: its weight, or null) and the rotation at position p
// (`rotate`): (P, HS)
std::vector<double> project(const Impl& m, int L, const std::vector<double>& parts, const std::vector<float>& w_in,
                            int column, const std::vector<float>* qk_norm, int rotate_at) {
  const ModelConfig& c = m.config_;
  const int C = c.n_embd, HS = c.head_size(), W = c.qkv_width();
  const BlockWeights& b = m.blocks_[L];
  const int P = (int)(parts.size() / C);
  std::vector<double> out((std::size_t)P * HS, 0.0);
  for (int a = 0; a < P; a++) {
    const double* v = &parts[(std::size_t)a * C];
    double* o = &out[(std::size_t)a * HS];
    for (int i = 0; i < C; i++) {
      const float* wrow = &w_in[(std::size_t)i * W + (std::size_t)column * HS];
      for (int j = 0; j < HS; j++) o[j] += v[i] * wrow[j];
    }
  }
  if (has_bias_part(m) && !b.attn_in.bias.empty())
    for (int j = 0; j < HS; j++) out[(std::size_t)(P - 1) * HS + j] += b.attn_in.bias[(std::size_t)column * HS + j];
  if (qk_norm && !qk_norm->empty()) {
    std::vector<double> total(HS, 0.0);
    for (int a = 0; a < P; a++)
      for (int j = 0; j < HS; j++) total[j] += out[(std::size_t)a * HS + j];
    double ss = 0;
    for (double t : total) ss += t * t;
    const double rstd = 1.0 / std::sqrt(ss / HS + c.layer_norm_epsilon);
    for (int a = 0; a < P; a++)
      for (int j = 0; j < HS; j++) out[(std::size_t)a * HS + j] *= rstd * (*qk_norm)[j];
  }
  if (rotate_at >= 0) {
    const int half = HS / 2;
    for (int a = 0; a < P; a++) {
      double* o = &out[(std::size_t)a * HS];
      for (int i = 0; i < half; i++) {
        const double angle = (double)rotate_at * m.rope_inv_freq_[i];
        const double cs = std::cos(angle), sn = std::sin(angle), x0 = o[i], x1 = o[i + half];
        o[i] = x0 * cs - x1 * sn;
        o[i + half] = x1 * cs + x0 * sn;
      }
    }
  }
  return out;
}

std::vector<double> table_of(const std::vector<double>& q, const std::vector<double>& k, int P, int HS) {
  std::vector<double> t((std::size_t)P * P);
  const double scale = 1.0 / std::sqrt((double)HS);
  for (int a = 0; a < P; a++)
    for (int b = 0; b < P; b++) {
      double s = 0;
      for (int j = 0; j < HS; j++) s += q[(std::size_t)a * HS + j] * k[(std::size_t)b * HS + j];
      t[(std::size_t)a * P + b] = s * scale;
    }
  return t;
}

}  // namespace explain_parts

ScoreSplit explain_score(const Model& model, int layer, int head, int query, int key, const ExplainOptions& options) {
  using namespace explain_parts;
  const Impl& m = AnalysisAccess::impl(model);
  m.require_run();
  m.require_activations("explaining a score");
  m.check_layer_head(layer, head);
  const ModelConfig& c = m.config_;
  const int T = m.T_, C = c.n_embd, HS = c.head_size(), NH = c.n_head, KV = c.kv_heads(), W = c.qkv_width();
  const auto position = [&](const char* what, int p) {
    if (p < 0 || p >= T)
      throw Error(std::string(what) + " " + std::to_string(p) + " is outside the run's tokens [0, " +
                  std::to_string(T) + ")");
  };
  position("query", query);
  position("key", key);
  if (key > query)
    throw Error("key " + std::to_string(key) + " comes after query " + std::to_string(query) +
                ": a token attends only to itself and earlier tokens");
  if (options.versus) {
    position("versus", *options.versus);
    if (*options.versus > query)
      throw Error("versus " + std::to_string(*options.versus) + " comes after query " + std::to_string(query));
  }
  if (options.token && (*options.token < 0 || *options.token >= c.vocab_size))
    throw Error("token " + std::to_string(*options.token) + " is outside [0, " + std::to_string(c.vocab_size) + ")");

  const bool llama = c.family == Family::llama;
  const int g = head / c.group_size();
  const BlockWeights& b = m.blocks_[layer];
  std::vector<float> w_in((std::size_t)C * W);
  kernels::unpack_linear(w_in.data(), nullptr, b.attn_in);

  ScoreSplit r;
  r.layer = layer, r.head = head, r.query = query, r.key = key, r.tokens = T;
  r.components = part_names(m, layer);
  if (has_bias_part(m)) r.components.push_back("bias");
  const int P = (int)r.components.size();

  // the forward's own score, from the cache's q and k rows
  const std::size_t cap = m.cap_;
  const float* qkv = &m.qkv_[(std::size_t)layer * cap * W];
  double score = 0;
  for (int j = 0; j < HS; j++)
    score += (double)qkv[(std::size_t)query * W + (std::size_t)head * HS + j] *
             qkv[(std::size_t)key * W + (std::size_t)(NH + g) * HS + j];
  r.score = score / std::sqrt((double)HS);

  const std::vector<float>* qn = c.qk_norm ? &b.q_norm : nullptr;
  const std::vector<float>* kn = c.qk_norm ? &b.k_norm : nullptr;
  const std::vector<double> q =
      project(m, layer, normalized_parts(m, layer, query), w_in, head, qn, llama ? query : -1);
  const auto keys = [&](int s) {
    return project(m, layer, normalized_parts(m, layer, s), w_in, NH + g, kn, llama ? s : -1);
  };
  r.table = table_of(q, keys(key), P, HS);
  std::vector<double> other;
  if (options.versus) {
    r.versus = *options.versus;
    other = table_of(q, keys(*options.versus), P, HS);
  } else if (!llama) {
    // the mean over the keys the query sees: q . mean(k(s')), and without a rotation or a q/k norm
    // (GPT-2) k is linear in the normalized parts, so they are averaged first and projected once
    const std::vector<double> mean =
        weighted_normalized_parts(m, layer, std::vector<double>(query + 1, 1.0 / (query + 1)));
    other = table_of(q, project(m, layer, mean, w_in, NH + g, nullptr, -1), P, HS);
  } else {
    std::vector<double> mean((std::size_t)P * HS, 0.0);
    for (int s = 0; s <= query; s++) {
      const std::vector<double> k = keys(s);
      for (std::size_t i = 0; i < mean.size(); i++) mean[i] += k[i] / (query + 1);
    }
    other = table_of(q, mean, P, HS);
  }
  r.contrast.resize(r.table.size());
  for (std::size_t i = 0; i < r.table.size(); i++) r.contrast[i] = r.table[i] - other[i];

  // the value side: token u's direction through the final norm frozen at the query, pulled back
  // through W_O^h: proj_u(v W_O^h) = v . gvec
  const float* xf = &m.residual_[((std::size_t)c.n_layer * cap + query) * C];
  const Frozen final_norm(xf, C, !llama, c.layer_norm_epsilon);
  if (options.token)
    r.token = *options.token;
  else if (query == T - 1)  // the run's own prediction
    r.token = (int32_t)(std::max_element(m.logits_last_.begin(), m.logits_last_.end()) - m.logits_last_.begin());
  else {  // the most likely next token at the query: the final norm and the unembedding, in double
    std::vector<double> x(xf, xf + C);
    final_norm.apply(x.data(), C);
    for (int i = 0; i < C; i++)
      x[i] = x[i] * m.final_norm_weight_[i] + (m.final_norm_bias_.empty() ? 0.0 : m.final_norm_bias_[i]);
    double best = -INFINITY;
    std::vector<float> row(C);  // one buffer for every vocabulary row (128,256 of them for Llama 3's)
    for (int u = 0; u < c.vocab_size; u++) {
      unembedding_into(m, u, row.data());
      double s = 0;
      for (int i = 0; i < C; i++) s += x[i] * row[i];
      if (s > best) best = s, r.token = u;
    }
  }
  const std::vector<double> U = unembedding(m, r.token);
  std::vector<float> w_out((std::size_t)c.q_width() * C);
  kernels::unpack_linear(w_out.data(), nullptr, b.attn_out);
  std::vector<double> gvec(HS, 0.0);
  for (int j = 0; j < HS; j++) {
    const float* row = &w_out[(std::size_t)(head * HS + j) * C];
    double mean = 0;
    if (!llama) {
      for (int i = 0; i < C; i++) mean += row[i];
      mean /= C;
    }
    for (int i = 0; i < C; i++) gvec[j] += (row[i] - mean) * m.final_norm_weight_[i] * U[i];
    gvec[j] *= final_norm.rstd;
  }
  std::vector<float> att_row(cap);  // the query's row of the map (kept, or recomputed)
  m.map_rows(layer, head, query, query + 1, att_row.data());
  const float* att = att_row.data();
  r.value_by_token.assign(T, 0.0);
  r.value_by_part.assign(P, 0.0);
  // v_b(s) . gvec = n_b(s) . (W_V gvec) (+ b_V . gvec for the bias part): one C-vector for every s
  std::vector<double> wg(C, 0.0);
  const std::size_t vcol = (std::size_t)(NH + KV + g) * HS;
  for (int i = 0; i < C; i++)
    for (int j = 0; j < HS; j++) wg[i] += (double)w_in[(std::size_t)i * W + vcol + j] * gvec[j];
  double bias_g = 0;
  if (has_bias_part(m) && !b.attn_in.bias.empty())
    for (int j = 0; j < HS; j++) bias_g += b.attn_in.bias[vcol + j] * gvec[j];
  const bool off = m.ablate_mask_[(std::size_t)layer * NH + head];  // a switched-off head writes nothing
  if (!off) {
    // by part: the parts summed with the attention weights first (linear, see weighted_normalized_parts)
    const std::vector<double> n = weighted_normalized_parts(m, layer, std::vector<double>(att, att + query + 1));
    double asum = 0;
    for (int s = 0; s <= query; s++) asum += att[s];
    for (int a = 0; a < P; a++) {
      double d = a == P - 1 && has_bias_part(m) ? asum * bias_g : 0.0;
      for (int i = 0; i < C; i++) d += n[(std::size_t)a * C + i] * wg[i];
      r.value_by_part[a] = d;
    }
    // by token: the whole normalized stream at s, all parts at once
    for (int s = 0; s <= query; s++) {
      const float* x = &m.residual_[((std::size_t)layer * cap + s) * C];
      std::vector<double> v(x, x + C);
      Frozen(x, C, !llama, c.layer_norm_epsilon).apply(v.data(), C);
      double d = has_bias_part(m) ? bias_g : 0.0;
      for (int i = 0; i < C; i++)
        d += (v[i] * b.norm1_weight[i] + (b.norm1_bias.empty() ? 0.0 : b.norm1_bias[i])) * wg[i];
      r.value_by_token[s] = att[s] * d;
    }
  }
  for (double x : r.value_by_token) r.value_total += x;
  return r;
}

}  // namespace headscope
