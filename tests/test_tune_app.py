"""The Tune page (AppTest, the real app): a study's preview before Start, with the ledger's
total after every trial; a bad range is one clear error; a study's board shows its trials
and Optuna's plots, with the number of trials the importance rests on. (Stop is
owner-only: tests/test_study.py.)"""

from __future__ import annotations

import re

from apptest import open_app

from engine.core.config import RunConfig
from engine.jobs.manager import JobManager
from engine.jobs.study import Study
from engine.runs.study_space import build_spec
from engine.store.runs import RunStore
from job_fakes import scripted


def _tune(at):
    return at.switch_page("pages/tune.py").run()


def test_the_preview_shows_the_studys_cost_before_start(runs_root):
    at = _tune(open_app())
    assert not at.exception
    assert at.button(key="tune_start").disabled  # nothing to search yet
    at.multiselect(key="tune_knobs").set_value(["lr"]).run()
    at.text_input(key="tune_range_lr").set_value("1e-3:1e-1:log").run()
    at.number_input(key="tune_trials").set_value(3).run()
    text = " ".join(m.value for m in at.markdown)
    assert "every trial is charged in full" in text and "to ε = 1.83 after 3 trial(s)" in text
    assert "private alternative" in text
    assert not at.button(key="tune_start").disabled
    at.text_input(key="tune_range_lr").set_value("0:1").run()
    assert any("outside its bounds" in e.value for e in at.error)
    assert at.button(key="tune_start").disabled


def test_a_finished_studys_board_draws_its_plots(runs_root):
    jm = JobManager(RunStore(runs_root), execute=scripted, full_eval=False, slots_per_device=2)
    try:
        spec = build_spec(RunConfig(method="dpmerf", dataset="digits", device="cpu"),
                          ["lr=1e-3:1e-1:log", "n_features=500,1000"], trials=4,
                          sampler="random")
        Study(spec, "board", jm, session="someone-else").run()
    finally:
        jm.shutdown()
    at = _tune(open_app())
    assert not at.exception
    assert at.selectbox(key="tune_pick").value == "board"
    assert "4 of 4 trial(s) done" in " ".join(m.value for m in at.markdown)
    assert len(at.dataframe[0].value) == 4
    assert any("Rests on 4 finished trial(s)" in c.value for c in at.caption)
    # slice, contour, parallel, importance, history and the Pareto front of all runs
    assert len(at.get("plotly_chart")) == 6
    assert any("PED-ANOVA" in c.value for c in at.caption)  # the evaluator is named
    at.radio(key="tune_importance_eval").set_value("fanova").run()
    assert any("Rests on 4 finished trial(s), by fANOVA" in c.value for c in at.caption)
    # the stand-in scores every trial alike: fANOVA has no variance to split, and says so
    assert any("No importance by fanova: every finished trial has the same" in c.value
               for c in at.caption)
    # the Pareto tab: the study's four runs and the gallery's DP-MERF runs on digits (the
    # store imports them), at several ε: said beside the plot
    text = " ".join(c.value for c in at.caption)
    assert re.search(r"These \d+ runs were trained at \d+ different ε", text)
    assert re.search(r"\d+ of \d+ run\(s\) on the front", text)


def _finished_study(runs_root, name, knobs, **kw):
    jm = JobManager(RunStore(runs_root), execute=scripted, full_eval=False, slots_per_device=2)
    try:
        spec = build_spec(RunConfig(method="dpmerf", dataset="digits", device="cpu"),
                          knobs, **{"trials": 3, "sampler": "random", **kw})
        return Study(spec, name, jm, session="someone-else").run()
    finally:
        jm.shutdown()


def test_a_trial_opens_in_the_playground_with_its_settings(runs_root):
    res = _finished_study(runs_root, "pick", ["epsilon=0.5,2", "n_features=500,1000"],
                          second="epsilon")
    at = _tune(open_app())
    assert not at.exception
    trial = at.selectbox(key="tune_trial")
    assert trial.options and trial.value is not None
    chosen = next(t for t in res.trials if t.number == trial.value)
    table = next(d.value for d in at.dataframe if "setting" in d.value.columns)
    settings = dict(zip(table["setting"], table["value"]))
    assert settings["n_features"] == str(chosen.params["n_features"])
    assert settings["ε"] == f"{chosen.params['epsilon']:g}"
    text = " ".join(c.value for c in at.caption)
    assert "Pareto front (synthetic/logreg against ε spent)" in text
    assert "trials ran at different ε" in text
    at.button(key="tune_open").click().run()
    assert not at.exception
    # the Playground, filled in with the trial's method, dataset, ε and knobs
    assert at.selectbox(key="dataset").value == "digits"
    assert at.selectbox(key="method").value == "dpmerf"
    assert at.select_slider(key="eps").value == ("0.5" if chosen.params["epsilon"] == 0.5
                                                 else "2")
    assert at.number_input(key="dpmerf_n_features").value == chosen.params["n_features"]
    assert at.session_state["pg_run"] == chosen.run_id  # its finished run shown there


def test_a_searched_epsilon_shows_a_bound_before_start(runs_root):
    at = _tune(open_app())
    at.multiselect(key="tune_knobs").set_value(["lr"]).run()
    at.text_input(key="tune_range_lr").set_value("1e-3:1e-1:log").run()
    at.checkbox(key="tune_eps_search").check().run()
    at.text_input(key="tune_range_epsilon").set_value("0.5:2").run()
    at.selectbox(key="tune_second").set_value("epsilon").run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "at its own ε" in text and "at most ε =" in text
    assert "a bound, as if every trial ran at the top of the ε range (2)" in text
    assert not at.button(key="tune_start").disabled
