// Rotary positions (the Llama family), cpp/src/kernels/rope.cpp:
//  1. rope_forward against the rotation in double; scores after it depend on the distance only;
//  2. rope_backward against the scalar reference (kernels/reference.hpp), and as the inverse of rope_forward;
//  3. the reference in double against central finite differences.
// Every check states its tolerance and why.

#include "kernel_checks.hpp"

namespace {

// rope's frequencies as the model computes them (theta^(-2i/HS)), for a head size
std::vector<double> inv_freq(int HS, double theta = 10000.0) {
  std::vector<double> f(HS / 2);
  for (int i = 0; i < HS / 2; i++) f[i] = std::pow(theta, -2.0 * i / HS);
  return f;
}

}  // namespace

// =====================================================================================================
// 1. the forward kernels (float)
// =====================================================================================================

TEST_CASE("rope_forward rotates pair (i, i + HS/2) by position x inv_freq; scores depend on the distance only",
          "[kernels][llama]") {
  std::mt19937 rng(34);
  for (int HS : {2, 4, 6, 12, 64, 130}) {
    const int half = HS / 2, heads = 3, T = 9;
    std::vector<double> inv_freq(half);
    for (int i = 0; i < half; i++) inv_freq[i] = 1.0 / std::pow(10000.0, 2.0 * i / HS);
    const std::size_t row = (std::size_t)heads * HS + 5;  // rows wider than the rotated heads, as in qkv
    const auto x = random_normal(T * row, rng);
    std::vector<float> got = x, ref_out = x;
    k::rope_forward(got.data(), row, 2, T, heads, HS, inv_freq.data());
    ref::rope_forward<float>(ref_out.data(), row, 2, T, heads, HS, inv_freq.data());
    // the same double angles; the compiler may fuse a product and the sum in one and not the other,
    // so both are checked against double below, not against each other bit for bit
    for (int t = 0; t < T; t++)
      for (std::size_t c = 0; c < row; c++) {
        const std::size_t i = t * row + c;
        if (t < 2 || c >= (std::size_t)heads * HS) {
          REQUIRE(got[i] == x[i]);  // rows before t_begin and columns past the heads untouched
          continue;
        }
        const int d = (int)(c % HS), p = d % half;
        const double angle = t * inv_freq[p], cs = std::cos(angle), sn = std::sin(angle);
        const std::size_t base = i - d;  // the head's first value
        const double a = x[base + p], b = x[base + p + half];
        const double want = d < half ? a * cs - b * sn : b * cs + a * sn;
        // cos and sin rounded to float32, two products and a sum: 4 u of |a| + |b|
        REQUIRE(std::fabs(got[i] - want) <= 4 * kUnitRoundoff * (std::fabs(a) + std::fabs(b)));
        REQUIRE(std::fabs(ref_out[i] - want) <= 4 * kUnitRoundoff * (std::fabs(a) + std::fabs(b)));
      }
    // the point of rotary positions: q_i . k_j after the rotation is a function of i - j
    std::vector<float> q = random_normal(HS, rng), kv = random_normal(HS, rng);
    const auto dot_at = [&](int i, int j) {
      std::vector<float> a((std::size_t)(std::max(i, j) + 1) * HS), b = a;
      std::copy(q.begin(), q.end(), a.begin() + (std::size_t)i * HS);
      std::copy(kv.begin(), kv.end(), b.begin() + (std::size_t)j * HS);
      k::rope_forward(a.data(), HS, i, i + 1, 1, HS, inv_freq.data());
      k::rope_forward(b.data(), HS, j, j + 1, 1, HS, inv_freq.data());
      double s = 0;
      for (int d = 0; d < HS; d++) s += (double)a[(std::size_t)i * HS + d] * b[(std::size_t)j * HS + d];
      return s;
    };
    double norm = 0;
    for (int d = 0; d < HS; d++) norm += std::fabs(q[d]) * 2 * std::fabs(kv[d]) * 2;
    // each rotated value carries ~4 u relative error (above) of |a| + |b|: the dot of HS of them
    REQUIRE(std::fabs(dot_at(5, 2) - dot_at(40, 37)) <= 16 * kUnitRoundoff * norm);
    REQUIRE(std::fabs(dot_at(3, 3) - dot_at(0, 0)) <= 16 * kUnitRoundoff * norm);
  }
}

// =====================================================================================================
// 2. the backward kernels against the scalar references (float)
// =====================================================================================================

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
      k::rope_backward(d.data(), stride, t_begin, T, n_heads, HS, f.data());
      ref::rope_backward<float>(d_ref.data(), stride, t_begin, T, n_heads, HS, f.data());
      // the same float cosines and sines and two products and a sum per value: within 4 u of the
      // pair's size (fused or not); rows below t_begin and the columns past the heads untouched
      require_close(
          d, d_ref,
          [&](std::size_t i) {
            const std::size_t t = i / stride, c = i % stride;
            if (c >= (std::size_t)n_heads * HS || (int)t < t_begin) return 0.0;
            const std::size_t h0 = t * stride + (c / HS) * HS, k = (c % HS) % (HS / 2);
            return 4 * kU * (std::fabs(d0[h0 + k]) + std::fabs(d0[h0 + k + HS / 2]));
          },
          "drope");
      // the transpose of a rotation is its inverse: forward then backward gives the input back
      auto x = d0;
      k::rope_forward(x.data(), stride, 0, T, n_heads, HS, f.data());
      k::rope_backward(x.data(), stride, 0, T, n_heads, HS, f.data());
      require_close(
          x, d0,
          [&](std::size_t i) {
            const std::size_t t = i / stride, c = i % stride;
            if (c >= (std::size_t)n_heads * HS) return 0.0;
            const std::size_t h0 = t * stride + (c / HS) * HS, k = (c % HS) % (HS / 2);
            return 12 * kU * (std::fabs(d0[h0 + k]) + std::fabs(d0[h0 + k + HS / 2]));
          },
          "rope then its backward");
    }
}

// =====================================================================================================
// 3. the references in double against central finite differences
// =====================================================================================================

TEST_CASE("train: rope's reference gradient equals finite differences (double)", "[train][llama][fd]") {
  std::mt19937 rng(35);
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
}
