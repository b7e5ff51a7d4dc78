"""Writes the folder transformers.js 4.3.1 reads for a GPT-2 checkpoint at its browser defaults
(device wasm, dtype q8), offline, for bench/harness/browser-gpt2-small.mjs's `tjs-q8` subject:

  config.json, generation_config.json   the checkpoint's config (model_type gpt2) with use_cache
  tokenizer.json, tokenizer_config.json GPT-2's byte-level BPE (vocab.json + merges.txt) in the
                                        Hugging Face tokenizers format transformers.js parses
  onnx/model_quantized.onnx             what dtype q8 loads: the decoder exported with torch.onnx,
                                        then quantized dynamically as transformers.js's
                                        scripts/quantize.py (mode q8) has onnxruntime do it

The graph's inputs and outputs are those of Optimum's GPT-2 export, the ones transformers.js's
decoder_forward feeds by name (it picks from session.inputNames): input_ids, attention_mask,
position_ids (transformers.js computes it from attention_mask when the graph declares it) and
past_key_values.N.key/value, (batch_size, n_head, past_sequence_length, head_size); it resolves
every symbolic dimension but batch_size to 0, so a first call gets an empty past. Outputs: logits at
every position (batch_size, sequence_length, vocab) and present.N.key/value.

The 8 bits are what onnxruntime's ONNXQuantizer writes in IntegerOps (dynamic) mode with the
options quantize.py passes for q8 on a model without Conv: weight_qType QInt8, activations QUInt8,
per_channel and reduce_range off, MatMulConstBOnly:
  - Gemm first becomes MatMul + Add (ONNXModel.replace_gemm_with_matmul in dynamic mode);
  - each MatMul whose B is a constant: DynamicQuantizeLinear on A (uint8, one scale and zero point
    per tensor, computed at run time), B as int8, symmetric per tensor (scale max|B| / 127, zero
    point 0), MatMulInteger, Cast to float, Mul by A's scale times B's;
  - each Gather from a constant table (the embeddings): the table as uint8 (asymmetric, as
    quantize_activation quantizes an initializer with the activation type), Gather, DequantizeLinear.
Attention's own products (q.k, att.v), the norms and GELU stay float32, as there.

Usage: /usr/bin/python3 bench/shapes/make_transformersjs_q8.py MODEL_DIR OUT_DIR
(Debian's python3-torch 1.13 and python3-onnx 1.12; nothing is downloaded.)
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from gpt2_torch import GPT2  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OPSET = 17  # as bench/shapes/export_onnx.py: LayerNormalization is one op from 17 on


class Decoder(nn.Module):
    """GPT2LMHeadModel's forward with a key/value cache, in the layout of Optimum's export. The blocks
    are scripts/common/gpt2_torch.py's; only attention is spelled out, to take the past."""

    def __init__(self, m):
        super().__init__()
        self.m = m
        # the tied LM head as a constant of its own, (C, V): the MatMul's B is then an initializer,
        # which is what the quantizer needs (Optimum's export folds the transpose the same way)
        self.register_buffer("lm_head", m.wte.weight.detach().t().contiguous())

    def forward(self, input_ids, attention_mask, position_ids, *past):
        m = self.m
        B, T = input_ids.shape
        x = m.wte(input_ids) + m.wpe(position_ids)
        presents = []
        for i, block in enumerate(m.h):
            attn = block.attn
            C = x.shape[-1]
            NH = attn.n_head
            HS = C // NH
            q, k, v = attn.c_attn(block.ln_1(x)).split(C, dim=2)
            q = q.view(B, T, NH, HS).transpose(1, 2)
            k = torch.cat([past[2 * i], k.view(B, T, NH, HS).transpose(1, 2)], dim=2)
            v = torch.cat([past[2 * i + 1], v.view(B, T, NH, HS).transpose(1, 2)], dim=2)
            presents += [k, v]
            S = k.shape[2]  # past + new
            att = (q @ k.transpose(-2, -1)) * (1.0 / HS**0.5)
            # query i sits at position S - T + i: it sees keys up to there that the mask keeps
            causal = torch.arange(S)[None, :] <= (torch.arange(T) + (S - T))[:, None]
            keep = causal[None, None] & (attention_mask[:, None, None, :] > 0)
            att = att.masked_fill(~keep, torch.finfo(torch.float32).min).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + attn.c_proj(y)
            x = x + block.mlp(block.ln_2(x))
        return (m.ln_f(x) @ self.lm_head, *presents)


def export(m, path):
    cfg = m.cfg
    L, NH, HS = cfg["n_layer"], cfg["n_head"], cfg["n_embd"] // cfg["n_head"]
    d = Decoder(m).eval()
    ids = torch.randint(0, cfg["vocab_size"], (1, 12))
    with torch.no_grad():
        # the wrapper against GPT2.forward: whole, and split into a past of 5 tokens and 7 new ones
        ref = m(ids)
        empty = [torch.zeros(1, NH, 0, HS)] * (2 * L)
        whole = d(ids, torch.ones(1, 12, dtype=torch.int64), torch.arange(12)[None], *empty)
        assert torch.allclose(whole[0], ref, atol=1e-4), "the decoder differs from GPT2.forward"
        first = d(ids[:, :5], torch.ones(1, 5, dtype=torch.int64), torch.arange(5)[None], *empty)
        rest = d(ids[:, 5:], torch.ones(1, 12, dtype=torch.int64), torch.arange(5, 12)[None], *first[1:])
        assert torch.allclose(rest[0], ref[:, 5:], atol=1e-4), "the decoder's cache differs from a whole run"
        # traced with a past of 5 (a zero-length past traces shapes badly), every length dynamic
        names_in = ["input_ids", "attention_mask", "position_ids"]
        names_out = ["logits"]
        axes = {
            "input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "past_sequence_length + sequence_length"},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size", 1: "sequence_length"},
        }
        for i in range(L):
            for kv in ("key", "value"):
                names_in.append(f"past_key_values.{i}.{kv}")
                names_out.append(f"present.{i}.{kv}")
                axes[names_in[-1]] = {0: "batch_size", 2: "past_sequence_length"}
                axes[names_out[-1]] = {0: "batch_size", 2: "past_sequence_length + sequence_length"}
        args = (ids[:, 5:], torch.ones(1, 12, dtype=torch.int64), torch.arange(5, 12)[None], *first[1:])
        torch.onnx.export(
            d,
            args,
            path,
            input_names=names_in,
            output_names=names_out,
            dynamic_axes=axes,
            opset_version=OPSET,
        )


# ---- onnxruntime's dynamic quantization (IntegerOps), spelled out with onnx.helper -----------------


def scale_zero_point(rmin, rmax, qmin, qmax, symmetric):
    """quant_utils.compute_scale_zp: the range is widened to hold 0; symmetric makes it +-max|r|."""
    rmin, rmax = min(rmin, 0.0), max(rmax, 0.0)
    if symmetric:
        rmax = max(abs(rmin), abs(rmax))
        rmin = -rmax
    scale = np.float32((rmax - rmin) / float(qmax - qmin))
    if scale < np.finfo(np.float32).tiny:  # an all-zero tensor: quant_utils's rule
        return np.float32(1.0), 0
    return scale, int(round(qmin - rmin / scale))


def quantize_array(w, dtype):
    """quant_utils.quantize_data per tensor: int8 symmetric in [-127, 127] (weights), uint8
    asymmetric in [0, 255] (an initializer quantized with the activation type); numpy's round
    (half to even), as there."""
    if not np.all(np.isfinite(w)):
        raise ValueError("a weight that is not finite cannot be quantized")
    if dtype == np.int8:
        scale, zp = scale_zero_point(float(w.min()), float(w.max()), -127, 127, True)
        lo, hi = -127, 127
    else:
        scale, zp = scale_zero_point(float(w.min()), float(w.max()), 0, 255, False)
        lo, hi = 0, 255
    q = np.clip((w.astype(np.float32) / scale).round() + zp, lo, hi).astype(dtype)
    return q, scale, np.array(zp, dtype=dtype)


def quantize_dynamic(model):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    dropped = set()
    used = {}  # how many nodes read each initializer: a float one is dropped only when none does

    def add_const(name, array):
        inits[name] = numpy_helper.from_array(np.asarray(array), name)
        return name

    def const_of(name):
        t = inits.get(name)
        return None if t is None or t.data_type != TensorProto.FLOAT else numpy_helper.to_array(t)

    # (1) Gemm -> MatMul + Add, as ONNXModel.replace_gemm_with_matmul (alpha = beta = 1, no transA)
    nodes = []
    for n in g.node:
        a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
        if n.op_type == "Gemm" and a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0 and not a.get("transA"):
            b = n.input[1]
            if a.get("transB"):
                w = const_of(b)
                if w is None:
                    nodes.append(n)
                    continue
                b = add_const(b + "_transposed", w.T.copy())
            mm = n.output[0] + "_MatMul" if len(n.input) > 2 else n.output[0]
            nodes.append(helper.make_node("MatMul", [n.input[0], b], [mm], n.name + "_MatMul"))
            if len(n.input) > 2:
                nodes.append(helper.make_node("Add", [mm, n.input[2]], [n.output[0]], n.name + "_Add"))
        else:
            nodes.append(n)

    # (2) MatMul with a constant B and Gather from a constant table
    out, quantized_act, quantized_w = [], {}, {}

    def weight(name, dtype):
        if name not in quantized_w:
            q, scale, zp = quantize_array(const_of(name), dtype)
            quantized_w[name] = (
                add_const(name + "_quantized", q),
                add_const(name + "_scale", scale),
                add_const(name + "_zero_point", zp),
            )
            dropped.add(name)
        return quantized_w[name]

    for n in nodes:
        if (
            n.op_type == "MatMul"
            and n.input[1] in inits
            and len(inits[n.input[1]].dims) == 2
            and const_of(n.input[1]) is not None
        ):
            x = n.input[0]
            if x not in quantized_act:  # one DynamicQuantizeLinear per activation, shared
                quantized_act[x] = (x + "_quantized", x + "_scale", x + "_zero_point")
                out.append(
                    helper.make_node("DynamicQuantizeLinear", [x], list(quantized_act[x]), x + "_QuantizeLinear")
                )
            xq, xs, xz = quantized_act[x]
            wq, ws, wz = weight(n.input[1], np.int8)
            base = n.output[0]
            out += [
                helper.make_node("MatMulInteger", [xq, wq, xz, wz], [base + "_output_quantized"], n.name + "_quant"),
                helper.make_node(
                    "Cast", [base + "_output_quantized"], [base + "_cast"], base + "_cast_node", to=TensorProto.FLOAT
                ),
                helper.make_node("Mul", [xs, ws], [base + "_scales"], n.name + "_quant_scales_mul"),
                helper.make_node("Mul", [base + "_cast", base + "_scales"], [base], n.name + "_quant_output_scale_mul"),
            ]
        elif n.op_type == "Gather" and const_of(n.input[0]) is not None:
            tq, ts, tz = weight(n.input[0], np.uint8)
            base = n.output[0]
            out += [
                helper.make_node("Gather", [tq, n.input[1]], [base + "_quantized"], n.name, **_attrs(n)),
                helper.make_node("DequantizeLinear", [base + "_quantized", ts, tz], [base], base + "_DequantizeLinear"),
            ]
        else:
            out.append(n)
    for n in out:
        for i in n.input:
            used[i] = used.get(i, 0) + 1
    keep = [t for t in inits.values() if t.name in used]
    if any(t.name in dropped for t in keep):  # a quantized table still read as float somewhere
        print("note: kept float copies of", sorted(t.name for t in keep if t.name in dropped))
    del g.node[:]
    g.node.extend(out)
    del g.initializer[:]
    g.initializer.extend(keep)
    return len(quantized_w)


def _attrs(n):
    return {x.name: helper.get_attribute_value(x) for x in n.attribute}


# ---- the tokenizer and config files ----------------------------------------------------------------


def tokenizer_files(model_dir, out, cfg):
    vocab = json.load(open(os.path.join(model_dir, "vocab.json"), encoding="utf-8"))
    with open(os.path.join(model_dir, "merges.txt"), encoding="utf-8") as f:
        merges = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#version")]
    eos = "<|endoftext|>"
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": vocab[eos],
                "content": eos,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": True,
                "special": True,
            }
        ],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": {**byte_level, "trim_offsets": False},
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    json.dump(tok, open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False)
    json.dump(
        {
            "tokenizer_class": "GPT2Tokenizer",
            "model_max_length": cfg["n_positions"],
            "add_prefix_space": False,
            "bos_token": eos,
            "eos_token": eos,
            "unk_token": eos,
        },
        open(os.path.join(out, "tokenizer_config.json"), "w"),
        indent=2,
    )


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make_transformersjs_q8.py MODEL_DIR OUT_DIR")
    model_dir, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    m = GPT2.load_hf(model_dir).eval()
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    if cfg.get("model_type") != "gpt2":
        sys.exit(f"{model_dir}: model_type {cfg.get('model_type')!r}, not gpt2")
    json.dump({**cfg, "use_cache": True}, open(os.path.join(out, "config.json"), "w"), indent=2)
    gen = {k: cfg[k] for k in ("bos_token_id", "eos_token_id") if k in cfg}
    json.dump(gen, open(os.path.join(out, "generation_config.json"), "w"), indent=2)
    tokenizer_files(model_dir, out, cfg)

    float_path = os.path.join(out, "onnx", "model_float.onnx.tmp")
    export(m, float_path)
    model = onnx.load(float_path)
    os.remove(float_path)
    n = quantize_dynamic(model)
    onnx.checker.check_model(model)
    ops = sorted({node.op_type for node in model.graph.node})
    path = os.path.join(out, "onnx", "model_quantized.onnx")
    tmp = path + ".tmp"  # written whole, then renamed: a stopped run leaves no half file behind
    onnx.save(model, tmp)
    os.replace(tmp, path)
    print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB, {n} tensors in 8 bits; ops {', '.join(ops)}")


if __name__ == "__main__":
    main()
