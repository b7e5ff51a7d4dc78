// Causal multi-head attention, grouped-query included (KV key/value heads shared by NH / KV query heads),
// forward and backward, in xsimd (batch from simd_batch.hpp). The scalar build (HEADSCOPE_SIMD=0) is
// scalar.cpp; the reference, ref::attention_forward and ref::attention_backward, is in reference.hpp and
// the tests in tests/cpp/kernels/test_attention.cpp. Shapes use the legend in kernels.hpp. The key/value
// cache's layout and the register tiles the passes below run: attention_tiles.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "kernels.hpp"
#include "attention_tiles.hpp"
#include "parallel.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

using simd::axpy;
using simd::batch;
using simd::kLanes;
using simd::kPanel;
using simd::madd;
using namespace attention;  // the cache layout and the tiles (attention_tiles.hpp)

int attention_key_panel_width() { return kPanel; }

std::size_t attention_key_panels_floats(int att_stride, const AttentionShape& shape) {
  return (std::size_t)shape.KV * head_cache_floats(att_stride, shape.HS);
}

int attention_block_rows() { return kScoreRows; }
int attention_value_slice() { return kValueSlice; }

namespace {
// The first j in [0, n) with the largest x[j], as the scalar scan `if (x[j] > x[best]) best = j` finds
// it: the largest by batches, then its first position. That scan carried a load through every step
// (compare, select the index, load x[best]), a few percent of a forward pass at 1,024 tokens. A row
// holding a NaN takes the scalar scan itself, whose answer a NaN changes.
int first_argmax(const float* x, int n) noexcept {
  int j = 0;
  float m = x[0];
  bool nan = false;
  if (n >= kLanes) {
    batch mb = batch::load_unaligned(x);
    auto unordered = mb != mb;
    for (j = kLanes; j + kLanes <= n; j += kLanes) {
      const batch v = batch::load_unaligned(x + j);
      unordered = unordered | (v != v);
      mb = xsimd::max(mb, v);
    }
    nan = xsimd::any(unordered);
    m = simd::horizontal_max(mb);
  }
  for (; j < n; j++) {
    nan = nan || x[j] != x[j];
    m = std::max(m, x[j]);
  }
  if (!nan)
    for (int i = 0; i < n; i++)
      if (x[i] == m) return i;
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

// AttentionRowStats of row t from its weights a and its scores s (before the softmax; s[j_max] the
// largest). The entropy without a log per weight: log a_j = (s_j - m) - log Z, and log Z = -log
// a_{j_max} (the weight where s_j = m is exp(0) / Z), so H = sum_j a_j (m - s_j) - log a_{j_max}; sums
// in double, in key order, as the page's definition sums them.
void row_stats(const AttentionRowStats& st, int h, int t, const float* a, const float* s, int j_max) {
  float* o = st.out + ((std::size_t)h * st.stride + t) * kRowStats;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (t == 0) {
    std::fill(o, o + kRowStats, nan);
    return;
  }
  o[0] = a[t - 1];
  o[1] = a[0];
  o[2] = a[t];
  const int before = st.before[t];
  if (before >= 0) {
    double dup = 0;
    for (int j = st.first[t]; j < t; j = st.next[j]) dup += a[j];
    o[3] = (float)dup;
  } else {
    o[3] = nan;
  }
  o[4] = before >= 0 && before + 1 < t ? a[before + 1] : nan;
  const double m = s[j_max];
  double spread = 0;
  for (int j = 0; j <= t; j++) spread += (double)a[j] * (m - (double)s[j]);
  const double entropy = std::max(0.0, spread - std::log((double)a[j_max]));
  o[5] = (float)std::min(1.0, entropy / std::log(t + 1.0));
}
}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int t_begin, int T, const AttentionShape& shape,
                       int att_stride, float* key_panels, float* scores, int scores_head, int att_block,
                       const AttentionPool* pool, const AttentionRowStats* stats) noexcept {
  const int NH = shape.NH, KV = shape.KV, HS = shape.HS, group = NH / KV;
  const float scale = 1.0f / std::sqrt((float)HS);
  const std::size_t row3 = shape.qkv_row(), out_row = shape.out_row();
  const int out_stride = (int)out_row;
  // Each key/value head's cache (head_cache: key panels, then value blocks). Append rows [t_begin, T) first, for every
  // key/value head: the query heads of a group share it, and may run on different threads. Panel slots past T hold
  // zeros or stale keys: their scores are overwritten below.
  parallel_for(KV, (double)(T - t_begin) * KV * HS, [&](int g_begin, int g_end) {
    for (int g = g_begin; g < g_end; g++) {
      const float* keys = qkv + (std::size_t)(NH + g) * HS;         // key j at keys + j * row3
      const float* values = qkv + (std::size_t)(NH + KV + g) * HS;  // value j at values + j * row3
      const HeadCache<float> cache = head_cache(key_panels, att_stride, HS, g);
      for (int j = t_begin; j < T; j++) {
        float* slot = cache.keys + (std::size_t)(j / kPanel) * kPanel * HS + j % kPanel;
        const float* kr = keys + j * row3;
        for (int d = 0; d < HS; d++) slot[d * kPanel] = kr[d];
        for (int d0 = 0; d0 < HS; d0 += kValueBlock) {
          const ValueBlockOf<float> vb = value_block(cache.values, att_stride, HS, d0);
          std::memcpy(vb.at + (std::size_t)j * vb.width, values + j * row3 + d0, sizeof(float) * vb.width);
        }
      }
    }
  });
  // row t of head h: in the whole map, or in its block's rows alone (the block starting at t0)
  const auto row_of = [&](int h, int t, int t0) {
    return att_block ? att + ((std::size_t)h * att_block + (t - t0)) * att_stride
                     : att + ((std::size_t)h * att_stride + t) * att_stride;
  };
  // Row t of head h from its scores: softmax over the causal prefix and everything after it exactly
  // 0 (this also overwrites the scores the tiles computed past the row's position), then its
  // thumbnail cells and role statistics
  const auto finish_row = [&](int h, int t, float* a) {
    if (scores && h == scores_head) std::copy(a, a + t + 1, scores + (std::size_t)t * att_stride);
    // the row statistics' entropy from the scores s kept here (no log per weight, see row_stats)
    static thread_local std::vector<float> kept;
    int j_max = 0;
    if (stats && stats->out) {
      kept.assign(a, a + t + 1);
      j_max = first_argmax(a, t + 1);
    }
    softmax_forward(a, t + 1);
    std::fill(a + t + 1, a + att_stride, 0.0f);
    if (pool && pool->cells) {
      attention_pool_row(pool->cells + ((std::size_t)h * pool->n + (t >> pool->shift)) * pool->n, a, t + 1,
                         pool->shift);
      if (pool->tail && t >= pool->tail_begin && t - pool->tail_begin < pool->tail_rows) {
        float* own = pool->tail + ((std::size_t)h * pool->tail_rows + (t - pool->tail_begin)) * pool->n;
        std::fill(own, own + pool->n, 0.0f);
        attention_pool_row(own, a, t + 1, pool->shift);
      }
    }
    if (stats && stats->out) row_stats(*stats, h, t, a, kept.data(), j_max);
  };
  const double work = (double)(T - t_begin) * T * NH * HS;  // scores and weighted values, about
  // Typing (fewer new rows than a group has heads) with grouped-query attention: a key/value group's
  // query heads are the rows of one tile, so each key panel and value row is read once for the group,
  // not once a head (SmolLM2-135M: 3 query heads a group; at 8,000 tokens one group's keys and values
  // in a layer are 4 MB, which every head read again). Each score and output is the same multiply-add chain as in the
  // head-at-a-time loop below, so the bits are the same. Threads do not take whole groups: SmolLM2's 3 groups over 2
  // threads left one thread two thirds of the layer's reading. The scores are split by key panels, the rows' softmax
  // and statistics by query heads, and the weighted sums by blocks of value columns (each output's chain over the keys
  // whole). A few rows (a typed word: the word and the space after it) go one at a time this way while that reads the
  // keys and values fewer times than the head-at-a-time loop (once a head of the group).
  if (T - t_begin < group && group <= kScoreRows) {
    const std::size_t head_rows = row_of(1, t_begin, t_begin) - row_of(0, t_begin, t_begin);  // between heads' rows
    const int n_blocks = (HS + kValueBlock - 1) / kValueBlock;
    for (int t = t_begin; t < T; t++) {
      const int n_panels = t / kPanel + 1;  // panels holding keys 0..t
      parallel_for(KV * n_panels, (double)NH * (t + 1) * HS, [&](int u_begin, int u_end) {
        for (int u = u_begin; u < u_end;) {
          const int g = u / n_panels, p_end = std::min(u_end - g * n_panels, n_panels);
          const int h0 = g * group;
          const float* kp_g = head_cache<const float>(key_panels, att_stride, HS, g).keys;
          const float* q = qkv + (std::size_t)t * row3 + (std::size_t)h0 * HS;  // the group's queries, HS apart
          for (int p = u - g * n_panels; p < p_end; p++) {
            const int n_valid = std::min(kPanel, att_stride - p * kPanel);  // never write past the row
            score_tile_rows(group, std::make_integer_sequence<int, kScoreRows>{}, row_of(h0, t, t) + p * kPanel,
                            head_rows, q, HS, kp_g + (std::size_t)p * kPanel * HS, HS, scale, n_valid);
          }
          u = g * n_panels + p_end;
        }
      });
      // softmax, thumbnail cells and statistics: about ten operations a weight
      parallel_for(NH, (double)NH * (t + 1) * 10, [&](int h_begin, int h_end) {
        for (int h = h_begin; h < h_end; h++) finish_row(h, t, row_of(h, t, t));
      });
      parallel_for(KV * n_blocks, (double)NH * (t + 1) * HS, [&](int u_begin, int u_end) {
        for (int u = u_begin; u < u_end; u++) {
          const int g = u / n_blocks, d0 = u % n_blocks * kValueBlock, h0 = g * group;
          const float* vc_g = head_cache<const float>(key_panels, att_stride, HS, g).values;
          float* y = out + (std::size_t)t * out_row + (std::size_t)h0 * HS + d0;  // the group's outputs, HS apart
          for (int r = 0; r < group; r += kValueRows)
            weighted_values_block(std::min(kValueRows, group - r), y + (std::size_t)r * HS, HS, row_of(h0 + r, t, t),
                                  head_rows, value_block(vc_g, att_stride, HS, d0), t + 1, false);
        }
      });
    }
    return;
  }
  // threads take whole query heads (parallel.hpp); a head's work is the same on any thread
  parallel_for(NH, work, [&](int h_begin, int h_end) {
    for (int h = h_begin; h < h_end; h++) {
      const float* q0 = qkv + h * HS;  // query t at q0 + t * row3
      const HeadCache<const float> cache = head_cache<const float>(key_panels, att_stride, HS, h / group);
      const float *kp_h = cache.keys, *vc_h = cache.values;
      for (int t0 = t_begin; t0 < T; t0 += kScoreRows) {
        const int rows = std::min(kScoreRows, T - t0);
        const int t_last = t0 + rows - 1;
        // scores over the key panels up to the block's last position (causal)
        for (int p = 0; p * kPanel <= t_last; p++) {
          const int n_valid = std::min(kPanel, att_stride - p * kPanel);  // never write past the row
          score_tile_rows(rows, std::make_integer_sequence<int, kScoreRows>{}, row_of(h, t0, t0) + p * kPanel,
                          att_stride, q0 + t0 * row3, row3, kp_h + (std::size_t)p * kPanel * HS, HS, scale, n_valid);
        }
        for (int t = t0; t <= t_last; t++) finish_row(h, t, row_of(h, t, t0));
        // y = P V, kValueRows rows at a time over j up to the sub-block's last position, a value block at a time
        for (int t = t0; t <= t_last; t += kValueRows)
          for (int d0 = 0; d0 < HS; d0 += kValueBlock)
            weighted_values_block(std::min(kValueRows, t_last + 1 - t), out + (std::size_t)t * out_row + h * HS + d0,
                                  out_stride, row_of(h, t, t0), att_stride, value_block(vc_h, att_stride, HS, d0),
                                  t + std::min(kValueRows, t_last + 1 - t), true);
      }
    }
  });
}

void attention_pool_row(float* cells, const float* row, int n, int shift) noexcept {
  const int bin = 1 << shift;
  int j = 0;
  if (bin >= kLanes) {  // whole cells a batch at a time (bin is a power of two: a multiple of kLanes)
    for (; j + bin <= n; j += bin) {
      batch m = batch::load_unaligned(row + j);
      for (int i = kLanes; i < bin; i += kLanes) m = xsimd::max(m, batch::load_unaligned(row + j + i));
      float& c = cells[j >> shift];
      c = std::max(c, simd::horizontal_max(m));
    }
  }
  for (; j < n; j++) {
    float& c = cells[j >> shift];
    c = std::max(c, row[j]);
  }
}

void attention_cached_value_rows(float* dst, const float* key_panels, int att_stride, const AttentionShape& shape,
                                 int g, int r_begin, int r_end) noexcept {
  const int HS = shape.HS;
  const float* vc = head_cache(key_panels, att_stride, HS, g).values;
  for (int d0 = 0; d0 < HS; d0 += kValueBlock) {
    const ValueBlock vb = value_block(vc, att_stride, HS, d0);
    for (int j = r_begin; j < r_end; j++)
      std::memcpy(dst + (std::size_t)(j - r_begin) * HS + d0, vb.at + (std::size_t)j * vb.width,
                  sizeof(float) * vb.width);
  }
}

void attention_rows(float* att_rows, const float* qkv, int h, int r_begin, int r_end, const AttentionShape& shape,
                    int att_stride, const float* key_panels, std::size_t q_stride, int q_first_row) noexcept {
  const int HS = shape.HS, group = shape.NH / shape.KV;
  const float scale = 1.0f / std::sqrt((float)HS);
  const std::size_t row3 = q_stride ? q_stride : shape.qkv_row();
  const float* q0 = qkv + h * HS;
  const float* kp_h = head_cache(key_panels, att_stride, HS, h / group).keys;
  // attention_forward's loop for one head, without the weighted values: a row's scores are its own
  // multiply-add chains whatever block it is computed in
  for (int t0 = r_begin; t0 < r_end; t0 += kScoreRows) {
    const int rows = std::min(kScoreRows, r_end - t0);
    const int t_last = t0 + rows - 1;
    float* block = att_rows + (std::size_t)(t0 - r_begin) * att_stride;
    for (int p = 0; p * kPanel <= t_last; p++) {
      const int n_valid = std::min(kPanel, att_stride - p * kPanel);
      score_tile_rows(rows, std::make_integer_sequence<int, kScoreRows>{}, block + p * kPanel, att_stride,
                      q0 + (std::size_t)(t0 - q_first_row) * row3, row3, kp_h + (std::size_t)p * kPanel * HS, HS, scale,
                      n_valid);
    }
    for (int t = t0; t <= t_last; t++) {
      float* a = block + (std::size_t)(t - t0) * att_stride;
      softmax_forward(a, t + 1);
      std::fill(a + t + 1, a + att_stride, 0.0f);
    }
  }
}

// --- backward: the scores' and the weighted sum's gradients, per key/value head and its query heads
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, const AttentionShape& shape) noexcept {
  const int NH = shape.NH, KV = shape.KV, HS = shape.HS, group = NH / KV;
  const std::size_t C3 = shape.qkv_row(), C = shape.out_row();
  const float scale = 1.0f / std::sqrt((float)HS);
  // threads take whole (sequence, key/value head) pairs and that head's query heads in order: each
  // writes only its own columns of dqkv, and a shared key/value head sums its query heads' gradients
  // in the same order for every thread count
  parallel_for(B * KV, (double)B * T * T * C * 2, [&](int u_begin, int u_end) {
    static thread_local std::vector<float> own;
    float* datt = scratch;  // the caller's scratch serves the range that starts at 0, on whichever thread
    if (u_begin > 0) {
      own.resize((std::size_t)T);
      datt = own.data();
    }
    for (int u = u_begin; u < u_end; u++) {
      const int b = u / KV, g = u % KV;
      const std::size_t kcol = (std::size_t)(NH + g) * HS, vcol = (std::size_t)(NH + KV + g) * HS;
      for (int h = g * group; h < (g + 1) * group; h++)
        for (int t = 0; t < T; t++) {
          const float* a = att + (((std::size_t)b * NH + h) * T + t) * T;
          const float* d = dout + ((std::size_t)b * T + t) * C + h * HS;
          const float* base = qkv + (std::size_t)b * T * C3;
          float* dbase = dqkv + (std::size_t)b * T * C3;
          for (int j = 0; j <= t; j++) {
            datt[j] = dot(d, base + (std::size_t)j * C3 + vcol, HS);
            axpy(dbase + (std::size_t)j * C3 + vcol, a[j], d, HS);
          }
          const float dsum = dot(a, datt, t + 1);
          const float* q = base + (std::size_t)t * C3 + h * HS;
          float* dq = dbase + (std::size_t)t * C3 + h * HS;
          for (int j = 0; j <= t; j++) {
            const float dpre = a[j] * (datt[j] - dsum) * scale;
            axpy(dq, dpre, base + (std::size_t)j * C3 + kcol, HS);
            axpy(dbase + (std::size_t)j * C3 + kcol, dpre, q, HS);
          }
        }
    }
  });
}

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
