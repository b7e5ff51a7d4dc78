"""Exports the benchmark's onnxruntime-web subjects with torch.onnx (Debian python3-torch 1.13).

  forward.onnx     the same GPT-2 (scripts/common/gpt2_torch.py GPT2.load_hf), input ids (1, T) int64,
                   outputs what headscope's run returns: logits of the last position (1, V) and the
                   attention probabilities of every layer and head (L, NH, T, T). T is dynamic.
  forward_all_logits.onnx  the same with the logits of every position (T, V), as run(text, { allLogits })
  gemm_K_N.onnx    y (M, N) = x (M, K) @ W (K, N) + b, the model's linear layers (first block's weights),
                   M dynamic: ORT's Gemm at the same shapes as our matmul_forward.
Usage: /usr/bin/python3 bench/shapes/export_onnx.py MODEL_DIR OUT_DIR
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from gpt2_torch import GPT2  # noqa: E402

OPSET = 17  # LayerNormalization is a single op from 17 on; onnxruntime-web 1.30 supports it


class Forward(nn.Module):
    """GPT-2 forward returning the last position's logits (or, with all_logits, every position's)
    and all attention probabilities."""

    def __init__(self, m, all_logits=False):
        super().__init__()
        self.m = m
        self.all_logits = all_logits

    def forward(self, idx):
        m = self.m
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        x = m.wte(idx) + m.wpe(pos)[None]
        atts = []
        for block in m.h:
            a_in = block.ln_1(x)
            attn = block.attn
            B, T_, C = a_in.shape
            NH = attn.n_head
            HS = C // NH
            q, k, v = attn.c_attn(a_in).split(C, dim=2)
            q = q.view(B, T_, NH, HS).transpose(1, 2)
            k = k.view(B, T_, NH, HS).transpose(1, 2)
            v = v.view(B, T_, NH, HS).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / HS**0.5)
            mask = torch.tril(torch.ones(T_, T_, dtype=torch.bool))
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            atts.append(att[0])
            y = (att @ v).transpose(1, 2).reshape(B, T_, C)
            x = x + attn.c_proj(y)
            x = x + block.mlp(block.ln_2(x))
        if self.all_logits:
            logits = m.ln_f(x[0]) @ m.wte.weight.t()
        else:
            logits = m.ln_f(x[:, -1, :]) @ m.wte.weight.t()
        return logits, torch.stack(atts)


class Linear(nn.Module):
    def __init__(self, w, b):
        super().__init__()
        self.w = nn.Parameter(w.detach().clone())
        self.b = nn.Parameter(b.detach().clone())

    def forward(self, x):
        return torch.addmm(self.b, x, self.w)


class Neg(nn.Module):
    def forward(self, x):
        return -x


def main():
    model_dir, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    m = GPT2.load_hf(model_dir).eval()
    cfg = m.cfg
    ids = torch.randint(0, cfg["vocab_size"], (1, 16))
    with torch.no_grad():
        f = Forward(m)
        ref_logits = m(ids)[0, -1]
        logits, att = f(ids)
        assert torch.allclose(logits[0], ref_logits, atol=1e-4), "wrapper differs from GPT2.forward"
        torch.onnx.export(
            f,
            (ids,),
            os.path.join(out, "forward.onnx"),
            input_names=["ids"],
            output_names=["logits_last", "attention"],
            dynamic_axes={"ids": {1: "T"}, "attention": {2: "T", 3: "T"}},
            opset_version=OPSET,
        )
        # the same with every position's logits: what the package's run(text, { allLogits }) returns
        fa = Forward(m, all_logits=True)
        logits_all, _ = fa(ids)
        assert torch.allclose(logits_all[-1], ref_logits, atol=1e-4), "all-logits wrapper differs from GPT2.forward"
        torch.onnx.export(
            fa,
            (ids,),
            os.path.join(out, "forward_all_logits.onnx"),
            input_names=["ids"],
            output_names=["logits", "attention"],
            dynamic_axes={"ids": {1: "T"}, "logits": {0: "T"}, "attention": {2: "T", 3: "T"}},
            opset_version=OPSET,
        )
        b0 = m.h[0]
        shapes = []
        for name, lin in [
            ("c_attn", b0.attn.c_attn),
            ("c_proj", b0.attn.c_proj),
            ("c_fc", b0.mlp.c_fc),
            ("mlp_proj", b0.mlp.c_proj),
        ]:
            K, N = lin.weight.shape
            fn = "gemm_%d_%d.onnx" % (K, N)
            torch.onnx.export(
                Linear(lin.weight, lin.bias),
                (torch.randn(16, K),),
                os.path.join(out, fn),
                input_names=["x"],
                output_names=["y"],
                dynamic_axes={"x": {0: "M"}, "y": {0: "M"}},
                opset_version=OPSET,
            )
            shapes.append({"layer": name, "K": int(K), "N": int(N), "file": fn})
        # onnxruntime-web's per-run cost without a GEMM: one Neg over an input of the GEMM's input shape
        torch.onnx.export(
            Neg(),
            (torch.randn(16, 160),),
            os.path.join(out, "overhead.onnx"),
            input_names=["x"],
            output_names=["y"],
            dynamic_axes={"x": {0: "M", 1: "K"}, "y": {0: "M", 1: "K"}},
            opset_version=OPSET,
        )
    json.dump(
        {"config": cfg, "gemm": shapes, "overhead": "overhead.onnx", "opset": OPSET, "torch": torch.__version__},
        open(os.path.join(out, "manifest.json"), "w"),
        indent=2,
    )
    print("exported", out)


if __name__ == "__main__":
    main()
