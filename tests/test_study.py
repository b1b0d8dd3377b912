"""Tuning studies (engine/jobs/study.py): the request checked against the method's knob
declarations, ask-and-tell over the real run queue, resume after a restart, failed
trials told FAIL, owner-only stop, the preview's privacy total against the ledger's, and
refusal past the cap before any trial.

The bookkeeping tests use the scripted stand-in trainer (tests/job_fakes.py); one study
trains tiny DP-MERF runs for real, through the command line.
"""

from __future__ import annotations

import json
import time

import pytest

from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.jobs import study_background
from engine.jobs.manager import JobManager, NotOwner
from engine.jobs.study import Study, load_spec, sweep_name
from engine.privacy.ledger import Ledger
from engine.runs.study_preview import study_preview
from engine.runs.study_space import MAX_KNOBS, build_spec
from engine.store.runs import RunStore
from job_fakes import scripted, scripted_manager

from conftest import TINY_DPMERF_ARGS

BASE = RunConfig(method="dpmerf", dataset="digits", epsilon=1.0, device="cpu")


def _spec(knobs=("lr=1e-3:1e-1:log",), base=BASE, **kw):
    return build_spec(base, list(knobs), **{"trials": 3, "sampler": "random", **kw})


def _wait_for(cond, timeout=120.0):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


# ------------------------------------------------------------------ the request


def test_knob_ranges_read_the_methods_declarations():
    spec = _spec(["lr=1e-3:1e-1:log", "n_features=500,1000,2000", "epochs=10:60"])
    lr, nf, ep = spec.knobs
    assert (lr.kind, lr.lo, lr.hi, lr.log) == ("float", 1e-3, 1e-1, True)
    assert lr.help.startswith("Adam")  # from dpmerf's knob() declaration
    assert (nf.kind, nf.choices) == ("choice", (500, 1000, 2000))
    assert (ep.kind, ep.lo, ep.hi, ep.log) == ("int", 10, 60, False)
    assert spec.centre() == {"lr": pytest.approx(1e-2), "n_features": 1000, "epochs": 35}
    assert spec.config_for({"lr": 0.02}).params == {"lr": 0.02}
    # n_features must be even (multiple_of=2): a range snaps to even values
    nf = _spec(["n_features=500:1000:log"]).knobs[0]
    assert nf.step == 2 and nf.snap(777.4) == 778 and all(v % 2 == 0 for v in nf.grid())


@pytest.mark.parametrize("knobs, sampler, words", [
    (["foo=1:2"], "tpe", "unknown knob 'foo'"),
    (["lr=0:1"], "tpe", "outside its bounds"),  # lr > 0
    (["epochs=0:10"], "tpe", "outside its bounds"),  # epochs >= 1
    (["lr=1e-1:1e-3"], "tpe", "low end must be below"),
    (["n_features=501:1001"], "tpe", "an even int"),
    (["lr=1e-3:1e-1:linear"], "tpe", "lo:hi or lo:hi:log"),
    (["labels=balanced,nope"], "tpe", "labels values must each be one of"),
    (["lr=1e-3:1e-1", "n_features=500,1000"], "cmaes", "CMA-ES searches numeric ranges only"),
    (["lr=1e-3:1e-1"], "annealing", "sampler must be one of"),
    ([f"{k}=1:2" for k in ("epochs", "latent", "gen_hidden", "batch_size", "n_features")],
     "tpe", f"at most {MAX_KNOBS} knobs"),
])
def test_a_bad_request_is_one_clear_error(knobs, sampler, words):
    with pytest.raises(InputError, match=words):
        _spec(knobs, sampler=sampler)


def test_grid_never_repeats_a_point_and_specs_round_trip():
    spec = _spec(["n_features=500,1000", "labels=balanced,counts"], sampler="grid", trials=24)
    assert spec.trials == 4
    assert type(spec).from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


# ------------------------------------------------------- the queue (stand-in trainer)


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    with scripted_manager(tmp_path_factory.mktemp("study")) as jm:
        yield jm


def test_a_failed_trial_is_told_fail_never_a_zero(fake):
    spec = _spec(base=RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                params={"do": "crash"}), trials=2)
    res = Study(spec, "crashing", fake).run()
    assert [t.state for t in res.trials] == ["FAIL", "FAIL"]
    assert all(t.value is None and "boom" in t.message for t in res.trials)
    assert res.best is None


def test_a_grid_study_covers_its_whole_grid_and_ends_cleanly(fake):
    """Optuna's grid sampler stops the study when its grid is covered, which raised in
    ask-and-tell at the last trial (bench/tune.py's 20-point grid crashed there)."""
    spec = _spec(["n_features=500,1000", "labels=balanced,counts"], sampler="grid", trials=4,
                 base=RunConfig(method="dpmerf", dataset="digits", device="cpu"))
    res = Study(spec, "whole-grid", fake).run()
    assert [t.state for t in res.trials] == ["COMPLETE"] * 4
    assert len({tuple(sorted(t.params.items())) for t in res.trials}) == 4  # every point once


def test_a_restarted_driver_reattaches_to_its_trials_runs(fake):
    spec = _spec(base=RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                params={"sleep": 0.3}), trials=4)

    class Crash(Exception):
        pass

    def crash(info, res):  # the driver dies after its first trial, others still running
        raise Crash

    with pytest.raises(Crash):
        Study(spec, "restarted", fake).run(on_trial=crash)
    before = Study(spec, "restarted", fake).result()
    left_running = {t.number: t.run_id for t in before.trials if t.state == "RUNNING"}
    assert left_running  # its sibling's run was queued when the driver died
    res = Study(load_spec(fake.store.root, "restarted"), "restarted", fake).run()
    assert [t.state for t in res.trials] == ["COMPLETE"] * 4
    assert {t.number: t.run_id for t in res.trials if t.number in left_running} == left_running
    # no trial trained twice: one run per trial in the study's sweep
    runs = fake.store.list_runs(sweep=sweep_name("restarted"))
    assert sorted(r.run_id for r in runs) == sorted(t.run_id for t in res.trials)
    assert res.best.value == pytest.approx(0.6)  # the stand-in's score


def test_the_page_resumes_a_study_left_unfinished_as_its_owners(fake):
    spec = _spec(base=RunConfig(method="dpmerf", dataset="digits", device="cpu"), trials=3)

    def crash(info, res):
        raise KeyboardInterrupt  # the app stopped after the first trial

    with pytest.raises(KeyboardInterrupt):
        Study(spec, "reloaded", fake, session="carol").run(on_trial=crash)
    assert study_background.resume(fake, "reloaded")
    _wait_for(lambda: not study_background.running(fake, "reloaded"))
    res = study_background.result(fake, "reloaded")
    assert [t.state for t in res.trials] == ["COMPLETE"] * 3
    assert {r.session for r in fake.store.list_runs(sweep=sweep_name("reloaded"))} == {"carol"}
    assert not study_background.resume(fake, "reloaded")  # done: nothing to resume


def test_only_the_owner_stops_a_study(fake):
    gate = "never-opened"
    spec = _spec(base=RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                params={"do": "gate", "gate": gate}), trials=3)
    study_background.start(spec, "owned", fake, session="alice")
    _wait_for(lambda: len(fake.store.list_runs(sweep=sweep_name("owned"))) == 2)
    assert study_background.running(fake, "owned")
    with pytest.raises(NotOwner):
        study_background.stop(fake, "owned", session="bob")
    assert study_background.running(fake, "owned")
    study_background.stop(fake, "owned", session="alice")
    _wait_for(lambda: not study_background.running(fake, "owned"))
    res = study_background.result(fake, "owned")
    assert res.stopped and [t.state for t in res.trials] == ["FAIL", "FAIL"]
    assert all("stopped" in t.message or "cancelled" in t.message for t in res.trials)
    assert study_background.error(fake, "owned") is None
    assert not study_background.resume(fake, "owned")  # a stopped study stays stopped


def test_one_storage_per_store_and_an_evicted_one_still_works(tmp_path, monkeypatch):
    """The Tune board asks for a study's storage several times a redraw: it is opened once
    per store; past KEEP_STORAGES the oldest closes its idle connections and still works."""
    import optuna

    from engine.jobs import study as study_mod

    monkeypatch.setattr(study_mod, "KEEP_STORAGES", 2)
    roots = [tmp_path / f"s{i}" for i in range(3)]
    for r in roots:
        r.mkdir()
    first = study_mod.storage(roots[0])
    assert study_mod.storage(roots[0]) is first
    optuna.create_study(study_name="a", storage=first).optimize(
        lambda t: t.suggest_float("x", 0, 1), n_trials=1)
    study_mod.storage(roots[1]), study_mod.storage(roots[2])  # roots[0] evicted
    assert all(k[1] != f"sqlite:///{roots[0].resolve() / study_mod.STORAGE}"
               for k in study_mod._STORAGES)
    optuna.load_study(study_name="a", storage=first).optimize(
        lambda t: t.suggest_float("x", 0, 1), n_trials=1)  # the holder goes on
    assert len(optuna.load_study(study_name="a", storage=study_mod.storage(roots[0])).trials) == 2


def test_a_trial_refused_at_the_cap_stops_the_study(tmp_path):
    """A cap reached after the preview (by runs queued elsewhere, say): the refused trial
    is told FAIL with the ledger's reason and the study stops instead of asking again."""
    Ledger(tmp_path).set_cap("digits", 1.2)  # one run of ε = 1 fits, two (ε = 1.42) do not
    jm = JobManager(RunStore(tmp_path), execute=scripted, slots_per_device=2, full_eval=False)
    try:
        spec = _spec(base=RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                    params={"do": "gate", "gate": "never"}), trials=3)
        res = Study(spec, "capped", jm).run()
    finally:
        jm.shutdown()
    assert res.stopped and len(res.trials) == 2
    assert [t.state for t in res.trials] == ["FAIL", "FAIL"]
    assert "past its cap" in res.trials[1].message and res.trials[1].run_id is None


# ------------------------------------------------------------------ privacy


def test_a_study_past_the_cap_is_refused_before_any_trial(tmp_path):
    Ledger(tmp_path).set_cap("digits", 1.5)
    spec = _spec(trials=3)
    with pytest.raises(InputError, match="Refused before the first trial"):
        study_preview(spec, root=tmp_path, slots=1, wait=False)
    assert RunStore(tmp_path).list_runs() == []
    assert Ledger(tmp_path).datasets()[0]["runs"] == []
    one = study_preview(_spec(trials=1), root=tmp_path, slots=1, wait=False)
    assert one.epsilon_after == pytest.approx(1.0, rel=1e-3)  # one trial fits under 1.5


def test_cli_study_end_to_end_the_preview_total_is_the_ledgers(runs_root, capsys):
    """Three tiny DP-MERF trials through the real worker: every trial a run on the
    ledger, the preview's forecast equal to the ledger's total afterwards."""
    from engine.cli.commands import main

    assert main(["tune", "--method", "dpmerf", "--dataset", "digits", "--epsilon", "1",
                 "--knob", "lr=1e-3:1e-1:log", "--knob", "n_features=200,400", *TINY_DPMERF_ARGS,
                 "--trials", "3", "--sampler", "tpe", "--study", "cli", "--json"]) == 0
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert "privacy: every trial is charged in full" in err and "trial 2:" in err
    assert [t["state"] for t in got["trials"]] == ["COMPLETE"] * 3
    assert 0 < got["best"]["value"] <= 1
    led = got["ledger"]
    assert led["study_runs"] == 3
    assert got["preview"]["ledger_epsilon_after"] == pytest.approx(led["dataset_epsilon"],
                                                                  rel=1e-6)
    assert got["defaults"]["value"] is not None  # the gallery's digits DP-MERF at ε = 1
    assert main(["tune", "--list"]) == 0
    assert "cli: dpmerf on digits" in capsys.readouterr().out
    # continuing a finished study runs nothing more
    assert main(["tune", "--study", "cli"]) == 0
    assert len(RunStore(runs_root).list_runs(sweep=sweep_name("cli"))) == 3
    assert main(["tune", "--knob", "nope=1:2"]) == 2
