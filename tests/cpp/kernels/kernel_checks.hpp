// Helpers of the kernels' tests (tests/cpp/kernels/test_<op>.cpp): the sizes swept, random values and
// token ids, the float error bound of a sum, element-wise comparison with a per-element tolerance, and
// central finite differences in double. Also the preamble every one of them shares: the kernels and
// their references, the namespace aliases k and ref, and test_util's and these helpers' names.
#pragma once
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/reference.hpp"
#include "test_util.hpp"

namespace kernel_checks {

// ---- the forward kernels' sweeps (float) ---------------------------------------------------------

// Sizes around every lane count in use (4 with SIMD128/SSE, 8 AVX2, 16 AVX-512) and the 8-wide
// GEMM panel, plus sizes that are not multiples of anything.
inline const std::vector<int> kEdgeSizes = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65};

// Unit roundoff of float32. A sum of K products computed in any order is within
// gamma_K * sum|a_k b_k| of the exact value (Higham, Accuracy and Stability, 3.1), gamma_K = K u / (1 - K u).
// Two such computations (reference, SIMD with another order and with or without fused multiply-add)
// differ by at most twice that.
inline double dot_error_bound(int K, double sum_abs) {
  using test_util::kUnitRoundoff;
  const double gamma = (K + 1) * kUnitRoundoff / (1.0 - (K + 1) * kUnitRoundoff);
  return 2.0 * gamma * sum_abs + 1e-30;
}

// ---- the backward kernels and the references in double --------------------------------------------

// around every lane count in use (4 SIMD128/SSE, 8 AVX2, 16 AVX-512) and the 2-batch dot
inline const std::vector<int> kBackwardSizes = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65};

template <typename F = float>
std::vector<F> random_values(std::size_t n, std::mt19937& rng, double scale = 1.0) {
  std::normal_distribution<double> d(0.0, scale);
  std::vector<F> v(n);
  for (auto& x : v) x = (F)d(rng);
  return v;
}
inline constexpr double kU = 5.9604644775390625e-08;  // unit roundoff of float32
// Two float computations of a sum of K terms in different orders (and with or without fused
// multiply-add) differ by at most 2 gamma_K sum|terms| (Higham 3.1), gamma_K = K u / (1 - K u).
inline double sum_bound(int K, double sum_abs) { return 2.0 * (K + 1) * kU / (1.0 - (K + 1) * kU) * sum_abs + 1e-30; }

// |got - want| <= tol(i) for every element, with the first failure's index reported
template <typename TolFn>
void require_close(const std::vector<float>& got, const std::vector<float>& want, TolFn tol, const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); i++) {
    INFO(what << " element " << i << ": got " << got[i] << ", want " << want[i] << ", tol " << tol(i));
    REQUIRE(std::fabs((double)got[i] - want[i]) <= tol(i));
  }
}

// A sum accumulated into a starting value, as the trainer accumulates gradients: got and want are the
// starting value plus the n terms term(i, j) in different orders, within sum_bound over |want[i]| and
// the terms' sizes, plus `roundings` u of that sum for the roundings around it.
template <typename Term>
void require_close_accumulated(const std::vector<float>& got, const std::vector<float>& want, int n, Term term,
                               double roundings, const char* what) {
  require_close(
      got, want,
      [&](std::size_t i) {
        double s = std::fabs(want[i]);
        for (int j = 0; j < n; j++) s += std::fabs(term(i, j));
        return sum_bound(n + 1, s) + roundings * kU * s;
      },
      what);
}

// Central differences in double: d f / d x_i ~ (f(x + h e_i) - f(x - h e_i)) / 2h. With h = 1e-5 the
// truncation error is h^2 |f'''| / 6 ~ 2e-11 for the O(1)-curvature functions here, and the rounding
// error eps |f| / h ~ 1e-16 * 10 / 1e-5 = 1e-10; tolerance 1e-7 (absolute, plus 1e-7 relative) leaves
// three orders of magnitude for larger derivatives while any wrong term (O(1e-2) or more) fails.
inline void check_fd(std::vector<double>& x, const std::vector<double>& analytic, const std::function<double()>& f,
                     const char* what) {
  REQUIRE(x.size() == analytic.size());
  const double h = 1e-5;
  double max_err = 0;
  for (std::size_t i = 0; i < x.size(); i++) {
    const double keep = x[i];
    x[i] = keep + h;
    const double fp = f();
    x[i] = keep - h;
    const double fm = f();
    x[i] = keep;
    const double fd = (fp - fm) / (2 * h);
    const double err = std::fabs(fd - analytic[i]);
    max_err = std::max(max_err, err);
    INFO(what << " element " << i << ": finite difference " << fd << ", analytic " << analytic[i]);
    REQUIRE(err <= 1e-7 + 1e-7 * std::fabs(fd));
  }
  INFO(what << " max |fd - analytic| " << max_err);
  CHECK(max_err <= 1e-7);
}

inline double weighted_sum(const std::vector<double>& out, const std::vector<double>& g) {
  double s = 0;
  for (std::size_t i = 0; i < out.size(); i++) s += out[i] * g[i];
  return s;
}

// n token ids drawn uniformly from [0, V)
inline std::vector<int> random_ids(std::size_t n, int V, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, V - 1);
  std::vector<int> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace kernel_checks

namespace k = headscope::kernels;
namespace ref = headscope::kernels::ref;
using test_util::kUnitRoundoff;
using test_util::random_normal;
using namespace kernel_checks;
