// The residual stream, cpp/src/kernels/residual.cpp: add_forward, residual_backward and the embeddings'
// encoder_backward against the scalar references (kernels/reference.hpp); the references in double
// against central finite differences, through the tied LM head and the mean cross-entropy
// (test_softmax_loss.cpp, test_gemm.cpp hold those kernels' own checks).
// Every check states its tolerance and why.

#include "kernel_checks.hpp"

// =====================================================================================================
// 1. the forward kernels (float)
// =====================================================================================================

TEST_CASE("add_forward equals the reference, bit for bit", "[kernels]") {
  std::mt19937 rng(4);
  for (int N : kEdgeSizes) {
    const auto a = random_normal(N, rng), b = random_normal(N, rng);
    INFO("N=" << N);
    std::vector<float> got(N), ref(N);
    k::add_forward(got.data(), a.data(), b.data(), N);
    ref::add_forward<float>(ref.data(), a.data(), b.data(), N);
    REQUIRE(got == ref);  // one correctly rounded addition per element: bitwise equal
  }
}

// =====================================================================================================
// 2. the backward kernels against the scalar references (float)
// =====================================================================================================

TEST_CASE("train: residual_backward equals the reference", "[train][elementwise]") {
  std::mt19937 rng(17);
  for (int n : kBackwardSizes) {
    INFO("n=" << n);
    const auto dout = random_values(n, rng);
    auto da = random_values(n, rng), db = random_values(n, rng);
    auto da_ref = da, db_ref = db;
    k::residual_backward(da.data(), db.data(), dout.data(), n);
    ref::residual_backward<float>(da_ref.data(), db_ref.data(), dout.data(), n);
    // one addition each, in the same order: identical
    require_close(
        da, da_ref, [](std::size_t) { return 0.0; }, "residual da");
    require_close(
        db, db_ref, [](std::size_t) { return 0.0; }, "residual db");
  }
}

TEST_CASE("train: encoder_backward equals the reference", "[train][elementwise]") {
  std::mt19937 rng(16);
  for (int C : kBackwardSizes) {
    const int B = 2, T = 5, V = C + 2;
    INFO("C=" << C);
    const auto ids = random_ids(B * T, V, rng);
    const auto dout = random_values(B * T * C, rng);
    auto dwte = random_values(V * C, rng), dwpe = random_values(T * C, rng);
    auto dwte_ref = dwte, dwpe_ref = dwpe;
    k::encoder_backward(dwte.data(), dwpe.data(), dout.data(), ids.data(), B, T, C);
    ref::encoder_backward<float>(dwte_ref.data(), dwpe_ref.data(), dout.data(), ids.data(), B, T, C);
    // the same additions in the same order: identical
    require_close(
        dwte, dwte_ref, [](std::size_t) { return 0.0; }, "dwte");
    require_close(
        dwpe, dwpe_ref, [](std::size_t) { return 0.0; }, "dwpe");
  }
}

// =====================================================================================================
// 3. the references in double against central finite differences
// =====================================================================================================

TEST_CASE("train: the embeddings' and the residual's reference gradients equal finite differences (double)",
          "[train][fd]") {
  std::mt19937 rng(21);
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
