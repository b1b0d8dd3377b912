"""The Playground with DataLens: the cost estimate shows before training, and a run that
cannot fit is refused with its reason and a disabled Train button (AppTest, same process,
so the machine's memory can be shrunk with monkeypatch)."""

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import HANG_S
from engine.methods.datalens import memory as datalens_memory

# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _playground(monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["method"] = "datalens"
    return at.run()


def test_estimates_show_and_train_is_enabled(monkeypatch, tmp_path):
    at = _playground(monkeypatch, tmp_path)
    # ui/cost.py draws the preview's estimates as one line: time, per-iteration cost, memory.
    # A fresh store has no timings: the page says "measuring…" while the cost probe (its own
    # process) times the run's shape, and looks again each second; so do we, as long as
    # the suite waits for anything (that process imports torch, slowly on a busy machine).
    deadline = time.monotonic() + HANG_S
    while True:
        assert not at.exception
        cost = [m.value for m in at.markdown if m.value.startswith("**Cost on this machine:**")]
        assert len(cost) == 1 and "GB memory" in cost[0]
        if " each" in cost[0] or time.monotonic() > deadline:
            break
        time.sleep(1)
        at.run()
    assert " each" in cost[0], cost[0]
    assert not at.button(key="pg_train").disabled


def test_a_run_that_cannot_fit_disables_train_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(datalens_memory, "machine_memory", lambda device: 1_000_000)  # a 1 MB machine
    at = _playground(monkeypatch, tmp_path)
    assert not at.exception
    assert any("DataLens needs" in e.value and "this machine has 0 GB" in e.value for e in at.error)
    train = at.button(key="pg_train")
    assert train.disabled and "DataLens needs" in train.help
