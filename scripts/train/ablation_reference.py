#!/usr/bin/env python3
"""Reference for head ablation on a SHIPPED model: PyTorch (scripts/common/gpt2_torch.py) with two
heads zeroed through `head_mask` (each head's output multiplied by 0 before c_proj, exactly what
the engine's `ablate` does), on the article's chef sentence.

Writes web/models/NAME/ablation_reference.json:
  text, ids, T, ablate [[layer, head], ...],
  logits_last          logits after the last token with those heads zeroed (vocab_size floats)
  logits_last_full     the same with every head on (for the size of the effect)
  loss, loss_ablated   mean next-token cross-entropy over the sentence (nats), without / with ablation
The weights are the exported F16 file read back; arithmetic is float32 (as in reference.json).
tests/js/ablation-shipped.test.js compares the WebAssembly engine against it.

  /usr/bin/python3 scripts/train/ablation_reference.py [--model headscope-base] [--heads 1:3,2:5]
Without --heads: the two heads the model card ranks highest for 'cooked' -> 'chef' (else 1:3, 2:5).
"""

import argparse
import hashlib
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
sys.path.insert(0, HERE)

from gpt2_torch import GPT2  # noqa: E402
import bpe  # noqa: E402

CHEF = "The chef, who trained in Paris, cooked the meal quickly."


def sig(v, n=7):
    return float(f"{v:.{n}g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="headscope-base")
    ap.add_argument("--heads", default=None, help="layer:head,layer:head (default: from the card)")
    ap.add_argument("--text", default=CHEF)
    ap.add_argument("--folder", default=None, help="model folder (default web/models/MODEL)")
    args = ap.parse_args()
    folder = args.folder or os.path.join(ROOT, "web", "models", args.model)
    torch.set_num_threads(int(os.environ.get("HEADSCOPE_THREADS", "1")))
    model = GPT2.load_hf(folder).eval()
    cfg = model.cfg
    L, NH = cfg["n_layer"], cfg["n_head"]
    if args.heads:
        heads = [[int(x) for x in p.split(":")] for p in args.heads.split(",")]
    else:
        heads = []
        try:
            with open(os.path.join(folder, "card.json")) as f:
                card = json.load(f)
            top = card["chef_sentence"]["links"]["cooked->chef"]["top"]
            heads = [[t["layer"], t["head"]] for t in top[:2]]
        except (OSError, KeyError, IndexError):
            pass
        if len(heads) < 2:
            heads = [[1 % L, 3 % NH], [2 % L, 5 % NH]]
    for l, h in heads:
        assert 0 <= l < L and 0 <= h < NH, f"head {l}:{h} out of range"
    enc = bpe.Encoder.load(folder)
    ids = enc.encode(args.text)[: cfg["n_positions"]]
    x = torch.tensor([ids])
    mask = torch.ones(L, NH)
    for l, h in heads:
        mask[l, h] = 0.0
    with torch.no_grad():
        full = model(x)
        abl = model(x, head_mask=mask)

    def loss(lg):
        return F.cross_entropy(lg[0, :-1], x[0, 1:]).item() if len(ids) > 1 else float("nan")

    out = {
        "format": "headscope-ablation-reference-1",
        "model": args.model,
        "text": args.text,
        "ids": ids,
        "T": len(ids),
        "ablate": heads,
        "weights_sha256": hashlib.sha256(open(os.path.join(folder, "model.safetensors"), "rb").read()).hexdigest(),
        "note": "PyTorch (scripts/common/gpt2_torch.py), float32 arithmetic on the F16 weights read back from "
        "model.safetensors; the listed heads' outputs are multiplied by 0 before c_proj (head_mask). "
        "logits rounded to 7 significant digits; loss = mean next-token cross-entropy in nats.",
        "logits_last": [sig(v) for v in abl[0, -1].tolist()],
        "logits_last_full": [sig(v) for v in full[0, -1].tolist()],
        "loss": sig(loss(full)),
        "loss_ablated": sig(loss(abl)),
    }
    path = os.path.join(folder, "ablation_reference.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    d = (abl[0, -1] - full[0, -1]).abs().max().item()
    print(
        f"{path}: heads {heads}, T {len(ids)}, max |logit change| {d:.4f}, "
        f"loss {out['loss']:.4f} -> {out['loss_ablated']:.4f}"
    )


if __name__ == "__main__":
    main()
