"""Native engine against PyTorch on a Llama-family checkpoint (grouped-query attention, rotary
positions, SwiGLU), both on each count of --threads (default 1,2), side by side in one run.

1. Writes a random checkpoint of SmolLM2-135M's exact shape with bench/make_llama_small.py unless
   --model already holds one (--quick: the test fixture tests/fixtures/models/llama-gqa).
2. Correctness: `headscope run --json` on a short text against scripts/common/llama_torch.py on the
   same file (float32, the BF16 weights widened exactly as the engine widens them): last-position
   logits and every layer's and query head's attention, within the tolerances stated below. Exits 1
   if they are exceeded.
3. Speed, interleaved per T and thread count (both see the same machine load): `headscope bench`
   (median full forward, median one-token incremental update: a typed token) and PyTorch computing
   the same outputs (every attention map, last-position logits; torch.set_num_threads(N)).
Usage: /usr/bin/python3 bench/llama_vs_torch.py [--cli build/native-release/headscope]
         [--model .cache/bench/smollm2-135m] [--tokens 64,256] [--threads 1,2] [--repeat 5] [--quick]
         [--json OUT] [--markdown OUT]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import torch  # noqa: E402
from llama_torch import LlamaFamily, rope_cos_sin, rope_inv_freq  # noqa: E402

TEXT = ("Attention heads in a transformer each compute a weighted average of the value vectors of "
        "earlier positions; some attend to the previous token.")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "models", "llama-gqa")


@torch.no_grad()
def torch_forward(model, ids):
    """The outputs the engine returns: every query head's attention (L x (NH, T, T)) and the last
    position's logits (V), without the other positions' logits (the engine does not compute them)."""
    T = ids.shape[0]
    w = model.model.embed_tokens.weight
    cos, sin = rope_cos_sin(rope_inv_freq(model.cfg, w.dtype), T)
    x = model.model.embed_tokens(ids[None])
    atts = []
    for layer in model.model.layers:
        x, d = layer(x, cos, sin, None, want_details="att")
        atts.append(d["att"][0])
    logits = model.model.norm(x[0, -1]) @ model.output_weight().t()
    return logits, atts


def check_correctness(cli, model_dir, model):
    out = subprocess.run([cli, "run", "--model", model_dir, "--text", TEXT, "--json"], check=True,
                         capture_output=True, text=True).stdout
    r = json.loads(out)
    ids = torch.tensor(r["ids"])
    logits, atts = torch_forward(model, ids)
    d_logits = (torch.tensor(r["logits_last"]) - logits).abs().max().item()
    d_att = (torch.tensor(r["attention"]) - torch.stack(atts)).abs().max().item()
    # Tolerances, as bench/native_vs_torch.py's for GPT-2: float32 on both sides in different summation
    # orders; each dot product of length K carries up to about K u (u = 6e-8) of its sum of |terms|, for
    # the longest one (the MLP's down projection, K = intermediate_size), compounded over the layers:
    # K u L relative (SmolLM2's shape 2.8e-3, Llama 3.2-1B's 7.9e-3) of the largest |logit|. A worst
    # case: the measured differences are three orders below it. Attention probabilities lie in [0, 1]
    # from scores of size O(1): 1e-4 absolute is far above the scores' rounding through the softmax.
    c = model.cfg
    rel = max(c["intermediate_size"], c["hidden_size"]) * 6e-8 * c["num_hidden_layers"]
    tol_logits = max(rel, 1e-5) * max(1.0, logits.abs().max().item())
    tol_att = 1e-4
    ok = d_logits <= tol_logits and d_att <= tol_att
    print(f"correctness on {len(r['ids'])} tokens (of a {len(TEXT)}-character text): logits max |diff| {d_logits:.2e} (tolerance {tol_logits:.1e}), "
          f"attention max |diff| {d_att:.2e} (tolerance {tol_att:.0e}): {'ok' if ok else 'FAILED'}")
    return ok, d_logits, d_att, len(r["ids"])


def time_torch(model, T, repeat):
    V = model.cfg["vocab_size"]
    ids = torch.tensor([(i * 7919 + 13) % V for i in range(T)])  # the ids headscope bench runs
    torch_forward(model, ids)  # warm-up
    wall = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        torch_forward(model, ids)
        wall.append((time.perf_counter() - t0) * 1000)
    return statistics.median(wall)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "native-release", "headscope"))
    ap.add_argument("--model", default=os.path.join(ROOT, ".cache", "bench", "smollm2-135m"))
    ap.add_argument("--tokens", default="64,256")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="the test fixture llama-gqa, T = 16, 3 runs")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    if a.quick:
        a.model, a.tokens, a.repeat = FIXTURE, "16", 3
    torch.set_num_threads(1)
    if not os.path.exists(os.path.join(a.model, "model.safetensors")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_llama_small.py"), a.model,
                        "--shape", "smollm2-135m"], check=True)
    model = LlamaFamily.load_hf(a.model).eval()
    ok, d_logits, d_att, n_checked = check_correctness(a.cli, a.model, model)
    info = subprocess.run([a.cli, "info", "--model", a.model], check=True, capture_output=True, text=True).stdout
    rows = []
    for T in [int(t) for t in a.tokens.split(",")]:
        for n in [int(t) for t in a.threads.split(",")]:
            ours = json.loads(subprocess.run([a.cli, "bench", "--model", a.model, "--tokens", str(T), "--repeat",
                                              str(a.repeat), "--threads", str(n)], check=True, capture_output=True,
                                             text=True).stdout)
            if ours.get("threads") != n:
                raise SystemExit(f"headscope bench ran {ours.get('threads')} threads, asked for {n}")
            torch.set_num_threads(n)
            pt_ms = time_torch(model, T, a.repeat)
            rows.append({"tokens": T, "threads": n, "ours_ms": ours["forward_ms"], "torch_ms": pt_ms,
                         "speed_ratio": pt_ms / ours["forward_ms"], "incremental_ms": ours["incremental_ms"],
                         "weight_mb": ours["weight_mb"], "load_ms": ours["load_ms"], "peak_rss_mb": ours["peak_rss_mb"]})
            print(json.dumps(rows[-1]))
    c = model.cfg
    lines = [f"`headscope bench --threads N` against PyTorch {torch.__version__} with `torch.set_num_threads(N)`, "
             f"wall time, medians of {a.repeat}, interleaved per T and thread count. The incremental update is one "
             "token typed at the end of T (the engine's cache; PyTorch would rerun the whole text).", "",
             "| T | threads | headscope full forward ms | PyTorch ms | headscope / PyTorch speed | typed token (incremental) ms |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['tokens']} | {r['threads']} | {r['ours_ms']:.3g} | {r['torch_ms']:.3g} | "
                     f"{r['speed_ratio']:.2f}x | {r['incremental_ms']:.3g} |")
    lines += ["", f"Weights {rows[0]['weight_mb']:.0f} MB as the engine holds them (float32, packed), load "
              f"{rows[0]['load_ms']:.0f} ms, peak RSS {max(r['peak_rss_mb'] for r in rows):.0f} MB. `headscope info`:", "",
              "```", info.strip(), "```", "",
              f"Correctness on {n_checked} tokens of a {len(TEXT)}-character text: logits max |diff| {d_logits:.1e}, attention max |diff| "
              f"{d_att:.1e} ({'within' if ok else 'OUTSIDE'} the tolerances stated in bench/llama_vs_torch.py).",
              f"Load average during the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores."]
    print("\n" + "\n".join(lines))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("# A Llama-family shape, native engine against PyTorch\n\n"
                    f"Written by `bench/llama_vs_torch.py{' --quick' if a.quick else ''}` on "
                    f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
                    f"{os.path.relpath(a.model, ROOT)} ({c['model_type']}: {c['num_hidden_layers']} layers, "
                    f"{c['num_attention_heads']} query heads over {c['num_key_value_heads']} key/value heads of "
                    f"{c['head_dim']}, hidden {c['hidden_size']}, intermediate {c['intermediate_size']}, vocabulary "
                    f"{c['vocab_size']}; random weights: speed depends on the shape only).\n\n")
            f.write("\n".join(lines) + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"correct": ok, "logits_max_diff": d_logits, "attention_max_diff": d_att, "rows": rows}, f, indent=1)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
