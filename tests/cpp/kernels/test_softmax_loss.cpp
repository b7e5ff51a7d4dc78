// The softmax and the loss, cpp/src/kernels/softmax_loss.cpp:
//  1. exp_nonpositive_forward (the softmax's and attention's exp) against std::exp, and an element's bits
//     wherever the array ends; softmax_forward against the scalar reference (kernels/reference.hpp);
//  2. crossentropy_forward and crossentropy_backward against the references.
// The cross-entropy's reference gradient is checked against finite differences with the embeddings and
// the residual it flows back through, in test_residual.cpp. Every check states its tolerance and why.
#include <limits>

#include "kernel_checks.hpp"

// =====================================================================================================
// 1. the forward kernels (float)
// =====================================================================================================

TEST_CASE("exp_nonpositive_forward is within 8 ulp of std::exp on x <= 0", "[kernels][softmax]") {
  // every float from 0 down to -87.3 in ~3e5 steps, plus the ends; the polynomial's measured max
  // relative error is 3.2e-7 (5.4 u), so 8 u is its bound with margin, still far below what the
  // attention maps can show (differences below 1e-6 in a weight)
  std::vector<float> x;
  for (double v = 0.0; v > -87.33; v -= 2.9e-4) x.push_back((float)v);
  for (float v : {-0.0f, -1e-30f, -1e-7f, -87.3f, -87.33654f}) x.push_back(v);
  std::vector<float> got(x.size()), ref(x.size());
  k::exp_nonpositive_forward(got.data(), x.data(), x.size());
  ref::exp_nonpositive_forward<float>(ref.data(), x.data(), x.size());
  for (std::size_t i = 0; i < x.size(); i++) {
    const double rel = std::fabs((double)got[i] - std::exp((double)x[i])) / std::exp((double)x[i]);
    INFO("x=" << x[i] << " got=" << got[i] << " std::exp=" << ref[i]);
    REQUIRE(rel <= 8 * kUnitRoundoff);
  }
  // below the clamp: tiny and positive, never NaN, never above the smallest normal float times 2
  const float low[] = {-88.0f, -100.0f, -1e30f, -std::numeric_limits<float>::infinity()};
  float out_low[4];
  k::exp_nonpositive_forward(out_low, low, 4);
  for (float v : out_low) {
    REQUIRE(v >= 0.0f);
    REQUIRE(v <= 2.4e-38f);
  }
}

TEST_CASE("exp_nonpositive_forward gives an element the same bits wherever the array ends", "[kernels][incremental]") {
  // The property GELU's test checks (test_activation.cpp), for the exp: the last partial batch takes
  // the same formula as the full ones, so a value's result does not depend on the array's length.
  std::mt19937 rng(12);
  const auto x = random_normal(67, rng, 4.0f);
  std::vector<float> neg(x.size());
  for (std::size_t i = 0; i < x.size(); i++) neg[i] = -std::fabs(x[i]) * 5.0f;
  std::vector<float> whole(neg.size());
  k::exp_nonpositive_forward(whole.data(), neg.data(), neg.size());
  for (std::size_t i = 0; i < neg.size(); i++) {
    float one;
    k::exp_nonpositive_forward(&one, &neg[i], 1);
    REQUIRE(one == whole[i]);
  }
}

TEST_CASE("softmax_forward equals the reference", "[kernels][softmax]") {
  std::mt19937 rng(7);
  for (int N : kEdgeSizes) {
    const auto x = random_normal(N, rng, 5.0f);
    std::vector<float> ref = x, got = x;
    ref::softmax_forward<float>(ref.data(), N);
    k::softmax_forward(got.data(), N);
    double sum = 0;
    for (int i = 0; i < N; i++) {
      // exp within a few ulp, the sum of N terms within N u relative: (N + 8) u relative.
      INFO("N=" << N << " i=" << i);
      REQUIRE(std::fabs(got[i] - ref[i]) <= (N + 8) * kUnitRoundoff * ref[i] + 1e-12);
      sum += got[i];
    }
    REQUIRE(std::fabs(sum - 1.0) <= (N + 4) * kUnitRoundoff);
  }
}

// =====================================================================================================
// 2. the backward kernels against the scalar references (float)
// =====================================================================================================

TEST_CASE("train: crossentropy_forward and crossentropy_backward equal the reference", "[train][elementwise]") {
  std::mt19937 rng(19);
  for (int C : kBackwardSizes) {
    const int B = 2, T = 5, V = C + 2;
    INFO("C=" << C);
    const auto ids = random_ids(B * T, V, rng);
    const auto logits = random_values(B * T * V, rng, 2.0);
    std::vector<float> probs(B * T * V), losses(B * T);
    ref::crossentropy_forward<float>(losses.data(), probs.data(), logits.data(), ids.data(), B * T, V);
    std::vector<float> probs_simd(B * T * V), losses_simd(B * T);
    k::crossentropy_forward(losses_simd.data(), probs_simd.data(), logits.data(), ids.data(), B * T, V);
    // the kernel's exp is a polynomial within 3.2e-7 relative of std::exp (its test above), plus the
    // sum's V roundings: probabilities within 1e-6 relative; the loss is log(sum) + max - l[target],
    // with |log sum| <= log V + 12 for these logits: 1e-6 absolute covers the polynomial and the log
    require_close(
        probs_simd, probs, [&](std::size_t i) { return 1e-6 * probs[i] + sum_bound(V, 1.0) + 1e-30; }, "probs");
    require_close(
        losses_simd, losses, [&](std::size_t i) { return 1e-6 * (1 + std::fabs(losses[i])); }, "losses");
    auto dl = random_values(B * T * V, rng);
    auto dl_ref = dl;
    k::crossentropy_backward(dl.data(), probs.data(), ids.data(), 0.1f, B * T, V);
    ref::crossentropy_backward<float>(dl_ref.data(), probs.data(), ids.data(), 0.1f, B * T, V);
    // (p - y) dloss + start: p dloss + start rounded (maybe fused), then - dloss: 3 roundings
    require_close(
        dl, dl_ref, [&](std::size_t i) { return 4 * kU * (std::fabs(dl_ref[i]) + 0.2); }, "dlogits");
  }
}
