// F16 weights (cpp/src/kernels/f16.cpp, and the F16 paths of gemm.cpp): the conversions against
// independent references (exhaustive where the domain allows), and the F16 GEMM and LM head against
// the float32 kernels on the widened weights (bit for bit). Whole models in F16 storage are tested in
// tests/cpp/model/test_f16_storage.cpp.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "headscope/safetensors.hpp"
#include "test_util.hpp"

namespace k = headscope::kernels;
using test_util::bits_of;
using test_util::require_same_bits;

namespace {

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The value of F16 bit pattern h from its fields in double arithmetic (finite patterns only).
double f16_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -v : v;
}

// Round-to-nearest-even by search: the finite F16 values in increasing order of magnitude are the
// patterns 0x0000..0x7bff; pick the nearest, on a tie the one with an even mantissa (even pattern);
// beyond 65504 + half an ulp (65520) or at a tie there, infinity.
uint16_t f32_to_f16_by_search(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7e00;  // any NaN: checked by class below
  const double a = std::fabs((double)x);
  if (a >= 65520.0) return sign | 0x7c00;
  // binary search for the largest pattern with value <= a
  int lo = 0, hi = 0x7bff;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (f16_value((uint16_t)mid) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == 0x7bff) return sign | 0x7bff;  // a in [65504, 65520)
  const double below = f16_value((uint16_t)lo), above = f16_value((uint16_t)(lo + 1));
  int pick;
  if (a - below < above - a)
    pick = lo;
  else if (a - below > above - a)
    pick = lo + 1;
  else
    pick = (lo % 2 == 0) ? lo : lo + 1;
  return sign | (uint16_t)pick;
}

// `values` in the kernels' group layout (f16_group_width() values a group), written by hand: a
// group's first half goes to the low halves of its int32 lanes, its second half to the high ones; a
// tail short of a whole group stays one value each
std::vector<uint16_t> in_group_layout(const std::vector<uint16_t>& values) {
  const std::size_t G = (std::size_t)k::f16_group_width(), whole = values.size() - values.size() % G;
  std::vector<uint16_t> grouped(values);
  for (std::size_t i = 0; G > 1 && i < whole; i += G)
    for (std::size_t j = 0; j < G; j++) grouped[i + (j < G / 2 ? 2 * j : 2 * (j - G / 2) + 1)] = values[i + j];
  return grouped;
}

}  // namespace

// ---- conversions -------------------------------------------------------------------------------

TEST_CASE("F16 -> float32: every one of the 65536 bit patterns, exact", "[f16][kernels]") {
  // Three independent definitions must agree bit for bit: the scalar reference, the safetensors
  // reader's converter, and the value from the fields (finite patterns); the SIMD widening, run over
  // all patterns in the packed group layout, must equal the reference (NaN payloads included).
  std::vector<float> plain(65536);
  for (uint32_t h = 0; h < 65536; h++) {
    const float r = k::f16_to_f32_reference((uint16_t)h);
    plain[h] = r;
    INFO("pattern 0x" << std::hex << h);
    REQUIRE(bits_of(r) == bits_of(headscope::f16_to_f32((uint16_t)h)));
    const int exp = (h >> 10) & 0x1f;
    if (exp != 31) {
      REQUIRE((double)r == f16_value((uint16_t)h));
      REQUIRE(std::signbit(r) == ((h & 0x8000) != 0));  // -0 stays -0
    } else if ((h & 0x3ff) == 0) {
      REQUIRE(std::isinf(r));
    } else {
      REQUIRE(std::isnan(r));
      REQUIRE(((bits_of(r) >> 13) & 0x3ff) == (h & 0x3ff));  // payload kept
    }
  }
  // pack the exact float32 values (rounding them is the identity, NaN aside: checked next) and widen
  std::vector<uint16_t> packed(65536);
  k::f16_pack(packed.data(), plain.data(), plain.size());
  std::vector<float> widened(65536), widened_ref(65536);
  k::f16_unpack_forward(widened.data(), packed.data(), packed.size());
  k::f16_unpack_forward_reference(widened_ref.data(), packed.data(), packed.size());
  for (uint32_t h = 0; h < 65536; h++) {
    INFO("pattern 0x" << std::hex << h << " -> " << bits_of(widened[h]));
    if (std::isnan(plain[h])) {
      REQUIRE(std::isnan(widened[h]));
    } else {
      REQUIRE(bits_of(widened[h]) == bits_of(plain[h]));
    }
    REQUIRE(bits_of(widened[h]) == bits_of(widened_ref[h]));
  }
  // and every pattern directly (NaN payloads too), written in the group layout by hand (in_group_layout)
  std::vector<uint16_t> patterns(65536);
  for (std::size_t h = 0; h < 65536; h++) patterns[h] = (uint16_t)h;
  const std::vector<uint16_t> grouped = in_group_layout(patterns);
  k::f16_unpack_forward(widened.data(), grouped.data(), grouped.size());
  for (uint32_t h = 0; h < 65536; h++) {
    INFO("pattern 0x" << std::hex << h);
    REQUIRE(bits_of(widened[h]) == bits_of(plain[h]));
  }
}

TEST_CASE("F16 weights' widening: every finite pattern, in both halves of a lane, beside any other, exact",
          "[f16][kernels]") {
  // f16_unpack_weights (simd::f16_finite_pair_to_f32; a few rows' products widen to the same values
  // times 2^-112 instead, checked on every pattern in the test after next)
  // widens the two F16 values of each int32 lane of the group layout by a shift and a mask, exact
  // only for finite values (the loader's weights): every finite pattern must give the reference's
  // bits, in each half of a lane, whatever the other half holds (the high half's shift brings the low
  // one's bits along, the mask must drop them). The packed order is the group layout's, by hand
  // (in_group_layout).
  std::vector<uint16_t> finite;
  for (uint32_t h = 0; h < 65536; h++)
    if (((h >> 10) & 0x1f) != 31) finite.push_back((uint16_t)h);
  const std::size_t G = (std::size_t)k::f16_group_width(), n = finite.size();
  // the values in order, then shifted by a prime, so each meets many neighbours; then beside NaN and
  // infinities (the other half only: never widened themselves here)
  for (std::size_t shift : {(std::size_t)0, (std::size_t)7919, (std::size_t)31}) {
    std::vector<uint16_t> values(n);
    for (std::size_t i = 0; i < n; i++) values[i] = finite[(i * (shift ? shift : 1) + shift) % n];
    const std::vector<uint16_t> grouped = in_group_layout(values);  // the tail: one value each
    std::vector<float> widened(n);
    k::f16_unpack_weights(widened.data(), grouped.data(), n);
    for (std::size_t i = 0; i < n; i++) {
      INFO("pattern 0x" << std::hex << values[i] << " at " << std::dec << i << ", shift " << shift);
      REQUIRE(bits_of(widened[i]) == bits_of(k::f16_to_f32_reference(values[i])));
    }
  }
  if (G > 1) {
    const uint16_t others[] = {0x7c00, 0xfc00, 0x7fff, 0xffff, 0x7e01};  // inf, -inf, NaNs
    for (uint16_t other : others)
      for (int half = 0; half < 2; half++) {
        std::vector<uint16_t> values(n - n % G);
        for (std::size_t i = 0; i < values.size(); i++)
          values[i] = ((i % G < G / 2) == (half == 0)) ? finite[i % n] : other;
        const std::vector<uint16_t> grouped = in_group_layout(values);
        std::vector<float> widened(values.size());
        k::f16_unpack_weights(widened.data(), grouped.data(), grouped.size());
        for (std::size_t i = 0; i < values.size(); i++) {
          if (values[i] == other) continue;
          INFO("pattern 0x" << std::hex << values[i] << " beside 0x" << other);
          REQUIRE(bits_of(widened[i]) == bits_of(k::f16_to_f32_reference(values[i])));
        }
      }
  }
}

TEST_CASE("float32 -> F16 rounds to nearest even: ties, subnormals, overflow, inf, NaN", "[f16][kernels]") {
  std::vector<float> cases;
  for (uint32_t h = 0; h < 0x7c00; h++) {
    // every finite F16 value, both signs (round trip), the midpoint to the next one (a tie), and the
    // float32 neighbours of that midpoint (just below / above the tie)
    const float v = (float)f16_value((uint16_t)h);
    cases.push_back(v);
    cases.push_back(-v);
    const double next = h < 0x7bff ? f16_value((uint16_t)(h + 1)) : 65536.0;
    const float mid = (float)((f16_value((uint16_t)h) + next) / 2);  // exact in float32 (12 significant bits)
    REQUIRE((double)mid == (f16_value((uint16_t)h) + next) / 2);
    cases.push_back(mid);
    cases.push_back(-mid);
    cases.push_back(std::nextafter(mid, 0.0f));
    cases.push_back(std::nextafter(mid, 1e30f));
  }
  // below the smallest subnormal: 2^-25 is a tie between 0 and 2^-24 (rounds to 0, even), just
  // above it rounds up; float32 subnormals round to zero
  for (float v : {std::ldexp(1.0f, -25), std::nextafter(std::ldexp(1.0f, -25), 1.0f), std::ldexp(1.0f, -26),
                  std::ldexp(3.0f, -26), std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                  65504.0f, 65519.996f, 65520.0f, 65536.0f, 1e10f, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::infinity(), 0.0f})
    cases.push_back(v), cases.push_back(-v);
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits(0, 0xffffffffu);
  for (int i = 0; i < 200000; i++) {
    const float v = float_of(any_bits(rng));
    if (!std::isnan(v)) cases.push_back(v);
  }
  std::uniform_real_distribution<float> moderate(-70000.0f, 70000.0f);
  for (int i = 0; i < 100000; i++) cases.push_back(moderate(rng) * std::ldexp(1.0f, -(i % 40)));
  for (const float v : cases) {
    const uint16_t got = k::f32_to_f16_reference(v), want = f32_to_f16_by_search(v);
    INFO("x = " << v << " (0x" << std::hex << bits_of(v) << "): got 0x" << got << ", want 0x" << want);
    REQUIRE(got == want);
  }
  // NaN stays NaN (quiet), with its sign and the payload's top bits
  for (uint32_t nan_bits : {0x7fc00000u, 0x7f800001u, 0xffc12345u, 0x7fbfffffu}) {
    const uint16_t h = k::f32_to_f16_reference(float_of(nan_bits));
    INFO("NaN 0x" << std::hex << nan_bits << " -> 0x" << h);
    REQUIRE((h & 0x7c00) == 0x7c00);
    REQUIRE((h & 0x3ff) != 0);
    REQUIRE((h & 0x200) != 0);
    REQUIRE(((h & 0x8000) != 0) == ((nan_bits & 0x80000000u) != 0));
  }
}

TEST_CASE("f16_pack and f16_unpack_forward: edge lengths round-trip, SIMD equals the reference", "[f16][kernels]") {
  const int G = k::f16_group_width();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (const int n : {0, 1, G / 2 ? G / 2 : 1, G - 1, G, G + 1, 2 * G - 1, 2 * G, 3 * G + 1, 257}) {
    if (n < 0) continue;
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    std::vector<uint16_t> packed(n);
    k::f16_pack(packed.data(), x.data(), n);
    std::vector<float> got(n, -1.0f), ref(n, -2.0f);
    k::f16_unpack_forward(got.data(), packed.data(), n);
    k::f16_unpack_forward_reference(ref.data(), packed.data(), n);
    INFO("n " << n << ", group " << G);
    require_same_bits(got, ref, "unpacked");
    for (int i = 0; i < n; i++) {
      // the value rounded to F16, in order: the layout is undone
      REQUIRE(bits_of(got[i]) == bits_of(k::f16_to_f32_reference(k::f32_to_f16_reference(x[i]))));
    }
  }
}

// ---- kernels ---------------------------------------------------------------------------------

TEST_CASE("F16 GEMM equals the float32 GEMM on the F16-rounded weights, bit for bit", "[f16][kernels][gemm]") {
  // The F16 path widens each panel slice exactly and then runs the float32 register tiles (a lone
  // row widens in registers, four panels at a time: 4 * P and 5 * P + 1; two to four rows two panels at
  // a time, a partial last panel alone: T 2-5 against N P + 1 and 3 * P), so the results must be
  // identical, at every edge of the tiles, panels and depth slices.
  const k::GemmBlocking blk = k::gemm_blocking();
  const int P = std::max(1, k::linear_panel_width());
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const int T : {1, 2, 3, 4, 5, blk.tile_rows - 1, blk.tile_rows + 1, 3 * blk.tile_rows + 1})
    for (const int K : {1, 7, blk.depth_block, blk.depth_block + 5})
      for (const int N : {1, P - 1, P + 1, 3 * P, 4 * P, 5 * P + 1, blk.panel_group * P + 1}) {
        if (T < 1 || N < 1) continue;
        std::vector<float> x((std::size_t)T * K), w((std::size_t)K * N), b(N);
        for (float& v : x) v = normal(rng);
        for (float& v : w) v = normal(rng) * 0.1f;
        for (float& v : b) v = normal(rng);
        std::vector<float> w_rounded(w.size());
        for (std::size_t i = 0; i < w.size(); i++)
          w_rounded[i] = k::f16_to_f32_reference(k::f32_to_f16_reference(w[i]));
        const k::PackedLinear f16 = k::pack_linear_f16(w.data(), b.data(), K, N);
        const k::PackedLinear f32 = k::pack_linear(w_rounded.data(), b.data(), K, N);
        REQUIRE(f16.is_f16());
        REQUIRE(f16.panels.empty());
        REQUIRE(f16.bytes() * 2 == f32.panels.size() * 4 + f32.bias.size() * 8);
        INFO("T " << T << " K " << K << " N " << N);
        std::vector<float> got((std::size_t)T * N), want((std::size_t)T * N);
        k::matmul_forward(got.data(), x.data(), f16, T);
        k::matmul_forward(want.data(), x.data(), f32, T);
        require_same_bits(got, want, "matmul_forward");
        // the per-head row range of W_O: rows [k0, k1) of the weight
        const int k0 = K / 3, k1 = K - K / 4;
        k::matmul_rows_forward(got.data(), x.data(), K, f16, k0, k1, T);
        k::matmul_rows_forward(want.data(), x.data(), K, f32, k0, k1, T);
        require_same_bits(got, want, "matmul_rows_forward");
      }
}

TEST_CASE("F16 LM head equals the float32 one on the F16-rounded weights, bit for bit", "[f16][kernels]") {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int L = k::simd_info().float_lanes;
  for (const int T : {1, 2, 3, 4, 5})
    // K: whole groups of 2 * L values, then a batch and a scalar tail (3 * L + 1); N: groups of 8 rows
    for (const int K : {1, L - 1 > 0 ? L - 1 : 1, L, 2 * L + 3, 3 * L + 1, 48})
      for (const int N : {1, 3, 4, 5, 9, 16, 257}) {
        std::vector<float> x((std::size_t)T * K), w((std::size_t)N * K);
        for (float& v : x) v = normal(rng);
        for (float& v : w) v = normal(rng);
        std::vector<uint16_t> w16(w.size());
        std::vector<float> w_rounded(w.size());
        for (int n = 0; n < N; n++) {
          k::f16_pack(&w16[(std::size_t)n * K], &w[(std::size_t)n * K], K);
          k::f16_unpack_forward_reference(&w_rounded[(std::size_t)n * K], &w16[(std::size_t)n * K], K);
        }
        std::vector<float> scratch(k::matmul_transposed_f16_scratch_floats(K));
        std::vector<float> got((std::size_t)T * N), want((std::size_t)T * N);
        k::matmul_transposed_f16_forward(got.data(), x.data(), w16.data(), T, K, N, scratch.data());
        k::matmul_transposed_forward(want.data(), x.data(), w_rounded.data(), T, K, N);
        INFO("T " << T << " K " << K << " N " << N);
        require_same_bits(got, want, "matmul_transposed_f16_forward");
      }
}

TEST_CASE("F16 products of a few rows: inputs near and past 2^16, subnormal weights, the same bits as float32",
          "[f16][kernels][gemm]") {
  // A typed token's rows meet F16 weights widened to w * 2^-112 against inputs scaled by 2^112
  // (simd_batch.hpp, f16_finite_pair_to_scaled_f32): exact while |x| < 2^16. Inputs just under that,
  // past it (then the call's rows go the widened way: 2^16 and 70000 fail without that guard),
  // infinite or NaN, and weights that are F16 subnormals (float32 subnormals once scaled) must all
  // give float32's bits on the F16-rounded weights.
  const int P = std::max(1, k::linear_panel_width());
  const int L = k::simd_info().float_lanes;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const float big : {0x1.fffffep15f, -0x1.fffffep15f, 0x1p16f, 70000.0f, inf, nan})
    for (const int T : {1, 2, 3, 4}) {
      const int K = 3 * L + 1, N = 5 * P + 1;
      std::vector<float> x((std::size_t)T * K), w((std::size_t)K * N), b(N);
      for (float& v : x) v = normal(rng);
      for (float& v : w) v = normal(rng) * 0.1f;
      for (float& v : b) v = normal(rng);
      for (std::size_t i = 0; i < w.size(); i += 7) w[i] = normal(rng) * 1e-6f;  // F16 subnormals
      x[(std::size_t)(T - 1) * K + K / 2] = big;                                 // one value of the last row
      // the same inputs, every value under 2^16 except `big`'s: products far from float32's range
      INFO("T " << T << " big " << big);
      std::vector<float> w_rounded(w.size());
      for (std::size_t i = 0; i < w.size(); i++) w_rounded[i] = k::f16_to_f32_reference(k::f32_to_f16_reference(w[i]));
      REQUIRE(std::count_if(w_rounded.begin(), w_rounded.end(),
                            [](float v) { return v != 0.0f && std::fabs(v) < 0x1p-14f; }) > 0);
      const k::PackedLinear f16 = k::pack_linear_f16(w.data(), b.data(), K, N);
      const k::PackedLinear f32 = k::pack_linear(w_rounded.data(), b.data(), K, N);
      std::vector<float> got((std::size_t)T * N), want((std::size_t)T * N);
      k::matmul_forward(got.data(), x.data(), f16, T);
      k::matmul_forward(want.data(), x.data(), f32, T);
      require_same_bits(got, want, "matmul_forward");
      // the LM head: N rows of K, the weight transposed
      std::vector<float> wt((std::size_t)N * K);
      for (int n = 0; n < N; n++)
        for (int kk = 0; kk < K; kk++) wt[(std::size_t)n * K + kk] = w[(std::size_t)kk * N + n];
      std::vector<uint16_t> wt16(wt.size());
      std::vector<float> wt_rounded(wt.size());
      for (int n = 0; n < N; n++) {  // a row at a time, as the loader packs an LM head
        k::f16_pack(&wt16[(std::size_t)n * K], &wt[(std::size_t)n * K], K);
        k::f16_unpack_forward_reference(&wt_rounded[(std::size_t)n * K], &wt16[(std::size_t)n * K], K);
      }
      std::vector<float> scratch(k::matmul_transposed_f16_scratch_floats(K));
      k::matmul_transposed_f16_forward(got.data(), x.data(), wt16.data(), T, K, N, scratch.data());
      k::matmul_transposed_forward(want.data(), x.data(), wt_rounded.data(), T, K, N);
      require_same_bits(got, want, "matmul_transposed_f16_forward");
    }
}

TEST_CASE("F16 products of a few rows: every finite weight pattern, through one-hot inputs, exact",
          "[f16][kernels][gemm]") {
  // One-hot input rows make each output one weight times 1 (plus exact zeros): every finite F16
  // pattern, widened to itself times 2^-112 in registers and met by the input times 2^112, must give
  // the float32 path's bits (a lone row over 1 x N, four rows over 4 x N, and the LM head's four rows).
  std::vector<float> finite;
  for (uint32_t h = 0; h < 65536; h++)
    if (((h >> 10) & 0x1f) != 31) finite.push_back(k::f16_to_f32_reference((uint16_t)h));
  const int n = (int)finite.size();  // 63,488: a multiple of 4
  for (const int rows : {1, 4}) {
    const int K = rows, N = n / rows;
    std::vector<float> x((std::size_t)rows * K, 0.0f);
    for (int t = 0; t < rows; t++) x[(std::size_t)t * K + t] = 1.0f;
    INFO("rows " << rows);
    // the GEMM: weight (K, N), row t picks weight row t
    const k::PackedLinear f16 = k::pack_linear_f16(finite.data(), nullptr, K, N);
    const k::PackedLinear f32 = k::pack_linear(finite.data(), nullptr, K, N);
    std::vector<float> got((std::size_t)rows * N), want((std::size_t)rows * N);
    k::matmul_forward(got.data(), x.data(), f16, rows);
    k::matmul_forward(want.data(), x.data(), f32, rows);
    require_same_bits(got, want, "matmul_forward");
    for (std::size_t i = 0; i < got.size(); i++) REQUIRE(got[i] == finite[i]);  // (-0 sums to +0 on both)
  }
  // the LM head: 992 weight rows of 64 (whole groups, widened in registers), four one-hot rows a call,
  // output (t, r) = weight (r, c) for the row's column c, every column in 16 calls
  const int K = 64, N = n / K, rows = 4;
  std::vector<uint16_t> w16((std::size_t)N * K);
  std::vector<float> w32((std::size_t)N * K);
  for (int r = 0; r < N; r++) {
    k::f16_pack(&w16[(std::size_t)r * K], &finite[(std::size_t)r * K], K);
    k::f16_unpack_forward_reference(&w32[(std::size_t)r * K], &w16[(std::size_t)r * K], K);
  }
  std::vector<float> scratch(k::matmul_transposed_f16_scratch_floats(K));
  for (int c0 = 0; c0 < K; c0 += rows) {
    std::vector<float> x((std::size_t)rows * K, 0.0f);
    for (int t = 0; t < rows; t++) x[(std::size_t)t * K + c0 + t] = 1.0f;
    std::vector<float> got((std::size_t)rows * N), want((std::size_t)rows * N);
    k::matmul_transposed_f16_forward(got.data(), x.data(), w16.data(), rows, K, N, scratch.data());
    k::matmul_transposed_forward(want.data(), x.data(), w32.data(), rows, K, N);
    INFO("columns " << c0 << "-" << c0 + rows - 1);
    require_same_bits(got, want, "matmul_transposed_f16_forward");
  }
}
