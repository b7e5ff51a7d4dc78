#!/usr/bin/env python3
"""The training pipeline's smoke run (`train.py --smoke`): tiny end-to-end runs in a temp dir, one per
architecture (GPT-2 and the Llama family): tokenizer, training, checkpoint and resume, the schedule's
phases, export and a reload check against the exported reference. Under a minute; writes nothing
outside its temp dir.
"""

import json
import math
import os
import shutil
import tempfile
import time

import numpy as np
import torch

import bpe
import model_arch
from train import Logger, config_at, ensure_tokenizer, lr_at, train_model

SMOKE_TEXT = """The chef, who trained in Paris, cooked the meal quickly. The cat sat on the mat because it was tired.
In the morning the president spoke to the members of the congress about the state of the union.
She said that the book, which he had given her, was lost on the train. They walked to the river and sat down.
A small model learns which words follow which, and its attention heads look back at earlier words.
"""


def run_smoke():
    """Tiny end-to-end runs in a temp dir, one per architecture: tokenizer, training, checkpoint + resume,
    export, reload check."""
    torch.set_num_threads(1)
    run_smoke_arch("gpt2")
    run_smoke_arch("llama")


def run_smoke_arch(arch):
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="headscope-smoke-")
    try:
        text = "\n<|endoftext|>\n".join([SMOKE_TEXT] * 4)
        txt = os.path.join(tmp, "train.txt")
        with open(txt, "w") as f:
            f.write(text)
        tc = {
            "n_layer": 2,
            "n_head": 2,
            "n_embd": 32,
            "n_positions": 64,
            "vocab_size": 300,
            "batch_size": 8,
            "steps": 30,
            "lr": 0.01,
            "warmup": 5,
            "min_lr_ratio": 0.1,
            "weight_decay": 0.1,
            "grad_clip": 1.0,
            "seed": 1,
            "eval_every": 15,
            "eval_batches": 2,
            "wpe_lr_mult": 3,  # the default model's own position-table learning rate, exercised here
            # a final phase as the default model's: from step 20 a lower floor and other repeated spans
            "phases": [
                {
                    "from_step": 20,
                    "note": "smoke",
                    "min_lr_ratio": 0.01,
                    "repeat_spans": {"share": 0.5, "random_share": 0.0, "min": 4, "max": 8},
                }
            ],
        }
        if arch == "llama":
            # the key/value-head family's architecture: 4 query heads over 2 key/value heads (no position table)
            tc = dict(
                {k: v for k, v in tc.items() if k != "wpe_lr_mult"},
                arch="llama",
                n_head=4,
                n_kv_head=2,
                intermediate_size=88,
            )
        # the cosine ends at the phase's floor (0.01x), not the base floor (0.1x)
        assert math.isclose(lr_at(30, tc), 0.01 * 0.01, rel_tol=1e-9), lr_at(30, tc)
        base = {k: v for k, v in tc.items() if k != "phases"}
        assert math.isclose(lr_at(19, tc), lr_at(19, base)), "phase began early"
        assert lr_at(20, tc) < lr_at(20, base), "phase did not begin at its step"
        assert config_at(tc, 20)["repeat_spans"] == tc["phases"][0]["repeat_spans"] and "repeat_spans" not in config_at(
            tc, 19
        )
        log = Logger(tmp, quiet=True)
        tok_dir = ensure_tokenizer(tc["vocab_size"], txt, folder=os.path.join(tmp, "tok"), log=log)
        enc = bpe.Encoder.load(tok_dir)
        assert len(enc.encoder) == tc["vocab_size"], len(enc.encoder)
        with open(os.path.join(tok_dir, "merges.txt")) as f:
            assert f.readline() == "#version: 0.2\n"
        s = "The chef, who trained in Paris, cooked the meal quickly."
        assert enc.decode(enc.encode(s)) == s, "tokenizer round trip failed"
        ids = np.array(enc.encode_docs(text), dtype=np.uint16)
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        # first half, then "restart" and resume from the checkpoint
        half = dict(tc, steps=15)
        st1 = train_model("smoke", half, ids, ids, work, log)
        assert st1["step"] == 15
        ck = torch.load(os.path.join(work, "ckpt.pt"))
        ck["config"] = tc  # continue the same run with the full step count
        torch.save(ck, os.path.join(work, "ckpt.pt"))
        st = train_model("smoke", tc, ids, ids, work, log)
        h = st["history"]
        assert st["step"] == 30 and len(h) >= 3, h
        assert h[-1]["val_loss"] < h[0]["val_loss"] - 0.5, f"loss did not fall: {h}"
        import export

        out = os.path.join(tmp, "export")
        export.export_model("smoke", tc, st, tok_dir, txt, out, log=log, smoke=True)
        tok_files = ("tokenizer.json",) if arch == "llama" else ("vocab.json", "merges.txt")
        for fn in ("config.json", "model.safetensors", "README.md", "card.json", "reference.json") + tok_files:
            assert os.path.exists(os.path.join(out, fn)), fn
        if arch == "llama":
            with open(os.path.join(out, "card.json")) as f:
                a = json.load(f)["architecture"]
            assert a["n_kv_head"] == 2 and a["kv_cache_bytes_per_token"] == 2 * 2 * 2 * 8 * 4, a
        with open(os.path.join(out, "reference.json")) as f:
            ref = json.load(f)
        m = model_arch.load_hf(out)
        c = ref["cases"][0]
        with torch.no_grad():
            lg, d = m(torch.tensor([c["ids"]]), want_details=True)
        assert np.allclose(lg[0, -1].numpy(), c["logits_last"], rtol=1e-4, atol=1e-4)
        att = torch.stack([a[0] for a in d["att"]]).reshape(-1).numpy()
        assert np.allclose(att, c["attention"], atol=1e-5)
        assert c["ids"] == enc.encode(c["text"])
        print(f"smoke OK ({arch}): loss {h[0]['val_loss']:.3f} -> {h[-1]['val_loss']:.3f}, {time.time() - t0:.1f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
