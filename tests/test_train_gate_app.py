"""Issue 43, "reasons beside the button": a disabled Train says why directly under it, in
the user's words (their file name, never the stored hashed one); the whole wait sits
beside Train; a CSV session is not told about digits (AppTest, the real app)."""

from __future__ import annotations

import re

from apptest import APP, open_app
from streamlit.testing.v1 import AppTest

from engine.core.config import RunConfig
from engine.privacy.ledger import Ledger
from engine.store.runs import RunStore


def _flat(at) -> list:
    """Every element of the main area in page order."""
    out = []

    def walk(node):
        out.append(node)
        for child in getattr(node, "children", {}).values():
            walk(child)
    walk(at.main)
    return out


def _index(elements, match) -> int:
    return next(i for i, e in enumerate(elements) if match(e))


def _train_at(elements) -> int:
    return _index(elements, lambda e: getattr(e, "key", None) == "pg_train")


def _reason(at) -> str:
    (reason,) = [e.value for e in at.error if e.value.startswith("**Train is off:**")]
    return reason


def _beside_train(at, match) -> None:
    """`match`'s element comes right after Train and Stop, above every knob."""
    elements = _flat(at)
    train, knob = _train_at(elements), _index(elements, lambda e: getattr(e, "key", None) == "method")
    found = _index(elements, match)
    assert knob < train < found, "not beside Train"
    first_knob_after = _index(elements, lambda e: str(getattr(e, "key", "")).startswith("dpmerf_"))
    assert found < first_knob_after, "below the knobs, not beside Train"


def test_an_unreadable_upload_says_why_beside_train_with_the_users_file_name(runs_root):
    at = open_app({"dataset": "csv"})
    at.file_uploader[0].set_value(("my survey.csv", b"a,b,label\n", "text/csv")).run()
    assert not at.exception and at.button(key="pg_train").disabled
    reason = _reason(at)
    assert "my survey.csv" in reason
    for text in [e.value for e in at.error]:  # no stored name (hash prefix, "_" for " ")
        assert not re.search(r"[0-9a-f]{12}-", text) and "my_survey.csv" not in text, text
    elements = _flat(at)
    assert _train_at(elements) < _index(
        elements, lambda e: getattr(e, "value", None) == reason)


def test_no_file_yet_and_a_budget_cap_each_say_why_beside_train(runs_root):
    at = open_app({"dataset": "csv"})
    assert at.button(key="pg_train").disabled and "upload your .csv file" in _reason(at)

    Ledger(runs_root).set_cap("digits", 0.5, delta=1e-5)
    # ε = 2: no shipped gallery run has these settings (one would be handed back at no cost)
    at = open_app({"dataset": "digits", "eps": "2"})
    assert not at.exception and at.button(key="pg_train").disabled
    reason = _reason(at)
    _beside_train(at, lambda e: getattr(e, "value", None) == reason)


def test_a_run_still_going_says_why_train_is_off(runs_root):
    store = RunStore(runs_root)
    rid = store.create_run(RunConfig(method="dpmerf", dataset="digits"))  # no worker: stays queued
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["pg_run"] = rid
    at.run()
    assert not at.exception and at.button(key="pg_train").disabled
    assert rid in _reason(at) and "queued" in _reason(at)
    store.close()


def test_the_whole_wait_sits_beside_train_and_a_csv_session_hears_nothing_of_digits(runs_root):
    import numpy as np

    at = open_app({"dataset": "digits"})
    assert not at.button(key="pg_train").disabled and not [
        e for e in at.error if e.value.startswith("**Train is off")]
    _beside_train(at, lambda e: e.type == "markdown" and
                  str(getattr(e, "value", "")).startswith("**Cost on this machine:**"))

    rng = np.random.default_rng(0)
    rows = "\n".join(f"{v:.3f},{2 * v:.3f},{'yes' if v > 0 else 'no'}" for v in rng.normal(size=60))
    at = open_app({"dataset": "csv"})
    at.file_uploader[0].set_value(("ok.csv", f"a,b,label\n{rows}\n".encode(), "text/csv")).run()
    assert not at.exception and not at.button(key="pg_train").disabled
    (hint,) = [i.value for i in at.info if i.value.startswith("Press **Train**")]
    assert "digits" not in hint
