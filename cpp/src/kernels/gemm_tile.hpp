// Internal to the kernel library: the GEMM register tiles. Needs HEADSCOPE_SIMD.
//   tile:        any strides, for training's products (dinp, dweight, the unpacked forward)
//   packed_tile: the model's packed linear layers (row-major input, packed weight panels)
// Both compute each output as the same multiply-add chain, so their results are the same bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

// A's element at p in every lane, by a load (v128.load32_splat in wasm, vbroadcastss natively): the
// broadcast every packed tile below uses
inline batch broadcast(const float* p) noexcept {
#ifdef __EMSCRIPTEN__
  return batch(_mm_load1_ps(p));
#else
  return batch(*p);
#endif
}

// How a tile's accumulators start: from the bias, from zero, or from what out holds (a later depth
// slice of the same product, or a gradient being accumulated).
enum class TileStart { bias, zero, out };

// Both tiles' accumulators at the start (the partial sums in `out`, the bias, or zeros) and their
// store, n_valid columns of each row (a panel past N is padded: see `tile`)
template <int ROWS>
inline void tile_start(batch* acc0, batch* acc1, const float* out, int out_stride, TileStart start, const float* bias,
                       int n_valid) noexcept {
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
}
template <int ROWS>
inline void tile_store(const batch* acc0, const batch* acc1, float* out, int out_stride, int n_valid) noexcept {
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
// The model's packed layout has its own tile below (packed_tile), with both fixed at compile time.
template <int ROWS>
inline void tile(float* out, int out_stride, const float* a, std::ptrdiff_t a_row, std::ptrdiff_t a_depth,
                 const float* b, std::ptrdiff_t b_stride, int depth, TileStart start, const float* bias,
                 int n_valid) noexcept {
  batch acc0[ROWS], acc1[ROWS];
  tile_start<ROWS>(acc0, acc1, out, out_stride, start, bias, n_valid);
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
  tile_store<ROWS>(acc0, acc1, out, out_stride, n_valid);
}

// The model's tile: out (ROWS, kPanel) = start + A (ROWS, depth) @ panel (depth, kPanel), A row-major
// with row stride a_stride, the panel kPanel floats per step of depth. Each output is the multiply-add
// chain of `tile` above (the same bits). Written for V8's code generator, which is what the sweep in
// cpp/bench/bench_variants.cpp measured (bench/README.md, "The GEMM's register tile"): one pointer per
// row advanced with k (no r * stride product in the loop), accumulators as named arrays that unroll,
// and A's element broadcast by a load (v128.load32_splat in wasm, vbroadcastss natively). Taller
// tiles (5 x 8, 6 x 8 with SIMD128) measured slower in V8: it spills past about 10 accumulators.
template <int ROWS>
inline void packed_tile(float* out, int out_stride, const float* a, int a_stride, const float* panel, int depth,
                        TileStart start, const float* bias, int n_valid) noexcept {
  batch acc0[ROWS], acc1[ROWS];
  tile_start<ROWS>(acc0, acc1, out, out_stride, start, bias, n_valid);
  const float* x[ROWS];
  for (int r = 0; r < ROWS; r++) x[r] = a + (std::size_t)r * a_stride;
  const float* w = panel;
  for (int k = 0; k < depth; k++, w += kPanel) {
    const batch w0 = batch::load_unaligned(w);
    const batch w1 = batch::load_unaligned(w + kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch xv = broadcast(x[r] + k);
      acc0[r] = simd::madd(xv, w0, acc0[r]);
      acc1[r] = simd::madd(xv, w1, acc1[r]);
    }
  }
  tile_store<ROWS>(acc0, acc1, out, out_stride, n_valid);
}

// packed_tile on a row tile packed k-major: A's element (r, k) at xk[k * ROWS + r] (pack_rows_kmajor).
// The same chains, so the same bits. What it saves is V8's address arithmetic: wasm addresses are one
// 32-bit offset from the memory's base, so packed_tile's ROWS row pointers cost an `lea` each per
// step before their broadcasts, and with ROWS + 2 pointers live the loop's bound spilled to the stack
// (`perf annotate` of V8's code for the 4 x 8 tile: 28 instructions a step for 16 multiplies and adds,
// more than Zen's 6-wide dispatch feeds in the 4 cycles the FP pipes need). Packed, the ROWS
// broadcasts are one pointer's constant offsets (v128.load32_splat offset=4r), and the loop ends on a
// pointer compare. Used for the full row tiles in SIMD128 wasm; x86 addressing folds base + index itself.
template <int ROWS>
inline void packed_tile_kmajor(float* out, int out_stride, const float* xk, const float* panel, int depth,
                               TileStart start, const float* bias, int n_valid) noexcept {
  batch acc0[ROWS], acc1[ROWS];
  tile_start<ROWS>(acc0, acc1, out, out_stride, start, bias, n_valid);
  const float* w = panel;
  const float* const w_end = panel + (std::size_t)depth * kPanel;
  for (; w != w_end; w += kPanel, xk += ROWS) {
    const batch w0 = batch::load_unaligned(w);
    const batch w1 = batch::load_unaligned(w + kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch xv = broadcast(xk + r);
      acc0[r] = simd::madd(xv, w0, acc0[r]);
      acc1[r] = simd::madd(xv, w1, acc1[r]);
    }
  }
  tile_store<ROWS>(acc0, acc1, out, out_stride, n_valid);
}
// packed_tile over two panels at once (ROWS x 2 kPanel columns): each broadcast of A serves four
// weight batches instead of two, half the broadcasts per multiply-add (onnxruntime-web's MLAS tile is
// 2 x 16). Panel b's step k is at panel_b + k * kPanel; both panels whole (n_valid = kPanel). The
// same chains, so the same bits. The relaxed SIMD build's tile: there the fused multiply-add halves
// the FP work of a step and the broadcasts and loads become its limit (gemm-tiles.mjs: 1.0-1.07x
// the 4 x 8 tile, the gain growing with depth).
template <int ROWS>
inline void packed_tile_2panels(float* out, int out_stride, const float* a, int a_stride, const float* panel_a,
                                const float* panel_b, int depth, TileStart start, const float* bias) noexcept {
  batch acc0[ROWS], acc1[ROWS], acc2[ROWS], acc3[ROWS];
  tile_start<ROWS>(acc0, acc1, out, out_stride, start, bias, kPanel);
  tile_start<ROWS>(acc2, acc3, out + kPanel, out_stride, start, bias ? bias + kPanel : nullptr, kPanel);
  const float* x[ROWS];
  for (int r = 0; r < ROWS; r++) x[r] = a + (std::size_t)r * a_stride;
  for (int k = 0; k < depth; k++) {
    const std::size_t s = (std::size_t)k * kPanel;
    const batch w0 = batch::load_unaligned(panel_a + s), w1 = batch::load_unaligned(panel_a + s + kLanes);
    const batch w2 = batch::load_unaligned(panel_b + s), w3 = batch::load_unaligned(panel_b + s + kLanes);
    for (int r = 0; r < ROWS; r++) {
      const batch xv = broadcast(x[r] + k);
      acc0[r] = simd::madd(xv, w0, acc0[r]);
      acc1[r] = simd::madd(xv, w1, acc1[r]);
      acc2[r] = simd::madd(xv, w2, acc2[r]);
      acc3[r] = simd::madd(xv, w3, acc3[r]);
    }
  }
  tile_store<ROWS>(acc0, acc1, out, out_stride, kPanel);
  tile_store<ROWS>(acc2, acc3, out + kPanel, out_stride, kPanel);
}

// xk (depth, ROWS) = A (ROWS, depth) transposed, A row-major with row stride a_stride
template <int ROWS>
inline void pack_rows_kmajor(float* xk, const float* a, int a_stride, int depth) noexcept {
  for (int r = 0; r < ROWS; r++) {
    const float* row = a + (std::size_t)r * a_stride;
    for (int k = 0; k < depth; k++) xk[k * ROWS + r] = row[k];
  }
}

// One input row against PANELS panels at once: the one-token update's products, which are
// matrix-vector products. packed_tile<1> has two accumulators, so each step of k waits out the latency
// of the step before, and reads its panel at about 9.5 GB/s in V8 on this machine (a stream summed
// through two chains); through eight chains the same read runs at about 20 GB/s, and two threads at
// 31 (bench/README.md, "Long texts in the page"). Each output is the same multiply-add chain as in
// packed_tile, so the same bits. Panel j's first step is at panel + j * panel_stride; the last panel
// stores its first n_valid columns (a matrix's last panel is zero-padded). Panels of float32, or of
// F16 in f16_pack's grouped layout, widened in registers: a lone row would widen each weight into
// memory for one use and read it back (F16 widening was half a typed token's time on SmolLM2's shape).
constexpr int kRowPanels = 4;
// Up to this many input rows (a typed word's tokens) take the row loops below on F16 weights, and the
// F16 LM head's rows are widened in registers one at a time (gemm.cpp, lm_head.cpp); more go through
// the tiles, the weights widened into memory once for all of them.
constexpr int kFewRows = 4;
inline void row_panel_step(const float* w, batch& lo, batch& hi) noexcept {
  lo = batch::load_unaligned(w);
  hi = batch::load_unaligned(w + kLanes);
}
// F16: the weights times 2^-112 (the input rows' broadcasts are scaled by 2^112 instead: the same
// products, simd_batch.hpp, f16_finite_pair_to_scaled_f32; the caller checks f16_scaled_input_fits)
inline void row_panel_step(const uint16_t* w, batch& lo, batch& hi) noexcept {
  // one int32 batch: values [0, kLanes) in the low halves, [kLanes, kPanel) in the high ones
  const simd::ibatch words = simd::ibatch::load_unaligned(reinterpret_cast<const int32_t*>(w));
  simd::f16_finite_pair_to_scaled_f32(words, lo, hi);  // weights: finite (the loader refuses the others)
}
// ROWS input rows (row strides out_stride and a_stride) against PANELS panels at once, each panel step
// loaded (and for F16 widened) once for all ROWS: the products of a typed word's few new tokens (a
// word and the space after it are two). With F16 panels the tiled path would widen every weight into
// memory for two or three uses and read it back, which was half a typed word's time on SmolLM2's shape
// in V8; here the weights are read once, as for one row. 2 x 2 keeps eight chains (the lone row's
// count) in V8's registers beside the two broadcasts and the widened pair. The same chains as
// packed_tile, so the same bits; on F16 panels only for rows that f16_scaled_input_fits.
template <int ROWS, int PANELS, class Weight>
inline void packed_rows_panels(float* out, int out_stride, const float* a, int a_stride, const Weight* panel,
                               std::size_t panel_stride, int depth, TileStart start, const float* bias,
                               int n_valid_last = kPanel) noexcept {
  batch acc0[PANELS][ROWS], acc1[PANELS][ROWS];
  const Weight* w[PANELS];
  const float* x[ROWS];
  for (int r = 0; r < ROWS; r++) x[r] = a + (std::size_t)r * a_stride;
  for (int j = 0; j < PANELS; j++) {
    const int n_valid = j == PANELS - 1 ? n_valid_last : kPanel;
    tile_start<ROWS>(acc0[j], acc1[j], out + j * kPanel, out_stride, start, bias ? bias + j * kPanel : nullptr,
                     n_valid);
    w[j] = panel + j * panel_stride;
  }
  for (int k = 0; k < depth; k++) {
    batch xv[ROWS];
    for (int r = 0; r < ROWS; r++) {
      xv[r] = broadcast(x[r] + k);
      if constexpr (std::is_same_v<Weight, uint16_t>) xv[r] = xv[r] * batch(simd::kF16Rebias);
    }
    for (int j = 0; j < PANELS; j++) {
      batch lo, hi;
      row_panel_step(w[j] + (std::size_t)k * kPanel, lo, hi);
      for (int r = 0; r < ROWS; r++) {
        acc0[j][r] = simd::madd(xv[r], lo, acc0[j][r]);
        acc1[j][r] = simd::madd(xv[r], hi, acc1[j][r]);
      }
    }
  }
  for (int j = 0; j < PANELS; j++)
    tile_store<ROWS>(acc0[j], acc1[j], out + j * kPanel, out_stride, j == PANELS - 1 ? n_valid_last : kPanel);
}

template <int PANELS, class Weight>
inline void packed_row_panels(float* out, const float* a, const Weight* panel, std::size_t panel_stride, int depth,
                              TileStart start, const float* bias, int n_valid_last = kPanel) noexcept {
  packed_rows_panels<1, PANELS>(out, 0, a, 0, panel, panel_stride, depth, start, bias, n_valid_last);
}

}  // namespace headscope::kernels::gemm
