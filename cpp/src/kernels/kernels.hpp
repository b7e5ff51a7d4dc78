// The kernel library: every numerical kernel of the model and of training, private to the engine
// (the headscope_kernels target; the core links it privately, tests and benches include it by this
// path). Each op is an xsimd kernel written once over xsimd::batch<float>, its forward and backward in
// one file: gemm.cpp, attention.cpp, norm.cpp (LayerNorm, RMSNorm), activation.cpp (GELU, SwiGLU),
// rope.cpp, softmax_loss.cpp, residual.cpp (and the embeddings' backward), optimizer.cpp, f16.cpp.
// Each has one scalar reference, ref::<op>_forward<F> / ref::<op>_backward<F> in reference.hpp,
// which the build with HEADSCOPE_SIMD=OFF runs instead (scalar.cpp). tests/cpp/kernels/ checks one
// against the other over edge sizes, and the references against finite differences.
//
// Naming and argument order follow llm.c: outputs first, then inputs, then sizes. Backward kernels
// accumulate (+=) into their gradient outputs.
// Legend for the shapes in comments:
//   T  tokens (rows),  C  n_embd,  NH  heads,  HS  head size = C / NH,
//   K  inner dimension of a matrix product,  N  its output columns,  V  vocabulary,
//   B  sequences in a training batch,  OC  output columns of a training layer.
// All matrices are row-major float32. Kernels never allocate and never throw.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace headscope::kernels {

// ---------------------------------------------------------------------------------------------
// Which implementation the public kernels use in this build.
struct SimdInfo {
  std::string arch;  // xsimd architecture name ("sse4.1" in the wasm build: Emscripten maps it to SIMD128)
  int float_lanes;   // floats per xsimd batch; 1 when built with HEADSCOPE_SIMD=OFF
  bool simd;         // false when every kernel forwards to its scalar reference
  // wasm built with relaxed SIMD (HEADSCOPE_RELAXED_SIMD): GEMM, attention and dot products multiply
  // and add with f32x4.relaxed_madd (fused where the CPU has FMA, as in V8 on x86-64)
  bool relaxed_madd = false;
};
SimdInfo simd_info();

// ---------------------------------------------------------------------------------------------
// Half-precision (IEEE 754 binary16, "F16") weight storage. Large weight matrices may be kept as F16
// bits and widened to float32 inside the kernels, right before the float32 inner loops read them:
// every product then equals the float32 kernel's on the F16-rounded weights, bit for bit.
// F16 arrays are stored in groups of f16_group_width() values (two batches): in a whole group, the
// 32-bit word j holds value j in its low half and value j + group/2 in its high half, so one integer
// batch load yields both float batches with shifts and masks (SIMD128 has no F16 instructions).
// A trailing partial group is stored in plain order. The scalar build's group width is 1 (plain).
//   f32_to_f16_reference: round to nearest even, overflow to +-inf, NaN stays NaN (quiet)
//   f16_to_f32_reference: exact widening (subnormals, inf, NaN payload kept)
uint16_t f32_to_f16_reference(float x) noexcept;
float f16_to_f32_reference(uint16_t h) noexcept;
int f16_group_width();
// out (n) = the F16 bits of in (n), rounded, in the group layout above
void f16_pack(uint16_t* out, const float* in, std::size_t n) noexcept;
// out (n) = the float32 values of packed (n) in the group layout; exact
void f16_unpack_forward(float* out, const uint16_t* packed, std::size_t n) noexcept;
void f16_unpack_forward_reference(float* out, const uint16_t* packed, std::size_t n) noexcept;
// The same for finite values only: the model's weights (the loader refuses NaN and infinities and
// rounds into F16's finite range). Fewer operations (simd_batch.hpp's f16_finite_pair_to_f32); an
// infinity or a NaN comes out as some finite value.
void f16_unpack_weights(float* out, const uint16_t* packed, std::size_t n) noexcept;

// ---------------------------------------------------------------------------------------------
// Linear layers. Weights arrive in Hugging Face's Conv1D layout W (K, N): y = x @ W + b.
// At load time they are repacked into column panels so the GEMM micro-kernel streams them:
// panel p holds columns [p*panel_width, (p+1)*panel_width) as a (K, panel_width) row-major block,
// the last panel zero-padded. panel_width is two xsimd batches (8 floats with SIMD128).
// With F16 storage the same panels are held in panels_f16 instead (each panel row is one F16 group)
// and `panels` is empty; the GEMM widens one depth slice of one panel at a time.
// With 8-bit storage (pack_linear_q8, below) the layer is held in panels_q8 and its scales instead.
struct PackedLinear {
  int K = 0, N = 0;
  int panel_width = 1;
  std::vector<float> panels;         // ceil(N / panel_width) * K * panel_width (float32 storage)
  std::vector<uint16_t> panels_f16;  // the same count of F16 values (F16 storage), else empty
  std::vector<float> bias;           // N, or empty when the layer has no bias (always float32)
  // 8-bit storage: ceil(N / panel_width) panels of (ceil(K / q8_group), panel_width, q8_group) int8,
  // weight (k, n) at ((p * groups + k / G) * panel_width + n % panel_width) * G + k % G for p = n /
  // panel_width, zero past K and N; per column its scale and 64 * the sum of its int8 weights
  // (both padded to whole panels). Else all empty.
  std::vector<int8_t> panels_q8;
  std::vector<float> q8_scales;
  std::vector<int32_t> q8_zero_sums;
  int q8_group = 0;
  bool is_f16() const { return !panels_f16.empty(); }
  bool is_q8() const { return !panels_q8.empty(); }
  std::size_t bytes() const {
    return panels.size() * sizeof(float) + panels_f16.size() * sizeof(uint16_t) + bias.size() * sizeof(float) +
           panels_q8.size() + q8_scales.size() * sizeof(float) + q8_zero_sums.size() * sizeof(int32_t);
  }
};
// weight (K, N) Conv1D layout, bias (N) or nullptr, packed into W, reusing its storage (the trainer
// repacks its weights at every step).
void pack_linear_into(PackedLinear& W, const float* weight, const float* bias, int K, int N);
// The same into a new PackedLinear.
inline PackedLinear pack_linear(const float* weight, const float* bias, int K, int N) {
  PackedLinear W;
  pack_linear_into(W, weight, bias, K, N);
  return W;
}
// The same with the weight rounded to F16 (nearest even); an F16 checkpoint's values pass unchanged.
PackedLinear pack_linear_f16(const float* weight, const float* bias, int K, int N);
int linear_panel_width();
// weight (K, N) Conv1D layout and bias (N) or null <- W, in float32 (F16 storage widened exactly):
// the inverse of pack_linear, for a Trainer that starts from a loaded Model
void unpack_linear(float* weight, float* bias, const PackedLinear& W);
// How matmul_forward cuts the work (tests sweep its edges): register tiles of tile_rows
// input rows x panel_width columns; depth (K) in slices of depth_block, the weight's panels in groups
// of panel_group. All 1 in the scalar build (the plain triple loop).
struct GemmBlocking {
  int tile_rows, depth_block, panel_group;
};
GemmBlocking gemm_blocking();

// out (T, N) = inp (T, K) @ W (K, N) + bias (N); with 8-bit storage the product defined below
// (q8.cpp), the inputs quantized per row
void matmul_forward(float* out, const float* inp, const PackedLinear& W, int T) noexcept;
// out (T, N) = inp[:, k_begin:k_end] @ W[k_begin:k_end, :], no bias; inp has row stride inp_stride.
// One head's contribution through W_O is this with the head's column range of the concatenation.
// With 8-bit storage: in float32 on the layer's weights dequantized (q * s), inputs unquantized (a
// head's slice of a row is not the row the forward pass quantized).
void matmul_rows_forward(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin, int k_end,
                         int T) noexcept;

// ---------------------------------------------------------------------------------------------
// 8-bit weights (q8.cpp; WeightStorage::q8). Defined here; ref::matmul_q8_forward is the same in F.
//   Weights, per output column n, symmetric: m = max_k |w[k][n]|, s_n = m / 127 and
//     q[k][n] = round(w[k][n] * (127 / m)) in [-127, 127] (float32 ops, nearest even); an all-zero
//     column has s_n = 0 and q = 0. The weights must be finite (the loader refuses others, by name).
//   Inputs, per row (token), dynamically, to 7 bits: m = max_k |x_k|, s_x = m / 63 and
//     code_k = 64 + round(x_k * (63 / m)) in [1, 127]: 64 is zero, and a code never sets the top bit,
//     which makes relaxed SIMD's 8-bit dot product give the same result on every CPU. A zero row has
//     s_x = 0 (every code 64); a row holding an infinity or NaN has s_x = NaN (its outputs are NaN).
//   out[t][n] = ((float)(sum_k q[k][n] * (code_k - 64)) * s_n) * s_x[t] + bias[n]: the sum in int32,
//     exact (|sum| <= K * 127 * 63, so K up to 268,000), then three float32 roundings.
// A row's outputs depend on that row alone, computed together or one by one, on any thread count.
int q8_group();  // k values per group of the packed layout: 4, or 2 for SIMD128 without relaxed SIMD
// Requires finite weights (see above). Bias as pack_linear's.
PackedLinear pack_linear_q8(const float* weight, const float* bias, int K, int N);
// q (K, N) row-major and scales (N) of an 8-bit layer: the integers and scales it holds
void unpack_linear_q8(int8_t* q, float* scales, const PackedLinear& W);
// codes (T, q8_code_stride(K)) and scales (T) of the rows of x (T rows of K, row stride x_stride), as
// defined above; the codes past K (padding to whole groups) are 64
// Row k of an 8-bit layer's panel p as float32, q * s, its columns that exist (min(panel width, N - p *
// panel width) of them): the one reader of the packed layout for the float32 paths (one head's rows
// through W_O, the input gradient through a borrowed layer).
void q8_dequantize_panel_row(float* dst, const PackedLinear& W, int p, int k) noexcept;
int q8_code_stride(int K);
void q8_quantize_rows(uint8_t* codes, float* scales, const float* x, std::size_t x_stride, int T, int K) noexcept;
// matmul_forward's and matmul_rows_forward's 8-bit halves (both builds' matmul_forward call them)
void matmul_q8_forward(float* out, const float* inp, const PackedLinear& W, int T) noexcept;
void matmul_q8_rows_forward(float* out, const float* inp, int inp_stride, const PackedLinear& W, int k_begin, int k_end,
                            int T) noexcept;

// out (T, N) = inp (T, K) @ weight^T with weight (N, K) row-major (nn.Linear layout).
// The tied LM head: logits = x @ wte^T with wte (V, C).
void matmul_transposed_forward(float* out, const float* inp, const float* weight, int T, int K, int N) noexcept;
// The same with weight (N, K) held as F16, each row of K values packed by f16_pack on its own.
// scratch: matmul_transposed_f16_scratch_floats(K) floats owned by the caller (rows widened to float32).
// Equals matmul_transposed_forward on the widened weight, bit for bit.
std::size_t matmul_transposed_f16_scratch_floats(int K);
void matmul_transposed_f16_forward(float* out, const float* inp, const uint16_t* weight, int T, int K, int N,
                                   float* scratch) noexcept;

// ---------------------------------------------------------------------------------------------
// out (T, C) = (inp - mean) / sqrt(var + eps) * weight + bias, per row; biased variance as in PyTorch.
// mean (T) and rstd (T) = 1 / sqrt(var + eps) are written when not null (training keeps them).
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int T, int C, float eps) noexcept;

// out (N) = gelu_new(inp): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). out may equal inp.
void gelu_forward(float* out, const float* inp, std::size_t N) noexcept;
// out (N) = 0.5 x (1 + erf(x / sqrt 2)), for checkpoints whose activation_function is "gelu".
void gelu_erf_forward(float* out, const float* inp, std::size_t N) noexcept;

// out (N) = exp(inp) for inp <= 0 (the softmax's max-subtracted scores): a polynomial in the SIMD build,
// max relative error 3.2e-7; inputs below -87.3 give ~1e-38 instead of a denormal. out may equal inp.
void exp_nonpositive_forward(float* out, const float* inp, std::size_t N) noexcept;

// row (N) <- softmax(row), in place, max-subtracted.
void softmax_forward(float* row, int N) noexcept;

// probs (N, V) = softmax(logits) per row; losses (N) = -log probs[t][targets[t]], computed as
// log-sum-exp (exact where the probability itself would underflow). Training's loss.
void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V) noexcept;

// out (N) = a (N) + b (N). out may alias a or b.
void add_forward(float* out, const float* a, const float* b, std::size_t N) noexcept;

// sum_i a[i] * b[i]
float dot(const float* a, const float* b, int N) noexcept;

// ---------------------------------------------------------------------------------------------
// Causal self-attention for query rows [t_begin, T), keys and values of rows [0, T), with NH query
// heads over KV key/value heads (grouped-query attention: query head h reads key/value head
// g = h / (NH / KV); KV = NH is multi-head attention, KV = 1 multi-query).
//   qkv (T, (NH + 2 KV) HS): row t is [q_t (NH heads) | k_t (KV heads) | v_t (KV heads)], each head
//     HS wide. GPT-2's (T, 3C) is the case KV = NH, HS = C / NH.
//   att (NH, att_stride, att_stride): att[h][t][j] = softmax_j(q_t^h . k_j^g / sqrt(HS)) for j <= t,
//                                    and exactly 0 for t < j < att_stride (the causal mask)
//   out (T, NH HS): row t is the concatenation over query heads of sum_j att[h][t][j] v_j^g
// Rows below t_begin of att and out are left untouched: that is the incremental update's cache.
//   key_panels: attention_key_panels_floats(att_stride, shape) floats owned by the caller (so the
//     kernel never allocates): the keys and values again, per key/value head, in the layout the SIMD
//     kernel's register tiles read. Like att and out it is a cache: this call appends rows [t_begin,
//     T), and rows [0, t_begin) must be there from earlier calls on the same qkv (a call with t_begin
//     = 0 fills it). Unused by the scalar build. Its contents before the first call do not matter.
// Requires T <= att_stride. Rows computed one call at a time equal rows computed together, bit for bit.
struct AttentionShape {
  int NH, KV, HS;
  static AttentionShape mha(int C, int NH) { return {NH, NH, C / NH}; }  // GPT-2's
  std::size_t qkv_row() const { return (std::size_t)(NH + 2 * KV) * HS; }
  std::size_t out_row() const { return (std::size_t)NH * HS; }
};
int attention_key_panel_width();  // keys per panel; 1 in the scalar build
std::size_t attention_key_panels_floats(int att_stride, const AttentionShape& shape);
inline std::size_t attention_key_panels_floats(int att_stride, int C, int NH) {
  return attention_key_panels_floats(att_stride, AttentionShape::mha(C, NH));
}
//   scores: null, or (att_stride, att_stride) floats receiving query head scores_head's scaled scores
//     q_t . k_j / sqrt(HS) for j <= t, rows [t_begin, T), exactly as the kernel computed them before
//     its softmax (what the "Inside this head" view shows; the rest of each row is left untouched)
//   att_block: 0, or attention_block_rows(): att then holds only each head's rows of the block being
//     computed, (NH, att_block, att_stride), and no map is kept (out, key_panels and scores as above;
//     the rows are the same, bit for bit, so attention_rows() recomputes any of them later). Memory
//     then grows with T, not T².
// Thumbnails attention_forward fills while it computes rows (a view's overview of every head without
// any map kept): query head h's cell (t >> shift, j >> shift) is cells[(h * n + (t >> shift)) * n +
// (j >> shift)], and each row t computed raises the cells it covers to the largest weight in them.
// With a tail, each row t in [tail_begin, tail_begin + tail_rows) is also pooled alone into its own n
// cells, tail[(h * tail_rows + t - tail_begin) * n + (j >> shift)] (zero first): the rows of a last
// cell row, kept so that a later run that computes some of them again can put back the others exactly.
struct AttentionPool {
  float* cells = nullptr;  // (NH, n, n), or null: no pooling
  int shift = 0;           // cells of 2^shift x 2^shift weights
  int n = 0;               // cells per side of a head's thumbnail
  float* tail = nullptr;   // (NH, tail_rows, n), or null
  int tail_begin = 0;
  int tail_rows = 0;
};
// Per-row statistics of each head's attention that the views show as role scores (the page's
// web/lib/analysis.js defines them), which attention_forward writes while it computes each row t >= 1,
// into out[(h * stride + t) * kRowStats + i]:
//   0 previous: a[t-1]; 1 first: a[0]; 2 self: a[t];
//   3 duplicate: the sum of a[j] over the earlier copies j of token t (NaN without one);
//   4 induction: a[before[t] + 1], the token after the last earlier copy (NaN without one, or when that is t);
//   5 broad: the row's entropy / log(t + 1), at most 1.
// Row 0 is all NaN (no row counts). before[t] is the last earlier copy (-1: none), first[t] the first
// occurrence of token t, next[j] the next one after j (the chain first[t], next[...] < t lists the copies).
inline constexpr int kRowStats = 6;
struct AttentionRowStats {
  float* out = nullptr;  // (NH, stride, kRowStats), or null
  int stride = 0;
  const int32_t* before = nullptr;
  const int32_t* first = nullptr;
  const int32_t* next = nullptr;
};
void attention_forward(float* out, float* att, const float* qkv, int t_begin, int T, const AttentionShape& shape,
                       int att_stride, float* key_panels, float* scores = nullptr, int scores_head = -1,
                       int att_block = 0, const AttentionPool* pool = nullptr,
                       const AttentionRowStats* stats = nullptr) noexcept;
// cells[j >> shift] = max(cells[j >> shift], row[j]) for j in [0, n): one row into its thumbnail row
void attention_pool_row(float* cells, const float* row, int n, int shift) noexcept;
// The rows attention_forward computes together: the att_block it needs to keep no map.
int attention_block_rows();
// The keys of one slice of attention_forward's weighted sum of values (the slices' edges, for tests).
int attention_value_slice();
// Rows [r_begin, r_end) of query head h's attention map, recomputed from qkv and the key cache that
// attention_forward filled for rows [0, r_end) (same qkv, shape and att_stride): att_rows
// (r_end - r_begin, att_stride) receives row t at (t - r_begin) * att_stride, softmax over j <= t and
// exactly 0 after it. The same tiles and softmax as attention_forward's, so the rows equal the ones
// it wrote, bit for bit: a view can ask for any part of any head's map without the engine keeping it.
// q_stride: the floats from one row of qkv to the next, when the queries are kept apart from the keys
// and values (the model's views-only activations: (T, NH HS) rows); 0 is shape.qkv_row(). The SIMD
// build reads only the queries from qkv, the scalar build the keys too. q_first_row: the row qkv's first
// row holds, for a caller that hands over only rows [q_first_row, r_end) (the model's views widen
// their F16 queries a few rows at a time); row t is then at qkv + (t - q_first_row) * q_stride.
void attention_rows(float* att_rows, const float* qkv, int h, int r_begin, int r_end, const AttentionShape& shape,
                    int att_stride, const float* key_panels, std::size_t q_stride = 0, int q_first_row = 0) noexcept;
// Rows [r_begin, r_end) of key/value head g's values, copied out of the key cache attention_forward
// fills (kept in blocks of columns there) into dst (r_end - r_begin, HS). The scalar build keeps no
// cache and copies nothing (the model keeps no views-only activations there).
void attention_cached_value_rows(float* dst, const float* key_panels, int att_stride, const AttentionShape& shape,
                                 int g, int r_begin, int r_end) noexcept;
// GPT-2's multi-head case: qkv (T, 3C), out (T, C)
inline void attention_forward(float* out, float* att, const float* qkv, int t_begin, int T, int C, int NH,
                              int att_stride, float* key_panels, float* scores = nullptr,
                              int scores_head = -1) noexcept {
  attention_forward(out, att, qkv, t_begin, T, AttentionShape::mha(C, NH), att_stride, key_panels, scores, scores_head);
}

// ---------------------------------------------------------------------------------------------
// The Llama family's row ops.
// RMSNorm: out (N, C) = x * weight / sqrt(mean(x^2) + eps), per row; rstd (N) or null receives
// 1 / sqrt(mean(x^2) + eps). out may alias x. (Qwen3's q_norm and k_norm are this over each head's
// HS values: N = rows x heads, C = HS, on contiguous heads.)
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* weight, int N, int C, float eps) noexcept;
// Rotary positions, Hugging Face's rotate_half layout, in place on n_heads consecutive heads of HS
// values in each of the rows [t_begin, T) of x (row t at x + t * row_stride, position t):
//   for i < HS/2, angle = t * inv_freq[i]: (x_i, x_{i+HS/2}) <- (x_i cos - x_{i+HS/2} sin, x_{i+HS/2} cos + x_i sin)
// The cosines and sines are computed in double from the double inv_freq (HS/2): a row's rotation does
// not depend on which rows are computed with it.
void rope_forward(float* x, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                  const double* inv_freq) noexcept;
// SwiGLU: out (N, F) = silu(gate) * up, gate_up (N, 2F) holding [gate | up] per row, silu(x) = x / (1 + e^-x).
// out may not alias gate_up.
void swiglu_forward(float* out, const float* gate_up, int N, int F) noexcept;

// ---------------------------------------------------------------------------------------------
// Training: the backward kernels and the optimizer updates. Rows N = B*T.
// dwte (V, C), dwpe (P, C) += the rows of dout (B, T, C) at ids (B, T) and at their positions
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* ids, int B, int T, int C) noexcept;
// dinp (N, C), dweight (C), dbias (C) += ...; inp (N, C), weight (C) and mean, rstd (N) from the forward
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) noexcept;
// out (N, OC) = inp (N, K) @ weight (K, OC) + bias (OC) or null, the weight in Conv1D layout, unpacked
void matmul_unpacked_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int K,
                             int OC) noexcept;
// dinp (N, K), dweight (K, OC) or null, dbias (OC) or null += ...; dout (N, OC); weight (K, OC) Conv1D
// layout. Null dweight and dbias: only the input's gradient (the head gates' gradients need no others).
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int K, int OC) noexcept;
// dinp (N, K) += dout (N, OC) @ W^T for a packed layer W (K, OC) of any storage, read as unpack_linear
// gives it (8-bit: q * s): the input's gradient alone, equal to matmul_backward's on the unpacked weight
// bit for bit. A trainer that reads a Model's own layers (Trainer's borrowing constructor) uses it.
// scratch: the caller's, grown to K x OC floats (the weight transposed), so that it lives as long as
// the caller does (a billion-parameter MLP's is 134 MB).
void matmul_packed_backward(float* dinp, const float* dout, const PackedLinear& W, int N,
                            std::vector<float>& scratch) noexcept;
// the tied LM head: dinp (N, K), dweight (OC, K) or null += ...; dout (N, OC); weight (OC, K)
void matmul_transposed_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                                int N, int K, int OC) noexcept;
// dqkv (B, T, (NH + 2 KV) HS) += ...; dout (B, T, NH HS); qkv (B, T, (NH + 2 KV) HS) and att
// (B, NH, T, T) from the forward; scratch (T) floats, overwritten. A key/value head's rows of dqkv sum
// the gradients of every query head that reads it, in query-head order whatever the thread count.
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int B,
                        int T, const AttentionShape& shape) noexcept;
// GPT-2's multi-head case: dqkv and qkv (B, T, 3C), dout (B, T, C)
inline void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att,
                               int B, int T, int C, int NH) noexcept {
  attention_backward(dqkv, scratch, dout, qkv, att, B, T, AttentionShape::mha(C, NH));
}
// The Llama family's row ops backward (ref:: in reference.hpp has the formulas):
// RMSNorm: dinp (N, C), dweight (C) += ...; dout (N, C); inp, weight, rstd (N) from the forward
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C) noexcept;
// The rotation's backward in place on dx (laid out as rope_forward's x): each pair turned back by its angle
void rope_backward(float* dx, std::size_t row_stride, int t_begin, int T, int n_heads, int HS,
                   const double* inv_freq) noexcept;
// SwiGLU: dgate_up (N, 2F) += ...; gate_up (N, 2F) from the forward; dout (N, F)
void swiglu_backward(float* dgate_up, const float* gate_up, const float* dout, int N, int F) noexcept;
// dinp (N) += gelu'(inp) * dout, tanh form (gelu_new) and exact (erf) form
void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t N) noexcept;
void gelu_erf_backward(float* dinp, const float* inp, const float* dout, std::size_t N) noexcept;
// da (N), db (N) += dout (N)
void residual_backward(float* da, float* db, const float* dout, std::size_t N) noexcept;
// dlogits (N, V) += (probs - onehot(targets)) * dloss
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V) noexcept;
// AdamW as torch.optim.AdamW (decoupled weight decay, bias correction; step t >= 1); plain SGD
void adamw_update(float* param, float* m, float* v, const float* grad, std::size_t N, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int t) noexcept;
void sgd_update(float* param, const float* grad, std::size_t N, float lr) noexcept;
// sum of grad^2 accumulated in double (the global norm for clipping): no vector version, it runs once per step
double sum_squares(const float* grad, std::size_t N) noexcept;

}  // namespace headscope::kernels
