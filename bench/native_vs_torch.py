"""Native engine against PyTorch (1 thread) on a random checkpoint of GPT-2 small's exact shape.

1. Writes the checkpoint with bench/make_gpt2_small.py unless MODEL_DIR already holds one.
2. Correctness: `headscope run --json` on a short text against scripts/common/gpt2_torch.py on the
   same file: last-position logits and every layer's and head's attention, within the tolerances
   stated below. Exits 1 if they are exceeded.
3. Speed, side by side in this one run, interleaved per T (so both see the same machine load):
   `headscope bench` (median full forward, median one-token incremental update, load time, peak
   RSS) and PyTorch computing the same outputs (every attention map, last-position logits).
   Prints a table and writes the rows as JSON.
Usage: /usr/bin/python3 bench/native_vs_torch.py [--cli build/native-release/headscope]
         [--model build/gpt2-small] [--tokens 64,256,1024] [--repeat 5] [--json OUT]
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from gpt2_torch import GPT2, gelu_new  # noqa: E402

TEXT = ("Attention heads in a transformer each compute a weighted average of the value vectors of "
        "earlier positions; some attend to the previous token.")


@torch.no_grad()
def torch_forward(model, ids):
    """The outputs the engine returns: every attention map (L x (NH, T, T)) and the last logits (V)."""
    T = ids.shape[0]
    C = model.cfg["n_embd"]
    NH = model.cfg["n_head"]
    HS = C // NH
    x = model.wte(ids) + model.wpe(torch.arange(T))
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    atts = []
    for b in model.h:
        q, k, v = b.attn.c_attn(b.ln_1(x)).split(C, dim=1)
        q = q.view(T, NH, HS).transpose(0, 1)
        k = k.view(T, NH, HS).transpose(0, 1)
        v = v.view(T, NH, HS).transpose(0, 1)
        att = ((q @ k.transpose(-2, -1)) / math.sqrt(HS)).masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        atts.append(att)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        x = x + b.attn.c_proj(y)
        x = x + b.mlp.c_proj(gelu_new(b.mlp.c_fc(b.ln_2(x))))
    logits = model.ln_f(x[-1]) @ model.wte.weight.t()
    return logits, atts


def check_correctness(cli, model_dir, model):
    out = subprocess.run([cli, "run", "--model", model_dir, "--text", TEXT, "--json"], check=True,
                         capture_output=True, text=True).stdout
    r = json.loads(out)
    ids = torch.tensor(r["ids"])
    logits, atts = torch_forward(model, ids)
    ours_logits = torch.tensor(r["logits_last"])
    ours_att = torch.tensor(r["attention"])  # (L, NH, T, T)
    d_logits = (ours_logits - logits).abs().max().item()
    d_att = (ours_att - torch.stack(atts)).abs().max().item()
    # Tolerances. Both sides compute in float32 with different summation orders (and FMA on our
    # side): each dot product of length K carries a relative error up to about K u (u = 6e-8), which
    # for the longest one (K = 3072) is 1.8e-4 of its sum of |terms|; 12 residual layers compound
    # this to about 2e-3 relative. The logits of this random model are O(1e-1 .. 1), so 2e-3 times
    # the largest |logit| bounds them; attention probabilities lie in [0, 1] and come from scores
    # of size O(1): 1e-4 absolute is two orders above what the scores' relative 1e-6 error gives
    # through the softmax, below any visible difference.
    tol_logits = 2e-3 * max(1.0, logits.abs().max().item())
    tol_att = 1e-4
    ok = d_logits <= tol_logits and d_att <= tol_att
    print(f"correctness on {len(r['ids'])} tokens: logits max |diff| {d_logits:.2e} (tolerance {tol_logits:.1e}), "
          f"attention max |diff| {d_att:.2e} (tolerance {tol_att:.0e}): {'ok' if ok else 'FAILED'}")
    return ok, d_logits, d_att


def time_torch(model, T, repeat, vocab):
    ids = torch.tensor([(i * 7919 + 13) % vocab for i in range(T)])  # the same ids as headscope bench
    torch_forward(model, ids)  # warm-up
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        torch_forward(model, ids)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "native-release", "headscope"))
    ap.add_argument("--model", default=os.path.join(ROOT, "build", "gpt2-small"))
    ap.add_argument("--tokens", default="64,256,1024")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if not os.path.exists(os.path.join(a.model, "model.safetensors")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_gpt2_small.py"), a.model], check=True)
    model = GPT2.load_hf(a.model).eval()
    ok, d_logits, d_att = check_correctness(a.cli, a.model, model)
    torch_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = []
    for T in [int(t) for t in a.tokens.split(",")]:
        ours = json.loads(subprocess.run([a.cli, "bench", "--model", a.model, "--tokens", str(T), "--repeat",
                                          str(a.repeat)], check=True, capture_output=True, text=True).stdout)
        pt_ms, pt_cpu_ms = time_torch(model, T, a.repeat, model.cfg["vocab_size"])
        rows.append({"tokens": T, "ours": ours, "torch_ms": pt_ms, "torch_cpu_ms": pt_cpu_ms,
                     "speed_ratio": pt_ms / ours["forward_ms"], "cpu_speed_ratio": pt_cpu_ms / ours["forward_cpu_ms"]})
    base = rows[0]
    print(f"\nsimd {rows[0]['ours']['simd']}, torch {torch.__version__} with 1 thread; medians of {a.repeat}; "
          "wall time / CPU time (the cores are shared: CPU time leaves out waiting for a core)")
    print("| T | headscope full forward ms | PyTorch ms | headscope / PyTorch speed | headscope ms per token"
          " (vs first T) | PyTorch ms per token | incremental update ms | load ms | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        o = r["ours"]
        per_tok = o["forward_ms"] / r["tokens"]
        per_tok_cpu = o["forward_cpu_ms"] / r["tokens"]
        rel = per_tok / (base["ours"]["forward_ms"] / base["tokens"])
        rel_cpu = per_tok_cpu / (base["ours"]["forward_cpu_ms"] / base["tokens"])
        print(f"| {r['tokens']} | {o['forward_ms']:.1f} / {o['forward_cpu_ms']:.1f} | "
              f"{r['torch_ms']:.1f} / {r['torch_cpu_ms']:.1f} | {r['speed_ratio']:.2f}x / {r['cpu_speed_ratio']:.2f}x | "
              f"{per_tok:.2f} ({rel:.2f}x) / {per_tok_cpu:.2f} ({rel_cpu:.2f}x) | "
              f"{r['torch_ms'] / r['tokens']:.2f} / {r['torch_cpu_ms'] / r['tokens']:.2f} | "
              f"{o['incremental_ms']:.1f} / {o['incremental_cpu_ms']:.1f} | {o['load_ms']:.0f} | {o['peak_rss_mb']:.0f} |")
    print(f"weights {rows[0]['ours']['weight_mb']:.0f} MB as the engine holds them; "
          f"file {os.path.getsize(os.path.join(a.model, 'model.safetensors')) / 2**20:.0f} MB; "
          f"this PyTorch process peak RSS {torch_rss_mb:.0f} MB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"correct": ok, "logits_max_diff": d_logits, "attention_max_diff": d_att, "rows": rows}, f, indent=1)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
