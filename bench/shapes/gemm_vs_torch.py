#!/usr/bin/python3
"""The engine's GEMM natively against PyTorch's (its BLAS) at GPT-2 small's linear layers, one thread each.

y (M, N) = x (M, K) @ W (K, N) + b: the engine's matmul_forward on weights packed at load time
(headscope_gemm_native, which also times Eigen's GEMM) against torch.addmm with torch.set_num_threads(1).
Both sides time thread CPU time (the cores are shared with other jobs), medians; the two alternate for
--rounds rounds and each figure is the median over the rounds. Prints a markdown table with the CPU.
Usage: /usr/bin/python3 bench/shapes/gemm_vs_torch.py --gemm build/native-release/headscope_gemm_native [--M 256] [--rounds 3]
"""

import argparse
import json
import statistics
import subprocess
import time

import torch

from vs_torch import load_average

GPT2_SMALL = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]


def torch_gflops(M, K, N, runs=9):
    g = torch.Generator().manual_seed(1)
    x, w, b = torch.randn(M, K, generator=g), 0.02 * torch.randn(K, N, generator=g), torch.randn(N, generator=g)
    y = torch.empty(M, N)
    torch.addmm(b, x, w, out=y)  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.thread_time()
        torch.addmm(b, x, w, out=y)
        times.append(time.thread_time() - t0)
    return 2.0 * M * K * N / statistics.median(times) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gemm", required=True, help="headscope_gemm_native")
    ap.add_argument("--M", type=int, default=256, help="input rows (tokens)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    ours, eigen, theirs, previous = {}, {}, {}, {}
    for _ in range(a.rounds):
        out = subprocess.run([a.gemm], check=True, capture_output=True, text=True).stdout
        for row in (json.loads(line) for line in out.splitlines() if line.strip()):
            if row.get("M") == a.M:
                ours.setdefault((row["K"], row["N"]), []).append(row["ours_gflops"])
                eigen.setdefault((row["K"], row["N"]), []).append(row["eigen_gflops"])
                previous.setdefault((row["K"], row["N"]), []).append(row["previous_gflops"])
        for K, N in GPT2_SMALL:
            theirs.setdefault((K, N), []).append(torch_gflops(a.M, K, N))
    print(
        f"torch {torch.__version__} (1 thread); "
        f"load average {load_average()}; medians over {a.rounds} alternating rounds of thread-CPU-time medians.\n"
    )
    print(
        "| M | K | N | engine GFLOP/s | engine before (v1) | PyTorch GFLOP/s | Eigen GFLOP/s | engine / PyTorch | v1 / PyTorch |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for K, N in GPT2_SMALL:
        o, t, e, p = (statistics.median(d[(K, N)]) for d in (ours, theirs, eigen, previous))
        ratios.append(o / t)
        print(f"| {a.M} | {K} | {N} | {o:.1f} | {p:.1f} | {t:.1f} | {e:.1f} | {o / t:.2f}x | {p / t:.2f}x |")
    print(f"\ngeomean engine / PyTorch: {statistics.geometric_mean(ratios):.2f}x")


if __name__ == "__main__":
    main()
