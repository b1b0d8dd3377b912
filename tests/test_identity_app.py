"""Issue 43 in AppTest (the real app, no browser): no page ever shows the participant's
cookie or owner key, and another participant sees none of an upload's real-data results.
The same checks in Chromium with several browsers: tests/test_browser.py."""

from __future__ import annotations

import json
import re

from streamlit.testing.v1 import AppTest

from apptest import APP
from engine.core import identity
from engine.store import uploads
from engine.core.config import RunConfig
from engine.store.records import RunStatus
from engine.store.runs import RunStore

PID = "CookieOfAlice_0123456789xyz"  # the form ui/participant.py accepts
FILE = "patients-secret.csv"
# Scores no shipped gallery run shows at 2, 3 or 4 decimals (the gallery's charts and
# captions are on the same pages).
SYN, REAL = 0.5791, 0.8642
PAGES = ("pages/playground.py", "pages/runs.py", "pages/accountant.py", "pages/learn.py")


def _shows(texts: str, value: float) -> bool:
    """`value` anywhere as a number of its own at 2, 3 or 4 decimals (not inside a longer
    number such as a chart's 0.86421…)."""
    return any(re.search(rf"(?<![\d.]){re.escape(f'{value:.{k}f}')}(?!\d)", texts)
               for k in (2, 3, 4))


def _texts(at: AppTest) -> list[str]:
    """Every element of the rendered app (sidebar included) as its protobuf text: labels,
    values, captions, chart specs, table data, script bodies."""
    out = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return out


def _session(pid: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["owner_session"] = pid  # what the cookie would have carried
    return at.run()


def _csv_run(store: RunStore, owner: str) -> str:
    """A finished DP-MERF run on `owner`'s upload, with real-data fidelity and scores."""
    path = uploads.save(store.root, owner, FILE, b"age,y\n30,0\n40,1\n")
    cfg = RunConfig(dataset="csv", device="cpu", data_options={"path": str(path), "label": "y"})
    rid = store.create_run(cfg, session=owner)
    fidelity = {"mean_column_distance": 0.1, "mean_dependence_error": 0.2, "how": "test",
                "columns": {"age": {"histogram": {"x": ["30", "40"], "real": [0.25, 0.75],
                                                  "synthetic": [0.5, 0.5]}}},
                "dependence": {"names": ["age", "y"], "abs_difference": [[0, 0.2], [0.2, 0]]}}
    metrics = {"status": "finished", "method": "dpmerf", "dataset": "csv", "private": True,
               "epsilon_spent": 1.0, "delta": 1e-5,
               "accuracy": {"synthetic/logreg": SYN, "real/logreg": REAL},
               "fidelity": fidelity}
    (store.artifact_dir(rid) / "metrics.json").write_text(json.dumps(metrics))
    store.finish(rid, RunStatus.FINISHED, message="finished",
                 metrics={"synthetic/logreg": SYN, "real/logreg": REAL})
    return rid


def test_no_page_shows_the_participant_cookie_or_owner_key(runs_root):
    store = RunStore(runs_root)
    key = identity.owner_key(runs_root, PID)
    _csv_run(store, key)  # a run of this participant, shown as "you"
    at = _session(PID)
    texts = _texts(at)  # app.py with its sidebar (switch_page runs the page alone)
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, page
        if page == "pages/learn.py":
            at.button(key="game_in").click().run()  # a round without a name
            rows = store.game_rounds(epsilon=1.0)
            assert [r["session"] for r in rows] == [key]  # stored by owner key
            for member in (True, False):  # both kinds, so the room draws a point
                store.add_game_round(session=key, player="", epsilon=1.0, delta=1e-5,
                                     member=member, guess=True, optimal=member)
            at.toggle(key="game_room_on").set_value(True).run()  # the room view
            assert any("rounds by 1 sessions" in c.value for c in at.caption)
        texts += _texts(at)
    # The one script that sets the cookie (the request carried none) is the only place the
    # value may appear; nothing anywhere shows the owner key.
    setters = [t for t in texts
               if f"dpsynth_participant={PID}; path=/" in t and "document.cookie" in t]
    assert setters and all(t.count(PID) == 1 for t in setters)
    leaks = [t[:200] for t in texts if (PID in t and t not in setters) or key in t]
    assert not leaks, leaks
    # The room names the anonymous player by their alias, which grants nothing.
    room = next(t for t in texts if "game_room_chart" in t)
    assert f"anonymous {identity.alias(runs_root, key)}" in room


def test_another_participant_sees_no_real_data_of_an_upload(runs_root):
    store = RunStore(runs_root)
    alice = identity.owner_key(runs_root, PID)
    rid = _csv_run(store, alice)
    bob = _session("CookieOfBob_0123456789abcdef")
    bob.switch_page("pages/runs.py").run()
    assert not bob.exception
    # Nothing pre-selected: Alice's run is not picked for Bob.
    assert bob.multiselect(key="runs_pick").value == []
    bob.multiselect(key="runs_pick").set_value([rid]).run()
    texts = "\n".join(_texts(bob))
    for secret in (FILE, "patients", str(runs_root / "uploads")):
        assert secret not in texts, secret
    assert not _shows(texts, SYN) and not _shows(texts, REAL)
    # No fidelity for Bob (real histograms), no rename or tag, nothing to delete.
    fid = [s for s in bob.selectbox if s.key == "runs_fidelity_pick"]
    assert not fid or not [o for o in fid[0].options if rid in o]
    assert bob.text_input(key=f"runs_name_{rid}").disabled
    assert bob.text_input(key=f"runs_tags_{rid}").disabled
    assert not [b for b in bob.button if b.key == "runs_delete"]
    assert not [t for t in bob.toggle if t.key == f"runs_share_{rid}"]

    # Alice sees her own figures and file, may rename it, and may share the scores.
    alice_at = _session(PID)
    alice_at.switch_page("pages/runs.py").run()
    assert alice_at.multiselect(key="runs_pick").value == [rid]  # her own latest run
    assert [o for o in alice_at.selectbox(key="runs_fidelity_pick").options if rid in o]
    assert not alice_at.text_input(key=f"runs_name_{rid}").disabled
    alice_at.toggle(key=f"runs_share_{rid}").set_value(True).run()
    assert store.shared_runs() == {rid}
    bob.run()  # now Bob sees the synthetic-data score, still not the real-data one
    texts = "\n".join(_texts(bob))
    assert _shows(texts, SYN) and not _shows(texts, REAL) and FILE not in texts


def _sidebar_script():
    """The sidebar's identity part alone (app.py runs it before every page)."""
    import streamlit as st

    from ui.participant import instructor, instructor_box, remember

    remember()
    instructor_box()
    st.caption("instructor mode" if instructor() else "participant")


def test_instructor_passphrase_wrong_says_so_right_signs_a_cookie(runs_root, monkeypatch):
    monkeypatch.delenv("DPSYNTH_INSTRUCTOR", raising=False)
    monkeypatch.setenv("DPSYNTH_INSTRUCTOR_KEY", "owl-lantern-42")
    at = AppTest.from_function(_sidebar_script, default_timeout=60)
    at.session_state["owner_session"] = PID
    at.run()
    at.text_input(key="instructor_key").input("owl").run()
    assert [e.value for e in at.error] == ["Wrong passphrase: instructor mode is off."]
    assert [c.value for c in at.caption] == ["participant"]
    at.text_input(key="instructor_key").input("owl-lantern-42").run()
    assert not at.error and [c.value for c in at.caption] == ["instructor mode"]
    token = at.session_state["_instructor_token"]
    assert identity.instructor_token_valid(runs_root, token, "owl-lantern-42")
    # The cookie carrying it is written by one script; the passphrase appears nowhere.
    texts = _texts(at)
    assert [t for t in texts if f"dpsynth_instructor={token}" in t]
    assert not [t for t in texts if "owl-lantern-42" in t]
    at.button(key="instructor_leave").click().run()
    assert [c.value for c in at.caption] == ["participant"]
    assert [t for t in _texts(at) if "dpsynth_instructor=; path=/; max-age=0" in t]


def test_an_instructor_setting_a_cap_below_the_spent_budget_is_told(runs_root, monkeypatch):
    from engine.privacy.ledger import Ledger

    monkeypatch.setenv("DPSYNTH_INSTRUCTOR", "1")
    led = Ledger(runs_root)
    for s in range(2):
        led.book(RunConfig(epsilon=1.0, seed=s), run_id=f"r{s}", source="test")
    at = _session(PID)
    at.switch_page("pages/runs.py").run()
    at.number_input(key="ledger_cap_eps").set_value(1.0)
    next(b for b in at.button if b.label == "Set cap").click().run()
    assert led.datasets()[0]["cap"] == 1.0
    assert any(w.value.startswith("The cap 1 is below what digits") for w in at.warning)
