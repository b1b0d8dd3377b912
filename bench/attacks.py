"""Benchmark (not a test): membership attacks on real runs, next to the DP bound.

For digits and a generated mixed-type CSV (numeric + categorical columns, no download),
each method (DataLens on images only) at each ε trains a small run, then
engine/audit/membership_run.py plays the membership game on its release and prints, per run, each
attack's ROC-AUC [95 % bootstrap CI] and TPR at 1 % FPR [95 % Clopper–Pearson CI] next
to the bound's TPR at 1 % FPR (the run's own Gaussian curve / the (ε, δ) curve) and the
largest AUC the run's own curve allows. Positive controls: a "release" that is a 90 %
subsample of the training records (memorises) and the ε = ∞ runs (non-private). The
cost of one attack is measured on digits and on an Adult-sized table (45,222 rows).
Exit status 1 when any point lies outside its bound beyond its interval.

NOT PRIVATE: every figure uses the runs' training records (a diagnostic, see
engine/audit/membership.py). Training settings are small so that the grid finishes in minutes.

    .venv/bin/python bench/attacks.py [--data digits csv] [--epsilon 0.1 1 10 inf]
                                      [--rows 3000] [--no-cost] [--tiny]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from engine.core.jsonsafe import dumps  # noqa: E402
from engine.audit import membership_run as attack_run  # noqa: E402
from engine.core.config import RunConfig, parse_epsilon  # noqa: E402
from engine.methods.registry import METHODS  # noqa: E402
from engine.runs.runner import execute  # noqa: E402

ADULT_ROWS = 45_222  # Adult (census income) without missing values
# Small settings: each run trains in seconds to a minute on a shared 2-core CPU.
SMALL = {
    ("digits", "dpmerf"): {"n_features": 2000, "epochs": 10, "batch_size": 200},
    ("digits", "datalens"): {"teachers": 200, "top_k": 20, "max_steps": 40,
                             "student_widths": [128, 32], "teacher_widths": [4, 8, 32]},
    ("digits", "marginals"): {},
    ("csv", "dpmerf"): {"n_features": 1000, "epochs": 20, "batch_size": 200},
    ("csv", "marginals"): {},
}
TINY = {
    ("digits", "dpmerf"): {"n_features": 200, "epochs": 2, "batch_size": 200},
    ("digits", "datalens"): {"teachers": 60, "records_per_teacher": 5, "top_k": 6,
                             "sigma": 80.0, "latent": 8, "teacher_widths": [4, 8, 16],
                             "student_widths": [32, 8], "first_teacher_steps": 2,
                             "teacher_steps": 1, "max_steps": 3},
    ("digits", "marginals"): {},
    ("csv", "dpmerf"): {"n_features": 100, "epochs": 2, "batch_size": 100},
    ("csv", "marginals"): {},
}
EDUCATION = ["HS-grad", "Some-college", "Bachelors", "Masters", "Assoc", "11th", "Doctorate"]
OCCUPATION = ["Craft", "Sales", "Exec", "Admin", "Service", "Tech"]


def mixed_csv(path: Path, rows: int, seed: int = 0) -> dict:
    """An Adult-like table drawn with numpy (ages, hours, capital gain; education,
    occupation, sex; income), and the public metadata a data owner would give."""
    rng = np.random.default_rng(seed)
    import pandas as pd

    edu = rng.choice(len(EDUCATION), rows, p=[.32, .22, .17, .06, .08, .1, .05])
    occ = rng.integers(0, len(OCCUPATION), rows)
    sex = rng.integers(0, 2, rows)
    age = np.clip(rng.normal(38 + 2 * edu, 12), 17, 90).round()
    hours = np.clip(rng.normal(38 + 4 * sex + 2 * (occ == 2), 11), 1, 99).round()
    gain = np.where(rng.random(rows) < 0.08, rng.exponential(8000, rows), 0).round()
    logit = -6 + 0.05 * age + 0.4 * edu + 0.04 * hours + 0.8 * (occ == 2) + 0.5 * sex \
        + (gain > 5000) * 2
    income = np.where(rng.random(rows) < 1 / (1 + np.exp(-logit)), ">50K", "<=50K")
    pd.DataFrame({"age": age, "hours": hours, "capital_gain": gain,
                  "education": np.array(EDUCATION)[edu], "occupation": np.array(OCCUPATION)[occ],
                  "sex": np.array(["F", "M"])[sex], "income": income}).to_csv(path, index=False)
    return {"path": str(path), "label": "income", "classes": ["<=50K", ">50K"],
            "bounds": {"age": [17, 90], "hours": [1, 99], "capital_gain": [0, 100000]},
            "categories": {"education": EDUCATION, "occupation": OCCUPATION, "sex": ["F", "M"]}}


def train(config: RunConfig, out: Path) -> Path:
    with closing(execute(config, out, full_eval=False)) as events:
        for _ in events:
            pass
    return out


def row(dataset: str, what: str, eps: str, result: dict) -> str:
    cells = []
    for a in result["attacks"].values():
        lo, hi = a["auc_ci"]
        tlo, thi = a["tpr_at_1pct_fpr_ci"]
        cells.append(f"{a['auc']:.2f} [{lo:.2f}, {hi:.2f}] / {a['tpr_at_1pct_fpr']:.3f} "
                     f"[{tlo:.3f}, {thi:.3f}]")
    b = result["bounds"]
    own = b.get("report", b["epsilon"])
    inside = "yes" if result["inside_bound"] else "**NO**"
    return (f"| {dataset} | {what} | {eps} | " + " | ".join(cells)
            + f" | {own['tpr_at_1pct_fpr']:.3f} / {b['epsilon']['tpr_at_1pct_fpr']:.3f} | "
              f"{own['auc_max']:.3f} | {inside} |")


def header(result: dict) -> str:
    names = list(result["attacks"])
    return ("| data | release | ε | " + " | ".join(f"{n}: AUC / TPR@1%FPR" for n in names)
            + " | bound TPR@1%FPR (own / ε) | bound max AUC | inside |\n|"
            + "---|" * (len(names) + 6))


def memorising(data, rng):
    keep = rng.choice(data.n_train, int(0.9 * data.n_train), replace=False)
    return data.x_train[keep], data.y_train[keep]


def cost(data, label: str, rng) -> str:
    """Seconds for one attack on a release the size of the training set."""
    x, y = memorising(data, rng)
    info = attack_run.data_sizes(data, len(y))
    t0 = time.perf_counter()
    attack_run.measure(data, x, y, epsilon=math.inf, delta=1e-5)
    import os

    load = os.getloadavg()[0]  # the machine is shared: say how busy it was
    return (f"{label}: {info['members']:,} + {info['non-members']:,} records vs {len(y):,} "
            f"synthetic, {info['features']} features: {time.perf_counter() - t0:.1f} s "
            f"(preview said ~{info['estimated seconds']:.0f} s; load average {load:.1f} on "
            f"{os.cpu_count()} cores)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", nargs="+", default=["0.1", "1", "10", "inf"])
    ap.add_argument("--rows", type=int, default=3000, help="rows of the generated CSV")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--data", nargs="+", default=["digits", "csv"], choices=["digits", "csv"])
    ap.add_argument("--no-cost", action="store_true", help="skip the two timed attacks")
    ap.add_argument("--tiny", action="store_true", help="seconds-long settings (for the test)")
    ap.add_argument("--json", help="also write every result to this file")
    args = ap.parse_args()
    import torch

    from engine.data import catalog as datasets

    torch.set_num_threads(1)
    settings = TINY if args.tiny else SMALL
    rows = 400 if args.tiny else args.rows
    rng = np.random.default_rng(0)
    lines, results, ok = [], [], True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        csv_options = mixed_csv(tmp / "mixed.csv", rows)
        sources = {"digits": ("digits", {}), "csv": ("csv", csv_options)}
        for key in args.data:
            name, options = sources[key]
            data = datasets.load(name, options=options)
            result = attack_run.measure(data, *memorising(data, rng), epsilon=math.inf,
                                        delta=args.delta)
            lines.append(row(key, "control: 90 % of the training records", "—", result))
            for method in METHODS:
                if (key, method) not in settings:
                    continue  # DataLens is for images only
                for eps in args.epsilon:
                    config = RunConfig(method=method, dataset=name, epsilon=parse_epsilon(eps),
                                       delta=args.delta, data_options=options, device="cpu",
                                       params=settings[(key, method)]).validate()
                    t0 = time.perf_counter()
                    run = train(config, tmp / f"{key}-{method}-{eps}")
                    t1 = time.perf_counter()
                    result = attack_run.attack_run(run)
                    print(f"{key} {method} ε={eps}: trained {t1 - t0:.0f} s, attacked "
                          f"{result['seconds']:.1f} s", file=sys.stderr)
                    lines.append(row(key, method, eps, result))
                    results.append({"data": key, "method": method, "epsilon": eps, **result})
                    ok &= result["inside_bound"]
                    for v in result["violations"]:
                        print(f"BOUND VIOLATED: {key} {method} ε={eps}: {v}", file=sys.stderr)
        print(header(result))
        print("\n".join(lines))
        if not args.no_cost:
            print()
            print(cost(datasets.load("digits"), "digits", rng))
            adult = 2000 if args.tiny else ADULT_ROWS
            print(cost(datasets.load("csv", options=mixed_csv(tmp / "adult.csv", adult)),
                       f"mixed CSV of {adult:,} rows", rng))
    if args.json:
        Path(args.json).write_text(dumps(results, indent=1))
    if not ok:
        print("A measured point lies outside its DP bound beyond its interval: a bug in the "
              "code or in the accounting.", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
