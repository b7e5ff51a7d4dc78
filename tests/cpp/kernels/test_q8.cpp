// 8-bit weights (cpp/src/kernels/q8.cpp): the quantization of weights and inputs against the
// definition in kernels.hpp written out again here, the packed GEMM against ref::matmul_q8_forward in
// double on the same integers (integer-exact sums), and against the float32 product within the bound
// the quantization steps give; one row alone against rows together; the hostile inputs' rules.
// Sizes around the register tile and the groups of 4 (or 2) k values.
#include "kernel_checks.hpp"

namespace {

using kernel_checks::kU;

// The definition (kernels.hpp, "8-bit weights"), in float32 as it states: an input row's codes and scale
void quantize_row_def(const float* x, int K, uint8_t* codes, float* scale) {
  float m = 0.0f;
  bool finite = true;
  for (int k = 0; k < K; k++) {
    finite = finite && std::isfinite(x[k]);
    m = std::max(m, std::fabs(x[k]));
  }
  for (int k = 0; k < K; k++) codes[k] = 64;
  if (!finite) {
    *scale = NAN;
    return;
  }
  *scale = m / 63.0f;
  if (m == 0.0f) return;
  for (int k = 0; k < K; k++) codes[k] = (uint8_t)(64 + (int)std::nearbyint(x[k] * (63.0f / m)));
}

// a layer's integers and scales through unpack_linear_q8
struct Unpacked {
  std::vector<int8_t> q;
  std::vector<float> scales;
  explicit Unpacked(const k::PackedLinear& W) : q((std::size_t)W.K * W.N), scales(W.N) {
    k::unpack_linear_q8(q.data(), scales.data(), W);
  }
};

// codes without the padding to whole groups, and the row scales, from q8_quantize_rows
void quantize(const std::vector<float>& x, int T, int K, std::vector<uint8_t>& codes, std::vector<float>& scales) {
  const int stride = k::q8_code_stride(K);
  std::vector<uint8_t> padded((std::size_t)T * stride, 0);
  scales.assign(T, 0.0f);
  k::q8_quantize_rows(padded.data(), scales.data(), x.data(), K, T, K);
  codes.resize((std::size_t)T * K);
  for (int t = 0; t < T; t++)
    for (int kk = 0; kk < K; kk++) codes[(std::size_t)t * K + kk] = padded[(std::size_t)t * stride + kk];
}

}  // namespace

TEST_CASE("q8: input rows quantize to the definition's codes, padding 64", "[kernels][q8]") {
  std::mt19937 rng(31);
  for (int K : kEdgeSizes) {
    const int T = 4, stride = k::q8_code_stride(K);
    REQUIRE(stride % k::q8_group() == 0);
    REQUIRE(stride >= K);
    std::vector<float> x = random_normal((std::size_t)T * K, rng);
    for (int kk = 0; kk < K; kk++) x[(std::size_t)K + kk] = 0.0f;  // row 1 all zero
    x[2 * (std::size_t)K + K / 2] = NAN;                           // row 2 holds a NaN
    x[3 * (std::size_t)K] = -INFINITY;                             // row 3 an infinity
    std::vector<uint8_t> codes((std::size_t)T * stride, 0);
    std::vector<float> scales(T);
    k::q8_quantize_rows(codes.data(), scales.data(), x.data(), K, T, K);
    for (int t = 0; t < T; t++) {
      std::vector<uint8_t> want(K);
      float want_scale;
      quantize_row_def(&x[(std::size_t)t * K], K, want.data(), &want_scale);
      INFO("K " << K << " row " << t);
      // exact: the same float32 operations as the definition
      if (std::isnan(want_scale))
        REQUIRE(std::isnan(scales[t]));
      else
        REQUIRE(scales[t] == want_scale);
      for (int kk = 0; kk < K; kk++) REQUIRE(codes[(std::size_t)t * stride + kk] == want[kk]);
      for (int kk = K; kk < stride; kk++) REQUIRE(codes[(std::size_t)t * stride + kk] == 64);
      // every code fits 7 bits (the relaxed dot product's condition), and dequantizes to within half a
      // step: |x - (code - 64) s| <= s (1/2 + 64 u) (the product x * (63 / m) is rounded once before
      // the rounding to an integer, and s = m / 63 once)
      if (t == 0)
        for (int kk = 0; kk < K; kk++) {
          const int c = codes[kk];
          REQUIRE(c >= 1);
          REQUIRE(c <= 127);
          REQUIRE(std::fabs(x[kk] - (c - 64) * (double)scales[0]) <= scales[0] * (0.5 + 64 * kU));
        }
    }
    REQUIRE(scales[1] == 0.0f);
  }
}

TEST_CASE("q8: weights quantize per column to the definition's integers and scales", "[kernels][q8]") {
  std::mt19937 rng(32);
  for (int K : {1, 3, 5, 8, 17, 33})
    for (int N : kEdgeSizes) {
      std::vector<float> w = random_normal((std::size_t)K * N, rng);
      for (int kk = 0; kk < K; kk++) w[(std::size_t)kk * N + N / 2] = 0.0f;  // an all-zero column
      const k::PackedLinear W = k::pack_linear_q8(w.data(), nullptr, K, N);
      REQUIRE(W.is_q8());
      const Unpacked u(W);
      INFO("K " << K << " N " << N);
      for (int n = 0; n < N; n++) {
        float m = 0.0f;
        for (int kk = 0; kk < K; kk++) m = std::max(m, std::fabs(w[(std::size_t)kk * N + n]));
        REQUIRE(u.scales[n] == m / 127.0f);
        for (int kk = 0; kk < K; kk++) {
          const float want = m == 0.0f ? 0.0f : std::nearbyint(w[(std::size_t)kk * N + n] * (127.0f / m));
          REQUIRE(u.q[(std::size_t)kk * N + n] == (int)want);
        }
      }
      // unpack_linear gives the dequantized weights q * s (a Trainer starting from an 8-bit model)
      std::vector<float> back((std::size_t)K * N);
      k::unpack_linear(back.data(), nullptr, W);
      for (std::size_t i = 0; i < back.size(); i++) REQUIRE(back[i] == (float)u.q[i] * u.scales[i % N]);
    }
}

TEST_CASE("q8: matmul_forward equals the double reference on the same integers", "[kernels][q8]") {
  std::mt19937 rng(33);
  for (int T : {1, 2, 3, 4, 5, 9, 17})
    for (int K : {1, 3, 4, 5, 7, 8, 9, 16, 17, 64, 65, 300})
      // 130: a lone row takes four whole panels at a time, of 8 (wasm) to 32 (AVX-512) columns
      for (int N : {1, 5, 8, 9, 16, 17, 31, 33, 65, 130}) {
        const auto x = random_normal((std::size_t)T * K, rng), w = random_normal((std::size_t)K * N, rng, 0.1f);
        const auto b = random_normal(N, rng);
        const k::PackedLinear W = k::pack_linear_q8(w.data(), b.data(), K, N);
        std::vector<float> got((std::size_t)T * N, -1.0f);
        k::matmul_forward(got.data(), x.data(), W, T);
        const Unpacked u(W);
        std::vector<uint8_t> codes;
        std::vector<float> sx;
        quantize(x, T, K, codes, sx);
        std::vector<double> want((std::size_t)T * N), plain((std::size_t)T * N);
        ref::matmul_q8_forward<double>(want.data(), u.q.data(), u.scales.data(), codes.data(), sx.data(), b.data(), T,
                                       K, N);
        ref::matmul_q8_forward<double>(plain.data(), u.q.data(), u.scales.data(), codes.data(), sx.data(), nullptr, T,
                                       K, N);
        INFO("T " << T << " K " << K << " N " << N);
        for (std::size_t i = 0; i < got.size(); i++) {
          // the int32 sum is exact in both; then float32 rounds the sum's conversion, two products and
          // the bias's addition once each: within 3 u of the product and u of the result (plus 1e-30)
          const double tol = 3.5 * kU * std::fabs(plain[i]) + 1.5 * kU * std::fabs(want[i]) + 1e-30;
          INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
          REQUIRE(std::fabs(got[i] - want[i]) <= tol);
        }
      }
}

TEST_CASE("q8: the product is the float32 product within the quantization's bound", "[kernels][q8]") {
  std::mt19937 rng(34);
  for (int T : {1, 4, 7})
    for (int K : {5, 64, 301})
      for (int N : {9, 40}) {
        const auto x = random_normal((std::size_t)T * K, rng), w = random_normal((std::size_t)K * N, rng, 0.1f);
        const auto b = random_normal(N, rng);
        const k::PackedLinear W = k::pack_linear_q8(w.data(), b.data(), K, N);
        std::vector<float> got((std::size_t)T * N), exact((std::size_t)T * N);
        k::matmul_forward(got.data(), x.data(), W, T);
        ref::matmul_forward<float>(exact.data(), x.data(), w.data(), b.data(), T, K, N);
        const Unpacked u(W);
        std::vector<uint8_t> codes;
        std::vector<float> sx;
        quantize(x, T, K, codes, sx);
        INFO("T " << T << " K " << K << " N " << N);
        for (int t = 0; t < T; t++)
          for (int n = 0; n < N; n++) {
            // w x - w^ x^ = w (x - x^) + (w - w^) x^, with |x - x^| <= s_x (1/2 + 64 u) and
            // |w - w^| <= s_n (1/2 + 128 u): the sum over k of both, plus the float32 reference's own
            // rounding (sum_bound) and the epilogue's (4 u of the result)
            double bound = 0.0, terms = 0.0;
            for (int kk = 0; kk < K; kk++) {
              const double wk = w[(std::size_t)kk * N + n], xk = x[(std::size_t)t * K + kk];
              const double xq = (codes[(std::size_t)t * K + kk] - 64) * (double)sx[t];
              bound += std::fabs(wk) * sx[t] * (0.5 + 64 * kU) + std::fabs(xq) * u.scales[n] * (0.5 + 128 * kU);
              terms += std::fabs(wk * xk);
            }
            const std::size_t i = (std::size_t)t * N + n;
            bound += kernel_checks::sum_bound(K, terms + std::fabs(b[n])) + 4 * kU * std::fabs(exact[i]);
            INFO("row " << t << " column " << n << ": got " << got[i] << ", float32 " << exact[i]);
            REQUIRE(std::fabs((double)got[i] - exact[i]) <= bound);
          }
      }
}

TEST_CASE("q8: a row computed alone equals the same row computed with others, bit for bit", "[kernels][q8]") {
  // typing computes the new token's row alone; a full run computes it in a tile of 4
  std::mt19937 rng(35);
  const int T = 11, K = 70, N = 165;  // whole groups of four panels and a partial panel on every path
  const auto x = random_normal((std::size_t)T * K, rng), w = random_normal((std::size_t)K * N, rng);
  const k::PackedLinear W = k::pack_linear_q8(w.data(), nullptr, K, N);
  std::vector<float> all((std::size_t)T * N), one(N);
  k::matmul_forward(all.data(), x.data(), W, T);
  for (int t = 0; t < T; t++) {
    k::matmul_forward(one.data(), &x[(std::size_t)t * K], W, 1);
    INFO("row " << t);
    REQUIRE(std::equal(one.begin(), one.end(), all.begin() + (std::size_t)t * N));
  }
}

TEST_CASE("q8: zero and non-finite inputs and all-zero columns follow the stated rules", "[kernels][q8][errors]") {
  std::mt19937 rng(36);
  const int K = 21, N = 19;
  auto w = random_normal((std::size_t)K * N, rng);
  for (int kk = 0; kk < K; kk++) w[(std::size_t)kk * N + 3] = 0.0f;
  const auto b = random_normal(N, rng);
  const k::PackedLinear W = k::pack_linear_q8(w.data(), b.data(), K, N);
  std::vector<float> x = random_normal((std::size_t)3 * K, rng);
  for (int kk = 0; kk < K; kk++) x[(std::size_t)K + kk] = 0.0f;  // row 1: zero
  x[2 * (std::size_t)K + 4] = INFINITY;                          // row 2: an infinity
  std::vector<float> y((std::size_t)3 * N);
  k::matmul_forward(y.data(), x.data(), W, 3);
  // an all-zero column gives its bias exactly; so does every column of a zero row
  REQUIRE(y[3] == b[3]);
  for (int n = 0; n < N; n++) REQUIRE(y[(std::size_t)N + n] == b[n]);
  // a row holding an infinity gives NaN, as a float32 product with cancelling infinities would
  for (int n = 0; n < N; n++) REQUIRE(std::isnan(y[2 * (std::size_t)N + n]));
}

TEST_CASE("q8: one head's rows through W_O are the float32 product on the dequantized weights", "[kernels][q8]") {
  std::mt19937 rng(37);
  const int T = 6, K = 48, N = 29, k0 = 16, k1 = 32, stride = 50;
  const auto x = random_normal((std::size_t)T * stride, rng), w = random_normal((std::size_t)K * N, rng);
  const k::PackedLinear W = k::pack_linear_q8(w.data(), nullptr, K, N);
  std::vector<float> deq((std::size_t)K * N), got((std::size_t)T * N), want((std::size_t)T * N);
  k::unpack_linear(deq.data(), nullptr, W);
  k::matmul_rows_forward(got.data(), x.data(), stride, W, k0, k1, T);
  for (int t = 0; t < T; t++)
    for (int n = 0; n < N; n++) {
      double s = 0.0, a = 0.0;
      for (int kk = k0; kk < k1; kk++) {
        s += (double)x[(std::size_t)t * stride + kk] * deq[(std::size_t)kk * N + n];
        a += std::fabs((double)x[(std::size_t)t * stride + kk] * deq[(std::size_t)kk * N + n]);
      }
      // a float32 sum of k1 - k0 products in some order against the exact one: sum_bound
      INFO("row " << t << " column " << n);
      REQUIRE(std::fabs(got[(std::size_t)t * N + n] - s) <= kernel_checks::sum_bound(k1 - k0, a));
    }
  // and exactly the float32 kernel's product on the dequantized weights, packed as a float32 layer:
  // row ranges that start and end inside a group of the 8-bit layout, and whole
  const k::PackedLinear deq_packed = k::pack_linear(deq.data(), nullptr, K, N);
  for (const auto& [r0, r1] : {std::pair{k0, k1}, std::pair{5, 27}, std::pair{0, K}, std::pair{47, 48}}) {
    INFO("rows [" << r0 << ", " << r1 << ")");
    std::vector<float> q8_rows((std::size_t)T * N), f32_rows((std::size_t)T * N);
    k::matmul_rows_forward(q8_rows.data(), x.data(), stride, W, r0, r1, T);
    k::matmul_rows_forward(f32_rows.data(), x.data(), stride, deq_packed, r0, r1, T);
    test_util::require_same_bits(q8_rows, f32_rows, "one head's rows through 8-bit W_O");
  }
}
