// GEMM (cpp/src/kernels/gemm.cpp), every xsimd kernel against its scalar reference (kernels/reference.hpp)
// over edge sizes: matmul_forward on packed panels (and Eigen as a second reference), across its cache
// blocks, matmul_rows_forward (one head through W_O), matmul_transposed_forward (the tied LM head) and dot;
// matmul_backward and matmul_transposed_backward; the double references against central finite
// differences. Also which SIMD path the build took (simd_info, in gemm.cpp). The F16 GEMM is in
// test_f16.cpp. Each check states its tolerance and why.
#include <Eigen/Dense>

#include "kernel_checks.hpp"

namespace {

// matmul_forward's case: random x (T, K), W (K, N) and b (N) drawn in that order; the scalar reference's
// output `want`, and matmul_forward's `got` on W packed (pre-filled with -1: every element is written).
struct ForwardCase {
  std::vector<float> inp, w, b, want, got;
  k::PackedLinear packed;
  ForwardCase(int T, int K, int N, std::mt19937& rng)
      : inp(random_normal((std::size_t)T * K, rng)),
        w(random_normal((std::size_t)K * N, rng)),
        b(random_normal(N, rng)),
        want((std::size_t)T * N),
        got((std::size_t)T * N, -1.0f) {
    ref::matmul_forward<float>(want.data(), inp.data(), w.data(), b.data(), T, K, N);
    packed = k::pack_linear(w.data(), b.data(), K, N);
    k::matmul_forward(got.data(), inp.data(), packed, T);
  }
};

}  // namespace

// =====================================================================================================
// 1. the forward kernels (float)
// =====================================================================================================

TEST_CASE("the build uses the SIMD path it was configured for", "[kernels][simd]") {
  const k::SimdInfo info = k::simd_info();
  INFO("arch " << info.arch << ", lanes " << info.float_lanes);
#if HEADSCOPE_SIMD_EXPECTED
  REQUIRE(info.simd);
  REQUIRE(info.float_lanes >= 4);
  REQUIRE(k::linear_panel_width() == 2 * info.float_lanes);
#ifdef __EMSCRIPTEN__
  // xsimd's sse4.1 arch, lowered by Emscripten to SIMD128: 4 float lanes.
  REQUIRE(info.arch == "sse4.1");
  REQUIRE(info.float_lanes == 4);
#endif
#if defined(HEADSCOPE_RELAXED_SIMD) && HEADSCOPE_RELAXED_SIMD
  REQUIRE(info.relaxed_madd);
#else
  REQUIRE_FALSE(info.relaxed_madd);
#endif
#else
  REQUIRE_FALSE(info.simd);
#endif
}

TEST_CASE("matmul_forward equals the reference and Eigen", "[kernels][matmul]") {
  std::mt19937 rng(1);
  for (int T : {1, 2, 3, 4, 5, 9, 17}) {
    for (int K : kEdgeSizes) {
      for (int N : {1, 3, 4, 5, 7, 8, 9, 16, 17, 63, 64, 65}) {
        const ForwardCase c(T, K, N, rng);
        const auto &inp = c.inp, &w = c.w, &b = c.b, &ref = c.want, &got = c.got;

        // Eigen as a second, independent reference for the scalar loops themselves
        using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        const RowMat eig =
            (Eigen::Map<const RowMat>(inp.data(), T, K) * Eigen::Map<const RowMat>(w.data(), K, N)).rowwise() +
            Eigen::Map<const Eigen::RowVectorXf>(b.data(), N);
        for (int t = 0; t < T; t++)
          for (int n = 0; n < N; n++) {
            double sum_abs = std::fabs(b[n]);
            for (int kk = 0; kk < K; kk++)
              sum_abs += std::fabs(inp[(std::size_t)t * K + kk] * w[(std::size_t)kk * N + n]);
            const double tol = dot_error_bound(K + 1, sum_abs);  // K products + the bias
            INFO("T=" << T << " K=" << K << " N=" << N << " at (" << t << ", " << n << ")");
            REQUIRE(std::fabs(got[(std::size_t)t * N + n] - ref[(std::size_t)t * N + n]) <= tol);
            REQUIRE(std::fabs(eig(t, n) - ref[(std::size_t)t * N + n]) <= tol);
          }
      }
    }
  }
}

TEST_CASE("matmul_forward across its cache blocks: edges of tiles, depth slices and row blocks", "[kernels][matmul]") {
  // Sizes on both sides of every boundary where the blocked loop changes what it does: a partial
  // register tile, a depth slice continued from stored partial sums, a second group of panels.
  const k::GemmBlocking b = k::gemm_blocking();
  const int P = std::max(1, k::linear_panel_width());
  INFO("tile_rows " << b.tile_rows << " depth_block " << b.depth_block << " panel_group " << b.panel_group << " panel "
                    << P);
  std::mt19937 rng(11);
  const std::vector<int> Ts = {1, b.tile_rows - 1, b.tile_rows, b.tile_rows + 1, 5 * b.tile_rows + 3};
  const std::vector<int> Ks = {1, b.depth_block - 1, b.depth_block, b.depth_block + 1, 2 * b.depth_block + 3};
  // 4 * P and 5 * P + 1: a lone row takes four whole panels at a time (gemm_tile.hpp, packed_row_panels)
  const std::vector<int> Ns = {P - 1, P + 1, 3 * P, 4 * P, 5 * P + 1, b.panel_group * P - 1, b.panel_group * P + 1};
  for (int T : Ts) {
    if (T < 1) continue;
    for (int K : Ks) {
      if (K < 1) continue;
      for (int N : Ns) {
        if (N < 1) continue;
        const ForwardCase c(T, K, N, rng);
        const auto &inp = c.inp, &w = c.w, &bias = c.b, &ref = c.want, &got = c.got;
        const k::PackedLinear& packed = c.packed;
        for (int t = 0; t < T; t++)
          for (int n = 0; n < N; n++) {
            double sum_abs = std::fabs(bias[n]);
            for (int kk = 0; kk < K; kk++)
              sum_abs += std::fabs(inp[(std::size_t)t * K + kk] * w[(std::size_t)kk * N + n]);
            INFO("T=" << T << " K=" << K << " N=" << N << " at (" << t << ", " << n << ")");
            // K products + the bias in another order, possibly fused: Higham's bound (dot_error_bound)
            REQUIRE(std::fabs(got[(std::size_t)t * N + n] - ref[(std::size_t)t * N + n]) <=
                    dot_error_bound(K + 1, sum_abs));
          }
        // Each row alone (as the incremental update computes a new token) must give the same bits
        // as the call over all rows: the typing-equals-full-run invariant rests on it.
        std::vector<float> row((std::size_t)N);
        for (int t : {0, T / 2, T - 1}) {
          k::matmul_forward(row.data(), inp.data() + (std::size_t)t * K, packed, 1);
          INFO("T=" << T << " K=" << K << " N=" << N << " row " << t << " alone");
          REQUIRE(std::equal(row.begin(), row.end(), got.begin() + (std::ptrdiff_t)t * N));
        }
      }
    }
  }
}

TEST_CASE("matmul_rows_forward: a row range of W with a strided input, as for one head through W_O",
          "[kernels][matmul]") {
  std::mt19937 rng(2);
  for (int HS : {1, 3, 4, 5, 12, 20, 64}) {
    for (int NH : {1, 3, 4}) {
      const int C = HS * NH;
      for (int T : {1, 4, 7}) {
        const auto inp = random_normal((std::size_t)T * C, rng), w = random_normal((std::size_t)C * C, rng);
        const k::PackedLinear packed = k::pack_linear(w.data(), nullptr, C, C);
        for (int h = 0; h < NH; h++) {
          std::vector<float> got((std::size_t)T * C);
          k::matmul_rows_forward(got.data(), inp.data(), C, packed, h * HS, (h + 1) * HS, T);
          // reference: the head's columns of the input, copied out, times the head's rows of W
          std::vector<float> sub_inp((std::size_t)T * HS), sub_w((std::size_t)HS * C), ref((std::size_t)T * C);
          for (int t = 0; t < T; t++)
            for (int d = 0; d < HS; d++) sub_inp[(std::size_t)t * HS + d] = inp[(std::size_t)t * C + h * HS + d];
          std::copy(w.begin() + (std::ptrdiff_t)h * HS * C, w.begin() + (std::ptrdiff_t)(h + 1) * HS * C,
                    sub_w.begin());
          ref::matmul_forward<float>(ref.data(), sub_inp.data(), sub_w.data(), nullptr, T, HS, C);
          for (std::size_t i = 0; i < ref.size(); i++) {
            double sum_abs = 0;
            const int t = (int)(i / C), n = (int)(i % C);
            for (int d = 0; d < HS; d++)
              sum_abs += std::fabs(sub_inp[(std::size_t)t * HS + d] * sub_w[(std::size_t)d * C + n]);
            INFO("HS=" << HS << " NH=" << NH << " T=" << T << " head " << h << " index " << i);
            REQUIRE(std::fabs(got[i] - ref[i]) <= dot_error_bound(HS, sum_abs));
          }
        }
      }
    }
  }
}

TEST_CASE("matmul_transposed_forward (tied LM head) equals the reference", "[kernels][matmul]") {
  std::mt19937 rng(3);
  for (int T : {1, 2, 5}) {
    for (int K : kEdgeSizes) {
      for (int N : {1, 3, 4, 5, 8, 9, 16, 65, 257}) {  // groups of 8 rows (gemm.cpp, kLmRowsAtOnce) and tails
        const auto inp = random_normal((std::size_t)T * K, rng), w = random_normal((std::size_t)N * K, rng);
        std::vector<float> ref((std::size_t)T * N), got((std::size_t)T * N);
        ref::matmul_transposed_forward<float>(ref.data(), inp.data(), w.data(), T, K, N);
        k::matmul_transposed_forward(got.data(), inp.data(), w.data(), T, K, N);
        for (int t = 0; t < T; t++)
          for (int n = 0; n < N; n++) {
            double sum_abs = 0;
            for (int kk = 0; kk < K; kk++)
              sum_abs += std::fabs(inp[(std::size_t)t * K + kk] * w[(std::size_t)n * K + kk]);
            INFO("T=" << T << " K=" << K << " N=" << N << " at (" << t << ", " << n << ")");
            REQUIRE(std::fabs(got[(std::size_t)t * N + n] - ref[(std::size_t)t * N + n]) <=
                    dot_error_bound(K, sum_abs));
          }
      }
    }
  }
}

TEST_CASE("dot equals the reference", "[kernels]") {
  std::mt19937 rng(4);
  for (int N : kEdgeSizes) {
    const auto a = random_normal(N, rng), b = random_normal(N, rng);
    double sum_abs = 0;
    for (int i = 0; i < N; i++) sum_abs += std::fabs(a[i] * b[i]);
    INFO("N=" << N);
    REQUIRE(std::fabs(k::dot(a.data(), b.data(), N) - ref::dot<float>(a.data(), b.data(), N)) <=
            dot_error_bound(N, sum_abs));
  }
}

// =====================================================================================================
// 2. the backward kernels against the scalar references (float)
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
        k::matmul_unpacked_forward(out.data(), inp.data(), w.data(), b.data(), N, K, OC);
        ref::matmul_forward<float>(out_ref.data(), inp.data(), w.data(), b.data(), N, K, OC);
        // each output is K products plus the bias
        require_close(
            out, out_ref,
            [&](std::size_t i) {
              double s = std::fabs(b[i % OC]);
              for (int k = 0; k < K; k++) s += std::fabs(inp[(i / OC) * K + k] * w[k * OC + i % OC]);
              return sum_bound(K + 1, s);
            },
            "out");
        // gradients accumulate into non-zero starting values, as in the trainer
        auto dinp = random_values(N * K, rng), dw = random_values(K * OC, rng), db = random_values(OC, rng);
        auto dinp_ref = dinp, dw_ref = dw, db_ref = db;
        k::matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, K, OC);
        ref::matmul_backward<float>(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), inp.data(), w.data(), N,
                                    K, OC);
        // dinp: OC products + the starting value; dweight: N products + start; dbias: N terms + start
        require_close_accumulated(
            dinp, dinp_ref, OC, [&](std::size_t i, int o) { return dout[(i / K) * OC + o] * w[(i % K) * OC + o]; }, 2,
            "dinp");
        require_close_accumulated(
            dw, dw_ref, N, [&](std::size_t i, int t) { return inp[t * K + i / OC] * dout[t * OC + i % OC]; }, 2,
            "dweight");
        require_close_accumulated(
            db, db_ref, N, [&](std::size_t i, int t) { return dout[t * OC + i]; }, 2, "dbias");
        // no weight or bias gradient asked (the head gates' backward): the same dinp, nothing else touched
        const auto start = random_values(N * K, rng);
        auto with_w = start, alone = start, dw2 = dw_ref;
        k::matmul_backward(with_w.data(), dw2.data(), nullptr, dout.data(), inp.data(), w.data(), N, K, OC);
        k::matmul_backward(alone.data(), nullptr, nullptr, dout.data(), inp.data(), w.data(), N, K, OC);
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
        k::matmul_transposed_backward(dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), N, K, OC);
        ref::matmul_transposed_backward<float>(dinp_ref.data(), dw_ref.data(), dout.data(), inp.data(), w.data(), N, K,
                                               OC);
        require_close_accumulated(
            dinp, dinp_ref, OC, [&](std::size_t i, int o) { return dout[(i / K) * OC + o] * w[o * K + i % K]; }, 2,
            "dinp");
        require_close_accumulated(
            dw, dw_ref, N, [&](std::size_t i, int t) { return dout[t * OC + i / K] * inp[t * K + i % K]; }, 2,
            "dweight");
        // without the weight's gradient: the same dinp
        const auto start = random_values(N * K, rng);
        auto with_w = start, alone = start;
        k::matmul_transposed_backward(with_w.data(), dw.data(), dout.data(), inp.data(), w.data(), N, K, OC);
        k::matmul_transposed_backward(alone.data(), nullptr, dout.data(), inp.data(), w.data(), N, K, OC);
        REQUIRE(with_w == alone);
      }
}

TEST_CASE("train: matmul_packed_backward equals matmul_backward on the unpacked weight, bit for bit",
          "[train][matmul]") {
  // the input's gradient through a Model's own packed layer (a borrowing Trainer): for every storage the
  // weight is read as unpack_linear gives it, so the product must be matmul_backward's on that weight
  // exactly (same transposed scratch, same GEMM); and that one is checked against the reference above
  std::mt19937 rng(13);
  const int pw = k::linear_panel_width();
  for (const char* storage : {"f32", "f16", "q8"})
    for (int N : {1, 3, 7})
      for (int K : {1, 5, 17, 67})
        for (int OC : {1, pw - 1, pw + 1, 3 * pw + 5}) {
          if (OC < 1) continue;
          INFO(storage << " N=" << N << " K=" << K << " OC=" << OC);
          const auto w = random_values(K * OC, rng), b = random_values(OC, rng), dout = random_values(N * OC, rng);
          const std::string s = storage;
          const k::PackedLinear W = s == "f32"   ? k::pack_linear(w.data(), b.data(), K, OC)
                                    : s == "f16" ? k::pack_linear_f16(w.data(), b.data(), K, OC)
                                                 : k::pack_linear_q8(w.data(), b.data(), K, OC);
          std::vector<float> unpacked((std::size_t)K * OC);
          k::unpack_linear(unpacked.data(), nullptr, W);
          // gradients accumulate into non-zero starting values, as in the trainer
          const auto start = random_values(N * K, rng);
          auto want = start, got = start;
          k::matmul_backward(want.data(), nullptr, nullptr, dout.data(), nullptr, unpacked.data(), N, K, OC);
          std::vector<float> scratch;
          k::matmul_packed_backward(got.data(), dout.data(), W, N, scratch);
          REQUIRE(scratch.size() == (std::size_t)K * OC);
          REQUIRE(got == want);
        }
}

// =====================================================================================================
// 3. the references in double against central finite differences
// =====================================================================================================

TEST_CASE("train: matmul's reference gradients equal finite differences (double)", "[train][fd]") {
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
}
