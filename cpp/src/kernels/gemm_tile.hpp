// Internal to the kernel library: the one GEMM register tile, for the model's packed linear layers
// and for training's products (dinp, dweight), and the one tile table. Needs HEADSCOPE_SIMD.
#pragma once
#include <cstddef>
#include <cstring>

#include "simd_batch.hpp"

namespace headscope::kernels::gemm {

using simd::batch;
using simd::kLanes;
using simd::kPanel;

// Rows of a register tile: kTileRows input rows x kPanel columns (two batches) of the output, one
// accumulator per row and batch. The tile is as tall as the register file allows next to the two
// weight batches and the broadcast input value:
//   SIMD128 (V8 keeps ~15 registers usable): 4 x 8  -> 8 accumulators
//   AVX2 (16 ymm):                           6 x 16 -> 12 accumulators
//   AVX-512 (32 zmm):                        8 x 32 -> 16 accumulators
constexpr int kTileRows = kLanes >= 16 ? 8 : kLanes == 8 ? 6 : 4;

// How a tile's accumulators start: from the bias, from zero, or from what out holds (a later depth
// slice of the same product, or a gradient being accumulated).
enum class TileStart { bias, zero, out };

// One register tile over `depth` steps of the reduction:
//   out (ROWS, kPanel) = start + A (ROWS, depth) @ B (depth, kPanel)
// A's element (r, k) is a[r * a_row + k * a_depth]: a_depth 1 for row-major inputs, or a transposed
// view (training's dweight reads inp^T with a_row 1, a_depth K). B's row k is kPanel floats at
// b + k * b_stride (kPanel for packed panels, the matrix's width for a plain row-major matrix).
// Only the first n_valid columns are stored (the last panel of a packed matrix is zero-padded, so
// reading all kPanel columns of B is safe there; plain matrices pass n_valid = kPanel).
// Every output element is one multiply-add chain over k in increasing order, whichever tile computes
// its row; storing a partial sum between depth slices and reloading it is exact. So a row computed
// alone (the incremental update's new token) is bit-identical to the same row computed with others.
// PACKED: the model's layout (a_depth 1, b_stride kPanel) fixed at compile time, as the one-row
// product of typing, which is bound by its loop overhead, needs (runtime strides there cost ~25%);
// the arguments a_depth and b_stride are then ignored.
template <int ROWS, bool PACKED>
inline void tile(float* out, int out_stride, const float* a, std::ptrdiff_t a_row, std::ptrdiff_t a_depth_arg,
                 const float* b, std::ptrdiff_t b_stride_arg, int depth, TileStart start, const float* bias,
                 int n_valid) noexcept {
  const std::ptrdiff_t a_depth = PACKED ? 1 : a_depth_arg;
  const std::ptrdiff_t b_stride = PACKED ? kPanel : b_stride_arg;
  batch acc0[ROWS], acc1[ROWS];
  if (start == TileStart::out) {
    for (int r = 0; r < ROWS; r++) {
      const float* o = out + (std::size_t)r * out_stride;
      if (n_valid == kPanel) {
        acc0[r] = batch::load_unaligned(o);
        acc1[r] = batch::load_unaligned(o + kLanes);
      } else {
        alignas(64) float tmp[kPanel] = {};
        std::memcpy(tmp, o, sizeof(float) * n_valid);
        acc0[r] = batch::load_aligned(tmp);
        acc1[r] = batch::load_aligned(tmp + kLanes);
      }
    }
  } else {
    const batch b_lo = start == TileStart::bias ? batch::load_unaligned(bias) : batch(0.0f);
    const batch b_hi = start == TileStart::bias ? batch::load_unaligned(bias + kLanes) : batch(0.0f);
    for (int r = 0; r < ROWS; r++) {
      acc0[r] = b_lo;
      acc1[r] = b_hi;
    }
  }
  const float* w = b;
  const float* x = a;
  for (int k = 0; k < depth; k++, w += b_stride, x += a_depth) {
    const batch w0 = batch::load_unaligned(w);
    const batch w1 = batch::load_unaligned(w + kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch xv(x[r * a_row]);
      acc0[r] = simd::madd(xv, w0, acc0[r]);
      acc1[r] = simd::madd(xv, w1, acc1[r]);
    }
  }
  for (int r = 0; r < ROWS; r++) {
    float* o = out + (std::size_t)r * out_stride;
    if (n_valid == kPanel) {
      acc0[r].store_unaligned(o);
      acc1[r].store_unaligned(o + kLanes);
    } else {
      alignas(64) float tmp[kPanel];
      acc0[r].store_aligned(tmp);
      acc1[r].store_aligned(tmp + kLanes);
      std::memcpy(o, tmp, sizeof(float) * n_valid);
    }
  }
}

}  // namespace headscope::kernels::gemm
