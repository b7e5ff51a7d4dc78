// Training kernels, two ways:
//  1. each xsimd kernel (kernels/kernels.hpp) against its scalar reference (kernels/reference.hpp) over edge sizes;
//  2. each scalar reference, instantiated in double, against central finite differences of the
//     matching double forward, on small shapes.
// Every check states its tolerance and why.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "headscope/train.hpp"
#include "kernels/kernels.hpp"
#include "kernels/reference.hpp"
#include "backward_checks.hpp"

namespace tr = headscope::train;
namespace ref = headscope::kernels::ref;
namespace kn = headscope::kernels;
using namespace backward_checks;

namespace {

// The reference attention runs one sequence; a training batch is B of them (att (B, NH, T, T))
template <typename F>
void attention_forward_batch(F* out, F* att, const F* qkv, int B, int T, int C, int NH) {
  for (int b = 0; b < B; b++)
    ref::attention_forward<F>(out + (std::size_t)b * T * C, att + (std::size_t)b * NH * T * T,
                              qkv + (std::size_t)b * T * 3 * C, 0, T, C, NH, T);
}

std::vector<int> random_ids(std::size_t n, int V, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, V - 1);
  std::vector<int> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace

// =====================================================================================================
// 1. xsimd kernels against the scalar references (float)
// =====================================================================================================

TEST_CASE("train: matmul_forward and matmul_backward equal the reference", "[train][matmul]") {
  std::mt19937 rng(11);
  for (int N : {1, 2, 3, 4, 5, 9})
    for (int K : kBackwardSizes)
      for (int OC : {1, 3, 4, 5, 8, 9, 16, 17, 33}) {
        INFO("N=" << N << " K=" << K << " OC=" << OC);
        const auto inp = random_values(N * K, rng), w = random_values(K * OC, rng), b = random_values(OC, rng),
                   dout = random_values(N * OC, rng);
        std::vector<float> out(N * OC), out_ref(N * OC);
        kn::matmul_unpacked_forward(out.data(), inp.data(), w.data(), b.data(), N, K, OC);
        ref::matmul_forward<float>(out_ref.data(), inp.data(), w.data(), b.data(), N, K, OC);
        // each output is K products plus the bias
        require_close(out, out_ref, [&](std::size_t i) {
          double s = std::fabs(b[i % OC]);
          for (int k = 0; k < K; k++) s += std::fabs(inp[(i / OC) * K + k] * w[k * OC + i % OC]);
          return sum_bound(K + 1, s);
        }, "out");
        // gradients accumulate into non-zero starting values, as in the trainer
        auto dinp = random_values(N * K, rng), dw = random_values(K * OC, rng), db = random_values(OC, rng);
        auto dinp_ref = dinp, dw_ref = dw, db_ref = db;
        kn::matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, K, OC);
        ref::matmul_backward<float>(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), inp.data(), w.data(),
                                    N, K, OC);
        // dinp: OC products + the starting value; dweight: N products + start; dbias: N terms + start
        require_close(dinp, dinp_ref, [&](std::size_t i) {
          double s = std::fabs(dinp_ref[i]);
          for (int o = 0; o < OC; o++) s += std::fabs(dout[(i / K) * OC + o] * w[(i % K) * OC + o]);
          return sum_bound(OC + 1, s) + 2 * kU * s;
        }, "dinp");
        require_close(dw, dw_ref, [&](std::size_t i) {
          double s = std::fabs(dw_ref[i]);
          for (int t = 0; t < N; t++) s += std::fabs(inp[t * K + i / OC] * dout[t * OC + i % OC]);
          return sum_bound(N + 1, s) + 2 * kU * s;
        }, "dweight");
        require_close(db, db_ref, [&](std::size_t i) {
          double s = std::fabs(db_ref[i]);
          for (int t = 0; t < N; t++) s += std::fabs(dout[t * OC + i]);
          return sum_bound(N + 1, s) + 2 * kU * s;
        }, "dbias");
        // no weight or bias gradient asked (the head gates' backward): the same dinp, nothing else touched
        const auto start = random_values(N * K, rng);
        auto with_w = start, alone = start, dw2 = dw_ref;
        kn::matmul_backward(with_w.data(), dw2.data(), nullptr, dout.data(), inp.data(), w.data(), N, K, OC);
        kn::matmul_backward(alone.data(), nullptr, nullptr, dout.data(), inp.data(), w.data(), N, K, OC);
        REQUIRE(with_w == alone);
      }
}

TEST_CASE("train: matmul_transposed_backward (tied LM head) equals the reference", "[train][matmul]") {
  std::mt19937 rng(12);
  for (int N : {1, 3, 5, 9})
    for (int K : kBackwardSizes)
      for (int OC : {1, 4, 7, 17, 33}) {
        INFO("N=" << N << " K=" << K << " OC=" << OC);
        const auto inp = random_values(N * K, rng), w = random_values(OC * K, rng), dout = random_values(N * OC, rng);
        auto dinp = random_values(N * K, rng), dw = random_values(OC * K, rng);
        auto dinp_ref = dinp, dw_ref = dw;
        kn::matmul_transposed_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), N, K, OC);
        ref::matmul_transposed_backward<float>(dinp_ref.data(), dw_ref.data(), dout.data(), inp.data(), w.data(), N, K,
                                               OC);
        require_close(dinp, dinp_ref, [&](std::size_t i) {
          double s = std::fabs(dinp_ref[i]);
          for (int o = 0; o < OC; o++) s += std::fabs(dout[(i / K) * OC + o] * w[o * K + i % K]);
          return sum_bound(OC + 1, s) + 2 * kU * s;
        }, "dinp");
        require_close(dw, dw_ref, [&](std::size_t i) {
          double s = std::fabs(dw_ref[i]);
          for (int t = 0; t < N; t++) s += std::fabs(dout[t * OC + i / K] * inp[t * K + i % K]);
          return sum_bound(N + 1, s) + 2 * kU * s;
        }, "dweight");
        // without the weight's gradient: the same dinp
        const auto start = random_values(N * K, rng);
        auto with_w = start, alone = start;
        kn::matmul_transposed_backward(with_w.data(), dw.data(), dout.data(), inp.data(), w.data(), N, K, OC);
        kn::matmul_transposed_backward(alone.data(), nullptr, dout.data(), inp.data(), w.data(), N, K, OC);
        REQUIRE(with_w == alone);
      }
}

TEST_CASE("train: layernorm_backward equals the reference", "[train][layernorm]") {
  std::mt19937 rng(13);
  for (int N : {1, 2, 5})
    for (int C : kBackwardSizes) {
      INFO("N=" << N << " C=" << C);
      const auto inp = random_values(N * C, rng, 2.0), w = random_values(C, rng), b = random_values(C, rng),
                 dout = random_values(N * C, rng);
      std::vector<float> out(N * C), mean(N), rstd(N);
      ref::layernorm_forward<float>(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C, 1e-5f);
      auto dinp = random_values(N * C, rng), dw = random_values(C, rng), db = random_values(C, rng);
      auto dinp_ref = dinp, dw_ref = dw, db_ref = db;
      kn::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                             rstd.data(), N, C);
      ref::layernorm_backward<float>(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), inp.data(), w.data(),
                                     mean.data(), rstd.data(), N, C);
      // dinp = (dnorm - mean(dnorm) - norm mean(dnorm norm)) rstd: the two means are sums of C terms
      // (|norm| <= sqrt(C)), so each differs by sum_bound(C, sum|dnorm| sqrt(C)); times rstd, plus the
      // starting value's rounding.
      double sum_abs_dnorm = 0;
      for (int i = 0; i < N * C; i++) sum_abs_dnorm = std::max(sum_abs_dnorm, (double)std::fabs(w[i % C] * dout[i]));
      require_close(dinp, dinp_ref, [&](std::size_t i) {
        const double s = C * sum_abs_dnorm * (1.0 + std::sqrt((double)C));
        return (sum_bound(C, s) / C + 8 * kU * (sum_abs_dnorm * (1 + std::sqrt((double)C)))) * rstd[i / C] +
               4 * kU * std::fabs(dinp_ref[i]) + 1e-6;
      }, "dinp");
      // dweight, dbias: N terms each, norm recomputed identically up to an ulp or two
      require_close(dw, dw_ref, [&](std::size_t i) {
        double s = std::fabs(dw_ref[i]);
        for (int t = 0; t < N; t++) s += std::fabs(dout[t * C + i]) * std::sqrt((double)C);
        return sum_bound(N + 1, s) + 8 * kU * s;
      }, "dweight");
      require_close(db, db_ref, [&](std::size_t i) {
        double s = std::fabs(db_ref[i]);
        for (int t = 0; t < N; t++) s += std::fabs(dout[t * C + i]);
        return sum_bound(N + 1, s);
      }, "dbias");
    }
}

TEST_CASE("train: attention_backward equals the reference over head sizes and lengths", "[train][attention]") {
  std::mt19937 rng(14);
  for (int NH : {1, 2, 3})
    for (int HS : {1, 3, 4, 5, 8, 9, 16, 17})
      for (int T : {1, 2, 5, 9}) {
        const int B = 2, C = NH * HS;
        INFO("NH=" << NH << " HS=" << HS << " T=" << T);
        const auto qkv = random_values(B * T * 3 * C, rng), dout = random_values(B * T * C, rng);
        std::vector<float> out(B * T * C), att(B * NH * T * T), scratch(T);
        attention_forward_batch<float>(out.data(), att.data(), qkv.data(), B, T, C, NH);
        auto dqkv = random_values(B * T * 3 * C, rng);
        auto dqkv_ref = dqkv;
        kn::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
        ref::attention_backward<float>(dqkv_ref.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                                       NH);
        // Every gradient element is a sum over at most T rows of terms built from HS-long dot products
        // and a T-long softmax sum; with |q|,|k|,|v|,|dout| ~ N(0,1) the terms are at most ~HS in size.
        // Bound: sum_bound(T * (HS + T), T * HS * (max|.|)^2) with max|.| <= 6 for these draws.
        const double m = 6.0;
        const double tol = sum_bound(T * (HS + T + 2), T * (HS + T) * m * m * m) + 1e-6;
        require_close(dqkv, dqkv_ref, [&](std::size_t i) { return tol + 4 * kU * std::fabs(dqkv_ref[i]); }, "dqkv");
      }
}

TEST_CASE("train: element-wise backward kernels and optimizers equal the reference", "[train][elementwise]") {
  std::mt19937 rng(15);
  for (int n : kBackwardSizes) {
    INFO("n=" << n);
    const auto x = random_values(n, rng, 3.0), dout = random_values(n, rng);
    auto dinp = random_values(n, rng);
    auto dinp_ref = dinp;
    kn::gelu_backward(dinp.data(), x.data(), dout.data(), n);
    ref::gelu_backward<float>(dinp_ref.data(), x.data(), dout.data(), n);
    // gelu'(x) is at most 1.13 in size; xsimd's tanh is within a few ulp of std::tanh and the
    // derivative formula has ~10 roundings: 32 u of (|gelu'| |dout| + |start|)
    require_close(dinp, dinp_ref, [&](std::size_t i) {
      return 32 * kU * (1.2 * std::fabs(dout[i]) * (1 + x[i] * x[i]) + std::fabs(dinp_ref[i])) + 1e-7;
    }, "gelu dinp");

    auto dinp_erf = random_values(n, rng);
    auto dinp_erf_ref = dinp_erf;
    kn::gelu_erf_backward(dinp_erf.data(), x.data(), dout.data(), n);
    ref::gelu_erf_backward<float>(dinp_erf_ref.data(), x.data(), dout.data(), n);
    // Phi(x) + x phi(x) is at most 1.13 in size; xsimd's erf and exp are within a few ulp of std's,
    // with ~8 roundings in the formula: the same bound as the tanh form's
    require_close(dinp_erf, dinp_erf_ref, [&](std::size_t i) {
      return 32 * kU * (1.2 * std::fabs(dout[i]) * (1 + x[i] * x[i]) + std::fabs(dinp_erf_ref[i])) + 1e-7;
    }, "gelu_erf dinp");

    auto da = random_values(n, rng), db = random_values(n, rng);
    auto da_ref = da, db_ref = db;
    kn::residual_backward(da.data(), db.data(), dout.data(), n);
    ref::residual_backward<float>(da_ref.data(), db_ref.data(), dout.data(), n);
    // one addition each, in the same order: identical
    require_close(da, da_ref, [](std::size_t) { return 0.0; }, "residual da");
    require_close(db, db_ref, [](std::size_t) { return 0.0; }, "residual db");

    // SGD: one fused-or-not multiply-add: within one rounding of the product
    auto p = random_values(n, rng), g = random_values(n, rng);
    auto p_ref = p;
    kn::sgd_update(p.data(), g.data(), n, 0.1f);
    ref::sgd_update<float>(p_ref.data(), g.data(), n, 0.1f);
    require_close(p, p_ref, [&](std::size_t i) { return 2 * kU * (0.1 * std::fabs(g[i]) + std::fabs(p_ref[i])); },
                  "sgd");

    // AdamW over three steps: the update lr * m / (sqrt v + eps) has ~12 roundings per step;
    // its size is at most lr * ~3, and the parameter keeps its own rounding: 64 u (3 lr + |p|)
    auto m = random_values(n, rng, 0.1), v = random_values(n, rng, 0.1);
    for (auto& vi : v) vi = vi * vi;
    auto m_ref = m, v_ref = v, p2 = p, p2_ref = p;
    for (int t = 1; t <= 3; t++) {
      kn::adamw_update(p2.data(), m.data(), v.data(), g.data(), n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, t);
      ref::adamw_update<float>(p2_ref.data(), m_ref.data(), v_ref.data(), g.data(), n, 1e-2f, 0.9f, 0.999f, 1e-8f,
                               0.1f, t);
    }
    require_close(p2, p2_ref, [&](std::size_t i) { return 64 * kU * (3 * 1e-2 + std::fabs(p2_ref[i])); }, "adamw p");
    require_close(m, m_ref, [&](std::size_t i) { return 16 * kU * (std::fabs(m_ref[i]) + std::fabs(g[i])); },
                  "adamw m");
    require_close(v, v_ref, [&](std::size_t i) { return 16 * kU * (std::fabs(v_ref[i]) + g[i] * g[i]); }, "adamw v");
  }
}

TEST_CASE("train: encoder and cross-entropy backward equal the reference", "[train][elementwise]") {
  std::mt19937 rng(16);
  for (int C : kBackwardSizes) {
    const int B = 2, T = 5, V = C + 2;
    INFO("C=" << C);
    const auto ids = random_ids(B * T, V, rng);
    const auto dout = random_values(B * T * C, rng);
    auto dwte = random_values(V * C, rng), dwpe = random_values(T * C, rng);
    auto dwte_ref = dwte, dwpe_ref = dwpe;
    kn::encoder_backward(dwte.data(), dwpe.data(), dout.data(), ids.data(), B, T, C);
    ref::encoder_backward<float>(dwte_ref.data(), dwpe_ref.data(), dout.data(), ids.data(), B, T, C);
    // the same additions in the same order: identical
    require_close(dwte, dwte_ref, [](std::size_t) { return 0.0; }, "dwte");
    require_close(dwpe, dwpe_ref, [](std::size_t) { return 0.0; }, "dwpe");

    const auto logits = random_values(B * T * V, rng, 2.0);
    std::vector<float> probs(B * T * V), losses(B * T);
    ref::crossentropy_forward<float>(losses.data(), probs.data(), logits.data(), ids.data(), B * T, V);
    std::vector<float> probs_simd(B * T * V), losses_simd(B * T);
    kn::crossentropy_forward(losses_simd.data(), probs_simd.data(), logits.data(), ids.data(), B * T, V);
    // the kernel's exp is a polynomial within 3.2e-7 relative of std::exp (test_kernels.cpp), plus the
    // sum's V roundings: probabilities within 1e-6 relative; the loss is log(sum) + max - l[target],
    // with |log sum| <= log V + 12 for these logits: 1e-6 absolute covers the polynomial and the log
    require_close(probs_simd, probs, [&](std::size_t i) { return 1e-6 * probs[i] + sum_bound(V, 1.0) + 1e-30; }, "probs");
    require_close(losses_simd, losses, [&](std::size_t i) { return 1e-6 * (1 + std::fabs(losses[i])); }, "losses");
    auto dl = random_values(B * T * V, rng);
    auto dl_ref = dl;
    kn::crossentropy_backward(dl.data(), probs.data(), ids.data(), 0.1f, B * T, V);
    ref::crossentropy_backward<float>(dl_ref.data(), probs.data(), ids.data(), 0.1f, B * T, V);
    // (p - y) dloss + start: p dloss + start rounded (maybe fused), then - dloss: 3 roundings
    require_close(dl, dl_ref, [&](std::size_t i) { return 4 * kU * (std::fabs(dl_ref[i]) + 0.2); }, "dlogits");
  }
}

// =====================================================================================================
// 2. double-precision references against central finite differences
// =====================================================================================================

TEST_CASE("train: reference gradients equal finite differences (double)", "[train][fd]") {
  std::mt19937 rng(21);

  SECTION("matmul (Conv1D)") {
    const int N = 3, K = 5, OC = 4;
    auto inp = random_values<double>(N * K, rng), w = random_values<double>(K * OC, rng),
         b = random_values<double>(OC, rng);
    const auto g = random_values<double>(N * OC, rng);
    std::vector<double> out(N * OC), dinp(N * K, 0), dw(K * OC, 0), db(OC, 0);
    ref::matmul_backward<double>(dinp.data(), dw.data(), db.data(), g.data(), inp.data(), w.data(), N, K, OC);
    auto f = [&] {
      ref::matmul_forward<double>(out.data(), inp.data(), w.data(), b.data(), N, K, OC);
      return weighted_sum(out, g);
    };
    check_fd(inp, dinp, f, "dinp");
    check_fd(w, dw, f, "dweight");
    check_fd(b, db, f, "dbias");
  }
  SECTION("tied LM head (matmul with weight transposed)") {
    const int N = 3, K = 5, OC = 7;
    auto inp = random_values<double>(N * K, rng), w = random_values<double>(OC * K, rng);
    const auto g = random_values<double>(N * OC, rng);
    std::vector<double> out(N * OC), dinp(N * K, 0), dw(OC * K, 0);
    ref::matmul_transposed_backward<double>(dinp.data(), dw.data(), g.data(), inp.data(), w.data(), N, K, OC);
    auto f = [&] {
      ref::matmul_transposed_forward<double>(out.data(), inp.data(), w.data(), N, K, OC);
      return weighted_sum(out, g);
    };
    check_fd(inp, dinp, f, "dinp");
    check_fd(w, dw, f, "dweight");
  }
  SECTION("layernorm") {
    const int N = 3, C = 7;
    auto inp = random_values<double>(N * C, rng), w = random_values<double>(C, rng), b = random_values<double>(C, rng);
    const auto g = random_values<double>(N * C, rng);
    std::vector<double> out(N * C), mean(N), rstd(N), dinp(N * C, 0), dw(C, 0), db(C, 0);
    ref::layernorm_forward<double>(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C, 1e-5);
    ref::layernorm_backward<double>(dinp.data(), dw.data(), db.data(), g.data(), inp.data(), w.data(), mean.data(),
                                    rstd.data(), N, C);
    auto f = [&] {
      ref::layernorm_forward<double>(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C, 1e-5);
      return weighted_sum(out, g);
    };
    check_fd(inp, dinp, f, "dinp");
    check_fd(w, dw, f, "dweight");
    check_fd(b, db, f, "dbias");
  }
  SECTION("causal multi-head attention with softmax") {
    const int B = 2, T = 4, NH = 2, HS = 3, C = NH * HS;
    auto qkv = random_values<double>(B * T * 3 * C, rng);
    const auto g = random_values<double>(B * T * C, rng);
    std::vector<double> out(B * T * C), att(B * NH * T * T), dqkv(B * T * 3 * C, 0), scratch(T);
    attention_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, C, NH);
    ref::attention_backward<double>(dqkv.data(), scratch.data(), g.data(), qkv.data(), att.data(), B, T, C, NH);
    auto f = [&] {
      attention_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, C, NH);
      return weighted_sum(out, g);
    };
    check_fd(qkv, dqkv, f, "dqkv");
  }
  SECTION("gelu (tanh)") {
    auto x = random_values<double>(40, rng, 3.0);
    const auto g = random_values<double>(40, rng);
    std::vector<double> out(40), dx(40, 0);
    ref::gelu_backward<double>(dx.data(), x.data(), g.data(), 40);
    auto f = [&] {
      ref::gelu_forward<double>(out.data(), x.data(), 40);
      return weighted_sum(out, g);
    };
    check_fd(x, dx, f, "dinp");
  }
  SECTION("gelu (erf)") {
    auto x = random_values<double>(40, rng, 3.0);
    const auto g = random_values<double>(40, rng);
    std::vector<double> out(40), dx(40, 0);
    ref::gelu_erf_backward<double>(dx.data(), x.data(), g.data(), 40);
    auto f = [&] {
      ref::gelu_erf_forward<double>(out.data(), x.data(), 40);
      return weighted_sum(out, g);
    };
    check_fd(x, dx, f, "dinp");
  }
  SECTION("embeddings, residual and mean cross-entropy") {
    const int B = 2, T = 3, C = 4, V = 6;
    auto wte = random_values<double>(V * C, rng), wpe = random_values<double>(T * C, rng);
    const auto ids = random_ids(B * T, V, rng), targets = random_ids(B * T, V, rng);
    const auto g = random_values<double>(B * T * C, rng);
    // loss = mean CE(enc @ wte^T + enc . g-projection) exercises encoder, residual and cross-entropy:
    //   enc = wte[ids] + wpe;  r = enc + enc (residual of a tensor with itself); logits = r @ wte^T
    std::vector<double> enc(B * T * C), r(B * T * C), logits(B * T * V), probs(B * T * V), losses(B * T);
    auto f = [&] {
      ref::encoder_forward<double>(enc.data(), ids.data(), wte.data(), wpe.data(), B, T, C);
      for (int i = 0; i < B * T * C; i++) r[i] = enc[i] + enc[i];
      ref::matmul_transposed_forward<double>(logits.data(), r.data(), wte.data(), B * T, C, V);
      ref::crossentropy_forward<double>(losses.data(), probs.data(), logits.data(), targets.data(), B * T, V);
      double s = 0;
      for (double l : losses) s += l;
      return s / (B * T) + weighted_sum(enc, g);
    };
    f();
    std::vector<double> dlogits(B * T * V, 0), dr(B * T * C, 0), denc(g), dwte(V * C, 0), dwpe(T * C, 0);
    ref::crossentropy_backward<double>(dlogits.data(), probs.data(), targets.data(), 1.0 / (B * T), B * T, V);
    ref::matmul_transposed_backward<double>(dr.data(), dwte.data(), dlogits.data(), r.data(), wte.data(), B * T, C, V);
    ref::residual_backward<double>(denc.data(), denc.data(), dr.data(), B * T * C);
    ref::encoder_backward<double>(dwte.data(), dwpe.data(), denc.data(), ids.data(), B, T, C);
    check_fd(wte, dwte, f, "dwte");
    check_fd(wpe, dwpe, f, "dwpe");
  }
}
