// Which heads work together, from the weights alone: composition scores between every pair of heads
// and each head's copying score (definitions in headscope/explain.hpp).
//
// Composition without forming any d x d matrix: with P = diag(gamma) W_V and R = W_O^h (OV = P R),
// Q = diag(gamma) W_Q and K = diag(gamma) W_K (QK = Q K^T), and F = sqrt(G) any factor of a Gram
// matrix G = X^T X (here from its eigendecomposition, which also takes a singular one), |P M|_F =
// |F_P^T M|_F and |M K^T|_F = |M F_K|_F. So |OV^A QK^B|_F = |R'_A Q'_B|_F with R'_A = F_PA^T R_A
// (HS x d) and Q'_B = Q_B F_KB (d x HS); K: Q'_B -> K_B F_QB; V: -> P_B F_RB with F_RB from R_B R_B^T;
// and each norm alone is |R'_A|_F, |Q'_B|_F, ... One (NH HS) x d by d x (#B HS) product per layer
// and side then gives every pair's HS x HS block.
#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "../kernels/kernels.hpp"
#include "../kernels/parallel.hpp"
#include "../model/model_impl.hpp"
#include "analysis_access.hpp"
#include "headscope/explain.hpp"

namespace headscope {

namespace circuit_parts {  // named: the unity build batches this file with others

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// F with F F^T = G, G symmetric positive semidefinite
Mat gram_factor(const Mat& G) {
  Eigen::SelfAdjointEigenSolver<Mat> es(G);
  const Eigen::VectorXd d = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return es.eigenvectors() * d.asDiagonal();
}

// Each head's factors: R' = F_P^T R (HS x C) and the three right factors (C x HS) Q', K', V'
struct HeadFactors {
  Mat r, q, k, v;
};

HeadFactors factors(const Mat& P, const Mat& R, const Mat& Q, const Mat& K) {
  HeadFactors f;
  f.r = gram_factor(P.transpose() * P).transpose() * R;
  f.q = Q * gram_factor(K.transpose() * K);
  f.k = K * gram_factor(Q.transpose() * Q);
  f.v = P * gram_factor(R * R.transpose());
  return f;
}

double comp(const Mat& r, const Mat& y) { return (r * y).norm() / (r.norm() * y.norm()); }

// Standard normal numbers from a seeded Mersenne twister by Box-Muller (the same numbers on every
// platform, unlike std::normal_distribution)
struct Gauss {
  std::mt19937 gen;
  explicit Gauss(uint32_t seed) : gen(seed) {}
  double uniform() { return ((double)gen() + 0.5) / 4294967296.0; }
  double operator()() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
  Mat matrix(int rows, int cols) {
    Mat m(rows, cols);
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < cols; j++) m(i, j) = (*this)();
    return m;
  }
};

}  // namespace circuit_parts

Circuits circuits(const Model& model, int seeds) {
  using namespace circuit_parts;
  const AnalysisAccess::Impl& m = AnalysisAccess::impl(model);
  kernels::PoolScope threads(m.pool_.get());
  const ModelConfig& c = m.config_;
  const int L = c.n_layer, NH = c.n_head, KV = c.kv_heads(), HS = c.head_size(), C = c.n_embd, V = c.vocab_size;
  const int W = c.qkv_width(), QW = c.q_width(), N = L * NH;
  Circuits out;
  out.n_layer = L, out.n_head = NH, out.seeds = seeds;

  // every head's weights with its input norm's weight folded in
  std::vector<HeadFactors> f(N);
  std::vector<Mat> P(N), R(N);  // for the copying score
  std::vector<float> w_in((std::size_t)C * W), w_out((std::size_t)QW * C);
  for (int l = 0; l < L; l++) {
    const BlockWeights& b = m.blocks_[l];
    kernels::unpack_linear(w_in.data(), nullptr, b.attn_in);
    kernels::unpack_linear(w_out.data(), nullptr, b.attn_out);
    for (int h = 0; h < NH; h++) {
      const int g = h / c.group_size();
      Mat Pm(C, HS), Rm(HS, C), Qm(C, HS), Km(C, HS);
      for (int i = 0; i < C; i++)
        for (int j = 0; j < HS; j++) {
          const float* row = &w_in[(std::size_t)i * W];
          const double gamma = b.norm1_weight[i];
          Qm(i, j) = gamma * row[h * HS + j];
          Km(i, j) = gamma * row[(NH + g) * HS + j];
          Pm(i, j) = gamma * row[(NH + KV + g) * HS + j];
        }
      for (int j = 0; j < HS; j++)
        for (int i = 0; i < C; i++) Rm(j, i) = w_out[(std::size_t)(h * HS + j) * C + i];
      f[l * NH + h] = factors(Pm, Rm, Qm, Km);
      P[l * NH + h] = std::move(Pm);
      R[l * NH + h] = std::move(Rm);
    }
  }

  // composition: for each earlier head A, one product against every later head's stacked factors
  const double nan = std::nan("");
  for (std::vector<double>* s : {&out.q, &out.k, &out.v}) s->assign((std::size_t)N * N, nan);
  // each layer's R' rows against every later head's right factors: one float32 product per layer
  // and side by the kernels (threaded, SIMD), each pair's (HS, HS) block then summed in double
  std::vector<float> rows_a((std::size_t)NH * HS * C), prod;
  std::vector<double> r_norm(N);
  for (int i = 0; i < N; i++) r_norm[i] = f[i].r.norm();
  for (int la = 0; la + 1 < L; la++) {
    const int first_b = (la + 1) * NH, nb = N - first_b;
    for (int ha = 0; ha < NH; ha++)
      for (int j = 0; j < HS; j++)
        for (int i = 0; i < C; i++) rows_a[((std::size_t)ha * HS + j) * C + i] = (float)f[la * NH + ha].r(j, i);
    std::vector<float> rows_b((std::size_t)C * nb * HS);  // (C, nb HS): row i holds every B's factor row i
    prod.resize((std::size_t)NH * HS * nb * HS);
    for (const auto& [side, dst] : {std::pair{0, &out.q}, std::pair{1, &out.k}, std::pair{2, &out.v}}) {
      std::vector<double> norms(nb);
      for (int b = 0; b < nb; b++) {
        const HeadFactors& fb = f[first_b + b];
        const Mat& y = side == 0 ? fb.q : side == 1 ? fb.k : fb.v;  // (C, HS)
        norms[b] = y.norm();
        for (int i = 0; i < C; i++)
          for (int j = 0; j < HS; j++) rows_b[(std::size_t)i * nb * HS + (std::size_t)b * HS + j] = (float)y(i, j);
      }
      // (NH HS, C) @ (C, nb HS): the kernels' packed product (register tiles over rows and columns)
      kernels::matmul_forward(prod.data(), rows_a.data(), kernels::pack_linear(rows_b.data(), nullptr, C, nb * HS),
                              NH * HS);
      for (int ha = 0; ha < NH; ha++)
        for (int b = 0; b < nb; b++) {
          double ss = 0;
          for (int j = 0; j < HS; j++) {
            const float* p = &prod[((std::size_t)ha * HS + j) * nb * HS + (std::size_t)b * HS];
            for (int jj = 0; jj < HS; jj++) ss += (double)p[jj] * p[jj];
          }
          (*dst)[(std::size_t)(la * NH + ha) * N + first_b + b] = std::sqrt(ss) / (r_norm[la * NH + ha] * norms[b]);
        }
    }
  }

  // the baseline: the same scores for random Gaussian factors of the same shapes
  for (int s = 0; s < seeds; s++) {
    Gauss gauss((uint32_t)s);
    const Mat g1 = gauss.matrix(C, HS), g2 = gauss.matrix(HS, C), g3 = gauss.matrix(C, HS), g4 = gauss.matrix(C, HS);
    const Mat g5 = gauss.matrix(C, HS), g6 = gauss.matrix(HS, C);
    const HeadFactors a = factors(g1, g2, g3, g4), b = factors(g5, g6, g3, g4);
    out.baseline_q += comp(a.r, a.q) / seeds;
    out.baseline_k += comp(a.r, a.k) / seeds;
    out.baseline_v += comp(a.r, b.v) / seeds;
  }

  // copying: U E (d x d) once, by the kernels' packed product over chunks of the vocabulary (the
  // unembedding's chunk transposed to (d, n), the embedding's chunk as it is, (n, d))
  const bool untied = !m.lm_head_.empty() || !m.lm_head_f16_.empty();
  const auto row_of = [&](bool unembed, int u, float* dst) {
    const std::vector<float>& f32 = unembed && untied ? m.lm_head_ : m.wte_;
    const std::vector<uint16_t>& f16 = unembed && untied ? m.lm_head_f16_ : m.wte_f16_;
    if (f16.empty())
      std::copy_n(&f32[(std::size_t)u * C], C, dst);
    else
      kernels::f16_unpack_forward(dst, &f16[(std::size_t)u * C], C);
  };
  constexpr int kChunk = 2048;
  Mat ue = Mat::Zero(C, C);
  std::vector<float> ut((std::size_t)C * kChunk), et((std::size_t)C * kChunk), row(C), part((std::size_t)C * C);
  for (int v0 = 0; v0 < V; v0 += kChunk) {
    const int n = std::min(kChunk, V - v0);
    for (int v = 0; v < n; v++) {
      row_of(true, v0 + v, row.data());
      for (int i = 0; i < C; i++) ut[(std::size_t)i * n + v] = row[i];
      row_of(false, v0 + v, &et[(std::size_t)v * C]);
    }
    kernels::matmul_forward(part.data(), ut.data(), kernels::pack_linear(et.data(), nullptr, n, C),
                            C);  // (C, n) @ (n, C)
    for (int i = 0; i < C; i++)
      for (int j = 0; j < C; j++) ue(i, j) += part[(std::size_t)i * C + j];
  }
  // W_O^h diag(gamma_f) U E for every head at once (float32 products), then each head's (HS, HS) in double
  std::vector<float> gue((std::size_t)C * C), rows_r((std::size_t)N * HS * C), rg((std::size_t)N * HS * C);
  for (int i = 0; i < C; i++)
    for (int j = 0; j < C; j++) gue[(std::size_t)i * C + j] = (float)(ue(i, j) * m.final_norm_weight_[i]);
  for (int h = 0; h < N; h++)
    for (int j = 0; j < HS; j++)
      for (int i = 0; i < C; i++) rows_r[((std::size_t)h * HS + j) * C + i] = (float)R[h](j, i);
  kernels::matmul_forward(rg.data(), rows_r.data(), kernels::pack_linear(gue.data(), nullptr, C, C), N * HS);
  out.copying.resize(N);
  for (int h = 0; h < N; h++) {
    Mat M = Mat::Zero(HS, HS);
    for (int j = 0; j < HS; j++)
      for (int i = 0; i < C; i++) {
        const double x = rg[((std::size_t)h * HS + j) * C + i];
        for (int jj = 0; jj < HS; jj++) M(j, jj) += x * P[h](i, jj);
      }
    const Eigen::VectorXcd ev = Eigen::EigenSolver<Mat>(M, false).eigenvalues();
    double re = 0, abs = 0;
    for (const auto& z : ev) re += z.real(), abs += std::abs(z);
    out.copying[h] = abs > 0 ? re / abs : 0.0;
  }
  return out;
}

}  // namespace headscope
