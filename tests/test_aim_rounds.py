"""AIM's preview counts the rounds a run makes (issue 41: it said 18 where Fair's survey
made 10, the run annealing more often than the old one-in-six). The preview's count is
compared with a real run's own `info["rounds"]`, not with a copy of the schedule."""

import threading
from dataclasses import replace

import pytest

from engine.core.config import RunConfig
from engine.methods.aim import cost as aim_cost
from engine.methods.aim import method as aim
from engine.methods.aim import plan as aim_plan
from engine.methods.registry import make_params

pytest.importorskip("mbi")

# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


FAST = {"bins": 2, "iters": 5, "final_iters": 5}
TIMED = {"setup": 1.0, "round": 0.5, "held": 6.0, "final_iter": 0.01, "sample": 0.1,
         "peak_gb": 1.0}  # a fake timing: the seconds are not what is checked here


@pytest.fixture(autouse=True)
def _fresh_store(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))  # no finished run to learn from
    monkeypatch.setattr(aim_cost._RATES, "_d", {})
    monkeypatch.setattr(aim_cost, "_calibrate", lambda *a: dict(TIMED))


def _run_rounds(config, params, data) -> int:
    result = None
    for event in aim.train(config, params, data, "cpu", threading.Event()):
        result = event.result or result
    return result.info["rounds"]


def test_preview_rounds_are_the_rounds_a_small_noisy_run_makes(cancer):
    # 30 records at ε = 0.3: every round's noise, BIAS·σ·cells, is at least the 2n a
    # marginal of n records can move, so the anneal rule must fire each round (chance 1
    # in plan.anneal_chance) and the run's round count is certain, whatever its noise.
    data = replace(cancer, x_train=cancer.x_train[:30], y_train=cancer.y_train[:30])
    config = RunConfig(method="aim", dataset="breast_cancer", epsilon=0.3, delta=1e-5,
                       seed=0, n_synthetic=50)
    params = make_params("aim", data, FAST, epsilon=0.3, delta=1e-5)
    preview = aim_cost.estimate(config, data, params, "cpu")
    assert preview["estimated steps"] == _run_rounds(config, params, data)
    # ... and far fewer than a schedule that never anneals (the old model's direction)
    budget, *_ = aim._plan(config, params, data)
    never = aim_plan.expected_rounds(budget, params.rounds, len(data.columns) + 1)
    assert preview["estimated steps"] < never / 4


def test_the_chance_to_anneal_grows_with_the_noise_and_is_certain_past_2n():
    chances = [aim_plan.anneal_chance(s, 40, 5000) for s in (1, 10, 50, 100)]
    assert chances == sorted(chances) and 0 < chances[0] < 0.05
    assert aim_plan.anneal_chance(2 * 5000 / (aim_plan.BIAS * 40), 40, 5000) == 1.0
    # more records at the same noise: fewer anneals, more rounds (census 22 vs Fair's 9)
    assert aim_plan.anneal_chance(70, 40, 32000) < aim_plan.anneal_chance(70, 40, 5000)
