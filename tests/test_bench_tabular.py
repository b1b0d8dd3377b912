"""bench/tabular.py's tiny configuration runs end to end and prints every figure."""

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def test_tiny_tabular_bench_prints_a_row_per_method(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "bench/tabular.py", "--tiny", "--datasets", "census",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| census |")]
    assert {r.split("|")[2].strip() for r in rows} >= {"dpmerf", "marginals"}
    from engine.core.jsonsafe import strict_loads

    runs = strict_loads(out.read_text())
    for r in runs:
        assert 0 <= r["accuracy"] <= 1 and 0 <= r["fidelity"] <= 1 and r["peak_mb"] > 0


def test_fair_is_the_installed_survey_with_its_code_book_as_schema(tmp_path):
    """bench/fair.py writes statsmodels' own copy of Fair's survey (no download) and a
    schema that lists every coded answer, so no category list is read from the records."""
    import pytest

    pytest.importorskip("statsmodels")
    sys.path.insert(0, str(ROOT / "bench"))
    from fair import CODES, LABEL, write

    from engine.data.catalog import load

    csv, schema = write(tmp_path / "fair.csv")
    data = load("csv", seed=0, options={"path": str(csv), "label": LABEL, "schema": str(schema)})
    assert data.n_train + len(data.y_test) == 6366 and data.class_names == ["no", "yes"]
    assert [c.name for c in data.columns] == list(CODES)
    assert all(c.kind == "cat" and c.bounds_source.startswith("public") for c in data.columns)
    share = float(np.mean(data.y_train == 1))
    assert 0.30 < share < 0.34  # 2,053 of 6,366 report time in affairs
