"""bench/tabular.py's tiny configuration runs end to end and prints every figure."""

import subprocess
import sys
from pathlib import Path

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
