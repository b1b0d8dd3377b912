"""A public real table: Fair's 1978 survey of extramarital affairs (6,366 married women),
as the statsmodels package ships it (no download: the installed package's own copy).

    .venv/bin/python bench/fair.py OUT.csv

Source: R. C. Fair, "A Theory of Extramarital Affairs", Journal of Political Economy 86
(1978); statsmodels.datasets.fair (public domain). The label `had_affair` is "yes" where
the survey's `affairs` (time spent in affairs, continuous) is above 0, else "no" (32 %
"yes"); the `affairs` column itself is dropped, since it is the label in other words.
The other eight columns are the survey's coded answers (ratings 1–5 or 1–4, occupation
codes 1–6, age and years married as interval midpoints, education in years by degree):
`SCHEMA` declares each as categorical with the code book's values (public metadata: the
survey's answer codes, as statsmodels' NOTE and Fair's paper list them; `load_fair`
refuses a copy holding any other value), so no category list is read from the records.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

LABEL = "had_affair"
# The code book (statsmodels.datasets.fair.NOTE; Fair 1978 for the intervals):
# every value a coded answer can take.
CODES = {"rate_marriage": [1, 2, 3, 4, 5],  # 1 very poor … 5 very good
         "age": [17.5, 22, 27, 32, 37, 42],  # interval midpoints
         "yrs_married": [0.5, 2.5, 6, 9, 13, 16.5, 23],  # interval midpoints
         "children": [0, 1, 2, 3, 4, 5.5],  # 5.5: five or more
         "religious": [1, 2, 3, 4],  # 1 not … 4 strongly
         "educ": [9, 12, 14, 16, 17, 20],  # grade school … advanced degree
         "occupation": [1, 2, 3, 4, 5, 6],  # 1 student … 6 professional, advanced degree
         "occupation_husb": [1, 2, 3, 4, 5, 6]}


def _spell(v: float) -> str:
    """A code as the CSV loader spells a category (3.0 → '3', 17.5 → '17.5')."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


SCHEMA = {name: {"kind": "categorical", "categories": [_spell(v) for v in values]}
          for name, values in CODES.items()}


def load_fair():
    """The survey as a DataFrame: the eight coded answers and the binary label."""
    from statsmodels.datasets import fair

    df = fair.load_pandas().data
    out = df[list(CODES)].copy()
    for name, values in CODES.items():  # the copy shipped must match the code book
        odd = sorted(set(out[name]) - set(map(float, values)))
        if odd:
            raise SystemExit(f"fair: column {name!r} holds {odd}, not in the code book")
        out[name] = [_spell(v) for v in out[name]]
    out[LABEL] = (df["affairs"] > 0).map({True: "yes", False: "no"})
    return out


def write(out: Path) -> tuple[Path, Path]:
    """The CSV at `out` and its schema beside it (OUT.schema.json)."""
    out = Path(out)
    load_fair().to_csv(out, index=False)
    schema = out.with_suffix(".schema.json")
    schema.write_text(json.dumps(SCHEMA, indent=1))
    return out, schema


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    print(*write(Path(ap.parse_args().out)))
