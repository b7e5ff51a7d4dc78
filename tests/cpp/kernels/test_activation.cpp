// The MLP's activations, cpp/src/kernels/activation.cpp: GELU in its tanh and erf forms (GPT-2) and
// SwiGLU (the Llama family):
//  1. gelu_forward and gelu_erf_forward against the scalar references (kernels/reference.hpp), and an
//     element's bits wherever the array ends; swiglu_forward against silu(gate) * up in double;
//  2. gelu_backward, gelu_erf_backward and swiglu_backward against the references;
//  3. the references in double against central finite differences.
// Every check states its tolerance and why.
#include <utility>

#include "kernel_checks.hpp"

// =====================================================================================================
// 1. the forward kernels (float)
// =====================================================================================================

TEST_CASE("gelu_forward and gelu_erf_forward equal the reference", "[kernels][gelu]") {
  std::mt19937 rng(6);
  for (int N : kEdgeSizes) {
    auto x = random_normal(N, rng, 4.0f);
    x[0] = 0.0f;
    if (N > 2) x[1] = -12.0f, x[2] = 12.0f;  // saturated tanh / erf
    std::vector<float> ref(N), got(N), ref_erf(N), got_erf(N);
    ref::gelu_forward<float>(ref.data(), x.data(), N);
    k::gelu_forward(got.data(), x.data(), N);
    ref::gelu_erf_forward<float>(ref_erf.data(), x.data(), N);
    k::gelu_erf_forward(got_erf.data(), x.data(), N);
    for (int i = 0; i < N; i++) {
      // xsimd's tanh and erf are within a few ulp of std's; through 0.5 x (1 + .) that is a few
      // ulp of |x| at most: 8 ulp of |x| plus 1e-7 absolute (near zero).
      const double tol = 8.0 * kUnitRoundoff * std::fabs(x[i]) + 1e-7;
      INFO("N=" << N << " x=" << x[i]);
      REQUIRE(std::fabs(got[i] - ref[i]) <= tol);
      REQUIRE(std::fabs(got_erf[i] - ref_erf[i]) <= tol);
    }
  }
}

TEST_CASE("gelu_forward and gelu_erf_forward give an element the same bits wherever the array ends",
          "[kernels][incremental]") {
  // The model applies GELU to n * n_inner values at once, n = the rows computed in this call: one when
  // typing, all of them in a full run. If the last partial batch took a different (scalar) formula,
  // typing would differ from a full run whenever n * n_inner is not a multiple of the lane count.
  std::mt19937 rng(12);
  const auto x = random_normal(67, rng, 4.0f);
  using Fn = void (*)(float*, const float*, std::size_t) noexcept;
  const std::pair<const char*, Fn> kernels[] = {{"gelu", k::gelu_forward}, {"gelu_erf", k::gelu_erf_forward}};
  for (const auto& [name, fn] : kernels) {
    std::vector<float> whole(x.size());
    fn(whole.data(), x.data(), x.size());
    for (std::size_t i = 0; i < x.size(); i++) {
      float one;
      fn(&one, &x[i], 1);
      INFO(name << " i=" << i);
      REQUIRE(one == whole[i]);
    }
  }
}

TEST_CASE("swiglu_forward equals silu(gate) * up in double; a row alone equals the row among others",
          "[kernels][llama]") {
  std::mt19937 rng(35);
  for (int F : {1, 3, 4, 5, 8, 9, 17, 40, 100}) {
    const int N = 3;
    auto gu = random_normal((std::size_t)N * 2 * F, rng, 4.0f);
    gu[0] = -90.0f;  // exp(90) overflows float32: silu must still give -0 (times up), not NaN
    std::vector<float> got((std::size_t)N * F), ref_out(got.size()), last(F);
    k::swiglu_forward(got.data(), gu.data(), N, F);
    ref::swiglu_forward<float>(ref_out.data(), gu.data(), N, F);
    k::swiglu_forward(last.data(), gu.data() + (std::size_t)2 * 2 * F, 1, F);
    REQUIRE(std::equal(last.begin(), last.end(), got.begin() + 2 * F));
    for (int t = 0; t < N; t++)
      for (int i = 0; i < F; i++) {
        const double g = gu[(std::size_t)t * 2 * F + i], u = gu[(std::size_t)t * 2 * F + F + i];
        const double want = g / (1 + std::exp(-g)) * u;
        INFO("F=" << F << " t=" << t << " i=" << i << " gate " << g);
        REQUIRE(std::isfinite(got[t * F + i]));
        // xsimd's exp is within a few ulp; then a sum, a division and a product: 8 u relative
        REQUIRE(std::fabs(got[t * F + i] - want) <= 8 * kUnitRoundoff * std::fabs(want) + 1e-30);
        REQUIRE(std::fabs(ref_out[t * F + i] - want) <= 8 * kUnitRoundoff * std::fabs(want) + 1e-30);
      }
  }
}

// =====================================================================================================
// 2. the backward kernels against the scalar references (float)
// =====================================================================================================

TEST_CASE("train: gelu_backward and gelu_erf_backward equal the reference", "[train][elementwise]") {
  std::mt19937 rng(15);
  for (int n : kBackwardSizes) {
    INFO("n=" << n);
    const auto x = random_values(n, rng, 3.0), dout = random_values(n, rng);
    // gelu'(x) and Phi(x) + x phi(x) are at most 1.13 in size; xsimd's tanh, erf and exp are within a
    // few ulp of std's and the formulas have ~10 roundings: 32 u of (|gelu'| |dout| + |start|), both forms
    using Backward = void (*)(float*, const float*, const float*, std::size_t);
    const std::pair<Backward, Backward> forms[] = {{k::gelu_backward, ref::gelu_backward<float>},
                                                   {k::gelu_erf_backward, ref::gelu_erf_backward<float>}};
    const char* names[] = {"gelu dinp", "gelu_erf dinp"};
    for (int f = 0; f < 2; f++) {
      auto dinp = random_values(n, rng);
      auto dinp_ref = dinp;
      forms[f].first(dinp.data(), x.data(), dout.data(), n);
      forms[f].second(dinp_ref.data(), x.data(), dout.data(), n);
      require_close(
          dinp, dinp_ref,
          [&](std::size_t i) {
            return 32 * kU * (1.2 * std::fabs(dout[i]) * (1 + x[i] * x[i]) + std::fabs(dinp_ref[i])) + 1e-7;
          },
          names[f]);
    }
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
      k::swiglu_backward(dgu.data(), gu.data(), dout.data(), N, F);
      ref::swiglu_backward<float>(dgu_ref.data(), gu.data(), dout.data(), N, F);
      // sigma through xsimd's exp (a few ulp of std::exp) and ~8 roundings in each formula; the terms
      // are at most |d| |u| 1.1 (1 + |g|) and |d| |g|: 32 u of those, plus the starting value's rounding
      require_close(
          dgu, dgu_ref,
          [&](std::size_t i) {
            const std::size_t t = i / (2 * F), c = i % (2 * F), k = c % F;
            const double g = gu[t * 2 * F + k], u = gu[t * 2 * F + F + k], d = dout[t * F + k];
            return 32 * kU * (std::fabs(d) * (std::fabs(u) + 1) * (1 + std::fabs(g)) + std::fabs(dgu_ref[i])) + 1e-30;
          },
          "dgate_up");
    }
}

// =====================================================================================================
// 3. the references in double against central finite differences
// =====================================================================================================

TEST_CASE("train: gelu's reference gradients equal finite differences (double)", "[train][fd]") {
  std::mt19937 rng(21);
  // the gradient of sum(gelu(x) g) from the form's backward, against the form's forward
  const auto check = [&](auto backward, auto forward) {
    auto x = random_values<double>(40, rng, 3.0);
    const auto g = random_values<double>(40, rng);
    std::vector<double> out(40), dx(40, 0);
    backward(dx.data(), x.data(), g.data(), 40);
    auto f = [&] {
      forward(out.data(), x.data(), 40);
      return weighted_sum(out, g);
    };
    check_fd(x, dx, f, "dinp");
  };
  SECTION("gelu (tanh)") { check(ref::gelu_backward<double>, ref::gelu_forward<double>); }
  SECTION("gelu (erf)") { check(ref::gelu_erf_backward<double>, ref::gelu_erf_forward<double>); }
}

TEST_CASE("train: swiglu's reference gradient equals finite differences (double)", "[train][llama][fd]") {
  std::mt19937 rng(35);
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
}
