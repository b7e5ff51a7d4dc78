#!/usr/bin/env python3
"""Writes tests/fixtures/train/: the golden file the C++ training code is checked against (llm.c style).

  batch.json         the same batch as JSON token-id rows (for `headscope train --batch`)
  config.json        a small GPT-2 (2 layers, 4 heads of size 5, C 20, V 23, 8 positions)
  golden.safetensors F32 tensors:
    <HF name>          every parameter (the starting weights), names as in GPT2.state_dict()
    batch              (B, T+1) token ids, stored as floats (small integers, exact in F32)
    logits             (B, T, V) of the starting weights on batch[:, :-1]
    loss               (1) mean next-token cross-entropy of predicting batch[:, 1:]
    grad.<HF name>     d loss / d parameter, the tied wte gets both its uses
    adamw_losses       (STEPS) the loss before each of STEPS AdamW steps, on the same batch
    adamw_hparams      (6) lr, beta1, beta2, eps, weight_decay, clip
  config-erf.json, golden-erf.safetensors
                     the same with activation_function "gelu" (the exact, erf GELU) instead of
                     "gelu_new", the same batch, and c_fc scaled up (see main) so the two GELUs differ
  config-llama.json, golden-llama.safetensors
                     a Llama (scripts/common/llama_torch.py): 4 query heads over 2 key/value heads of
                     head_dim 6 (not hidden / heads), rope_theta 100 (every pair turns by a sizeable angle
                     within 7 positions), an untied lm_head; the same batch
  config-qwen3.json, golden-qwen3.safetensors
                     a Qwen3: 4 query heads over 1 key/value head (multi-query), q/k norms, tied

Everything is computed in float64 from the float32 starting weights, so the file holds the exact
answer to float32 inputs and a C++ float32 computation's distance from it is its own rounding.
AdamW is torch.optim.AdamW (decoupled weight decay on every parameter, bias correction) after
torch.nn.utils.clip_grad_norm_ (scale by clip / (norm + 1e-6) when the global norm exceeds clip).
Run: /usr/bin/python3 scripts/make_train_golden.py
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "common"))

from gpt2_torch import GPT2  # noqa: E402
from llama_torch import LlamaFamily  # noqa: E402
from safetensors_io import save_file  # noqa: E402

OUT = os.path.join(ROOT, "tests", "fixtures", "train")
CFG = dict(vocab_size=23, n_positions=8, n_embd=20, n_layer=2, n_head=4)
B, T = 3, 7
STEPS = 10
LR, BETA1, BETA2, EPS, WD, CLIP = 1e-2, 0.9, 0.999, 1e-8, 0.1, 1.0


def loss_of(model, batch):
    logits = model(batch[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
    return logits, loss


def main():
    write(CFG, "config.json", "golden.safetensors")
    # the two GELUs agree to ~1e-4 near 0, where the MLP's inputs of a fresh model sit: the erf file
    # scales c_fc up so its inputs spread over +-3, where the forms (and their derivatives) differ by
    # ~1e-3, and a trainer that used the tanh form's gradient on this file would fail its tolerance
    write(dict(CFG, activation_function="gelu"), "config-erf.json", "golden-erf.safetensors", fc_scale=40.0)
    llama = {"model_type": "llama", "vocab_size": CFG["vocab_size"], "hidden_size": 20, "intermediate_size": 28,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 6,
             "max_position_embeddings": CFG["n_positions"], "rms_norm_eps": 1e-5, "rope_theta": 100.0,
             "tie_word_embeddings": False}
    write(llama, "config-llama.json", "golden-llama.safetensors", build=LlamaFamily)
    qwen = dict(llama, model_type="qwen3", num_key_value_heads=1, head_dim=4, tie_word_embeddings=True)
    write(qwen, "config-qwen3.json", "golden-qwen3.safetensors", build=LlamaFamily)


def write(cfg_in, config_name, golden_name, fc_scale=None, build=GPT2):
    torch.manual_seed(1717)
    m = build(cfg_in)
    with torch.no_grad():
        # LayerNorm and RMSNorm weights and every bias away from their trivial init so their gradients
        # are exercised; the Llama family's embedding (normal 0.02) up to the size of its nn.Linear
        # weights (uniform, about 0.13 at fan-in 20), so the residual stream is not all attention
        for n, p in m.named_parameters():
            if n.endswith("bias") or "ln_" in n or n.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
            if n.endswith("embed_tokens.weight"):
                p.mul_(10.0)
        if fc_scale is not None:
            for n, p in m.named_parameters():
                if "mlp.c_fc" in n:
                    p.mul_(fc_scale)
    start = {k: v.detach().clone().float() for k, v in m.state_dict().items()}
    m = m.double()
    batch = torch.randint(0, CFG["vocab_size"], (B, T + 1), generator=torch.Generator().manual_seed(17))

    logits, loss = loss_of(m, batch)
    loss.backward()
    out = {k: v.float() for k, v in start.items()}
    out["batch"] = batch.float()
    out["logits"] = logits.detach().float()
    out["loss"] = loss.detach().float().reshape(1)
    for n, p in m.named_parameters():
        out["grad." + n] = p.grad.detach().float()

    m.zero_grad()
    opt = torch.optim.AdamW(m.parameters(), lr=LR, betas=(BETA1, BETA2), eps=EPS, weight_decay=WD)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        _, l = loss_of(m, batch)
        l.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), CLIP)
        opt.step()
        losses.append(l.item())
    out["adamw_losses"] = torch.tensor(losses, dtype=torch.float32)
    out["adamw_hparams"] = torch.tensor([LR, BETA1, BETA2, EPS, WD, CLIP], dtype=torch.float32)

    os.makedirs(OUT, exist_ok=True)
    cfg = build(cfg_in).hf_config()
    with open(os.path.join(OUT, config_name), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(OUT, "batch.json"), "w") as f:
        json.dump(batch.tolist(), f)
        f.write("\n")
    save_file({k: v.contiguous() for k, v in out.items()}, os.path.join(OUT, golden_name),
              {"format": "headscope-train-golden-1"})
    print(golden_name, "loss", loss.item(), "adamw", [round(x, 6) for x in losses])
    print("bytes", os.path.getsize(os.path.join(OUT, golden_name)))


if __name__ == "__main__":
    main()
