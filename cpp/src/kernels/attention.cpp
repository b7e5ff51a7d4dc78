// Causal multi-head attention, grouped-query included (KV key/value heads shared by NH / KV query heads),
// forward and backward, in xsimd (batch from simd_batch.hpp). The scalar build (HEADSCOPE_SIMD=0) is
// scalar.cpp; the reference, ref::attention_forward and ref::attention_backward, is in reference.hpp and
// the tests in tests/cpp/kernels/test_attention.cpp. Shapes use the legend in kernels.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "kernels.hpp"
#include "parallel.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels {

using simd::axpy;
using simd::batch;
using simd::kLanes;
using simd::kPanel;
using simd::madd;

// --- attention ----------------------------------------------------------------------------------
// Per head, the keys and values are copied once, as tokens arrive (like the KV cache), into a
// contiguous per-head cache (key_panels): keys in kPanel-wide panels (HS, kPanel) that the score
// tiles read as whole batches, values in blocks of kValueBlock columns, each block's rows contiguous
// (T, kValueBlock; the last block narrower when HS is not a multiple). In qkv they sit 3C floats
// apart; at T = 1024 one head's values would span 9 MB of addresses (thousands of pages, beyond the
// TLB), contiguous they take 256 KB (HS 64) and stay in L2 next to the keys while every query block
// streams past them. Each value tile reads one block, so it streams contiguous memory: a typed row at
// 8,000 tokens reads its head's 2 MB of values from memory, and from whole (T, HS) rows each tile took
// a 64- or 128-byte piece of every 256-byte row, at about half a contiguous stream's rate (cpp/README.md). Queries go
// in blocks of kScoreRows rows: scores as kScoreRows x kPanel register tiles over the key panels up to the block's last
// position, softmax, then the weighted sum of values as kValueRows x up-to-kValueBatches tiles. Each score is one
// multiply-add chain over the head dimension in order and each output one chain over the keys in order, whatever the
// tile (keys past a row's position carry an exact 0 weight, and a multiply-add of 0 leaves a sum unchanged): rows
// computed one call at a time (typing) equal rows computed together (a full run), bit for bit.
// Register budget: SIMD128 and AVX2 4 x 2 batches of scores (8 accumulators), 2 rows x up to 4
// batches of values (8); AVX-512 (32 registers) 12 x 32 scores (24), 6 rows x 4 batches (24, head
// size 64). Measured at T = 1024 on GPT-2 small's heads: 12/6 ran 1.3x faster than 8/4 (cpp/bench).
// The value tiles are at most kValueBatches batches wide: 2 x 5 held 10 accumulators, 5 value batches
// and 2 broadcasts, more than the 15 vector registers V8 allocates on x86-64, and its code kept
// accumulators on the stack (perf annotate of the wasm build, T = 1024); 2 x 4 holds 14. A head of 64
// is then 4 tiles of 4 batches, not 5 + 5 + 5 + 1.
constexpr int kScoreRows = kLanes >= 16 ? 12 : 4;
constexpr int kValueRows = kLanes >= 16 ? 6 : 2;
constexpr int kValueBatches = kLanes >= 16 ? 5 : 4;
// A row alone (typing: each head's one new row; a group's odd row) has only its own batches' chains,
// each waiting on the multiply-add before it over the keys: 4 batches wide, 4 chains kept one multiply-
// add in flight a cycle (V8's code for the 1 x 4 tile: four dependent vfmadd231ps a key). 8 wide keeps
// 8 chains in 8 accumulators, the value batches loaded one at a time beside them.
constexpr int kValueBatchesOneRow = kLanes >= 16 ? kValueBatches : 6;
// The value cache's blocks of columns. Typing's grouped rows also split their weighted sums over
// threads by these blocks: a head of 64 is 2 blocks, 8 SIMD128 batches each (2 value tiles; the lone
// row's 6-wide tile and a 2-wide one), so SmolLM2-135M's 3 groups are 6 parts for 2 threads.
constexpr int kValueBlock = 32;
static_assert(kValueBlock % kLanes == 0, "a block of value columns is whole batches");

int attention_key_panel_width() { return kPanel; }

// one head's cache: key panels, then the value blocks
static std::size_t head_cache_floats(int att_stride, int HS) {
  return ((std::size_t)(att_stride + kPanel - 1) / kPanel) * kPanel * HS + (std::size_t)att_stride * HS;
}

// The value block holding columns [d0, d0 + width) of a head's values (d0 a multiple of kValueBlock),
// in the head's value cache vc: value j's columns at at + j * width.
template <class F>
struct ValueBlockOf {
  F* at;
  int width;
};
using ValueBlock = ValueBlockOf<const float>;
template <class F>
static inline ValueBlockOf<F> value_block(F* vc, int att_stride, int HS, int d0) noexcept {
  return {vc + (std::size_t)d0 * att_stride, std::min(kValueBlock, HS - d0)};
}

std::size_t attention_key_panels_floats(int att_stride, const AttentionShape& shape) {
  return (std::size_t)shape.KV * head_cache_floats(att_stride, shape.HS);
}

// Scores of ROWS query rows against one panel of kPanel keys, accumulated over the head dimension.
// a_rows (ROWS, att_stride) <- [:, 0:n_valid]; q row r at q + r * row3; key_panel (HS, kPanel)
// a_rows' rows are a_stride floats apart (the next query's row of a head, or the next head's row of a query).
template <int ROWS>
static inline void score_tile(float* a_rows, std::size_t a_stride, const float* q, std::size_t row3,
                              const float* key_panel, int HS, float scale, int n_valid) noexcept {
  batch acc0[ROWS], acc1[ROWS];
  for (int r = 0; r < ROWS; r++) acc0[r] = acc1[r] = batch(0.0f);
  for (int d = 0; d < HS; d++) {
    const batch k0 = batch::load_unaligned(key_panel + d * kPanel);
    const batch k1 = batch::load_unaligned(key_panel + d * kPanel + kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch qv(q[r * row3 + d]);
      acc0[r] = madd(qv, k0, acc0[r]);
      acc1[r] = madd(qv, k1, acc1[r]);
    }
  }
  const batch s(scale);
  for (int r = 0; r < ROWS; r++) {
    float* o = a_rows + r * a_stride;
    if (n_valid == kPanel) {
      (acc0[r] * s).store_unaligned(o);
      (acc1[r] * s).store_unaligned(o + kLanes);
    } else {
      alignas(64) float tmp[kPanel];
      (acc0[r] * s).store_aligned(tmp);
      (acc1[r] * s).store_aligned(tmp + kLanes);
      std::memcpy(o, tmp, sizeof(float) * n_valid);
    }
  }
}

// y rows (ROWS) [0, NB*kLanes) = sum_{j0 <= j < n} a[r][j] v_j, value j at values + j * v_stride: each
// loaded value batch feeds ROWS rows. The sums start from 0 (j0 = 0) or from what y holds (the same
// chains continued: a later slice of the keys, see weighted_values_rows).
template <int ROWS, int NB>
static inline void weighted_values_tile(float* y, int y_stride, const float* a, std::size_t a_stride,
                                        const float* values, int v_stride, int j0, int n) noexcept {
  batch acc[ROWS][NB];
  for (int r = 0; r < ROWS; r++)
    for (int b = 0; b < NB; b++)
      acc[r][b] = j0 ? batch::load_unaligned(y + (std::size_t)r * y_stride + b * kLanes) : batch(0.0f);
  for (int j = j0; j < n; j++) {
    const float* v = values + (std::size_t)j * v_stride;
    batch ar[ROWS];
    for (int r = 0; r < ROWS; r++) ar[r] = batch(a[r * a_stride + j]);
    // each value batch used as it is loaded: V8 keeps the code in wasm's order, and all NB loaded
    // first took NB registers beside the accumulators (a spilled accumulator at 1 x 8)
    for (int b = 0; b < NB; b++) {
      const batch vb = batch::load_unaligned(v + b * kLanes);
      for (int r = 0; r < ROWS; r++) acc[r][b] = madd(ar[r], vb, acc[r][b]);
    }
  }
  for (int r = 0; r < ROWS; r++)
    for (int b = 0; b < NB; b++) acc[r][b].store_unaligned(y + (std::size_t)r * y_stride + b * kLanes);
}

// the tile of nb batches for the nb < NB + 1 whole batches left (none when nb is 0)
template <int ROWS, int NB>
static inline void weighted_values_last_tile(int nb, float* y, int y_stride, const float* a, std::size_t a_stride,
                                             const float* values, int v_stride, int j0, int n) noexcept {
  if constexpr (NB > 0) {
    if (nb == NB)
      weighted_values_tile<ROWS, NB>(y, y_stride, a, a_stride, values, v_stride, j0, n);
    else
      weighted_values_last_tile<ROWS, NB - 1>(nb, y, y_stride, a, a_stride, values, v_stride, j0, n);
  }
}

// Keys a slice of the weighted sum covers: 1,024 value rows of a head of 64 are 256 KB, which stay in
// L2 while every column tile passes over them. A head's tiles each read all its values (a head of 64
// is 4 tiles), so past L2's size (a long text: at 8,000 tokens one head's values are 2 MB) each tile
// read them from memory again; sliced, from memory once. Each slice continues the same chains from
// the partial sums stored in y (exact), so the bits are those of one pass.
constexpr int kValueSlice = 1024;

// y rows [0, width) for one value block (width its whole batches' columns, value j at values + j * v_stride)
template <int ROWS>
static inline void weighted_values_rows(float* y, int y_stride, const float* a, std::size_t a_stride,
                                        const float* values, int v_stride, int n, int width) noexcept {
  constexpr int NB = ROWS == 1 ? kValueBatchesOneRow : kValueBatches;
  for (int j0 = 0; j0 < n; j0 += kValueSlice) {
    const int j1 = std::min(n, j0 + kValueSlice);
    int d = 0;
    for (; d + NB * kLanes <= width; d += NB * kLanes)
      weighted_values_tile<ROWS, NB>(y + d, y_stride, a, a_stride, values + d, v_stride, j0, j1);
    weighted_values_last_tile<ROWS, NB - 1>((width - d) / kLanes, y + d, y_stride, a, a_stride, values + d, v_stride,
                                            j0, j1);
  }
}

// y [d_begin, d_end) = sum_{j < n} a[j] v_j, a block's columns left over after whole batches (value j
// at values + j * v_stride). Natively GCC multiplies four keys' terms at a time and adds them in order,
// then contracts the last n % 4 into FMAs, so the bits depend on n: a row's tail must sum exactly its
// own keys (t + 1 for row t), in the full run and typing alike. One copy, not inlined into each caller.
[[gnu::noinline]] static void weighted_values_tail(float* y, const float* a, const float* values, int n, int d_begin,
                                                   int d_end, int v_stride) noexcept {
  for (int d = d_begin; d < d_end; d++) {
    float acc = 0.0f;
    for (int j = 0; j < n; j++) acc += a[j] * values[(std::size_t)j * v_stride + d];
    y[d] = acc;
  }
}

template <int... R>
static inline void score_tile_rows(int rows, std::integer_sequence<int, R...>, float* a_rows, std::size_t a_stride,
                                   const float* q, std::size_t row3, const float* kp, int HS, float scale,
                                   int n_valid) noexcept {
  // dispatch the block's height (1..kScoreRows) to its template instance
  ((rows == R + 1 ? (score_tile<R + 1>(a_rows, a_stride, q, row3, kp, HS, scale, n_valid), 0) : 0), ...);
}

template <int... R>
static inline void weighted_values_rows_n(int rows, std::integer_sequence<int, R...>, float* y, int y_stride,
                                          const float* a, std::size_t a_stride, const float* values, int v_stride,
                                          int n, int width) noexcept {
  ((rows == R + 1 ? (weighted_values_rows<R + 1>(y, y_stride, a, a_stride, values, v_stride, n, width), 0) : 0), ...);
}

// y rows (rows, one value block's columns) = their weight rows a (a_stride apart) times the block's
// values: whole batches by tiles over keys [0, n), the block's columns past them one at a time over
// each row's own keys, n for every row (a group's heads at one position) or, with consecutive, n - rows
// + 1 + r for row r (consecutive positions, the last one's keys n)
static inline void weighted_values_block(int rows, float* y, int y_stride, const float* a, std::size_t a_stride,
                                         ValueBlock vb, int n, bool consecutive) noexcept {
  const int width = vb.width - vb.width % kLanes;
  if (width > 0)
    weighted_values_rows_n(rows, std::make_integer_sequence<int, kValueRows>{}, y, y_stride, a, a_stride, vb.at,
                           vb.width, n, width);
  if (width < vb.width)
    for (int r = 0; r < rows; r++)
      weighted_values_tail(y + (std::size_t)r * y_stride, a + r * a_stride, vb.at, consecutive ? n - rows + 1 + r : n,
                           width, vb.width, vb.width);
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
  const int panels_per_head = (att_stride + kPanel - 1) / kPanel;
  // Each key/value head's cache: panels (panels_per_head, HS, kPanel) with [p][d][u] = k_{p*kPanel+u}[d],
  // then the value blocks (value_block). Append rows [t_begin, T) first, for every key/value head: the query
  // heads of a group share it, and may run on different threads. Panel slots past T hold zeros or
  // stale keys: their scores are overwritten below.
  parallel_for(KV, (double)(T - t_begin) * KV * HS, [&](int g_begin, int g_end) {
    for (int g = g_begin; g < g_end; g++) {
      const float* keys = qkv + (std::size_t)(NH + g) * HS;         // key j at keys + j * row3
      const float* values = qkv + (std::size_t)(NH + KV + g) * HS;  // value j at values + j * row3
      float* kp_g = key_panels + (std::size_t)g * head_cache_floats(att_stride, HS);
      float* vc_g = kp_g + (std::size_t)panels_per_head * kPanel * HS;
      for (int j = t_begin; j < T; j++) {
        float* slot = kp_g + (std::size_t)(j / kPanel) * kPanel * HS + j % kPanel;
        const float* kr = keys + j * row3;
        for (int d = 0; d < HS; d++) slot[d * kPanel] = kr[d];
        for (int d0 = 0; d0 < HS; d0 += kValueBlock) {
          const ValueBlockOf<float> vb = value_block(vc_g, att_stride, HS, d0);
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
          const float* kp_g = key_panels + (std::size_t)g * head_cache_floats(att_stride, HS);
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
          const float* vc_g = key_panels + (std::size_t)g * head_cache_floats(att_stride, HS) +
                              (std::size_t)panels_per_head * kPanel * HS;
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
      const float* kp_h = key_panels + (std::size_t)(h / group) * head_cache_floats(att_stride, HS);
      const float* vc_h = kp_h + (std::size_t)panels_per_head * kPanel * HS;
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
  const int panels_per_head = (att_stride + kPanel - 1) / kPanel;
  const float* vc =
      key_panels + (std::size_t)g * head_cache_floats(att_stride, HS) + (std::size_t)panels_per_head * kPanel * HS;
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
  const float* kp_h = key_panels + (std::size_t)(h / group) * head_cache_floats(att_stride, HS);
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
