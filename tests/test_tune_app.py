"""The Tune page (AppTest, the real app): a study's preview before Start, with the ledger's
total after every trial; a bad range is one clear error; a study's board shows its trials
and Optuna's plots, with the number of trials the importance rests on. (Stop is
owner-only: tests/test_study.py.)"""

from __future__ import annotations

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
    # slice, contour, parallel, importance and history are plotly charts
    assert len(at.get("plotly_chart")) == 5
