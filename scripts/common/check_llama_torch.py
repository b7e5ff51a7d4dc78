#!/usr/bin/env python3
"""Self-checks of scripts/common/llama_torch.py, the float64 reference of the Llama-family fixtures.
Each check compares the reference with a second, independent way to compute the same thing; exits
non-zero on any failure. About a second:

    /usr/bin/python3 scripts/common/check_llama_torch.py

(a) attention, and the whole forward, against a hand-written loop over heads, positions and keys, with
    the rotation off (LlamaFamily.use_rope, a test hook) and on (pairs (i, i + HD/2) turned one by one)
(b) grouped-query attention (KV < H) equals the same model with each kv head's k_proj/v_proj rows repeated
    for its query heads (KV = H), for llama and for qwen3 (q_norm/k_norm)
(c) after the rotation q.k depends only on the position difference (plain and llama3-scaled frequencies)
(d) llama3 rope_scaling: inv_freq equals transformers' _compute_llama3_parameters written out in plain
    Python floats, for llama-mqa's config; on a config with all three bands, high frequencies are
    unchanged, low ones divided by factor, the rest in between
(e) a tied model saved untied (lm_head.weight = the embedding) gives the same logits; a tied file's
    stray lm_head.weight is ignored, as transformers ties it
(f) configs this reference does not implement are refused, not silently run as something else
"""

import math
import os
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from llama_torch import LlamaFamily, apply_rope, config_of, llama3_scaling, normalize_config  # noqa: E402
from llama_torch import rope_cos_sin, rope_inv_freq  # noqa: E402
from safetensors_io import load_file, save_file  # noqa: E402

FAILURES = []
SMALL = dict(rope_theta=10000.0, max_position_embeddings=32)  # the random models' rotation and context
# llama-mqa's rotation (tests/fixtures/models/llama-mqa): one layer of its shape, Llama 3.1's scaling
MQA_ROPE = config_of("llama", 1, 20, 4, 1, 6, 8, 8, rope_theta=500000.0, rope_scaling=llama3_scaling(8.0, 8))


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def random_model(cfg, seed):
    """float64 model with every parameter random (norm gains around 1)."""
    torch.manual_seed(seed)
    m = LlamaFamily(cfg).double().eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, dtype=torch.float64))
            else:
                p.copy_(torch.randn(p.shape, dtype=torch.float64) / math.sqrt(p.shape[-1]) * 1.5)
    return m


def maxdiff(a, b):
    return (a - b).abs().max().item()


# ---- (a) a naive forward ------------------------------------------------------------------------
def naive_forward(m, ids, rope):
    """The whole model as loops over scalars where attention is concerned; returns (logits (T,V),
    att [layer][head][i][j] as Python floats)."""
    c = m.cfg
    H, KV, HD, eps = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["rms_norm_eps"]
    G = H // KV
    T = len(ids)

    def rms(v, w):  # v (C,) or (HD,)
        return w * v / math.sqrt(sum(float(t) ** 2 for t in v) / len(v) + eps)

    def rotate(v, t):  # v (HD,): pair (i, i + HD/2) turned by t * theta^(-2i/HD)
        if not rope:
            return v
        h = HD // 2
        out = v.clone()
        for i in range(h):
            a = t * c["rope_theta"] ** (-2.0 * i / HD)
            out[i] = v[i] * math.cos(a) - v[i + h] * math.sin(a)
            out[i + h] = v[i + h] * math.cos(a) + v[i] * math.sin(a)
        return out

    W = m.state_dict()
    x = [W["model.embed_tokens.weight"][i].clone() for i in ids]
    atts = []
    for li in range(c["num_hidden_layers"]):
        p = f"model.layers.{li}."
        a = [rms(x[t], W[p + "input_layernorm.weight"]) for t in range(T)]
        q = [W[p + "self_attn.q_proj.weight"] @ a[t] for t in range(T)]
        k = [W[p + "self_attn.k_proj.weight"] @ a[t] for t in range(T)]
        v = [W[p + "self_attn.v_proj.weight"] @ a[t] for t in range(T)]
        layer_att = []
        heads_out = [torch.zeros(H * HD, dtype=torch.float64) for _ in range(T)]
        for h in range(H):
            g = h // G
            qh = [q[t][h * HD : (h + 1) * HD] for t in range(T)]
            kh = [k[t][g * HD : (g + 1) * HD] for t in range(T)]
            if c["model_type"] == "qwen3":  # each head's q and k normalized over HD, then rotated
                qh = [rms(u, W[p + "self_attn.q_norm.weight"]) for u in qh]
                kh = [rms(u, W[p + "self_attn.k_norm.weight"]) for u in kh]
            qh = [rotate(qh[t], t) for t in range(T)]
            kh = [rotate(kh[t], t) for t in range(T)]
            vh = [v[t][g * HD : (g + 1) * HD] for t in range(T)]
            rows = []
            for i in range(T):
                s = [sum(float(qh[i][d]) * float(kh[j][d]) for d in range(HD)) / math.sqrt(HD) for j in range(i + 1)]
                mx = max(s)
                e = [math.exp(u - mx) for u in s]
                tot = sum(e)
                p_row = [u / tot for u in e]
                rows.append(p_row + [0.0] * (T - i - 1))
                zi = sum(p_row[j] * vh[j] for j in range(i + 1))
                heads_out[i][h * HD : (h + 1) * HD] = zi
            layer_att.append(rows)
        atts.append(layer_att)
        x = [x[t] + W[p + "self_attn.o_proj.weight"] @ heads_out[t] for t in range(T)]
        for t in range(T):
            b = rms(x[t], W[p + "post_attention_layernorm.weight"])
            gate = W[p + "mlp.gate_proj.weight"] @ b
            up = W[p + "mlp.up_proj.weight"] @ b
            act = torch.tensor([float(u) / (1.0 + math.exp(-float(u))) for u in gate], dtype=torch.float64) * up
            x[t] = x[t] + W[p + "mlp.down_proj.weight"] @ act
    out_w = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
    logits = torch.stack([out_w @ rms(x[t], W["model.norm.weight"]) for t in range(T)])
    return logits, atts


def check_against_naive(m, ids, rope, what):
    """m's attention and logits on ids against naive_forward's."""
    with torch.no_grad():
        logits, d = m(torch.tensor([ids]), want_details=True)
    ref_logits, ref_att = naive_forward(m, ids, rope)
    da = maxdiff(torch.stack([a[0] for a in d["att"]]), torch.tensor(ref_att, dtype=torch.float64))
    dl = maxdiff(logits[0], ref_logits)
    check(da < 1e-12 and dl < 1e-11, f"{what}: attention {da:.1e}, logits {dl:.1e}")


def check_naive():
    cfg = config_of("llama", 2, 12, 3, 3, None, 20, 40, rms_norm_eps=1e-5, tie_word_embeddings=False, **SMALL)
    m = random_model(cfg, 11)
    assert m.cfg["head_dim"] == 4  # C / H when config.json has no head_dim
    ids = [3, 17, 5, 5, 39, 0, 22, 8, 11]
    for rope in (False, True):
        m.use_rope = rope
        check_against_naive(
            m, ids, rope, f"(a) naive per-head loop, rotation {'on (pairs i, i+HD/2)' if rope else 'off (test hook)'}"
        )
    m.use_rope = True
    # a GQA model against the naive loop too (query head h reads kv head h // G)
    cfg_g = dict(cfg, num_attention_heads=4, num_key_value_heads=2, head_dim=6)
    check_against_naive(random_model(cfg_g, 12), ids, True, "(a) naive loop, GQA H 4 / KV 2, head_dim 6 != C/H")
    # qwen3: q_norm / k_norm per head, before the rotation (their gains are per dimension, so the order matters)
    mq = random_model(dict(cfg_g, model_type="qwen3", head_dim=8, tie_word_embeddings=True), 13)
    check_against_naive(mq, ids, True, "(a) naive loop, qwen3 (q_norm/k_norm, then rotation), tied")


# ---- (b) GQA = repeated kv heads ----------------------------------------------------------------
def kv_per_query_head(m, cfg, kv_of):
    """cfg's model with KV = H whose query head h reads m's kv head kv_of(h): m's weights, with each
    k_proj/v_proj the HD rows of kv head kv_of(h) for h = 0 .. H-1."""
    H, HD = m.cfg["num_attention_heads"], m.cfg["head_dim"]
    full = LlamaFamily(dict(cfg, num_key_value_heads=H)).double().eval()
    sd = {}
    for k, v in m.state_dict().items():
        if k.endswith("k_proj.weight") or k.endswith("v_proj.weight"):
            v = torch.cat([v[kv_of(h) * HD : (kv_of(h) + 1) * HD] for h in range(H)])
        sd[k] = v
    full.load_state_dict(sd)
    return full


def check_gqa():
    for mt in ("llama", "qwen3"):
        cfg = config_of(mt, 2, 16, 6, 2, 8, 24, 50, rms_norm_eps=1e-6, tie_word_embeddings=True, **SMALL)
        m = random_model(cfg, 21)
        H, KV = 6, 2
        G = H // KV
        full = kv_per_query_head(m, cfg, lambda h: h // G)  # kv head g's rows once for each of its G query heads
        ids = torch.tensor([[1, 9, 44, 2, 2, 30, 7, 18, 25, 3, 49]])
        with torch.no_grad():
            l1, d1 = m(ids, want_details=True)
            l2, d2 = full(ids, want_details=True)
        dl = maxdiff(l1, l2)
        da = max(maxdiff(a, b) for a, b in zip(d1["att"], d2["att"]))
        dc = max(maxdiff(a, b) for a, b in zip(d1["contrib"], d2["contrib"]))
        check(
            dl < 1e-12 and da < 1e-13 and dc < 1e-12,
            f"(b) {mt}: KV 2 < H 6 equals KV = H with repeated k/v rows: "
            f"logits {dl:.1e}, attention {da:.1e}, contrib {dc:.1e}",
        )
        # and the grouping is h // G, not h % KV: the interleaved repeat gives other logits
        wrong = kv_per_query_head(m, cfg, lambda h: h % KV)
        with torch.no_grad():
            dw = maxdiff(wrong(ids), l1)
        check(dw > 1e-3, f"(b) {mt}: the grouping h % KV instead of h // G would differ by {dw:.2g}")


# ---- (c) relative position ----------------------------------------------------------------------
def check_relative():
    g = torch.Generator().manual_seed(31)
    configs = {
        "plain theta 1e4": normalize_config(config_of("llama", 1, 8, 1, None, 10, 8, 8, rope_theta=10000.0)),
        "llama-mqa's llama3 scaling": normalize_config(MQA_ROPE),
    }
    for label, cfg in configs.items():
        HD = cfg["head_dim"]
        cos, sin = rope_cos_sin(rope_inv_freq(cfg), 64)
        worst, moved = 0.0, 0.0
        for _ in range(20):
            q = torch.randn(HD, generator=g, dtype=torch.float64)
            k = torch.randn(HD, generator=g, dtype=torch.float64)

            def dot(i, j):
                qi = apply_rope(q.view(1, 1, 1, HD), cos[i : i + 1], sin[i : i + 1]).view(-1)
                kj = apply_rope(k.view(1, 1, 1, HD), cos[j : j + 1], sin[j : j + 1]).view(-1)
                return float(qi @ kj)

            for i, j in ((3, 1), (10, 0), (7, 7), (0, 12)):
                for d in (1, 5, 17, 31):
                    worst = max(worst, abs(dot(i, j) - dot(i + d, j + d)))
                    moved = max(moved, abs(dot(i, j) - dot(i + d, j)))
        check(
            worst < 1e-12 and moved > 1e-2,
            f"(c) {label}: q.k at (i, j) and (i+d, j+d) agree to {worst:.1e} "
            f"(moving one side changes it by {moved:.2g})",
        )


# ---- (d) llama3 rope scaling --------------------------------------------------------------------
def llama3_plain(theta, hd, factor, low, high, old_len):
    """transformers' _compute_llama3_parameters, one frequency at a time in Python floats."""
    out = []
    for i in range(0, hd, 2):
        f = 1.0 / (theta ** (i / hd))
        wavelen = 2 * math.pi / f
        if wavelen < old_len / high:
            out.append(f)
        elif wavelen > old_len / low:
            out.append(f / factor)
        else:
            s = (old_len / wavelen - low) / (high - low)
            out.append((1 - s) * f / factor + s * f)
    return out


def check_llama3():
    base = MQA_ROPE
    got = rope_inv_freq(normalize_config(base)).tolist()
    want = llama3_plain(500000.0, 6, 8.0, 1.0, 4.0, 8)
    rel = max(abs(a - b) / b for a, b in zip(got, want))
    check(rel < 1e-15, f"(d) llama-mqa's inv_freq {[f'{x:.6g}' for x in got]} equals the plain formula (rel {rel:.1e})")
    # at original_max_position_embeddings 8 no frequency is high (that needs wavelength 2 pi / f < 8 / 4, f > pi,
    # and f <= 1): the fastest pair is in the smoothed band, the others are divided by 8
    plain = rope_inv_freq(normalize_config(dict(base, rope_scaling=None))).tolist()
    check(
        abs(got[0] - plain[0]) > 0.5 and all(abs(g * 8 - p) < 1e-18 + 1e-15 * p for g, p in zip(got[1:], plain[1:])),
        f"(d) llama-mqa: pair 0 smoothed ({plain[0]:.3g} -> {got[0]:.4g}), pairs 1.. divided by 8",
    )

    # a config with all three bands: theta 1e4, HD 32, original 64 (high band: wavelength < 16, low: > 64)
    cfg = normalize_config(
        dict(
            base,
            hidden_size=32,
            num_attention_heads=1,
            num_key_value_heads=1,
            head_dim=32,
            rope_theta=10000.0,
            rope_scaling=llama3_scaling(8.0, 64),
        )
    )
    got = rope_inv_freq(cfg).tolist()
    plain = rope_inv_freq(dict(cfg, rope_scaling=None)).tolist()
    want = llama3_plain(10000.0, 32, 8.0, 1.0, 4.0, 64)
    high = [i for i, f in enumerate(plain) if 2 * math.pi / f < 16]
    low = [i for i, f in enumerate(plain) if 2 * math.pi / f > 64]
    mid = [i for i in range(len(plain)) if i not in high and i not in low]
    ok = (
        high
        and low
        and mid
        and all(got[i] == plain[i] for i in high)
        and all(got[i] == plain[i] / 8 for i in low)
        and all(plain[i] / 8 < got[i] < plain[i] for i in mid)
        and max(abs(a - b) / b for a, b in zip(got, want)) < 1e-15
    )
    check(
        ok,
        f"(d) three bands (theta 1e4, HD 32, original 64): {len(high)} high unchanged, {len(mid)} smoothed, "
        f"{len(low)} low divided by 8, all equal to the plain formula",
    )


# ---- (e) tied vs untied -------------------------------------------------------------------------
def check_tied():
    for mt in ("llama", "qwen3"):
        cfg = config_of(mt, 2, 12, 4, 2, 6, 20, 60, rms_norm_eps=1e-6, tie_word_embeddings=True, **SMALL)
        m = random_model(cfg, 41).float()
        ids = torch.tensor([[5, 59, 0, 12, 12, 33, 7]])
        with tempfile.TemporaryDirectory() as d:
            tied_dir, untied_dir = os.path.join(d, "tied"), os.path.join(d, "untied")
            m.save_hf(tied_dir)
            u = LlamaFamily(dict(m.hf_config(), tie_word_embeddings=False))
            sd = m.state_dict()
            sd["lm_head.weight"] = sd["model.embed_tokens.weight"].clone()
            u.load_state_dict(sd)
            u.save_hf(untied_dir)
            names_t = set(load_file(os.path.join(tied_dir, "model.safetensors")))
            names_u = set(load_file(os.path.join(untied_dir, "model.safetensors")))
            a = LlamaFamily.load_hf(tied_dir).double()
            b = LlamaFamily.load_hf(untied_dir).double()
            with torch.no_grad():
                dl = maxdiff(a(ids), b(ids))
            check(
                "lm_head.weight" not in names_t and names_u - names_t == {"lm_head.weight"} and dl == 0.0,
                f"(e) {mt}: tied (no lm_head.weight) and untied (lm_head = embedding) give the same logits ({dl:g})",
            )
            # a tied file that carries lm_head.weight anyway: ignored
            t2 = load_file(os.path.join(tied_dir, "model.safetensors"))
            t2["lm_head.weight"] = torch.zeros_like(t2["model.embed_tokens.weight"])
            save_file(t2, os.path.join(tied_dir, "model.safetensors"))
            c = LlamaFamily.load_hf(tied_dir).double()
            with torch.no_grad():
                dl2 = maxdiff(c(ids), b(ids))
            check(dl2 == 0.0, f"(e) {mt}: a tied file's stray lm_head.weight is ignored ({dl2:g})")


# ---- (f) refusals -------------------------------------------------------------------------------
def check_refusals():
    base = config_of("llama", 1, 10, 2, None, None, 8, 8)
    bad = {
        "odd head_dim (transformers' rotary needs it even)": dict(base),  # 10 / 2 = 5
        "attention_bias": dict(base, head_dim=4, attention_bias=True),
        "mlp_bias": dict(base, head_dim=4, mlp_bias=True),
        "hidden_act gelu": dict(base, head_dim=4, hidden_act="gelu"),
        "rope_scaling yarn": dict(base, head_dim=4, rope_scaling={"rope_type": "yarn", "factor": 4.0}),
        "H % KV != 0": dict(base, head_dim=4, num_key_value_heads=3),
        "model_type mistral": dict(base, head_dim=4, model_type="mistral"),
        "qwen3 sliding window": dict(base, head_dim=4, model_type="qwen3", use_sliding_window=True),
    }
    for what, cfg in bad.items():
        try:
            normalize_config(cfg)
            check(False, f"(f) refuses {what}")
        except ValueError:
            check(True, f"(f) refuses {what}")
    # transformers' defaults by model_type: Qwen3Config's head_dim is 128 and num_key_value_heads 32
    q = normalize_config(dict(base, model_type="qwen3", num_attention_heads=32))
    l_ = normalize_config(dict(base, head_dim=4))
    check(
        q["head_dim"] == 128 and q["num_key_value_heads"] == 32 and l_["num_key_value_heads"] == 2,
        "(f) defaults: qwen3 head_dim 128 / KV 32, llama KV = H",
    )


def main():
    torch.set_num_threads(1)
    check_naive()
    check_gqa()
    check_relative()
    check_llama3()
    check_tied()
    check_refusals()
    if FAILURES:
        print(f"{len(FAILURES)} failed")
        sys.exit(1)
    print("all llama_torch checks passed")


if __name__ == "__main__":
    main()
