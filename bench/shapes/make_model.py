"""Random-weight stand-in for the default model, same shape as web/models/headscope-base.

Speed depends only on the shapes, so until the trained model exists the benchmarks run on this one.
Shape from scripts/train/configs.json ("headscope-base"); tokenizer files from the training cache
(.cache/tokenizer-5120) or, failing that, from any shipped model.
Usage: /usr/bin/python3 bench/shapes/make_model.py OUT_DIR
"""

import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import torch  # noqa: E402
from gpt2_torch import GPT2  # noqa: E402


def main():
    out = sys.argv[1]
    cfg = json.load(open(os.path.join(ROOT, "scripts", "train", "configs.json")))["headscope-base"]
    shape = {k: cfg[k] for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")}
    torch.manual_seed(1234)
    GPT2(shape).save_hf(out)
    for cand in [os.path.join(ROOT, ".cache", "tokenizer-5120")] + [
        os.path.join(ROOT, "web", "models", m)
        for m in sorted(os.listdir(os.path.join(ROOT, "web", "models")))
        if os.path.isdir(os.path.join(ROOT, "web", "models", m))
    ]:
        if os.path.exists(os.path.join(cand, "vocab.json")) and os.path.exists(os.path.join(cand, "merges.txt")):
            vocab = json.load(open(os.path.join(cand, "vocab.json")))
            if len(vocab) <= shape["vocab_size"]:
                shutil.copy(os.path.join(cand, "vocab.json"), out)
                shutil.copy(os.path.join(cand, "merges.txt"), out)
                break
    else:
        sys.exit("make_model.py: no tokenizer files with vocab_size <= %d found" % shape["vocab_size"])
    print("random model", shape, "->", out)


if __name__ == "__main__":
    main()
