// Internal to the kernel library: attention's key/value cache layout and its register tiles (the
// scores' and the weighted sum's), for attention.cpp. Needs HEADSCOPE_SIMD. The kernel, its reference
// and its tests: attention.cpp (top comment).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

#include "simd_batch.hpp"

#if HEADSCOPE_SIMD

namespace headscope::kernels::attention {

using simd::batch;
using simd::kLanes;
using simd::kPanel;
using simd::madd;

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

// One key/value head's cache: its key panels (ceil(att_stride / kPanel), HS, kPanel) with [p][d][u] =
// k_{p*kPanel+u}[d], then its value blocks (value_block), att_stride x HS floats.
inline std::size_t head_key_floats(int att_stride, int HS) {
  return ((std::size_t)(att_stride + kPanel - 1) / kPanel) * kPanel * HS;
}
inline std::size_t head_cache_floats(int att_stride, int HS) {
  return head_key_floats(att_stride, HS) + (std::size_t)att_stride * HS;
}
// Key/value head g's key panels and value cache within key_panels (F: float or const float)
template <class F>
struct HeadCache {
  F* keys;
  F* values;
};
template <class F>
inline HeadCache<F> head_cache(F* key_panels, int att_stride, int HS, int g) noexcept {
  F* keys = key_panels + (std::size_t)g * head_cache_floats(att_stride, HS);
  return {keys, keys + head_key_floats(att_stride, HS)};
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
inline ValueBlockOf<F> value_block(F* vc, int att_stride, int HS, int d0) noexcept {
  return {vc + (std::size_t)d0 * att_stride, std::min(kValueBlock, HS - d0)};
}

// Scores of ROWS query rows against one panel of kPanel keys, accumulated over the head dimension.
// a_rows (ROWS, att_stride) <- [:, 0:n_valid]; q row r at q + r * row3; key_panel (HS, kPanel)
// a_rows' rows are a_stride floats apart (the next query's row of a head, or the next head's row of a query).
template <int ROWS>
inline void score_tile(float* a_rows, std::size_t a_stride, const float* q, std::size_t row3, const float* key_panel,
                       int HS, float scale, int n_valid) noexcept {
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
inline void weighted_values_tile(float* y, int y_stride, const float* a, std::size_t a_stride, const float* values,
                                 int v_stride, int j0, int n) noexcept {
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
inline void weighted_values_last_tile(int nb, float* y, int y_stride, const float* a, std::size_t a_stride,
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
inline void weighted_values_rows(float* y, int y_stride, const float* a, std::size_t a_stride, const float* values,
                                 int v_stride, int n, int width) noexcept {
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
[[gnu::noinline]] inline void weighted_values_tail(float* y, const float* a, const float* values, int n, int d_begin,
                                                   int d_end, int v_stride) noexcept {
  for (int d = d_begin; d < d_end; d++) {
    float acc = 0.0f;
    for (int j = 0; j < n; j++) acc += a[j] * values[(std::size_t)j * v_stride + d];
    y[d] = acc;
  }
}

template <int... R>
inline void score_tile_rows(int rows, std::integer_sequence<int, R...>, float* a_rows, std::size_t a_stride,
                            const float* q, std::size_t row3, const float* kp, int HS, float scale,
                            int n_valid) noexcept {
  // dispatch the block's height (1..kScoreRows) to its template instance
  ((rows == R + 1 ? (score_tile<R + 1>(a_rows, a_stride, q, row3, kp, HS, scale, n_valid), 0) : 0), ...);
}

template <int... R>
inline void weighted_values_rows_n(int rows, std::integer_sequence<int, R...>, float* y, int y_stride, const float* a,
                                   std::size_t a_stride, const float* values, int v_stride, int n, int width) noexcept {
  ((rows == R + 1 ? (weighted_values_rows<R + 1>(y, y_stride, a, a_stride, values, v_stride, n, width), 0) : 0), ...);
}

// y rows (rows, one value block's columns) = their weight rows a (a_stride apart) times the block's
// values: whole batches by tiles over keys [0, n), the block's columns past them one at a time over
// each row's own keys, n for every row (a group's heads at one position) or, with consecutive, n - rows
// + 1 + r for row r (consecutive positions, the last one's keys n)
inline void weighted_values_block(int rows, float* y, int y_stride, const float* a, std::size_t a_stride, ValueBlock vb,
                                  int n, bool consecutive) noexcept {
  const int width = vb.width - vb.width % kLanes;
  if (width > 0)
    weighted_values_rows_n(rows, std::make_integer_sequence<int, kValueRows>{}, y, y_stride, a, a_stride, vb.at,
                           vb.width, n, width);
  if (width < vb.width)
    for (int r = 0; r < rows; r++)
      weighted_values_tail(y + (std::size_t)r * y_stride, a + r * a_stride, vb.at, consecutive ? n - rows + 1 + r : n,
                           width, vb.width, vb.width);
}

}  // namespace headscope::kernels::attention

#endif  // HEADSCOPE_SIMD
