"""bench/preview_error.py's tiny configuration runs end to end: it prints, per run, the
preview's whole wait beside the measured one, and the second run learns its scoring time
from the first (engine/methods/scoring_cost.py). No timing is asserted: figures belong to the bench."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


ROOT = Path(__file__).resolve().parents[1]


def test_tiny_preview_error_bench_prints_predicted_and_measured_whole_wait(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "bench/preview_error.py", "--tiny", "--root",
                           str(tmp_path / "store"), "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "predicted whole s" in proc.stdout and "load average" in proc.stdout
    rows = json.loads(out.read_text())
    assert [r["run"] for r in rows] == [1, 2] and all(r["status"] == "finished" for r in rows)
    for r in rows:  # every figure of the whole wait is there, predicted and measured
        assert r["predicted_whole_s"] > 0 and r["whole_s"] > 0 and r["scoring_s"] > 0
        assert r["predicted_whole_s"] >= r["predicted_train_s"] + r["predicted_scoring_s"] - 1e-6
        assert r["error"] is not None
    assert "stand-in" in rows[0]["scoring_basis"]  # a cold store: timed
    assert "measured by 1 finished run" in rows[1]["scoring_basis"]  # learned from run 1
