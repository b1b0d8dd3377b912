"""The command line: a real digits run writes every artifact; datasets are listed; a
non-private run says so. (Bad-input answers are in tests/test_bad_inputs.py.)"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HANG_S

ROOT = Path(__file__).resolve().parents[1]


def _engine(*args, timeout=HANG_S):
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
    assert set(metrics["seconds"]) == {"train", "evaluate", "total", "timed", "predicted",
                                       "score_synthetic", "score_real", "predicted_scoring",
                                       "predicted_whole"}
    # the cost preview the run was shown, as timed and as corrected (engine/store/cost_cache.py),
    # and the scoring it predicted beside what scoring measured (engine/methods/scoring_cost.py)
    secs = metrics["seconds"]
    assert secs["timed"] > 0 and secs["predicted"] > 0 and secs["predicted_scoring"] > 0
    assert secs["predicted_whole"] > secs["predicted"] and secs["score_synthetic"] > 0
    # Chance is .1 on digits; these settings measured LogReg .76–.79 at ε = 1 (3 runs).
    # The margin covers the DP noise, which is never seeded.
    logreg = metrics["accuracy"]["synthetic/logreg"]
    assert logreg > 0.4
    config = json.loads((out / "config.json").read_text())
    assert config["params"] == {"n_features": 300, "epochs": 5, "batch_size": 100}
    assert (out / "synthetic.npz").exists()
    assert (out / "samples.png").read_bytes()[:4] == b"\x89PNG"
    printed = next(line.split() for line in proc.stdout.splitlines()
                   if line.split()[:1] == ["synthetic/logreg"])
    assert float(printed[1]) == pytest.approx(logreg, abs=5e-5)  # printed = saved


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
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert {"digits", "fashion_mnist", "mnist", "breast_cancer", "csv", "npz"} <= set(lines)
    assert "available" in lines["digits"]
    assert proc.stdout.splitlines()[0].split()[:2] == ["name", "kind"]  # a header
    assert "--csv" in proc.stdout and "--npz" in proc.stdout  # how to pass your own data


def test_gallery_names_can_be_listed_and_an_unknown_name_is_an_error(capsys):
    from engine.runs import gallery
    from engine.cli.commands import main

    assert main(["gallery", "--list", "--no-fashion"]) == 0
    names = capsys.readouterr().out.split()
    assert names == [gallery.entry_name(c) for c in gallery.plan(more=False)]
    assert main(["gallery", "--only", "no-such-entry"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--list" in err


def test_unknown_flag_is_one_line_exit_2(tmp_path):
    proc = _engine("train", "--out", str(tmp_path / "x"), "--no-such-knob", "3")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no_such_knob" in proc.stderr
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------------ --out, δ, disclosures
# In-process (engine.cli.commands.main) to spare an interpreter start-up per case.

FAST = ["--n-features", "100", "--epochs", "1", "--no-eval", "--device", "cpu"]


def _main(*args):
    from engine.cli.commands import main

    return main(["train", *args])


def test_cnn_flag_is_saved_in_the_config_and_scores_the_synthetic_images(tmp_path, monkeypatch,
                                                                        capsys):
    """--cnn travels in the config (as the Playground's checkbox does) to the evaluation,
    whose per-epoch progress reaches the console. The CNN itself is stubbed here
    (tests/test_cnn.py trains it): only the plumbing."""
    from engine.evaluation import utility as evaluate
    from engine.evaluation.cnn import Epoch

    calls = []

    def fake_fit(x, y, x_test, y_test, *, device, seed, fit="synthetic", **kw):
        calls.append(len(y))
        yield Epoch(1, 10, 0.5, fit)
        return {"accuracy": 0.25 + len(calls) / 100, "epochs_chosen": 1}

    monkeypatch.setattr("engine.evaluation.cnn.scored_epochs", fake_fit)
    monkeypatch.setattr(evaluate, "_REAL_CNN", {})  # no real-data score cached by another test
    out = tmp_path / "cnn"
    fast = [a for a in FAST if a != "--no-eval"]
    assert _main("--out", str(out), "--cnn", "--n-synthetic", "200", *fast) == 0
    assert json.loads((out / "config.json").read_text())["cnn_eval"] is True
    scores = json.loads((out / "metrics.json").read_text())["accuracy"]
    assert calls == [200, 1437]  # the synthetic set, then the real training split
    assert (scores["synthetic/cnn"], scores["real/cnn"]) == (0.26, 0.27)
    err = capsys.readouterr().err
    assert "CNN trained on the synthetic data: epoch 1 of at most 10" in err
    assert "CNN trained on the real data: epoch 1 of at most 10" in err
    assert _main("--out", str(tmp_path / "plain"), *fast) == 0
    assert "synthetic/cnn" not in json.loads((tmp_path / "plain" / "metrics.json").read_text())["accuracy"]


def test_out_folder_of_another_run_is_refused_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    assert _main("--out", str(out), "--seed", "1", *FAST) == 0
    first = (out / "metrics.json").read_text()
    capsys.readouterr()
    assert _main("--out", str(out), "--seed", "2", *FAST) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "already holds a run" in err and "--overwrite" in err
    assert (out / "metrics.json").read_text() == first  # untouched
    assert json.loads((out / "config.json").read_text())["seed"] == 1
    (out / "stale.txt").write_text("x")  # not a run artifact: --overwrite must not delete it
    assert _main("--out", str(out), "--seed", "2", "--overwrite", *FAST) == 2
    assert "not a run's artifacts" in capsys.readouterr().err and (out / "stale.txt").exists()
    (out / "stale.txt").unlink()
    (out / "synthetic.csv").write_text("from an older tabular run")
    assert _main("--out", str(out), "--seed", "2", "--overwrite", *FAST) == 0
    assert json.loads((out / "config.json").read_text())["seed"] == 2
    assert json.loads((out / "metrics.json").read_text())["status"] == "finished"
    assert not (out / "synthetic.csv").exists()  # the old run's files are gone


def _interrupting_trainer(exc):
    def train(config, params, data, device, stop):
        from engine.methods.events import Event

        yield Event("train", 1, 10, 0.1, loss=1.0)
        raise exc
    return train


def test_out_folder_of_the_users_files_is_refused_before_the_data_is_loaded(tmp_path, capsys,
                                                                           monkeypatch):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own file")

    def no_loading(*a, **k):
        raise AssertionError("the data was loaded before --out was checked")
    monkeypatch.setattr("engine.data.catalog.load", no_loading)
    for extra in ([], ["--overwrite"]):
        assert _main("--out", str(out), *extra, *FAST) == 2
        err = capsys.readouterr().err.strip()
        # One line whose fix works: a new folder, never --overwrite (which is refused too).
        assert err.count("\n") == 0 and "new or empty folder" in err and "--overwrite" not in err
    assert (out / "notes.txt").read_text() == "the user's own file"


def test_every_preview_hint_and_warning_reaches_the_console(tmp_path, capsys):
    # DataLens on digits at a tiny budget affords no step: the run would score chance.
    assert _main("--out", str(tmp_path / "dl"), "--method", "datalens", "--epsilon", "0.01",
                 "--delta", "1e-3", "--no-eval", "--device", "cpu") == 0
    err = capsys.readouterr().err.splitlines()
    hints = [ln for ln in err if ln.startswith("hint: ")]
    warnings = [ln for ln in err if ln.startswith("warning: ")]
    assert len(hints) == 1 and "does not afford one step" in hints[0]
    assert len(warnings) == 2 and "not below 1/n" in warnings[0]  # the δ warning, once
    assert "DataLens needs tens of thousands of records" in warnings[1]


def test_interrupted_run_leaves_interrupted_metrics_never_an_old_run(tmp_path, monkeypatch,
                                                                     capsys):
    from engine.methods.dpmerf import method as dpmerf

    out = tmp_path / "run"
    assert _main("--out", str(out), *FAST) == 0
    monkeypatch.setattr(dpmerf, "train", _interrupting_trainer(KeyboardInterrupt()))
    assert _main("--out", str(out), "--overwrite", *FAST) == 130  # Ctrl-C
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "interrupted" and "KeyboardInterrupt" in metrics["reason"]


def test_runner_marks_a_crash_and_an_abandoned_run_interrupted(tmp_path, monkeypatch):
    import pytest

    from engine.methods.dpmerf import method as dpmerf
    from engine.core.config import RunConfig
    from engine.runs.runner import execute

    cfg = RunConfig(params={"n_features": 100, "epochs": 1}, device="cpu")
    monkeypatch.setattr(dpmerf, "train", _interrupting_trainer(RuntimeError("disk full")))
    with pytest.raises(RuntimeError, match="disk full"):
        list(execute(cfg, tmp_path / "a", full_eval=False))
    assert json.loads((tmp_path / "a" / "metrics.json").read_text())["status"] == "interrupted"
    monkeypatch.undo()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "metrics.json").write_text('{"status": "finished"}')  # an older run's
    events = execute(cfg, tmp_path / "b", full_eval=False)
    next(events)
    assert not (tmp_path / "b" / "metrics.json").exists()  # gone as the new run starts
    events.close()  # the consumer walks away mid-run
    assert json.loads((tmp_path / "b" / "metrics.json").read_text())["status"] == "interrupted"


def test_delta_at_least_one_over_n_warns_and_metrics_say_what_is_not_private(tmp_path, capsys):
    out = tmp_path / "run"
    # digits has 1,437 training records: delta = 1e-3 is not below 1/n.
    assert _main("--out", str(out), "--delta", "1e-3", *FAST) == 0
    err = capsys.readouterr().err
    warning = [ln for ln in err.splitlines() if ln.startswith("warning: ")]
    assert len(warning) == 1 and "not below 1/n = 1/1,437" in warning[0]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["warnings"] == [warning[0].removeprefix("warning: ")]
    disc = metrics["disclosures"]
    assert "replace-one" in disc["neighbouring relation"] and "public" in disc["neighbouring relation"]
    assert "position" in disc["treated as public"]["split"]
    assert _main("--out", str(tmp_path / "quiet"), "--delta", "1e-5", *FAST) == 0
    assert "warning" not in capsys.readouterr().err


def test_real_data_accuracies_are_marked_not_private(tmp_path, capsys):
    out = tmp_path / "run"
    assert _main("--out", str(out), "--n-features", "100", "--epochs", "1", "--device",
                 "cpu") == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert "real/logreg" in metrics["accuracy"]
    assert metrics["disclosures"]["not private"]["accuracy"].startswith("NOT private")
    assert "NOT private" in capsys.readouterr().out


def test_csv_category_lists_are_stated_in_metrics(tmp_path):
    import numpy as np
    import pandas as pd

    from engine.cli.commands import main

    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.normal(size=60).round(3), "colour": rng.choice(["r", "g"], 60),
                  "y": rng.choice(["a", "b"], 60)}).to_csv(tmp_path / "f.csv", index=False)
    base = ["train", "--csv", str(tmp_path / "f.csv"), "--label", "y", "--no-eval",
            "--device", "cpu", "--param", "epochs=1", "--param", "n_features=50"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    note = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert "NOT private" in note["disclosures"]["not private"]["category_domain"]
    assert main([*base, "--out", str(tmp_path / "b"), "--data-option",
                 'categories={"colour": ["r", "g", "b"]}', "--data-option",
                 'classes=["a", "b"]']) == 0
    note = json.loads((tmp_path / "b" / "metrics.json").read_text())
    assert "given by the user" in note["disclosures"]["not private"]["category_domain"]
    assert "NOT private" not in note["disclosures"]["not private"]["category_domain"]
