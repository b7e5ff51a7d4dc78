// The matrix products, forward and backward, in xsimd (batch from simd_batch.hpp), on the one register
// tile of gemm_tile.hpp:
//   - packed weights (pack_linear): the inference GEMM, cache-blocked, F16 or float32 panels;
//   - the LM head's backward (matmul_transposed_backward; its forward is lm_head.cpp);
//   - the training products (gemm_rows): the Conv1D layer unpacked, its input and weight gradients.
// Each is written once over `batch`: a SIMD loop over whole batches, then a scalar tail. The scalar
// build (HEADSCOPE_SIMD=0) is scalar.cpp. Shapes use the legend in kernels.hpp; references in reference.hpp.
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD
#include "gemm_tile.hpp"
#include "parallel.hpp"

namespace headscope::kernels {

using gemm::kFewRows;
using gemm::kTileRows;
using gemm::TileStart;
using simd::accumulate;
using simd::batch;
using simd::kLanes;
using simd::kPanel;
using simd::madd;

// Cache blocking (bench/harness/gemm-tiles.mjs measures the choice). Depth is cut into slices of
// kDepthBlock, and the panels into groups of kGroupPanels whose slices (256 KB) stay in L2. Inside a
// group, each row tile of the input (kTileRows x kDepthBlock floats: 4 KB with SIMD128) stays in L1
// while the group's panel slices, each one contiguous run of kDepthBlock x kPanel floats, stream past
// it from L2. (The order before, a block of 128 input rows in L2 with one panel slice in L1, read the
// input from L2 once per panel through kTileRows strided streams, and ran 10-20% slower in V8.)
// F16 storage: a group's slices are widened into float32 once per depth slice, for all input rows.
constexpr int kDepthBlock = 256;
constexpr int kGroupPanels = std::max(1, 256 * 1024 / (kDepthBlock * kPanel * (int)sizeof(float)));

SimdInfo simd_info() { return {batch::arch_type::name(), kLanes, true, HEADSCOPE_RELAXED_SIMD != 0}; }

int linear_panel_width() { return kPanel; }
GemmBlocking gemm_blocking() { return {kTileRows, kDepthBlock, kGroupPanels}; }

// --- GEMM: the register tile is gemm::packed_tile (gemm_tile.hpp) -----------------------------------
using PackedTileFn = void (*)(float*, int, const float*, int, const float*, int, TileStart, const float*, int) noexcept;
template <std::size_t... R>
static constexpr std::array<PackedTileFn, sizeof...(R)> packed_tiles(std::index_sequence<R...>) {
  return {&gemm::packed_tile<(int)R + 1>...};
}
// kPackedTiles[r - 1] computes r rows: the full tile and every remainder height
static constexpr auto kPackedTiles = packed_tiles(std::make_index_sequence<kTileRows>{});

// One input row through panels [p_begin, p_end) of N columns: kRowPanels whole panels at a time
// (gemm_tile.hpp, packed_row_panels), then one at a time, the matrix's last perhaps partial. Panel p's
// first step is at first + (p - p_begin) * stride; bias (padded to whole panels) or null.
template <class Weight>
static void lone_row(float* out, const float* x, const Weight* first, std::size_t stride, int p_begin, int p_end, int N,
                     int depth, TileStart start, const float* bias) noexcept {
  const auto panel = [&](int p) { return first + (std::size_t)(p - p_begin) * stride; };
  const auto bias_of = [&](int p) { return bias ? bias + (std::size_t)p * kPanel : nullptr; };
  int p = p_begin;
  for (; p + gemm::kRowPanels <= p_end && (p + gemm::kRowPanels) * kPanel <= N; p += gemm::kRowPanels)
    gemm::packed_row_panels<gemm::kRowPanels>(out + (std::size_t)p * kPanel, x, panel(p), stride, depth, start,
                                              bias_of(p));
  for (; p < p_end; p++)
    gemm::packed_row_panels<1>(out + (std::size_t)p * kPanel, x, panel(p), stride, depth, start, bias_of(p),
                               std::min(kPanel, N - p * kPanel));
}

// A few input rows (2 to kFewRows) on F16 panels [p_begin, p_end), the whole depth in one pass: two
// panels at a time, the rows two at a time under each (gemm_tile.hpp, packed_rows_panels), so each
// panel is read from memory once and widened in registers once per pair of rows. Panel p's first step
// is at first + (p - p_begin) * stride; a matrix's partial last panel goes alone.
static void few_rows(float* out, const float* inp, int inp_stride, const uint16_t* first, std::size_t stride,
                     int p_begin, int p_end, int N, int T, int depth, TileStart start, const float* bias) noexcept {
  const auto panel = [&](int p) { return first + (std::size_t)(p - p_begin) * stride; };
  const auto bias_of = [&](int p) { return bias ? bias + (std::size_t)p * kPanel : nullptr; };
  const auto o = [&](int t, int p) { return out + (std::size_t)t * N + p * kPanel; };
  const auto x = [&](int t) { return inp + (std::size_t)t * inp_stride; };
  int p = p_begin;
  for (; p + 2 <= p_end && (p + 2) * kPanel <= N; p += 2) {
    int t = 0;
    for (; t + 2 <= T; t += 2)
      gemm::packed_rows_panels<2, 2>(o(t, p), N, x(t), inp_stride, panel(p), stride, depth, start, bias_of(p));
    if (t < T) gemm::packed_rows_panels<1, 2>(o(t, p), N, x(t), inp_stride, panel(p), stride, depth, start, bias_of(p));
  }
  for (; p < p_end; p++) {
    const int n_valid = std::min(kPanel, N - p * kPanel);
    int t = 0;
    for (; t + 2 <= T; t += 2)
      gemm::packed_rows_panels<2, 1>(o(t, p), N, x(t), inp_stride, panel(p), stride, depth, start, bias_of(p), n_valid);
    if (t < T)
      gemm::packed_rows_panels<1, 1>(o(t, p), N, x(t), inp_stride, panel(p), stride, depth, start, bias_of(p), n_valid);
  }
}

// out (T, N) = [bias +] inp[:, k_begin:k_end] @ W[k_begin:k_end, :]; inp has row stride inp_stride.
// Loop order: depth slice > panel group > row tile > panel (comments at kDepthBlock).
static void gemm_packed(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin, int k_end,
                        bool with_bias, int T) noexcept {
  const int N = W.N;
  const int panels = (N + kPanel - 1) / kPanel;
  const bool has_bias = with_bias && !W.bias.empty();
  if (k_begin == k_end) {  // an empty product: the bias, or zeros
    for (int t = 0; t < T; t++)
      for (int n = 0; n < N; n++) out[(std::size_t)t * N + n] = has_bias ? W.bias[n] : 0.0f;
    return;
  }
  // one row on F16 panels: widened in registers, the whole depth in one pass (a partial sum stored
  // between depth slices and reloaded is exact, so the bits are those of the sliced loop below)
  // and a few rows (a typed word's tokens) likewise, each panel read once for all of them; rows with
  // a value past 2^16 (which the registers' scaling would overflow) take the sliced loop: the same bits
  const bool rows_in_registers =
      T <= kFewRows && W.is_f16() && simd::f16_scaled_input_fits(inp + k_begin, T, k_end - k_begin, inp_stride);
  // threads take whole column panels (parallel.hpp): each output is computed as on one thread. Ranges
  // of kRowPanels panels, so that the one-row loop (and relaxed SIMD's 2-panel tiles) cover them whole.
  const auto panel_range = [&](int p_begin, int p_end) {
    if (rows_in_registers) {
      const uint16_t* first = W.panels_f16.data() + ((std::size_t)p_begin * W.K + k_begin) * kPanel;
      const TileStart start = has_bias ? TileStart::bias : TileStart::zero;
      const float* bias = has_bias ? W.bias.data() : nullptr;
      if (T == 1)
        return lone_row(out, inp + k_begin, first, (std::size_t)W.K * kPanel, p_begin, p_end, N, k_end - k_begin, start,
                        bias);
      return few_rows(out, inp + k_begin, inp_stride, first, (std::size_t)W.K * kPanel, p_begin, p_end, N, T,
                      k_end - k_begin, start, bias);
    }
    // F16: (group, depth, kPanel), one group's panel slices in float32, per thread
    static thread_local std::vector<float> widened;
    for (int k0 = k_begin; k0 < k_end; k0 += kDepthBlock) {
      const int depth = std::min(kDepthBlock, k_end - k0);
      const TileStart start = k0 > k_begin ? TileStart::out : has_bias ? TileStart::bias : TileStart::zero;
      for (int g0 = p_begin; g0 < p_end; g0 += kGroupPanels) {
        const int g1 = std::min(p_end, g0 + kGroupPanels);
        const std::size_t slice = (std::size_t)depth * kPanel;  // floats of one panel's depth slice
        // the slice of panel p starts at slices + (p - g0) * slice_stride
        const float* slices;
        std::size_t slice_stride;
        if (W.is_f16()) {
          widened.resize((std::size_t)kGroupPanels * kDepthBlock * kPanel);
          for (int p = g0; p < g1; p++)
            f16_unpack_weights(widened.data() + (std::size_t)(p - g0) * slice,
                               W.panels_f16.data() + ((std::size_t)p * W.K + k0) * kPanel, slice);
          slices = widened.data();
          slice_stride = slice;
        } else {
          slices = W.panels.data() + ((std::size_t)g0 * W.K + k0) * kPanel;
          slice_stride = (std::size_t)W.K * kPanel;
        }
        // full row tiles call the tile directly (inlined), the last partial one through the table
        const auto row_tile = [&](auto tile, int t) {
          const float* x = inp + (std::size_t)t * inp_stride + k0;
          for (int p = g0; p < g1; p++) {
            const int n0 = p * kPanel;
            tile(out + (std::size_t)t * N + n0, N, x, inp_stride, slices + (p - g0) * slice_stride, depth, start,
                 has_bias ? W.bias.data() + n0 : nullptr, std::min(kPanel, N - n0));
          }
        };
        int t = 0;
#if defined(__EMSCRIPTEN__) && !HEADSCOPE_RELAXED_SIMD
        // SIMD128: full row tiles packed k-major once per group, then one pointer feeds the broadcasts
        // (gemm_tile.hpp, packed_tile_kmajor: the same bits). bench/harness/gemm-tiles.mjs measured it
        // 1.02-1.11x the row pointers' tile in SIMD128 and 0.94-1.02x with relaxed SIMD, whose fused
        // multiply-add leaves the loop short of FP work instead (bench/README.md, "The GEMM at the ceiling").
        alignas(16) float xk[kTileRows * kDepthBlock];
        for (; t + kTileRows <= T; t += kTileRows) {
          gemm::pack_rows_kmajor<kTileRows>(xk, inp + (std::size_t)t * inp_stride + k0, inp_stride, depth);
          for (int p = g0; p < g1; p++) {
            const int n0 = p * kPanel;
            gemm::packed_tile_kmajor<kTileRows>(out + (std::size_t)t * N + n0, N, xk, slices + (p - g0) * slice_stride,
                                                depth, start, has_bias ? W.bias.data() + n0 : nullptr,
                                                std::min(kPanel, N - n0));
          }
        }
#elif defined(__EMSCRIPTEN__)
        // relaxed SIMD: tiles of 2 rows x 2 panels (gemm_tile.hpp, packed_tile_2panels: the same bits),
        // a panel left alone (an odd group, or the matrix's partial last) by 2 x 1
        for (; t + 2 <= T; t += 2) {
          const float* x = inp + (std::size_t)t * inp_stride + k0;
          int p = g0;
          for (; p + 2 <= g1 && (p + 2) * kPanel <= N; p += 2) {
            const int n0 = p * kPanel;
            gemm::packed_tile_2panels<2>(out + (std::size_t)t * N + n0, N, x, inp_stride,
                                         slices + (p - g0) * slice_stride, slices + (p + 1 - g0) * slice_stride, depth,
                                         start, has_bias ? W.bias.data() + n0 : nullptr);
          }
          for (; p < g1; p++) {
            const int n0 = p * kPanel;
            gemm::packed_tile<2>(out + (std::size_t)t * N + n0, N, x, inp_stride, slices + (p - g0) * slice_stride,
                                 depth, start, has_bias ? W.bias.data() + n0 : nullptr, std::min(kPanel, N - n0));
          }
        }
#else
        for (; t + kTileRows <= T; t += kTileRows) row_tile(gemm::packed_tile<kTileRows>, t);
#endif
        if (T - t == 1)  // a last single row (the one-token update's whole product)
          lone_row(out + (std::size_t)t * N, inp + (std::size_t)t * inp_stride + k0, slices, slice_stride, g0, g1, N,
                   depth, start, has_bias ? W.bias.data() : nullptr);
        else if (t < T)
          row_tile(kPackedTiles[T - t - 1], t);
      }
    }
  };
  parallel_for(panels, (double)T * (k_end - k_begin) * N, panel_range, gemm::kRowPanels);
}

PackedLinear pack_linear_f16(const float* weight, const float* bias, int K, int N) {
  PackedLinear W = pack_linear(weight, bias, K, N);
  // each panel row (kPanel values) is one F16 group
  W.panels_f16.resize(W.panels.size());
  f16_pack(W.panels_f16.data(), W.panels.data(), W.panels.size());
  std::vector<float>().swap(W.panels);
  return W;
}

void pack_linear_into(PackedLinear& W, const float* weight, const float* bias, int K, int N) {
  W.K = K;
  W.N = N;
  W.panel_width = kPanel;
  W.panels_f16.clear();
  const int panels = (N + kPanel - 1) / kPanel;
  W.panels.assign((std::size_t)panels * K * kPanel, 0.0f);
  for (int p = 0; p < panels; p++)
    for (int k = 0; k < K; k++)
      for (int c = 0; c < kPanel && p * kPanel + c < N; c++)
        W.panels[((std::size_t)p * K + k) * kPanel + c] = weight[(std::size_t)k * N + p * kPanel + c];
  if (bias) {
    // padded to whole panels so the tile can load a full batch pair from the last one
    W.bias.assign((std::size_t)panels * kPanel, 0.0f);
    std::copy(bias, bias + N, W.bias.begin());
  } else {
    W.bias.clear();
  }
}

void matmul_forward(float* out, const float* inp, const PackedLinear& W, int T) noexcept {
  if (W.is_q8()) return matmul_q8_forward(out, inp, W, T);
  gemm_packed(out, inp, W.K, W, 0, W.K, true, T);
}

void matmul_rows_forward(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin, int k_end,
                         int T) noexcept {
  if (W.is_q8()) return matmul_q8_rows_forward(out, inp, inp_stride, W, k_begin, k_end, T);
  gemm_packed(out, inp, inp_stride, W, k_begin, k_end, false, T);
}

// ---- the Conv1D layer's training products, on the model's register tile ---------------------------
// Each output tile lives in registers for its whole reduction and is written once: kTileRows rows x
// two batches of columns, for out and dinp (reduction over K, resp. OC) and for dweight (reduction
// over N, reading inp transposed through the tile's strides). dinp multiplies by the weight
// transposed into a scratch copy, so that its reduction, like the others, needs no horizontal sums.
// Column tails that fill no whole panel are summed in scalar code.

// y (N, M) = (Accumulate ? y : bias or 0) + x (N, D) @ w (D, M)
// The reduction runs in depth slices of w that stay in L2 (kSliceFloats) while every row tile passes
// over them: without slicing, each tile of rows streams all of w from memory, which for the tied LM
// head's input gradient (D = vocabulary) is the whole embedding once per 6 rows. A tile stores its
// partial sums between slices and reloads them, which is exact (gemm_tile.hpp), so slicing does not
// change a single result.
template <bool Accumulate>
void gemm_rows(float* y, const float* x, const float* w, const float* bias, int N, int D, int M) noexcept {
  constexpr int kSliceFloats = 96 * 1024;  // 384 KB of w per slice (L2 is 512 KB per core on this machine)
  const int slice = std::clamp(kSliceFloats / std::max(M, 1), 16, 512);
  for (int d0 = 0; d0 < D; d0 += slice) {
    const int depth = std::min(slice, D - d0);
    const bool from_out = Accumulate || d0 > 0;
    const float* b = d0 == 0 ? bias : nullptr;
    const TileStart start = from_out ? TileStart::out : b ? TileStart::bias : TileStart::zero;
    const auto rows = [&](auto r_tag, int t0, int j_begin, int j_end) {
      constexpr int R = decltype(r_tag)::value;
      int j = j_begin;
      for (; j + 2 * kLanes <= j_end; j += 2 * kLanes)
        gemm::tile<R>(y + (std::size_t)t0 * M + j, M, x + (std::size_t)t0 * D + d0, D, 1, w + (std::size_t)d0 * M + j,
                      M, depth, start, b ? b + j : nullptr, 2 * kLanes);
      for (; j < j_end; j++)
        for (int r = 0; r < R; r++) {
          const float* xr = x + (std::size_t)(t0 + r) * D;
          float* dst = y + (std::size_t)(t0 + r) * M + j;
          float acc = from_out ? *dst : b ? b[j] : 0.0f;
          for (int d = d0; d < d0 + depth; d++) acc += xr[d] * w[(std::size_t)d * M + j];
          *dst = acc;
        }
    };
    // threads take whole column panels (parallel.hpp); the columns after the last panel are one more unit
    const int panels = M / (2 * kLanes), units = panels + (M % (2 * kLanes) ? 1 : 0);
    parallel_for(units, (double)N * depth * M, [&](int u_begin, int u_end) {
      const int j_begin = u_begin * 2 * kLanes, j_end = std::min(M, u_end * 2 * kLanes);
      int t = 0;
      for (; t + kTileRows <= N; t += kTileRows) rows(std::integral_constant<int, kTileRows>{}, t, j_begin, j_end);
      for (; t < N; t++) rows(std::integral_constant<int, 1>{}, t, j_begin, j_end);
    });
  }
}

void matmul_unpacked_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int K,
                             int OC) noexcept {
  gemm_rows<false>(out, inp, weight, bias, N, K, OC);
}

static void weight_grad(float* g, const float* a, const float* b, int N, int K, int M) noexcept;

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int K, int OC) noexcept {
  // dinp (N, K) += dout (N, OC) @ weight^T (OC, K): the transpose costs K x OC moves against N x K x OC
  // multiply-adds. Scratch per thread, grown to the largest layer once.
  static thread_local std::vector<float> weight_t;
  weight_t.resize((std::size_t)K * OC);
  // in 32 x 32 blocks: a plain loop writes one cache line per element (14% of a head-gate backward of
  // GPT-2 small before blocking)
  constexpr int kBlock = 32;
  for (int k0 = 0; k0 < K; k0 += kBlock)
    for (int o0 = 0; o0 < OC; o0 += kBlock)
      for (int k = k0; k < std::min(K, k0 + kBlock); k++)
        for (int o = o0; o < std::min(OC, o0 + kBlock); o++)
          weight_t[(std::size_t)o * K + k] = weight[(std::size_t)k * OC + o];
  gemm_rows<true>(dinp, dout, weight_t.data(), nullptr, N, OC, K);
  // dweight (K, OC) += inp (N, K)^T @ dout (N, OC)
  if (dweight) weight_grad(dweight, inp, dout, N, K, OC);
  // dbias (OC) += column sums of dout
  if (dbias)
    for (int tt = 0; tt < N; tt++) accumulate(dbias, dout + (std::size_t)tt * OC, OC);
}

// g (K, M) += a (N, K)^T @ b (N, M): each tile of g is summed over N in registers and written once
static void weight_grad(float* g, const float* a, const float* b, int N, int K, int M) noexcept {
  // threads take whole column panels of g, each summing its tiles over all N rows (parallel.hpp)
  const int panels = M / (2 * kLanes), units = panels + (M % (2 * kLanes) ? 1 : 0);
  parallel_for(units, (double)N * K * M, [&](int u_begin, int u_end) {
    for (int o = u_begin * 2 * kLanes; o < std::min(u_end, panels) * 2 * kLanes; o += 2 * kLanes) {
      int k = 0;
      // rows k of g: A = a^T, element (k, t) at a[t * K + k]; B = b's rows, stride M
      for (; k + kTileRows <= K; k += kTileRows)
        gemm::tile<kTileRows>(g + (std::size_t)k * M + o, M, a + k, 1, K, b + o, M, N, TileStart::out, nullptr,
                              2 * kLanes);
      for (; k < K; k++)
        gemm::tile<1>(g + (std::size_t)k * M + o, M, a + k, 1, K, b + o, M, N, TileStart::out, nullptr, 2 * kLanes);
    }
    if (u_end > panels)
      for (int o = panels * 2 * kLanes; o < M; o++)
        for (int k = 0; k < K; k++) {
          float s = 0.0f;
          for (int tt = 0; tt < N; tt++) s += a[(std::size_t)tt * K + k] * b[(std::size_t)tt * M + o];
          g[(std::size_t)k * M + o] += s;
        }
  });
}

void matmul_transposed_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                                int N, int K, int OC) noexcept {
  // dinp (N, K) += dout (N, OC) @ weight (OC, K): the weight is already the product's right side
  gemm_rows<true>(dinp, dout, weight, nullptr, N, OC, K);
  // dweight (OC, K) += dout (N, OC)^T @ inp (N, K)
  if (dweight) weight_grad(dweight, dout, inp, N, OC, K);
}

void matmul_packed_backward(float* dinp, const float* dout, const PackedLinear& W, int N,
                            std::vector<float>& weight_t) noexcept {
  // the packed panels written straight into the transposed scratch matmul_backward fills from a Conv1D
  // weight, with the values unpack_linear gives (F16 widened exactly, 8-bit as q * s): the same product
  const int K = W.K, OC = W.N, pw = W.panel_width, panels = (OC + pw - 1) / pw;
  static thread_local std::vector<float> row;
  weight_t.resize((std::size_t)K * OC);
  row.resize(pw);
  for (int p = 0; p < panels; p++) {
    const int n0 = p * pw, width = std::min(pw, OC - n0);
    for (int k = 0; k < K; k++) {
      const std::size_t at = ((std::size_t)p * K + k) * pw;
      const float* src = row.data();
      if (W.is_q8())
        q8_dequantize_panel_row(row.data(), W, p, k);
      else if (W.is_f16())
        f16_unpack_forward(row.data(), &W.panels_f16[at], pw);
      else
        src = &W.panels[at];
      for (int j = 0; j < width; j++) weight_t[(std::size_t)(n0 + j) * K + k] = src[j];
    }
  }
  gemm_rows<true>(dinp, dout, weight_t.data(), nullptr, N, OC, K);
}

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
