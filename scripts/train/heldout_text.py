#!/usr/bin/env python3
"""Write web/models/NAME/heldout.txt: a short passage of the validation split that no model trained
on, for measuring which heads a model needs (`headscope heads`, the page's pruning curve).

The passage is the opening of one Brown Corpus news document of .cache/data/val.txt (made by
scripts/data/prepare_corpus.py; its checksum is recorded in web/models/DATA.md), cut at a sentence
end below MAX_WORDS words, so that it fits the models' 128-token context in their tokenizers. The
same passage goes to every model: they share their data. Brown's licence permits redistribution
(web/models/DATA.md).

    /usr/bin/python3 scripts/train/heldout_text.py
"""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VAL = os.path.join(ROOT, ".cache", "data", "val.txt")
MODELS = os.path.join(ROOT, "web", "models")
DOC = 6  # "A citation from Conservation Commissioner ...": ordinary news prose, no headings
MAX_WORDS = 80


def main():
    docs = open(VAL, encoding="utf-8").read().split("\n")
    words = docs[DOC].split()
    sentences = re.split(r"(?<=[.!?])\s+", docs[DOC])
    out, n = [], 0
    for s in sentences:
        if n + len(s.split()) > MAX_WORDS:
            break
        out.append(s)
        n += len(s.split())
    text = " ".join(out) + "\n"
    assert n >= 40, (n, words[:10])
    for name in sorted(os.listdir(MODELS)):
        if os.path.isfile(os.path.join(MODELS, name, "card.json")):
            with open(os.path.join(MODELS, name, "heldout.txt"), "w", encoding="utf-8") as f:
                f.write(text)
    print(f"{n} words: {text.strip()[:100]}...")


if __name__ == "__main__":
    main()
