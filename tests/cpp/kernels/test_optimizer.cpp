// The optimizers, cpp/src/kernels/optimizer.cpp: sgd_update and adamw_update (three steps) against the
// scalar references (kernels/reference.hpp). Every check states its tolerance and why.

#include "kernel_checks.hpp"

TEST_CASE("train: sgd_update and adamw_update equal the reference", "[train][elementwise]") {
  std::mt19937 rng(18);
  for (int n : kBackwardSizes) {
    INFO("n=" << n);
    // SGD: one fused-or-not multiply-add: within one rounding of the product
    auto p = random_values(n, rng), g = random_values(n, rng);
    auto p_ref = p;
    k::sgd_update(p.data(), g.data(), n, 0.1f);
    ref::sgd_update<float>(p_ref.data(), g.data(), n, 0.1f);
    require_close(
        p, p_ref, [&](std::size_t i) { return 2 * kU * (0.1 * std::fabs(g[i]) + std::fabs(p_ref[i])); }, "sgd");

    // AdamW over three steps: the update lr * m / (sqrt v + eps) has ~12 roundings per step;
    // its size is at most lr * ~3, and the parameter keeps its own rounding: 64 u (3 lr + |p|)
    auto m = random_values(n, rng, 0.1), v = random_values(n, rng, 0.1);
    for (auto& vi : v) vi = vi * vi;
    auto m_ref = m, v_ref = v, p2 = p, p2_ref = p;
    for (int t = 1; t <= 3; t++) {
      k::adamw_update(p2.data(), m.data(), v.data(), g.data(), n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, t);
      ref::adamw_update<float>(p2_ref.data(), m_ref.data(), v_ref.data(), g.data(), n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f,
                               t);
    }
    require_close(
        p2, p2_ref, [&](std::size_t i) { return 64 * kU * (3 * 1e-2 + std::fabs(p2_ref[i])); }, "adamw p");
    require_close(
        m, m_ref, [&](std::size_t i) { return 16 * kU * (std::fabs(m_ref[i]) + std::fabs(g[i])); }, "adamw m");
    require_close(
        v, v_ref, [&](std::size_t i) { return 16 * kU * (std::fabs(v_ref[i]) + g[i] * g[i]); }, "adamw v");
  }
}
