// The one forward pass of a block (forward.hpp), GPT-2's or the Llama family's, shared by the Model
// and the Trainer.
#include "model/forward.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/parallel.hpp"

namespace headscope {

// Hugging Face's rotary frequencies (modeling_rope_utils: the default, and "llama3" scaling), in double.
std::vector<double> rope_frequencies(const ModelConfig& c) {
  const int half = c.head_size() / 2;
  std::vector<double> f(half);
  for (int i = 0; i < half; i++) f[i] = 1.0 / std::pow(c.rope_theta, (2.0 * i) / c.head_size());
  const RopeScaling& s = c.rope_scaling;
  if (!s.llama3) return f;
  const double pi = 3.14159265358979323846, old_len = s.original_max_position_embeddings;
  const double low_wavelen = old_len / s.low_freq_factor, high_wavelen = old_len / s.high_freq_factor;
  for (double& x : f) {
    const double wavelen = 2 * pi / x;
    const double scaled = wavelen > low_wavelen ? x / s.factor : x;  // low frequencies slowed down
    if (wavelen < high_wavelen || wavelen > low_wavelen) {
      x = scaled;  // high ones kept, low ones divided by factor
    } else {       // between: a blend
      const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      x = (1 - smooth) * scaled / s.factor + smooth * scaled;
    }
  }
  return f;
}

void block_forward(const ModelConfig& c, const BlockWeights& w, const BlockBuffers& b, int B, int t_begin, int T,
                   int stride) noexcept {
  namespace k = kernels;
  const int C = c.n_embd, NH = c.n_head, KV = c.kv_heads(), HS = c.head_size(), F = c.n_inner, QW = c.q_width();
  const std::size_t W = c.qkv_width();
  const bool llama = c.family == Family::llama;
  const bool packed = b.seq_begin != nullptr;
  const auto begin_of = [&](int s) { return packed ? b.seq_begin[s] : t_begin; };
  int n = B == 1 ? T - t_begin : B * T;  // rows computed
  if (packed) {
    n = 0;
    for (int s = 0; s < B; s++) n += T - b.seq_begin[s];
  }
  const float eps = c.layer_norm_epsilon;
  const k::AttentionShape shape{NH, KV, HS};
  const std::size_t panels = packed ? k::attention_key_panels_floats(stride, shape) : 0;

  // attention: every head reads the same normed input through its own slice of attn_in
  if (!(packed && b.attention_ready)) {
    if (llama)
      k::rmsnorm_forward(b.ln1, b.ln1_rstd, b.x, w.norm1_weight.data(), n, C, eps);
    else
      k::layernorm_forward(b.ln1, b.ln1_mean, b.ln1_rstd, b.x, w.norm1_weight.data(), w.norm1_bias.data(), n, C, eps);
    if (!packed) {
      k::matmul_forward(b.qkv + (std::size_t)t_begin * W, b.ln1, w.attn_in, n);
    } else {  // one product over every sequence's rows, then each row to its sequence
      k::matmul_forward(b.rows_scratch, b.ln1, w.attn_in, n);
      const float* row = b.rows_scratch;
      for (int s = 0; s < B; s++)
        for (int t = b.seq_begin[s]; t < T; t++, row += W)
          std::copy_n(row, W, b.qkv + ((std::size_t)s * stride + t) * W);
    }
    for (int s = 0; s < B; s++) {
      float* qkv = b.qkv + (std::size_t)s * stride * W;
      const int ts = begin_of(s);
      if (llama) {
        // Qwen3: each head's q and k through their RMSNorm (heads are contiguous: NH, then KV, rows of
        // HS), then the rotation of q and k (the NH + KV heads from column 0) by each row's position
        for (int t = ts; c.qk_norm && t < T; t++) {
          float* row = qkv + (std::size_t)t * W;
          const std::size_t r = (std::size_t)s * stride + t;
          if (b.qkv_raw) std::copy(row, row + W, b.qkv_raw + r * W);
          float* rstd = b.qk_rstd ? b.qk_rstd + r * (NH + KV) : nullptr;
          k::rmsnorm_forward(row, rstd, row, w.q_norm.data(), NH, HS, eps);
          k::rmsnorm_forward(row + QW, rstd ? rstd + NH : nullptr, row + QW, w.k_norm.data(), KV, HS, eps);
        }
        k::rope_forward(qkv, W, ts, T, NH + KV, HS, b.rope_inv_freq);
      }
      k::attention_forward(b.head_out + (std::size_t)s * stride * QW,
                           b.att + (packed ? 0 : (std::size_t)s * NH * stride * stride), qkv, ts, T, shape, stride,
                           b.key_panels + s * panels, nullptr, -1, packed ? 0 : b.att_block, packed ? nullptr : b.pool,
                           packed ? nullptr : b.row_stats);
    }
  }

  for (int s = 0; b.patches && s < B; s++) {
    const ZPatch& p = b.patches[s];
    float* out = b.head_out + (std::size_t)s * stride * QW;
    for (int t = p.begin; p.z && t < p.end; t++)
      std::copy_n(p.z + (std::size_t)t * QW + (std::size_t)p.head * HS, HS,
                  out + (std::size_t)t * QW + (std::size_t)p.head * HS);
  }

  // The rows that go on: packed sequences' head outputs gathered (only each one's last row with
  // last_rows_only, with the stream entering at those rows gathered into res_mid)
  const float* x = b.x;
  float* head_rows = b.head_out + (std::size_t)t_begin * QW;  // (n, QW); t_begin is 0 for a batch
  if (packed) {
    head_rows = b.rows_scratch;
    float* to = head_rows;
    std::size_t at = 0;  // the sequence's first row in x
    for (int s = 0; s < B; s++) {
      const int ts = b.last_rows_only ? T - 1 : b.seq_begin[s];
      for (int t = ts; t < T; t++, to += QW) std::copy_n(b.head_out + ((std::size_t)s * stride + t) * QW, QW, to);
      at += T - b.seq_begin[s];
      if (b.last_rows_only) std::copy_n(b.x + (at - 1) * C, C, b.res_mid + (std::size_t)s * C);
    }
    if (b.last_rows_only) x = b.res_mid, n = B;
  }
  const std::size_t nc = (std::size_t)n * C;

  // W_O, one head at a time: out = bias + sum_h head_out[:, h] @ W_O[h rows]. A switched-off head
  // writes nothing. Summing per head gives each head's contribution from the same computation:
  // concatenating the heads and multiplying by W_O is the same as adding up what each head writes.
  float* proj = b.attn_proj;  // (n, C)
  // Nothing asked per head (the trainer without gates): one product over the concatenation, the
  // same sum in another order, and NH times fewer passes over the output.
  const bool per_head = b.contrib || b.norms || b.ablate || b.gates;
  if (!per_head)
    k::matmul_forward(proj, head_rows, w.attn_out, n);
  else
    for (int r = 0; r < n; r++)
      std::copy(w.attn_out.bias.begin(), w.attn_out.bias.begin() + C, proj + (std::size_t)r * C);
  for (int h = 0; per_head && h < NH; h++) {
    float* norms = b.norms ? b.norms + (std::size_t)h * stride : nullptr;
    float* kept = b.contrib ? b.contrib + ((std::size_t)h * stride + t_begin) * C : nullptr;
    if (b.ablate && b.ablate[h]) {
      for (int r = 0; r < n; r++) {
        float* row = head_rows + (std::size_t)r * QW;
        std::fill(row + h * HS, row + (h + 1) * HS, 0.0f);
        if (norms) norms[t_begin + r] = 0.0f;
      }
      if (kept) std::fill(kept, kept + nc, 0.0f);
      continue;
    }
    if (b.gates && b.gates[h] == 0.0f) continue;
    float* contrib = kept ? kept : b.head_proj;  // (n, C)
    k::matmul_rows_forward(contrib, head_rows, QW, w.attn_out, h * HS, (h + 1) * HS, n);
    if (b.gates && b.gates[h] != 1.0f)
      for (std::size_t i = 0; i < nc; i++) contrib[i] *= b.gates[h];
    // each row's size and its add into the sum, rows over the threads (a serial pass per head before)
    k::parallel_for(n, 8.0 * nc, [&](int r0, int r1) {
      for (int r = r0; r < r1; r++) {
        const float* row = contrib + (std::size_t)r * C;
        if (norms) norms[t_begin + r] = std::sqrt(k::dot(row, row, C));
        k::add_forward(proj + (std::size_t)r * C, proj + (std::size_t)r * C, row, C);
      }
    });
  }
  k::add_forward(b.res_mid, x, proj, nc);

  // MLP: GPT-2's GELU, or the Llama family's SwiGLU, down(silu(gate(x)) * up(x))
  if (llama) {
    k::rmsnorm_forward(b.ln2, b.ln2_rstd, b.res_mid, w.norm2_weight.data(), n, C, eps);
    k::matmul_forward(b.fc_pre, b.ln2, w.mlp_in, n);
    k::swiglu_forward(b.fc_act, b.fc_pre, n, F);
    k::matmul_forward(b.mlp_out, b.fc_act, w.mlp_out, n);
    k::add_forward(b.res_out, b.res_mid, b.mlp_out, nc);
    return;
  }
  k::layernorm_forward(b.ln2, b.ln2_mean, b.ln2_rstd, b.res_mid, w.norm2_weight.data(), w.norm2_bias.data(), n, C, eps);
  k::matmul_forward(b.fc_pre, b.ln2, w.mlp_in, n);
  if (c.activation == Activation::gelu_tanh)
    k::gelu_forward(b.fc_act, b.fc_pre, (std::size_t)n * F);
  else
    k::gelu_erf_forward(b.fc_act, b.fc_pre, (std::size_t)n * F);
  k::matmul_forward(b.mlp_out, b.fc_act, w.mlp_out, n);
  k::add_forward(b.res_out, b.res_mid, b.mlp_out, nc);
}

}  // namespace headscope
