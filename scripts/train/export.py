#!/usr/bin/env python3
"""Export a trained model to web/models/NAME/ and write its card and reference file.

Files written:
  config.json, model.safetensors (F16, Hugging Face names), and the tokenizer: vocab.json + merges.txt
                  (GPT-2), or tokenizer.json (the Llama family, as Hugging Face's Llama folders ship it)
  reference.json  logits and attention of a few sentences, computed with scripts/common/gpt2_torch.py or
                  llama_torch.py on the F16 weights loaded back from the exported file (float32
                  arithmetic); the C++ engine test compares against it
  card.json, README.md  model card: shape, size, data, training, losses, per-head attention statistics,
                  role scores and held-out bits per byte (scripts/train/head_metrics.py on the exported files)

The folder is written to a temporary sibling and renamed into place at the end, so an interrupted export
leaves the previous model whole.

Normally called by train.py at the end of training. Standalone (re-export from the checkpoint):
  /usr/bin/python3 scripts/train/export.py --model headscope-base
"""

import argparse
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import head_metrics  # noqa: E402
import model_arch  # noqa: E402
import run_config  # noqa: E402
from card import CHEF, build_card, write_card  # noqa: E402
from card_readme import write_readme  # noqa: E402

REFERENCE_TEXTS = [
    CHEF,
    "The cat sat on the mat because it was tired.",
    "In 1962, the President spoke to Congress about the economy.",
    "She said that the book, which he had given her, was lost.",
]


def sig6(x):
    return float(f"{x:.6g}")


def words_of(enc, text):
    """[(piece, [token positions])] for the GPT-2 pre-tokenized pieces of text."""
    out, pos = [], 0
    for piece in bpe.PAT.findall(text):
        n = len(enc.bpe(bpe.to_symbols(piece)))
        out.append((piece, list(range(pos, pos + n))))
        pos += n
    return out


@torch.no_grad()
def head_stats(model, ids_val, T, n_windows):
    """Per layer x head: previous-token score (mean attention to t-1 over queries t >= 1), first-token
    score (mean attention to position 0 over queries t >= 1), mean attention entropy in nats (queries t >= 1),
    on n_windows evenly spaced windows of validation text."""
    starts = np.linspace(0, len(ids_val) - T - 1, n_windows).astype(np.int64)
    X = torch.from_numpy(np.stack([ids_val[s : s + T] for s in starts]).astype(np.int64))
    L, NH = model_arch.layers_heads(model)
    prev = torch.zeros(L, NH)
    first = torch.zeros(L, NH)
    ent = torch.zeros(L, NH)
    n = 0
    for i in range(0, len(X), 16):
        _, d = model(X[i : i + 16], want_details=True)
        for l, a in enumerate(d["att"]):  # (B,NH,T,T)
            a = a[:, :, 1:, :]  # queries t >= 1
            t = torch.arange(1, T)
            idx = (t - 1).view(1, 1, -1, 1).expand(a.shape[0], NH, -1, 1)
            prev[l] += a.gather(-1, idx).squeeze(-1).sum(dim=(0, 2))
            first[l] += a[..., 0].sum(dim=(0, 2))
            ent[l] += -(a * torch.log(a.clamp_min(1e-12))).sum(-1).sum(dim=(0, 2))
        n += X[i : i + 16].shape[0] * (T - 1)
    return (prev / n).tolist(), (first / n).tolist(), (ent / n).tolist()


@torch.no_grad()
def prev_token_top1(model, ids_val, T, n_windows):
    """Per layer x head: the share of queries t >= 1 whose most-attended key is t-1, on the same windows
    as head_stats. A head can spread its weight (a modest mean previous-token score) and still single
    out the previous token in most rows: this is what its heatmap's sub-diagonal shows."""
    starts = np.linspace(0, len(ids_val) - T - 1, n_windows).astype(np.int64)
    X = torch.from_numpy(np.stack([ids_val[s : s + T] for s in starts]).astype(np.int64))
    L, NH = model_arch.layers_heads(model)
    hits = torch.zeros(L, NH)
    n = 0
    target = torch.arange(0, T - 1).view(1, 1, -1)
    for i in range(0, len(X), 16):
        _, d = model(X[i : i + 16], want_details=True)
        for l, a in enumerate(d["att"]):  # (B,NH,T,T)
            hits[l] += (a[:, :, 1:, :].argmax(-1) == target).float().sum(dim=(0, 2))
        n += X[i : i + 16].shape[0] * (T - 1)
    return (hits / n).tolist()


@torch.no_grad()
def forward_ms(model, T, reps=10):
    torch.set_num_threads(1)
    x = torch.randint(0, model_arch.shape(model)["vocab_size"], (1, T))
    model(x)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        model(x)
        ts.append(time.perf_counter() - t)
    torch.set_num_threads(int(os.environ.get("HEADSCOPE_THREADS", "2")))
    return 1000 * float(np.median(ts))


@torch.no_grad()
def chef_links(model, enc):
    ids = enc.encode(CHEF)
    _, d = model(torch.tensor([ids]), want_details=True)
    words = words_of(enc, CHEF)
    span = {w.strip(): pos for w, pos in words}
    res = {}
    for src, dst in (("cooked", "chef"), ("who", "chef")):
        q = span[src][-1]  # last token of the query word (the model has read the whole word there)
        keys = span[dst]
        scores = []
        for l, a in enumerate(d["att"]):
            for h in range(a.shape[1]):
                scores.append({"layer": l, "head": h, "weight": sig6(a[0, h, q, keys].sum().item())})
        scores.sort(key=lambda s: -s["weight"])
        res[f"{src}->{dst}"] = {"query_token": q, "key_tokens": keys, "top": scores[:3], "all": scores}
    tokens = [enc.token_str(i) for i in ids]
    return tokens, res


def export_model(name, tc, state, tok_dir, val_txt, out, log=print, smoke=False):
    """Writes out/ atomically: everything goes to a temporary sibling folder, which replaces out/ at the end."""
    final = os.path.abspath(out)
    tmp = f"{final}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        card = _export_to(name, tc, state, tok_dir, val_txt, tmp, log, smoke)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = f"{final}.old-{os.getpid()}"
    if os.path.exists(final):
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)
    return card


def engine_load_ms(folder, reps=9):
    """Fastest of reps wall times of the native engine's `headscope info` on folder (load + parse of every
    file; the fastest, because other jobs on shared cores only ever add time), or None without a build. HEADSCOPE_ENGINE names the binary; default build/native-release/headscope."""
    import subprocess

    exe = os.environ.get("HEADSCOPE_ENGINE", os.path.join(ROOT, "build", "native-release", "headscope"))
    if not os.path.exists(exe):
        return None
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        r = subprocess.run([exe, "info", "--model", folder], capture_output=True)
        ts.append(time.perf_counter() - t)
        if r.returncode != 0:
            return None
    return round(1000 * float(np.min(ts)), 1)


def _export_to(name, tc, state, tok_dir, val_txt, out, log, smoke):
    """Writes the whole export into out/ (export_model's temporary folder), one function per output, in the
    order they depend on each other: the weights and tokenizer first (everything after reads the model back
    from them), reference.json, the measurements (on the files written so far; they write nothing), then
    card.json and README.md. Returns the card."""
    torch.set_num_threads(int(os.environ.get("HEADSCOPE_THREADS", "2")))
    cfg = dict(state["model_cfg"])
    model, enc = write_weights(cfg, state["best_model"], tok_dir, out)
    write_reference(model, enc, name, model_arch.cfg_shape(cfg)["n_positions"], out)
    meas = measure(model, enc, out, val_txt, smoke)
    card = build_card(name, tc, state, cfg, enc, meas, smoke)
    write_card(card, out)
    write_readme(card, out)
    val_loss = meas["metrics"]["heldout"]["loss_all_targets_nats_per_token"]
    log(
        f"export {name}: val loss {val_loss:.4f} (ppl {math.exp(val_loss):.1f}), {meas['n_params']} params, "
        f"{sum(meas['sizes'].values())} bytes"
    )
    return card


def write_weights(cfg, weights, tok_dir, out):
    """Writes config.json and model.safetensors (F16, Hugging Face names) from the trained weights, and the
    tokenizer beside them: GPT-2's vocab.json and merges.txt copied, or for the Llama family the same
    vocabulary and merges as tokenizer.json (bpe.save_tokenizer_json). Returns (model, encoder) read back
    from those files: everything measured afterwards sees the F16-rounded weights and the tokenizer file
    that the engine and the page load, not the float32 ones of the checkpoint."""
    os.makedirs(out, exist_ok=True)
    m = model_arch.build(cfg)
    m.load_state_dict(weights)
    m.save_hf(out, torch.float16)
    if cfg.get("model_type") == "llama":
        vocab, merges = bpe.Encoder.load(tok_dir).encoder, None
        with open(os.path.join(tok_dir, "merges.txt"), encoding="utf-8") as f:
            merges = [tuple(x.split(" ")) for x in f.read().split("\n")[1:] if x]
        bpe.save_tokenizer_json(os.path.join(out, "tokenizer.json"), vocab, merges)
        a, b = bpe.Encoder.load(out), bpe.Encoder.load(tok_dir)
        if a.encoder != b.encoder or a.bpe_ranks != b.bpe_ranks:
            raise RuntimeError("tokenizer.json does not hold the training tokenizer's vocabulary and merges")
    else:
        for fn in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(tok_dir, fn), os.path.join(out, fn))
    return model_arch.load_hf(out).eval(), bpe.Encoder.load(out)


def reference_dtype_note(model):
    return (
        "weights stored as F16 in model.safetensors; these values were computed by "
        f"scripts/common/{'llama_torch' if model_arch.shape(model)['arch'] == 'llama' else 'gpt2_torch'}.py "
        "in float32 arithmetic on the F16 weights read back from that file (so they include the F16 "
        "rounding); values rounded to 6 significant digits. attention is row-major "
        "[layer][head][query][key] after softmax with the causal mask (masked entries are 0); the Llama "
        "family's heads are its query heads."
    )


@torch.no_grad()
def write_reference(model, enc, name, T, out):
    """Writes reference.json: for each of REFERENCE_TEXTS (cut to T tokens), its token ids, the logits at its
    last position and every head's attention, from the exported model, to 6 significant digits. The C++
    engine's test loads the same folder and must reproduce these numbers."""
    cases = []
    for text in REFERENCE_TEXTS:
        ids = enc.encode(text)[:T]
        lg, d = model(torch.tensor([ids]), want_details=True)
        att = torch.stack([a[0] for a in d["att"]])  # (L,NH,T,T)
        cases.append(
            {
                "text": text,
                "ids": ids,
                "T": len(ids),
                "logits_last": [sig6(v) for v in lg[0, -1].tolist()],
                "attention": [sig6(v) for v in att.reshape(-1).tolist()],
            }
        )
    ref = {"format": "headscope-reference-1", "model": name, "dtype_note": reference_dtype_note(model), "cases": cases}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))


def measure(model, enc, out, val_txt, smoke):
    """Every number the card reports about the exported model, measured on the files already in out/ (it
    writes none), so that building the card afterwards is pure formatting. Returns a dict:
      metrics             head_metrics.measure: role scores, role counts, held-out loss and bits per byte
      prev, first, entropy, prev_top1   per layer x head attention statistics on validation windows
      chef_tokens, chef_links           the chef sentence's tokens and its two links' strongest heads
      single_token_share, validation_words   the tokenizer on the validation text
      n_params, sizes (bytes per file), forward_ms (PyTorch, 1 thread), engine_load_ms (None in smoke runs
      or without a native build)
    smoke: fewer windows and repetitions, and no engine timing."""
    T = model_arch.shape(model)["n_positions"]
    with open(val_txt, encoding="utf-8") as f:
        val_text = f.read()
    ids_val = np.array(enc.encode_docs(val_text), dtype=np.int64)
    metrics = head_metrics.measure(out, val_txt, quick=smoke)
    prev, first, ent = head_stats(model, ids_val, T, 8 if smoke else 64)
    prev_top1 = prev_token_top1(model, ids_val, T, 8 if smoke else 64)
    tokens, links = chef_links(model, enc)
    share, n_words = bpe.single_token_share(enc, val_text.replace(bpe.EOT, ""))
    n_params = sum(p.numel() for p in model.parameters())
    fwd = forward_ms(model, T, reps=3 if smoke else 10)
    sizes = {
        fn: os.path.getsize(os.path.join(out, fn))
        for fn in sorted(os.listdir(out))
        if fn not in ("README.md", "card.json")
    }
    return {
        "metrics": metrics,
        "prev": prev,
        "first": first,
        "entropy": ent,
        "prev_top1": prev_top1,
        "chef_tokens": tokens,
        "chef_links": links,
        "single_token_share": share,
        "validation_words": n_words,
        "n_params": n_params,
        "forward_ms": fwd,
        "sizes": sizes,
        "engine_load_ms": None if smoke else engine_load_ms(out),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", help="output folder (default web/models/MODEL)")
    a = ap.parse_args()
    tc = run_config.load_configs()[a.model]
    ck = torch.load(os.path.join(ROOT, ".cache", "train", a.model, "ckpt.pt"), map_location="cpu")
    if ck["best_model"] is None:
        ck["best_model"] = ck["model"]
    tok_dir = run_config.tokenizer_dir(tc)
    export_model(
        a.model,
        tc,
        ck,
        tok_dir,
        os.path.join(ROOT, ".cache", "data", "val.txt"),
        a.out or os.path.join(ROOT, "web", "models", a.model),
    )


if __name__ == "__main__":
    main()
