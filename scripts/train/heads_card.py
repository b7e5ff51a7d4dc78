#!/usr/bin/env python3
"""Measure how many heads each shipped model needs and write it into its card (card.json "pruning",
and the README.md generated from the card): `headscope heads` on the model's heldout.txt
(scripts/train/heldout_text.py), greedy order against random orders.

    /usr/bin/python3 scripts/train/heads_card.py [--cli build/native-release/headscope] [NAME ...]
"""

import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from card import write_card  # noqa: E402
from card_readme import readme  # noqa: E402

MODELS = os.path.join(ROOT, "web", "models")
RANDOM_ORDERS = 8
SEED = 0


def heads_off_before(curve, loss, rise):
    """Heads that can be switched off (in the curve's order) before the loss exceeds (1 + rise) x loss."""
    for k, x in enumerate(curve):
        if x > (1 + rise) * loss:
            return k - 1
    return len(curve) - 1


def measure(cli, name):
    folder = os.path.join(MODELS, name)
    cmd = [
        cli,
        "heads",
        "--model",
        folder,
        "--text-file",
        os.path.join(folder, "heldout.txt"),
        "--random-orders",
        str(RANDOM_ORDERS),
        "--seed",
        str(SEED),
        "--json",
    ]
    d = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    n = len(d["order"])
    L = d["loss"]
    knock = sorted(
        (
            (l, h, d["ablation_delta"][l][h])
            for l in range(len(d["ablation_delta"]))
            for h in range(len(d["ablation_delta"][0]))
        ),
        key=lambda x: -x[2],
    )
    return {
        "command": f"headscope heads --model web/models/{name} --text-file heldout.txt --random-orders {RANDOM_ORDERS} --seed {SEED}",
        "date": datetime.date.today().isoformat(),
        "method": d["method"],
        "tokens": d["tokens"],
        "heads": n,
        "random_orders": RANDOM_ORDERS,
        "loss": round(L, 4),
        "heads_off_before_5pct": heads_off_before(d["pruned_loss"], L, 0.05),
        "heads_off_before_10pct": heads_off_before(d["pruned_loss"], L, 0.10),
        "half_loss": round(d["pruned_loss"][n // 2], 4),
        "half_random_mean": round(d["random_loss_mean"][n // 2], 4),
        "last_heads": d["order"][-3:][::-1],
        "top_knockouts": [[l, h, round(x, 4)] for l, h, x in knock[:3]],
        "order": d["order"],
        "pruned_loss": [round(x, 4) for x in d["pruned_loss"]],
        "random_loss_mean": [round(x, 4) for x in d["random_loss_mean"]],
        "random_loss_band": [[round(a, 4), round(b, 4)] for a, b in d["random_loss_band"]],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "native-release", "headscope"))
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or sorted(n for n in os.listdir(MODELS) if os.path.isfile(os.path.join(MODELS, n, "card.json")))
    for name in names:
        folder = os.path.join(MODELS, name)
        with open(os.path.join(folder, "card.json")) as f:
            card = json.load(f)
        card["pruning"] = measure(a.cli, name)
        write_card(card, folder)
        with open(os.path.join(folder, "README.md"), "w") as f:
            f.write(readme(card))
        p = card["pruning"]
        print(
            f"{name}: {p['heads_off_before_5pct']} of {p['heads']} heads off before +5%; half: "
            f"{p['half_loss']:.3f} vs random {p['half_random_mean']:.3f} (loss {p['loss']:.3f})"
        )


if __name__ == "__main__":
    main()
