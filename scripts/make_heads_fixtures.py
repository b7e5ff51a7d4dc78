#!/usr/bin/env python3
"""Write tests/fixtures/models/NAME/heads.json: head importance in float64, the reference for
measure_heads and the Trainer's head gates (`headscope heads`).

For each fixture model (scripts/make_fixtures.py's GPT-2 ones and scripts/make_llama_fixtures.py's
Llama-family ones) and the article's sentence (the Llama family's ids, with its BOS, from the folder's
reference.json), from the folder's F32 weights, with gpt2_torch's or llama_torch's head_mask as the
gates xi (L, NH) that multiply each (query) head's output before the output projection, and the loss as the mean next-token cross-entropy over the text's T - 1 predictions:
    loss             at xi = 1
    gate_grad        dL/dxi at xi = 1, by autograd (checked here against central differences)
    gates_mixed      a gate vector with zeros, a half and ones (the state of a pruning in progress)
    gate_grad_mixed  dL/dxi there, by autograd
    loss_mixed       L there
    ablation_delta   L(head h alone at xi = 0) - L
    order            a fixed order of every head (reversed index order)
    curve            L with the first k heads of `order` off, k = 0 .. L*NH
All in float64 from the float32 weights; rounded to 7 significant digits.

    /usr/bin/python3 scripts/make_heads_fixtures.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "common"))
sys.path.insert(0, HERE)

import json  # noqa: E402

from gpt2_torch import GPT2  # noqa: E402
from llama_torch import LlamaFamily  # noqa: E402
import make_llama_fixtures  # noqa: E402
from make_fixtures import MODELS, OUT, TEXTS, MAX_T, encode, dumps, r7  # noqa: E402

FORMAT = "headscope-heads-1"


def loss_of(m, idx, gates):
    logits = m(idx, head_mask=gates)
    return torch.nn.functional.cross_entropy(logits[0, :-1], idx[0, 1:])


def fixtures():
    """(name, float64 model, (L, NH), ids of the article's sentence) of every fixture model"""
    for name, _overrides, _seed, opts in MODELS:
        m = GPT2.load_hf(os.path.join(OUT, name), "model.safetensors").double().eval()
        ids = encode(TEXTS[0])[: min(m.cfg["n_positions"], opts.get("max_t", MAX_T))]
        yield name, m, (m.cfg["n_layer"], m.cfg["n_head"]), ids
    for name, _overrides, _seed in make_llama_fixtures.MODELS:
        folder = os.path.join(OUT, name)
        m = LlamaFamily.load_hf(folder).double().eval()
        with open(os.path.join(folder, "reference.json"), encoding="utf-8") as f:
            case = json.load(f)["cases"][0]
        assert case["text"] == TEXTS[0], case["text"]
        yield name, m, (m.cfg["num_hidden_layers"], m.cfg["num_attention_heads"]), case["ids"]


def main():
    for name, m, (L, NH), ids in fixtures():
        folder = os.path.join(OUT, name)
        idx = torch.tensor([ids], dtype=torch.long)

        def grad_at(values):
            g = torch.tensor(values, dtype=torch.float64).reshape(L, NH).requires_grad_(True)
            loss = loss_of(m, idx, g)
            loss.backward()
            return loss.item(), g.grad.reshape(-1)

        loss, grad = grad_at([1.0] * (L * NH))
        # autograd against central differences in float64: h = 1e-6 gives truncation ~1e-12 and
        # rounding ~1e-16 / 1e-6 = 1e-10 on these O(1) losses
        for i in range(L * NH):
            e = torch.zeros(L * NH, dtype=torch.float64)
            e[i] = 1e-6
            with torch.no_grad():
                hi = loss_of(m, idx, (torch.ones(L * NH, dtype=torch.float64) + e).reshape(L, NH)).item()
                lo = loss_of(m, idx, (torch.ones(L * NH, dtype=torch.float64) - e).reshape(L, NH)).item()
            fd = (hi - lo) / 2e-6
            assert abs(fd - grad[i].item()) < 1e-7 + 1e-6 * abs(fd), (name, i, fd, grad[i].item())

        mixed = [(0.0, 1.0, 0.5)[i % 3] for i in range(L * NH)]
        loss_mixed, grad_mixed = grad_at(mixed)

        deltas, curve = [], []
        order = [[i // NH, i % NH] for i in reversed(range(L * NH))]
        with torch.no_grad():
            for i in range(L * NH):
                g = torch.ones(L * NH, dtype=torch.float64)
                g[i] = 0
                deltas.append(loss_of(m, idx, g.reshape(L, NH)).item() - loss)
            g = torch.ones(L, NH, dtype=torch.float64)
            curve.append(loss)
            for l, h in order:
                g[l, h] = 0
                curve.append(loss_of(m, idx, g).item())
        doc = {"format": FORMAT, "model": name, "text": TEXTS[0], "ids": ids,
               "loss": r7(torch.tensor([loss]))[0], "gate_grad": r7(grad),
               "gates_mixed": mixed, "loss_mixed": r7(torch.tensor([loss_mixed]))[0], "gate_grad_mixed": r7(grad_mixed),
               "ablation_delta": r7(torch.tensor(deltas)), "order": order, "curve": r7(torch.tensor(curve))}
        with open(os.path.join(folder, "heads.json"), "w", encoding="utf-8") as f:
            f.write(dumps(doc))
            f.write("\n")
        print(f"{name}: T {len(ids)}, loss {loss:.4f}, {L * NH} heads, {os.path.getsize(os.path.join(folder, 'heads.json'))} bytes")


if __name__ == "__main__":
    main()
