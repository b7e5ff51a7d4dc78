#!/usr/bin/env python3
"""Write tests/fixtures/models/NAME/inside.json: one head's internals in float64, the reference for
Model::inspect_head (the "Inside this head" view).

For each fixture model (written by scripts/make_fixtures.py) and the article's sentence, for two
heads (the first head of layer 0 and the last head of the last layer), from the folder's own weight
files (F32, and F16 rounded to float32 exactly as the engine widens them):
    q, k, v     (T, HS)  the head's slices of c_attn(ln_1(x)), x the residual stream entering the layer
    scores      (T, T)   q_i . k_j / sqrt(HS) for j <= i; null above the diagonal (the causal mask)
    attention   (T, T)   softmax of each row over j <= i
    z           (T, HS)  sum_j attention_ij v_j
    out         (T, C)   z @ W_O[h*HS:(h+1)*HS, :], the head's write into the residual stream
    value_norm  (T)      || v_j @ W_O[h*HS:(h+1)*HS, :] ||
Everything is computed here from the weights with plain torch operations in float64 (the residual
stream from gpt2_torch's forward), not by the engine. Values are rounded to 7 significant digits.

    /usr/bin/python3 scripts/make_inside_fixtures.py
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "common"))
sys.path.insert(0, HERE)

from gpt2_torch import GPT2  # noqa: E402
from make_fixtures import MODELS, OUT, TEXTS, MAX_T, encode, dumps, r7  # noqa: E402

FORMAT = "headscope-inside-1"


def inside(m, ids, layer, head):
    """The head's internals for ids, in float64, from m's weights (m is a float64 GPT2)."""
    cfg = m.cfg
    C, NH = cfg["n_embd"], cfg["n_head"]
    HS = C // NH
    idx = torch.tensor([ids], dtype=torch.long)
    with torch.no_grad():
        _, d = m(idx, want_details=True)
        x = d["hidden"][layer][0]  # (T, C) residual stream entering the layer
        blk = m.h[layer]
        ln = torch.nn.functional.layer_norm(x, (C,), blk.ln_1.weight, blk.ln_1.bias, cfg.get("layer_norm_epsilon", 1e-5))
        qkv = ln @ blk.attn.c_attn.weight + blk.attn.c_attn.bias  # (T, 3C), Conv1D layout
        sl = slice(head * HS, (head + 1) * HS)
        q, k, v = qkv[:, :C][:, sl], qkv[:, C:2 * C][:, sl], qkv[:, 2 * C:][:, sl]
        T = len(ids)
        scores = (q @ k.T) / math.sqrt(HS)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        z = att @ v
        w_o = blk.attn.c_proj.weight[sl, :]  # (HS, C): head h's rows of W_O
        out = z @ w_o
        value_norm = (v @ w_o).norm(dim=-1)
        # the engine's own attention for this head must be the same softmax (a check of this script)
        assert torch.allclose(att, d["att"][layer][0, head], atol=1e-12)
    masked = [[None if j > i else float(f"{scores[i, j].item():.7g}") for j in range(T)] for i in range(T)]
    return {"layer": layer, "head": head, "T": T, "head_size": HS, "n_embd": C,
            "q": r7(q), "k": r7(k), "v": r7(v), "scores": masked, "attention": r7(att), "z": r7(z),
            "out": r7(out), "value_norm": r7(value_norm)}


def main():
    for name, _overrides, _seed, opts in MODELS:
        folder = os.path.join(OUT, name)
        cases = []
        for weights in ("model.safetensors", "model-f16.safetensors"):
            m = GPT2.load_hf(folder, weights).double().eval()  # F16 values widen exactly to float64
            cfg = m.cfg
            ids = encode(TEXTS[0])[: min(cfg["n_positions"], opts.get("max_t", MAX_T))]
            for layer, head in ((0, 0), (cfg["n_layer"] - 1, cfg["n_head"] - 1)):
                c = inside(m, ids, layer, head)
                c["weights"] = weights
                c["text"] = TEXTS[0]
                c["ids"] = ids
                cases.append(c)
        with open(os.path.join(folder, "inside.json"), "w", encoding="utf-8") as f:
            f.write(dumps({"format": FORMAT, "model": name, "cases": cases}))
            f.write("\n")
        print(f"{name}: {len(cases)} cases, {os.path.getsize(os.path.join(folder, 'inside.json'))} bytes")


if __name__ == "__main__":
    main()
