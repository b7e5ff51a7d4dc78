// The Llama family's backward kernels (RMSNorm, rotary positions, SwiGLU, grouped-query attention), two
// ways, as test_backward.cpp checks GPT-2's:
//  1. each xsimd kernel (kernels/kernels.hpp) against its scalar reference (kernels/reference.hpp);
//  2. each scalar reference, instantiated in double, against central finite differences of the
//     matching double forward; grouped-query attention's also against multi-head attention on keys
//     and values repeated per query head, whose gradients sum back into the shared head.
// Every check states its tolerance and why.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/reference.hpp"
#include "backward_checks.hpp"

namespace ref = headscope::kernels::ref;
namespace kn = headscope::kernels;
using namespace backward_checks;

namespace {

// rope's frequencies as the model computes them (theta^(-2i/HS)), for a head size
std::vector<double> inv_freq(int HS, double theta = 10000.0) {
  std::vector<double> f(HS / 2);
  for (int i = 0; i < HS / 2; i++) f[i] = std::pow(theta, -2.0 * i / HS);
  return f;
}

// B sequences of grouped-query attention through the reference (att (B, NH, T, T))
template <typename F>
void gqa_forward_batch(F* out, F* att, const F* qkv, int B, int T, int NH, int KV, int HS) {
  const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
  for (int b = 0; b < B; b++)
    ref::attention_forward<F>(out + (std::size_t)b * T * NH * HS, att + (std::size_t)b * NH * T * T,
                              qkv + (std::size_t)b * T * row, 0, T, NH, KV, HS, T);
}

}  // namespace

// =====================================================================================================
// 1. xsimd kernels against the scalar references (float)
// =====================================================================================================

TEST_CASE("train: rmsnorm_backward equals the reference", "[train][llama]") {
  std::mt19937 rng(31);
  for (int N : {1, 2, 5})
    for (int C : kBackwardSizes) {
      INFO("N=" << N << " C=" << C);
      const auto x = random_values(N * C, rng, 2.0), w = random_values(C, rng), dout = random_values(N * C, rng);
      std::vector<float> out(N * C), rstd(N);
      ref::rmsnorm_forward<float>(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
      auto dx = random_values(N * C, rng), dw = random_values(C, rng);
      auto dx_ref = dx, dw_ref = dw;
      kn::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
      ref::rmsnorm_backward<float>(dx_ref.data(), dw_ref.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
      // dx_i = r (n_i - c x_i), c = r^2 (sum_j n_j x_j) / C: the C-term sum differs by sum_bound(C, S),
      // S = sum_j |n_j x_j|, which moves c by r^2 sum_bound / C; the few roundings of the rest are
      // within 8 u of the terms' sizes, and the starting value keeps its own rounding.
      require_close(dx, dx_ref, [&](std::size_t i) {
        const int t = (int)(i / C);
        const double r = rstd[t];
        double S = 0, dotv = 0;
        for (int j = 0; j < C; j++) {
          S += std::fabs((double)w[j] * dout[t * C + j] * x[t * C + j]);
          dotv += (double)w[j] * dout[t * C + j] * x[t * C + j];
        }
        const double c = r * r * std::fabs(dotv) / C;
        const double n = std::fabs((double)w[i % C] * dout[i]);
        return r * (r * r * sum_bound(C, S) / C * std::fabs(x[i]) + 8 * kU * (n + c * std::fabs(x[i]))) +
               4 * kU * std::fabs(dx_ref[i]) + 1e-30;
      }, "dinp");
      // dweight: N products accumulated in the same order, each within a fused-or-not rounding or two
      require_close(dw, dw_ref, [&](std::size_t i) {
        double s = std::fabs(dw_ref[i]);
        for (int t = 0; t < N; t++) s += std::fabs((double)dout[t * C + i] * x[t * C + i] * rstd[t]);
        return sum_bound(N + 1, s) + 8 * kU * s;
      }, "dweight");
    }
}

TEST_CASE("train: rope_backward equals the reference and undoes rope_forward", "[train][llama]") {
  std::mt19937 rng(32);
  for (int HS : {2, 4, 6, 16, 34, 130})  // 130: more pairs than the kernel's chunk of 64
    for (int n_heads : {1, 3}) {
      const int T = 9, t_begin = 2;
      const std::size_t stride = (std::size_t)n_heads * HS + 5;  // rows wider than the heads, as q | k | v
      INFO("HS=" << HS << " heads=" << n_heads);
      const auto f = inv_freq(HS);
      const auto d0 = random_values(T * stride, rng);
      auto d = d0, d_ref = d0;
      kn::rope_backward(d.data(), stride, t_begin, T, n_heads, HS, f.data());
      ref::rope_backward<float>(d_ref.data(), stride, t_begin, T, n_heads, HS, f.data());
      // the same float cosines and sines and two products and a sum per value: within 4 u of the
      // pair's size (fused or not); rows below t_begin and the columns past the heads untouched
      require_close(d, d_ref, [&](std::size_t i) {
        const std::size_t t = i / stride, c = i % stride;
        if (c >= (std::size_t)n_heads * HS || (int)t < t_begin) return 0.0;
        const std::size_t h0 = t * stride + (c / HS) * HS, k = (c % HS) % (HS / 2);
        return 4 * kU * (std::fabs(d0[h0 + k]) + std::fabs(d0[h0 + k + HS / 2]));
      }, "drope");
      // the transpose of a rotation is its inverse: forward then backward gives the input back
      auto x = d0;
      kn::rope_forward(x.data(), stride, 0, T, n_heads, HS, f.data());
      kn::rope_backward(x.data(), stride, 0, T, n_heads, HS, f.data());
      require_close(x, d0, [&](std::size_t i) {
        const std::size_t t = i / stride, c = i % stride;
        if (c >= (std::size_t)n_heads * HS) return 0.0;
        const std::size_t h0 = t * stride + (c / HS) * HS, k = (c % HS) % (HS / 2);
        return 12 * kU * (std::fabs(d0[h0 + k]) + std::fabs(d0[h0 + k + HS / 2]));
      }, "rope then its backward");
    }
}

TEST_CASE("train: swiglu_backward equals the reference", "[train][llama]") {
  std::mt19937 rng(33);
  for (int N : {1, 3})
    for (int F : kBackwardSizes) {
      INFO("N=" << N << " F=" << F);
      const auto gu = random_values(N * 2 * F, rng, 3.0), dout = random_values(N * F, rng);
      auto dgu = random_values(N * 2 * F, rng);
      auto dgu_ref = dgu;
      kn::swiglu_backward(dgu.data(), gu.data(), dout.data(), N, F);
      ref::swiglu_backward<float>(dgu_ref.data(), gu.data(), dout.data(), N, F);
      // sigma through xsimd's exp (a few ulp of std::exp) and ~8 roundings in each formula; the terms
      // are at most |d| |u| 1.1 (1 + |g|) and |d| |g|: 32 u of those, plus the starting value's rounding
      require_close(dgu, dgu_ref, [&](std::size_t i) {
        const std::size_t t = i / (2 * F), c = i % (2 * F), k = c % F;
        const double g = gu[t * 2 * F + k], u = gu[t * 2 * F + F + k], d = dout[t * F + k];
        return 32 * kU * (std::fabs(d) * (std::fabs(u) + 1) * (1 + std::fabs(g)) + std::fabs(dgu_ref[i])) + 1e-30;
      }, "dgate_up");
    }
}

TEST_CASE("train: grouped-query attention_backward equals the reference", "[train][llama][gqa]") {
  std::mt19937 rng(34);
  struct Heads { int NH, KV; };
  for (Heads hk : {Heads{4, 2}, Heads{4, 1}, Heads{6, 3}, Heads{3, 3}, Heads{8, 1}})
    for (int HS : {1, 4, 5, 16})
      for (int T : {1, 5, 9}) {
        const int B = 2, NH = hk.NH, KV = hk.KV, G = NH / KV;
        const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
        INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << " T=" << T);
        const auto qkv = random_values(B * T * row, rng), dout = random_values((std::size_t)B * T * NH * HS, rng);
        std::vector<float> out((std::size_t)B * T * NH * HS), att((std::size_t)B * NH * T * T), scratch(T);
        gqa_forward_batch<float>(out.data(), att.data(), qkv.data(), B, T, NH, KV, HS);
        auto dqkv = random_values(B * T * row, rng);
        auto dqkv_ref = dqkv;
        kn::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T,
                               kn::AttentionShape{NH, KV, HS});
        ref::attention_backward<float>(dqkv_ref.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, NH,
                                       KV, HS);
        // as the multi-head test's bound (sums over T rows of terms up to ~HS m^3, m <= 6 for these
        // draws), with a shared key/value head summing G query heads' terms
        const double m = 6.0;
        const double tol = sum_bound(G * T * (HS + T + 2), G * T * (HS + T) * m * m * m) + 1e-6;
        require_close(dqkv, dqkv_ref, [&](std::size_t i) { return tol + 4 * kU * std::fabs(dqkv_ref[i]); }, "dqkv");
      }
}

// =====================================================================================================
// 2. the references in double: finite differences, and grouped-query attention as repeated heads
// =====================================================================================================

TEST_CASE("train: the Llama family's reference gradients equal finite differences (double)", "[train][llama][fd]") {
  std::mt19937 rng(35);
  SECTION("rmsnorm") {
    const int N = 3, C = 7;
    auto x = random_values<double>(N * C, rng), w = random_values<double>(C, rng);
    const auto g = random_values<double>(N * C, rng);
    std::vector<double> out(N * C), rstd(N), dx(N * C, 0), dw(C, 0);
    ref::rmsnorm_forward<double>(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5);
    ref::rmsnorm_backward<double>(dx.data(), dw.data(), g.data(), x.data(), w.data(), rstd.data(), N, C);
    auto f = [&] {
      ref::rmsnorm_forward<double>(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5);
      return weighted_sum(out, g);
    };
    check_fd(x, dx, f, "dinp");
    check_fd(w, dw, f, "dweight");
  }
  SECTION("rotary positions") {
    const int T = 5, n_heads = 2, HS = 6;
    const std::size_t stride = n_heads * HS + 3;
    const auto fr = inv_freq(HS, 100.0);  // a small theta: every pair turns by a sizeable angle
    auto x = random_values<double>(T * stride, rng);
    const auto g = random_values<double>(T * stride, rng);
    auto dx = g;
    ref::rope_backward<double>(dx.data(), stride, 1, T, n_heads, HS, fr.data());
    std::vector<double> y;
    auto f = [&] {
      y = x;
      ref::rope_forward<double>(y.data(), stride, 1, T, n_heads, HS, fr.data());
      return weighted_sum(y, g);
    };
    check_fd(x, dx, f, "dx");
  }
  SECTION("swiglu") {
    const int N = 2, F = 5;
    auto gu = random_values<double>(N * 2 * F, rng, 2.0);
    const auto g = random_values<double>(N * F, rng);
    std::vector<double> out(N * F), dgu(N * 2 * F, 0);
    ref::swiglu_backward<double>(dgu.data(), gu.data(), g.data(), N, F);
    auto f = [&] {
      ref::swiglu_forward<double>(out.data(), gu.data(), N, F);
      return weighted_sum(out, g);
    };
    check_fd(gu, dgu, f, "dgate_up");
  }
  SECTION("grouped-query attention") {
    const int B = 2, T = 4, NH = 4, KV = 2, HS = 3;
    const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
    auto qkv = random_values<double>(B * T * row, rng);
    const auto g = random_values<double>((std::size_t)B * T * NH * HS, rng);
    std::vector<double> out((std::size_t)B * T * NH * HS), att((std::size_t)B * NH * T * T), dqkv(B * T * row, 0),
        scratch(T);
    gqa_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, NH, KV, HS);
    ref::attention_backward<double>(dqkv.data(), scratch.data(), g.data(), qkv.data(), att.data(), B, T, NH, KV, HS);
    auto f = [&] {
      gqa_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, NH, KV, HS);
      return weighted_sum(out, g);
    };
    check_fd(qkv, dqkv, f, "dqkv");
  }
}

TEST_CASE("train: grouped-query attention's gradient is multi-head attention's on repeated keys and values, summed back",
          "[train][llama][gqa]") {
  std::mt19937 rng(36);
  const int B = 2, T = 6, NH = 6, KV = 2, HS = 4, G = NH / KV, C = NH * HS;
  const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
  const auto qkv = random_values<double>(B * T * row, rng);
  const auto dout = random_values<double>((std::size_t)B * T * C, rng);
  std::vector<double> out((std::size_t)B * T * C), att((std::size_t)B * NH * T * T), dqkv(B * T * row, 0), scratch(T);
  gqa_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, NH, KV, HS);
  ref::attention_backward<double>(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, NH, KV, HS);
  // the same attention as GPT-2's: every query head with its own copy of its key/value head
  std::vector<double> rep((std::size_t)B * T * 3 * C), drep((std::size_t)B * T * 3 * C, 0);
  for (int r = 0; r < B * T; r++)
    for (int h = 0; h < NH; h++)
      for (int d = 0; d < HS; d++) {
        rep[(std::size_t)r * 3 * C + h * HS + d] = qkv[r * row + h * HS + d];
        rep[(std::size_t)r * 3 * C + C + h * HS + d] = qkv[r * row + (NH + h / G) * HS + d];
        rep[(std::size_t)r * 3 * C + 2 * C + h * HS + d] = qkv[r * row + (NH + KV + h / G) * HS + d];
      }
  std::vector<double> out_rep(out.size()), att_rep(att.size());
  for (int b = 0; b < B; b++)
    ref::attention_forward<double>(out_rep.data() + (std::size_t)b * T * C, att_rep.data() + (std::size_t)b * NH * T * T,
                                   rep.data() + (std::size_t)b * T * 3 * C, 0, T, C, NH, T);
  ref::attention_backward<double>(drep.data(), scratch.data(), dout.data(), rep.data(), att_rep.data(), B, T, C, NH);
  // the copies' gradients summed into the head they copy: equal up to double rounding of sums of
  // ~G T HS terms of size ~1 (1e-12 is 10^4 ulps of margin; a gradient sent to the wrong group is O(1) off)
  for (int r = 0; r < B * T; r++) {
    for (int c = 0; c < NH * HS; c++) REQUIRE(std::fabs(dqkv[r * row + c] - drep[(std::size_t)r * 3 * C + c]) <= 1e-12);
    for (int g = 0; g < KV; g++)
      for (int d = 0; d < HS; d++) {
        double dk = 0, dv = 0;
        for (int h = g * G; h < (g + 1) * G; h++) {
          dk += drep[(std::size_t)r * 3 * C + C + h * HS + d];
          dv += drep[(std::size_t)r * 3 * C + 2 * C + h * HS + d];
        }
        INFO("row " << r << " key/value head " << g << " dim " << d);
        REQUIRE(std::fabs(dqkv[r * row + (NH + g) * HS + d] - dk) <= 1e-12);
        REQUIRE(std::fabs(dqkv[r * row + (NH + KV + g) * HS + d] - dv) <= 1e-12);
      }
  }
}
