#!/usr/bin/env python3
"""Write tests/fixtures/models/NAME/greedy.json: greedy (temperature 0) generation in float64, the
reference for headscope::generate with temperature 0.

For each fixture model (written by scripts/make_fixtures.py) and both of its F32 and F16 weight
files (F16 values widen exactly to float64), prompts (the ids of the texts of make_fixtures.TEXTS,
each cut so that prompt + N generated tokens fit in n_positions) are extended N times by the argmax
of the last position's logits (ties to the lowest id), each step a full float64 forward of
gpt2_torch on the whole sequence so far. For each step the margin between the top logit and the
runner-up is recorded. (These random models soon repeat one token; several prompts give some
chains that do not.)

Why a margin bound: the C++ test runs a float32 engine, whose logits agree with these float64 ones
to |got - ref| <= 1e-4 + 1e-4 |ref| (tests/cpp/test_model.cpp kLogitAbs/kLogitRel, the tolerance
on logits against this same PyTorch reference, itself >10x the measured float32 error, see
tests/fixtures/README.md). Two logits each off by that much move the gap between them by at most
    tol(step) = 2e-4 + 1e-4 (|top| + |runner-up|),
so, given the engine picked the same tokens so far (it then runs the same sequence), its argmax can
differ from this one only where margin < tol(step). Every step of a written chain must have
margin >= BOUND_FACTOR * tol(step) (10x); the bound is asserted here, not just recorded. A text whose
N-step chain breaks it (or draws an id the tokenizer cannot decode, e.g. odd-hs20's padded ids
257..259), or is too short for a prompt, is left out and listed in "rejected"; if no text is left
for a weight file, shorter chains (down to MIN_N) are tried, and a model with no valid chain stops
the script: no fixture is written whose check could flip by rounding.

greedy.json ("format": "headscope-greedy-1"): {"format", "model", "bound" (the rule, in words),
"rejected": [str], "cases": [{"weights", "text" (the prompt), "text_index", "prompt_ids", "N",
"generated": [N ids], "margins": [N], "bounds": [N], "min_margin_over_bound"}]}.

    /usr/bin/python3 scripts/make_generate_fixtures.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "common"))
sys.path.insert(0, HERE)

from gpt2_torch import GPT2  # noqa: E402
from make_fixtures import MODELS, OUT, TEXTS, VOCAB, encode, dumps  # noqa: E402

FORMAT = "headscope-greedy-1"
N = 12              # generated tokens per chain
MIN_N = 6           # shortest chain accepted when every text's N-token chain breaks the bound
MIN_PROMPT = 4      # shortest prompt (tokens)
LOGIT_ABS, LOGIT_REL = 1e-4, 1e-4  # the engine's logit tolerance (tests/cpp/test_model.cpp)
BOUND_FACTOR = 10
DECODABLE = len(VOCAB)  # ids below this are in the tokenizer (257); above are the config's padding


def tol(top, second):
    """The most float32 error can move the gap between two logits (see the docstring)."""
    return 2 * LOGIT_ABS + LOGIT_REL * (abs(top) + abs(second))


def prompt_of(text, n_positions, n):
    """The longest byte prefix of text that fits n_positions - n tokens and is whole UTF-8 (the
    engine takes text). Returns (prompt text, ids) or None."""
    b = text.encode("utf-8")[: n_positions - n]
    while len(b) >= MIN_PROMPT:
        try:
            s = b.decode("utf-8")
        except UnicodeDecodeError:
            b = b[:-1]
            continue
        return s, encode(s)
    return None


def greedy_chain(m, ids, n):
    """n argmax steps from ids, each a full float64 forward. Returns (generated, margins, bounds, tops)."""
    seq = list(ids)
    gen, margins, bounds = [], [], []
    with torch.no_grad():
        for _ in range(n):
            last = m(torch.tensor([seq], dtype=torch.long))[0, -1].tolist()
            order = sorted(range(len(last)), key=lambda i: (-last[i], i))  # most likely first, ties by lower id
            top, second = order[0], order[1]
            gen.append(top)
            margins.append(last[top] - last[second])
            bounds.append(BOUND_FACTOR * tol(last[top], last[second]))
            seq.append(top)
    return gen, margins, bounds


def chain_case(m, cfg, weights, ti, n):
    """The chain from TEXTS[ti] with n steps: (case, None) if every step clears the bound, else (None, why)."""
    p = prompt_of(TEXTS[ti], cfg["n_positions"], n)
    if p is None:
        return None, f"TEXTS[{ti}] is shorter than {MIN_PROMPT} tokens"
    prompt, ids = p
    gen, margins, bounds = greedy_chain(m, ids, n)
    bad = [i for i in range(n) if not margins[i] >= bounds[i]]
    undecodable = [i for i in range(n) if gen[i] >= DECODABLE]
    if bad or undecodable:
        why = []
        if bad:
            why.append(f"step {bad[0]} margin {margins[bad[0]]:.3g} < bound {bounds[bad[0]]:.3g}")
        if undecodable:
            why.append(f"step {undecodable[0]} draws id {gen[undecodable[0]]} outside the tokenizer")
        return None, f"TEXTS[{ti}] with N {n} rejected: " + "; ".join(why)
    return {"weights": weights, "text": prompt, "text_index": ti, "prompt_ids": ids, "N": n, "generated": gen,
            "margins": [float(f"{x:.7g}") for x in margins], "bounds": [float(f"{x:.7g}") for x in bounds],
            "min_margin_over_bound": float(f"{min(a / b for a, b in zip(margins, bounds)):.7g}")}, None


def pick_cases(try_one, n_texts, n, min_n):
    """Every text whose n-step chain clears the bound (try_one(text index, steps) -> (case, why));
    if none does, the first text and steps that do, steps down to min_n. Returns (cases, notes on the
    chains rejected). scripts/make_llama_fixtures.py picks its chains the same way."""
    cases, notes = [], []
    for ti in range(n_texts):
        c, why = try_one(ti, n)
        if c:
            cases.append(c)
        else:
            notes.append(why)
    for k in range(n - 1, min_n - 1, -1):
        if cases:
            break
        for ti in range(n_texts):
            c, why = try_one(ti, k)
            if c:
                cases.append(c)
                break
            notes.append(why)
    return cases, notes


def find_cases(m, cfg, weights):
    """Every text of TEXTS whose N-step chain clears the bound (a few prompts, so that some chains
    are not one token repeated); if none does, the first text and N that do, N down to MIN_N.
    Returns (cases, notes on the chains rejected)."""
    return pick_cases(lambda ti, n: chain_case(m, cfg, weights, ti, n), len(TEXTS), N, MIN_N)


def main():
    ok = True
    for name, _overrides, _seed, _opts in MODELS:
        folder = os.path.join(OUT, name)
        cases = []
        notes, complete = [], True
        for weights in ("model.safetensors", "model-f16.safetensors"):
            m = GPT2.load_hf(folder, weights).double().eval()  # F16 values widen exactly to float64
            cfg = m.cfg
            found, why = find_cases(m, cfg, weights)
            notes += [f"{weights}: {s}" for s in why]
            for s in why:
                print(f"  {name} ({weights}): {s}")
            if not found:
                print(f"FAIL {name} ({weights}): no chain of >= {MIN_N} tokens clears the margin bound")
                ok = complete = False
            for c in found:
                assert len(c["prompt_ids"]) + c["N"] <= cfg["n_positions"]
                assert all(a >= b for a, b in zip(c["margins"], c["bounds"]))  # the bound, on the stored values
                print(f"{name} ({weights}) TEXTS[{c['text_index']}]: prompt {len(c['prompt_ids'])} tokens, N {c['N']}, "
                      f"{len(set(c['generated']))} distinct, min margin {min(c['margins']):.4g}, "
                      f"min margin/bound {c['min_margin_over_bound']:.3g}")
            cases += found
        if not complete:
            continue
        doc = {"format": FORMAT, "model": name,
               "bound": f"margin >= {BOUND_FACTOR} * ({2 * LOGIT_ABS:g} + {LOGIT_REL:g} * (|top| + |runner-up|))",
               "rejected": notes, "cases": cases}
        with open(os.path.join(folder, "greedy.json"), "w", encoding="utf-8") as f:
            f.write(dumps(doc))
            f.write("\n")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
