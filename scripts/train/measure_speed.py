#!/usr/bin/env python3
"""Re-measure the PyTorch forward time of every exported model in one process, interleaved, and update
the cards (card.json + README.md). Timings taken at the end of each training run are disturbed by
whatever else runs on the machine; measuring all models together, alternating between them and
keeping the minimum over many repetitions, makes them comparable with each other.

  /usr/bin/python3 scripts/train/measure_speed.py [--reps 30] [--cli build/native-release/headscope] [NAME ...]
(NAME: the models to measure together, e.g. one family; default every model with a card. With --cli
also the native engine's full forward and typed token, the models interleaved.)
"""

import argparse
import json
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
sys.path.insert(0, HERE)

from card import add_chef_baselines  # noqa: E402
from card_readme import readme  # noqa: E402
import model_arch  # noqa: E402

MODELS = os.path.join(ROOT, "web", "models")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument(
        "--cli",
        help="also time the native engine (headscope bench): its full forward and a typed "
        "token (the incremental update) at T = 128, 1 thread, the models interleaved",
    )
    ap.add_argument("names", nargs="*", help="models to measure together (a family); default all")
    a = ap.parse_args()
    torch.set_num_threads(1)
    names = a.names or sorted(n for n in os.listdir(MODELS) if os.path.exists(os.path.join(MODELS, n, "card.json")))
    models = {n: model_arch.load_hf(os.path.join(MODELS, n)).eval() for n in names}
    times = {n: [] for n in names}
    with torch.no_grad():
        x = {
            n: torch.randint(0, model_arch.shape(m)["vocab_size"], (1, model_arch.shape(m)["n_positions"]))
            for n, m in models.items()
        }
        for n, m in models.items():
            m(x[n])
        for _ in range(a.reps):
            for n, m in models.items():
                t = time.perf_counter()
                m(x[n])
                times[n].append(time.perf_counter() - t)
    engine = {n: [] for n in names}
    for _ in range(a.reps if a.cli else 0):
        for n in names:
            out = subprocess.run(
                [
                    a.cli,
                    "bench",
                    "--model",
                    os.path.join(MODELS, n),
                    "--tokens",
                    "128",
                    "--repeat",
                    "5",
                    "--threads",
                    "1",
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            engine[n].append(json.loads(out))
    for n in names:
        p = os.path.join(MODELS, n, "card.json")
        with open(p) as f:
            card = json.load(f)
        ts = sorted(times[n])
        card["speed"] = {
            "pytorch_forward_ms_T128_1thread": round(1000 * ts[0], 2),
            "pytorch_forward_ms_T128_1thread_median": round(1000 * ts[len(ts) // 2], 2),
            "note": f"PyTorch 1.13 CPU, 1 thread, batch 1, 128 tokens; minimum and median of {a.reps} "
            f"runs, {'all models' if not a.names else ', '.join(names)} measured in one process, "
            "interleaved",
        }
        if engine[n]:
            fw = sorted(r["forward_ms"] for r in engine[n])
            inc = sorted(r["incremental_ms"] for r in engine[n])
            card["speed"].update(
                {
                    "engine_forward_ms_T128_1thread": round(fw[len(fw) // 2], 3),
                    "engine_typed_token_ms_T128_1thread": round(inc[len(inc) // 2], 4),
                    "engine_note": f"headscope bench, {engine[n][0]['simd']}, 1 thread, float32 weights: "
                    f"median over {a.reps} interleaved rounds of each round's median of 5; the typed token "
                    "is the incremental update of one token after 128 (what typing costs)",
                }
            )
        add_chef_baselines(card)
        with open(p, "w") as f:
            json.dump(card, f, indent=1)
            f.write("\n")
        with open(os.path.join(MODELS, n, "README.md"), "w") as f:
            f.write(readme(card))
        print(f"{n}: min {1000 * ts[0]:.2f} ms, median {1000 * ts[len(ts) // 2]:.2f} ms")


if __name__ == "__main__":
    main()
