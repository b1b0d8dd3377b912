"""Benchmark (not a test): every method's default run at ε = 1 and ε = 10, per dataset.

Issue 41, item 3: defaults are derived for the ε asked (engine.methods.registry.params_for),
so a larger ε should never give a worse default run. For each method, dataset (digits,
breast_cancer; the ones the method accepts) and seed it trains in this process with the
defaults for that ε, scores LogReg on the synthetic data against the real test split,
and prints the mean over seeds per ε, ε spent and the training seconds.

    .venv/bin/python bench/defaults_by_epsilon.py [--methods marginals dpmerf aim datalens]
        [--datasets digits breast_cancer] [--eps 1 10] [--seeds 3] [--tiny]

--tiny: marginals on breast_cancer, one seed (tests/test_defaults_by_epsilon_runs.py runs it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core.config import RunConfig  # noqa: E402
from engine.core.errors import InputError  # noqa: E402
from engine.data import catalog as datasets  # noqa: E402
from engine.evaluation.utility import fit_and_score  # noqa: E402
from engine.methods.registry import METHODS, get_method, params_for  # noqa: E402


def default_run(method: str, dataset: str, epsilon: float, seed: int) -> dict | None:
    """One run of `method`'s defaults for (ε, δ = 1e-5): LogReg accuracy, ε spent, seconds.
    None when the method does not take this dataset."""
    config = RunConfig(method=method, dataset=dataset, epsilon=epsilon, seed=seed,
                       device="cpu").validate()
    data = datasets.load(dataset, seed=seed)
    if data.kind not in getattr(get_method(method), "DATA_KINDS", ("image", "tabular")):
        return None  # AIM models tables only
    try:
        params = params_for(config, data)
    except InputError:  # DataLens refuses tables
        return None
    t0 = time.perf_counter()
    result = None
    for event in get_method(method).train(config, params, data, "cpu", threading.Event()):
        if event.phase == "done":
            result = event.result
    seconds = time.perf_counter() - t0
    score = fit_and_score("logreg", result.x, result.y, data, seed=seed)
    return {"accuracy": score["accuracy"], "spent": result.privacy.epsilon_spent,
            "seconds": seconds}


def compare(methods, sets, eps, seeds: int) -> list[dict]:
    """Every (method, dataset) the method accepts: mean LogReg per ε over `seeds`, printed
    as a table row as soon as it is measured."""
    rows = []
    print("| method | dataset | " + " | ".join(f"LogReg ε={e:g}" for e in eps)
          + " | ε spent | train s |\n|---|---|" + "---|" * (len(eps) + 2), flush=True)
    for method in methods:
        for name in sets:
            runs = {e: [default_run(method, name, e, s) for s in range(seeds)] for e in eps}
            if any(r is None for rs in runs.values() for r in rs):
                continue  # e.g. DataLens on a table
            acc = {e: statistics.fmean(r["accuracy"] for r in rs) for e, rs in runs.items()}
            spent = " / ".join(f"{max(r['spent'] for r in rs):.3g}" for rs in runs.values())
            secs = " / ".join(f"{statistics.median(r['seconds'] for r in rs):.1f}"
                              for rs in runs.values())
            print(f"| {method} | {name} | " + " | ".join(f"{acc[e]:.3f}" for e in eps)
                  + f" | {spent} | {secs} |", flush=True)
            rows.append({"method": method, "dataset": name, "accuracy": acc,
                         "runs": {e: rs for e, rs in runs.items()}})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--datasets", nargs="+", default=["digits", "breast_cancer"])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args(argv)
    if args.tiny:
        args.methods, args.datasets, args.seeds = ["marginals"], ["breast_cancer"], 1
    compare(args.methods, args.datasets, args.eps, args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
