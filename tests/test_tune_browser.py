"""Issue 42 in real Chromium: a 4-trial study started from the Tune page, its slice and
contour plots drawing 4 points, a reload mid-study that keeps it going, and a second
browser (another participant) that cannot stop it.

Skipped when the system chromium is absent (never a browser download).
"""

import os
import re

import pytest

from conftest import HANG_S
from test_browser import ABSENT, ARGS, CHROMIUM, WAIT_MS, _one, _pick

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=ABSENT)

# Grid over 2 × 2 choices: four trials, each a different point. A small embedding keeps
# a trial to seconds of training; 120–240 epochs (about 5–10 s a trial here) keep the study
# running while a second browser opens the page and tries its Stop (1–2 epochs ended
# first on a busy machine; 300–600 made the study most of the suite's longest test).
RANGES = {"epochs": "120,240", "n_features": "100,200"}


@pytest.fixture
def server(tmp_path):
    from bench.app_server import serve

    with serve(tmp_path / "runs", timeout=HANG_S) as url:
        yield url


def _start_study(page, server) -> None:
    from playwright.sync_api import expect

    page.goto(f"{server}/tune", wait_until="domcontentloaded")
    expect(page.get_by_role("heading", name="Tune")).to_be_visible(timeout=WAIT_MS)
    _pick(page, "Dataset", "digits")
    knobs = page.get_by_test_id("stMultiSelect").filter(has_text="knobs to search").first
    for name, text in RANGES.items():
        knobs.locator("input").click()
        knobs.locator("input").fill(name)  # the list is virtual: filter it to the knob
        page.get_by_role("option", name=name, exact=True).click()
        page.keyboard.press("Escape")
        box = page.get_by_role("textbox", name=f"{name}: lo:hi, lo:hi:log, or a,b,c")
        expect(box).to_be_visible(timeout=WAIT_MS)
        box.fill(text)
        box.press("Enter")
    trials = page.get_by_role("spinbutton", name="trials")
    trials.fill("4")
    trials.press("Enter")
    _pick(page, "sampler", "grid")
    # The preview shows before Start: the ledger's total after all four trials.
    expect(page.get_by_text("ledger", exact=False).first).to_be_visible(timeout=WAIT_MS)
    page.get_by_test_id("stTextInput").filter(has_text="study name").locator("input").fill("room-study")
    start = page.get_by_role("button", name="Start the study")
    expect(start).to_be_enabled(timeout=WAIT_MS)
    start.click()


def _expect_points(page, tab: str, n: int) -> None:
    """The `tab` plot of the board comes to show `n` markers (every scatter trace's
    points). Waited for, not counted once: the board redraws every two seconds, and the
    text above a plot can show the last trial before Plotly has redrawn the plot. A redraw
    also keeps the old tabs beside the new ones for a moment (as for a button,
    test_browser._one), so the click is tried again until one lands between redraws."""
    import time

    from playwright.sync_api import Error, expect

    deadline = time.time() + HANG_S
    while True:
        try:
            page.get_by_role("tab", name=tab).click(timeout=5000)  # strict: one tab, or Error
            panel = page.get_by_role("tabpanel", name=tab)
            expect(panel.locator(".js-plotly-plot").first).to_be_visible(timeout=5000)
            expect(panel.locator(".js-plotly-plot .scatterlayer .points path")).to_have_count(
                n, timeout=5000)
            return
        except (Error, AssertionError):
            if time.time() > deadline:
                raise


def test_a_study_from_the_page_survives_a_reload_and_a_stranger(server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    from engine.store.runs import RunStore

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            owner = browser.new_context(viewport={"width": 1400, "height": 2200}).new_page()
            _start_study(owner, server)
            expect(owner.get_by_text("room-study", exact=False).first).to_be_visible(timeout=WAIT_MS)
            # the study's header line (a trial picked below it says "· running" too)
            expect(owner.get_by_text(re.compile(r"room-study · .*· running"))).to_be_visible(
                timeout=WAIT_MS)

            # Another participant sees the study but Stop is refused: not theirs. First,
            # while the study surely runs (its Stop shows only then).
            stranger = browser.new_context(viewport={"width": 1400, "height": 2200}).new_page()
            stranger.goto(f"{server}/tune", wait_until="domcontentloaded")
            _one(stranger, ".st-key-tune_stop", "Stop the study").click()
            # The refusal stays while the study runs (the board's two-second redraws keep it)
            expect(stranger.get_by_text("belongs to another participant")).to_be_visible(
                timeout=WAIT_MS)
            stranger.wait_for_timeout(2500)  # past the next redraw: still there
            expect(stranger.get_by_text("belongs to another participant")).to_be_visible(
                timeout=WAIT_MS)
            stranger.close()  # an open board redraws every two seconds

            # A reload is a new Streamlit session: the study goes on and is shown again.
            owner.reload(wait_until="domcontentloaded")
            expect(owner.get_by_text("room-study", exact=False).first).to_be_visible(timeout=WAIT_MS)

            expect(owner.get_by_text("4 of 4 trial(s) done")).to_be_visible(timeout=WAIT_MS)
            expect(owner.get_by_text("· stopped")).to_have_count(0)
            runs = [r for r in RunStore(tmp_path / "runs", recover=False).list_runs()
                    if r.sweep == "study:room-study"]
            assert len(runs) == 4 and {r.status.value for r in runs} == {"finished"}, [
                (r.status.value, r.message) for r in runs]
            settings = {(r.config.params["epochs"], r.config.params["n_features"]) for r in runs}
            assert settings == {(120, 100), (120, 200), (240, 100), (240, 200)}

            _expect_points(owner, "Slice", 2 * 4)  # a panel per knob, a point per trial
            _expect_points(owner, "Contour", 4)
        finally:
            browser.close()
