#!/usr/bin/env python3
"""Per-head role scores and held-out quality of an exported model, computed from its files.

  /usr/bin/python3 scripts/train/head_metrics.py web/models/headscope-base [--val .cache/data/val.txt] [--json OUT]

The model is read from the exported folder (model.safetensors F16, vocab.json, merges.txt) and run with
scripts/common/gpt2_torch.py, the PyTorch model the engine's reference test checks the engine against.
This module imports neither train.py nor export.py (both import it).

Scores, each per layer x head:
  prev_token       mean attention from position t to t-1 (t >= 1) on evenly spaced 128-token windows of
                   held-out natural text.
  induction        Olsson et al.'s prefix-matching score: a seeded random list of 20 common English words,
                   each one token, followed by the same list again; the mean attention from each token of the
                   repeat to the token that followed its first occurrence. Averaged over several lists.
  verb_to_subject  on held-out sentences built like the article's (scripts/data/synth.py probe_sentences,
                   never in the training data): attention from the main verb's last token to the subject's
                   tokens, divided by the uniform share len(subject tokens) / (number of visible tokens).
                   1.0 is chance; averaged over the sentences.
Model-level:
  copy_accuracy    on the same repeated lists: how often the most likely next token in the repeat is the
                   word that followed in the first copy.
  bits_per_byte    held-out natural text: cross-entropy in bits of every predicted token over the UTF-8
                   bytes of those tokens (comparable across vocabularies); <|endoftext|> targets skipped.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "data"))
sys.path.insert(0, HERE)

import model_arch  # noqa: E402
import bpe  # noqa: E402
import synth  # noqa: E402

# Everyday content words, from web/lib/roles.json (induction_probe.words: the one list the page's probe
# draws from too); the lists are drawn from those that are one token (with a leading space) in the model's
# vocabulary, so the score measures copying whole words, not word pieces.
with open(os.path.join(ROOT, "web", "lib", "roles.json"), encoding="utf-8") as _f:
    _PROBE = json.load(_f)["induction_probe"]
COMMON_WORDS = list(_PROBE["words"])

PREV_WINDOWS = 64
INDUCTION_LISTS = _PROBE["lists"]
LIST_LEN = _PROBE["list_length"]
N_PROBES = 24


# The roles and thresholds are the page's (web/lib/roles.json): a card and the page's badges call
# the same head by the same name. Card keys: the card's per-head field names.
ROLES_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "web", "lib", "roles.json")
CARD_KEYS = {"previous": "prev_token", "induction": "induction", "verb_to_subject": "verb_to_subject"}


def card_thresholds():
    """{card key: threshold} for the roles roles.json measures in the cards."""
    with open(ROLES_JSON, encoding="utf-8") as f:
        roles = json.load(f)["roles"]
    return {CARD_KEYS[r["name"]]: r["threshold"] for r in roles if "card" in r["where"] and r["name"] in CARD_KEYS}


def load(folder):
    model = model_arch.load_hf(folder).eval()
    enc = bpe.Encoder.load(folder)
    return model, enc


def single_token_words(enc):
    out = []
    for w in COMMON_WORDS:
        ids = enc.encode(" " + w)
        if len(ids) == 1 and ids[0] not in out:
            out.append(ids[0])
    return out


def repeated_lists(enc, n_lists, seed=0):
    """n_lists arrays of 2*LIST_LEN ids: a random list of distinct one-token common words, then itself."""
    words = single_token_words(enc)
    if len(words) < LIST_LEN:  # tiny test vocabularies: any ids but <|endoftext|>
        words = [i for i in range(len(enc.encoder)) if i != enc.eot]
    rng = np.random.default_rng(seed)
    return [np.tile(rng.choice(words, LIST_LEN, replace=False), 2) for _ in range(n_lists)]


@torch.no_grad()
def induction_scores(model, seqs):
    """(prefix-matching score per layer x head, copy accuracy) on sequences [list, list]."""
    X = torch.tensor(np.stack(seqs), dtype=torch.long)
    n = LIST_LEN
    logits, d = model(X, want_details=True)
    q = torch.arange(n, 2 * n)  # every token of the repeat
    k = q - n + 1  # the token after its first occurrence
    scores = [a[:, :, q, k].mean(dim=(0, 2)).tolist() for a in d["att"]]  # a: (B,NH,T,T)
    pred = logits[:, n : 2 * n - 1].argmax(-1)  # predictions at repeat positions 0..n-2
    copy = (pred == X[:, n + 1 : 2 * n]).float().mean().item()
    return scores, copy


def natural_windows(ids, T, n):
    starts = np.linspace(0, len(ids) - T - 1, n).astype(np.int64)
    return torch.from_numpy(np.stack([ids[s : s + T] for s in starts]).astype(np.int64))


@torch.no_grad()
def prev_token_scores(model, ids, T, n_windows=PREV_WINDOWS):
    X = natural_windows(ids, T, n_windows)
    L, NH = model_arch.layers_heads(model)
    tot = torch.zeros(L, NH)
    for i in range(0, len(X), 16):
        _, d = model(X[i : i + 16], want_details=True)
        t = torch.arange(1, X.shape[1])
        for l, a in enumerate(d["att"]):
            tot[l] += a[:, :, t, t - 1].sum(dim=(0, 2))
    return (tot / (len(X) * (X.shape[1] - 1))).tolist()


def probe_positions(enc, probe):
    """(query position = last token of the main verb, [subject token positions], ids) for one sentence."""
    ids, pos, verb_q, subj = [], 0, None, None
    for piece in bpe.PAT.findall(probe["text"]):
        toks = enc.bpe(bpe.to_symbols(piece))
        span = list(range(pos, pos + len(toks)))
        if piece.strip() == probe["subject"] and subj is None:
            subj = span
        if piece.strip() == probe["verb"] and subj is not None and verb_q is None and pos > subj[-1] + 3:
            verb_q = span[-1]
        ids += [enc.encoder[t] for t in toks]
        pos += len(toks)
    return verb_q, subj, ids


@torch.no_grad()
def verb_subject_scores(model, enc, probes):
    """Per layer x head: mean over sentences of attention(verb -> subject) / uniform share; and raw mean."""
    L, NH = model_arch.layers_heads(model)
    ratio = torch.zeros(L, NH)
    raw = torch.zeros(L, NH)
    for p in probes:
        q, keys, ids = probe_positions(enc, p)
        _, d = model(torch.tensor([ids]), want_details=True)
        uniform = len(keys) / (q + 1)
        for l, a in enumerate(d["att"]):
            w = a[0, :, q, keys].sum(-1)
            raw[l] += w
            ratio[l] += w / uniform
    return (ratio / len(probes)).tolist(), (raw / len(probes)).tolist()


def token_bytes(enc):
    """UTF-8 length of every id (0 for <|endoftext|>)."""
    out = np.zeros(len(enc.encoder), dtype=np.int64)
    for t, i in enc.encoder.items():
        out[i] = 0 if t == bpe.EOT else len(t)  # one bytes_to_unicode character per byte
    return out


@torch.no_grad()
def bits_per_byte(model, enc, text, T=None, B=32):
    """Cross-entropy of held-out text in bits per UTF-8 byte: consecutive T-token windows, every target
    except <|endoftext|> counted, divided by the bytes of those same targets."""
    T = T or model_arch.shape(model)["n_positions"]
    ids = np.array(enc.encode_docs(text), dtype=np.int64)
    nb = token_bytes(enc)
    n_win = (len(ids) - 1) // T
    nats, nbytes, ntok = 0.0, 0, 0
    nats_all, ntok_all = 0.0, 0
    for i in range(0, n_win, B):
        x = torch.from_numpy(np.stack([ids[k * T : k * T + T + 1] for k in range(i, min(n_win, i + B))]))
        lg = model(x[:, :-1])
        y = x[:, 1:]
        nll = F.cross_entropy(lg.reshape(-1, lg.shape[-1]), y.reshape(-1), reduction="none")
        keep = y.reshape(-1) != enc.eot
        nats_all += nll.sum().item()
        ntok_all += nll.numel()
        nats += nll[keep].sum().item()
        nbytes += int(nb[y.reshape(-1)[keep].numpy()].sum())
        ntok += int(keep.sum())
    return nats / math.log(2) / nbytes, nats / ntok, nbytes, ntok, nats_all / ntok_all, ntok_all


def best(scores):
    L = len(scores)
    l, h = max(((l, h) for l in range(L) for h in range(len(scores[l]))), key=lambda lh: scores[lh[0]][lh[1]])
    return {"layer": l, "head": h, "score": round(scores[l][h], 4)}


def measure(folder, val_txt, quick=False):
    """Every number of the card's "roles" and "heldout" sections, from the exported files."""
    torch.set_num_threads(int(os.environ.get("HEADSCOPE_THREADS", "2")))
    model, enc = load(folder)
    T = model_arch.shape(model)["n_positions"]
    with open(val_txt, encoding="utf-8") as f:
        val = f.read()
    ids = np.array(enc.encode_docs(val), dtype=np.int64)
    prev = prev_token_scores(model, ids, T, 16 if quick else PREV_WINDOWS)
    ind, copy = induction_scores(model, repeated_lists(enc, 4 if quick else INDUCTION_LISTS))
    probes = synth.probe_sentences(N_PROBES)
    v2s, v2s_raw = verb_subject_scores(model, enc, probes)
    bpb, nats, nbytes, ntok, nats_all, ntok_all = bits_per_byte(model, enc, val)
    text = val.replace(bpe.EOT, "")
    L, NH = len(prev), len(prev[0])
    heads = [
        {
            "layer": l,
            "head": h,
            "prev_token": round(prev[l][h], 4),
            "induction": round(ind[l][h], 4),
            "verb_to_subject": round(v2s[l][h], 3),
            "verb_to_subject_weight": round(v2s_raw[l][h], 4),
        }
        for l in range(L)
        for h in range(NH)
    ]
    th = card_thresholds()
    counts = {key: sum(h[key] >= th[key] for h in heads) for key in th}
    return {
        "format": "headscope-head-metrics-1",
        "thresholds": th,
        "best": {"prev_token": best(prev), "induction": best(ind), "verb_to_subject": best(v2s)},
        "role_counts": counts,
        "copy_accuracy": round(copy, 4),
        "heldout": {
            "bits_per_byte": round(bpb, 4),
            "loss_nats_per_token": round(nats, 4),
            "bytes": nbytes,
            "tokens": ntok,
            "loss_all_targets_nats_per_token": round(nats_all, 6),
            "all_targets": ntok_all,
            "tokens_per_word": round(len(enc.encode(text)) / max(1, len(text.split())), 4),
        },
        "heads": heads,
        "method": {
            "prev_token": f"mean attention t -> t-1 over {16 if quick else PREV_WINDOWS} evenly spaced {T}-token "
            "windows of the held-out natural text",
            "induction": f"prefix matching: {4 if quick else INDUCTION_LISTS} seeded lists of {LIST_LEN} distinct "
            "one-token common words, each followed by itself; mean attention from each token of the "
            "repeat to the token after its first occurrence",
            "copy_accuracy": "same lists: share of repeat positions whose argmax next token is the word that "
            "followed in the first copy",
            "verb_to_subject": f"{N_PROBES} held-out sentences from scripts/data/synth.py probe_sentences (cities "
            "never used in training); attention from the main verb's last token to the subject's "
            "tokens divided by len(subject tokens)/(query position + 1); 1.0 = uniform",
            "bits_per_byte": "held-out natural text (validation split), consecutive windows; nats of every "
            "non-<|endoftext|> target / ln 2 / UTF-8 bytes of those targets",
        },
        "probe_sentences": [p["text"] for p in probes],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="exported model folder")
    ap.add_argument("--val", default=os.path.join(ROOT, ".cache", "data", "val.txt"))
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    r = measure(a.model, a.val, a.quick)
    out = {k: v for k, v in r.items() if k not in ("heads", "probe_sentences", "method")}
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
