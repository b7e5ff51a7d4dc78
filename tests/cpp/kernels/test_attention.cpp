// The Llama family's kernels against their references: grouped-query attention (kernels.hpp's
// AttentionShape) against the scalar reference and against multi-head attention on keys and values
// repeated per query head; RMSNorm, rotary positions and SwiGLU against double-precision formulas.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/reference.hpp"
#include "test_util.hpp"

namespace k = headscope::kernels;
namespace ref = headscope::kernels::ref;
using test_util::kUnitRoundoff;
using test_util::random_normal;

namespace {

// qkv (T, (NH + 2 KV) HS) -> (T, 3 NH HS): each key/value head repeated for the query heads that read it
std::vector<float> repeat_kv(const std::vector<float>& qkv, int T, int NH, int KV, int HS) {
  const int group = NH / KV, C = NH * HS;
  const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
  std::vector<float> out((std::size_t)T * 3 * C);
  for (int t = 0; t < T; t++)
    for (int h = 0; h < NH; h++)
      for (int d = 0; d < HS; d++) {
        const int g = h / group;
        out[(std::size_t)t * 3 * C + h * HS + d] = qkv[t * row + h * HS + d];
        out[(std::size_t)t * 3 * C + C + h * HS + d] = qkv[t * row + (NH + g) * HS + d];
        out[(std::size_t)t * 3 * C + 2 * C + h * HS + d] = qkv[t * row + (NH + KV + g) * HS + d];
      }
  return out;
}

}  // namespace

TEST_CASE("grouped-query attention: the reference is multi-head attention on repeated keys and values; the kernel equals it",
          "[kernels][attention][gqa]") {
  std::mt19937 rng(31);
  for (const auto& [NH, KV] : {std::pair{4, 2}, std::pair{4, 1}, std::pair{6, 3}, std::pair{3, 3}}) {
    for (int HS : {2, 4, 6, 12, 20, 64}) {
      for (int T : {1, 5, 9, 17, 33}) {
        for (int t_begin : {0, T / 2, T - 1}) {
          INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << " T=" << T << " t_begin=" << t_begin);
          const k::AttentionShape shape{NH, KV, HS};
          const int stride = T + 3, QW = NH * HS;
          const auto qkv = random_normal((std::size_t)T * shape.qkv_row(), rng, 0.7f);
          std::vector<float> att_ref((std::size_t)NH * stride * stride, 7.0f), att_mha = att_ref, att_got = att_ref;
          std::vector<float> out_ref((std::size_t)T * QW, 7.0f), out_mha = out_ref, out_got = out_ref;
          ref::attention_forward<float>(out_ref.data(), att_ref.data(), qkv.data(), t_begin, T, NH, KV, HS, stride);
          // the same sums in the same order on the repeated keys and values: bit for bit
          const auto expanded = repeat_kv(qkv, T, NH, KV, HS);
          ref::attention_forward<float>(out_mha.data(), att_mha.data(), expanded.data(), t_begin, T, QW, NH, stride);
          REQUIRE(att_ref == att_mha);
          REQUIRE(out_ref == out_mha);
          // the SIMD kernel, its cache filled by an earlier call for rows [0, t_begin) as in the model
          std::vector<float> panels(k::attention_key_panels_floats(stride, shape), 9.0f);
          if (t_begin > 0) {
            std::vector<float> att_prev(att_got.size()), out_prev(out_got.size());
            k::attention_forward(out_prev.data(), att_prev.data(), qkv.data(), 0, t_begin, shape, stride, panels.data());
          }
          k::attention_forward(out_got.data(), att_got.data(), qkv.data(), t_begin, T, shape, stride, panels.data());
          for (std::size_t i = 0; i < att_ref.size(); i++) {
            // as the multi-head kernel's test (test_kernels.cpp): scores are HS-term dots of values
            // ~0.7, so a probability differs by at most ~2 (HS + T + 9) u relative; 1e-6 + 1e-5 covers HS 64
            REQUIRE(std::fabs(att_got[i] - att_ref[i]) <= 1e-6 + 1e-5 * att_ref[i]);
          }
          for (std::size_t i = 0; i < out_ref.size(); i++) {
            if (i < (std::size_t)t_begin * QW) REQUIRE(out_got[i] == 7.0f);  // the cache's rows untouched
            // a convex combination of t+1 values (|v| < ~4): 1e-5 absolute and relative, as for multi-head
            else REQUIRE(std::fabs(out_got[i] - out_ref[i]) <= 1e-5 + 1e-5 * std::fabs(out_ref[i]));
          }
        }
      }
    }
  }
}

TEST_CASE("grouped-query attention row by row equals one call over all rows, bit for bit", "[kernels][attention][gqa]") {
  // typing (one row per call) against a full run: the tiles group rows differently but keep each sum's order
  std::mt19937 rng(32);
  for (const auto& [NH, KV, HS] : {std::tuple{4, 2, 6}, std::tuple{4, 1, 20}, std::tuple{8, 2, 64}}) {
    const k::AttentionShape shape{NH, KV, HS};
    const int T = 40, stride = 41;
    const auto qkv = random_normal((std::size_t)T * shape.qkv_row(), rng, 0.7f);
    std::vector<float> att_all((std::size_t)NH * stride * stride, 0.0f), att_rows = att_all;
    std::vector<float> out_all((std::size_t)T * NH * HS, 0.0f), out_rows = out_all;
    std::vector<float> p_all(k::attention_key_panels_floats(stride, shape)), p_rows = p_all;
    k::attention_forward(out_all.data(), att_all.data(), qkv.data(), 0, T, shape, stride, p_all.data());
    for (int t = 0; t < T; t++) k::attention_forward(out_rows.data(), att_rows.data(), qkv.data(), t, t + 1, shape, stride, p_rows.data());
    INFO("NH=" << NH << " KV=" << KV << " HS=" << HS);
    REQUIRE(att_rows == att_all);
    REQUIRE(out_rows == out_all);
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

TEST_CASE("rope_forward rotates pair (i, i + HS/2) by position x inv_freq; scores depend on the distance only",
          "[kernels][llama]") {
  std::mt19937 rng(34);
  for (int HS : {2, 4, 6, 12, 64, 130}) {
    const int half = HS / 2, heads = 3, T = 9;
    std::vector<double> inv_freq(half);
    for (int i = 0; i < half; i++) inv_freq[i] = 1.0 / std::pow(10000.0, 2.0 * i / HS);
    const std::size_t row = (std::size_t)heads * HS + 5;  // rows wider than the rotated heads, as in qkv
    const auto x = random_normal(T * row, rng);
    std::vector<float> got = x, ref_out = x;
    k::rope_forward(got.data(), row, 2, T, heads, HS, inv_freq.data());
    ref::rope_forward<float>(ref_out.data(), row, 2, T, heads, HS, inv_freq.data());
    // the same double angles; the compiler may fuse a product and the sum in one and not the other,
    // so both are checked against double below, not against each other bit for bit
    for (int t = 0; t < T; t++)
      for (std::size_t c = 0; c < row; c++) {
        const std::size_t i = t * row + c;
        if (t < 2 || c >= (std::size_t)heads * HS) {
          REQUIRE(got[i] == x[i]);  // rows before t_begin and columns past the heads untouched
          continue;
        }
        const int d = (int)(c % HS), p = d % half;
        const double angle = t * inv_freq[p], cs = std::cos(angle), sn = std::sin(angle);
        const std::size_t base = i - d;  // the head's first value
        const double a = x[base + p], b = x[base + p + half];
        const double want = d < half ? a * cs - b * sn : b * cs + a * sn;
        // cos and sin rounded to float32, two products and a sum: 4 u of |a| + |b|
        REQUIRE(std::fabs(got[i] - want) <= 4 * kUnitRoundoff * (std::fabs(a) + std::fabs(b)));
        REQUIRE(std::fabs(ref_out[i] - want) <= 4 * kUnitRoundoff * (std::fabs(a) + std::fabs(b)));
      }
    // the point of rotary positions: q_i . k_j after the rotation is a function of i - j
    std::vector<float> q = random_normal(HS, rng), kv = random_normal(HS, rng);
    const auto dot_at = [&](int i, int j) {
      std::vector<float> a((std::size_t)(std::max(i, j) + 1) * HS), b = a;
      std::copy(q.begin(), q.end(), a.begin() + (std::size_t)i * HS);
      std::copy(kv.begin(), kv.end(), b.begin() + (std::size_t)j * HS);
      k::rope_forward(a.data(), HS, i, i + 1, 1, HS, inv_freq.data());
      k::rope_forward(b.data(), HS, j, j + 1, 1, HS, inv_freq.data());
      double s = 0;
      for (int d = 0; d < HS; d++) s += (double)a[(std::size_t)i * HS + d] * b[(std::size_t)j * HS + d];
      return s;
    };
    double norm = 0;
    for (int d = 0; d < HS; d++) norm += std::fabs(q[d]) * 2 * std::fabs(kv[d]) * 2;
    // each rotated value carries ~4 u relative error (above) of |a| + |b|: the dot of HS of them
    REQUIRE(std::fabs(dot_at(5, 2) - dot_at(40, 37)) <= 16 * kUnitRoundoff * norm);
    REQUIRE(std::fabs(dot_at(3, 3) - dot_at(0, 0)) <= 16 * kUnitRoundoff * norm);
  }
}

TEST_CASE("swiglu_forward equals silu(gate) * up in double; a row alone equals the row among others", "[kernels][llama]") {
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
