"""A preview for every method (issue 41): AIM's and the marginals baseline's time and
memory before Train (engine/methods/aim/cost.py, engine/methods/marginals/cost.py), from
a timing of the method's own code on a stand-in of the run's shape, never on a record."""

from dataclasses import replace

import numpy as np
import pytest

from engine.core.config import RunConfig
from engine.methods import preview as previews
from engine.methods.aim import cost as aim_cost
from engine.methods.aim import method as aim
from engine.methods.marginals import cost as marginals_cost
from engine.methods.marginals import method as marginals
from engine.methods.registry import estimate_cost, make_params
from engine.store import cost_cache

pytest.importorskip("mbi")

# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


AIM_TINY = {"bins": 2, "iters": 5, "final_iters": 20, "rounds": 3}
PHASES = {"setup": 2.0, "round": 0.5, "held": 6.0, "final_iter": 0.01, "sample": 1.0,
          "peak_gb": 1.5}


@pytest.fixture(autouse=True)
def _no_finished_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))  # a fresh timing cache, no store


def _datasets_trained_on(monkeypatch, method_module) -> list:
    """Every dataset `method_module.train` is handed from now on."""
    seen = []
    real = method_module.train

    def spy(config, params, data, device, stop, **kw):
        seen.append(data)
        return real(config, params, data, device, stop, **kw)
    monkeypatch.setattr(method_module, "train", spy)
    return seen


def _config(method, data, **over):
    return RunConfig(method=method, dataset=data.name, epsilon=1.0, delta=1e-5, **over)


def test_aim_preview_times_a_stand_in_run_of_its_own_code(monkeypatch, cancer):
    """The timing runs `aim.train` on public random numbers of the data's shape: no
    record of the data is handed to it."""
    seen = _datasets_trained_on(monkeypatch, aim)
    params = make_params("aim", cancer, AIM_TINY)
    cost = previews.from_method(estimate_cost(_config("aim", cancer), cancer, params),
                                _config("aim", cancer), cancer.n_train).cost
    assert len(seen) == 1  # 3 rounds: young only (grown: tests/test_aim_cost_growth.py)
    for fake in seen:
        assert fake.x_train.shape == cancer.x_train.shape
        assert not np.isin(fake.x_train, cancer.x_train).all()
    assert cost.seconds > 0 and cost.per_step_s > 0 and cost.memory_gb > 0.1
    assert cost.unit == "round" and cost.steps >= 1
    assert "round" in previews.cost_line(cost)


def test_aim_seconds_scale_with_rounds(monkeypatch, cancer):
    monkeypatch.setattr(aim_cost, "_calibrate", lambda *a: dict(PHASES))
    config = _config("aim", cancer)
    few = aim_cost.estimate(config, cancer, make_params("aim", cancer, {"rounds": 10}), "cpu")
    many = aim_cost.estimate(config, cancer, make_params("aim", cancer, {"rounds": 200}), "cpu")
    assert many["estimated steps"] > few["estimated steps"] >= 1
    assert many["estimated seconds"] > few["estimated seconds"] > PHASES["setup"]
    # A round's time grows with the measurements it refits.
    assert many["estimated s / round"] > few["estimated s / round"] >= PHASES["round"]


def test_aim_rounds_follow_the_schedule_with_its_anneals(cancer):
    from engine.methods.aim import plan as aim_plan

    config = _config("aim", cancer)
    params = make_params("aim", cancer)
    budget, *_ = aim._plan(config, params, cancer)
    d = len(cancer.columns) + 1
    never = aim_plan.expected_rounds(budget, params.rounds, d)  # no table: never anneals
    assert never == pytest.approx(params.rounds + d - 0.9 * d, abs=2)  # the paper's T − 0.9·d
    assert aim_cost.rounds(config, cancer, params) < never
    assert aim_plan.expected_rounds(budget, 7, d, cancer.n_train, 10.0) >= 1


def test_marginals_preview_is_timed_on_a_stand_in_and_scales_with_rows(monkeypatch, cancer):
    seen = _datasets_trained_on(monkeypatch, marginals)
    config = _config("marginals", cancer)
    params = make_params("marginals", cancer)
    est = estimate_cost(config, cancer, params)
    assert seen and all(not np.isin(d.x_train, cancer.x_train).all() for d in seen)
    assert est["estimated seconds"] > 0 and est["estimated memory (GB)"] > 0

    monkeypatch.setattr(marginals_cost, "_RATES", cost_cache.TimedCache())  # forget it
    monkeypatch.setattr(marginals_cost, "_calibrate", lambda *a: {"per_row": 1e-5})
    small = marginals_cost.estimate(config, cancer, params, "cpu")
    more = replace(cancer, x_train=np.tile(cancer.x_train, (10, 1)),
                   y_train=np.tile(cancer.y_train, 10))
    large = marginals_cost.estimate(config, more, params, "cpu")
    assert large["estimated seconds"] == pytest.approx(10 * small["estimated seconds"])
    assert large["estimated memory (GB)"] > small["estimated memory (GB)"]


def test_the_web_server_asks_the_probe_for_aim_and_marginals(monkeypatch, cancer):
    """`away`: nothing timed in the server; "measuring…" until the probe's timing is in."""
    monkeypatch.setattr(aim_cost, "_calibrate", lambda *a: pytest.fail("timed in the server"))
    monkeypatch.setattr(marginals_cost, "_calibrate", lambda *a: pytest.fail("timed here"))
    asked = []

    def away(cache, key):
        asked.append(cache.name)
        return cache.peek(key)[0]
    for method, module in (("aim", aim_cost), ("marginals", marginals_cost)):
        est = module.estimate(_config(method, cancer), cancer, make_params(method, cancer),
                              "cpu", threads=1, away=away)
        assert est[cost_cache.BASIS_KEY] == previews.MEASURING
    assert asked == ["aim", "marginals"]


def test_metrics_evaluation_seconds_are_the_whole_wait_after_training(monkeypatch, tmp_path):
    """metrics.json "evaluate": scoring with the real-data reference, fidelity and the
    rest, as the user waits; here the reference and the fidelity are made slow by a known
    0.3 s each (sleeps: lower bounds, not a timed test)."""
    import json
    import time

    from engine.evaluation import fidelity, utility
    from engine.runs import runner

    for module, name in ((utility, "real_reference"), (fidelity, "fidelity")):
        real = getattr(module, name)

        def slow(*a, _real=real, **k):
            time.sleep(0.3)
            return _real(*a, **k)
        monkeypatch.setattr(module, name, slow)
    config = RunConfig(method="marginals", dataset="breast_cancer", epsilon=1.0, seed=0)
    out = tmp_path / "run"
    list(runner.execute(config, out, full_eval=True))
    secs = json.loads((out / "metrics.json").read_text())["seconds"]
    ms = 0.005  # metrics.json rounds each figure to the millisecond
    assert secs["score_real"] >= 0.3
    assert secs["evaluate"] >= secs["score_synthetic"] + secs["score_real"] + 0.3 - ms
    assert secs["total"] >= secs["train"] + secs["evaluate"] - ms


def test_aim_finished_runs_replace_the_timing(monkeypatch, cancer):
    """With finished AIM runs on the data, the preview is theirs and nothing is timed:
    runs at the same ε, δ and knobs give their seconds and rounds; runs at another ε
    give only their seconds per round, times the rounds expected at this ε."""
    from dataclasses import asdict

    from engine.core.jsonsafe import jsonable

    monkeypatch.setattr(aim_cost, "_calibrate", lambda *a: pytest.fail("timed"))
    config, params = _config("aim", cancer), make_params("aim", cancer)
    asked = {"epsilon_target": jsonable(config.epsilon), "delta": config.delta}
    finished = [{"n_train": cancer.n_train, "seconds": {"train": s}, **asked,
                 "info": {"rounds": 20, "params": jsonable(asdict(params))}}
                for s in (100.0, 80.0, 120.0)]
    finished.append({**finished[0], "epsilon_target": 0.3, "seconds": {"train": 10.0},
                     "info": {"rounds": 4, "params": jsonable(asdict(params))}})
    monkeypatch.setattr(cost_cache, "finished_metrics",
                        lambda method, dataset, store=None, n_train=None, **kw:
                        [m for m in finished if m["n_train"] == n_train])
    est = aim_cost.estimate(config, cancer, params, "cpu")
    assert est["estimated seconds"] == 100.0 and est["estimated s / round"] == 5.0
    assert est["estimated steps"] == 20
    assert est[cost_cache.BASIS_KEY] == "measured by 3 finished runs on this data"
    other = replace(config, epsilon=3.0)
    expected = aim_cost.rounds(other, cancer, params)
    est = aim_cost.estimate(other, cancer, params, "cpu")
    # every run is another's now: the median of 5, 4, 6 and 2.5 s a round
    assert est["estimated steps"] == expected and est["estimated s / round"] == 4.5
    assert est["estimated seconds"] == pytest.approx(4.5 * expected)
    assert "at another ε" in est[cost_cache.BASIS_KEY]
