#!/usr/bin/env python3
"""Train one headscope model from scratch (seeded), resuming from its checkpoint, then export it.

  /usr/bin/python3 scripts/train/train.py --model headscope-base     # or heads-1, heads-2, heads-4, heads-8
  /usr/bin/python3 scripts/train/train.py --smoke                    # tiny end-to-end check, < 1 min, temp dir only

Steps for --model NAME (config in scripts/train/configs.json):
  1. data: .cache/data/{train,val}.txt (runs scripts/data/fetch_corpus.sh + prepare_corpus.py if missing)
  2. tokenizer: .cache/tokenizer-gpt2-subset-<V>/ (GPT-2's merges that train.txt uses most,
     scripts/train/gpt2_subset.py; configs without "tokenizer": bpe.py trained on train.txt) if missing
  3. token ids cached in .cache/data/{train,val}-<V>.npy (uint16)
  4. training: AdamW (betas 0.9/0.95, decoupled weight decay on matrices), linear warmup + cosine decay,
     batches of random 128-token windows, a share rewritten to repeat earlier spans ("repeat_spans"); logs to .cache/train/NAME/log.txt and log.json; checkpoint
     .cache/train/NAME/ckpt.pt (weights, optimizer, RNG states, step, best weights) every few minutes
     and at every evaluation. Rerunning the same command resumes where it stopped.
  5. export (scripts/train/export.py): web/models/NAME/ with F16 weights, tokenizer, card, reference.json.
     The exported weights are those with the best validation loss seen at an evaluation.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

# Passive OpenMP waiting: with busy-wait barriers (the default) training slows down 2-3x when the
# cores are shared with other work (measured here: 3.8 s/step vs 1.4 s/step during C++ builds).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.dont_write_bytecode = True  # the smoke run must write nothing outside its temp dir
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "common"))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import head_metrics  # noqa: E402
import model_arch  # noqa: E402
from run_config import load_configs, tokenizer_dir  # noqa: E402,F401

CACHE = os.path.join(ROOT, ".cache")
model_cfg = model_arch.model_cfg


# ------------------------------------------------------------------------------------------- data
def ensure_data():
    train_txt = os.path.join(CACHE, "data", "train.txt")
    if not os.path.exists(train_txt):
        subprocess.check_call(["bash", os.path.join(ROOT, "scripts", "data", "fetch_corpus.sh")])
        subprocess.check_call([sys.executable, os.path.join(ROOT, "scripts", "data", "prepare_corpus.py")])
    return train_txt, os.path.join(CACHE, "data", "val.txt")


def ensure_tokenizer(vocab_size, train_txt, folder=None, log=print, kind=None):
    """kind None: bpe.py trained on train_txt; "gpt2-subset": GPT-2's merges that train_txt uses most."""
    folder = folder or os.path.join(CACHE, f"tokenizer-{vocab_size}")
    if not os.path.exists(os.path.join(folder, "merges.txt")):
        log(f"building tokenizer ({kind or 'bpe.py'}), vocab {vocab_size} -> {folder}")
        with open(train_txt, encoding="utf-8") as f:
            text = f.read()
        if kind == "gpt2-subset":
            import gpt2_subset

            vocab, merges = gpt2_subset.build(text, vocab_size)
        else:
            vocab, merges = bpe.train(bpe.count_words(text), vocab_size, log=log)
        tmp = f"{folder}.tmp-{os.getpid()}"  # models started together may build the same tokenizer at once
        bpe.save(tmp, vocab, merges)
        try:
            os.replace(tmp, folder)
        except OSError:  # another run finished first (same inputs, same result)
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def encode_file(enc, path, cache_path, tok_dir):
    import hashlib

    h = hashlib.sha256()
    for fn in (path, os.path.join(tok_dir, "merges.txt")):
        with open(fn, "rb") as f:
            h.update(f.read())
    cache_path = cache_path.replace(".npy", f"-{h.hexdigest()[:12]}.npy")  # stale caches are never reused
    if os.path.exists(cache_path):
        return np.load(cache_path)
    with open(path, encoding="utf-8") as f:
        ids = np.array(enc.encode_docs(f.read()), dtype=np.uint16)
    tmp = f"{cache_path}.tmp-{os.getpid()}.npy"
    np.save(tmp, ids)
    os.replace(tmp, cache_path)
    return ids


# ------------------------------------------------------------------------------------------- training
def config_at(tc, step):
    """The config in force at a step: tc with the overrides of every "phases" entry that has begun
    ([{"from_step": S, "note": ..., key: value, ...}, ...] in increasing order; a key's value is replaced
    whole, so a phase's "repeat_spans" lists every field). A phase changes the
    recipe of a run already under way (say, a lower learning-rate floor and fewer random-run windows for a
    final stretch) without changing the steps before it, so a rerun from scratch reproduces both."""
    out = dict(tc)
    for ph in tc.get("phases", []):
        if step >= ph["from_step"]:
            out.update({k: v for k, v in ph.items() if k not in ("from_step", "note")})
    return out


def lr_at(step, tc):
    tc = config_at(tc, step)
    if step < tc["warmup"]:
        return tc["lr"] * (step + 1) / tc["warmup"]
    horizon = tc["steps"]
    # mid-run budget changes (see schedule_note): [[until_step, horizon], ...] in increasing order
    for until, h in tc.get("cosine_horizons", []):
        if step < until:
            horizon = h
            break
    p = min(1.0, (step - tc["warmup"]) / max(1, horizon - tc["warmup"]))
    lo = tc["lr"] * tc["min_lr_ratio"]
    lr = lo + 0.5 * (tc["lr"] - lo) * (1 + math.cos(math.pi * p))
    # a budget extended after the cosine had reached its floor: ramp linearly from the floor in force
    # (a phase's own floor from its first step on) up to the new horizon's curve over n steps instead
    # of jumping there ([[at_step, n], ...], see schedule_note)
    for at, n in tc.get("rewarm", []):
        if at <= step < at + n:
            lr = lo + (lr - lo) * (step - at + 1) / n
    return lr


def make_optimizer(model, tc):
    """AdamW groups: matrices with weight decay, vectors without. Each group's "lr_mult" scales the
    schedule's learning rate. With "wpe_lr_mult" in the config the position table gets a group of its
    own, lr x wpe_lr_mult and no weight decay: a previous-token head reads the offset between two rows
    of that table, and with the shared learning rate the table stays almost one-dimensional (73% of its
    variance in one direction after 8000 steps of the earlier default run), so the head sharpens only
    slowly (see scripts/train/README.md, "How the default model got a previous-token head")."""
    wpe_mult = tc.get("wpe_lr_mult")
    own = lambda n: wpe_mult is not None and n == "wpe.weight"
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and not own(n)]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": tc["weight_decay"], "lr_mult": 1.0},
        {"params": no_decay, "weight_decay": 0.0, "lr_mult": 1.0},
    ]
    if wpe_mult is not None:
        groups.append({"params": [model.wpe.weight], "weight_decay": 0.0, "lr_mult": float(wpe_mult)})
    return torch.optim.AdamW(groups, lr=tc["lr"], betas=(0.9, 0.95), eps=1e-8)


def repeat_spans(x, rng, rs, vocab_size):
    """Rewrites some windows of x (B, T+1) in place so that they repeat earlier spans (rs: the config's
    "repeat_spans"). With probability rs["share"] a window copies a span of rs["min"]..rs["max"] tokens of
    itself to a later place; with probability rs["random_share"] it becomes a run of random token ids
    repeated to fill the window. In both the second copy can be predicted only by finding the first one
    and reading what came next: the job of an induction head. Random runs make that the only way."""
    B, T1 = x.shape
    for b in range(B):
        u = rng.random()
        if u < rs.get("random_share", 0.0):
            n = int(rng.integers(rs["min"], rs["max"] + 1))
            run = rng.integers(0, vocab_size - 1, size=n)  # never <|endoftext|> (last id)
            x[b] = np.resize(run, T1)
        elif u < rs.get("random_share", 0.0) + rs["share"]:
            n = int(rng.integers(rs["min"], min(rs["max"], T1 // 2) + 1))
            src = int(rng.integers(0, T1 - 2 * n + 1))
            dst = int(rng.integers(src + n, T1 - n + 1))
            x[b, dst : dst + n] = x[b, src : src + n].copy()
    return x


def get_batch(ids, rng, B, T, rs=None, vocab_size=None):
    starts = rng.integers(0, len(ids) - T - 1, size=B)
    x = np.stack([ids[s : s + T + 1] for s in starts]).astype(np.int64)
    if rs:
        x = repeat_spans(x, rng, rs, vocab_size)
    x = torch.from_numpy(x)
    return x[:, :-1], x[:, 1:]


def eval_windows(val_ids, n, T):
    """n fixed, evenly spaced windows of T+1 tokens over the validation set."""
    starts = np.linspace(0, len(val_ids) - T - 2, n).astype(np.int64)
    x = torch.from_numpy(np.stack([val_ids[s : s + T + 1] for s in starts]).astype(np.int64))
    return x[:, :-1], x[:, 1:]


@torch.no_grad()
def evaluate(model, X, Y, B):
    model.eval()
    tot, n = 0.0, 0
    for i in range(0, len(X), B):
        lg = model(X[i : i + B])
        tot += F.cross_entropy(lg.reshape(-1, lg.shape[-1]), Y[i : i + B].reshape(-1), reduction="sum").item()
        n += Y[i : i + B].numel()
    model.train()
    return tot / n


class Logger:
    def __init__(self, folder, quiet=False):
        self.txt = os.path.join(folder, "log.txt")
        self.quiet = quiet

    def __call__(self, msg):
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {msg}"
        with open(self.txt, "a") as f:
            f.write(line + "\n")
        if not self.quiet:
            print(line, flush=True)


def save_ckpt(path, state):
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def train_model(name, tc, ids_train, ids_val, work, log, ckpt_minutes=3.0, induction_seqs=None):
    """Trains (or resumes) and returns the checkpoint state dict after the last step. induction_seqs:
    repeated word lists (head_metrics.repeated_lists) for the prefix-matching score logged at evaluations."""
    torch.manual_seed(tc["seed"])
    cfg = model_cfg(tc)
    model = model_arch.build(cfg)
    opt = make_optimizer(model, tc)
    rng = np.random.default_rng(tc["seed"])
    ckpt_path = os.path.join(work, "ckpt.pt")
    state = {
        "step": 0,
        "history": [],
        "best_val": float("inf"),
        "best_step": -1,
        "best_model": None,
        "train_seconds": 0.0,
        "tokens_seen": 0,
        "config": tc,
        "model_cfg": cfg,
    }
    if os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location="cpu")
        if ck["config"] != tc:
            log("WARNING: config changed since the checkpoint was written; resuming anyway with the new config")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        rng.bit_generator.state = ck["np_rng"]
        torch.set_rng_state(ck["torch_rng"])
        state = {k: ck[k] for k in state}
        state["config"] = tc
        log(f"resumed {name} at step {state['step']} (best val {state['best_val']:.4f} at {state['best_step']})")
    else:
        n_params = sum(p.numel() for p in model.parameters())
        log(
            f"start {name}: {json.dumps(cfg)} params {n_params} train tokens {len(ids_train)} val tokens {len(ids_val)}"
        )
    B, T = tc["batch_size"], tc["n_positions"]
    Xv, Yv = eval_windows(ids_val, tc["eval_batches"] * B, T)

    def checkpoint():
        save_ckpt(
            ckpt_path,
            dict(
                state,
                model=model.state_dict(),
                optimizer=opt.state_dict(),
                np_rng=rng.bit_generator.state,
                torch_rng=torch.get_rng_state(),
            ),
        )
        with open(os.path.join(work, "log.json"), "w") as f:
            json.dump(
                {
                    "model": name,
                    "config": tc,
                    "history": state["history"],
                    "step": state["step"],
                    "best_val": state["best_val"],
                    "best_step": state["best_step"],
                    "train_seconds": state["train_seconds"],
                    "tokens_seen": state["tokens_seen"],
                },
                f,
                indent=1,
            )

    t_last_ckpt = time.time()
    t_seg = time.time()
    run_loss, run_n = 0.0, 0
    n_steps = tc["steps"]
    while state["step"] < n_steps:
        step = state["step"]
        lr = lr_at(step, tc)
        for g in opt.param_groups:
            g["lr"] = lr * g.get("lr_mult", 1.0)
        x, y = get_batch(ids_train, rng, B, T, config_at(tc, step).get("repeat_spans"), tc["vocab_size"])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc["grad_clip"])
        opt.step()
        if not math.isfinite(loss.item()):
            raise RuntimeError(f"loss is {loss.item()} at step {step}")
        run_loss += loss.item()
        run_n += 1
        state["step"] = step + 1
        state["tokens_seen"] += B * T
        now = time.time()
        state["train_seconds"] += now - t_seg
        t_seg = now
        last = state["step"] == n_steps
        if state["step"] % tc["eval_every"] == 0 or last or state["step"] == 1:
            vl = evaluate(model, Xv, Yv, B)
            tl = run_loss / max(run_n, 1)
            run_loss, run_n = 0.0, 0
            tps = state["tokens_seen"] / max(state["train_seconds"], 1e-9)
            # how sharp the strongest previous-token and prefix-matching heads are so far: heads specialize
            # during training, and this shows when (16 validation windows and 4 lists; the card measures more)
            model.eval()
            prev = head_metrics.prev_token_scores(model, ids_val, T, 16)
            ind, copy = head_metrics.induction_scores(model, induction_seqs) if induction_seqs else ([[0.0]], 0.0)
            model.train()
            bp, bi = head_metrics.best(prev), head_metrics.best(ind)
            pl, ph = bp["layer"], bp["head"]
            state["history"].append(
                {
                    "step": state["step"],
                    "train_loss": round(tl, 4),
                    "val_loss": round(vl, 4),
                    "lr": lr,
                    "tokens_seen": state["tokens_seen"],
                    "train_seconds": round(state["train_seconds"], 1),
                    "max_prev_token": bp,
                    "max_induction": bi,
                    "copy_accuracy": round(copy, 4),
                }
            )
            if vl < state["best_val"]:
                state["best_val"], state["best_step"] = vl, state["step"]
                state["best_model"] = {k: v.clone() for k, v in model.state_dict().items()}
            log(
                f"step {state['step']}/{n_steps} train {tl:.4f} val {vl:.4f} lr {lr:.2e} "
                f"tok/s {tps:.0f} elapsed {state['train_seconds'] / 60:.1f} min "
                f"prev-token max L{pl}H{ph} {prev[pl][ph]:.3f} "
                f"induction max L{bi['layer']}H{bi['head']} {bi['score']:.3f} copy {copy:.2f}"
            )
            checkpoint()
            t_last_ckpt = time.time()
            t_seg = time.time()  # evaluation and checkpoint time is not training time
        elif time.time() - t_last_ckpt > ckpt_minutes * 60:
            checkpoint()
            t_last_ckpt = time.time()
            t_seg = time.time()
    if state["best_model"] is None:
        state["best_model"] = model.state_dict()
    checkpoint()
    return state


# ------------------------------------------------------------------------------------------- commands
def run_model(name, no_export=False):
    # 2 threads by default; under heavy sharing several 1-thread runs use the cores better (HEADSCOPE_THREADS=1)
    torch.set_num_threads(int(os.environ.get("HEADSCOPE_THREADS", "2")))
    configs = load_configs()
    if name not in configs:
        sys.exit(f"unknown model {name}; known: {', '.join(configs)}")
    tc = configs[name]
    work = os.path.join(CACHE, "train", name)
    os.makedirs(work, exist_ok=True)
    log = Logger(work)
    train_txt, val_txt = ensure_data()
    tok_dir = ensure_tokenizer(tc["vocab_size"], train_txt, folder=tokenizer_dir(tc), log=log, kind=tc.get("tokenizer"))
    enc = bpe.Encoder.load(tok_dir)
    assert len(enc.encoder) == tc["vocab_size"], "tokenizer size differs from config"
    ids_train = encode_file(enc, train_txt, os.path.join(CACHE, "data", f"train-{tc['vocab_size']}.npy"), tok_dir)
    ids_val = encode_file(enc, val_txt, os.path.join(CACHE, "data", f"val-{tc['vocab_size']}.npy"), tok_dir)
    state = train_model(
        name, tc, ids_train, ids_val, work, log, induction_seqs=head_metrics.repeated_lists(enc, 4, seed=99)
    )
    log(
        f"done: best val {state['best_val']:.4f} at step {state['best_step']}, "
        f"{state['tokens_seen']} tokens in {state['train_seconds'] / 60:.1f} min"
    )
    if not no_export:
        import export

        out = os.path.join(ROOT, "web", "models", name)
        export.export_model(name, tc, state, tok_dir, val_txt, out, log=log)
        log(f"exported to {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="model name from scripts/train/configs.json")
    ap.add_argument("--smoke", action="store_true", help="tiny end-to-end run in a temp dir")
    ap.add_argument("--no-export", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        import smoke  # smoke.py: it imports this module's training functions

        smoke.run_smoke()
    elif a.model:
        run_model(a.model, a.no_export)
    else:
        ap.error("--model NAME or --smoke")


if __name__ == "__main__":
    main()
