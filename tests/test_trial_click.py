"""Clicking a trial's point on the Tune board's slice or history plot picks it
(ui/trial_click.py, ui/trial_view.py): every point of Optuna's own figures carries its
trial's number, a click event gives that number back, and the board then shows that trial."""

from __future__ import annotations

import pytest
from optuna import visualization as vis

from engine.core.config import RunConfig
from engine.jobs.manager import JobManager
from engine.jobs.study import Study, optuna_study
from engine.runs.study_space import build_spec
from engine.store.runs import RunStore
from job_fakes import scripted
from ui.trial_click import clicked_trial, with_trial_numbers


@pytest.fixture(scope="module")
def study_store(tmp_path_factory):
    """A finished 4-trial study (stand-in trainer), made once for this file's tests."""
    root = tmp_path_factory.mktemp("clicks")
    jm = JobManager(RunStore(root), execute=scripted, full_eval=False, slots_per_device=2)
    try:
        spec = build_spec(RunConfig(method="dpmerf", dataset="digits", device="cpu"),
                          ["lr=1e-3:1e-1:log", "n_features=500,1000"], trials=4,
                          sampler="random")
        res = Study(spec, "clicks", jm, session="someone-else").run()
    finally:
        jm.shutdown()
    return root, res


@pytest.fixture
def finished(study_store, monkeypatch):
    """That study's store, as the app's run store (DPSYNTH_RUNS)."""
    monkeypatch.setenv("DPSYNTH_RUNS", str(study_store[0]))
    return study_store


def _event(customdata):
    """A click as Streamlit hands it back (st.plotly_chart's selection state)."""
    return {"selection": {"points": [{"curve_number": 0, "point_number": 0, "point_index": 0,
                                      "x": 0.01, "y": 0.6, "customdata": customdata}],
                          "point_indices": [0], "box": [], "lasso": []}}


def test_every_point_of_the_slice_and_history_carries_its_trial(finished):
    root, res = finished
    study = optuna_study(root, "clicks")
    by_number = {t.number: t for t in res.trials}
    fig = with_trial_numbers(vis.plot_slice(study), "slice")
    seen = set()
    for trace in fig.data:  # one subplot per knob: each point at its trial's own value
        knob = fig.layout[trace.xaxis.replace("x", "xaxis")].title.text
        for x, n in zip(trace.x, trace.customdata):
            assert by_number[n].params[knob] == pytest.approx(float(x))
            seen.add(n)
    assert seen == set(by_number)
    hist = with_trial_numbers(vis.plot_optimization_history(study), "history")
    points = [t for t in hist.data if t.mode == "markers"]
    assert [list(t.customdata) for t in points][0] == sorted(by_number)
    lines = [t for t in hist.data if t.mode == "lines"]  # the best so far: not a trial
    assert lines and all(t.customdata is None for t in lines)


def test_a_click_event_gives_back_its_trial_number():
    assert clicked_trial(_event(3)) == 3
    assert clicked_trial(_event([2])) == 2  # customdata as a list
    assert clicked_trial(_event(None)) is None  # a point without a number
    assert clicked_trial({"selection": {"points": []}}) is None  # a click on empty space
    assert clicked_trial(None) is None  # nothing clicked yet


def test_a_click_on_the_board_picks_its_trial_and_the_selectbox_still_works(finished):
    """AppTest cannot click a plotly point, so the click's event is put where Streamlit
    puts it (the chart's key in the session) and the page reruns, as a click makes it."""
    from apptest import open_app

    _, res = finished
    at = open_app().switch_page("pages/tune.py").run()
    assert not at.exception
    assert at.selectbox(key="tune_trial").value == res.best.number  # first the best
    assert sum("Click a point to pick its trial" in c.value for c in at.caption) == 2
    clicked, other = [t.number for t in res.trials if t.number != res.best.number][:2]
    at.session_state["tune_slice"] = _event(clicked)
    at.run()
    assert not at.exception and at.selectbox(key="tune_trial").value == clicked
    settings = next(d.value for d in at.dataframe if "setting" in d.value.columns)
    assert any(f"**Trial {clicked}**" in m.value for m in at.markdown)
    assert dict(zip(settings["setting"], settings["value"]))["n_features"] == \
        str(res.trials[clicked].params["n_features"])
    # the selectbox, the fallback, is not undone by the plot's selection, which stays
    at.selectbox(key="tune_trial").set_value(other).run()
    assert at.selectbox(key="tune_trial").value == other
    at.session_state["tune_history"] = _event(clicked)  # a click on the other plot
    at.run()
    assert at.selectbox(key="tune_trial").value == clicked


def test_clicking_a_point_in_chromium_picks_its_trial(study_store, tmp_path):
    """The real thing once: a click on a slice point in the browser shows that trial."""
    import os
    import re

    from test_browser import ABSENT, ARGS, CHROMIUM, WAIT_MS

    if not os.path.exists(CHROMIUM):
        pytest.skip(ABSENT)
    from playwright.sync_api import expect, sync_playwright

    from bench.app_server import serve
    from conftest import HANG_S

    root, res = study_store
    fig = with_trial_numbers(vis.plot_slice(optuna_study(root, "clicks")), "slice")
    first = list(fig.data[0].customdata)  # the first panel's points, in drawing order
    with serve(root, timeout=HANG_S) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 2200}).new_page()
            page.goto(f"{url}/tune", wait_until="domcontentloaded")
            picked = page.locator("strong").filter(has_text=re.compile(r"^Trial \d+$"))
            expect(picked).to_have_text(f"Trial {res.best.number}", timeout=WAIT_MS)
            panel = page.get_by_role("tabpanel", name="Slice")
            points = panel.locator(".js-plotly-plot .scatterlayer .trace").first.locator(
                ".points path")
            expect(points.nth(len(first) - 1)).to_be_visible(timeout=WAIT_MS)
            _steady_box(page, points.first)
            index, box = _lone_point(points, first, res.best.number)
            number = first[index]
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            expect(picked).to_have_text(f"Trial {number}", timeout=WAIT_MS)
        finally:
            browser.close()


def _lone_point(points, numbers, best) -> tuple[int, dict]:
    """A point other than the best trial's that no other point covers. The stand-in's
    trials all score 0.6, so two with near learning rates draw on top of each other and a
    click picks the one drawn last (CI once picked trial 3 for trial 1)."""
    boxes = [points.nth(i).bounding_box() for i in range(len(numbers))]

    def overlaps(a, b):
        return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
                and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])

    for i, (n, box) in enumerate(zip(numbers, boxes)):
        if n != best and not any(overlaps(box, b) for j, b in enumerate(boxes) if j != i):
            return i, box
    raise AssertionError(f"every point but the best's is covered by another: {boxes}")


def _steady_box(page, locator) -> dict:
    """The point's box once the page has stopped moving: the board streams in above the
    plot (captions, the cost line), and a click at a box measured before it settles lands
    somewhere else."""
    box = locator.bounding_box()
    for _ in range(120):
        page.wait_for_timeout(250)
        again = locator.bounding_box()
        if again == box:
            return box
        box = again
    raise AssertionError(f"the plot kept moving for 30 s: {box}")

