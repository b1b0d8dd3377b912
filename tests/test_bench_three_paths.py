"""bench/three_paths.py's tiny configuration runs end to end (real studies, a real private
search, tiny DP-MERF runs) and prints the three paths per stand-in: (a) charged for every
trial, (b) and (c) charged about the study's ε once; Fashion is run or skipped with why."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_tiny_three_paths_bench_prints_three_rows_per_stand_in(tmp_path):
    from engine.core.jsonsafe import strict_loads
    from engine.data.catalog import list_datasets

    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "bench/three_paths.py", "--tiny", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = strict_loads(out.read_text())
    fashion = {e["name"]: e for e in list_datasets()}["fashion_public"]["available"]
    cases = {r["case"] for r in got["rows"]}
    assert "digits_public → digits_private" in cases
    assert ("fashion_public → digits_private" in cases) == fashion
    assert ("fashion" in got["skipped"]) == (not fashion)
    for case in cases:
        rows = {r["path"]: r for r in got["rows"] if r["case"] == case}
        assert set(rows) == {"a", "b", "c"}
        for r in rows.values():
            assert r["value"] is not None and 0 < r["value"] <= 1, r
            assert r["seconds"] is not None and r["seconds"] > 0
        # two trials at ε = 1 each compose to more than one; (b) and (c) pay ε = 1 once
        assert rows["a"]["ledger_epsilon"] == pytest.approx(rows["a"]["planned_epsilon"],
                                                            rel=0.05)
        assert rows["a"]["ledger_epsilon"] > 1.2
        assert rows["b"]["ledger_epsilon"] <= 1.0 + 1e-6
        assert rows["c"]["ledger_epsilon"] == pytest.approx(1.0, rel=0.05)
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "→" in line]
    assert len(table) == 3 * len(cases)
