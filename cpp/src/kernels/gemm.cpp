// xsimd kernels of the forward pass but attention (attention_simd.cpp). Each is written once over
// `batch` (simd_batch.hpp): a SIMD loop over whole batches, then a scalar tail.
// With HEADSCOPE_SIMD=0 every kernel forwards to its scalar reference (reference.hpp); that build is
// the "scalar" subject of the benchmarks. Shapes use the legend in kernels.hpp.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "kernels.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"
#if HEADSCOPE_SIMD
#include "gemm_tile.hpp"
#include "parallel.hpp"
#endif

namespace headscope::kernels {

#if HEADSCOPE_SIMD

using simd::batch;
using simd::kLanes;
using simd::kPanel;
using simd::madd;
using gemm::kTileRows;
using gemm::TileStart;
// Cache blocking (cpp/bench measures the choice). Depth is cut into slices of kDepthBlock: one panel's
// slice (kDepthBlock x kPanel floats: 8 KB with SIMD128, 32 KB with AVX-512) stays in L1 while every
// row tile of a block of kRowBlock input rows streams past it, and that input block
// (kRowBlock x kDepthBlock floats, 128 KB) stays in L2 while all panels stream past it. Without the
// blocking a long text re-reads its whole (T, K) input from memory once per panel.
constexpr int kDepthBlock = 256;
constexpr int kRowBlock = kTileRows * (128 / kTileRows);  // whole tiles: no remainder tile inside a long input

SimdInfo simd_info() { return {batch::arch_type::name(), kLanes, true, HEADSCOPE_RELAXED_SIMD != 0}; }

int linear_panel_width() { return kPanel; }
GemmBlocking gemm_blocking() { return {kTileRows, kDepthBlock, kRowBlock}; }

static float horizontal_max(const batch& b) {
  alignas(64) float lanes[kLanes];
  b.store_aligned(lanes);
  float m = lanes[0];
  for (int i = 1; i < kLanes; i++) m = std::max(m, lanes[i]);
  return m;
}

// --- F16 -> float32 ------------------------------------------------------------------------
// Widening by integer and float ops that SIMD128 has (no F16 instructions there, and the same code
// natively): the 15 bits below the sign, shifted up by 13, are the float32 with the same mantissa
// and an exponent 112 too small (subnormal F16 values land on subnormal float32 bit patterns), so one
// exact multiply by 2^112 rebiases them; exponent 31 (inf, NaN) is forced to 255; then the sign.
// Only the low 16 bits of each int32 lane are read.
using ibatch = xsimd::batch<int32_t>;
static inline batch f16_low_bits_to_f32(const ibatch& h) noexcept {
  const ibatch magnitude = (h & ibatch(0x7fff)) << 13;
  const ibatch rebiased = xsimd::bitwise_cast<ibatch>(xsimd::bitwise_cast<batch>(magnitude) * batch(0x1p112f));
  const ibatch special = xsimd::select((h & ibatch(0x7c00)) == ibatch(0x7c00), ibatch(0x7f800000), ibatch(0));
  return xsimd::bitwise_cast<batch>(rebiased | special | ((h & ibatch(0x8000)) << 16));
}

int f16_group_width() { return kPanel; }

// out (n) <- packed (n): each whole group of kPanel values is one int32 batch whose low halves are
// values [0, kLanes) and high halves values [kLanes, kPanel) (f16_pack's layout); the tail is plain.
void f16_unpack_forward(float* out, const uint16_t* packed, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + kPanel <= n; i += kPanel) {
    const ibatch words = ibatch::load_unaligned(reinterpret_cast<const int32_t*>(packed + i));
    f16_low_bits_to_f32(words).store_unaligned(out + i);
    f16_low_bits_to_f32(words >> 16).store_unaligned(out + i + kLanes);
  }
  for (; i < n; i++) out[i] = f16_to_f32_reference(packed[i]);
}

// --- GEMM: the register tile is gemm::tile (gemm_tile.hpp), shared with training -------------
using GemmTileFn = void (*)(float*, int, const float*, std::ptrdiff_t, std::ptrdiff_t, const float*, std::ptrdiff_t, int,
                            TileStart, const float*, int) noexcept;
template <std::size_t... R>
static constexpr std::array<GemmTileFn, sizeof...(R)> gemm_tiles(std::index_sequence<R...>) {
  return {&gemm::tile<(int)R + 1, true>...};
}
// kGemmTiles[r - 1] computes r rows: the full tile and every remainder height
static constexpr auto kGemmTiles = gemm_tiles(std::make_index_sequence<kTileRows>{});

// out (T, N) = [bias +] inp[:, k_begin:k_end] @ W[k_begin:k_end, :]; inp has row stride inp_stride.
// Loop order: depth slice > row block > panel > row tile (comments at kDepthBlock).
// F16 storage: the panel's depth slice (depth x kPanel) is widened into a float32 slice on the stack
// (8 KB with SIMD128, 32 KB with AVX-512) that the row tiles of the row block then read, so the
// register tiles are the float32 ones and the widening is paid once per kRowBlock input rows.
static void gemm_packed(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin,
                        int k_end, bool with_bias, int T) noexcept {
  const int N = W.N;
  const int panels = (N + kPanel - 1) / kPanel;
  const bool has_bias = with_bias && !W.bias.empty();
  if (k_begin == k_end) {  // an empty product: the bias, or zeros
    for (int t = 0; t < T; t++)
      for (int n = 0; n < N; n++) out[(std::size_t)t * N + n] = has_bias ? W.bias[n] : 0.0f;
    return;
  }
  // threads take whole column panels (parallel.hpp): each output is computed as on one thread
  parallel_for(panels, (double)T * (k_end - k_begin) * N, [&](int p_begin, int p_end) {
    alignas(64) float widened[kDepthBlock * kPanel];  // (depth, kPanel): one F16 panel slice in float32
    for (int k0 = k_begin; k0 < k_end; k0 += kDepthBlock) {
      const int depth = std::min(kDepthBlock, k_end - k0);
      const TileStart start = k0 > k_begin ? TileStart::out : has_bias ? TileStart::bias : TileStart::zero;
      for (int t0 = 0; t0 < T; t0 += kRowBlock) {
        const int t1 = std::min(T, t0 + kRowBlock);
        for (int p = p_begin; p < p_end; p++) {
          const float* panel_k0;
          if (W.is_f16()) {
            f16_unpack_forward(widened, W.panels_f16.data() + ((std::size_t)p * W.K + k0) * kPanel, (std::size_t)depth * kPanel);
            panel_k0 = widened;
          } else {
            panel_k0 = W.panels.data() + ((std::size_t)p * W.K + k0) * kPanel;
          }
          const int n0 = p * kPanel;
          const int n_valid = std::min(kPanel, N - n0);
          const float* bias = has_bias ? W.bias.data() + n0 : nullptr;
          for (int t = t0; t < t1; t += kTileRows) {
            const int rows = std::min(kTileRows, t1 - t);
            kGemmTiles[rows - 1](out + (std::size_t)t * N + n0, N, inp + (std::size_t)t * inp_stride + k0, inp_stride, 1,
                                 panel_k0, kPanel, depth, start, bias, n_valid);
          }
        }
      }
    }
  });
}

PackedLinear pack_linear_f16(const float* weight, const float* bias, int K, int N) {
  PackedLinear W = pack_linear(weight, bias, K, N);
  // each panel row (kPanel values) is one F16 group
  W.panels_f16.resize(W.panels.size());
  f16_pack(W.panels_f16.data(), W.panels.data(), W.panels.size());
  std::vector<float>().swap(W.panels);
  return W;
}

PackedLinear pack_linear(const float* weight, const float* bias, int K, int N) {
  PackedLinear W;
  pack_linear_into(W, weight, bias, K, N);
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
  gemm_packed(out, inp, W.K, W, 0, W.K, true, T);
}

void matmul_rows_forward(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin,
                         int k_end, int T) noexcept {
  gemm_packed(out, inp, inp_stride, W, k_begin, k_end, false, T);
}

// --- LM head: rows of the weight are contiguous, so each output is a dot product -------------
constexpr int kLmRowsAtOnce = 4;  // four weight rows share each load of the input

// o[0..4) = x (K) . w0..w3 (K each)
static inline void dot_rows4(float* o, const float* x, const float* w0, const float* w1, const float* w2,
                             const float* w3, int K) noexcept {
  batch a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
  int k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    const batch xv = batch::load_unaligned(x + k);
    a0 = madd(xv, batch::load_unaligned(w0 + k), a0);
    a1 = madd(xv, batch::load_unaligned(w1 + k), a1);
    a2 = madd(xv, batch::load_unaligned(w2 + k), a2);
    a3 = madd(xv, batch::load_unaligned(w3 + k), a3);
  }
  float s0 = xsimd::hadd(a0), s1 = xsimd::hadd(a1), s2 = xsimd::hadd(a2), s3 = xsimd::hadd(a3);
  for (; k < K; k++) {
    s0 += x[k] * w0[k];
    s1 += x[k] * w1[k];
    s2 += x[k] * w2[k];
    s3 += x[k] * w3[k];
  }
  o[0] = s0;
  o[1] = s1;
  o[2] = s2;
  o[3] = s3;
}

// Rows of the weight outer: each block of kLmRowsAtOnce rows is read from memory once and stays in
// cache for all T inputs. Inputs outer would stream the whole weight (the LM head: vocab x width,
// 10 MB for the default model) once per input row, which made a run with all logits (the loss, and
// every run of a head measurement) memory-bound. Each output is the same dot_rows4 or dot of the
// same operands as before, so the results are unchanged, bit for bit.
void matmul_transposed_forward(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept {
  // threads take groups of kLmRowsAtOnce weight rows; the tail rows after the last whole group go to
  // the last chunk, so every output is the same dot_rows4 or dot as on one thread
  const int groups = N / kLmRowsAtOnce;
  parallel_for(groups + (N % kLmRowsAtOnce ? 1 : 0), (double)T * K * N, [&](int g_begin, int g_end) {
    for (int g = g_begin; g < std::min(g_end, groups); g++) {
      const int n = g * kLmRowsAtOnce;
      const float* w0 = weight + (std::size_t)n * K;
      for (int t = 0; t < T; t++)
        dot_rows4(out + (std::size_t)t * N + n, inp + (std::size_t)t * K, w0, w0 + K, w0 + 2 * K, w0 + 3 * K, K);
    }
    if (g_end > groups)
      for (int n = groups * kLmRowsAtOnce; n < N; n++)
        for (int t = 0; t < T; t++) out[(std::size_t)t * N + n] = dot(inp + (std::size_t)t * K, weight + (std::size_t)n * K, K);
  });
}

std::size_t matmul_transposed_f16_scratch_floats(int K) { return (std::size_t)kLmRowsAtOnce * K; }

// The same outputs, each computed exactly as above; the loops are swapped (rows of the weight outer)
// so each F16 row is widened once per call, not once per input row.
void matmul_transposed_f16_forward(float* out, const float* inp, const uint16_t* weight, int T, int K, int N,
                                   float* scratch) noexcept {
  const int groups = N / kLmRowsAtOnce;
  parallel_for(groups + (N % kLmRowsAtOnce ? 1 : 0), (double)T * K * N, [&](int g_begin, int g_end) {
    // the caller's scratch serves the first chunk (the calling thread); other threads widen into their own
    static thread_local std::vector<float> own;
    float* rows = scratch;
    if (g_begin > 0) {
      own.resize(matmul_transposed_f16_scratch_floats(K));
      rows = own.data();
    }
    for (int g = g_begin; g < std::min(g_end, groups); g++) {
      const int n = g * kLmRowsAtOnce;
      for (int r = 0; r < kLmRowsAtOnce; r++)
        f16_unpack_forward(rows + (std::size_t)r * K, weight + (std::size_t)(n + r) * K, K);
      for (int t = 0; t < T; t++)
        dot_rows4(out + (std::size_t)t * N + n, inp + (std::size_t)t * K, rows, rows + K, rows + 2 * K, rows + 3 * K, K);
    }
    if (g_end > groups)
      for (int n = groups * kLmRowsAtOnce; n < N; n++) {
        f16_unpack_forward(rows, weight + (std::size_t)n * K, K);
        for (int t = 0; t < T; t++) out[(std::size_t)t * N + n] = dot(inp + (std::size_t)t * K, rows, K);
      }
  });
}

// --- element-wise and row-wise ops ------------------------------------------------------------
float dot(const float* a, const float* b, int N) noexcept {
  batch acc(0.0f);
  int i = 0;
  for (; i + kLanes <= N; i += kLanes) acc = madd(batch::load_unaligned(a + i), batch::load_unaligned(b + i), acc);
  float s = xsimd::hadd(acc);
  for (; i < N; i++) s += a[i] * b[i];
  return s;
}

void layernorm_forward(float* out, float* mean_out, float* rstd_out, const float* inp, const float* weight,
                       const float* bias, int T, int C, float eps) noexcept {
  for (int t = 0; t < T; t++) {
    const float* x = inp + (std::size_t)t * C;
    float* o = out + (std::size_t)t * C;
    // two passes (mean, then squared deviations) as in PyTorch: one-pass E[x^2]-E[x]^2 loses
    // precision when the residual stream has a large mean
    batch sum(0.0f);
    int i = 0;
    for (; i + kLanes <= C; i += kLanes) sum += batch::load_unaligned(x + i);
    float s = xsimd::hadd(sum);
    for (; i < C; i++) s += x[i];
    const float mean = s / C;
    const batch mean_b(mean);
    batch sq(0.0f);
    i = 0;
    for (; i + kLanes <= C; i += kLanes) {
      const batch d = batch::load_unaligned(x + i) - mean_b;
      sq = xsimd::fma(d, d, sq);
    }
    float v = xsimd::hadd(sq);
    for (; i < C; i++) v += (x[i] - mean) * (x[i] - mean);
    const float rstd = 1.0f / std::sqrt(v / C + eps);
    if (mean_out) mean_out[t] = mean;
    if (rstd_out) rstd_out[t] = rstd;
    const batch rstd_b(rstd);
    i = 0;
    for (; i + kLanes <= C; i += kLanes) {
      const batch n = (batch::load_unaligned(x + i) - mean_b) * rstd_b;
      xsimd::fma(n, batch::load_unaligned(weight + i), batch::load_unaligned(bias + i)).store_unaligned(o + i);
    }
    for (; i < C; i++) o[i] = (x[i] - mean) * rstd * weight[i] + bias[i];
  }
}

// Element-wise kernels whose SIMD formula differs from the scalar one (tanh, erf, exp) run the tail
// through the same SIMD code on a padded batch: each element's result then depends only on its value,
// not on where the array ends, so a model row gives the same bits whether it is computed alone
// (typing) or with others (a full run) -- with 16 lanes, n * n_inner is often not a multiple of 16.
template <class F>
static inline void map_batches(float* out, const float* inp, std::size_t N, F&& f) noexcept {
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes) f(batch::load_unaligned(inp + i)).store_unaligned(out + i);
  if (i < N) {
    alignas(64) float tmp[kLanes] = {};
    std::memcpy(tmp, inp + i, sizeof(float) * (N - i));
    f(batch::load_aligned(tmp)).store_aligned(tmp);
    std::memcpy(out + i, tmp, sizeof(float) * (N - i));
  }
}

void gelu_forward(float* out, const float* inp, std::size_t N) noexcept {
  const batch s_b(std::sqrt(2.0f / 3.14159265358979323846f)), c_b(0.044715f), half(0.5f), one(1.0f);
  map_batches(out, inp, N, [&](batch x) {
    const batch inner = s_b * xsimd::fma(c_b * x, x * x, x);
    return half * x * (one + xsimd::tanh(inner));
  });
}

void gelu_erf_forward(float* out, const float* inp, std::size_t N) noexcept {
  const batch inv_sqrt2(0.70710678118654752f), half(0.5f), one(1.0f);
  map_batches(out, inp, N, [&](batch x) { return half * x * (one + xsimd::erf(x * inv_sqrt2)); });
}

// exp(x) for x <= 0, the only inputs a max-subtracted softmax produces. xsimd::exp handles the whole
// range with a round-to-integer and range checks that cost more than the polynomial in SIMD128;
// this is Cephes' expf polynomial with 2^n built by integer ops (no float->int instruction):
// max relative error 3.2e-7 (about 5 ulp), measured against std::exp in tests/cpp/test_kernels.cpp.
// Inputs below -87.3 are clamped there, giving ~1e-38 instead of a denormal or 0 (the softmax's sum
// is >= 1, so the difference is below float resolution).
static inline batch exp_nonpositive(batch x) noexcept {
  x = xsimd::max(x, batch(-87.33654f));
  // t = x log2(e) + 1.5 * 2^23: the float add rounds x log2(e) to the nearest integer n, kept in t's low bits
  const batch magic(12582912.0f);
  const batch t = xsimd::fma(x, batch(1.44269504088896341f), magic);
  const batch n = t - magic;
  batch r = xsimd::fnma(n, batch(0.693359375f), x);  // r = x - n ln2, ln2 split in two for exactness
  r = xsimd::fnma(n, batch(-2.12194440e-4f), r);
  batch y(1.9875691500e-4f);
  y = xsimd::fma(y, r, batch(1.3981999507e-3f));
  y = xsimd::fma(y, r, batch(8.3334519073e-3f));
  y = xsimd::fma(y, r, batch(4.1665795894e-2f));
  y = xsimd::fma(y, r, batch(1.6666665459e-1f));
  y = xsimd::fma(y, r, batch(5.0000001201e-1f));
  y = xsimd::fma(y, r * r, r + batch(1.0f));  // e^r, |r| <= ln2 / 2
  // 2^n: n + 127 shifted into the exponent field
  const ibatch ni = xsimd::bitwise_cast<ibatch>(t) - xsimd::bitwise_cast<ibatch>(magic);
  const batch two_n = xsimd::bitwise_cast<batch>((ni + ibatch(127)) << 23);
  return y * two_n;
}

void exp_nonpositive_forward(float* out, const float* inp, std::size_t N) noexcept {
  map_batches(out, inp, N, [](batch x) { return exp_nonpositive(x); });
}

// out (N) = softmax(in (N)); out may equal in. Returns the row's max and the sum of exp(x - max),
// whose log is the log-sum-exp the cross-entropy needs.
static inline std::pair<float, float> softmax_row(float* out, const float* in, int N) noexcept {
  batch maxb(-std::numeric_limits<float>::infinity());
  int i = 0;
  for (; i + kLanes <= N; i += kLanes) maxb = xsimd::max(maxb, batch::load_unaligned(in + i));
  float maxv = horizontal_max(maxb);
  for (; i < N; i++) maxv = std::max(maxv, in[i]);
  const batch maxv_b(maxv);
  batch sumb(0.0f);
  i = 0;
  for (; i + kLanes <= N; i += kLanes) {
    const batch e = exp_nonpositive(batch::load_unaligned(in + i) - maxv_b);
    e.store_unaligned(out + i);
    sumb += e;
  }
  float sum = xsimd::hadd(sumb);
  for (; i < N; i++) {
    out[i] = std::exp(in[i] - maxv);
    sum += out[i];
  }
  const float inv = 1.0f / sum;
  const batch inv_b(inv);
  i = 0;
  for (; i + kLanes <= N; i += kLanes) (batch::load_unaligned(out + i) * inv_b).store_unaligned(out + i);
  for (; i < N; i++) out[i] *= inv;
  return {maxv, sum};
}

void softmax_forward(float* row, int N) noexcept { softmax_row(row, row, N); }

void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V) noexcept {
  for (int t = 0; t < N; t++) {
    const float* l = logits + (std::size_t)t * V;
    const auto [maxv, sum] = softmax_row(probs + (std::size_t)t * V, l, V);
    losses[t] = std::log(sum) + maxv - l[targets[t]];
  }
}

void add_forward(float* out, const float* a, const float* b, std::size_t N) noexcept {
  std::size_t i = 0;
  for (; i + kLanes <= N; i += kLanes) (batch::load_unaligned(a + i) + batch::load_unaligned(b + i)).store_unaligned(out + i);
  for (; i < N; i++) out[i] = a[i] + b[i];
}

#else  // HEADSCOPE_SIMD == 0: the scalar build forwards everything to the references

SimdInfo simd_info() { return {"scalar", 1, false}; }
int linear_panel_width() { return 0; }  // one panel spanning all columns: the Conv1D layout unchanged
GemmBlocking gemm_blocking() { return {1, 1, 1}; }

int f16_group_width() { return 1; }  // plain order
void f16_unpack_forward(float* out, const uint16_t* packed, std::size_t n) noexcept {
  f16_unpack_forward_reference(out, packed, n);
}
PackedLinear pack_linear(const float* weight, const float* bias, int K, int N) {
  PackedLinear W;
  pack_linear_into(W, weight, bias, K, N);
  return W;
}
void pack_linear_into(PackedLinear& W, const float* weight, const float* bias, int K, int N) {
  W.K = K;
  W.N = N;
  W.panel_width = N;
  W.panels_f16.clear();
  W.panels.assign(weight, weight + (std::size_t)K * N);
  if (bias) W.bias.assign(bias, bias + N);
  else W.bias.clear();
}
PackedLinear pack_linear_f16(const float* weight, const float* bias, int K, int N) {
  PackedLinear W;
  W.K = K;
  W.N = N;
  W.panel_width = N;
  W.panels_f16.resize((std::size_t)K * N);
  f16_pack(W.panels_f16.data(), weight, W.panels_f16.size());
  if (bias) W.bias.assign(bias, bias + N);
  return W;
}
// weight element (k, n) of either storage, in float32
static inline float weight_at(const PackedLinear& W, int k, int n) noexcept {
  const std::size_t i = (std::size_t)k * W.N + n;
  return W.is_f16() ? f16_to_f32_reference(W.panels_f16[i]) : W.panels[i];
}
// ref::matmul_forward's loops, reading either storage
void matmul_forward(float* out, const float* inp, const PackedLinear& W, int T) noexcept {
  if (!W.is_f16()) {
    ref::matmul_forward<float>(out, inp, W.panels.data(), W.bias.empty() ? nullptr : W.bias.data(), T, W.K, W.N);
    return;
  }
  for (int t = 0; t < T; t++)
    for (int n = 0; n < W.N; n++) {
      float acc = W.bias.empty() ? 0.0f : W.bias[n];
      for (int k = 0; k < W.K; k++) acc += inp[(std::size_t)t * W.K + k] * weight_at(W, k, n);
      out[(std::size_t)t * W.N + n] = acc;
    }
}
void matmul_rows_forward(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin,
                         int k_end, int T) noexcept {
  for (int t = 0; t < T; t++)
    for (int n = 0; n < W.N; n++) {
      float acc = 0.0f;
      for (int k = k_begin; k < k_end; k++) acc += inp[(std::size_t)t * inp_stride + k] * weight_at(W, k, n);
      out[(std::size_t)t * W.N + n] = acc;
    }
}
void matmul_transposed_forward(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept {
  ref::matmul_transposed_forward<float>(out, inp, weight, T, K, N);
}
std::size_t matmul_transposed_f16_scratch_floats(int K) { return (std::size_t)K; }
void matmul_transposed_f16_forward(float* out, const float* inp, const uint16_t* weight, int T, int K, int N,
                                   float* scratch) noexcept {
  for (int n = 0; n < N; n++) {
    f16_unpack_forward_reference(scratch, weight + (std::size_t)n * K, K);
    for (int t = 0; t < T; t++) out[(std::size_t)t * N + n] = ref::dot<float>(inp + (std::size_t)t * K, scratch, K);
  }
}
float dot(const float* a, const float* b, int N) noexcept { return ref::dot<float>(a, b, N); }
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int T, int C, float eps) noexcept {
  ref::layernorm_forward<float>(out, mean, rstd, inp, weight, bias, T, C, eps);
}
void gelu_forward(float* out, const float* inp, std::size_t N) noexcept { ref::gelu_forward<float>(out, inp, N); }
void gelu_erf_forward(float* out, const float* inp, std::size_t N) noexcept { ref::gelu_erf_forward<float>(out, inp, N); }
void softmax_forward(float* row, int N) noexcept { ref::softmax_forward<float>(row, N); }
void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V) noexcept {
  ref::crossentropy_forward<float>(losses, probs, logits, targets, N, V);
}
void add_forward(float* out, const float* a, const float* b, std::size_t N) noexcept { ref::add_forward<float>(out, a, b, N); }
void exp_nonpositive_forward(float* out, const float* inp, std::size_t N) noexcept {
  ref::exp_nonpositive_forward<float>(out, inp, N);
}

#endif

}  // namespace headscope::kernels
