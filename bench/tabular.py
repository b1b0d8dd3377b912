"""Benchmark (not a test): every tabular method on breast_cancer, a census-like CSV and a
public real table (Fair's affairs survey, shipped inside statsmodels: bench/fair.py).

For each dataset, method (every one in engine.methods.registry.METHODS whose Params accept the
table), ε and seed it runs `python -m engine train` in a child process (so its peak
memory is its own, read from the OS), on a throw-away run store, and prints the mean ±
sd over seeds of: LogReg accuracy and ROC-AUC on the real test split, the mean
per-column fidelity distance and the mean dependence error (engine/evaluation/fidelity.py),
the share of rows breaking a rule (fidelity.rules_broken: a value outside its bounds or
a pair the real table never holds), the training seconds (median and range) and the
child's peak resident memory; after each dataset, LogReg on the real training split and
the majority class's share of the real test split (mean over the seeds' splits).

    .venv/bin/python bench/tabular.py [--eps 0.3 1 3] [--seeds 3] [--rows 40000] [--tiny]
        [--datasets breast_cancer census census_noschema fair] [--methods dpmerf marginals aim]

census_noschema: the same CSV without its schema, as a user who gives none would load it.
fair: 6,366 survey answers, label `had_affair`, its code book as the schema.

--tiny: 1,000 census rows and breast_cancer, ε = 1, one seed, DP-MERF with 2 epochs,
AIM with 3 rounds (tests/test_bench_tabular.py runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
from census import write as write_census  # noqa: E402

from engine.data import catalog as datasets  # noqa: E402
from engine.core.errors import InputError  # noqa: E402
from engine.methods.registry import METHODS, make_params  # noqa: E402

FIGURES = ("accuracy", "roc_auc", "fidelity", "dependence", "rules_broken", "seconds",
           "peak_mb")


def tabular_methods(options: dict) -> list[str]:
    """Methods whose parameters accept this table (DataLens is for images)."""
    data = datasets.load(options["dataset"], seed=0, options=options.get("data_options"))
    out = []
    for m in METHODS:
        try:
            make_params(m, data)
        except (InputError, ImportError):
            continue
        out.append(m)
    return out


def majority_share(ds: dict, seeds: int) -> list[float]:
    """Per seed's split, the share of the real test records in their most common class:
    the accuracy of always guessing it (a synthetic set that teaches no more scores so)."""
    out = []
    for seed in range(seeds):
        data = datasets.load(ds["dataset"], seed=seed, options=ds.get("data_options"))
        out.append(float(max(np.bincount(data.y_test.astype(int))) / len(data.y_test)))
    return out


def run_one(method: str, ds: dict, eps: float, seed: int, home: Path, extra: list[str]) -> dict:
    """One run in a child process; its figures from metrics.json and the OS."""
    out = home / f"{ds['name']}-{method}-{eps}-{seed}"
    cmd = [sys.executable, "-m", "engine", "train", "--method", method, "--dataset",
           ds["dataset"], "--epsilon", str(eps), "--seed", str(seed), "--device", "cpu",
           "--out", str(out), *extra]
    for k, v in (ds.get("data_options") or {}).items():
        cmd += ["--data-option", f"{k}={v}"]
    env = {**os.environ, "DPSYNTH_HOME": str(home), "DPSYNTH_RUNS": str(home / "runs")}
    t0 = time.perf_counter()
    log = home / f"{out.name}.log"  # a file, not a pipe: the progress bar would fill a
    with open(log, "w") as err_file:  # pipe nobody reads until the child ends (deadlock)
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=err_file)
        _, status, usage = os.wait4(proc.pid, 0)
    err = log.read_text()
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    metrics = json.loads((out / "metrics.json").read_text())
    acc = metrics["accuracy"]
    return {"accuracy": acc.get("synthetic/logreg"), "roc_auc": acc.get("synthetic/logreg/roc_auc"),
            "real_accuracy": acc.get("real/logreg"), "real_roc_auc": acc.get("real/logreg/roc_auc"),
            "fidelity": metrics["fidelity"]["mean_column_distance"],
            "dependence": metrics["fidelity"]["mean_dependence_error"],
            "rules_broken": metrics["fidelity"]["rules_broken"]["rows"],
            "seconds": metrics["seconds"]["train"], "wall": time.perf_counter() - t0,
            "peak_mb": usage.ru_maxrss / 1024}  # Linux: kilobytes


def _seconds(values: list) -> str:
    """Median and range: one run slowed by a busy machine should not move the figure."""
    med = statistics.median(values)
    d = 2 if med < 1 else 1
    return (f"{med:.{d}f} ({min(values):.{d}f}–{max(values):.{d}f})" if len(values) > 1
            else f"{med:.{d}f}")


def _cell(values: list) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "–"
    mean = statistics.fmean(vals)
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    digits = 0 if mean >= 100 else 1 if mean >= 10 else 3
    return f"{mean:.{digits}f} ± {sd:.{digits}f}" if len(vals) > 1 else f"{mean:.{digits}f}"


# --tiny checks that every figure comes out, not how good it is: a few steps each
# (AIM's 16·d rounds alone took most of the test's minute).
TINY_PARAMS = {"dpmerf": ["--param", "epochs=2"],
               "aim": ["--param", "rounds=3", "--param", "final_iters=50"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=40_000, help="census rows")
    ap.add_argument("--methods", nargs="+", help="default: every tabular method")
    ap.add_argument("--datasets", nargs="+", default=["breast_cancer", "census"],
                    choices=["breast_cancer", "census", "census_noschema", "fair"])
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--json", help="also write every run's figures to this file")
    args = ap.parse_args(argv)
    if args.tiny:
        args.eps, args.seeds, args.rows = [1.0], 1, 1000
    with tempfile.TemporaryDirectory(prefix="bench-tabular-") as tmp:
        home = Path(tmp)
        csv, schema = write_census(home / "census.csv", rows=args.rows, seed=0)
        sets = {"breast_cancer": {"name": "breast_cancer", "dataset": "breast_cancer"},
                "census": {"name": "census", "dataset": "csv",
                           "data_options": {"path": str(csv), "label": "income",
                                            "schema": str(schema)}},
                # as a user who gives no schema: kinds read from the records (disclosed),
                # numeric bounds released privately
                "census_noschema": {"name": "census_noschema", "dataset": "csv",
                                    "data_options": {"path": str(csv), "label": "income"}}}
        if "fair" in args.datasets:  # statsmodels' own copy: installed, never downloaded
            from fair import LABEL, write as write_fair

            fcsv, fschema = write_fair(home / "fair.csv")
            sets["fair"] = {"name": "fair", "dataset": "csv",
                            "data_options": {"path": str(fcsv), "label": LABEL,
                                             "schema": str(fschema)}}
        rows = []
        print("| data | method | ε | LogReg acc | ROC-AUC | column dist. | dependence err. "
              "| rules broken | train s (median, range) | peak MB |\n"
              "|---|---|---|---|---|---|---|---|---|---|", flush=True)
        for name in args.datasets:
            ds = sets[name]
            methods = args.methods or tabular_methods(ds)
            for method in methods:
                extra = TINY_PARAMS.get(method, []) if args.tiny else []
                for eps in args.eps:
                    runs = [run_one(method, ds, eps, s, home, extra) for s in range(args.seeds)]
                    rows += [{"data": name, "method": method, "epsilon": eps, **r} for r in runs]
                    cells = [(_seconds if k == "seconds" else _cell)([r[k] for r in runs])
                             for k in FIGURES]
                    print(f"| {name} | {method} | {eps:g} | " + " | ".join(cells) + " |",
                          flush=True)
            real = [r for r in rows if r["data"] == name]
            if real:
                print(f"| {name} | real data (LogReg on the real training split) | – | "
                      f"{_cell([real[0]['real_accuracy']])} | {_cell([real[0]['real_roc_auc']])} "
                      "| 0 | 0 | 0 | – | – |", flush=True)
                print(f"| {name} | majority class (share of the real test split) | – | "
                      f"{_cell(majority_share(ds, args.seeds))} | 0.500 | – | – | – | – | – |",
                      flush=True)
        if args.json:
            from engine.core.jsonsafe import write_json

            write_json(args.json, rows, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
