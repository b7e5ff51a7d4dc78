// LayerNorm (GPT-2) and RMSNorm (the Llama family), cpp/src/kernels/norm.cpp:
//  1. layernorm_forward against the scalar reference (kernels/reference.hpp), rmsnorm_forward against
//     x w / sqrt(mean(x^2) + eps) in double;
//  2. layernorm_backward and rmsnorm_backward against the references;
//  3. the references in double against central finite differences.
// Every check states its tolerance and why.

#include "kernel_checks.hpp"

// =====================================================================================================
// 1. the forward kernels (float)
// =====================================================================================================

TEST_CASE("layernorm_forward equals the reference", "[kernels][layernorm]") {
  std::mt19937 rng(5);
  for (int T : {1, 3}) {
    for (int C : kEdgeSizes) {
      // an offset mean, as in a real residual stream, exercises the two-pass variance
      auto inp = random_normal((std::size_t)T * C, rng, 3.0f);
      for (auto& x : inp) x += 5.0f;
      const auto w = random_normal(C, rng), b = random_normal(C, rng);
      std::vector<float> ref((std::size_t)T * C), got((std::size_t)T * C), got_kept((std::size_t)T * C);
      std::vector<float> mean_ref(T), rstd_ref(T), mean(T), rstd(T);
      ref::layernorm_forward<float>(ref.data(), mean_ref.data(), rstd_ref.data(), inp.data(), w.data(), b.data(), T, C,
                                    1e-5f);
      k::layernorm_forward(got.data(), nullptr, nullptr, inp.data(), w.data(), b.data(), T, C, 1e-5f);
      // keeping the statistics (training) changes nothing in the output, bit for bit
      k::layernorm_forward(got_kept.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), T, C, 1e-5f);
      REQUIRE(got_kept == got);
      for (int t = 0; t < T; t++) {
        // the mean: a sum of C terms of size <= ~15 in another order, C u relative to sum|x| / C;
        // rstd: the variance's C-term sum, then a square root and a division: (C + 4) u relative
        INFO("T=" << T << " C=" << C << " row " << t);
        REQUIRE(std::fabs(mean[t] - mean_ref[t]) <= 2.0 * (C + 1) * kUnitRoundoff * 15.0);
        REQUIRE(std::fabs(rstd[t] - rstd_ref[t]) <= 2.0 * (C + 4) * kUnitRoundoff * std::fabs(rstd_ref[t]));
      }
      for (int i = 0; i < T * C; i++) {
        // Mean and variance are sums of C terms in another order: relative error ~C u in the
        // normalized value (|x - mean| * rstd is O(1..4)), scaled by |w|, plus |b| rounding.
        const double tol = 4.0 * (C + 2) * kUnitRoundoff * (4.0 * std::fabs(w[i % C]) + std::fabs(b[i % C])) + 1e-6;
        INFO("T=" << T << " C=" << C << " i=" << i);
        REQUIRE(std::fabs(got[i] - ref[i]) <= tol);
      }
    }
  }
}

TEST_CASE("rmsnorm_forward equals x w / sqrt(mean(x^2) + eps) in double", "[kernels][llama]") {
  std::mt19937 rng(33);
  for (int N : {1, 3}) {
    for (int C : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 100}) {
      const auto x = random_normal((std::size_t)N * C, rng, 3.0f), w = random_normal(C, rng);
      std::vector<float> got((std::size_t)N * C), ref_out((std::size_t)N * C), rstd(N), in_place = x;
      k::rmsnorm_forward(got.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
      ref::rmsnorm_forward<float>(ref_out.data(), nullptr, x.data(), w.data(), N, C, 1e-6f);
      k::rmsnorm_forward(in_place.data(), nullptr, in_place.data(), w.data(), N, C, 1e-6f);
      REQUIRE(in_place == got);  // out may alias x
      for (int t = 0; t < N; t++) {
        double ss = 0;
        for (int i = 0; i < C; i++) ss += (double)x[t * C + i] * x[t * C + i];
        const double r = 1.0 / std::sqrt(ss / C + 1e-6);
        // the sum of C squares in float32 (C u relative), a division and a square root: (C + 4) u
        const double rel = (C + 4) * kUnitRoundoff;
        REQUIRE(std::fabs(rstd[t] - r) <= rel * r);
        for (int i = 0; i < C; i++) {
          const double want = x[t * C + i] * r * w[i];
          INFO("N=" << N << " C=" << C << " t=" << t << " i=" << i);
          REQUIRE(std::fabs(got[t * C + i] - want) <= (rel + 3 * kUnitRoundoff) * std::fabs(want) + 1e-30);
          REQUIRE(std::fabs(ref_out[t * C + i] - want) <= (rel + 3 * kUnitRoundoff) * std::fabs(want) + 1e-30);
        }
      }
    }
  }
}

// =====================================================================================================
// 2. the backward kernels against the scalar references (float)
// =====================================================================================================

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
      k::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                            rstd.data(), N, C);
      ref::layernorm_backward<float>(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), inp.data(), w.data(),
                                     mean.data(), rstd.data(), N, C);
      // dinp = (dnorm - mean(dnorm) - norm mean(dnorm norm)) rstd: the two means are sums of C terms
      // (|norm| <= sqrt(C)), so each differs by sum_bound(C, sum|dnorm| sqrt(C)); times rstd, plus the
      // starting value's rounding.
      double sum_abs_dnorm = 0;
      for (int i = 0; i < N * C; i++) sum_abs_dnorm = std::max(sum_abs_dnorm, (double)std::fabs(w[i % C] * dout[i]));
      require_close(
          dinp, dinp_ref,
          [&](std::size_t i) {
            const double s = C * sum_abs_dnorm * (1.0 + std::sqrt((double)C));
            return (sum_bound(C, s) / C + 8 * kU * (sum_abs_dnorm * (1 + std::sqrt((double)C)))) * rstd[i / C] +
                   4 * kU * std::fabs(dinp_ref[i]) + 1e-6;
          },
          "dinp");
      // dweight, dbias: N terms each, norm recomputed identically up to an ulp or two
      require_close_accumulated(
          dw, dw_ref, N, [&](std::size_t i, int t) { return dout[t * C + i] * std::sqrt((double)C); }, 8, "dweight");
      require_close_accumulated(
          db, db_ref, N, [&](std::size_t i, int t) { return dout[t * C + i]; }, 0, "dbias");
    }
}

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
      k::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
      ref::rmsnorm_backward<float>(dx_ref.data(), dw_ref.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
      // dx_i = r (n_i - c x_i), c = r^2 (sum_j n_j x_j) / C: the C-term sum differs by sum_bound(C, S),
      // S = sum_j |n_j x_j|, which moves c by r^2 sum_bound / C; the few roundings of the rest are
      // within 8 u of the terms' sizes, and the starting value keeps its own rounding.
      require_close(
          dx, dx_ref,
          [&](std::size_t i) {
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
          },
          "dinp");
      // dweight: N products accumulated in the same order, each within a fused-or-not rounding or two
      require_close_accumulated(
          dw, dw_ref, N, [&](std::size_t i, int t) { return (double)dout[t * C + i] * x[t * C + i] * rstd[t]; }, 8,
          "dweight");
    }
}

// =====================================================================================================
// 3. the references in double against central finite differences
// =====================================================================================================

TEST_CASE("train: layernorm's reference gradients equal finite differences (double)", "[train][fd]") {
  std::mt19937 rng(21);
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
}

TEST_CASE("train: rmsnorm's reference gradients equal finite differences (double)", "[train][llama][fd]") {
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
}
