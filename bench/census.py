"""A census-like mixed-type table, generated deterministically from a seed (no download).

    .venv/bin/python bench/census.py OUT.csv [--rows 40000] [--seed 0]

Columns (shaped after the UCI Adult data's documented layout, values invented here):
age (integer 17–90), workclass, education and education_num (the same fact twice: a
label and its number), marital, occupation, sex (categoricals), capital_gain (integer,
≈ 92 % exact zeros, a heavy right tail), hours (integer 1–99, a spike at 40) and a
binary label `income` that depends on age, education, hours, capital gain and sex.
`SCHEMA` is the public metadata a data owner would know from the code book.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

EDUCATION = ["HS-grad", "Some-college", "Assoc", "Bachelors", "Masters", "Doctorate"]
EDU_NUM = [9, 10, 12, 13, 14, 16]
SCHEMA = {"age": {"kind": "integer", "bounds": [17, 90]},
          "education": {"determines": ["education_num"]},
          "education_num": {"kind": "categorical"},
          "capital_gain": {"kind": ["zero-inflated", "integer"], "mass": 0,
                           "bounds": [0, 99999]},
          "hours": {"kind": "integer", "bounds": [1, 99]}}


def make_census(rows: int = 40_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = np.clip(np.rint(17 + rng.gamma(4.0, 5.5, rows)), 17, 90).astype(int)
    edu = rng.choice(len(EDUCATION), rows, p=[.33, .23, .08, .22, .10, .04])
    sex = rng.choice(["Male", "Female"], rows, p=[.67, .33])
    workclass = rng.choice(["Private", "Self-emp", "Gov"], rows, p=[.74, .11, .15])
    marital = np.where(age < 25, rng.choice(["Never-married", "Married"], rows, p=[.85, .15]),
                       rng.choice(["Never-married", "Married", "Divorced"], rows,
                                  p=[.25, .55, .20]))
    occupation = np.where(edu >= 3, rng.choice(["Prof", "Exec", "Sales"], rows, p=[.5, .3, .2]),
                          rng.choice(["Craft", "Service", "Sales", "Admin"], rows))
    spike = rng.random(rows) < 0.45
    hours = np.where(spike, 40, np.clip(np.rint(rng.normal(41, 12, rows)), 1, 99)).astype(int)
    gain = np.where(rng.random(rows) < 0.92, 0,
                    np.clip(np.rint(rng.lognormal(8.3, 1.0, rows)), 1, 99999)).astype(int)
    score = (-6.7 + 0.045 * age + 0.55 * edu + 0.03 * hours + 0.9 * (sex == "Male")
             + 1.1 * (marital == "Married") + 2.5 * (gain > 0) + rng.logistic(size=rows) * 0.8)
    income = np.where(score > 0, ">50K", "<=50K")
    return pd.DataFrame({"age": age, "workclass": workclass,
                         "education": np.array(EDUCATION)[edu],
                         "education_num": np.array(EDU_NUM)[edu], "marital": marital,
                         "occupation": occupation, "sex": sex, "capital_gain": gain,
                         "hours": hours, "income": income})


def write(out: Path, rows: int = 40_000, seed: int = 0) -> tuple[Path, Path]:
    """The CSV at `out` and its schema beside it (OUT.schema.json)."""
    out = Path(out)
    make_census(rows, seed).to_csv(out, index=False)
    schema = out.with_suffix(".schema.json")
    schema.write_text(json.dumps(SCHEMA, indent=1))
    return out, schema


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=40_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(*write(Path(a.out), a.rows, a.seed))
