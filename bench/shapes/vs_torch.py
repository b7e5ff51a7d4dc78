#!/usr/bin/env python3
"""The native engine against PyTorch on a checkpoint of either family, side by side in one run.

--family gpt2 (default): a random checkpoint of GPT-2 small's exact shape (bench/shapes/make_gpt2_small.py
unless --model already holds one), both on 1 thread, then both on each count of --threads (default 1,2).
--family llama: a Llama-family checkpoint (grouped-query attention, rotary positions, SwiGLU), by default
a random one of SmolLM2-135M's exact shape (bench/shapes/make_llama_small.py; --quick: the test fixture
tests/fixtures/models/llama-gqa, T = 16, 3 runs), both on each count of --threads.

1. Correctness: `headscope run --json` on a short text against scripts/common/gpt2_torch.py or
   llama_torch.py on the same file (float32; the Llama family's BF16 weights widened exactly as the engine
   widens them): last-position logits and every layer's and (query) head's attention, within the
   tolerances stated in check_correctness. Exits 1 if they are exceeded.
2. Speed, interleaved per T (and thread count), so both see the same machine load: `headscope bench`
   (median full forward, median one-token incremental update: a typed token, load time, peak RSS) and
   PyTorch computing the same outputs (every attention map, last-position logits;
   torch.set_num_threads(N)). Prints the tables and writes the rows as JSON.
3. GPT-2 only: the 1-thread table with CPU times and the targets; then `headscope bench --threads N`
   against PyTorch with torch.set_num_threads(N), for each N of --threads: wall time (CPU time adds up
   over threads), the speed-up of N threads over one, and the ratio to PyTorch at the same count.
   With --gemm BIN (headscope_gemm_native): the engine's GEMM against Eigen's at GPT-2 small's linear
   layers and the attention kernel of one layer, thread CPU time (--quick: fewer runs).
Usage: /usr/bin/python3 bench/shapes/vs_torch.py [--family gpt2|llama] [--cli build/native-release/headscope]
         [--model DIR] [--tokens 64,256,1024] [--threads 1,2] [--repeat 5] [--gemm BIN] [--quick]
         [--json OUT] [--markdown OUT]
(--markdown writes the tables, the targets and the machine's load, e.g. to bench/results/gpt2-small-native.md
or bench/results/llama-small-native.md)
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from gpt2_torch import GPT2, gelu_new  # noqa: E402
from llama_torch import LlamaFamily, rope_cos_sin, rope_inv_freq  # noqa: E402

TEXT = (
    "Attention heads in a transformer each compute a weighted average of the value vectors of "
    "earlier positions; some attend to the previous token."
)
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "models", "llama-gqa")
SHAPES = os.path.join(ROOT, "bench", "shapes")


@torch.no_grad()
def gpt2_forward(model, ids):
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


@torch.no_grad()
def llama_forward(model, ids):
    """The same for the Llama family: every query head's attention (L x (NH, T, T)) and the last position's
    logits (V), without the other positions' logits (the engine does not compute them)."""
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


def torch_forward(model, ids):
    return (gpt2_forward if isinstance(model, GPT2) else llama_forward)(model, ids)


def check_correctness(cli, model_dir, model):
    out = subprocess.run(
        [cli, "run", "--model", model_dir, "--text", TEXT, "--json"], check=True, capture_output=True, text=True
    ).stdout
    r = json.loads(out)
    ids = torch.tensor(r["ids"])
    logits, atts = torch_forward(model, ids)
    d_logits = (torch.tensor(r["logits_last"]) - logits).abs().max().item()
    d_att = (torch.tensor(r["attention"]) - torch.stack(atts)).abs().max().item()  # (L, NH, T, T)
    # Tolerances. Both sides compute in float32 with different summation orders (and FMA on our
    # side): each dot product of length K carries a relative error up to about K u (u = 6e-8) of its
    # sum of |terms|, compounded over the layers.
    # GPT-2: for the longest one (K = 3072) that is 1.8e-4; 12 residual layers compound this to about
    # 2e-3 relative. The logits of this random model are O(1e-1 .. 1), so 2e-3 times the largest |logit|
    # bounds them.
    # The Llama family: the longest is the MLP's down projection, K = intermediate_size: K u L relative
    # (SmolLM2's shape 2.8e-3, Llama 3.2-1B's 7.9e-3) of the largest |logit|. A worst case: the measured
    # differences are three orders below it.
    # Attention probabilities lie in [0, 1] and come from scores of size O(1): 1e-4 absolute is two
    # orders above what the scores' relative 1e-6 error gives through the softmax, below any visible
    # difference.
    if isinstance(model, GPT2):
        rel = 2e-3
    else:
        c = model.cfg
        rel = max(max(c["intermediate_size"], c["hidden_size"]) * 6e-8 * c["num_hidden_layers"], 1e-5)
    tol_logits = rel * max(1.0, logits.abs().max().item())
    tol_att = 1e-4
    ok = d_logits <= tol_logits and d_att <= tol_att
    text = "" if isinstance(model, GPT2) else f" (of a {len(TEXT)}-character text)"
    print(
        f"correctness on {len(r['ids'])} tokens{text}: logits max |diff| {d_logits:.2e} (tolerance {tol_logits:.1e}), "
        f"attention max |diff| {d_att:.2e} (tolerance {tol_att:.0e}): {'ok' if ok else 'FAILED'}"
    )
    return ok, d_logits, d_att, len(r["ids"])


def time_torch(model, T, repeat):
    """PyTorch's median full forward on the ids headscope bench runs: (wall ms, CPU ms)."""
    V = model.cfg["vocab_size"]
    ids = torch.tensor([(i * 7919 + 13) % V for i in range(T)])  # the same ids as headscope bench
    torch_forward(model, ids)  # warm-up
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        torch_forward(model, ids)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def headscope_bench(a, T, threads):
    """`headscope bench` at T tokens on that many threads (its JSON)."""
    ours = json.loads(
        subprocess.run(
            [
                a.cli,
                "bench",
                "--model",
                a.model,
                "--tokens",
                str(T),
                "--repeat",
                str(a.repeat),
                "--threads",
                str(threads),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    if ours.get("threads") != threads:
        raise SystemExit(f"headscope bench ran {ours.get('threads')} threads, asked for {threads}")
    return ours


def load_average():
    return f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores of {cpu_line()}"


def cpu_line():
    """The CPU, its vendor and the vector extensions that set the ceilings (as bench/harness/lib.mjs machineLine)."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return "a CPU not recorded"
    field = lambda name: next(
        (l.split(":", 1)[1].strip() for l in text.splitlines() if l.split(":")[0].strip() == name), "?"
    )
    flags = set(field("flags").split())
    names = {"fma": "FMA", "avx2": "AVX2", "avx512f": "AVX-512", "avx_vnni": "AVX-VNNI", "avx512_vnni": "AVX-512 VNNI"}
    ext = [v for f, v in names.items() if f in flags] + [f"no {v}" for f, v in names.items() if f not in flags]
    return f"{field('model name')} ({field('vendor_id')} family {field('cpu family')} model {field('model')}; {', '.join(ext)})"


def ints(s):
    return [int(t) for t in s.split(",")]


def timed_rows(a, model, counts, keys, echo=False):
    """Per T of --tokens, per thread count of counts, interleaved so both see the same machine load: the
    engine's and PyTorch's median full forward (wall ms), then keys in their order: "speed_ratio" (PyTorch
    ms / the engine's), the others from `headscope bench`'s JSON. echo prints each row as it is measured."""
    rows = []
    for T in ints(a.tokens):
        for n in counts:
            ours = headscope_bench(a, T, n)
            torch.set_num_threads(n)
            pt_ms, _ = time_torch(model, T, a.repeat)
            row = {"tokens": T, "threads": n, "ours_ms": ours["forward_ms"], "torch_ms": pt_ms}
            rows.append(row | {k: pt_ms / ours["forward_ms"] if k == "speed_ratio" else ours[k] for k in keys})
            if echo:
                print(json.dumps(rows[-1]))
    return rows


def time_threads(a, model, counts):
    """Per T, per thread count: the engine's and PyTorch's median full forward (wall ms), and each one's
    speed-up over its own 1-thread run."""
    rows = timed_rows(a, model, counts, ("incremental_ms", "speed_ratio"))
    one = {r["tokens"]: r for r in rows if r["threads"] == 1}
    for r in rows:
        if r["tokens"] in one:
            r["speedup_over_1"] = one[r["tokens"]]["ours_ms"] / r["ours_ms"]
            r["torch_speedup_over_1"] = one[r["tokens"]]["torch_ms"] / r["torch_ms"]
    return rows


def threads_table(rows, repeat):
    """The threads section of the report: the table and its targets (2 threads on this machine)."""
    targets = {256: 1.6, 1024: 1.75}  # 2 threads over one
    lines = [
        "",
        "## Threads",
        "",
        f"`headscope bench --threads N` against PyTorch with `torch.set_num_threads(N)`, wall time (medians of {repeat}); "
        f"speed-ups are over the same side's 1 thread. Load average now {load_average()}.",
        "",
        "| T | threads | headscope ms | PyTorch ms | headscope / PyTorch speed | headscope speed-up | PyTorch speed-up | incremental update ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['tokens']} | {r['threads']} | {r['ours_ms']:.1f} | {r['torch_ms']:.1f} | {r['speed_ratio']:.2f}x | "
            f"{r.get('speedup_over_1', float('nan')):.2f}x | {r.get('torch_speedup_over_1', float('nan')):.2f}x | {r['incremental_ms']:.2f} |"
        )
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    for r in rows:
        if r["threads"] == 2 and r["tokens"] in targets and "speedup_over_1" in r:
            t = targets[r["tokens"]]
            lines.append(
                f"| 2 threads >= {t}x one thread at T = {r['tokens']} | {r['speedup_over_1']:.2f}x | {'yes' if r['speedup_over_1'] >= t else '**no**'} |"
            )
    for r in rows:
        if r["threads"] == 2:
            lines.append(
                f"| 2 threads >= 1.5x PyTorch with 2 threads at T = {r['tokens']} | {r['speed_ratio']:.2f}x | {'yes' if r['speed_ratio'] >= 1.5 else '**no**'} |"
            )
    return lines


# ---- GPT-2: the 1-thread table, the threads table, the kernels --------------------------------------
def gpt2_report(a, model, correctness):
    """Measures and returns (markdown lines, JSON) for GPT-2."""
    ok, d_logits, d_att, _ = correctness
    rows = []
    for T in ints(a.tokens):
        ours = headscope_bench(a, T, 1)
        pt_ms, pt_cpu_ms = time_torch(model, T, a.repeat)
        rows.append(
            {
                "tokens": T,
                "ours": ours,
                "torch_ms": pt_ms,
                "torch_cpu_ms": pt_cpu_ms,
                "speed_ratio": pt_ms / ours["forward_ms"],
                "cpu_speed_ratio": pt_cpu_ms / ours["forward_cpu_ms"],
            }
        )
    thread_rows = time_threads(a, model, ints(a.threads))
    torch.set_num_threads(1)
    torch_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    base = rows[0]
    lines = [
        f"simd {rows[0]['ours']['simd']}, torch {torch.__version__} with 1 thread; medians of {a.repeat}; "
        "each cell wall time / CPU time (the cores are shared with other jobs: CPU time leaves out the "
        "time a process waited for a core, so its ratios are the fairer comparison)",
        "",
        "| T | headscope full forward ms | PyTorch ms | headscope / PyTorch speed | headscope ms per token"
        f" (vs T = {base['tokens']}) | PyTorch ms per token | incremental update ms | load ms | RSS after load / peak MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        o = r["ours"]
        per_tok = o["forward_ms"] / r["tokens"]
        per_tok_cpu = o["forward_cpu_ms"] / r["tokens"]
        r["per_token_vs_first"] = per_tok / (base["ours"]["forward_ms"] / base["tokens"])
        r["per_token_vs_first_cpu"] = per_tok_cpu / (base["ours"]["forward_cpu_ms"] / base["tokens"])
        lines.append(
            f"| {r['tokens']} | {o['forward_ms']:.1f} / {o['forward_cpu_ms']:.1f} | "
            f"{r['torch_ms']:.1f} / {r['torch_cpu_ms']:.1f} | {r['speed_ratio']:.2f}x / {r['cpu_speed_ratio']:.2f}x | "
            f"{per_tok:.2f} ({r['per_token_vs_first']:.2f}x) / {per_tok_cpu:.2f} ({r['per_token_vs_first_cpu']:.2f}x) | "
            f"{r['torch_ms'] / r['tokens']:.2f} / {r['torch_cpu_ms'] / r['tokens']:.2f} | "
            f"{o['incremental_ms']:.1f} / {o['incremental_cpu_ms']:.1f} | {o['load_ms']:.0f} | "
            f"{o['rss_after_load_mb']:.0f} / {o['peak_rss_mb']:.0f} |"
        )
    weight_mb = rows[0]["ours"]["weight_mb"]
    rss_ratio = rows[0]["ours"]["rss_after_load_mb"] / weight_mb
    lines += [
        "",
        f"Weights {weight_mb:.0f} MB as the engine holds them (float32, packed); file "
        f"{os.path.getsize(os.path.join(a.model, 'model.safetensors')) / 2**20:.0f} MB (with the mask buffers); "
        f"resident after loading {rows[0]['ours']['rss_after_load_mb']:.0f} MB = {rss_ratio:.2f}x the weights; "
        f"this PyTorch process's peak RSS {torch_rss_mb:.0f} MB.",
        f"Correctness on a {len(TEXT)}-character text: logits max |diff| {d_logits:.1e}, attention max |diff| "
        f"{d_att:.1e} ({'within' if ok else 'OUTSIDE'} the tolerances stated in bench/shapes/vs_torch.py).",
        f"Load average during the run: {load_average()}.",
        "",
        "| target | measured (wall / CPU) | met (CPU) |",
        "|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| native >= 1.5x PyTorch (1 thread) at T = {r['tokens']} | {r['speed_ratio']:.2f}x / "
            f"{r['cpu_speed_ratio']:.2f}x | {'yes' if r['cpu_speed_ratio'] >= 1.5 else '**no**'} |"
        )
    last = rows[-1]
    lines.append(
        f"| time per token at T = {last['tokens']} <= 2x that at T = {base['tokens']} | "
        f"{last['per_token_vs_first']:.2f}x / {last['per_token_vs_first_cpu']:.2f}x | "
        f"{'yes' if last['per_token_vs_first_cpu'] <= 2 else '**no**'} |"
    )
    lines.append(
        f"| resident after loading <= 1.15x the weights | {rss_ratio:.2f}x | {'yes' if rss_ratio <= 1.15 else '**no**'} |"
    )
    lines += threads_table(thread_rows, a.repeat)
    gemm_rows = []
    if a.gemm:
        out = subprocess.run(
            [a.gemm] + (["--quick"] if a.quick else []), check=True, capture_output=True, text=True
        ).stdout
        gemm_rows = [json.loads(line) for line in out.splitlines() if line.strip()]
        lines += [
            "",
            "## GEMM and attention kernels alone",
            "",
            f"`{os.path.relpath(a.gemm, ROOT)}{' --quick' if a.quick else ''}` (thread CPU time, medians), y (M, N) = x (M, K) @ W (K, N) + b "
            "at GPT-2 small's linear layers: the engine's blocked xsimd kernel against Eigen 3.4's GEMM built with the same "
            "-march=native, each also over this core's multiply-add ceiling (independent fused multiply-add chains "
            "of the widest vectors, no memory traffic); then the attention kernel of one layer (12 heads of 64) over all T rows.",
            "",
        ]
        lines += [
            f"This core's ceiling: {g['fma_ceiling_gflops']:.1f} GFLOP/s ({g['lanes']} lanes)."
            for g in gemm_rows
            if "fma_ceiling_gflops" in g
        ]
        lines += [
            "",
            "| M | K | N | engine GFLOP/s | Eigen GFLOP/s | engine / Eigen | engine / ceiling |",
            "|---|---|---|---|---|---|---|",
        ]
        for g in gemm_rows:
            if "M" in g:
                lines.append(
                    f"| {g['M']} | {g['K']} | {g['N']} | {g['ours_gflops']:.1f} | {g['eigen_gflops']:.1f} | {g['ours_over_eigen']:.2f}x "
                    f"| {g['ours_of_ceiling']:.2f} |"
                )
        ladder = [g for g in gemm_rows if "ladder" in g]
        if ladder:
            lines += [
                "",
                "Where the GEMM's time goes at M 256, K 768, N 768 (`gemm_ladder` in cpp/bench/gemm_native.cpp): the same "
                "register tile with both operands in L1, then the GEMM's loop nest alone streaming the weights from L2, "
                "then `matmul_forward` itself.",
                "",
                "| step | GFLOP/s | of the ceiling |",
                "|---|---|---|",
            ]
            lines += [f"| {g['ladder']} | {g['gflops']:.1f} | {g['of_ceiling']:.2f} |" for g in ladder]
        lines += ["", "| attention T | ms per layer | GFLOP/s (causal QK^T and PV) |", "|---|---|---|"]
        for g in gemm_rows:
            if "attention_T" in g:
                lines.append(f"| {g['attention_T']} | {g['ms']:.2f} | {g['gflops']:.1f} |")
    c = model.cfg
    title = (
        "# GPT-2 small's shape, native engine against PyTorch\n\n"
        "Written by `bench/shapes/vs_torch.py` (bench/harness/gpt2_small.sh) "
        f"on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: a random checkpoint "
        f"(bench/shapes/make_gpt2_small.py: {c['n_layer']} layers, {c['n_head']} heads, d_model {c['n_embd']}, "
        f"context {c['n_positions']}, vocabulary {c['vocab_size']}, with the hub's tensor names and `h.N.attn.bias` "
        "buffers), `headscope bench` (preset native-release) against "
        "PyTorch computing the same outputs (every attention map, last-position logits), interleaved per T.\n\n"
    )
    return (
        title,
        lines,
        {
            "correct": ok,
            "logits_max_diff": d_logits,
            "attention_max_diff": d_att,
            "rows": rows,
            "threads": thread_rows,
            "kernels": gemm_rows,
        },
    )


# ---- the Llama family: one table over T and thread counts ------------------------------------------
def llama_report(a, model, correctness):
    """Measures and returns (markdown lines, JSON) for the Llama family."""
    ok, d_logits, d_att, n_checked = correctness
    info = subprocess.run([a.cli, "info", "--model", a.model], check=True, capture_output=True, text=True).stdout
    keys = ("speed_ratio", "incremental_ms", "weight_mb", "load_ms", "peak_rss_mb")
    rows = timed_rows(a, model, ints(a.threads), keys, echo=True)
    c = model.cfg
    lines = [
        f"`headscope bench --threads N` against PyTorch {torch.__version__} with `torch.set_num_threads(N)`, "
        f"wall time, medians of {a.repeat}, interleaved per T and thread count. The incremental update is one "
        "token typed at the end of T (the engine's cache; PyTorch would rerun the whole text).",
        "",
        "| T | threads | headscope full forward ms | PyTorch ms | headscope / PyTorch speed | typed token (incremental) ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['tokens']} | {r['threads']} | {r['ours_ms']:.3g} | {r['torch_ms']:.3g} | "
            f"{r['speed_ratio']:.2f}x | {r['incremental_ms']:.3g} |"
        )
    lines += [
        "",
        f"Weights {rows[0]['weight_mb']:.0f} MB as the engine holds them (float32, packed), load "
        f"{rows[0]['load_ms']:.0f} ms, peak RSS {max(r['peak_rss_mb'] for r in rows):.0f} MB. `headscope info`:",
        "",
        "```",
        info.strip(),
        "```",
        "",
        f"Correctness on {n_checked} tokens of a {len(TEXT)}-character text: logits max |diff| {d_logits:.1e}, attention max |diff| "
        f"{d_att:.1e} ({'within' if ok else 'OUTSIDE'} the tolerances stated in bench/shapes/vs_torch.py).",
        f"Load average during the run: {load_average()}.",
    ]
    title = (
        "# A Llama-family shape, native engine against PyTorch\n\n"
        f"Written by `bench/shapes/vs_torch.py --family llama{' --quick' if a.quick else ''}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"{os.path.relpath(a.model, ROOT)} ({c['model_type']}: {c['num_hidden_layers']} layers, "
        f"{c['num_attention_heads']} query heads over {c['num_key_value_heads']} key/value heads of "
        f"{c['head_dim']}, hidden {c['hidden_size']}, intermediate {c['intermediate_size']}, vocabulary "
        f"{c['vocab_size']}; random weights: speed depends on the shape only).\n\n"
    )
    return title, lines, {"correct": ok, "logits_max_diff": d_logits, "attention_max_diff": d_att, "rows": rows}


FAMILIES = {  # default checkpoint, its maker (run when the folder has none), T, loader, report
    "gpt2": (
        os.path.join(ROOT, ".cache", "bench", "gpt2-small"),
        ["make_gpt2_small.py"],
        "64,256,1024",
        GPT2.load_hf,
        gpt2_report,
    ),
    "llama": (
        os.path.join(ROOT, ".cache", "bench", "smollm2-135m"),
        ["make_llama_small.py", "--shape", "smollm2-135m"],
        "64,256",
        LlamaFamily.load_hf,
        llama_report,
    ),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=sorted(FAMILIES), default="gpt2")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "native-release", "headscope"))
    ap.add_argument("--model")
    ap.add_argument("--tokens")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--gemm", help="GPT-2: headscope_gemm_native, the kernels alone")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="GPT-2: the kernels' short runs; the Llama family: the test fixture llama-gqa, T = 16, 3 runs",
    )
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    default_model, maker, default_tokens, load, report = FAMILIES[a.family]
    a.model, a.tokens = a.model or default_model, a.tokens or default_tokens
    if a.quick and a.family == "llama":
        a.model, a.tokens, a.repeat = FIXTURE, "16", 3
    torch.set_num_threads(1)
    if not os.path.exists(os.path.join(a.model, "model.safetensors")):
        subprocess.run([sys.executable, os.path.join(SHAPES, maker[0]), a.model] + maker[1:], check=True)
    model = load(a.model).eval()
    correctness = check_correctness(a.cli, a.model, model)
    title, lines, result = report(a, model, correctness)
    print("\n" + "\n".join(lines))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(title)
            f.write("\n".join(lines) + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    sys.exit(0 if result["correct"] else 1)


if __name__ == "__main__":
    main()
