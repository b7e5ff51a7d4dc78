"""A model's README.md, rendered from its card (card.py's build_card, or a card.json read back): the card in
prose and tables. Written by export.py, and again by measure_speed.py and heads_card.py when they add to a card.
"""

import json
import os

import head_metrics


def write_readme(card, out):
    """Writes README.md: the card in prose and tables (readme), the model folder's human-readable card."""
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(readme(card))


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
        out.append(
            f"Previous-token heads (score >= {th}): "
            + ", ".join(f"{name(h)} ({h['prev_token']:.2f})" for h in clear_prev)
            + "."
        )
    else:
        top = prev[0]
        extra = (
            f", and its largest weight falls on the previous token in {top['prev_token_top1']:.0%} of rows"
            if "prev_token_top1" in top
            else ""
        )
        share = "half" if th == 0.5 else f"{th:.0%} of"
        out.append(
            f"No head puts {share} its attention on the previous token; the strongest is {name(top)} "
            f"({top['prev_token']:.2f}{extra})."
        )
    out.append(
        f"Most first-token attention: {name(first[0])} ({first[0]['first_token']:.2f}). "
        f"Sharpest head (lowest entropy): {name(ents[0])} ({ents[0]['entropy']:.2f} nats); broadest: "
        f"{name(ents[-1])} ({ents[-1]['entropy']:.2f} nats)."
    )
    return " ".join(out)


def roles_md(c):
    r = c.get("roles")
    if not r:
        return []
    th, b, n = r["thresholds"], r["best"], r["counts"]
    name = lambda x: f"L{x['layer']}H{x['head']}"  # noqa: E731
    L = [
        "",
        "## Roles (measured on held-out text by `scripts/train/head_metrics.py`)",
        "",
        "| role | threshold | heads at or above | strongest head | score |",
        "|---|---|---|---|---|",
        f"| previous token (mean attention on t-1) | {th['prev_token']} | {n['prev_token']} | "
        f"{name(b['prev_token'])} | {b['prev_token']['score']:.3f} |",
        f"| induction (prefix matching on repeated word lists) | {th['induction']} | {n['induction']} | "
        f"{name(b['induction'])} | {b['induction']['score']:.3f} |",
        f"| verb to subject (x uniform attention) | {th['verb_to_subject']} | {n['verb_to_subject']} | "
        f"{name(b['verb_to_subject'])} | {b['verb_to_subject']['score']:.2f} |",
        "",
        f"Copy accuracy on the repeated lists (the most likely next token is the word that followed in the first "
        f"copy): {r['copy_accuracy']:.1%}.",
        "",
    ]
    L += [f"- {k.replace('_', ' ')}: {v}" for k, v in r["method"].items()]
    pd = c.get("previous_default")
    if pd:
        L += [
            "",
            f"Against the previous default model ({pd['model']}), same script, same held-out text: bits per "
            f"byte {pd['bits_per_byte']:.4f} -> {c['heldout']['bits_per_byte']:.4f}; tokens per word "
            f"{pd['tokens_per_word']:.3f} -> {c['heldout']['tokens_per_word']:.3f}; best prefix-matching score "
            f"{pd['best']['induction']['score']:.3f} -> {b['induction']['score']:.3f}; best verb-to-subject "
            f"{pd['best']['verb_to_subject']['score']:.2f}x -> {b['verb_to_subject']['score']:.2f}x; copy "
            f"accuracy {pd['copy_accuracy']:.1%} -> {r['copy_accuracy']:.1%}.",
        ]
    t = c["tokenizer"]
    if "cost" in t:
        co = t["cost"]
        L += [
            "",
            "## Tokenizer",
            "",
            f"{t.get('source', '')}. {t['vocab_size']:,} tokens; the article's sentence is "
            f"{t.get('chef_sentence_tokens')} tokens; {t.get('heldout_tokens_per_word')} tokens per whitespace word "
            f"on the held-out text. Cost of the vocabulary: the embedding takes {co['embedding_bytes_f16']:,} bytes "
            f"({co['bytes_per_1000_entries_f16']:,} per 1,000 entries), {' + '.join(t.get('files', ['vocab.json', 'merges.txt']))} "
            f"{co['tokenizer_file_bytes']:,} bytes; the native engine loads the whole folder in "
            f"{co['engine_load_ms'] if co['engine_load_ms'] is not None else 'n/a'} ms.",
        ]
    sy = c.get("synthetic")
    if sy:
        s_, rs = sy["sentences"], sy["repeat_spans"]
        L += [
            "",
            "## Synthetic share of the training data",
            "",
            f"- Sentences: {s_['share_of_train_words']:.1%} of the training words, `{s_['generator']}` (seed "
            f"{s_['seed']}): {s_['what']}."
            if s_.get("share_of_train_words") is not None
            else "- Sentences: none",
        ]
        if rs:
            L.append(
                f"- Repeated spans: {rs['share']:.0%} of the training windows copy one of their own spans of "
                f"{rs['min']}-{rs['max']} tokens to a later place, and {rs['random_share']:.0%} are a run of "
                f"{rs['min']}-{rs['max']} random token ids repeated to fill the window ({rs['generator']})."
            )
        for ph in sy.get("repeat_spans_phases", []):
            span = f" of {ph['min']}-{ph['max']} tokens" if "min" in ph else ""
            L.append(
                f"- Repeated spans from step {ph['from_step']:,}: {ph['share']:.0%} of the windows copy a span"
                f"{span} and {ph['random_share']:.0%} are random runs."
            )
        L.append("- The validation loss and bits per byte above are on natural text only.")
    return L


def pruning_md(c):
    """The card's "How many heads does it need?" section, when scripts/train/heads_card.py measured it."""
    p = c.get("pruning")
    if not p:
        return []
    n = p["heads"]
    return [
        "",
        "## How many heads does it need?",
        "",
        f"Measured by `{p['command']}` on `heldout.txt` ({p['tokens']} held-out tokens), {p['date']}: heads "
        f"switched off one at a time, {p['method']}, against {p['random_orders']} random orders.",
        "",
        f"- {p['heads_off_before_5pct']} of {n} heads can be switched off before the held-out loss rises 5% "
        f"({p['heads_off_before_10pct']} before it rises 10%); the loss with every head on is {p['loss']:.3f} nats.",
        f"- With half the heads ({n // 2}) off: {p['half_loss']:.3f} nats in this order "
        f"(+{p['half_loss'] - p['loss']:.3f}), {p['half_random_mean']:.3f} in random orders on average "
        f"(+{p['half_random_mean'] - p['loss']:.3f}).",
        "- The heads that survive longest: " + ", ".join(f"L{l}H{h}" for l, h in p["last_heads"]) + ".",
        "- The heads that matter most alone (loss change when each is the only one off): "
        + ", ".join(f"L{l}H{h} {d:+.3f}" for l, h, d in p["top_knockouts"])
        + ".",
    ]


def readme(c):
    a = c["architecture"]
    tr = c["training"]
    lo = c["loss"]
    total = sum(c["bytes"].values())
    llama = "n_kv_head" in a
    L = (
        [
            f"# {c['name']}",
            "",
            c["description"],
            "",
            f"A small {'Llama' if llama else 'GPT-2'}-architecture language model trained from scratch by the headscope "
            "project (`scripts/train/`), for looking at attention heads. It writes imitation 1960s news prose, "
            "presidential speeches and country profiles; it is not an assistant and knows little.",
            "",
            "## Model",
            "",
            f"- Architecture: {a['type']}",
            f"- {a['n_layer']} layers x {a['n_head']} {'query ' if llama else ''}heads, d_model {a['n_embd']} (head size "
            f"{a['head_size']}), context {a['n_positions']}, vocabulary {a['vocab_size']}",
        ]
        + (
            [
                f"- Key/value heads: {a['n_kv_head']} per layer ({a['sharing']}); key/value cache "
                f"{a['kv_cache_bytes_per_token']:,} bytes per token ({a['kv_cache_note']})",
                f"- MLP: SwiGLU, {a['intermediate_size']} wide; rotary positions, theta {a['rope_theta']:g}",
            ]
            if llama
            else []
        )
        + [
            f"- Parameters: {c['parameters']:,} ({c['weights_dtype']} weights)",
            "- Files: " + ", ".join(f"{k} {v:,} B" for k, v in c["bytes"].items()) + f" (total {total:,} B "
            "plus this card)",
            f"- Tokenizer: {c['tokenizer']['type']}, {c['tokenizer']['vocab_size']} tokens; "
            f"{c['tokenizer']['validation_single_token_word_share']:.1%} of the validation words are a single token",
            "",
            "## Training",
            "",
            f"- Data: {c['data']}",
            f"- {tr['steps']} steps x {tr['batch_size']} windows x {tr['context']} tokens = "
            f"{tr['tokens_seen']:,} tokens seen, in {tr['train_seconds'] / 60:.1f} min "
            f"({tr['tokens_per_second']:,} tokens/s) on {tr['hardware']}",
            f"- Optimizer: {tr['optimizer']}; seed {tr['seed']}; exported weights from step {tr['exported_step']} "
            "(best validation loss at an evaluation)",
            f"- Reproduce: `{tr['command']}`",
        ]
        + ([f"- Schedule: {tr['schedule_note']}"] if tr["schedule_note"] else [])
        + [
            f"- From step {ph['from_step']:,}: {ph.get('note', 'a new phase')} ("
            + ", ".join(f"{k} {json.dumps(v)}" for k, v in ph.items() if k not in ("from_step", "note"))
            + ")"
            for ph in tr.get("phases", [])
        ]
        + [
            "- Training time was measured on 2 CPU cores that at times also ran other jobs (builds, browsers, "
            "analysis), so tokens/s can be lower than the same run gets on an idle machine.",
            "",
            "## Loss",
            "",
            "| | loss (nats/token) | perplexity |",
            "|---|---|---|",
            f"| train | {lo['train']:.4f} | {lo['train_perplexity']} |",
            f"| validation ({lo['val_tokens']:,} tokens) | {lo['val']:.4f} | {lo['val_perplexity']} |",
            f"| held-out natural text, bits per UTF-8 byte | {lo.get('heldout_bits_per_byte', float('nan')):.4f} | |",
            "",
            lo["note"] + ".",
            "",
            f"PyTorch forward pass, 128 tokens, 1 thread: {c['speed']['pytorch_forward_ms_T128_1thread']} ms."
            + (
                f" The native engine, 1 thread: the whole 128 tokens in {c['speed']['engine_forward_ms_T128_1thread']} ms, one "
                f"more typed token in {c['speed']['engine_typed_token_ms_T128_1thread']} ms ({c['speed']['engine_note']})."
                if "engine_typed_token_ms_T128_1thread" in c["speed"]
                else ""
            ),
        ]
        + roles_md(c)
        + [
            "",
            "## Attention heads (measured after training)",
            "",
            c["head_stats_note"],
            "",
            head_summary(c),
            "",
            "| layer | head | prev-token | t-1 most attended | first-token | entropy | induction | verb -> subject "
            "(x uniform) | observed behaviour |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
    )
    for h in c["heads"]:
        top1 = f"{h['prev_token_top1']:.2f}" if "prev_token_top1" in h else "–"
        L.append(
            f"| {h['layer']} | {h['head']} | {h['prev_token']:.3f} | {top1} | {h['first_token']:.3f} | "
            f"{h['entropy']:.3f} | {h.get('induction', 0):.3f} | {h.get('verb_to_subject', 0):.2f} | "
            f"{h['observed_role']} |"
        )
    ch = c["chef_sentence"]
    L += [
        "",
        "## The chef sentence",
        "",
        f'"{ch["text"]}" tokenizes as: ' + " ".join(f"`{t}`" for t in ch["tokens"]),
        "",
        ch["note"] + ".",
        "",
    ]
    for k, v in ch["links"].items():
        src, dst = k.split("->")
        tops = "; ".join(f"layer {t['layer']} head {t['head']}: {t['weight']:.3f}" for t in v["top"])
        base = v.get("uniform_baseline")
        L.append(
            f'- "{src}" -> "{dst}" (query token {v["query_token"]}, key tokens {v["key_tokens"]}): '
            f"strongest {tops}" + (f" (uniform attention would give {base:.3f})" if base is not None else "")
        )
    L += pruning_md(c)
    L += (
        ["", "## Files", ""]
        + (
            [
                "- `config.json`, `model.safetensors`: Hugging Face Llama layout (`model.layers.N.self_attn.k_proj.weight` "
                "and the rest, nn.Linear [out, in] weights, the output layer tied to `model.embed_tokens.weight`)",
                "- `tokenizer.json`: Hugging Face byte-level BPE with GPT-2's split (the same vocabulary and merges as "
                "the GPT-2 family's vocab.json and merges.txt)",
            ]
            if llama
            else [
                "- `config.json`, `model.safetensors`: Hugging Face GPT-2 layout (tensor names without the "
                "`transformer.` prefix, Conv1D [in, out] weights, LM head tied to `wte.weight`)",
                "- `vocab.json`, `merges.txt`: GPT-2 format byte-level BPE",
            ]
        )
        + [
            "- `reference.json`: PyTorch logits and attention for a few sentences (engine test)",
            "- `heldout.txt`: a passage of the validation text, for measuring which heads the model needs",
            "- `card.json`: this card, machine-readable, with the full loss history",
            "",
        ]
    )
    return "\n".join(L)
