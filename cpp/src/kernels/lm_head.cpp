// The LM head's forward in xsimd (batch from simd_batch.hpp): out (T, V) = x (T, C) @ W^T with the
// weight's rows contiguous (the tied embedding or an untied head), each output a dot product; in
// float32 or F16 rows (widened in registers for a typed token or word's few rows). Also `dot`. The
// backward is gemm.cpp's (matmul_transposed_backward, on the training products); the scalar build
// (HEADSCOPE_SIMD=0) is scalar.cpp. Shapes use the legend in kernels.hpp; references in reference.hpp.
#include <algorithm>
#include <vector>

#include "kernels.hpp"
#include "reference.hpp"
#include "simd_batch.hpp"

#if HEADSCOPE_SIMD
#include "gemm_tile.hpp"
#include "parallel.hpp"

namespace headscope::kernels {

using gemm::kFewRows;
using simd::batch;
using simd::kLanes;
using simd::kPanel;
using simd::madd;

// --- LM head: rows of the weight are contiguous, so each output is a dot product -------------
// Eight weight rows share each load of the input, and their eight accumulators are eight independent
// multiply-add chains: the one-token update's LM head is a matrix-vector product over the whole
// vocabulary, and with four chains it waited on the multiply-add's latency (gemm_tile.hpp,
// packed_row_panels). Each output is the same chain over k whatever the count, so the same bits.
constexpr int kLmRowsAtOnce = 8;

// o[r] = x (K) . w[r * K ...] (K each), for r < kLmRowsAtOnce
static inline void dot_rows(float* o, const float* x, const float* w, int K) noexcept {
  batch a[kLmRowsAtOnce];
  for (int r = 0; r < kLmRowsAtOnce; r++) a[r] = batch(0.0f);
  int k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    const batch xv = batch::load_unaligned(x + k);
    for (int r = 0; r < kLmRowsAtOnce; r++) a[r] = madd(xv, batch::load_unaligned(w + (std::size_t)r * K + k), a[r]);
  }
  for (int r = 0; r < kLmRowsAtOnce; r++) {
    float s = xsimd::hadd(a[r]);
    for (int kk = k; kk < K; kk++) s += x[kk] * w[(std::size_t)r * K + kk];
    o[r] = s;
  }
}

// Rows of the weight outer: each block of kLmRowsAtOnce rows is read from memory once and stays in
// cache for all T inputs. Inputs outer would stream the whole weight (the LM head: vocab x width,
// 10 MB for the default model) once per input row, which made a run with all logits (the loss, and
// every run of a head measurement) memory-bound. Each output is the same dot_rows or dot of the
// same operands as before, so the results are unchanged, bit for bit.
void matmul_transposed_forward(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept {
  // threads take groups of kLmRowsAtOnce weight rows; the tail rows after the last whole group go to
  // the last chunk, so every output is the same dot_rows or dot as on one thread
  const int groups = N / kLmRowsAtOnce;
  parallel_for(groups + (N % kLmRowsAtOnce ? 1 : 0), (double)T * K * N, [&](int g_begin, int g_end) {
    for (int g = g_begin; g < std::min(g_end, groups); g++) {
      const int n = g * kLmRowsAtOnce;
      const float* w0 = weight + (std::size_t)n * K;
      for (int t = 0; t < T; t++) dot_rows(out + (std::size_t)t * N + n, inp + (std::size_t)t * K, w0, K);
    }
    if (g_end > groups)
      for (int n = groups * kLmRowsAtOnce; n < N; n++)
        for (int t = 0; t < T; t++)
          out[(std::size_t)t * N + n] = dot(inp + (std::size_t)t * K, weight + (std::size_t)n * K, K);
  });
}

std::size_t matmul_transposed_f16_scratch_floats(int K) { return (std::size_t)kLmRowsAtOnce * K; }

// One input row against kLmRowsAtOnce F16 rows, widened in registers (a typed token's LM head): the
// same multiply-add chain for each output as widening the rows first and then dot_rows (whole groups
// of kPanel values are the batches k and k + kLanes, in that order; the tail after the last whole
// group is widened on the stack and finishes as dot_rows does), so the same bits without writing
// and reading back the widened rows. All eight rows at once, as dot_rows: each row is a short stream
// (a 576-wide row is 18 cache lines), so what bounds the loop is how many are in flight, not the
// widening. Eight accumulators, the two input batches and the widening's temporaries still fit V8's
// 15 vector registers. On Llama 3's 128,256-row head, four rows at a time (the previous version,
// cpp/bench/dev) took 1.5x as long in V8 on one thread (bench/harness/variants.mjs times both).
// x is the input row times 2^112 and each weight is widened to itself times 2^-112 (simd_batch.hpp,
// f16_finite_pair_to_scaled_f32): the same products without the widening's multiplies.
static inline void dot_rows_f16(float* o, const float* x, const uint16_t* w, int K) noexcept {
  constexpr int R = 8;
  static_assert(kLmRowsAtOnce % R == 0);
  const int whole = K - K % kPanel;
  for (int r0 = 0; r0 < kLmRowsAtOnce; r0 += R) {
    batch a[R];
    for (int r = 0; r < R; r++) a[r] = batch(0.0f);
    for (int k = 0; k < whole; k += kPanel) {
      const batch lo_x = batch::load_unaligned(x + k), hi_x = batch::load_unaligned(x + k + kLanes);
      for (int r = 0; r < R; r++) {
        const simd::ibatch words =
            simd::ibatch::load_unaligned(reinterpret_cast<const int32_t*>(w + (std::size_t)(r0 + r) * K + k));
        batch lo, hi;
        simd::f16_finite_pair_to_scaled_f32(words, lo, hi);  // weights: finite (the loader refuses the others)
        a[r] = madd(lo_x, lo, a[r]);
        a[r] = madd(hi_x, hi, a[r]);
      }
    }
    for (int r = 0; r < R; r++) {
      alignas(64) float tail[kPanel];
      const uint16_t* wr = w + (std::size_t)(r0 + r) * K;
      for (int k = whole; k < K; k++) tail[k - whole] = f16_to_f32_reference(wr[k]) * (1.0f / simd::kF16Rebias);
      int k = whole;
      for (; k + kLanes <= K; k += kLanes)
        a[r] = madd(batch::load_unaligned(x + k), batch::load_aligned(tail + (k - whole)), a[r]);
      float s = xsimd::hadd(a[r]);
      for (int kk = k; kk < K; kk++) s += x[kk] * tail[kk - whole];
      o[r0 + r] = s;
    }
  }
}

// The same outputs, each computed exactly as above; the loops are swapped (rows of the weight outer)
// so each F16 row is widened once per call, not once per input row.
void matmul_transposed_f16_forward(float* out, const float* inp, const uint16_t* weight, int T, int K, int N,
                                   float* scratch) noexcept {
  const int groups = N / kLmRowsAtOnce;
  // a typed token or word: its rows times 2^112 for dot_rows_f16, unless a value is past 2^16 (which
  // that would overflow): then the rows are widened into memory, as for more rows (the same bits)
  static thread_local std::vector<float> scaled;
  const bool in_registers = T <= kFewRows && simd::f16_scaled_input_fits(inp, T, K, (std::size_t)K);
  if (in_registers) {
    scaled.resize((std::size_t)T * K);
    for (std::size_t i = 0; i < scaled.size(); i++) scaled[i] = inp[i] * simd::kF16Rebias;
  }
  const float* x_scaled = scaled.data();
  parallel_for(groups + (N % kLmRowsAtOnce ? 1 : 0), (double)T * K * N, [&](int g_begin, int g_end) {
    // the caller's scratch serves the range that starts at 0 (one thread at a time, whichever runs it);
    // every other range widens into its thread's own
    static thread_local std::vector<float> own;
    float* rows = scratch;
    if (g_begin > 0) {
      own.resize(matmul_transposed_f16_scratch_floats(K));
      rows = own.data();
    }
    for (int g = g_begin; g < std::min(g_end, groups); g++) {
      const int n = g * kLmRowsAtOnce;
      if (in_registers) {  // a typed token or word: widened in registers, once per input row
        for (int t = 0; t < T; t++)
          dot_rows_f16(out + (std::size_t)t * N + n, x_scaled + (std::size_t)t * K, weight + (std::size_t)n * K, K);
        continue;
      }
      for (int r = 0; r < kLmRowsAtOnce; r++)
        f16_unpack_weights(rows + (std::size_t)r * K, weight + (std::size_t)(n + r) * K, K);
      for (int t = 0; t < T; t++) dot_rows(out + (std::size_t)t * N + n, inp + (std::size_t)t * K, rows, K);
    }
    if (g_end > groups)
      for (int n = groups * kLmRowsAtOnce; n < N; n++) {
        f16_unpack_weights(rows, weight + (std::size_t)n * K, K);
        for (int t = 0; t < T; t++) out[(std::size_t)t * N + n] = dot(inp + (std::size_t)t * K, rows, K);
      }
  });
}

// --- dot product: the LM head's tail rows, attention's scores in head_inside, RMSNorm's sum of squares
float dot(const float* a, const float* b, int N) noexcept {
  batch acc(0.0f);
  int i = 0;
  for (; i + kLanes <= N; i += kLanes) acc = madd(batch::load_unaligned(a + i), batch::load_unaligned(b + i), acc);
  float s = xsimd::hadd(acc);
  for (; i < N; i++) s += a[i] * b[i];
  return s;
}

}  // namespace headscope::kernels

#endif  // HEADSCOPE_SIMD (scalar.cpp holds the build without SIMD)
