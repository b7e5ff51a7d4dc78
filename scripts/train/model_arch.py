"""Which architecture a training config or an exported folder is, and the model it builds.

Two architectures are trained here with the same data, recipe and measurements: GPT-2 (the default model
and the head-count family, scripts/common/gpt2_torch.py) and the Llama family (the key/value-head family,
scripts/common/llama_torch.py: RMSNorm, rotary positions, SwiGLU, grouped-query attention). A config's
"arch" is "gpt2" (the default when absent) or "llama". Everything downstream (the training loop, the
role scores, the export) asks this module for the model and its shape instead of reading either
module's own config keys.
"""

import json
import os

import torch.nn as nn

from gpt2_torch import GPT2
from llama_torch import LlamaFamily


def is_llama(tc):
    return tc.get("arch", "gpt2") == "llama"


def model_cfg(tc):
    """The model's own config (GPT2's keys, or a Hugging Face Llama config.json) from a training config.
    <|endoftext|>, the tokenizer's last id, is both BOS and EOS; no BOS is prepended to a text (as GPT-2)."""
    eot = tc["vocab_size"] - 1
    if is_llama(tc):
        return {
            "model_type": "llama",
            "vocab_size": tc["vocab_size"],
            "hidden_size": tc["n_embd"],
            "intermediate_size": tc["intermediate_size"],
            "num_hidden_layers": tc["n_layer"],
            "num_attention_heads": tc["n_head"],
            "num_key_value_heads": tc["n_kv_head"],
            "head_dim": tc["n_embd"] // tc["n_head"],
            "max_position_embeddings": tc["n_positions"],
            "rms_norm_eps": 1e-5,
            "rope_theta": float(tc.get("rope_theta", 10000.0)),
            "tie_word_embeddings": True,
            "bos_token_id": eot,
            "eos_token_id": eot,
        }
    cfg = {k: tc[k] for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")}
    cfg["layer_norm_epsilon"] = 1e-5
    cfg["bos_token_id"] = cfg["eos_token_id"] = eot
    return cfg


def build(cfg):
    """A freshly initialised model of a model_cfg(). The Llama family is initialised as transformers'
    LlamaPreTrainedModel._init_weights does (every matrix normal with std initializer_range = 0.02, the
    norms' gains 1); nn.Linear's own default (uniform, std 1/sqrt(3 fan_in)) would start the 128-wide
    matrices 2.5x larger. GPT-2 keeps gpt2_torch's own initialisation."""
    if cfg.get("model_type") == "llama":
        m = LlamaFamily(cfg)
        for mod in m.modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                nn.init.normal_(mod.weight, std=0.02)
        return m
    return GPT2(cfg)


def load_hf(folder, filename="model.safetensors"):
    """An exported folder's model (config.json's model_type says which), in float32."""
    with open(os.path.join(folder, "config.json")) as f:
        mt = json.load(f).get("model_type")
    return (LlamaFamily if mt in ("llama", "qwen3") else GPT2).load_hf(folder, filename)


def shape(model):
    """cfg_shape() of a built model (GPT2.cfg holds GPT-2's keys, LlamaFamily.cfg the normalized config.json)."""
    return cfg_shape(model.cfg)


def layers_heads(model):
    """(layers, query heads per layer): the shape of every role-score table."""
    s = shape(model)
    return s["n_layer"], s["n_head"]


def cfg_shape(cfg):
    """{arch, n_layer, n_head (query heads), n_kv_head, n_embd, head_size, n_positions, vocab_size, and for
    the Llama family intermediate_size} of a model_cfg() or a built model's cfg."""
    if cfg.get("model_type") in ("llama", "qwen3"):
        return {
            "arch": "llama",
            "n_layer": cfg["num_hidden_layers"],
            "n_head": cfg["num_attention_heads"],
            "n_kv_head": cfg["num_key_value_heads"],
            "n_embd": cfg["hidden_size"],
            "head_size": cfg["head_dim"],
            "n_positions": cfg["max_position_embeddings"],
            "vocab_size": cfg["vocab_size"],
            "intermediate_size": cfg["intermediate_size"],
        }
    return {
        "arch": "gpt2",
        "n_layer": cfg["n_layer"],
        "n_head": cfg["n_head"],
        "n_kv_head": cfg["n_head"],
        "n_embd": cfg["n_embd"],
        "head_size": cfg["n_embd"] // cfg["n_head"],
        "n_positions": cfg["n_positions"],
        "vocab_size": cfg["vocab_size"],
    }


def kv_cache_bytes_per_token(cfg, bytes_per_value=4):
    """A key and a value per key/value head per layer: what each generated token adds to the cache."""
    s = cfg_shape(cfg)
    return 2 * s["n_layer"] * s["n_kv_head"] * s["head_size"] * bytes_per_value
