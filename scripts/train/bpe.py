#!/usr/bin/env python3
"""Byte-level BPE in exactly GPT-2's format: trainer + encoder.

Format (as openai/gpt-2 encoder.py and Hugging Face GPT2Tokenizer):
  vocab.json   {token string: id}; token strings are byte sequences mapped through bytes_to_unicode()
  merges.txt   "#version: 0.2" then one "a b" merge per line, in rank order (line 1 = rank 0)
or the same vocabulary and merges in Hugging Face's tokenizer.json (save_tokenizer_json: a ByteLevel
pre-tokenizer with GPT-2's regex, a BPE model, <|endoftext|> an added special token), as the Llama-family
models ship their tokenizer.
Vocabulary layout (like GPT-2): ids 0..255 the single bytes in bytes_to_unicode() order, then one token
per merge in merge order, then <|endoftext|> last.

Encoding is GPT-2's algorithm: pre-tokenize with GPT-2's regex, map each piece's UTF-8 bytes through
bytes_to_unicode, then repeatedly merge the adjacent pair with the lowest merge rank (all occurrences
of that pair, left to right) until no ranked pair remains; look the parts up in vocab.json.

Training: count pre-tokenized words, then repeatedly merge the most frequent adjacent pair
(ties: the lexicographically smallest pair of token strings), with incremental pair counts and a lazy
max-heap, so a 6k vocabulary on ~18 MB of text trains in about a minute.

Usage:
  bpe.py train --input train.txt --vocab-size 6144 --out DIR
  bpe.py encode --dir DIR "some text"
"""

import argparse
import heapq
import json
import os
import sys
from collections import Counter, defaultdict

import regex

PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
EOT = "<|endoftext|>"


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character table (openai/gpt-2 src/encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {v: k for k, v in BYTE_ENCODER.items()}


def pretokenize(text):
    return PAT.findall(text)


def to_symbols(piece):
    return "".join(BYTE_ENCODER[b] for b in piece.encode("utf-8"))


# ------------------------------------------------------------------------------------------- training
def count_words(text, doc_sep=EOT):
    counts = Counter()
    for doc in text.split(doc_sep):
        counts.update(pretokenize(doc.strip("\n")))
    return counts


def train(word_counts, vocab_size, min_frequency=2, log=print):
    """word_counts: {pre-tokenized piece (str): count}. Returns (vocab dict, merges list of (a, b))."""
    n_merges = vocab_size - 256 - 1
    words = []  # list of [symbols list, count]
    for w, c in word_counts.items():
        words.append([list(to_symbols(w)), c])
    pair_counts = defaultdict(int)
    where = defaultdict(set)  # pair -> set of word indices containing it
    for i, (syms, c) in enumerate(words):
        for a, b in zip(syms, syms[1:]):
            pair_counts[(a, b)] += c
            where[(a, b)].add(i)
    # heap entries: (-count, a, b); ties broken by smallest (a, b), deterministic
    heap = [(-c, a, b) for (a, b), c in pair_counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        negc, a, b = heapq.heappop(heap)
        cur = pair_counts.get((a, b), 0)
        if cur != -negc:
            if cur > 0:
                heapq.heappush(heap, (-cur, a, b))
            continue
        if cur < min_frequency:
            break
        merges.append((a, b))
        new = a + b
        changed = Counter()
        for i in list(where[(a, b)]):
            syms, c = words[i]
            # remove this word's old pairs
            for p in zip(syms, syms[1:]):
                changed[p] -= c
            j = 0
            out = []
            while j < len(syms):
                if j < len(syms) - 1 and syms[j] == a and syms[j + 1] == b:
                    out.append(new)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            words[i][0] = out
            for p in zip(out, out[1:]):
                changed[p] += c
                where[p].add(i)
        for p, d in changed.items():
            if d == 0:
                continue
            pair_counts[p] += d
            if pair_counts[p] <= 0:
                pair_counts.pop(p, None)
            elif d > 0:
                heapq.heappush(heap, (-pair_counts[p], p[0], p[1]))
            # decreases are handled lazily when popped
        pair_counts.pop((a, b), None)
        where.pop((a, b), None)
        if log and len(merges) % 1000 == 0:
            log(f"  {len(merges)} merges, last {a!r}+{b!r} count {cur}")
    vocab = {}
    for b in BYTE_ENCODER:  # bytes in bytes_to_unicode order, as GPT-2
        vocab[BYTE_ENCODER[b]] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    vocab[EOT] = len(vocab)
    return vocab, merges


def save(folder, vocab, merges):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")


def added_token(i, content):
    """tokenizer.json's entry of a special token with id i: matched whole before BPE, never normalized."""
    return {
        "id": i,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }


def bpe_model(vocab, merges, affix="", ignore_merges=False, pairs=False):
    """tokenizer.json's "model": a byte-level BPE over vocab with merges in rank order, each the string "a b"
    (pairs: the list [a, b], as Qwen3's file). affix is its continuing_subword_prefix and end_of_word_suffix
    (Llama 3's file: None); ignore_merges (Llama 3's): a pre-token found whole in vocab is one token."""
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": None,
        "continuing_subword_prefix": affix,
        "end_of_word_suffix": affix,
        "fuse_unk": False,
        "byte_fallback": False,
        "ignore_merges": ignore_merges,
        "vocab": vocab,
        "merges": [[a, b] if pairs else f"{a} {b}" for a, b in merges],
    }


def save_tokenizer_json(path, vocab, merges):
    """vocab and merges as tokenizer.json, the layout transformers' GPT2TokenizerFast writes: no normalizer,
    the ByteLevel pre-tokenizer with GPT-2's regex and no prefix space, a byte-level BPE model with the same
    merges in the same ranks, <|endoftext|> an added special token (matched before BPE, so it is always one
    token) and no post-processor tokens (a text is read as it is, without a BOS, as GPT-2 reads it)."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tj = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(vocab[EOT], EOT)],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": dict(byte_level, trim_offsets=False),
        "decoder": byte_level,
        "model": bpe_model(vocab, merges),
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))


def load_tokenizer_json(path):
    """(vocab, merges) of a tokenizer.json that save_tokenizer_json wrote. Only its model's type, the
    pre-tokenizer's type and the absence of a normalizer are checked (not every option a foreign file could
    set): the exports read back only their own files."""
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    m = tj["model"]
    if m.get("type") != "BPE" or (tj.get("pre_tokenizer") or {}).get("type") != "ByteLevel" or tj.get("normalizer"):
        raise ValueError(f"{path}: not a GPT-2-style byte-level BPE tokenizer.json")
    merges = [tuple(x.split(" ")) if isinstance(x, str) else tuple(x) for x in m["merges"]]
    return m["vocab"], merges


# ------------------------------------------------------------------------------------------- encoding
class Encoder:
    """GPT-2's encoder.py algorithm."""

    def __init__(self, vocab, merges):
        self.encoder = vocab
        self.decoder = {v: k for k, v in vocab.items()}
        self.bpe_ranks = {tuple(m): i for i, m in enumerate(merges)}
        self.cache = {}
        self.eot = vocab.get(EOT)

    @staticmethod
    def load(folder):
        """From vocab.json + merges.txt, or from tokenizer.json when the folder has only that."""
        if not os.path.exists(os.path.join(folder, "vocab.json")) and os.path.exists(
            os.path.join(folder, "tokenizer.json")
        ):
            return Encoder(*load_tokenizer_json(os.path.join(folder, "tokenizer.json")))
        with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
            lines = f.read().split("\n")
        merges = [tuple(l.split(" ")) for l in lines[1:] if l and not l.startswith("#version")]
        return Encoder(vocab, merges)

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        pairs = set(zip(word, word[1:]))
        if not pairs:
            return [token]
        while True:
            bigram = min(pairs, key=lambda p: self.bpe_ranks.get(p, float("inf")))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new_word.extend(word[i:])
                    break
                new_word.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            if len(word) == 1:
                break
            pairs = set(zip(word, word[1:]))
        out = list(word)
        self.cache[token] = out
        return out

    def encode(self, text):
        ids = []
        for piece in PAT.findall(text):
            ids.extend(self.encoder[t] for t in self.bpe(to_symbols(piece)))
        return ids

    def encode_docs(self, text, doc_sep=EOT):
        """Documents separated by doc_sep -> ids with <|endoftext|> between (and after) documents."""
        ids = []
        for doc in text.split(doc_sep):
            doc = doc.strip("\n")
            if doc:
                ids.extend(self.encode(doc))
                ids.append(self.eot)
        return ids

    def decode(self, ids):
        text = "".join(self.decoder[i] for i in ids)
        return (
            bytearray(BYTE_DECODER[c] for c in text if c in BYTE_DECODER).decode("utf-8", errors="replace")
            if EOT not in text
            else text
        )  # special token kept verbatim

    def token_str(self, i):
        t = self.decoder[i]
        if t == EOT:
            return t
        return bytearray(BYTE_DECODER[c] for c in t).decode("utf-8", errors="replace")


def single_token_share(enc, text):
    """Share of whitespace-delimited words (as GPT-2 pieces ' word') that encode to one token."""
    n = single = 0
    for piece in PAT.findall(text):
        if not regex.fullmatch(r" ?\p{L}+", piece):
            continue
        n += 1
        single += len(enc.bpe(to_symbols(piece))) == 1
    return single / max(n, 1), n


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--input", required=True)
    t.add_argument("--vocab-size", type=int, default=6144)
    t.add_argument("--out", required=True)
    e = sub.add_parser("encode")
    e.add_argument("--dir", required=True)
    e.add_argument("text")
    a = ap.parse_args()
    if a.cmd == "train":
        with open(a.input, encoding="utf-8") as f:
            text = f.read()
        counts = count_words(text)
        print(f"{len(counts)} distinct pre-tokenized words", file=sys.stderr)
        vocab, merges = train(counts, a.vocab_size, log=lambda s: print(s, file=sys.stderr))
        save(a.out, vocab, merges)
        print(f"vocab {len(vocab)} ({len(merges)} merges) -> {a.out}", file=sys.stderr)
    else:
        enc = Encoder.load(a.dir)
        ids = enc.encode(a.text)
        print(json.dumps(ids))
        print(" | ".join(enc.token_str(i) for i in ids))


if __name__ == "__main__":
    main()
