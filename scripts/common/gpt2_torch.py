"""GPT-2 in plain PyTorch with Hugging Face tensor names and Conv1D ([in, out]) weight layout.

This is the project's independent reference for the C++ engine (tests/fixtures are written from
it) and the model the training scripts train. It mirrors transformers' GPT2LMHeadModel:
pre-LayerNorm blocks, learned positions, gelu_new (tanh form), tied LM head.

Legend: B batch, T tokens, C n_embd, NH n_head, HS head size = C / NH, V vocab.
"""

import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Conv1D(nn.Module):
    """y = x @ weight + bias with weight [in, out], as in transformers.pytorch_utils.Conv1D."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], -1)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg["n_head"]
        self.c_attn = Conv1D(cfg["n_embd"], 3 * cfg["n_embd"])
        self.c_proj = Conv1D(cfg["n_embd"], cfg["n_embd"])

    def forward(self, x, head_mask=None, want_details=False):
        # x (B,T,C); head_mask (NH,) of 0/1, multiplies each head's output before c_proj (ablation)
        B, T, C = x.shape
        NH = self.n_head
        HS = C // NH
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, NH, HS).transpose(1, 2)  # (B,NH,T,HS)
        k = k.view(B, T, NH, HS).transpose(1, 2)
        v = v.view(B, T, NH, HS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(HS)  # (B,NH,T,T)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B,NH,T,HS)
        if head_mask is not None:
            y = y * head_mask.view(1, NH, 1, 1)
        details = None
        if want_details:
            # contribution of head h to the residual stream: y_h (T,HS) @ W_O[h*HS:(h+1)*HS, :]
            w = self.c_proj.weight.view(NH, HS, C)
            contrib = torch.einsum("bhtd,hdc->bhtc", y, w)  # (B,NH,T,C)
            details = {"att": att, "head_out": y, "contrib": contrib}
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # concatenate heads
        return self.c_proj(y), details


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        inner = cfg.get("n_inner") or 4 * cfg["n_embd"]
        self.c_fc = Conv1D(cfg["n_embd"], inner)
        self.c_proj = Conv1D(inner, cfg["n_embd"])

        # "gelu_new" (tanh form, GPT-2's) or "gelu" (exact, erf form)
        self.act = gelu_new if cfg.get("activation_function", "gelu_new") == "gelu_new" else F.gelu

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.ln_1 = nn.LayerNorm(cfg["n_embd"], eps=eps)
        self.attn = Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg["n_embd"], eps=eps)
        self.mlp = MLP(cfg)

    def forward(self, x, head_mask=None, want_details=False):
        a, details = self.attn(self.ln_1(x), head_mask, want_details)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, details


class GPT2(nn.Module):
    """GPT2LMHeadModel. Parameter names are Hugging Face's without the "transformer." prefix (wte, wpe,
    h.N.*, ln_f); the LM head is tied to wte."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.wpe = nn.Embedding(cfg["n_positions"], cfg["n_embd"])
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])])
        self.ln_f = nn.LayerNorm(cfg["n_embd"], eps=cfg.get("layer_norm_epsilon", 1e-5))
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)
        # GPT-2's scaled init of the residual projections
        for n, p in self.named_parameters():
            if n.endswith("c_proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg["n_layer"]))

    def forward(self, idx, head_mask=None, want_details=False):
        """idx (B,T) int64. head_mask (L,NH) 0/1 or None.
        Returns logits (B,T,V) and, with want_details, a dict with per-layer lists:
        hidden (L+1 x (B,T,C), the residual stream before each block and after the last, before ln_f),
        att (L x (B,NH,T,T)), contrib (L x (B,NH,T,C))."""
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)[None]
        hidden, atts, contribs = [x], [], []
        for i, block in enumerate(self.h):
            x, d = block(x, None if head_mask is None else head_mask[i], want_details)
            if want_details:
                hidden.append(x)
                atts.append(d["att"])
                contribs.append(d["contrib"])
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
        if want_details:
            return logits, {"hidden": hidden, "att": atts, "contrib": contribs}
        return logits

    # ---- Hugging Face layout -------------------------------------------------------------
    def hf_config(self):
        c = self.cfg
        return {
            "architectures": ["GPT2LMHeadModel"],
            "model_type": "gpt2",
            "vocab_size": c["vocab_size"],
            "n_positions": c["n_positions"],
            "n_ctx": c["n_positions"],
            "n_embd": c["n_embd"],
            "n_layer": c["n_layer"],
            "n_head": c["n_head"],
            "n_inner": c.get("n_inner"),
            "layer_norm_epsilon": c.get("layer_norm_epsilon", 1e-5),
            "activation_function": c.get("activation_function", "gelu_new"),
            "bos_token_id": c.get("bos_token_id", 0),
            "eos_token_id": c.get("eos_token_id", 0),
        }

    def hf_state_dict(self, dtype=torch.float32, prefix=""):
        return {prefix + k: v.detach().to(dtype) for k, v in self.state_dict().items()}

    def save_hf(self, folder, dtype=torch.float32, filename="model.safetensors"):
        import os
        from safetensors_io import save_file

        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(self.hf_config(), f, indent=2)
        save_file(self.hf_state_dict(dtype), os.path.join(folder, filename), {"format": "pt"})

    @staticmethod
    def load_hf(folder, filename="model.safetensors"):
        import os
        from safetensors_io import load_file

        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        m = GPT2(cfg)
        sd = {k.removeprefix("transformer."): v for k, v in load_file(os.path.join(folder, filename)).items()}
        m.load_state_dict({k: v for k, v in sd.items() if k in m.state_dict()})
        return m
