"""DP-MERF end to end on small data: every variant, the budget, stop, and validation."""

import json
import math
import threading
from dataclasses import replace

import numpy as np
import pytest

from conftest import TINY_DPMERF
from engine.core.config import RunConfig
from engine.data.catalog import Dataset, load
from engine.core.device import resolve_device
from engine.methods.dpmerf.method import Params, privacy_preview, train
from engine.core.errors import InputError
from engine.methods.registry import make_params
from engine.runs.runner import execute


def run(config, data, stop=None):
    params = make_params("dpmerf", data, config.params)
    events = list(train(config, params, data, resolve_device("cpu"), stop))
    return events, events[-1].result


def preview(config, data):
    """The method's figures and its cost keys, as the runner adds them (engine/methods/registry)."""
    from engine.methods.registry import estimate_cost

    params = make_params("dpmerf", data, config.params)
    return {**privacy_preview(config, params, data), **estimate_cost(config, data, params)}


def test_digits_end_to_end_writes_artifacts(tmp_path):
    config = RunConfig(epsilon=1.0, params=TINY_DPMERF)
    events = list(execute(config, tmp_path))
    phases = [e.phase for e in events]
    assert phases[0] == "release" and phases[-1] == "done" and "train" in phases
    steps = [e.step for e in events if e.phase == "train"]
    assert steps == sorted(steps) and steps[-1] == events[-1].total
    assert any(e.samples is not None for e in events)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["status"] == "finished" and metrics["private"] is True
    assert 0.99 < metrics["epsilon_spent"] <= 1.0
    assert "ExactGaussian" in metrics["accountant"]
    assert metrics["privacy"]["releases"][0]["name"] == "mean embedding"
    assert {"synthetic/logreg", "synthetic/mlp", "synthetic/rf", "real/logreg"} <= set(metrics["accuracy"])
    assert metrics["accuracy"]["synthetic/logreg"] > 0.4  # chance is .1; noise never seeded
    assert metrics["accuracy"]["real/logreg"] > 0.9
    npz = np.load(tmp_path / "synthetic.npz")
    assert npz["x"].shape == (metrics["n_train"], 1, 8, 8) and npz["x"].min() >= 0 and npz["x"].max() <= 1
    assert (tmp_path / "samples.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "config.json").read_text())["epsilon"] == 1.0


def test_non_private_run_learns_and_is_flagged(digits):
    config = RunConfig(epsilon=math.inf, params={**TINY_DPMERF, "epochs": 30})
    _, result = run(config, digits)
    assert result.privacy.epsilon_spent == math.inf
    assert result.privacy.releases[0].sigma == 0
    from engine.evaluation.utility import fit_and_score

    acc = fit_and_score("logreg", result.x, result.y, digits)["accuracy"]
    assert acc > 0.5  # well above chance (0.1) without noise


def test_noise_is_fresh_each_run_but_model_seed_is_fixed(digits):
    config = RunConfig(epsilon=1.0, n_synthetic=50, params={**TINY_DPMERF, "epochs": 1})
    a = run(config, digits)[1]
    b = run(config, digits)[1]
    assert not np.allclose(a.x, b.x)  # same seed, different DP noise


def _imbalanced(digits):
    keep = np.concatenate([np.flatnonzero(digits.y_train != 0),
                           np.flatnonzero(digits.y_train == 0)[:15]])
    return replace(digits, x_train=digits.x_train[keep], y_train=digits.y_train[keep])


def test_class_counts_variant_follows_noisy_counts(digits):
    data = _imbalanced(digits)
    config = RunConfig(epsilon=5.0, n_synthetic=4000, params={**TINY_DPMERF, "labels": "counts"})
    _, result = run(config, data)
    names = [r.name for r in result.privacy.releases]
    assert names == ["class counts", "mean embedding"]
    assert result.privacy.epsilon_spent <= 5.0
    share0 = np.mean(result.y == 0)
    assert share0 < 0.04  # 15 of ~1,300 records are zeros; labels follow the noisy counts
    assert abs(np.mean(result.y == 1) - np.mean(data.y_train == 1)) < 0.05


def test_unlabelled_variant(digits):
    config = RunConfig(epsilon=2.0, n_synthetic=30, params={**TINY_DPMERF, "labels": "none"})
    _, result = run(config, digits)
    assert (result.y == -1).all() and result.x.shape == (30, 1, 8, 8)
    from engine.evaluation.utility import full_evaluation

    assert "unlabelled" in full_evaluation(result.x, result.y, digits)["note"]


def test_breast_cancer_bounds_are_released_privately(tmp_path):
    config = RunConfig(dataset="breast_cancer", epsilon=1.0,
                       params={"n_features": 200, "epochs": 5, "batch_size": 100})
    events = list(execute(config, tmp_path, full_eval=False))
    result = events[-1].result
    assert [r.name for r in result.privacy.releases] == [
        "numeric bounds histogram", "class counts", "mean embedding"]
    assert "DP release" in result.info["numeric_bounds_source"]
    assert result.privacy.epsilon_spent <= 1.0
    import pandas as pd

    frame = pd.read_csv(tmp_path / "synthetic.csv")
    assert len(frame) == events[-1].result.x.shape[0] and frame.shape[1] == 31
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert "released privately" in metrics["disclosures"]["treated as public"]["bounds"]


def test_csv_without_bounds_spends_budget_on_them(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    import pandas as pd

    frame = pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.normal(5e4, 2e4, n),
                          "city": rng.choice(["a", "b", "c"], n), "y": rng.choice(["no", "yes"], n)})
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    config = RunConfig(dataset="csv", epsilon=2.0, data_options={"path": str(path), "label": "y"},
                       params={"n_features": 100, "epochs": 3, "batch_size": 50})
    events = list(execute(config, tmp_path / "run", full_eval=True))
    result = events[-1].result
    names = [r.name for r in result.privacy.releases]
    assert names == ["numeric bounds histogram", "class counts", "mean embedding"]
    assert result.privacy.epsilon_spent <= 2.0
    assert "DP release" in result.info["numeric_bounds_source"]
    assert result.privacy.releases[-1].sensitivity == pytest.approx(2 * math.sqrt(2) / 240)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert "synthetic/logreg/roc_auc" in metrics["accuracy"]
    out = pd.read_csv(tmp_path / "run" / "synthetic.csv")
    assert set(out["city"]) <= {"a", "b", "c"} and set(out["y"]) <= {"no", "yes"}


def test_stop_is_honoured(digits, tmp_path):
    stop = threading.Event()
    config = RunConfig(epsilon=1.0, params={**TINY_DPMERF, "epochs": 50})
    seen = []
    for ev in execute(config, tmp_path, stop=stop):
        seen.append(ev)
        if ev.phase == "train" and ev.step == 3:
            stop.set()
    assert seen[-1].phase == "cancelled"
    assert max(e.step for e in seen if e.phase == "train") == 3
    assert json.loads((tmp_path / "metrics.json").read_text())["status"] == "cancelled"


def test_privacy_preview_tracks_epsilon(digits):
    lo = preview(RunConfig(epsilon=0.5), digits)["noise multiplier (sigma)"]
    hi = preview(RunConfig(epsilon=4.0), digits)["noise multiplier (sigma)"]
    assert lo > hi > 0


@pytest.mark.parametrize("override,match", [
    ({"n_features": 7}, "n_features"), ({"epochs": 0}, "epochs"), ({"lr": -1}, "lr"),
    ({"labels": "some"}, "labels"), ({"accountant": "moments"}, "accountant"),
    ({"batch_size": 1}, "batch_size"), ({"length_scale": 0}, "length_scale"),
    ({"counts_share": 1.5}, "counts_share"), ({"upsample": "magic"}, "upsample"),
    ({"sample_temperature": 0}, "sample_temperature"),
])
def test_params_validation(digits, override, match):
    with pytest.raises(InputError, match=match):
        replace(Params.for_data(digits), **override).validate(digits)


def test_single_class_data_is_refused():
    x = np.zeros((30, 1, 8, 8), np.float32)
    data = Dataset("one", "image", x, np.zeros(30, np.int64), x, np.zeros(30, np.int64), ["a"], (1, 8, 8))
    with pytest.raises(InputError, match="two classes"):
        Params().validate(data)


def test_sample_temperature_narrows_released_samples(digits):
    """A low temperature draws z nearer 0: samples of a class vary less (post-processing)."""
    def spread(temperature):
        config = RunConfig(epsilon=math.inf, n_synthetic=500,
                           params={**TINY_DPMERF, "sample_temperature": temperature})
        _, result = run(config, digits)
        return np.mean([result.x[result.y == c].std(0).mean() for c in range(10)])

    assert spread(0.1) < 0.5 * spread(1.0)


def test_released_record_depends_only_on_its_own_z_and_label(digits):
    """Sampling runs batch norm in eval mode: a record does not change with the other
    records drawn beside it (in training mode batch statistics would mix them), and the
    generator goes back to training mode afterwards."""
    import torch

    from engine.methods.dpmerf.method import _to_records
    from engine.methods.dpmerf.generators import ConvCondGenerator

    gen = ConvCondGenerator(digits.image_shape, 10, upsample="transposed")
    gen(torch.randn(64, 5), torch.eye(10)[torch.arange(64) % 10])  # give BN running stats
    plan = type("Plan", (), {"kind": "image"})()
    params = Params(sample_temperature=0.4)

    def first_record(labels):
        torch.manual_seed(0)  # the same z for the first record in both draws
        x, _ = _to_records(gen, digits, plan, torch.tensor(labels), params, "cpu", True)
        return x[0]

    alone_with_zeros = first_record([0] * 10)
    among_all_classes = first_record(list(range(10)))
    np.testing.assert_allclose(alone_with_zeros, among_all_classes, atol=1e-6)
    assert gen.training


# ------------------------------------------------------------ cost before training, bf16


def test_preview_states_steps_seconds_and_memory(digits):
    from engine.methods.dpmerf import cost as dpmerf_cost

    p = Params.for_data(digits)
    short = preview(RunConfig(epsilon=1.0, params={"epochs": 10}), digits)
    long = preview(RunConfig(epsilon=1.0, params={"epochs": 40}), digits)
    assert short["estimated steps"] == math.ceil(10 * digits.n_train / p.batch_size)
    assert long["estimated steps"] == math.ceil(40 * digits.n_train / p.batch_size)
    # Same shapes, so the cached rates are reused: only the step count differs.
    assert long["estimated s / step"] == short["estimated s / step"] > 0
    extra = long["estimated seconds"] - short["estimated seconds"]
    assert extra == pytest.approx((long["estimated steps"] - short["estimated steps"])
                                  * short["estimated s / step"])
    assert 0 < short["estimated seconds"] < long["estimated seconds"] < math.inf
    assert dpmerf_cost.TORCH_BASELINE_GB < short["estimated memory (GB)"] < 2
    # More features, more memory; Fashion-sized data needs far more than digits.
    wide = preview(RunConfig(epsilon=1.0, params={"epochs": 1, "n_features": 20_000}),
                           digits)
    assert wide["estimated memory (GB)"] > short["estimated memory (GB)"]
    big = replace(digits, x_train=np.zeros((60_000, 1, 28, 28), np.float32),
                  y_train=np.zeros(60_000, np.int64))
    assert 1.5 < dpmerf_cost.memory_gb(big, Params.for_data(big), 60_000) < 2.5


@pytest.mark.parametrize("flags, expected", [({"avx2", "avx512f"}, "float32"),
                                             ({"avx2", "avx512_bf16"}, "bfloat16"),
                                             ({"amx_bf16", "amx_tile"}, "bfloat16"),
                                             (set(), "float32")])
def test_bf16_only_where_the_cpu_has_it(monkeypatch, flags, expected):
    import engine.core.device as device
    from engine.methods.dpmerf.method import projection_precision

    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset(flags))
    choice, why = projection_precision("auto", resolve_device("cpu"))
    assert choice == expected and why.startswith("auto:")
    # An explicit choice is kept whatever the CPU (the cost preview shows its price).
    assert projection_precision("bfloat16", resolve_device("cpu"))[0] == "bfloat16"
    fashion_sized = Dataset("f", "image", np.zeros((60_000, 1, 28, 28), np.float32),
                            np.zeros(60_000, np.int64), np.zeros((1, 1, 28, 28), np.float32),
                            np.zeros(1, np.int64), ["a", "b"], (1, 28, 28))
    assert Params.for_data(fashion_sized).projection == "auto"


def test_the_run_records_which_projection_ran(monkeypatch):
    import engine.core.device as device

    data = load("digits")
    config = RunConfig(epsilon=1.0, n_synthetic=20,
                       params={**TINY_DPMERF, "epochs": 1, "projection": "auto"})
    for flags, expected in (({"avx2"}, "float32"), ({"avx512_bf16"}, "bfloat16")):
        monkeypatch.setattr(device, "cpu_flags", lambda: frozenset(flags))
        _, result = run(config, data)
        assert result.info["projection"] == expected
        assert result.info["projection_reason"].startswith("auto:")


def test_the_cli_builds_params_and_previews_once_per_run(tmp_path, monkeypatch, capsys):
    """prepare() builds the params and the preview once; the cost line and train() reuse
    them (no second preview, no registry round trip inside the method)."""
    from engine.methods.dpmerf import method as dpmerf
    from engine.methods import registry
    from engine.cli.commands import main

    calls = {"preview": 0, "params": 0}
    real_preview, real_params = dpmerf.privacy_preview, registry.params_for

    def preview_spy(*args):
        calls["preview"] += 1
        return real_preview(*args)

    def params_spy(*args):
        calls["params"] += 1
        return real_params(*args)

    monkeypatch.setattr(dpmerf, "privacy_preview", preview_spy)
    monkeypatch.setattr("engine.runs.runner.params_for", params_spy)
    assert main(["train", "--out", str(tmp_path / "r"), "--n-features", "100", "--epochs", "1",
                 "--no-eval", "--device", "cpu"]) == 0
    assert calls == {"preview": 1, "params": 1}
    assert "estimated:" in capsys.readouterr().err  # the cost line, from that one preview


def test_unlabelled_run_with_cnn_scoring_asked_finishes(tmp_path):
    """Unlabelled synthetic images have no classifier to score, the CNN included: the run
    ends with the note, not with a crash after its budget was spent."""
    from engine.runs.runner import execute

    config = RunConfig(epsilon=2.0, n_synthetic=30, cnn_eval=True,
                       params={**TINY_DPMERF, "labels": "none"})
    last = list(execute(config, tmp_path / "run"))[-1]
    assert last.phase == "done" and "note" in last.metrics
