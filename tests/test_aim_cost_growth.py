"""AIM's first preview on a grown model (issue 41): a round's seconds grow as the model
grows, so the stand-in is timed young and grown, and a run's rounds are read off the line
through the two timings (engine/methods/aim/cost.py). Fakes check the formula; no
assertion here depends on how fast this machine is."""

from dataclasses import replace

import pytest

from engine.core.config import RunConfig
from engine.methods import stand_in
from engine.methods.aim import cost as aim_cost
from engine.methods.aim import method as aim
from engine.methods.registry import make_params

pytest.importorskip("mbi")

# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


TINY = {"bins": 2, "iters": 5, "final_iters": 20, "rounds": 3}
YOUNG = {"setup": 2.0, "round": 0.5, "held": 6.0, "final_iter": 0.01, "sample": 1.0,
         "peak_gb": 1.5}
GROWN = {**YOUNG, "held_grown": 16.0, "round_grown": 3.0}  # 0.25 s more per measurement


@pytest.fixture(autouse=True)
def _fresh_store(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))  # a fresh timing cache, no finished run
    # ... and none this process took for another test of the same shape (the suite's
    # workers run many files in one process)
    monkeypatch.setattr(aim_cost._RATES, "_d", {})


def test_a_round_is_read_off_the_line_through_the_young_and_grown_timings():
    assert aim_cost.per_round(GROWN, 6.0) == pytest.approx(0.5)
    assert aim_cost.per_round(GROWN, 16.0) == pytest.approx(3.0)
    assert aim_cost.per_round(GROWN, 11.0) == pytest.approx(1.75)
    assert aim_cost.per_round(GROWN, 26.0) == pytest.approx(5.5)  # beyond: the same line
    assert aim_cost.per_round(GROWN, 2.0) == pytest.approx(0.5)  # never below the faster
    shrinking = {**GROWN, "round_grown": 0.2}  # a noisy grown timing: no negative rounds
    assert aim_cost.per_round(shrinking, 100.0) == pytest.approx(0.2)
    # a timing without the grown point keeps the proportional rule
    assert aim_cost.per_round(YOUNG, 12.0) == pytest.approx(1.0)


def test_the_runs_seconds_sum_its_rounds_on_the_line(monkeypatch, cancer):
    monkeypatch.setattr(aim_cost, "_calibrate", lambda *a: dict(GROWN))
    config = RunConfig(method="aim", dataset=cancer.name, epsilon=1.0, delta=1e-5)
    params = make_params("aim", cancer)
    est = aim_cost.estimate(config, cancer, params, "cpu")
    rounds = est["estimated steps"]
    d = len(cancer.columns) + 1
    mean_round = aim_cost.per_round(GROWN, d + (rounds + 1) / 2)
    # Σ over rounds t = 1..T of the line at d + t equals T times it at the mean held
    assert sum(aim_cost.per_round(GROWN, d + t) for t in range(1, rounds + 1)) == pytest.approx(
        rounds * mean_round)
    assert est["estimated s / round"] == pytest.approx(mean_round)
    assert est["estimated seconds"] == pytest.approx(
        GROWN["setup"] + rounds * mean_round + params.final_iters * GROWN["final_iter"]
        + GROWN["sample"])
    monkeypatch.setattr(aim_cost, "_RATES", type(aim_cost._RATES)())  # forget the timing
    monkeypatch.setattr(aim_cost, "_calibrate", lambda *a: dict(YOUNG))
    young_only = aim_cost.estimate(config, cancer, params, "cpu")
    assert est["estimated seconds"] > young_only["estimated seconds"]  # growth is counted


def test_grown_cliques_are_workload_marginals_within_the_model_size(cancer):
    import mbi

    from engine.methods.aim import plan as aim_plan

    params = make_params("aim", cancer, {"max_model_size": 0.01})
    fake = stand_in.like(cancer, cancer.n_train)
    chosen = aim_cost.grown_cliques(fake, params, 12)
    work = aim_plan.candidates(aim._workload(fake, params))
    assert len(chosen) == 12 and all(cl in work and len(cl) > 1 for cl in chosen)
    from engine.privacy import dp_bounds

    stand_in_bounds = {j: (0.0, 1.0) for j in dp_bounds.columns_without_bounds(fake)}
    disc = aim_plan.discretise(fake, params.bins, stand_in_bounds)
    domain = mbi.Domain(disc.names, disc.sizes)
    kept = [(a,) for a in disc.names] + sorted(set(chosen))
    assert mbi.junction_tree.hypothetical_model_size(domain, kept) <= params.max_model_size
    assert chosen == aim_cost.grown_cliques(fake, params, 12)  # public and repeatable


def test_the_grown_stand_in_measures_its_cliques_before_the_rounds(cancer):
    import threading

    params = make_params("aim", cancer, TINY)
    fake = stand_in.like(cancer, cancer.n_train)
    grown = aim_cost.grown_cliques(fake, params, 3)
    config = RunConfig(method="aim", dataset=fake.name, epsilon=float("inf"), seed=0)
    events = list(aim.train(config, params, fake, "cpu", threading.Event(), grown=grown))
    info = events[-1].result.info
    d = len(cancer.columns) + 1
    assert [tuple(m) for m in info["measured"][d:d + 3]] == list(grown)
    assert len(info["phase_seconds"]["rounds"]) == TINY["rounds"]
    private = replace(config, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="timing"):
        list(aim.train(private, params, fake, "cpu", threading.Event(), grown=grown))


def test_the_stand_in_grows_to_the_rounds_the_run_is_expected_to_make(monkeypatch, cancer):
    """The timing grows its stand-in as far as a run at this ε goes (`rounds`), so a
    small ε is not timed on a model larger than its run will ever hold."""
    asked = []
    monkeypatch.setattr(aim_cost, "_calibrate",
                        lambda data, params, n_out, n_rounds: asked.append(n_rounds) or dict(GROWN))
    params = make_params("aim", cancer)
    for eps in (0.3, 3.0):
        config = RunConfig(method="aim", dataset=cancer.name, epsilon=eps, delta=1e-5)
        est = aim_cost.estimate(config, cancer, params, "cpu")
        assert asked[-1] == est["estimated steps"] == aim_cost.rounds(config, cancer, params)
    assert asked[0] < asked[1]  # a larger ε, a longer run, a larger grown stand-in


def test_calibration_times_a_young_and_a_grown_stand_in(monkeypatch, cancer):
    runs = []
    real = aim.train

    def spy(config, params, data, device, stop, grown=()):
        runs.append(len(grown))
        return real(config, params, data, device, stop, grown=grown)
    monkeypatch.setattr(aim, "train", spy)
    params = make_params("aim", cancer, {**TINY, "rounds": 40})
    timed = aim_cost._calibrate(cancer, params, cancer.n_train, n_rounds=40)
    d = len(cancer.columns) + 1
    assert runs == [0, aim_cost.GROWN_PER_ATTRIBUTE * d]
    assert timed["held_grown"] == d + runs[1] + 2  # its second round, after the grown ones
    assert timed["round"] > 0 and timed["round_grown"] > 0 and timed["peak_gb"] > 0.1


def test_a_run_of_a_few_rounds_is_timed_young_only(monkeypatch, cancer):
    """A run that cannot grow past the young stand-in's rounds (a tiny test run) is not
    timed grown; a run of more rounds grows the stand-in to the rounds it is expected to
    make, its `rounds` knob and GROWN_PER_ATTRIBUTE·d at most."""
    d = len(cancer.columns) + 1
    assert aim_cost._grown_count(cancer, make_params("aim", cancer, TINY), 40) == 0
    assert aim_cost._grown_count(cancer, make_params("aim", cancer, {"rounds": 7}), 40) == 7
    assert aim_cost._grown_count(cancer, make_params("aim", cancer), 40) == (
        aim_cost.GROWN_PER_ATTRIBUTE * d)
    assert aim_cost._grown_count(cancer, make_params("aim", cancer), 6) == 6  # expected
    assert aim_cost._grown_count(cancer, make_params("aim", cancer), 3) == 0  # young covers it
    runs = []
    real = aim.train

    def spy(config, params, data, device, stop, grown=()):
        runs.append(len(grown))
        return real(config, params, data, device, stop, grown=grown)
    monkeypatch.setattr(aim, "train", spy)
    timed = aim_cost._calibrate(cancer, make_params("aim", cancer, TINY), cancer.n_train, 40)
    assert runs == [0] and "round_grown" not in timed
