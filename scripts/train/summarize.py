#!/usr/bin/env python3
"""Collect the model cards into web/models/index.json and web/models/README.md (with the head-count and
key/value-head families' comparisons), and check the size budget (each model.safetensors <= 8 MB, each folder <= 10 MB,
all together <= 30 MB).

  /usr/bin/python3 scripts/train/summarize.py
"""

import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "web", "models")
MB = 1_000_000
INDEX = os.path.join(MODELS, "index.json")


def shipped_order():
    """The order web/models/index.json (the one list of shipped models) already has; new models go after."""
    if not os.path.exists(INDEX):
        return []
    with open(INDEX) as f:
        return [m["name"] for m in json.load(f)["models"]]


ORDER = shipped_order()


def folder_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))


def main():
    cards = []
    for name in sorted(os.listdir(MODELS), key=lambda n: (ORDER.index(n) if n in ORDER else 99, n)):
        p = os.path.join(MODELS, name, "card.json")
        if os.path.exists(p):
            with open(p) as f:
                cards.append(json.load(f))
    entries = []
    ok = True
    total = 0
    for c in cards:
        d = os.path.join(MODELS, c["name"])
        b = folder_bytes(d)
        total += b
        w = os.path.getsize(os.path.join(d, "model.safetensors"))
        if w > 8 * MB:
            print(f"SIZE: {c['name']}/model.safetensors is {w} bytes > 8 MB", file=sys.stderr)
            ok = False
        if b > 10 * MB:
            print(f"SIZE: {c['name']} is {b} bytes > 10 MB", file=sys.stderr)
            ok = False
        best_prev = max(c["heads"], key=lambda h: h["prev_token"])
        a = c["architecture"]
        entries.append(
            {
                "name": c["name"],
                "path": c["name"] + "/",
                "family": c.get("family"),
                "description": c["description"],
                "architecture": "llama" if "n_kv_head" in a else "gpt2",
                "n_layer": a["n_layer"],
                "n_head": a["n_head"],
                "n_kv_head": a.get("n_kv_head", a["n_head"]),
                "kv_cache_bytes_per_token": a.get(
                    "kv_cache_bytes_per_token", 2 * a["n_layer"] * a["n_embd"] * 4
                ),  # GPT-2: a key and a value per head
                "n_embd": a["n_embd"],
                "n_positions": a["n_positions"],
                "vocab_size": a["vocab_size"],
                "parameters": c["parameters"],
                "folder_bytes": b,
                "val_loss": c["loss"]["val"],
                "val_perplexity": c["loss"]["val_perplexity"],
                "train_loss": c["loss"]["train"],
                "tokens_seen": c["training"]["tokens_seen"],
                "train_seconds": c["training"]["train_seconds"],
                "pytorch_forward_ms_T128_1thread": c["speed"]["pytorch_forward_ms_T128_1thread"],
                "strongest_prev_token_head": {
                    "layer": best_prev["layer"],
                    "head": best_prev["head"],
                    "score": best_prev["prev_token"],
                },
                "default": c["name"] == "headscope-base",
            }
        )
        pr = c.get("pruning")
        if pr:
            entries[-1]["pruning"] = {
                k: pr[k]
                for k in (
                    "heads",
                    "heads_off_before_5pct",
                    "heads_off_before_10pct",
                    "loss",
                    "half_loss",
                    "half_random_mean",
                )
            }
        r = c.get("roles")
        if r:
            entries[-1].update(
                {
                    "role_counts": r["counts"],
                    "best": r["best"],
                    "copy_accuracy": r["copy_accuracy"],
                    "heldout_bits_per_byte": c["heldout"]["bits_per_byte"],
                    "heldout_tokens_per_word": c["heldout"]["tokens_per_word"],
                }
            )
    if total > 30 * MB:
        print(f"SIZE: all models {total} bytes > 30 MB", file=sys.stderr)
        ok = False
    with open(INDEX, "w") as f:
        json.dump(
            {"format": "headscope-models-1", "default": "headscope-base", "total_bytes": total, "models": entries},
            f,
            indent=1,
        )
        f.write("\n")
    L = [
        "# Shipped models",
        "",
        "Trained by `scripts/train/all.sh` (see `scripts/train/README.md`); data and licences in "
        "[DATA.md](DATA.md), checksums in `provenance.json`. Each folder holds a model in Hugging Face's layout "
        "(GPT-2's with vocab.json + merges.txt, or the `kv-*` family's Llama with tokenizer.json; F16 "
        "safetensors), a model card (README.md + card.json) and "
        "`reference.json` (PyTorch logits and attention the C++ engine is tested against).",
        "",
        "| model | layers x heads | d_model | params | folder | tokens seen | train time | val loss | val ppl | "
        "fwd ms (T=128, PyTorch 1 thread) | strongest prev-token head |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        s = e["strongest_prev_token_head"]
        kv = f" (key/value {e['n_kv_head']})" if e["architecture"] == "llama" else ""
        L.append(
            f"| [{e['name']}]({e['name']}/README.md) | {e['n_layer']} x {e['n_head']}{kv} | {e['n_embd']} | "
            f"{e['parameters']:,} | {e['folder_bytes'] / MB:.2f} MB | {e['tokens_seen'] / 1e6:.1f} M | "
            f"{e['train_seconds'] / 60:.1f} min | {e['val_loss']:.3f} | {e['val_perplexity']:.1f} | "
            f"{e['pytorch_forward_ms_T128_1thread']:.1f} | L{s['layer']}H{s['head']} {s['score']:.2f} |"
        )
    fam = [e for e in entries if e["family"] == "heads"]
    L += ["", f"Total: {total / MB:.2f} MB.", ""]
    if any("role_counts" in e for e in entries):
        L += [
            "Roles measured on held-out text by `scripts/train/head_metrics.py` (thresholds: previous token >= 0.5, "
            "induction >= 0.4, verb to subject >= 3x uniform); copy accuracy on repeated word lists; bits per byte "
            "on the held-out natural text.",
            "",
            "| model | prev-token heads | induction heads | verb-to-subject heads | best induction | best verb -> "
            "subject | copy accuracy | held-out bits/byte | val loss (nats/token) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for e in entries:
            if "role_counts" not in e:
                continue
            n, b = e["role_counts"], e["best"]
            L.append(
                f"| {e['name']} | {n['prev_token']} | {n['induction']} | {n['verb_to_subject']} | "
                f"L{b['induction']['layer']}H{b['induction']['head']} {b['induction']['score']:.2f} | "
                f"L{b['verb_to_subject']['layer']}H{b['verb_to_subject']['head']} "
                f"{b['verb_to_subject']['score']:.1f}x | {e['copy_accuracy']:.1%} | "
                f"{e['heldout_bits_per_byte']:.3f} | {e['val_loss']:.3f} |"
            )
        L.append("")
    if any("pruning" in e for e in entries):
        L += [
            "How many heads each model needs (`scripts/train/heads_card.py`: `headscope heads` on each model's "
            "`heldout.txt`, heads switched off one at a time greedily by measured loss, against 8 random orders; "
            "details in each card):",
            "",
            "| model | heads | off before the loss rises 5% | ... 10% | loss, all heads | half off, greedy | "
            "half off, random orders (mean) |",
            "|---|---|---|---|---|---|---|",
        ]
        for e in entries:
            p = e.get("pruning")
            if p:
                L.append(
                    f"| {e['name']} | {p['heads']} | {p['heads_off_before_5pct']} | {p['heads_off_before_10pct']} | "
                    f"{p['loss']:.3f} | {p['half_loss']:.3f} | {p['half_random_mean']:.3f} |"
                )
        L.append("")
    kvf = [e for e in entries if e["family"] == "kv"]
    if kvf and len({e["tokens_seen"] for e in kvf}) != 1:
        print("BUDGET: the kv-* family's models saw different numbers of tokens", file=sys.stderr)
        ok = False
    if kvf:
        f0 = kvf[0]
        L += [
            f"The `kv-*` family is the Llama architecture (RMSNorm, rotary positions, SwiGLU) at the head-count "
            f"family's data, tokenizer, width (d_model {f0['n_embd']}), depth ({f0['n_layer']} layers) and context, with "
            f"{f0['n_head']} query heads per layer; the models differ only in their key/value heads ("
            + ", ".join(f"{e['name']}: {e['n_kv_head']}" for e in kvf)
            + f"), trained on the same budget "
            f"({f0['tokens_seen']:,} tokens). Fewer key/value heads shrink the key/value cache each token adds ("
            + ", ".join(f"{e['name']} {e['kv_cache_bytes_per_token']:,} bytes" for e in kvf)
            + ") and the key and value projections, so the models' parameters ("
            + ", ".join(f"{e['name']} {e['parameters']:,}" for e in kvf)
            + ").",
            "",
        ]
    if fam:
        f0 = fam[0]
        L += [
            f"The `heads-*` family shares data, tokenizer ({f0['vocab_size']:,} tokens), width (d_model {f0['n_embd']}), depth "
            f"({f0['n_layer']} layers), context ({f0['n_positions']}), seed and training budget "
            f"({f0['tokens_seen']:,} tokens); only the number of heads per layer differs, so the head size is "
            f"{f0['n_embd']} / heads. Parameter counts are identical: splitting d_model into more heads adds "
            "no weights, it changes how the same attention budget is divided. Forward times are PyTorch on a "
            "shared CPU and only roughly comparable.",
            "",
        ]
    with open(os.path.join(MODELS, "README.md"), "w") as f:
        f.write("\n".join(L))
    print("\n".join(L))
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
