"""PyTorch's side of the training-speed bench (bench/harness/train-speed.mjs): the repository's reference
GPT-2 (scripts/common/gpt2_torch.py: pre-LN, tanh GELU, tied LM head) trained on CPU with one thread,
as the engine trains the page's presets: AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay)
after clip_grad_norm_(1.0), a fresh batch of random tokens from the vocabulary every step.

A timed step is everything the engine's step does: draw the batch (B, T+1), zero_grad, forward, mean
next-token cross-entropy, backward, clip, AdamW step.

Protocol (so the driver can interleave subjects in one run): reads the shape as JSON on the command
line, prints {"ready": true, ...} once warmed up, then for every line "N" on stdin runs N steps and
prints {"steps": N, "seconds": s, "loss": x}. An empty line or EOF ends it.

  /usr/bin/python3 bench/shapes/train_torch.py '{"n_layer":2,"n_head":4,"n_embd":64,"n_positions":32,
      "vocab_size":48,"batch_size":16,"seq_len":32}' [--warmup 20] [--foreach]
"""

import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "common"))
from gpt2_torch import GPT2  # noqa: E402


def main():
    args = sys.argv[1:]
    shape = json.loads(args[0])
    warmup = int(args[args.index("--warmup") + 1]) if "--warmup" in args else 20
    foreach = "--foreach" in args
    torch.set_num_threads(int(args[args.index("--threads") + 1]) if "--threads" in args else 1)
    torch.manual_seed(1)
    B, T, V = shape["batch_size"], shape["seq_len"], shape["vocab_size"]
    cfg = {k: shape[k] for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")}
    model = GPT2(cfg)
    model.train()
    # foreach=None is PyTorch 1.13's default on CPU (one kernel per tensor); --foreach: the multi-tensor path
    opt = torch.optim.AdamW(
        model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, foreach=True if foreach else None
    )
    params = list(model.parameters())

    def step():
        batch = torch.randint(0, V, (B, T + 1))
        opt.zero_grad(set_to_none=True)
        logits = model(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    print(
        json.dumps(
            {
                "ready": True,
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "parameters": sum(p.numel() for p in params),
                "foreach": foreach,
            }
        ),
        flush=True,
    )
    for line in sys.stdin:
        line = line.strip()
        if not line:
            break
        n = int(line)
        t0 = time.perf_counter()
        for _ in range(n):
            loss = step()
        dt = time.perf_counter() - t0
        print(json.dumps({"steps": n, "seconds": dt, "loss": float(loss)}), flush=True)


if __name__ == "__main__":
    main()
