"""Tune on public, spend privacy once (engine/runs/public_tuning.py,
engine/jobs/public_study.py): digits' two halves are disjoint and cover it; a public
dataset is neither charged nor capped; a tune-on study's trials charge nothing and its
one private run is charged once, also when its driver is started again."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pytest

from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.data import catalog
from engine.jobs import public_study, study_background
from engine.jobs.manager import JobManager
from engine.jobs.study import Study, load_spec, sweep_name
from engine.privacy.ledger import Ledger, dataset_id
from engine.runs.public_tuning import path_epsilons
from engine.runs.study_preview import study_preview
from engine.runs.study_space import build_spec
from engine.store.runs import RunStore
from job_fakes import scripted, scripted_manager

from conftest import TINY_DPMERF, TINY_DPMERF_ARGS

PRIVATE = RunConfig(method="dpmerf", dataset="digits_private", epsilon=1.0, device="cpu")


def _spec(base=PRIVATE, trials=3, tune_on="digits_public", knobs=("lr=1e-3:1e-1:log",)):
    return build_spec(base, list(knobs), trials=trials, sampler="random", tune_on=tune_on)


# ------------------------------------------------------------------ the data
def test_digits_halves_are_disjoint_and_cover_digits():
    pub, priv = catalog.digits_halves()
    assert len(np.intersect1d(pub, priv)) == 0
    assert np.array_equal(np.sort(np.concatenate([pub, priv])), np.arange(1797))
    a, b = catalog.load("digits_public"), catalog.load("digits_private")
    assert (a.n_train + len(a.y_test), b.n_train + len(b.y_test)) == (len(pub), len(priv))
    # the records are digits' own: every private image is one of digits', none public
    rows = lambda d: {r.tobytes() for r in np.concatenate([d.x_train, d.x_test])}  # noqa: E731
    whole = rows(catalog.load("digits"))
    assert rows(b) <= whole and rows(a) <= whole
    # (a few digits images are exact duplicates of each other, so compare positions)
    assert a.image_shape == b.image_shape == (1, 8, 8)


def test_the_catalog_offers_the_stand_ins():
    names = {e["name"]: e for e in catalog.list_datasets()}
    assert names["digits_public"]["available"] and names["digits_private"]["available"]
    assert names["fashion_public"]["available"] == names["fashion_mnist"]["available"]


@pytest.mark.skipif(not {e["name"]: e for e in catalog.list_datasets()}["fashion_public"][
    "available"], reason="Fashion-MNIST is not installed")
def test_fashion_is_made_digits_like():
    d = catalog.load("fashion_public")
    assert d.image_shape == (1, 8, 8) and d.x_train.shape == (1797, 1, 8, 8)
    assert 0 <= d.x_train.min() and d.x_train.max() <= 1 and len(d.y_test) == 450


# ------------------------------------------------------------------ the ledger
def test_a_public_dataset_is_never_charged_nor_capped(tmp_path):
    led = Ledger(tmp_path)
    led.set_cap("digits", 0.5)
    pub = RunConfig(dataset="digits_public", epsilon=5.0)
    assert dataset_id(pub) is None and led.forecast(pub) is None
    led.check(pub)  # no cap applies
    assert led.book(pub, run_id="p", source="test") is None and led.datasets()[0]["runs"] == []
    # digits_private's records are digits': charged (and capped) as digits
    priv = RunConfig(dataset="digits_private", epsilon=1.0)
    assert dataset_id(priv).key == "digits"
    with pytest.raises(InputError, match="past its cap of 0.5"):
        led.check(priv)


@pytest.mark.parametrize("base, tune_on, words", [
    (PRIVATE, "digits", "not declared public"),
    (PRIVATE, "nope", "unknown dataset 'nope'"),
    (RunConfig(method="dpmerf", dataset="digits_public"), "fashion_public", "itself public"),
    (RunConfig(method="dpmerf", dataset="breast_cancer"), "digits_public", "tabular data"),
])
def test_a_bad_stand_in_is_one_clear_error(base, tune_on, words):
    with pytest.raises(InputError, match=words):
        _spec(base=base, tune_on=tune_on)


def test_epsilon_is_not_searched_on_a_public_stand_in():
    """On public data a larger ε is free, so the search would always take the top."""
    with pytest.raises(InputError, match="ε cannot be a searched knob"):
        _spec(knobs=("lr=1e-3:1e-1:log", "epsilon=0.3:3:log"))


def test_the_paths_planned_cost_from_the_accountant():
    a, b, c = path_epsilons(PRIVATE, 24, {"lr": [0.01, 0.1]})
    assert a.epsilon == pytest.approx(6.02, abs=0.01)  # docs/tuning.md: 24 trials at ε = 1
    assert b.epsilon == pytest.approx(1.0, rel=1e-3) and c.epsilon == pytest.approx(1.0, rel=1e-3)


def test_the_preview_charges_one_private_run_and_refuses_past_the_cap(tmp_path):
    spec = _spec(knobs=["lr=1e-3:1e-1:log"], trials=5)
    seen = study_preview(spec, root=tmp_path, slots=2, wait=False)
    assert seen.epsilon_after == pytest.approx(1.0, rel=1e-3)  # one run, not five
    assert "not charged" in " ".join(seen.lines())
    Ledger(tmp_path).set_cap("digits", 0.5)
    with pytest.raises(InputError, match="Refused before the first trial: the study's private run"):
        study_preview(spec, root=tmp_path, slots=2, wait=False)


# ------------------------------------------------------- the study (stand-in trainer)
@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    with scripted_manager(tmp_path_factory.mktemp("public")) as jm:
        yield jm


def test_a_restarted_driver_queues_the_private_run_once(fake, monkeypatch):
    base = RunConfig(method="dpmerf", dataset="digits_private", device="cpu",
                     params={"sleep": 1.5})  # the private run outlives the crash
    spec = _spec(base=base, trials=2)
    assert json.loads(json.dumps(spec.to_dict()))["tune_on"] == "digits_public"
    assert type(spec).from_dict(spec.to_dict()) == spec

    class Crash(Exception):
        pass

    def crash_waiting(_s):  # the driver dies once the private run is queued
        raise Crash

    monkeypatch.setattr(public_study, "time", SimpleNamespace(time=time.time,
                                                              sleep=crash_waiting))
    with pytest.raises(Crash):
        Study(spec, "restarted", fake).run()
    monkeypatch.undo()
    study = Study(load_spec(fake.store.root, "restarted"), "restarted", fake)
    assert public_study.final_pending(study)
    assert study_background.resume(fake, "restarted")  # the page would drive it again
    deadline = time.time() + 120
    while study_background.running(fake, "restarted"):
        assert time.time() < deadline, "the resumed driver never ended"
        time.sleep(0.1)
    assert study_background.error(fake, "restarted") is None
    Study(spec, "restarted", fake).run()  # a third driver: nothing more is queued
    runs = fake.store.list_runs(sweep=sweep_name("restarted"))
    assert sorted(r.dataset for r in runs) == ["digits_private", "digits_public", "digits_public"]
    fin = public_study.final(Study(spec, "restarted", fake))
    assert fin["status"] == "finished" and fin["value"] == 0.6 and fin["trial"] in (0, 1)
    assert not public_study.final_pending(Study(spec, "restarted", fake))


# ------------------------------------------------------- real runs, real ledger
def test_public_trials_charge_nothing_and_the_private_run_is_charged_once(tmp_path):
    """Three tiny DP-MERF trials on digits_public through the real worker: the ledger
    stays empty while they run; then one run on digits_private is its only row."""
    base = RunConfig(method="dpmerf", dataset="digits_private", epsilon=1.0, device="cpu",
                     params=dict(TINY_DPMERF))
    spec = _spec(base=base, trials=3, knobs=["lr=1e-3:1e-1:log", "n_features=200,400"])
    jm = JobManager(RunStore(tmp_path), slots_per_device=2)
    seen_during = []
    try:
        study = Study(spec, "pub", jm)
        res = study.run(on_trial=lambda info, r: seen_during.append(Ledger(tmp_path).datasets()))
        fin = public_study.final(study)
    finally:
        jm.shutdown()
    assert [t.state for t in res.trials] == ["COMPLETE"] * 3 and len(seen_during) == 3
    assert all(d == [] for d in seen_during)  # no row at all while the trials ran
    (digits,) = Ledger(tmp_path).datasets()
    assert digits["dataset"] == "digits" and [r["run_id"] for r in digits["runs"]] == [fin["run_id"]]
    assert digits["epsilon"] == pytest.approx(1.0, rel=0.05)  # one run at ε = 1
    assert 0 < fin["value"] <= 1 and fin["params"] == res.best.params


# ------------------------------------------------------------------ the Tune page
def test_the_board_shows_the_private_run_and_the_three_paths(runs_root):
    """A finished tune-on study (stand-in trainer): its private run above the trials,
    and the three paths with (c) measured, (a) and (b) waiting for the button, which only
    the study's owner may press."""
    from apptest import open_app

    from engine.jobs import three_paths
    from engine.jobs.manager import NotOwner

    jm = JobManager(RunStore(runs_root), execute=scripted, full_eval=False, slots_per_device=2)
    try:
        spec = _spec(base=RunConfig(method="dpmerf", dataset="digits_private", device="cpu"),
                     trials=2, knobs=["lr=1e-3:1e-1:log", "n_features=500,1000"])
        Study(spec, "pubboard", jm, session="someone-else").run()
        with pytest.raises(NotOwner):
            three_paths.start_measuring(jm, "pubboard", session="me")
    finally:
        jm.shutdown()
    at = open_app().switch_page("pages/tune.py").run()
    assert not at.exception
    assert any("Private run on digits_private" in s.value for s in at.success)
    # the trials table, a chosen trial's settings, then the three paths
    paths = next(d.value for d in at.dataframe if "path" in d.value.columns)
    assert len(paths) == 3 and list(paths["synthetic/logreg"].isna()) == [True, True, False]
    assert at.button(key="tune_paths")  # offered: (a) and (b) not measured yet
    at.selectbox(key="tune_dataset").set_value("digits_private").run()
    assert "digits_public" in at.selectbox(key="tune_on").options[1]


def test_cli_tune_on_public_reports_its_one_private_run(runs_root, capsys):
    from engine.cli.commands import main

    assert main(["tune", "--method", "dpmerf", "--dataset", "digits_private", "--epsilon", "1",
                 "--tune-on", "digits_public", "--knob", "lr=1e-3:1e-1:log", *TINY_DPMERF_ARGS,
                 "--trials", "2", "--sampler", "random", "--study", "pubcli", "--json"]) == 0
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert "run on digits_public, public: not charged" in err and "private run on" in err
    assert got["final"]["dataset"] == "digits_private" and 0 < got["final"]["value"] <= 1
    assert got["ledger"]["study_runs"] == 1  # the trials wrote no row
    assert got["ledger"]["study_epsilon"] == pytest.approx(1.0, rel=0.05)
    assert main(["tune", "--dataset", "digits_private", "--tune-on", "digits",
                 "--knob", "lr=1e-3:1e-1:log"]) == 2  # not public: one clear error


def test_the_playground_says_a_stand_in_is_not_charged(runs_root):
    from apptest import open_app

    at = open_app({"dpmerf_n_features": "500", "dpmerf_epochs": "1"})
    at.selectbox(key="dataset").set_value("digits_public").run()
    assert not at.exception
    assert any("digits_public is declared public" in i.value for i in at.info)
    at.selectbox(key="dataset").set_value("digits_private").run()
    assert any("digits (public data, treated as private" in i.value for i in at.info)
