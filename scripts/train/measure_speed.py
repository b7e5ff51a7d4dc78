#!/usr/bin/env python3
"""Re-measure the PyTorch forward time of every exported model in one process, interleaved, and update
the cards (card.json + README.md). Timings taken at the end of each training run are disturbed by
whatever else runs on the machine; measuring all models together, alternating between them and
keeping the minimum over many repetitions, makes them comparable with each other.

  /usr/bin/python3 scripts/train/measure_speed.py [--reps 30]
"""
import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
sys.path.insert(0, HERE)

from gpt2_torch import GPT2  # noqa: E402
import export  # noqa: E402

MODELS = os.path.join(ROOT, "web", "models")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    torch.set_num_threads(1)
    names = sorted(n for n in os.listdir(MODELS) if os.path.exists(os.path.join(MODELS, n, "card.json")))
    models = {n: GPT2.load_hf(os.path.join(MODELS, n)).eval() for n in names}
    times = {n: [] for n in names}
    with torch.no_grad():
        x = {n: torch.randint(0, m.cfg["vocab_size"], (1, m.cfg["n_positions"])) for n, m in models.items()}
        for n, m in models.items():
            m(x[n])
        for _ in range(a.reps):
            for n, m in models.items():
                t = time.perf_counter()
                m(x[n])
                times[n].append(time.perf_counter() - t)
    for n in names:
        p = os.path.join(MODELS, n, "card.json")
        with open(p) as f:
            card = json.load(f)
        ts = sorted(times[n])
        card["speed"] = {"pytorch_forward_ms_T128_1thread": round(1000 * ts[0], 2),
                         "pytorch_forward_ms_T128_1thread_median": round(1000 * ts[len(ts) // 2], 2),
                         "note": f"PyTorch 1.13 CPU, 1 thread, batch 1, 128 tokens; minimum and median of {a.reps} "
                                 "runs, all models measured in one process, interleaved"}
        export.add_chef_baselines(card)
        with open(p, "w") as f:
            json.dump(card, f, indent=1)
            f.write("\n")
        with open(os.path.join(MODELS, n, "README.md"), "w") as f:
            f.write(export.readme(card))
        print(f"{n}: min {1000 * ts[0]:.2f} ms, median {1000 * ts[len(ts) // 2]:.2f} ms")


if __name__ == "__main__":
    main()
