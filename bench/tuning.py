"""Benchmark (not a test): private hyperparameter search vs the defaults, same total ε.

On digits (DP-MERF) and on a mixed-type CSV this bench generates (independent marginals,
and DP-MERF), a private search (engine/runs/private_search.py: random K with E[K] ≈ 10, each
candidate's settings drawn from a grid over three knobs, noisy validation score, only the
best released) at a total ε, against the method's default settings run once at that same
total ε on the whole training part. Prints, per search: total ε (repeat-and-select), the
plain-composition ε of the same search, K, the released candidate's LogReg accuracy on
the real test part (a NON-private diagnostic) and its noisy validation score, seconds.
Runs are charged to a throwaway store's ledger, never the user's.

    .venv/bin/python bench/tuning.py [--epsilon 2] [--mean 10] [--only digits|csv] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from engine.core.config import RunConfig  # noqa: E402


def mixed_csv(path: Path, n: int, seed: int = 0) -> Path:
    """Numeric and categorical columns, a label that depends on both (fixed seed: the
    data are made up, the DP noise is not)."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    income = np.round(rng.lognormal(10, 0.5, n), 2)
    city = rng.choice(["Oslo", "Bergen", "Alta", "Bodø"], n, p=[0.4, 0.3, 0.2, 0.1])
    smoker = rng.choice(["no", "yes"], n, p=[0.7, 0.3])
    logit = 0.05 * (age - 50) + 0.8 * (smoker == "yes") + 0.6 * (city == "Alta") \
        - 0.3 * np.log(income / 20000)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "sick", "well")
    pd.DataFrame({"age": age, "income": income, "city": city, "smoker": smoker,
                  "outcome": y}).to_csv(path, index=False)
    return path


def cases(csv: Path, tiny: bool) -> list[tuple[str, RunConfig, dict]]:
    opts = {"path": str(csv), "label": "outcome", "categorical": ["city", "smoker"],
            "bounds": {"age": [18, 90], "income": [0, 200000]}}
    if tiny:
        fast = {"n_features": 100, "epochs": 1, "batch_size": 100}
        return [("digits", RunConfig(method="dpmerf", params=fast),
                 {"lr": [0.01, 0.03], "n_features": [100, 200], "batch_size": [100, 200]}),
                ("csv", RunConfig(method="marginals", dataset="csv", data_options=opts),
                 {"bins": [4, 8], "conditional": [True, False], "counts_share": [0.05, 0.2]})]
    return [("digits", RunConfig(method="dpmerf", params={"epochs": 30}),
             {"n_features": [500, 1000, 2000], "lr": [0.003, 0.01, 0.03],
              "batch_size": [100, 200, 500]}),
            ("csv", RunConfig(method="marginals", dataset="csv", data_options=opts),
             {"bins": [4, 8, 16, 32], "conditional": [True, False],
              "counts_share": [0.02, 0.05, 0.2]}),
            ("csv", RunConfig(method="dpmerf", dataset="csv", data_options=opts,
                              params={"epochs": 20}),
             {"n_features": [500, 1000, 2000], "lr": [0.003, 0.01, 0.03],
              "latent": [5, 10, 20]})]


def defaults_once(config: RunConfig, epsilon: float, out: Path) -> tuple[float, float]:
    """The method's defaults (plus the case's fixed settings), one run at the total ε on
    the whole training part: (LogReg accuracy on the real test part, seconds)."""
    from engine.evaluation.utility import fit_and_score
    from engine.runs.runner import execute, prepare

    t0 = time.perf_counter()
    cfg = RunConfig(**{**config.to_dict(), "epsilon": epsilon})
    prepared = prepare(cfg)
    result = None
    for ev in execute(cfg, out, full_eval=False, prepared=prepared):
        if ev.phase == "done":
            result = ev.result
    acc = fit_and_score("logreg", result.x, result.y, prepared.data)["accuracy"]
    return acc, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=2.0, help="total ε of each search")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--mean", type=float, default=10.0, help="E[K]")
    ap.add_argument("--distribution", default="geometric", choices=("geometric", "poisson"))
    ap.add_argument("--only", default="", help="digits or csv")
    ap.add_argument("--tiny", action="store_true", help="seconds-scale check (the test runs it)")
    args = ap.parse_args(argv)
    if args.tiny:
        args.mean = min(args.mean, 2.0)
    torch.set_num_threads(1)
    from engine.runs.private_search import search

    rows = []
    with tempfile.TemporaryDirectory(prefix="dpsynth-bench-tuning-") as tmp:
        os.environ["DPSYNTH_RUNS"] = str(Path(tmp) / "runs")  # a throwaway ledger
        csv = mixed_csv(Path(tmp) / "mixed.csv", 300 if args.tiny else 3000)
        print(f"{'data':7s} {'method':9s} {'mode':22s} {'total ε':>8s} {'plain ε':>8s} "
              f"{'ε each':>7s} {'K':>3s} {'test acc*':>9s} {'val score':>9s} {'seconds':>8s}",
              flush=True)
        for i, (name, base, grid) in enumerate(cases(csv, args.tiny)):
            if args.only and name != args.only:
                continue
            base = RunConfig(**{**base.to_dict(), "delta": args.delta})
            t0 = time.perf_counter()
            rep = search(base, grid, epsilon=args.epsilon, mean=args.mean,
                         distribution=args.distribution, out_dir=Path(tmp) / f"search{i}")
            s, rel = rep["search"], rep.get("released", {})
            acc = rep.get("accuracy", {}).get("synthetic/logreg", float("nan"))
            row = {"data": name, "method": base.method, "mode": "private search",
                   "epsilon": s["epsilon_total"], "plain": s["epsilon_plain_composition"],
                   "each": s["epsilon_per_candidate"], "K": s["K"], "accuracy": acc,
                   "score": rel.get("noisy_validation_accuracy"),
                   "seconds": time.perf_counter() - t0, "settings": rel.get("settings")}
            rows.append(row)
            _print(row)
            acc, secs = defaults_once(base, s["epsilon_total"], Path(tmp) / f"default{i}")
            row = {"data": name, "method": base.method, "mode": "defaults, one run",
                   "epsilon": s["epsilon_total"], "plain": s["epsilon_total"],
                   "each": s["epsilon_total"], "K": 1,
                   "accuracy": acc, "score": None, "seconds": secs, "settings": None}
            rows.append(row)
            _print(row)
    print("* LogReg trained on the released synthetic data, tested on the real test part: "
          "a NON-private diagnostic (the search itself used only its noisy validation score).")
    return rows


def _print(r: dict) -> None:
    score = "" if r["score"] is None else f"{r['score']:.3f}"
    print(f"{r['data']:7s} {r['method']:9s} {r['mode']:22s} {r['epsilon']:8.3f} {r['plain']:8.3f} "
          f"{r['each']:7.3f} {r['K']:3d} {r['accuracy']:9.3f} {score:>9s} {r['seconds']:8.1f}"
          + (f"  released: {r['settings']}" if r["settings"] else ""), flush=True)


if __name__ == "__main__":
    main()
