"""Issue 41, item 3: a larger ε never gives a worse default run. The marginals baseline
(seconds per run) is checked here on digits and breast_cancer over 3 seeds; DP-MERF, AIM
and DataLens take minutes per run and are measured by bench/defaults_by_epsilon.py
(figures in docs/tables.md and docs/datalens.md), whose tiny configuration runs below."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from defaults_by_epsilon import default_run  # noqa: E402


@pytest.mark.parametrize("dataset", ["digits", "breast_cancer"])
def test_marginals_default_run_at_epsilon_10_scores_at_least_the_epsilon_1_one(dataset):
    mean = {eps: statistics.fmean(default_run("marginals", dataset, eps, seed)["accuracy"]
                                  for seed in range(3)) for eps in (1.0, 10.0)}
    assert mean[10.0] >= mean[1.0], mean


def test_the_bench_prints_a_row_per_method_and_dataset():
    proc = subprocess.run([sys.executable, "bench/defaults_by_epsilon.py", "--tiny"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = [ln for ln in proc.stdout.splitlines() if ln.startswith("| marginals | breast_cancer")]
    assert len(row) == 1
    acc1, acc10 = (float(v) for v in row[0].split("|")[3:5])
    assert 0 < acc1 <= 1 and 0 < acc10 <= 1
