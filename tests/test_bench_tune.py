"""bench/tune.py's tiny configuration runs end to end (real studies, tiny runs) and prints
its table: a row per sampler and budget, the defaults' line to beat."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_tiny_tune_bench_prints_a_row_per_sampler_and_budget(tmp_path):
    from engine.core.jsonsafe import strict_loads

    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "bench/tune.py", "--tiny", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = [line.split("|")[1:4] for line in proc.stdout.splitlines()
             if line.startswith("| ") and "sampler" not in line]
    assert {(s.strip(), n.strip()) for s, n, _ in table} == {
        (s, n) for s in ("tpe", "random", "grid") for n in ("1", "2")}
    assert all(0 < float(best) <= 1 for _, _, best in table)
    assert "defaults: synthetic/logreg = 0." in proc.stdout  # the gallery's line to beat
    got = strict_loads(out.read_text())
    assert all(len(r["values"]) == 2 and r["ledger_epsilon"] > 1 for r in got["rows"])
