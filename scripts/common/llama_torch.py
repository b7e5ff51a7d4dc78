"""Llama-family decoders (model_type "llama" and "qwen3") in plain PyTorch, with Hugging Face tensor names.

The project's independent reference for the C++ engine's Llama-family path (tests/fixtures/models/llama-*,
qwen3-* are written from it by scripts/fixtures/). It follows transformers' modeling_llama.py,
modeling_qwen3.py and modeling_rope_utils.py:

    x = embed_tokens[ids]                                    no position embedding, no scaling
    for each layer:
        a = input_layernorm(x)                               RMSNorm
        q, k, v = q_proj(a), k_proj(a), v_proj(a)            nn.Linear, no bias; k, v have KV heads only
        q, k = q_norm(q), k_norm(k)                          qwen3 only: RMSNorm over head_dim, per head
        q, k = rope(q), rope(k)                              rotate_half layout, position t = 0, 1, ...
        z_h = softmax(q_h k_g^T / sqrt(HD) + causal) v_g     query head h reads kv head g = h // (H / KV)
        x = x + o_proj(concat_h z_h)
        x = x + down_proj(silu(gate_proj(b)) * up_proj(b)),  b = post_attention_layernorm(x)
    logits = norm(x) @ W^T,   W = lm_head.weight, or embed_tokens.weight when tie_word_embeddings

Differences from transformers, on purpose: everything runs in the module's dtype (the fixtures use float64
throughout), where transformers computes RMSNorm, the rotary cos/sin and the softmax in float32 and casts
back; inv_freq is computed in that dtype too (transformers: float32). Neither changes the math.

Legend: B batch, T tokens, C hidden_size, H query heads (num_attention_heads), KV key/value heads
(num_key_value_heads, H % KV == 0), G = H / KV query heads per kv head, HD head_dim (need not be C / H;
must be even for the rotation), F intermediate_size, V vocab_size, L num_hidden_layers.
Weights (nn.Linear layout [out, in]):
    model.embed_tokens.weight                       (V, C)
    model.layers.N.input_layernorm.weight           (C,)
    model.layers.N.self_attn.q_proj.weight          (H*HD, C)    rows h*HD .. h*HD+HD-1 are query head h
    model.layers.N.self_attn.k_proj.weight          (KV*HD, C)
    model.layers.N.self_attn.v_proj.weight          (KV*HD, C)
    model.layers.N.self_attn.o_proj.weight          (C, H*HD)    columns h*HD .. are query head h's
    model.layers.N.self_attn.q_norm.weight          (HD,)        qwen3 only, shared by every head
    model.layers.N.self_attn.k_norm.weight          (HD,)        qwen3 only
    model.layers.N.post_attention_layernorm.weight  (C,)
    model.layers.N.mlp.gate_proj.weight             (F, C)
    model.layers.N.mlp.up_proj.weight               (F, C)
    model.layers.N.mlp.down_proj.weight             (C, F)
    model.norm.weight                               (C,)
    lm_head.weight                                  (V, C)       absent when tie_word_embeddings
"""

import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SUPPORTED = ("llama", "qwen3")
ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen3": "Qwen3ForCausalLM"}


# ---- configuration ---------------------------------------------------------------------------
def normalize_config(raw):
    """The model's hyperparameters from a config.json dict, with transformers' defaults for absent keys;
    refuses what this reference does not implement (it must not silently compute a different model).

    Defaults differ by model_type, as in transformers: LlamaConfig has head_dim None -> C // H and
    num_key_value_heads None -> H; Qwen3Config has head_dim 128 and num_key_value_heads 32."""
    mt = raw.get("model_type")
    if mt not in SUPPORTED:
        raise ValueError(f"model_type {mt!r} is not supported (one of {SUPPORTED})")
    qwen = mt == "qwen3"
    c = {"model_type": mt}
    for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"):
        if not isinstance(raw.get(k), int) or raw[k] <= 0:
            raise ValueError(f"config: {k} must be a positive integer, got {raw.get(k)!r}")
        c[k] = raw[k]
    H, C = c["num_attention_heads"], c["hidden_size"]
    kv = raw.get("num_key_value_heads", 32 if qwen else None)
    c["num_key_value_heads"] = H if kv is None else kv
    hd = raw.get("head_dim", 128 if qwen else None)
    c["head_dim"] = C // H if hd is None else hd
    if H % c["num_key_value_heads"]:
        raise ValueError(f"num_attention_heads {H} is not a multiple of num_key_value_heads {c['num_key_value_heads']}")
    if c["head_dim"] % 2:
        # transformers would fail too: cos/sin have 2 * ceil(HD / 2) columns, q has HD
        raise ValueError(f"head_dim {c['head_dim']} is odd: the rotary embedding pairs dimension i with i + HD/2")
    c["rms_norm_eps"] = float(raw.get("rms_norm_eps", 1e-6))
    c["max_position_embeddings"] = raw.get("max_position_embeddings", 32768 if qwen else 2048)
    c["tie_word_embeddings"] = bool(raw.get("tie_word_embeddings", False))
    for k in ("attention_bias", "mlp_bias"):
        if raw.get(k, False):
            raise ValueError(f"config: {k} = true is not supported")
    if raw.get("hidden_act", "silu") != "silu":
        raise ValueError(f"hidden_act {raw.get('hidden_act')!r} is not supported (silu)")
    if raw.get("pretraining_tp", 1) not in (1, None):
        raise ValueError("pretraining_tp > 1 is not supported")
    if qwen and raw.get("use_sliding_window", False):
        raise ValueError("use_sliding_window = true is not supported")

    # rotary: transformers <= 4.5x writes rope_theta + rope_scaling; newer configs nest both in rope_parameters
    rp = raw.get("rope_parameters")
    if isinstance(rp, dict):
        theta = rp.get("rope_theta", 10000.0)
        scaling = {k: v for k, v in rp.items() if k != "rope_theta"}
    else:
        theta = raw.get("rope_theta", 10000.0)
        scaling = raw.get("rope_scaling")
    c["rope_theta"] = float(theta)
    if scaling is not None:
        rtype = scaling.get("rope_type", scaling.get("type", "default"))  # "type" is the older spelling
        if rtype == "default":
            scaling = None
        elif rtype == "llama3":
            need = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
            missing = [k for k in need if k not in scaling]
            if missing:
                raise ValueError(f"rope_scaling llama3 lacks {missing}")
            scaling = {"rope_type": "llama3", **{k: scaling[k] for k in need}}
        else:
            raise ValueError(f"rope_scaling type {rtype!r} is not supported (none or llama3)")
    c["rope_scaling"] = scaling
    c["bos_token_id"] = raw.get("bos_token_id")
    c["eos_token_id"] = raw.get("eos_token_id")
    return c


# the legend's L, C, H, KV, HD, F, V as config.json names them
SHAPE_KEYS = (
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
)


def config_of(model_type, *shape, **rest):
    """A config.json dict whose shape fits one line: model_type, then L, C, H, KV, HD, F, V (SHAPE_KEYS; a
    None leaves its key out, for transformers' default), then any other keys as they are."""
    if len(shape) != len(SHAPE_KEYS):
        raise TypeError(f"config_of: {len(shape)} shape numbers, expected {len(SHAPE_KEYS)} (L, C, H, KV, HD, F, V)")
    return {"model_type": model_type, **{k: v for k, v in zip(SHAPE_KEYS, shape) if v is not None}, **rest}


def llama3_scaling(factor, original, low=1.0, high=4.0):
    """config.json's rope_scaling for Llama 3.1's long-context rescaling (rope_inv_freq): factor,
    original_max_position_embeddings, low_freq_factor and high_freq_factor."""
    return {
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": low,
        "high_freq_factor": high,
        "original_max_position_embeddings": original,
    }


# ---- rotary position embedding ---------------------------------------------------------------
def rope_inv_freq(cfg, dtype=torch.float64):
    """(HD/2,) angular frequencies: theta^(-2i/HD), then llama3's rescaling when configured
    (transformers' _compute_default_rope_parameters and _compute_llama3_parameters)."""
    hd = cfg["head_dim"]
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).to(dtype) / hd))
    s = cfg["rope_scaling"]
    if s is None:
        return inv_freq
    # Llama 3.1's long-context rescaling, a fixed change of the frequencies (not of the positions, and
    # the same at every sequence length): wavelengths shorter than original/high_freq_factor keep their
    # frequency, longer than original/low_freq_factor are slowed by `factor`, and those between are
    # interpolated linearly in original/wavelength.
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old_len = s["original_max_position_embeddings"]
    low_freq_wavelen = old_len / low
    high_freq_wavelen = old_len / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    # both band edges count as medium, as in transformers (~(w < high_wl) * ~(w > low_wl))
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, inv_freq_llama)


def rope_cos_sin(inv_freq, T):
    """cos, sin (T, HD): angle t * inv_freq[i] in column i and again in column i + HD/2. transformers'
    layout (emb = cat(freqs, freqs)): dimension i is rotated with dimension i + HD/2, not with its
    neighbour i + 1 as in the original RoPE paper / Meta's complex-number code."""
    t = torch.arange(T, dtype=inv_freq.dtype)
    freqs = torch.outer(t, inv_freq)  # (T, HD/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, HD)
    return emb.cos(), emb.sin()


def rotate_half(x):
    """(..., HD) -> (-x[HD/2:], x[:HD/2])"""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin):
    """x (B, heads, T, HD); cos, sin (T, HD). Pair (i, i + HD/2) of position t turns by t * inv_freq[i]."""
    return x * cos + rotate_half(x) * sin


# ---- layers ----------------------------------------------------------------------------------
class RMSNorm(nn.Module):
    """weight * x / sqrt(mean(x^2) + eps) over the last dimension (LlamaRMSNorm, Qwen3RMSNorm): no mean
    subtraction and no bias, unlike LayerNorm."""

    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, H, KV, HD = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        self.H, self.KV, self.HD = H, KV, HD
        self.q_proj = nn.Linear(C, H * HD, bias=False)
        self.k_proj = nn.Linear(C, KV * HD, bias=False)
        self.v_proj = nn.Linear(C, KV * HD, bias=False)
        self.o_proj = nn.Linear(H * HD, C, bias=False)
        if cfg["model_type"] == "qwen3":
            # one (HD,) gain shared by every head: each head's q (k) vector is normalized on its own
            self.q_norm = RMSNorm(HD, cfg["rms_norm_eps"])
            self.k_norm = RMSNorm(HD, cfg["rms_norm_eps"])
        else:
            self.q_norm = self.k_norm = None

    def forward(self, x, cos, sin, head_mask=None, want_details=False):
        # x (B,T,C) already normalized; cos, sin (T,HD) or None (no rotation: a test hook);
        # head_mask (H,) of 0/1 multiplies each query head's output before o_proj (ablation)
        B, T, _ = x.shape
        H, KV, HD = self.H, self.KV, self.HD
        q = self.q_proj(x).view(B, T, H, HD)
        k = self.k_proj(x).view(B, T, KV, HD)
        v = self.v_proj(x).view(B, T, KV, HD).transpose(1, 2)  # (B,KV,T,HD)
        if self.q_norm is not None:
            # Qwen3 normalizes q and k per head BEFORE the rotation (modeling_qwen3: q_norm(q_proj(x).view(...)))
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)  # (B,H,T,HD), (B,KV,T,HD)
        if cos is not None:
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # grouped-query attention: query head h reads kv head h // G (transformers' repeat_kv: each kv
        # head repeated G times in a row)
        G = H // KV
        k_rep = k.repeat_interleave(G, dim=1)  # (B,H,T,HD)
        v_rep = v.repeat_interleave(G, dim=1)
        att = (q @ k_rep.transpose(-2, -1)) / math.sqrt(HD)  # (B,H,T,T)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        z = att @ v_rep  # (B,H,T,HD)
        if head_mask is not None:
            z = z * head_mask.view(1, H, 1, 1)
        details = None
        if want_details == "att":  # the attention map alone (the bench's: no per-head writes)
            details = {"att": att}
        elif want_details:
            # head h's write into the residual stream: z_h (T,HD) @ o_proj.weight[:, h*HD:(h+1)*HD].T (HD,C)
            w = self.o_proj.weight.t().reshape(H, HD, -1)
            contrib = torch.einsum("bhtd,hdc->bhtc", z, w)  # (B,H,T,C)
            details = {"att": att, "q": q, "k": k, "v": v, "z": z, "contrib": contrib}
        y = self.o_proj(z.transpose(1, 2).reshape(B, T, H * HD))
        return y, details


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))"""

    def __init__(self, cfg):
        super().__init__()
        C, Fi = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(C, Fi, bias=False)
        self.up_proj = nn.Linear(C, Fi, bias=False)
        self.down_proj = nn.Linear(Fi, C, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
        self.input_layernorm = RMSNorm(C, eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(C, eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, head_mask=None, want_details=False):
        a, details = self.self_attn(self.input_layernorm(x), cos, sin, head_mask, want_details)
        x = x + a
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, details


class LlamaFamily(nn.Module):
    """LlamaForCausalLM / Qwen3ForCausalLM. Parameter names are Hugging Face's (model.*, lm_head.weight)."""

    def __init__(self, config):
        super().__init__()
        cfg = normalize_config(config)
        self.cfg = cfg
        self.use_rope = True  # test hook: False skips the rotation (scripts/common/check_llama_torch.py)
        V, C = cfg["vocab_size"], cfg["hidden_size"]
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(V, C)
        self.model.layers = nn.ModuleList([DecoderLayer(cfg) for _ in range(cfg["num_hidden_layers"])])
        self.model.norm = RMSNorm(C, cfg["rms_norm_eps"])
        self.lm_head = None if cfg["tie_word_embeddings"] else nn.Linear(C, V, bias=False)
        nn.init.normal_(self.model.embed_tokens.weight, std=0.02)

    def output_weight(self):
        """(V, C): lm_head.weight, or the embedding when tied"""
        return self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight

    def forward(self, idx, head_mask=None, want_details=False):
        """idx (B,T) int64, T <= max_position_embeddings. head_mask (L,H) 0/1 over query heads, or None.
        Returns logits (B,T,V) and, with want_details, a dict of per-layer lists:
        hidden (L+1 x (B,T,C): the residual stream entering each layer, then after the last layer, before
        the final norm; transformers' output_hidden_states instead ends with the normed stream),
        att (L x (B,H,T,T)), contrib (L x (B,H,T,C)), and q, k (after q_norm/k_norm and the rotation:
        what the attention dots), v, z (per layer, (B,H or KV,T,HD))."""
        B, T = idx.shape
        if T > self.cfg["max_position_embeddings"]:
            raise ValueError(f"T {T} > max_position_embeddings {self.cfg['max_position_embeddings']}")
        cos = sin = None
        if self.use_rope:
            w = self.model.embed_tokens.weight
            cos, sin = rope_cos_sin(rope_inv_freq(self.cfg, w.dtype).to(w.device), T)
        x = self.model.embed_tokens(idx)
        hidden, per_layer = [x], []
        for i, layer in enumerate(self.model.layers):
            x, d = layer(x, cos, sin, None if head_mask is None else head_mask[i], want_details)
            if want_details:
                hidden.append(x)
                per_layer.append(d)
        logits = self.model.norm(x) @ self.output_weight().t()
        if want_details:
            out = {"hidden": hidden}
            for key in ("att", "contrib", "q", "k", "v", "z"):
                out[key] = [d[key] for d in per_layer]
            return logits, out
        return logits

    # ---- Hugging Face layout -------------------------------------------------------------
    def hf_config(self, torch_dtype="float32"):
        c = self.cfg
        out = {
            "architectures": [ARCHITECTURES[c["model_type"]]],
            "model_type": c["model_type"],
            "vocab_size": c["vocab_size"],
            "hidden_size": c["hidden_size"],
            "intermediate_size": c["intermediate_size"],
            "num_hidden_layers": c["num_hidden_layers"],
            "num_attention_heads": c["num_attention_heads"],
            "num_key_value_heads": c["num_key_value_heads"],
            "head_dim": c["head_dim"],
            "hidden_act": "silu",
            "max_position_embeddings": c["max_position_embeddings"],
            "rms_norm_eps": c["rms_norm_eps"],
            "rope_theta": c["rope_theta"],
            "rope_scaling": c["rope_scaling"],
            "attention_bias": False,
            "attention_dropout": 0.0,
        }
        if c["model_type"] == "llama":
            out.update({"mlp_bias": False, "pretraining_tp": 1})
        else:
            out.update(
                {"use_sliding_window": False, "sliding_window": None, "max_window_layers": c["num_hidden_layers"]}
            )
        out.update(
            {
                "tie_word_embeddings": c["tie_word_embeddings"],
                "bos_token_id": c["bos_token_id"],
                "eos_token_id": c["eos_token_id"],
                "initializer_range": 0.02,
                "use_cache": True,
                "torch_dtype": torch_dtype,
            }
        )
        return out

    def hf_state_dict(self, dtype=torch.float32):
        return {k: v.detach().to(dtype) for k, v in self.state_dict().items()}

    def save_hf(self, folder, dtype=torch.float32, filename="model.safetensors"):
        """Writes config.json and the weights (F32, F16 or BF16) under Hugging Face's names."""
        from safetensors_io import save_file

        os.makedirs(folder, exist_ok=True)
        names = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(self.hf_config(names[dtype]), f, indent=2)
            f.write("\n")
        save_file(self.hf_state_dict(dtype), os.path.join(folder, filename), {"format": "pt"})

    @staticmethod
    def load_hf(folder, filename="model.safetensors"):
        """The model of folder/config.json with the weights of folder/filename (float32; F16/BF16 widen
        exactly). Every expected tensor must be there with its shape, and nothing else; a tied model's
        file may carry an lm_head.weight, which transformers ignores (ties it to the embedding), as here."""
        from safetensors_io import load_file

        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        m = LlamaFamily(cfg)
        sd = load_file(os.path.join(folder, filename))
        if m.lm_head is None:
            sd.pop("lm_head.weight", None)
        want = m.state_dict()
        missing = sorted(set(want) - set(sd))
        extra = sorted(set(sd) - set(want))
        if missing or extra:
            raise ValueError(f"{filename}: missing {missing[:4]}, unexpected {extra[:4]}")
        for k, v in sd.items():
            if tuple(v.shape) != tuple(want[k].shape):
                raise ValueError(f"{filename}: {k} has shape {tuple(v.shape)}, expected {tuple(want[k].shape)}")
        m.load_state_dict(sd)
        return m
