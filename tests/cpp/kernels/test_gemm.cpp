// Every xsimd kernel against its scalar reference (kernels/reference.hpp) over edge sizes:
// 1, lanes-1, lanes, lanes+1, ..., odd head sizes and T = 1. Each check states its tolerance and why.
#include <Eigen/Dense>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/reference.hpp"
#include "test_util.hpp"

namespace k = headscope::kernels;
namespace ref = headscope::kernels::ref;

using test_util::random_normal;

namespace {

// Sizes around every lane count in use (4 with SIMD128/SSE, 8 AVX2, 16 AVX-512) and the 8-wide
// GEMM panel, plus sizes that are not multiples of anything.
const std::vector<int> kEdgeSizes = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65};

// Unit roundoff of float32. A sum of K products computed in any order is within
// gamma_K * sum|a_k b_k| of the exact value (Higham, Accuracy and Stability, 3.1), gamma_K = K u / (1 - K u).
// Two such computations (reference, SIMD with another order and with or without fused multiply-add)
// differ by at most twice that.
using test_util::kUnitRoundoff;
double dot_error_bound(int K, double sum_abs) {
  const double gamma = (K + 1) * kUnitRoundoff / (1.0 - (K + 1) * kUnitRoundoff);
  return 2.0 * gamma * sum_abs + 1e-30;
}

}  // namespace

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
        const auto inp = random_normal((std::size_t)T * K, rng), w = random_normal((std::size_t)K * N, rng),
                   b = random_normal(N, rng);
        std::vector<float> ref((std::size_t)T * N), got((std::size_t)T * N, -1.0f);
        ref::matmul_forward<float>(ref.data(), inp.data(), w.data(), b.data(), T, K, N);
        const k::PackedLinear packed = k::pack_linear(w.data(), b.data(), K, N);
        k::matmul_forward(got.data(), inp.data(), packed, T);

        // Eigen as a second, independent reference for the scalar loops themselves
        using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        const RowMat eig = (Eigen::Map<const RowMat>(inp.data(), T, K) * Eigen::Map<const RowMat>(w.data(), K, N))
                               .rowwise() + Eigen::Map<const Eigen::RowVectorXf>(b.data(), N);
        for (int t = 0; t < T; t++)
          for (int n = 0; n < N; n++) {
            double sum_abs = std::fabs(b[n]);
            for (int kk = 0; kk < K; kk++) sum_abs += std::fabs(inp[(std::size_t)t * K + kk] * w[(std::size_t)kk * N + n]);
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
  // register tile, a depth slice continued from stored partial sums, a second row block.
  const k::GemmBlocking b = k::gemm_blocking();
  const int P = std::max(1, k::linear_panel_width());
  INFO("tile_rows " << b.tile_rows << " depth_block " << b.depth_block << " row_block " << b.row_block << " panel " << P);
  std::mt19937 rng(11);
  const std::vector<int> Ts = {1, b.tile_rows - 1, b.tile_rows, b.tile_rows + 1, b.row_block - 1, b.row_block,
                               b.row_block + b.tile_rows + 1};
  const std::vector<int> Ks = {b.depth_block - 1, b.depth_block, b.depth_block + 1, 2 * b.depth_block + 3};
  const std::vector<int> Ns = {P - 1, P + 1, 3 * P};
  for (int T : Ts) {
    if (T < 1) continue;
    for (int K : Ks) {
      if (K < 1) continue;
      for (int N : Ns) {
        if (N < 1) continue;
        const auto inp = random_normal((std::size_t)T * K, rng), w = random_normal((std::size_t)K * N, rng),
                   bias = random_normal(N, rng);
        std::vector<float> ref((std::size_t)T * N), got((std::size_t)T * N, -1.0f);
        ref::matmul_forward<float>(ref.data(), inp.data(), w.data(), bias.data(), T, K, N);
        const k::PackedLinear packed = k::pack_linear(w.data(), bias.data(), K, N);
        k::matmul_forward(got.data(), inp.data(), packed, T);
        for (int t = 0; t < T; t++)
          for (int n = 0; n < N; n++) {
            double sum_abs = std::fabs(bias[n]);
            for (int kk = 0; kk < K; kk++) sum_abs += std::fabs(inp[(std::size_t)t * K + kk] * w[(std::size_t)kk * N + n]);
            INFO("T=" << T << " K=" << K << " N=" << N << " at (" << t << ", " << n << ")");
            // K products + the bias in another order, possibly fused: Higham's bound (dot_error_bound)
            REQUIRE(std::fabs(got[(std::size_t)t * N + n] - ref[(std::size_t)t * N + n]) <= dot_error_bound(K + 1, sum_abs));
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
          std::copy(w.begin() + (std::ptrdiff_t)h * HS * C, w.begin() + (std::ptrdiff_t)(h + 1) * HS * C, sub_w.begin());
          ref::matmul_forward<float>(ref.data(), sub_inp.data(), sub_w.data(), nullptr, T, HS, C);
          for (std::size_t i = 0; i < ref.size(); i++) {
            double sum_abs = 0;
            const int t = (int)(i / C), n = (int)(i % C);
            for (int d = 0; d < HS; d++) sum_abs += std::fabs(sub_inp[(std::size_t)t * HS + d] * sub_w[(std::size_t)d * C + n]);
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
      for (int N : {1, 3, 4, 5, 9, 65, 257}) {
        const auto inp = random_normal((std::size_t)T * K, rng), w = random_normal((std::size_t)N * K, rng);
        std::vector<float> ref((std::size_t)T * N), got((std::size_t)T * N);
        ref::matmul_transposed_forward<float>(ref.data(), inp.data(), w.data(), T, K, N);
        k::matmul_transposed_forward(got.data(), inp.data(), w.data(), T, K, N);
        for (int t = 0; t < T; t++)
          for (int n = 0; n < N; n++) {
            double sum_abs = 0;
            for (int kk = 0; kk < K; kk++) sum_abs += std::fabs(inp[(std::size_t)t * K + kk] * w[(std::size_t)n * K + kk]);
            INFO("T=" << T << " K=" << K << " N=" << N << " at (" << t << ", " << n << ")");
            REQUIRE(std::fabs(got[(std::size_t)t * N + n] - ref[(std::size_t)t * N + n]) <= dot_error_bound(K, sum_abs));
          }
      }
    }
  }
}

TEST_CASE("dot and add equal the reference", "[kernels]") {
  std::mt19937 rng(4);
  for (int N : kEdgeSizes) {
    const auto a = random_normal(N, rng), b = random_normal(N, rng);
    double sum_abs = 0;
    for (int i = 0; i < N; i++) sum_abs += std::fabs(a[i] * b[i]);
    INFO("N=" << N);
    REQUIRE(std::fabs(k::dot(a.data(), b.data(), N) - ref::dot<float>(a.data(), b.data(), N)) <= dot_error_bound(N, sum_abs));
    std::vector<float> got(N), ref(N);
    k::add_forward(got.data(), a.data(), b.data(), N);
    ref::add_forward<float>(ref.data(), a.data(), b.data(), N);
    REQUIRE(got == ref);  // one correctly rounded addition per element: bitwise equal
  }
}

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

TEST_CASE("element-wise kernels give an element the same bits wherever the array ends", "[kernels][incremental]") {
  // The model applies GELU to n * n_inner values at once, n = the rows computed in this call: one when
  // typing, all of them in a full run. If the last partial batch took a different (scalar) formula,
  // typing would differ from a full run whenever n * n_inner is not a multiple of the lane count.
  std::mt19937 rng(12);
  const auto x = random_normal(67, rng, 4.0f);
  std::vector<float> neg(x.size());
  for (std::size_t i = 0; i < x.size(); i++) neg[i] = -std::fabs(x[i]) * 5.0f;
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

TEST_CASE("attention_forward equals the reference over head sizes, lengths and cache offsets", "[kernels][attention]") {
  std::mt19937 rng(8);
  for (int HS : {1, 3, 4, 5, 7, 8, 9, 12, 16, 20, 63, 64, 65}) {
    for (int NH : {1, 3}) {
      const int C = HS * NH;
      // around the query blocks (4 rows with SIMD128/AVX2, 12 with AVX-512), the value sub-blocks
      // (2, 6) and the key panels (8, 16, 32 keys)
      for (int T : {1, 3, 4, 5, 8, 9, 11, 12, 13, 17, 25, 33, 65}) {
        for (int t_begin : {0, T / 2, T - 1}) {
          const int stride = T + 3;  // rows longer than T, as in the model's capacity-sized buffers
          const auto qkv = random_normal((std::size_t)T * 3 * C, rng, 0.7f);
          std::vector<float> att_ref((std::size_t)NH * stride * stride, 7.0f), att_got = att_ref;
          std::vector<float> out_ref((std::size_t)T * C, 7.0f), out_got = out_ref;
          ref::attention_forward<float>(out_ref.data(), att_ref.data(), qkv.data(), t_begin, T, C, NH, stride);
          // the key panels start as garbage (finite): rows [0, t_begin) come from an earlier call, as in the model
          std::vector<float> key_panels(k::attention_key_panels_floats(stride, C, NH), 9.0f);
          if (t_begin > 0) {
            std::vector<float> att_prev(att_got.size()), out_prev(out_got.size());
            k::attention_forward(out_prev.data(), att_prev.data(), qkv.data(), 0, t_begin, C, NH, stride, key_panels.data());
          }
          k::attention_forward(out_got.data(), att_got.data(), qkv.data(), t_begin, T, C, NH, stride, key_panels.data());
          for (int h = 0; h < NH; h++)
            for (int t = 0; t < stride; t++)
              for (int j = 0; j < stride; j++) {
                const std::size_t i = ((std::size_t)h * stride + t) * stride + j;
                INFO("HS=" << HS << " NH=" << NH << " T=" << T << " t_begin=" << t_begin << " h=" << h << " t=" << t << " j=" << j);
                if (t < t_begin || t >= T) {
                  REQUIRE(att_got[i] == 7.0f);  // rows outside [t_begin, T) untouched (the cache)
                } else if (j > t) {
                  REQUIRE(att_got[i] == 0.0f);  // causal mask: exactly zero
                } else {
                  // scores are dots of HS terms (scaled by 1/sqrt(HS) <= 1, |q|,|k| ~ 0.7): the
                  // softmax turns an absolute score error e into a relative probability error ~2e.
                  double sum_abs = 0;
                  for (int d = 0; d < HS; d++)
                    sum_abs += std::fabs(qkv[(std::size_t)t * 3 * C + h * HS + d] * qkv[(std::size_t)j * 3 * C + C + h * HS + d]);
                  const double tol = (2.0 * dot_error_bound(HS, sum_abs) + (t + 9) * kUnitRoundoff) * att_ref[i] + 1e-9;
                  REQUIRE(std::fabs(att_got[i] - att_ref[i]) <= tol);
                }
              }
          for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
              const std::size_t i = (std::size_t)t * C + c;
              INFO("out: HS=" << HS << " NH=" << NH << " T=" << T << " t_begin=" << t_begin << " t=" << t << " c=" << c);
              if (t < t_begin) {
                REQUIRE(out_got[i] == 7.0f);
              } else {
                // a convex combination of t+1 values (|v| < ~4): the probability errors above plus
                // t+1 rounded additions; 1e-5 absolute covers both with margin at T <= 65.
                REQUIRE(std::fabs(out_got[i] - out_ref[i]) <= 1e-5 + 1e-5 * std::fabs(out_ref[i]));
              }
            }
        }
      }
    }
  }
}

TEST_CASE("attention_forward row by row equals one call over all rows, bit for bit", "[kernels][attention]") {
  // Typing computes one new row per call; a full run computes all rows in one call. The kernel's
  // tiles group rows differently in the two cases but keep each score's and each output's sum in
  // the same order, so the results must be identical: tolerance 0. (The model-level test checks
  // the same through the whole forward on short texts; this one covers long rows and panel edges.)
  std::mt19937 rng(11);
  for (int HS : {1, 5, 8, 20, 64}) {
    for (int NH : {1, 3}) {
      const int C = HS * NH, T = 70, stride = 72;
      const auto qkv = random_normal((std::size_t)T * 3 * C, rng, 0.7f);
      std::vector<float> att_all((std::size_t)NH * stride * stride, 0.0f), att_rows = att_all;
      std::vector<float> out_all((std::size_t)T * C, 0.0f), out_rows = out_all;
      std::vector<float> panels_all(k::attention_key_panels_floats(stride, C, NH), 0.0f), panels_rows = panels_all;
      k::attention_forward(out_all.data(), att_all.data(), qkv.data(), 0, T, C, NH, stride, panels_all.data());
      for (int t = 0; t < T; t++)
        k::attention_forward(out_rows.data(), att_rows.data(), qkv.data(), t, t + 1, C, NH, stride, panels_rows.data());
      INFO("HS=" << HS << " NH=" << NH);
      REQUIRE(att_rows == att_all);
      REQUIRE(out_rows == out_all);
      // and a paste: rows [0, 40) in one call, then [40, T) in another
      std::vector<float> att_two(att_all.size(), 0.0f), out_two(out_all.size(), 0.0f), panels_two(panels_all.size(), 3.0f);
      k::attention_forward(out_two.data(), att_two.data(), qkv.data(), 0, 40, C, NH, stride, panels_two.data());
      k::attention_forward(out_two.data(), att_two.data(), qkv.data(), 40, T, C, NH, stride, panels_two.data());
      REQUIRE(att_two == att_all);
      REQUIRE(out_two == out_all);
    }
  }
}

