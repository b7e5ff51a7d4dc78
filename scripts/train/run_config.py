"""The training runs' configurations (configs.json) and where their tokenizers are cached.

Shared by train.py (which trains and then exports) and export.py (which re-exports a checkpoint),
so that neither imports the other.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE = os.path.join(ROOT, ".cache")


def load_configs():
    """Per-model training configs from configs.json (keys starting with _ are comments)."""
    with open(os.path.join(HERE, "configs.json")) as f:
        return {k: v for k, v in json.load(f).items() if not k.startswith("_")}


def tokenizer_dir(tc):
    """The cache folder of a config's tokenizer (GPT-2's merges cut to size, or bpe.py's own)."""
    if tc.get("tokenizer") == "gpt2-subset":
        return os.path.join(CACHE, f"tokenizer-gpt2-subset-{tc['vocab_size']}")
    return os.path.join(CACHE, f"tokenizer-{tc['vocab_size']}")
