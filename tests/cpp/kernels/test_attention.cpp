// Attention (cpp/src/kernels/attention.cpp), multi-head (GPT-2) and grouped-query (the Llama family,
// kernels.hpp's AttentionShape):
//  1. attention_forward against the scalar reference (kernels/reference.hpp) over head sizes, lengths and
//     cache offsets; row by row against one call over all rows, bit for bit; grouped-query's reference
//     against multi-head attention on keys and values repeated per query head;
//  2. attention_backward against the reference;
//  3. the references in double against central finite differences, and grouped-query's gradient against
//     multi-head attention's on the repeated keys and values, summed back into the shared head.
// Every check states its tolerance and why.
#include <tuple>
#include <utility>

#include "kernel_checks.hpp"

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

// The reference attention runs one sequence; a training batch is B of them (att (B, NH, T, T))
template <typename F>
void attention_forward_batch(F* out, F* att, const F* qkv, int B, int T, int C, int NH) {
  for (int b = 0; b < B; b++)
    ref::attention_forward<F>(out + (std::size_t)b * T * C, att + (std::size_t)b * NH * T * T,
                              qkv + (std::size_t)b * T * 3 * C, 0, T, C, NH, T);
}

// B sequences of grouped-query attention through the reference (att (B, NH, T, T))
template <typename F>
void gqa_forward_batch(F* out, F* att, const F* qkv, int B, int T, int NH, int KV, int HS) {
  const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
  for (int b = 0; b < B; b++)
    ref::attention_forward<F>(out + (std::size_t)b * T * NH * HS, att + (std::size_t)b * NH * T * T,
                              qkv + (std::size_t)b * T * row, 0, T, NH, KV, HS, T);
}

}  // namespace

// =====================================================================================================
// 1. the forward kernels (float)
// =====================================================================================================

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
            k::attention_forward(out_prev.data(), att_prev.data(), qkv.data(), 0, t_begin, C, NH, stride,
                                 key_panels.data());
          }
          k::attention_forward(out_got.data(), att_got.data(), qkv.data(), t_begin, T, C, NH, stride,
                               key_panels.data());
          for (int h = 0; h < NH; h++)
            for (int t = 0; t < stride; t++)
              for (int j = 0; j < stride; j++) {
                const std::size_t i = ((std::size_t)h * stride + t) * stride + j;
                INFO("HS=" << HS << " NH=" << NH << " T=" << T << " t_begin=" << t_begin << " h=" << h << " t=" << t
                           << " j=" << j);
                if (t < t_begin || t >= T) {
                  REQUIRE(att_got[i] == 7.0f);  // rows outside [t_begin, T) untouched (the cache)
                } else if (j > t) {
                  REQUIRE(att_got[i] == 0.0f);  // causal mask: exactly zero
                } else {
                  // scores are dots of HS terms (scaled by 1/sqrt(HS) <= 1, |q|,|k| ~ 0.7): the
                  // softmax turns an absolute score error e into a relative probability error ~2e.
                  double sum_abs = 0;
                  for (int d = 0; d < HS; d++)
                    sum_abs += std::fabs(qkv[(std::size_t)t * 3 * C + h * HS + d] *
                                         qkv[(std::size_t)j * 3 * C + C + h * HS + d]);
                  const double tol = (2.0 * dot_error_bound(HS, sum_abs) + (t + 9) * kUnitRoundoff) * att_ref[i] + 1e-9;
                  REQUIRE(std::fabs(att_got[i] - att_ref[i]) <= tol);
                }
              }
          for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
              const std::size_t i = (std::size_t)t * C + c;
              INFO("out: HS=" << HS << " NH=" << NH << " T=" << T << " t_begin=" << t_begin << " t=" << t
                              << " c=" << c);
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
      std::vector<float> att_two(att_all.size(), 0.0f), out_two(out_all.size(), 0.0f),
          panels_two(panels_all.size(), 3.0f);
      k::attention_forward(out_two.data(), att_two.data(), qkv.data(), 0, 40, C, NH, stride, panels_two.data());
      k::attention_forward(out_two.data(), att_two.data(), qkv.data(), 40, T, C, NH, stride, panels_two.data());
      REQUIRE(att_two == att_all);
      REQUIRE(out_two == out_all);
    }
  }
}

TEST_CASE(
    "grouped-query attention: the reference is multi-head attention on repeated keys and values; the kernel equals it",
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
            k::attention_forward(out_prev.data(), att_prev.data(), qkv.data(), 0, t_begin, shape, stride,
                                 panels.data());
          }
          k::attention_forward(out_got.data(), att_got.data(), qkv.data(), t_begin, T, shape, stride, panels.data());
          for (std::size_t i = 0; i < att_ref.size(); i++) {
            // as the multi-head kernel's test (above): scores are HS-term dots of values
            // ~0.7, so a probability differs by at most ~2 (HS + T + 9) u relative; 1e-6 + 1e-5 covers HS 64
            REQUIRE(std::fabs(att_got[i] - att_ref[i]) <= 1e-6 + 1e-5 * att_ref[i]);
          }
          for (std::size_t i = 0; i < out_ref.size(); i++) {
            if (i < (std::size_t)t_begin * QW) REQUIRE(out_got[i] == 7.0f);  // the cache's rows untouched
            // a convex combination of t+1 values (|v| < ~4): 1e-5 absolute and relative, as for multi-head
            else
              REQUIRE(std::fabs(out_got[i] - out_ref[i]) <= 1e-5 + 1e-5 * std::fabs(out_ref[i]));
          }
        }
      }
    }
  }
}

TEST_CASE("attention past one slice of the weighted sum's keys equals the reference; a typed row, the full run",
          "[kernels][attention][gqa]") {
  // The weighted sum of values runs over the keys in slices (attention_value_slice: 1,024), each
  // continuing the sums the slice before stored. Rows past one slice, multi-head and grouped (whose
  // typed row takes the group's path), against the reference; and the last row typed alone (its
  // cache filled by a call over the rows before it) against the same row of one call over all rows,
  // bit for bit, as typing and a full run must agree.
  std::mt19937 rng(41);
  // (the scalar build sums in one pass: a row of 1,061 keys against the reference all the same)
  const int slice = std::min(k::attention_value_slice(), 1024);
  const int T = slice + 37, stride = T + 3;
  for (const auto& [NH, KV, HS] : {std::tuple{1, 1, 20}, std::tuple{3, 1, 64}}) {
    INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << " T=" << T);
    const k::AttentionShape shape{NH, KV, HS};
    const int QW = NH * HS;
    const std::size_t row3 = shape.qkv_row();
    const auto qkv = random_normal((std::size_t)T * row3, rng, 0.7f);
    std::vector<float> att_ref((std::size_t)NH * stride * stride, 0.0f), att_all = att_ref, att_typed = att_ref;
    std::vector<float> out_ref((std::size_t)T * QW, 0.0f), out_all = out_ref, out_typed = out_ref;
    ref::attention_forward<float>(out_ref.data(), att_ref.data(), qkv.data(), 0, T, NH, KV, HS, stride);
    std::vector<float> panels_all(k::attention_key_panels_floats(stride, shape), 0.0f), panels_typed = panels_all;
    k::attention_forward(out_all.data(), att_all.data(), qkv.data(), 0, T, shape, stride, panels_all.data());
    k::attention_forward(out_typed.data(), att_typed.data(), qkv.data(), 0, T - 1, shape, stride, panels_typed.data());
    k::attention_forward(out_typed.data(), att_typed.data(), qkv.data(), T - 1, T, shape, stride, panels_typed.data());
    REQUIRE(out_typed == out_all);
    for (int h = 0; h < NH; h++)
      for (int t : {slice - 1, slice, T - 1}) {
        const float* a = &att_ref[((std::size_t)h * stride + t) * stride];
        for (int d = 0; d < HS; d++) {
          // output (t, h, d) = sum_j a_j v_j over t + 1 keys: t + 1 rounded multiply-adds (gamma_{t+1})
          // on the reference's weights, whose relative error is at most 2 (HS + t + 10) u as in the
          // tests above, both times sum_j a_j |v_j|
          double weighted_abs = 0;
          for (int j = 0; j <= t; j++)
            weighted_abs += a[j] * std::fabs(qkv[(std::size_t)j * row3 + (NH + KV + h / (NH / KV)) * HS + d]);
          const double u = test_util::kUnitRoundoff;
          const double gamma = (t + 1) * u / (1.0 - (t + 1) * u);
          const double tol = (gamma + 2.0 * (HS + t + 10) * u) * weighted_abs + 1e-9;
          const std::size_t i = (std::size_t)t * QW + h * HS + d;
          INFO("h=" << h << " t=" << t << " d=" << d);
          REQUIRE(std::fabs(out_all[i] - out_ref[i]) <= tol);
        }
      }
  }
}

TEST_CASE("grouped-query attention row by row equals one call over all rows, bit for bit",
          "[kernels][attention][gqa]") {
  // typing (one or two rows a call) against a full run: the tiles group rows differently but keep each sum's order
  std::mt19937 rng(32);
  // (fewer rows a call than a group has heads take the grouped path: the group as the rows of one tile; groups of
  // 2, 3 and 4 heads, past kValueRows on SIMD128 and at kScoreRows; its weighted sums in blocks of 32
  // value columns: a head of 64 is two, a head of 70 three on SIMD128 and a tail past the whole batches)
  for (const auto& [NH, KV, HS] : {std::tuple{4, 2, 6}, std::tuple{4, 1, 20}, std::tuple{8, 2, 64},
                                   std::tuple{6, 2, 64}, std::tuple{9, 3, 12}, std::tuple{6, 2, 70}}) {
    const k::AttentionShape shape{NH, KV, HS};
    const int T = 40, stride = 41;
    const auto qkv = random_normal((std::size_t)T * shape.qkv_row(), rng, 0.7f);
    std::vector<float> att_all((std::size_t)NH * stride * stride, 0.0f), att_rows = att_all;
    std::vector<float> out_all((std::size_t)T * NH * HS, 0.0f), out_rows = out_all;
    std::vector<float> p_all(k::attention_key_panels_floats(stride, shape)), p_rows = p_all;
    k::attention_forward(out_all.data(), att_all.data(), qkv.data(), 0, T, shape, stride, p_all.data());
    for (int rows : {1, 2}) {  // a typed character, a typed word (fewer rows than a group: the grouped path too)
      std::fill(att_rows.begin(), att_rows.end(), 0.0f);  // nothing left from the pass before
      std::fill(out_rows.begin(), out_rows.end(), 0.0f);
      std::fill(p_rows.begin(), p_rows.end(), 0.0f);
      for (int t = 0; t < T; t += rows)
        k::attention_forward(out_rows.data(), att_rows.data(), qkv.data(), t, std::min(T, t + rows), shape, stride,
                             p_rows.data());
      INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << ", " << rows << " rows a call");
      REQUIRE(att_rows == att_all);
      REQUIRE(out_rows == out_all);
    }
  }
}

// =====================================================================================================
// 2. the backward kernels against the scalar references (float)
// =====================================================================================================

TEST_CASE("attention_rows recomputes any rows of a head's map bit for bit from the key cache", "[kernels][attention]") {
  // What the model's tiles stand on: a view asks for rows of one head's map after the run, and gets
  // exactly the weights attention_forward wrote (the same tiles and softmax, each row its own chains),
  // so tolerance 0; multi-head and grouped-query, the cache filled in two calls as typing fills it,
  // ranges that start and end off the query blocks and the key panels.
  std::mt19937 rng(23);
  for (const auto& [NH, KV, HS] :
       {std::tuple{3, 3, 20}, std::tuple{6, 2, 8}, std::tuple{4, 1, 5}, std::tuple{2, 2, 64}}) {
    const k::AttentionShape shape{NH, KV, HS};
    const int T = 70, stride = 75;
    const auto qkv = random_normal((std::size_t)T * shape.qkv_row(), rng, 0.7f);
    std::vector<float> att((std::size_t)NH * stride * stride, 0.0f), out((std::size_t)T * shape.out_row());
    std::vector<float> panels(k::attention_key_panels_floats(stride, shape), 5.0f);
    k::attention_forward(out.data(), att.data(), qkv.data(), 0, 41, shape, stride, panels.data());
    k::attention_forward(out.data(), att.data(), qkv.data(), 41, T, shape, stride, panels.data());
    for (int h = 0; h < NH; h++)
      for (const auto& [r0, r1] : {std::pair{0, T}, std::pair{0, 1}, std::pair{3, 17}, std::pair{33, 34},
                                   std::pair{40, 69}, std::pair{62, T}}) {
        std::vector<float> rows((std::size_t)(r1 - r0) * stride, 7.0f);
        k::attention_rows(rows.data(), qkv.data(), h, r0, r1, shape, stride, panels.data());
        INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << " h=" << h << " rows [" << r0 << ", " << r1 << ")");
        const float* want = att.data() + ((std::size_t)h * stride + r0) * stride;
        REQUIRE(std::equal(rows.begin(), rows.end(), want));
      }
  }
}

TEST_CASE("attention_cached_value_rows copies any rows of a key/value head's values out of the cache exactly",
          "[kernels][attention]") {
  // The cache keeps values in blocks of columns; the model's value norms read them back as rows. The
  // copy must be the values qkv held (a copy: tolerance 0), for head sizes within one block, across
  // blocks and ending in a partial one, the cache filled in two calls as typing fills it.
  std::mt19937 rng(29);
  for (const auto& [NH, KV, HS] :
       {std::tuple{2, 2, 5}, std::tuple{6, 2, 40}, std::tuple{3, 1, 64}, std::tuple{4, 2, 70}}) {
    const k::AttentionShape shape{NH, KV, HS};
    const int T = 45, stride = 50;
    const std::size_t row3 = shape.qkv_row();
    const auto qkv = random_normal((std::size_t)T * row3, rng, 0.7f);
    std::vector<float> att((std::size_t)NH * stride * stride, 0.0f), out((std::size_t)T * shape.out_row());
    std::vector<float> panels(k::attention_key_panels_floats(stride, shape), 5.0f);
    REQUIRE(!panels.empty());  // the SIMD build keeps a cache (the scalar build's copy does nothing)
    k::attention_forward(out.data(), att.data(), qkv.data(), 0, 30, shape, stride, panels.data());
    k::attention_forward(out.data(), att.data(), qkv.data(), 30, T, shape, stride, panels.data());
    for (int g = 0; g < KV; g++)
      for (const auto& [r0, r1] : {std::pair{0, T}, std::pair{7, 8}, std::pair{29, 31}, std::pair{40, T}}) {
        std::vector<float> rows((std::size_t)(r1 - r0) * HS, -1.0f);
        k::attention_cached_value_rows(rows.data(), panels.data(), stride, shape, g, r0, r1);
        INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << " g=" << g << " rows [" << r0 << ", " << r1 << ")");
        for (int j = r0; j < r1; j++)
          for (int d = 0; d < HS; d++)
            REQUIRE(rows[(std::size_t)(j - r0) * HS + d] == qkv[(std::size_t)j * row3 + (NH + KV + g) * HS + d]);
      }
  }
}

TEST_CASE("attention_forward keeping no map (att_block) gives the same outputs, bit for bit", "[kernels][attention]") {
  // The model's long texts: att holds one block of rows per head instead of the whole map; each row
  // is computed as before and only where it is kept changes, so outputs and the key cache are
  // identical (tolerance 0), in one call and in two (typing), and attention_rows gives the map back.
  std::mt19937 rng(29);
  const int block = k::attention_block_rows();
  for (const auto& [NH, KV, HS] : {std::tuple{3, 3, 20}, std::tuple{6, 2, 8}, std::tuple{2, 1, 64}}) {
    const k::AttentionShape shape{NH, KV, HS};
    const int T = 53, stride = 57;
    const auto qkv = random_normal((std::size_t)T * shape.qkv_row(), rng, 0.7f);
    std::vector<float> att((std::size_t)NH * stride * stride, 0.0f), rows((std::size_t)NH * block * stride, 3.0f);
    std::vector<float> out_map((std::size_t)T * shape.out_row(), 0.0f), out_rows = out_map;
    std::vector<float> panels_map(k::attention_key_panels_floats(stride, shape), 0.0f), panels_rows = panels_map;
    k::attention_forward(out_map.data(), att.data(), qkv.data(), 0, T, shape, stride, panels_map.data());
    k::attention_forward(out_rows.data(), rows.data(), qkv.data(), 0, 30, shape, stride, panels_rows.data(), nullptr,
                         -1, block);
    k::attention_forward(out_rows.data(), rows.data(), qkv.data(), 30, T, shape, stride, panels_rows.data(), nullptr,
                         -1, block);
    INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << " block " << block);
    REQUIRE(out_rows == out_map);
    REQUIRE(panels_rows == panels_map);
    std::vector<float> again((std::size_t)T * stride);
    for (int h = 0; h < NH; h++) {
      k::attention_rows(again.data(), qkv.data(), h, 0, T, shape, stride, panels_rows.data());
      REQUIRE(std::equal(again.begin(), again.end(), att.begin() + (std::ptrdiff_t)h * stride * stride));
    }
  }
}

TEST_CASE("attention_forward raises each head's thumbnail to the maxima of the rows it computes",
          "[kernels][attention]") {
  // The grid's thumbnails are pooled while the rows are computed (kernels::AttentionPool): each cell
  // the largest weight of its 2^shift x 2^shift block, here computed independently from the kept map
  // (maxima of the same floats: tolerance 0), with the rows computed in two calls as typing computes
  // them (the rest in one call, or one row per call: the grouped path of grouped-query attention), keeping
  // the map and keeping only a block of rows, for cell sizes below, at and above a batch. The rows of
  // the last cell row are also pooled each alone (the tail a later run puts kept rows back from).
  std::mt19937 rng(41);
  for (const auto& [NH, KV, HS] : {std::tuple{3, 3, 20}, std::tuple{6, 2, 8}}) {
    const k::AttentionShape shape{NH, KV, HS};
    const int T = 61, stride = 64;
    const auto qkv = random_normal((std::size_t)T * shape.qkv_row(), rng, 1.5f);
    for (int shift : {0, 1, 2, 3, 4}) {
      const int n = ((T - 1) >> shift) + 1;
      for (const auto& [block, typing] : {std::pair{0, false}, std::pair{k::attention_block_rows(), false},
                                          std::pair{0, true}, std::pair{k::attention_block_rows(), true}}) {
        std::vector<float> att((std::size_t)NH * stride * stride, 0.0f), out((std::size_t)T * shape.out_row());
        std::vector<float> panels(k::attention_key_panels_floats(stride, shape), 0.0f);
        std::vector<float> cells((std::size_t)NH * n * n, 0.0f);
        // and the rows of the last cell row, each alone (AttentionPool's tail), its slots first filled
        // with junk that every row computed must replace
        const int tail_begin = ((T - 1) >> shift) << shift, tail_rows = 1 << shift;
        std::vector<float> tail((std::size_t)NH * tail_rows * n, 7.0f);
        const k::AttentionPool pool{cells.data(), shift, n, tail.data(), tail_begin, tail_rows};
        std::vector<float> map((std::size_t)NH * stride * stride, 0.0f);
        k::attention_forward(out.data(), map.data(), qkv.data(), 0, T, shape, stride, panels.data());
        std::fill(panels.begin(), panels.end(), 0.0f);
        k::attention_forward(out.data(), att.data(), qkv.data(), 0, 37, shape, stride, panels.data(), nullptr, -1,
                             block, &pool);
        for (int t = 37; t < T; t = typing ? t + 1 : T)
          k::attention_forward(out.data(), att.data(), qkv.data(), t, typing ? t + 1 : T, shape, stride, panels.data(),
                               nullptr, -1, block, &pool);
        INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << " shift " << shift << " block " << block << " typing "
                   << typing);
        for (int h = 0; h < NH; h++)
          for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
              float want = 0.0f;
              for (int t = a << shift; t < std::min(T, (a + 1) << shift); t++)
                for (int j = b << shift; j < std::min(t + 1, (b + 1) << shift); j++)
                  want = std::max(want, map[((std::size_t)h * stride + t) * stride + j]);
              REQUIRE(cells[((std::size_t)h * n + a) * n + b] == want);
            }
        for (int h = 0; h < NH; h++)
          for (int t = tail_begin; t < tail_begin + tail_rows; t++)
            for (int b = 0; b < n; b++) {
              // row t alone in its cells; a slot past the text (t >= T) is never written
              float want = t < T ? 0.0f : 7.0f;
              for (int j = b << shift; t < T && j < std::min(t + 1, (b + 1) << shift); j++)
                want = std::max(want, map[((std::size_t)h * stride + t) * stride + j]);
              REQUIRE(tail[((std::size_t)h * tail_rows + (t - tail_begin)) * n + b] == want);
            }
      }
    }
  }
}

TEST_CASE("train: attention_backward equals the reference over head sizes and lengths", "[train][attention]") {
  std::mt19937 rng(14);
  for (int NH : {1, 2, 3})
    for (int HS : {1, 3, 4, 5, 8, 9, 16, 17})
      for (int T : {1, 2, 5, 9}) {
        const int B = 2, C = NH * HS;
        INFO("NH=" << NH << " HS=" << HS << " T=" << T);
        const auto qkv = random_values(B * T * 3 * C, rng), dout = random_values(B * T * C, rng);
        std::vector<float> out(B * T * C), att(B * NH * T * T), scratch(T);
        attention_forward_batch<float>(out.data(), att.data(), qkv.data(), B, T, C, NH);
        auto dqkv = random_values(B * T * 3 * C, rng);
        auto dqkv_ref = dqkv;
        k::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
        ref::attention_backward<float>(dqkv_ref.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                                       NH);
        // Every gradient element is a sum over at most T rows of terms built from HS-long dot products
        // and a T-long softmax sum; with |q|,|k|,|v|,|dout| ~ N(0,1) the terms are at most ~HS in size.
        // Bound: sum_bound(T * (HS + T), T * HS * (max|.|)^2) with max|.| <= 6 for these draws.
        const double m = 6.0;
        const double tol = sum_bound(T * (HS + T + 2), T * (HS + T) * m * m * m) + 1e-6;
        require_close(
            dqkv, dqkv_ref, [&](std::size_t i) { return tol + 4 * kU * std::fabs(dqkv_ref[i]); }, "dqkv");
      }
}

TEST_CASE("train: grouped-query attention_backward equals the reference", "[train][llama][gqa]") {
  std::mt19937 rng(34);
  struct Heads {
    int NH, KV;
  };
  for (Heads hk : {Heads{4, 2}, Heads{4, 1}, Heads{6, 3}, Heads{3, 3}, Heads{8, 1}})
    for (int HS : {1, 4, 5, 16})
      for (int T : {1, 5, 9}) {
        const int B = 2, NH = hk.NH, KV = hk.KV, G = NH / KV;
        const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
        INFO("NH=" << NH << " KV=" << KV << " HS=" << HS << " T=" << T);
        const auto qkv = random_values(B * T * row, rng), dout = random_values((std::size_t)B * T * NH * HS, rng);
        std::vector<float> out((std::size_t)B * T * NH * HS), att((std::size_t)B * NH * T * T), scratch(T);
        gqa_forward_batch<float>(out.data(), att.data(), qkv.data(), B, T, NH, KV, HS);
        auto dqkv = random_values(B * T * row, rng);
        auto dqkv_ref = dqkv;
        k::attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T,
                              k::AttentionShape{NH, KV, HS});
        ref::attention_backward<float>(dqkv_ref.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, NH,
                                       KV, HS);
        // as the multi-head test's bound (sums over T rows of terms up to ~HS m^3, m <= 6 for these
        // draws), with a shared key/value head summing G query heads' terms
        const double m = 6.0;
        const double tol = sum_bound(G * T * (HS + T + 2), G * T * (HS + T) * m * m * m) + 1e-6;
        require_close(
            dqkv, dqkv_ref, [&](std::size_t i) { return tol + 4 * kU * std::fabs(dqkv_ref[i]); }, "dqkv");
      }
}

// =====================================================================================================
// 3. the references in double against central finite differences
// =====================================================================================================

TEST_CASE("train: attention's reference gradient equals finite differences (double)", "[train][fd]") {
  std::mt19937 rng(21);
  SECTION("causal multi-head attention with softmax") {
    const int B = 2, T = 4, NH = 2, HS = 3, C = NH * HS;
    auto qkv = random_values<double>(B * T * 3 * C, rng);
    const auto g = random_values<double>(B * T * C, rng);
    std::vector<double> out(B * T * C), att(B * NH * T * T), dqkv(B * T * 3 * C, 0), scratch(T);
    attention_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, C, NH);
    ref::attention_backward<double>(dqkv.data(), scratch.data(), g.data(), qkv.data(), att.data(), B, T, C, NH);
    auto f = [&] {
      attention_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, C, NH);
      return weighted_sum(out, g);
    };
    check_fd(qkv, dqkv, f, "dqkv");
  }
}

TEST_CASE("train: grouped-query attention's reference gradient equals finite differences (double)",
          "[train][llama][fd]") {
  std::mt19937 rng(35);
  SECTION("grouped-query attention") {
    const int B = 2, T = 4, NH = 4, KV = 2, HS = 3;
    const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
    auto qkv = random_values<double>(B * T * row, rng);
    const auto g = random_values<double>((std::size_t)B * T * NH * HS, rng);
    std::vector<double> out((std::size_t)B * T * NH * HS), att((std::size_t)B * NH * T * T), dqkv(B * T * row, 0),
        scratch(T);
    gqa_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, NH, KV, HS);
    ref::attention_backward<double>(dqkv.data(), scratch.data(), g.data(), qkv.data(), att.data(), B, T, NH, KV, HS);
    auto f = [&] {
      gqa_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, NH, KV, HS);
      return weighted_sum(out, g);
    };
    check_fd(qkv, dqkv, f, "dqkv");
  }
}

TEST_CASE(
    "train: grouped-query attention's gradient is multi-head attention's on repeated keys and values, summed back",
    "[train][llama][gqa]") {
  std::mt19937 rng(36);
  const int B = 2, T = 6, NH = 6, KV = 2, HS = 4, G = NH / KV, C = NH * HS;
  const std::size_t row = (std::size_t)(NH + 2 * KV) * HS;
  const auto qkv = random_values<double>(B * T * row, rng);
  const auto dout = random_values<double>((std::size_t)B * T * C, rng);
  std::vector<double> out((std::size_t)B * T * C), att((std::size_t)B * NH * T * T), dqkv(B * T * row, 0), scratch(T);
  gqa_forward_batch<double>(out.data(), att.data(), qkv.data(), B, T, NH, KV, HS);
  ref::attention_backward<double>(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, NH, KV, HS);
  // the same attention as GPT-2's: every query head with its own copy of its key/value head
  std::vector<double> rep((std::size_t)B * T * 3 * C), drep((std::size_t)B * T * 3 * C, 0);
  for (int r = 0; r < B * T; r++)
    for (int h = 0; h < NH; h++)
      for (int d = 0; d < HS; d++) {
        rep[(std::size_t)r * 3 * C + h * HS + d] = qkv[r * row + h * HS + d];
        rep[(std::size_t)r * 3 * C + C + h * HS + d] = qkv[r * row + (NH + h / G) * HS + d];
        rep[(std::size_t)r * 3 * C + 2 * C + h * HS + d] = qkv[r * row + (NH + KV + h / G) * HS + d];
      }
  std::vector<double> out_rep(out.size()), att_rep(att.size());
  for (int b = 0; b < B; b++)
    ref::attention_forward<double>(out_rep.data() + (std::size_t)b * T * C,
                                   att_rep.data() + (std::size_t)b * NH * T * T,
                                   rep.data() + (std::size_t)b * T * 3 * C, 0, T, C, NH, T);
  ref::attention_backward<double>(drep.data(), scratch.data(), dout.data(), rep.data(), att_rep.data(), B, T, C, NH);
  // the copies' gradients summed into the head they copy: equal up to double rounding of sums of
  // ~G T HS terms of size ~1 (1e-12 is 10^4 ulps of margin; a gradient sent to the wrong group is O(1) off)
  for (int r = 0; r < B * T; r++) {
    for (int c = 0; c < NH * HS; c++) REQUIRE(std::fabs(dqkv[r * row + c] - drep[(std::size_t)r * 3 * C + c]) <= 1e-12);
    for (int g = 0; g < KV; g++)
      for (int d = 0; d < HS; d++) {
        double dk = 0, dv = 0;
        for (int h = g * G; h < (g + 1) * G; h++) {
          dk += drep[(std::size_t)r * 3 * C + C + h * HS + d];
          dv += drep[(std::size_t)r * 3 * C + 2 * C + h * HS + d];
        }
        INFO("row " << r << " key/value head " << g << " dim " << d);
        REQUIRE(std::fabs(dqkv[r * row + (NH + g) * HS + d] - dk) <= 1e-12);
        REQUIRE(std::fabs(dqkv[r * row + (NH + KV + g) * HS + d] - dv) <= 1e-12);
      }
  }
}
