"""Benchmark (not a test): AIM against the independent-marginals baseline, as the AIM
paper compares it with independent baselines. For each dataset, method and seed at one ε:
downstream accuracy and ROC-AUC (logistic regression trained on synthetic, tested on the
real test split), the workload error (mean total-variation distance of every 2-way
marginal, real training vs synthetic, on quantile bins of the real data: an evaluation,
not a release), seconds, and the process's peak resident memory.

    .venv/bin/python bench/aim.py [--epsilon 1] [--seeds 3] [--datasets breast_cancer mixed]

`mixed` is a generated census-like table (n = 4,000: integer, skewed, categorical and
dependent columns with public bounds), so nothing is downloaded.
"""

from __future__ import annotations

import argparse
import itertools
import resource
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from engine.config import RunConfig  # noqa: E402
from engine.data import load  # noqa: E402
from engine.dataset import Column, Dataset, split_train_test  # noqa: E402
from engine.evaluate import full_evaluation  # noqa: E402
from engine.registry import get_method, make_params  # noqa: E402


def mixed_table(n: int = 4000, seed: int = 0) -> Dataset:
    """Census-like: education (cat) drives its years (num), age and hours are integers,
    gain is zero-inflated, the label depends on education, age and hours."""
    rng = np.random.default_rng(seed)
    edu = rng.choice(5, n, p=[0.1, 0.3, 0.3, 0.2, 0.1])
    years = np.array([8, 10, 12, 14, 16])[edu] + rng.integers(0, 2, n)
    age = np.clip(rng.normal(40, 12, n).round(), 17, 90)
    hours = np.clip(rng.normal(38 + 2 * edu, 8, n).round(), 1, 99)
    gain = np.where(rng.random(n) < 0.9, 0.0, rng.exponential(5000, n))
    sex = rng.integers(0, 2, n)
    logit = 0.9 * (edu - 2) + 0.04 * (age - 40) + 0.05 * (hours - 40) + 0.5 * sex - 0.8
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    x = np.column_stack([age, edu, years, hours, gain, sex]).astype(np.float64)
    cols = [Column("age", "num", bounds=(17, 90), bounds_source="public"),
            Column("education", "cat", categories=["a", "b", "c", "d", "e"]),
            Column("years", "num", bounds=(8, 17), bounds_source="public"),
            Column("hours", "num", bounds=(1, 99), bounds_source="public"),
            Column("gain", "num", bounds=(0, 40000), bounds_source="public"),
            Column("sex", "cat", categories=["f", "m"])]
    xtr, xte, ytr, yte = split_train_test(x, y, seed)
    return Dataset("mixed", "tabular", xtr, ytr, xte, yte, ["<=50K", ">50K"], columns=cols)


def workload_error(real_x, real_y, syn_x, syn_y, columns, bins: int = 5) -> float:
    """Mean total variation over every 2-way marginal (label included), on quantile bins
    of the real training data."""
    def codes(x, y):
        out = []
        for j, c in enumerate(columns):
            if c.kind == "cat":
                out.append(x[:, j].astype(int))
            else:
                edges = np.unique(np.quantile(real_x[:, j], np.linspace(0, 1, bins + 1))[1:-1])
                out.append(np.searchsorted(edges, x[:, j], side="right"))
        return out + [y.astype(int)]

    r, s = codes(real_x, real_y), codes(syn_x, syn_y)
    errors = []
    for a, b in itertools.combinations(range(len(r)), 2):
        size = max(r[b].max(), s[b].max()) + 1
        keys_r, keys_s = r[a] * size + r[b], s[a] * size + s[b]
        m = max(keys_r.max(), keys_s.max()) + 1
        pr = np.bincount(keys_r, minlength=m) / len(keys_r)
        ps = np.bincount(keys_s, minlength=m) / len(keys_s)
        errors.append(0.5 * np.abs(pr - ps).sum())
    return float(np.mean(errors))


def run_one(method: str, data: Dataset, epsilon: float, seed: int, overrides=None) -> dict:
    config = RunConfig(method=method, dataset=data.name, epsilon=epsilon, seed=seed)
    params = make_params(method, data, overrides or {})
    t0 = time.perf_counter()
    *_, done = get_method(method).train(config, params, data, "cpu", threading.Event())
    seconds = time.perf_counter() - t0
    res = done.result
    scores = full_evaluation(res.x, res.y, data, models=("logreg",), include_real=False, seed=seed)
    return {"accuracy": scores["synthetic/logreg"], "roc_auc": scores["synthetic/logreg/roc_auc"],
            "workload_tv": workload_error(data.x_train, data.y_train, res.x, res.y, data.columns),
            "epsilon": res.privacy.epsilon_spent, "seconds": seconds}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--datasets", nargs="+", default=["breast_cancer", "mixed"])
    ap.add_argument("--methods", nargs="+", default=["aim", "marginals"])
    ap.add_argument("--n", type=int, default=4000, help="records of the mixed table")
    ap.add_argument("--aim", default="{}", help="AIM overrides as a Python dict (tiny runs)")
    args = ap.parse_args(argv)
    print(f"epsilon = {args.epsilon}, seeds 0..{args.seeds - 1}")
    print(f"{'dataset':14} {'method':10} {'accuracy':>16} {'ROC-AUC':>16} {'2-way TV':>16} "
          f"{'eps':>6} {'seconds':>8}")
    for name in args.datasets:
        for method in args.methods:
            rows = []
            for seed in range(args.seeds):
                data = mixed_table(args.n, seed) if name == "mixed" else load(name, seed=seed)
                over = eval(args.aim) if method == "aim" else {}  # noqa: S307 (bench CLI)
                rows.append(run_one(method, data, args.epsilon, seed, over))

            def cell(key, r=rows):
                v = np.array([row[key] for row in r])
                return f"{v.mean():.3f} ± {v.std():.3f}"
            print(f"{name:14} {method:10} {cell('accuracy'):>16} {cell('roc_auc'):>16} "
                  f"{cell('workload_tv'):>16} {max(r['epsilon'] for r in rows):6.3f} "
                  f"{np.mean([r['seconds'] for r in rows]):8.1f}", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
