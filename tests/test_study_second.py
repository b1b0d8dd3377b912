"""A study's second objective (seconds or ε spent) and ε as a searched knob
(engine/runs/study_objectives.py): the request, a two-objective study over the real run
queue (stand-in trainer), and tiny DP-MERF trials at their own ε through the command
line: the ledger charges each trial its own ε, its total is their composition, and the
preview's bound (every trial at the top of the range) is not below it."""

from __future__ import annotations

import json

import pytest

from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.jobs.study import Study, sweep_name
from engine.privacy import charges
from engine.privacy import accountant
from engine.runs.study_preview import study_preview
from engine.runs.study_space import build_spec
from engine.store.records import RunStatus
from engine.store.runs import RunStore
from job_fakes import scripted_manager

from conftest import TINY_DPMERF_ARGS

BASE = RunConfig(method="dpmerf", dataset="digits", epsilon=1.0, device="cpu")


def _spec(knobs, base=BASE, **kw):
    return build_spec(base, list(knobs), **{"trials": 3, "sampler": "random", **kw})


def test_epsilon_is_a_knob_of_every_study():
    spec = _spec(["epsilon=0.3:3:log", "lr=1e-3:1e-1:log"], second="epsilon")
    eps = spec.knobs[0]
    assert (eps.name, eps.kind, eps.lo, eps.hi, eps.log) == ("epsilon", "float", 0.3, 3.0, True)
    cfg = spec.config_for({"epsilon": 0.5, "lr": 0.02})
    assert cfg.epsilon == 0.5 and cfg.params == {"lr": 0.02}  # the run's budget, not a knob
    assert spec.centre()["epsilon"] == pytest.approx(0.3 ** 0.5 * 3 ** 0.5)
    assert _spec(["eps=0.5,1,2"]).knobs[0].choices == (0.5, 1.0, 2.0)
    assert type(spec).from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert "second" not in _spec(["lr=1e-3:1e-1"]).to_dict()  # older studies still match


@pytest.mark.parametrize("knobs, kw, words", [
    (["epsilon=0:3"], {}, "outside its bounds"),
    (["epsilon=0.3:inf"], {}, "outside its bounds"),
    (["epsilon=3:0.3"], {}, "low end must be below"),
    (["epsilon=1"], {}, "two or more values"),
    (["lr=1e-3:1e-1"], {"second": "epsilon"}, "needs ε searched"),
    (["lr=1e-3:1e-1"], {"second": "memory"}, "second objective is one of"),
    (["lr=1e-3:1e-1"], {"second": "seconds", "sampler": "cmaes"}, "CMA-ES optimises one"),
])
def test_a_bad_second_objective_or_epsilon_range_is_one_clear_error(knobs, kw, words):
    with pytest.raises(InputError, match=words):
        _spec(knobs, **kw)


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    with scripted_manager(tmp_path_factory.mktemp("second")) as jm:
        yield jm


def test_a_two_objective_study_tells_the_runs_seconds(fake):
    spec = _spec(["lr=1e-3:1e-1:log", "n_features=500,1000"], trials=4, second="seconds",
                 base=RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                params={"sleep": 0.05}))
    study = Study(spec, "timed", fake)
    res = study.run()
    assert study.study.directions[1].name == "MINIMIZE" and len(study.study.directions) == 2
    assert [t.state for t in res.trials] == ["COMPLETE"] * 4
    for t in res.trials:
        rec = fake.store.get_run(t.run_id)
        assert t.value == pytest.approx(0.6) and t.second == pytest.approx(rec.seconds)
    # every trial scores 0.6: the front is the fastest trial(s) only
    fastest = min(t.second for t in res.trials)
    assert res.pareto and all(t.second == fastest for t in res.pareto)
    assert res.to_dict()["pareto"] == [t.number for t in res.pareto]


def test_a_failed_trial_of_a_two_objective_study_is_told_fail(fake):
    spec = _spec(["lr=1e-3:1e-1"], trials=2, second="seconds",
                 base=RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                params={"do": "crash"}))
    res = Study(spec, "crash2", fake).run()
    assert [t.state for t in res.trials] == ["FAIL", "FAIL"]
    assert all(t.value is None and t.second is None and "boom" in t.message
               for t in res.trials)
    assert res.pareto == [] and res.best is None


def test_a_searched_epsilon_gives_each_trial_its_own_and_the_preview_a_bound(tmp_path):
    spec = _spec(["epsilon=0.5:2", "lr=1e-3:1e-1"], trials=3)
    seen = study_preview(spec, root=tmp_path, slots=1, wait=False)
    z = accountant.calibrate_noise_multiplier(epsilon=2.0, delta=1e-5)
    assert seen.epsilon_after == pytest.approx(
        accountant.composed_epsilon(((z, 3),), delta=1e-5), rel=1e-6)  # three at the top
    assert seen.top_epsilon == 2.0 and "a bound" in " ".join(seen.lines())
    assert seen.to_dict()["ledger_after_is_bound_at_epsilon"] == 2.0


def test_cli_epsilon_searched_the_ledger_charges_each_trials_own(runs_root, capsys):
    """Tiny DP-MERF trials at their own ε through the real worker and ledger."""
    from engine.cli.commands import main

    assert main(["tune", "--method", "dpmerf", "--dataset", "digits",
                 "--knob", "epsilon=0.3:3:log", "--knob", "lr=1e-3:1e-1:log", *TINY_DPMERF_ARGS,
                 "--trials", "3", "--sampler", "random", "--second", "epsilon",
                 "--importance", "fanova", "--study", "eps", "--json"]) == 0
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert "with ε searched in [0.3, 3] (log)" in err and "a bound" in err
    assert "trials ran at different ε" in err and "Pareto front" in err
    assert [t["state"] for t in got["trials"]] == ["COMPLETE"] * 3
    store = RunStore(runs_root)
    runs = {r.run_id: r for r in store.list_runs(sweep=sweep_name("eps"))}
    trial_eps = []
    releases = []
    for t in got["trials"]:
        rec = runs[t["run_id"]]
        assert rec.status == RunStatus.FINISHED
        assert rec.config.epsilon == pytest.approx(t["params"]["epsilon"])  # its own ε
        assert t["second"] == pytest.approx(rec.epsilon_spent)  # the ε it spent
        assert rec.epsilon_spent <= t["params"]["epsilon"] * (1 + 1e-6)
        trial_eps.append(rec.config.epsilon)
        metrics = json.loads((store.artifact_dir(rec.run_id) / "metrics.json").read_text())
        releases += charges.from_releases(metrics["privacy"])
    led = got["ledger"]["study_epsilon"]
    # the ledger's total is the trials' releases composed (by the accountant) ...
    assert led == pytest.approx(accountant.composed_epsilon(tuple(releases), delta=1e-5),
                                rel=1e-6)
    # ... which is each trial's ε as one Gaussian mechanism, composed
    planned = tuple((accountant.calibrate_noise_multiplier(epsilon=e, delta=1e-5), 1)
                    for e in trial_eps)
    assert led == pytest.approx(accountant.composed_epsilon(planned, delta=1e-5), rel=1e-3)
    assert led < sum(trial_eps)  # never by adding ε's
    # and the bound said before launch (every trial at ε = 3) is not below it
    assert got["preview"]["ledger_epsilon_after"] >= led
    assert got["importance"]["evaluator"] == "fanova" and got["importance"]["trials"] == 3
    assert set(got["importance"]["values"]) == {"epsilon", "lr"}


def test_cli_tunes_on_a_users_own_csv_charged_to_its_file(runs_root, tmp_path, capsys):
    """`tune --csv FILE --label COLUMN`, as `train` takes a user's file: every trial trains
    on that file and the ledger charges the file (its SHA-256 key), not a built-in."""
    import numpy as np

    from engine.cli.commands import main
    from engine.privacy.ledger import Ledger, dataset_id

    rng = np.random.default_rng(0)
    csv = tmp_path / "clinic.csv"
    csv.write_text("age,dose,label\n" + "\n".join(
        f"{a:.1f},{2 * a + rng.normal():.2f},{'yes' if a > 40 else 'no'}"
        for a in rng.uniform(20, 60, 300)) + "\n")
    assert main(["tune", "--method", "marginals", "--csv", str(csv), "--label", "label",
                 "--epsilon", "1", "--knob", "bins=4,8", "--trials", "2", "--sampler", "grid",
                 "--study", "mine", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [t["state"] for t in got["trials"]] == ["COMPLETE"] * 2
    runs = RunStore(runs_root).list_runs(sweep=sweep_name("mine"))
    assert len(runs) == 2
    assert {r.config.dataset for r in runs} == {"csv"}
    assert {r.config.data_options["path"] for r in runs} == {str(csv)}
    key = dataset_id(runs[0].config).key
    assert key.startswith("csv:")
    (row,) = [d for d in Ledger(runs_root).datasets() if d["dataset"] == key]
    assert "clinic.csv" in row["label"] and got["ledger"]["dataset"] == row["label"]
    assert got["ledger"]["study_runs"] == 2 and row["epsilon"] > 1  # two runs composed
    assert [d["dataset"] for d in Ledger(runs_root).datasets()] == [key]  # nothing else
