"""Benchmark (not a test): rules broken by each tabular method on the census-like table.

Issue 41, item 2: the share of synthetic rows with a value outside its bounds or a pair
of values the real table never holds (engine/evaluation/fidelity.rules_broken; the
schema of bench/census.py declares education → education_num). One default run per
method at ε (default 1), printed as a table row as soon as it is measured.

    .venv/bin/python bench/rules_broken.py [--rows 8000] [--eps 1] [--methods marginals dpmerf aim]
        [--tiny]

--tiny: 1,000 rows, the marginals baseline only (tests/test_dates_and_rules.py runs it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from census import write as write_census  # noqa: E402

from engine.core.config import RunConfig  # noqa: E402
from engine.data import catalog as datasets  # noqa: E402
from engine.evaluation.fidelity import rules_broken  # noqa: E402
from engine.methods.registry import get_method, params_for  # noqa: E402


def measure(method: str, options: dict, epsilon: float) -> dict:
    """One default run's rules broken (fidelity.rules_broken) and its training seconds."""
    config = RunConfig(method=method, dataset="csv", epsilon=epsilon, data_options=options,
                       device="cpu").validate()
    data = datasets.load("csv", seed=0, options=options)
    t0 = time.perf_counter()
    result = None
    for event in get_method(method).train(config, params_for(config, data), data, "cpu",
                                          threading.Event()):
        if event.phase == "done":
            result = event.result
    return {**rules_broken(data.x_train, result.x, data.columns),
            "seconds": time.perf_counter() - t0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8000)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--methods", nargs="+", default=["marginals", "dpmerf", "aim"])
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args(argv)
    if args.tiny:
        args.rows, args.methods = 1000, ["marginals"]
    with tempfile.TemporaryDirectory(prefix="bench-rules-") as tmp:
        csv, schema = write_census(Path(tmp) / "census.csv", rows=args.rows, seed=0)
        options = {"path": str(csv), "label": "income", "schema": str(schema)}
        print("| method | rows breaking a rule | values outside bounds | rows breaking a pair "
              "| worst pair | train s |\n|---|---|---|---|---|---|", flush=True)
        for method in args.methods:
            got = measure(method, options, args.eps)
            worst = max(got["pairs"].items(), key=lambda kv: kv[1], default=("–", 0.0))
            print(f"| {method} | {got['rows']:.3f} | {got['outside_bounds']:.3f} | "
                  f"{got['broken_pairs']:.3f} | {worst[0]}: {worst[1]:.3f} | "
                  f"{got['seconds']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
