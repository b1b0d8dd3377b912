"""The command line: a real digits run writes every artifact; datasets are listed; a
non-private run says so. (Bad-input answers are in tests/test_bad_inputs.py.)"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _engine(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_train_writes_config_metrics_synthetic_and_grid(tmp_path):
    out = tmp_path / "run"
    proc = _engine("train", "--method", "dpmerf", "--dataset", "digits", "--epsilon", "1",
                   "--delta", "1e-5", "--out", str(out), "--n-features", "300", "--epochs", "5",
                   "--param", "batch_size=100")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "step" in proc.stderr  # the progress bar
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epsilon_spent"] <= 1.0 and metrics["delta"] == 1e-5
    sigma = metrics["privacy"]["releases"][-1]["noise_multiplier"]
    assert 3.6 < sigma < 3.9  # one release at (1, 1e-5): the exact Gaussian's 3.73
    assert "ExactGaussian" in metrics["accountant"]
    assert set(metrics["seconds"]) == {"train", "evaluate", "total"}
    assert 0 <= metrics["accuracy"]["synthetic/logreg"] <= 1
    config = json.loads((out / "config.json").read_text())
    assert config["params"] == {"n_features": 300, "epochs": 5, "batch_size": 100}
    assert (out / "synthetic.npz").exists()
    assert (out / "samples.png").read_bytes()[:4] == b"\x89PNG"
    assert "synthetic/logreg" in proc.stdout


def test_non_private_run_is_reported_as_such(tmp_path):
    out = tmp_path / "np"
    proc = _engine("train", "--dataset", "digits", "--epsilon", "inf", "--out", str(out),
                   "--n-features", "100", "--epochs", "1", "--no-eval")
    assert proc.returncode == 0, proc.stderr
    assert "NON-PRIVATE" in proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["private"] is False and metrics["epsilon_spent"] == "inf"
    assert "NON-PRIVATE" in metrics["note"]


def test_datasets_lists_availability():
    proc = _engine("datasets")
    assert proc.returncode == 0
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert {"digits", "fashion_mnist", "mnist", "breast_cancer", "csv", "npz"} <= set(lines)
    assert "available" in lines["digits"]


def test_unknown_flag_is_one_line_exit_2(tmp_path):
    proc = _engine("train", "--out", str(tmp_path / "x"), "--no-such-knob", "3")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no_such_knob" in proc.stderr
    assert not (tmp_path / "x").exists()
