#!/usr/bin/env python3
"""Export a trained model to web/models/NAME/ and write its card and reference file.

Files written:
  config.json, model.safetensors (F16, Hugging Face GPT-2 names), vocab.json, merges.txt,
  reference.json  logits and attention of a few sentences, computed with scripts/common/gpt2_torch.py on
                  the F16 weights loaded back from the exported file (float32 arithmetic); the C++ engine
                  test compares against it
  card.json, README.md  model card: shape, size, data, training, losses, per-head attention statistics

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
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
sys.path.insert(0, HERE)

from gpt2_torch import GPT2  # noqa: E402
import bpe  # noqa: E402

CHEF = "The chef, who trained in Paris, cooked the meal quickly."
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
    X = torch.from_numpy(np.stack([ids_val[s:s + T] for s in starts]).astype(np.int64))
    L, NH = model.cfg["n_layer"], model.cfg["n_head"]
    prev = torch.zeros(L, NH)
    first = torch.zeros(L, NH)
    ent = torch.zeros(L, NH)
    n = 0
    for i in range(0, len(X), 16):
        _, d = model(X[i:i + 16], want_details=True)
        for l, a in enumerate(d["att"]):  # (B,NH,T,T)
            a = a[:, :, 1:, :]  # queries t >= 1
            t = torch.arange(1, T)
            idx = (t - 1).view(1, 1, -1, 1).expand(a.shape[0], NH, -1, 1)
            prev[l] += a.gather(-1, idx).squeeze(-1).sum(dim=(0, 2))
            first[l] += a[..., 0].sum(dim=(0, 2))
            ent[l] += -(a * torch.log(a.clamp_min(1e-12))).sum(-1).sum(dim=(0, 2))
        n += X[i:i + 16].shape[0] * (T - 1)
    return (prev / n).tolist(), (first / n).tolist(), (ent / n).tolist()


@torch.no_grad()
def prev_token_top1(model, ids_val, T, n_windows):
    """Per layer x head: the share of queries t >= 1 whose most-attended key is t-1, on the same windows
    as head_stats. A head can spread its weight (a modest mean previous-token score) and still single
    out the previous token in most rows: this is what its heatmap's sub-diagonal shows."""
    starts = np.linspace(0, len(ids_val) - T - 1, n_windows).astype(np.int64)
    X = torch.from_numpy(np.stack([ids_val[s:s + T] for s in starts]).astype(np.int64))
    L, NH = model.cfg["n_layer"], model.cfg["n_head"]
    hits = torch.zeros(L, NH)
    n = 0
    target = torch.arange(0, T - 1).view(1, 1, -1)
    for i in range(0, len(X), 16):
        _, d = model(X[i:i + 16], want_details=True)
        for l, a in enumerate(d["att"]):  # (B,NH,T,T)
            hits[l] += (a[:, :, 1:, :].argmax(-1) == target).float().sum(dim=(0, 2))
        n += X[i:i + 16].shape[0] * (T - 1)
    return (hits / n).tolist()


@torch.no_grad()
def full_val_loss(model, ids_val, T, B=32):
    n_win = (len(ids_val) - 1) // T
    tot, cnt = 0.0, 0
    for i in range(0, n_win, B):
        j = min(n_win, i + B)
        x = torch.from_numpy(np.stack([ids_val[k * T:k * T + T + 1] for k in range(i, j)]).astype(np.int64))
        lg = model(x[:, :-1])
        tot += F.cross_entropy(lg.reshape(-1, lg.shape[-1]), x[:, 1:].reshape(-1), reduction="sum").item()
        cnt += x[:, 1:].numel()
    return tot / cnt, cnt


@torch.no_grad()
def forward_ms(model, T, reps=10):
    torch.set_num_threads(1)
    x = torch.randint(0, model.cfg["vocab_size"], (1, T))
    model(x)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        model(x)
        ts.append(time.perf_counter() - t)
    torch.set_num_threads(int(os.environ.get("HEADSCOPE_THREADS", "2")))
    return 1000 * float(np.median(ts))


def role_of(p, f, e, top1=0.0):
    if p >= 0.5:
        return f"previous-token head (attends to the previous token {p:.0%} of the time on average)"
    if f >= 0.5:
        return f"first-token / resting head (puts {f:.0%} of its attention on position 0)"
    if p >= 0.25 or top1 >= 0.4:
        return (f"partly previous-token ({p:.0%} of its attention on t-1, the most attended token in "
                f"{top1:.0%} of rows)")
    if e >= 2.5:
        return f"broad, averaging head (entropy {e:.2f} nats)"
    return "mixed / content-dependent"


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
    torch.set_num_threads(int(os.environ.get("HEADSCOPE_THREADS", "2")))
    cfg = dict(state["model_cfg"])
    os.makedirs(out, exist_ok=True)
    m = GPT2(cfg)
    m.load_state_dict(state["best_model"])
    m.save_hf(out, torch.float16)
    for fn in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(tok_dir, fn), os.path.join(out, fn))
    # everything below uses the F16-rounded weights, read back from the exported file
    model = GPT2.load_hf(out).eval()
    enc = bpe.Encoder.load(out)
    T = cfg["n_positions"]
    L, NH = cfg["n_layer"], cfg["n_head"]

    # ---- reference.json
    cases = []
    for text in REFERENCE_TEXTS:
        ids = enc.encode(text)[:T]
        with torch.no_grad():
            lg, d = model(torch.tensor([ids]), want_details=True)
        att = torch.stack([a[0] for a in d["att"]])  # (L,NH,T,T)
        cases.append({"text": text, "ids": ids, "T": len(ids),
                      "logits_last": [sig6(v) for v in lg[0, -1].tolist()],
                      "attention": [sig6(v) for v in att.reshape(-1).tolist()]})
    ref = {"format": "headscope-reference-1", "model": name,
           "dtype_note": "weights stored as F16 in model.safetensors; these values were computed by "
                         "scripts/common/gpt2_torch.py in float32 arithmetic on the F16 weights read back from "
                         "that file (so they include the F16 rounding); values rounded to 6 significant digits. "
                         "attention is row-major [layer][head][query][key] after softmax with the causal mask "
                         "(masked entries are 0).",
           "cases": cases}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))

    # ---- measurements for the card
    with open(val_txt, encoding="utf-8") as f:
        val_text = f.read()
    ids_val = np.array(enc.encode_docs(val_text), dtype=np.int64)
    val_loss, val_tokens = full_val_loss(model, ids_val, T)
    prev, first, ent = head_stats(model, ids_val, T, 8 if smoke else 64)
    prev_top1 = prev_token_top1(model, ids_val, T, 8 if smoke else 64)
    tokens, links = chef_links(model, enc)
    share, n_words = bpe.single_token_share(enc, val_text.replace(bpe.EOT, ""))
    n_params = sum(p.numel() for p in model.parameters())
    fwd = forward_ms(model, T, reps=3 if smoke else 10)
    hist = state["history"]
    train_loss = next((h["train_loss"] for h in reversed(hist) if h["step"] <= state["best_step"]), hist[-1]["train_loss"])
    sizes = {fn: os.path.getsize(os.path.join(out, fn)) for fn in sorted(os.listdir(out))
             if fn not in ("README.md", "card.json")}
    heads = []
    for l in range(L):
        for h in range(NH):
            heads.append({"layer": l, "head": h, "prev_token": round(prev[l][h], 4),
                          "prev_token_top1": round(prev_top1[l][h], 4),
                          "first_token": round(first[l][h], 4), "entropy": round(ent[l][h], 4),
                          "observed_role": role_of(prev[l][h], first[l][h], ent[l][h], prev_top1[l][h])})
    card = {
        "format": "headscope-card-1", "name": name, "description": tc.get("description", ""),
        "family": tc.get("family"),
        "architecture": {"type": "GPT-2 (pre-LayerNorm, learned positions, GELU tanh, tied LM head)",
                         "n_layer": L, "n_head": NH, "n_embd": cfg["n_embd"], "head_size": cfg["n_embd"] // NH,
                         "n_positions": T, "vocab_size": cfg["vocab_size"]},
        "parameters": n_params,
        "weights_dtype": "F16",
        "bytes": sizes,
        "tokenizer": {"type": "byte-level BPE, GPT-2 format", "vocab_size": len(enc.encoder),
                      "validation_single_token_word_share": round(share, 4), "validation_words": n_words},
        "data": "web/models/DATA.md (Brown Corpus, State of the Union addresses, WordNet examples)",
        "training": {"steps": state["step"], "batch_size": tc["batch_size"], "context": T,
                     "tokens_seen": state["tokens_seen"], "train_seconds": round(state["train_seconds"], 1),
                     "tokens_per_second": round(state["tokens_seen"] / max(state["train_seconds"], 1e-9)),
                     "optimizer": f"AdamW lr {tc['lr']} (warmup {tc['warmup']}, cosine to {tc['min_lr_ratio']}x), "
                                  f"betas 0.9/0.95, weight decay {tc['weight_decay']}, grad clip {tc['grad_clip']}" +
                                  (f"; position embeddings at {tc['wpe_lr_mult']}x the learning rate, no weight decay"
                                   if tc.get("wpe_lr_mult") is not None else ""),
                     "seed": tc["seed"], "exported_step": state["best_step"],
                     "hardware": "2 shared CPU cores, PyTorch 1.13 (Debian), float32",
                     "command": f"/usr/bin/python3 scripts/train/train.py --model {name}",
                     "schedule_note": tc.get("schedule_note", "")},
        "loss": {"train": train_loss, "train_perplexity": round(math.exp(train_loss), 2),
                 "val": round(val_loss, 4), "val_perplexity": round(math.exp(val_loss), 2),
                 "val_tokens": val_tokens,
                 "note": "val: mean cross-entropy (nats/token) of the exported F16 model over the whole validation "
                         "split in consecutive 128-token windows; train: running mean over the last evaluation "
                         "interval before the exported step"},
        "history": hist,
        "speed": {"pytorch_forward_ms_T128_1thread": round(fwd, 2)},
        "heads": heads,
        "head_stats_note": "Measured on 64 evenly spaced 128-token windows of validation text; prev_token = mean "
                           "attention from position t to t-1 (t >= 1), first_token = mean attention to position 0 "
                           "(t >= 1), entropy = mean attention entropy in nats (uniform over n keys = ln n), t-1 most attended = share of queries t >= 1 whose largest weight is on t-1. "
                           "Roles are descriptions of what was measured after training, not assigned.",
        "chef_sentence": {"text": CHEF, "tokens": tokens,
                          "links": {k: {"query_token": v["query_token"], "key_tokens": v["key_tokens"],
                                        "top": v["top"]} for k, v in links.items()},
                          "note": "weight = attention from the last token of the first word to all tokens of "
                                  "the second word, summed"},
    }
    add_chef_baselines(card)
    with open(os.path.join(out, "card.json"), "w") as f:
        json.dump(card, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(readme(card))
    log(f"export {name}: val loss {val_loss:.4f} (ppl {math.exp(val_loss):.1f}), {n_params} params, "
        f"{sum(sizes.values())} bytes")
    return card


def head_summary(c):
    hs = c["heads"]
    prev = sorted(hs, key=lambda h: -h["prev_token"])
    first = sorted(hs, key=lambda h: -h["first_token"])
    ents = sorted(hs, key=lambda h: h["entropy"])
    name = lambda h: f"L{h['layer']}H{h['head']}"  # noqa: E731
    clear_prev = [h for h in prev if h["prev_token"] >= 0.5]
    out = []
    if clear_prev:
        out.append("Previous-token heads (score >= 0.5): " +
                   ", ".join(f"{name(h)} ({h['prev_token']:.2f})" for h in clear_prev) + ".")
    else:
        top = prev[0]
        extra = (f", and its largest weight falls on the previous token in {top['prev_token_top1']:.0%} of rows"
                 if "prev_token_top1" in top else "")
        out.append(f"No head puts half its attention on the previous token; the strongest is {name(top)} "
                   f"({top['prev_token']:.2f}{extra}).")
    out.append(f"Most first-token attention: {name(first[0])} ({first[0]['first_token']:.2f}). "
               f"Sharpest head (lowest entropy): {name(ents[0])} ({ents[0]['entropy']:.2f} nats); broadest: "
               f"{name(ents[-1])} ({ents[-1]['entropy']:.2f} nats).")
    return " ".join(out)


def add_chef_baselines(card):
    """Uniform attention over the q+1 visible tokens would give len(keys)/(q+1): the chance level."""
    for v in card["chef_sentence"]["links"].values():
        v["uniform_baseline"] = round(len(v["key_tokens"]) / (v["query_token"] + 1), 4)
    return card


def readme(c):
    a = c["architecture"]
    tr = c["training"]
    lo = c["loss"]
    total = sum(c["bytes"].values())
    L = [f"# {c['name']}", "", c["description"], "",
         "A small GPT-2-architecture language model trained from scratch by the headscope project "
         "(`scripts/train/`), for looking at attention heads. It writes imitation 1960s news prose and "
         "presidential speeches; it is not an assistant and knows little.", "",
         "## Model", "",
         f"- Architecture: {a['type']}",
         f"- {a['n_layer']} layers x {a['n_head']} heads, d_model {a['n_embd']} (head size {a['head_size']}), "
         f"context {a['n_positions']}, vocabulary {a['vocab_size']}",
         f"- Parameters: {c['parameters']:,} ({c['weights_dtype']} weights)",
         f"- Files: " + ", ".join(f"{k} {v:,} B" for k, v in c["bytes"].items()) + f" (total {total:,} B "
         "plus this card)",
         f"- Tokenizer: {c['tokenizer']['type']}, {c['tokenizer']['vocab_size']} tokens; "
         f"{c['tokenizer']['validation_single_token_word_share']:.1%} of the validation words are a single token",
         "", "## Training", "",
         f"- Data: {c['data']}",
         f"- {tr['steps']} steps x {tr['batch_size']} windows x {tr['context']} tokens = "
         f"{tr['tokens_seen']:,} tokens seen, in {tr['train_seconds'] / 60:.1f} min "
         f"({tr['tokens_per_second']:,} tokens/s) on {tr['hardware']}",
         f"- Optimizer: {tr['optimizer']}; seed {tr['seed']}; exported weights from step {tr['exported_step']} "
         "(best validation loss at an evaluation)",
         f"- Reproduce: `{tr['command']}`"] + ([f"- Schedule: {tr['schedule_note']}"] if tr["schedule_note"] else []) + [
         "- Training time was measured on 2 CPU cores that at times also ran other jobs (builds, browsers, "
         "analysis), so tokens/s can be lower than the same run gets on an idle machine.",
         "", "## Loss", "",
         "| | loss (nats/token) | perplexity |", "|---|---|---|",
         f"| train | {lo['train']:.4f} | {lo['train_perplexity']} |",
         f"| validation ({lo['val_tokens']:,} tokens) | {lo['val']:.4f} | {lo['val_perplexity']} |",
         "", f"PyTorch forward pass, 128 tokens, 1 thread: {c['speed']['pytorch_forward_ms_T128_1thread']} ms.",
         "", "## Attention heads (measured after training)", "", c["head_stats_note"], "",
         head_summary(c), "",
         "| layer | head | prev-token | t-1 most attended | first-token | entropy | observed behaviour |",
         "|---|---|---|---|---|---|---|"]
    for h in c["heads"]:
        top1 = f"{h['prev_token_top1']:.2f}" if "prev_token_top1" in h else "–"
        L.append(f"| {h['layer']} | {h['head']} | {h['prev_token']:.3f} | {top1} | {h['first_token']:.3f} | "
                 f"{h['entropy']:.3f} | {h['observed_role']} |")
    ch = c["chef_sentence"]
    L += ["", "## The chef sentence", "", f"\"{ch['text']}\" tokenizes as: " +
          " ".join(f"`{t}`" for t in ch["tokens"]), "", ch["note"] + ".", ""]
    for k, v in ch["links"].items():
        src, dst = k.split("->")
        tops = "; ".join(f"layer {t['layer']} head {t['head']}: {t['weight']:.3f}" for t in v["top"])
        base = v.get("uniform_baseline")
        L.append(f"- \"{src}\" -> \"{dst}\" (query token {v['query_token']}, key tokens {v['key_tokens']}): "
                 f"strongest {tops}" + (f" (uniform attention would give {base:.3f})" if base is not None else ""))
    L += ["", "## Files", "",
          "- `config.json`, `model.safetensors`: Hugging Face GPT-2 layout (tensor names without the "
          "`transformer.` prefix, Conv1D [in, out] weights, LM head tied to `wte.weight`)",
          "- `vocab.json`, `merges.txt`: GPT-2 format byte-level BPE",
          "- `reference.json`: PyTorch logits and attention for a few sentences (engine test)",
          "- `card.json`: this card, machine-readable, with the full loss history", ""]
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", help="output folder (default web/models/MODEL)")
    a = ap.parse_args()
    import train
    tc = train.load_configs()[a.model]
    ck = torch.load(os.path.join(ROOT, ".cache", "train", a.model, "ckpt.pt"), map_location="cpu")
    if ck["best_model"] is None:
        ck["best_model"] = ck["model"]
    tok_dir = os.path.join(ROOT, ".cache", f"tokenizer-{tc['vocab_size']}")
    export_model(a.model, tc, ck, tok_dir, os.path.join(ROOT, ".cache", "data", "val.txt"),
                 a.out or os.path.join(ROOT, "web", "models", a.model))


if __name__ == "__main__":
    main()
