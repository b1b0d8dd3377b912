"""DataLens on Fashion-MNIST (or any image dataset): accuracy of a CNN and a logistic
regression trained on the synthetic set and tested on real records, over several seeds,
with wall time, seconds per iteration and peak memory.

Not a test. The issue's budget (ε=1, δ=1e-5, 4,000 small teachers, exact accounting → 149
iterations), three seeds, on this CPU, with the defaults (votes on 2×2 pixel blocks: k=50
of 196, σ=2500, the same noise multiplier as the paper's k=200 of 784 pixels, σ=5000):
    python -m bench.datalens_fashion --seeds 0 1 2
The paper's votes on single pixels:
    python -m bench.datalens_fashion --param vote_pool=1 --param top_k=200 --param sigma=5000 --param beta=0.7
The same on a GPU, or with the official conv teachers:
    python -m bench.datalens_fashion --device cuda --param teacher=official
Settings are chosen on held-out TRAINING records (the test split stays untouched):
    python -m bench.datalens_fashion --holdout 10000 --param teacher_hidden=32
Each seed's released samples as a picture (a row per class):
    python -m bench.datalens_fashion --grid out/datalens-{seed}.png
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `make bench-datalens` runs it as a script

import numpy as np
import torch

from engine.data import catalog as datasets
from engine.methods.datalens import method as datalens
from engine.methods.datalens import accounting as datalens_accounting
from engine.privacy import accountant as privacy
from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.methods.registry import estimate_cost, params_for

PAPER_CNN = {("fashion_mnist", 1.0): 0.6478, ("fashion_mnist", 10.0): 0.7061,
             ("mnist", 1.0): 0.7123, ("mnist", 10.0): 0.8066}


def _param(text: str) -> tuple[str, object]:
    key, sep, raw = text.partition("=")
    if not sep:
        raise InputError(f"--param must look like key=value. Got {text!r}.")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw  # a plain string such as teacher=official


def holdout(data, n: int, seed: int = 0):
    """Move n TRAINING records into the evaluation split (for choosing settings)."""
    perm = np.random.default_rng(seed).permutation(data.n_train)
    ev, tr = perm[:n], perm[n:]
    return replace(data, x_train=data.x_train[tr], y_train=data.y_train[tr],
                   x_test=data.x_train[ev], y_test=data.y_train[ev])


def run_once(cfg: RunConfig, p, data, device, cnn_epochs: int, grid: str | None = None) -> dict:
    from sklearn.linear_model import LogisticRegression

    from engine.evaluation.cnn import cnn_accuracy

    t0, result, last = time.time(), None, 0.0
    for ev in datalens.train(cfg, p, data, device, threading.Event()):
        if ev.phase == "train" and (time.time() - last > 30 or ev.step == ev.total):
            last = time.time()
            print(f"  step {ev.step}/{ev.total} eps {ev.epsilon_spent:.4f} student loss {ev.loss:.2e} "
                  f"vote density {ev.metrics['vote_density']:.3f} ({last - t0:.0f}s)", flush=True)
        if ev.phase == "done":
            result = ev.result
    train_s = time.time() - t0
    steps = result.privacy.steps
    if grid:
        from engine.data.render import image_grid

        path = Path(grid.format(seed=cfg.seed))
        path.parent.mkdir(parents=True, exist_ok=True)
        image_grid(result.x, result.y, data.class_names).save(path)
        print(f"  samples: {path}", flush=True)
    t1 = time.time()
    cnn = cnn_accuracy(result.x, result.y, data.x_test, data.y_test, device=device, seed=cfg.seed,
                       max_epochs=cnn_epochs, n_classes=data.n_classes)["accuracy"]
    flat = result.x.reshape(len(result.x), -1)
    logreg = LogisticRegression(max_iter=300).fit(flat, result.y).score(
        data.x_test.reshape(len(data.x_test), -1), data.y_test)
    out = {"seed": cfg.seed, "cnn": cnn, "logreg": logreg, "steps": steps, "train_s": train_s,
           "s_per_iter": train_s / max(steps, 1), "eval_s": time.time() - t1,
           "eps": result.privacy.epsilon_spent}
    print(f"seed {cfg.seed}: CNN {cnn:.4f}, LogReg {logreg:.4f}; {steps} steps in {train_s:.0f}s "
          f"({out['s_per_iter']:.2f} s/iteration), eval {out['eval_s']:.0f}s, eps {out['eps']:.4f}", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="fashion_mnist")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--param", action="append", default=[], type=_param, metavar="KEY=VALUE",
                    help="a DataLens parameter (repeatable), e.g. teachers=4000 or teacher=official")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--holdout", type=int, default=0,
                    help="evaluate on this many held-out TRAINING records instead of the test split")
    ap.add_argument("--n-synthetic", type=int, help="default: n_train")
    ap.add_argument("--cnn-epochs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    ap.add_argument("--grid", metavar="PNG", help="save each seed's released samples, a row per "
                                                  "class, e.g. out/dl-{seed}.png")
    try:
        a = ap.parse_args(argv)
        if a.threads:
            torch.set_num_threads(a.threads)
        from engine.core.device import resolve_device

        device = resolve_device(a.device)
        data = datasets.load(a.dataset)
        if a.holdout:
            data = holdout(data, a.holdout)
        cfg = RunConfig(method="datalens", dataset=data.name, epsilon=a.epsilon, delta=a.delta,
                        n_synthetic=a.n_synthetic, params=dict(a.param), device=str(device))
        cfg.validate()
        p = params_for(cfg, data)
        preview = {**datalens.privacy_preview(cfg, p, data), **estimate_cost(cfg, data, p)}
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"dataset {data.name}: {data.n_train} train, {len(data.y_test)} "
          f"{'held-out training' if a.holdout else 'test'} records; device {device}; threads "
          f"{torch.get_num_threads()}")
    print(f"{p.teacher} teachers: {p.teachers} x {p.partition_size(data.n_train)} records, top_k {p.top_k}, "
          f"sigma {p.sigma}, beta {p.beta}, clip {p.clip}, votes on {p.vote_pool}x{p.vote_pool} pixel blocks, "
          f"released samples blurred {p.blur} px")
    print("preview:", preview)
    if "refuse" in preview:
        print(f"error: {preview['refuse']}", file=sys.stderr)
        return 2
    if a.epsilon == 1.0:
        print("affordable steps, paper setting (k=200, sigma=5000, 15 records/step, eps=1):",
              {acc: datalens_accounting.affordable_steps(epsilon=1.0, delta=1e-5, top_k=200, sigma=5000.0,
                                                         batch=15, accountant=acc) for acc in privacy.ACCOUNTANTS})
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    runs = [run_once(replace(cfg, seed=s), p, data, device, a.cnn_epochs, a.grid) for s in a.seeds]
    if "estimated seconds" in preview:  # the cost preview against what the runs measured
        pred = float(preview["estimated seconds"])
        for r in runs:
            print(f"preview error, seed {r['seed']}: predicted {pred:.0f} s "
                  f"({preview.get('estimate basis', 'timed now')}) vs measured {r['train_s']:.0f} s "
                  f"({100 * (pred - r['train_s']) / r['train_s']:+.0f} %)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB"
          + (f", peak CUDA {torch.cuda.max_memory_allocated() / 1e9:.2f} GB" if device.type == "cuda" else ""))
    for key in ("cnn", "logreg", "s_per_iter", "train_s"):
        vals = [r[key] for r in runs]
        print(f"{key}: range {min(vals):.4f}-{max(vals):.4f}, mean {np.mean(vals):.4f} over {len(vals)} seed(s)")
    paper = PAPER_CNN.get((data.name, a.epsilon))
    if paper and not a.holdout:
        print(f"paper CNN accuracy at this epsilon: {paper}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
